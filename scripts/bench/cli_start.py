#!/usr/bin/env python3
"""What a fresh ``engram`` process costs before and around its work, in one run.

On a temporary git workspace holding MEMORIES memories (``--model none`` by default: the
rows are about start-up, not embedding), with the workspace's engine started and warm, it
times fresh processes exactly as a person or an agent's shell tool runs them, RUNS rounds,
each round running every row once in turn so machine load hits all rows alike:

* ``python -c pass``: the floor any fresh Python process pays;
* ``engram --help``: the command list (docs/cli.md, "Start-up");
* ``engram search QUERY`` through the warm engine (the thin CLI forwards it; the engine
  parses the command line and runs it: docs/engine.md);
* ``engram search --help``: one command's parser, built in the fresh process;
* the engine's side of a forwarded ``search`` alone: connect, the ``cli`` request a thin
  CLI sends, the reply (from this process, so no process start): what the engine spends
  parsing and running the command line.

It also prints what the thin CLI imports before its request is on the wire
(``python -X importtime``: module count and total). The engine it started is stopped at
the end. The code measured is whatever ``engram`` this interpreter imports (for a
before/after, run it with ``PYTHONPATH=<other tree>/server``: the engine it starts
inherits it). The package's bytecode is compiled first, as an installation has it.

Usage: scripts/bench/cli_start.py [--runs N] [--memories N] [--model NAME]
Last stdout line: one JSON object with the figures (p50/p95/min in ms per row).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from frontends import summary, timed  # the same timing rules as the frontends bench

QUERIES = ["payment cents", "flaky upload", "tenant cache key", "UTC timestamps"]


def thin_imports(engram: list[str], root: Path, env: dict[str, str]) -> dict[str, float]:
    """Modules and total import time of a forwarded ``search`` (``-X importtime``)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", engram[0], "search", "cents"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    rows = [
        line.split("|")
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "self [us]" not in line
    ]
    total_us = sum(int(r[0].rsplit(":", 1)[1]) for r in rows)
    return {"modules": len(rows), "total_ms": round(total_us / 1000, 1)}


def round_trip(root: Path, env: dict[str, str], query: str) -> float:
    """One forwarded ``search`` as the thin CLI sends it, minus the process start."""
    from engram.daemon.client import connect

    started = time.perf_counter()
    connection = connect(str(root), "cli", start=False, environ=env)
    try:
        request = {"argv": ["search", "--workspace", str(root), query], "cwd": str(root)}
        result = connection.call("cli", request)
    finally:
        connection.close()
    elapsed = time.perf_counter() - started
    if not isinstance(result, dict) or result.get("exit") != 0:
        raise SystemExit(f"forwarded search failed: {result}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--memories", type=int, default=50)
    parser.add_argument("--model", default="none", help="embed.model (default: none)")
    args = parser.parse_args(argv)

    # the console script, as people run it; it imports engram from PYTHONPATH first, so a
    # before/after needs no second installation
    engram = [str(Path(sys.executable).with_name("engram"))]
    work = Path(tempfile.mkdtemp(prefix="engram-cli-start-"))
    runtime = Path(tempfile.mkdtemp(prefix="ecs-", dir="/tmp"))
    root = (work / "ws").resolve()
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    base["ENGRAM_EMBED__MODEL"] = args.model
    base["ENGRAM_RUNTIME_DIR"] = str(runtime)
    env = {**base, "ENGRAM_ENGINE": "auto", "ENGRAM_ENGINE_IDLE_SECONDS": "600"}
    rows: dict[str, list[float]] = {
        "python_floor": [],
        "help": [],
        "search_engine": [],
        "search_help": [],
        "search_round_trip": [],
    }
    commands = {
        "python_floor": [sys.executable, "-c", "pass"],
        "help": [*engram, "--help"],
        "search_help": [*engram, "search", "--help"],
    }
    import engram as measured

    # bytecode of the measured package, as pip writes it at install time: without it (a
    # checkout under PYTHONDONTWRITEBYTECODE) every run would compile the modules it imports
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(Path(measured.__file__).parent)],
        check=True,
        capture_output=True,
    )
    try:
        notes = root / "NOTES.md"
        notes.write_text(
            "# Notes\n\n"
            + "".join(
                f"- never forget note {i}: {QUERIES[i % len(QUERIES)]} (module m{i % 7})\n"
                for i in range(args.memories)
            ),
            encoding="utf-8",
        )
        local = {**base, "ENGRAM_ENGINE": "off"}
        subprocess.run([*engram, "import", str(notes)], cwd=root, env=local, check=True)
        timed([*engram, "search", "warm up"], root, env)  # starts the engine
        timed([*engram, "search", "warm up"], root, env)
        for i in range(args.runs):
            for name, values in rows.items():
                query = QUERIES[i % len(QUERIES)]
                if name == "search_round_trip":
                    values.append(round_trip(root, env, query))
                    continue
                command = [*engram, "search", query] if name == "search_engine" else commands[name]
                values.append(timed(command, root, env))
        imports = thin_imports(engram, root, env)
    finally:
        subprocess.run([*engram, "stop"], cwd=root, env=env, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)
    result = {
        "bench": "cli_start",
        "engram": str(Path(measured.__file__).parent),
        "memories": args.memories,
        "model": args.model,
        "rows": {name: summary(values) for name, values in rows.items()},
        "thin_cli_imports": imports,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
