#!/usr/bin/env python3
"""Front ends with the workspace engine next to today's in-process path, in one run.

On a temporary git workspace holding MEMORIES memories (embedded with the configured
model, ``default`` unless ``--model none``), it measures fresh ``engram`` processes exactly
as a person or an agent's shell tool runs them:

* ``search`` and ``remember`` end to end with the engine warm (RUNS each, after one warm-up
  call that starts the engine), and with ``ENGRAM_ENGINE=off`` (IN_PROCESS_RUNS each), the
  two alternated so machine load hits both alike;
* ``python -c pass`` in the same run, the floor any fresh process pays;
* ``python -X importtime`` of a forwarded ``search``: what the thin CLI imports before its
  request is on the wire (total and the largest modules);
* the engine's resident and peak memory after the runs (``engram status``).

The machine is shared: compare rows of one run. Targets (issue 15): search <= 150 ms,
remember <= 200 ms end to end with the engine warm.

Usage: scripts/bench/frontends.py [--memories N] [--runs N] [--in-process-runs N]
                                  [--model NAME]
Last stdout line: one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENGRAM = Path(sys.executable).with_name("engram")
TOPICS = [
    "payment API wants integer cents",
    "retry the flaky upload twice before failing",
    "the cache key includes the tenant id",
    "timestamps are stored in UTC, shown in local time",
    "the importer skips rows without an email",
    "feature flags are read once at start-up",
    "never log the raw request body: it holds tokens",
    "the nightly job holds the write lock for minutes",
]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(values) * 1000, 1),
        "p95_ms": round(percentile(values, 0.95) * 1000, 1),
        "min_ms": round(min(values) * 1000, 1),
        "runs": len(values),
    }


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, timeout=600)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {proc.stderr.decode()[-400:]}")
    return elapsed


def seed(root: Path, count: int, env: dict[str, str]) -> None:
    """``count`` memories through one ``engram import`` (fast, and embedded as usual)."""
    lines = ["# Notes", ""]
    for i in range(count):
        topic = TOPICS[i % len(TOPICS)]
        lines.append(f"- never forget note {i}: {topic} (module m{i % 37})")
    notes = root / "NOTES.md"
    notes.write_text("\n".join(lines) + "\n", encoding="utf-8")
    subprocess.run(
        [str(ENGRAM), "import", str(notes)], cwd=root, env=env, check=True, capture_output=True
    )


def import_profile(root: Path, env: dict[str, str]) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", str(ENGRAM), "search", "cents"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line or "self" in line:
            continue
        _, self_us, cumulative, name = (
            part.strip() for part in line.replace(":", "|", 1).split("|")
        )
        rows.append((name, int(self_us), int(cumulative)))
    total_us = sum(r[1] for r in rows)
    engram = [r for r in rows if r[0].strip().startswith("engram")]
    largest = sorted(rows, key=lambda r: -r[1])[:8]
    heavy = [r[0].strip() for r in rows if r[0].strip().split(".")[0] in HEAVY]
    return {
        "modules": len(rows),
        "total_ms": round(total_us / 1000, 1),
        "engram_modules": [r[0].strip() for r in engram],
        "largest": {r[0].strip(): round(r[1] / 1000, 1) for r in largest},
        "heavy_imported": heavy,
    }


HEAVY = {
    "lancedb",
    "pyarrow",
    "numpy",
    "onnxruntime",
    "fastembed",
    "tree_sitter",
    "attrs",
    "cattrs",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--in-process-runs", type=int, default=3)
    parser.add_argument("--model", default="default", help="embed.model (default: the bundled one)")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="engram-fe-bench-"))
    runtime = Path(tempfile.mkdtemp(prefix="efb-", dir="/tmp"))
    root = work / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    base["ENGRAM_EMBED__MODEL"] = args.model
    base["ENGRAM_RUNTIME_DIR"] = str(runtime)
    engine_env = {**base, "ENGRAM_ENGINE": "auto", "ENGRAM_ENGINE_IDLE_SECONDS": "600"}
    local_env = {**base, "ENGRAM_ENGINE": "off"}
    try:
        print(f"seeding {args.memories} memories in {root}", file=sys.stderr)
        seed(root, args.memories, local_env)
        started = time.perf_counter()
        timed([str(ENGRAM), "search", "warm up"], root, engine_env)  # starts the engine
        cold_start = time.perf_counter() - started
        timed([str(ENGRAM), "remember", "warm up the write path"], root, engine_env)

        floor = [timed([sys.executable, "-c", "pass"], root, base) for _ in range(args.runs)]
        engine_search: list[float] = []
        engine_remember: list[float] = []
        local_search: list[float] = []
        local_remember: list[float] = []
        for i in range(args.runs):
            query = TOPICS[i % len(TOPICS)].split(" ", 2)[-1]
            engine_search.append(timed([str(ENGRAM), "search", query], root, engine_env))
            engine_remember.append(
                timed(
                    [str(ENGRAM), "remember", f"engine note {i}: {TOPICS[i % 8]} #{i}"],
                    root,
                    engine_env,
                )
            )
            if i < args.in_process_runs:
                local_search.append(timed([str(ENGRAM), "search", query], root, local_env))
                local_remember.append(
                    timed(
                        [str(ENGRAM), "remember", f"local note {i}: {TOPICS[i % 8]} #{i}"],
                        root,
                        local_env,
                    )
                )
        profile = import_profile(root, engine_env)
        status = json.loads(
            subprocess.run(
                [str(ENGRAM), "status", "--json"],
                cwd=root,
                env=engine_env,
                capture_output=True,
                text=True,
            ).stdout
        )
        result = {
            "bench": "frontends",
            "memories": args.memories,
            "model": args.model,
            "cli": {
                "search_engine": summary(engine_search),
                "search_in_process": summary(local_search),
                "remember_engine": summary(engine_remember),
                "remember_in_process": summary(local_remember),
                "python_floor": summary(floor),
                "engine_cold_start_ms": round(cold_start * 1000, 1),
            },
            "thin_cli_imports": profile,
            "engine": {
                "rss_mb": round((status.get("rss_bytes") or 0) / 1_048_576, 1),
                "peak_rss_mb": round((status.get("peak_rss_bytes") or 0) / 1_048_576, 1),
                "requests": status.get("requests"),
            },
            "targets": {
                "search_engine_p50_le_150ms": summary(engine_search)["p50_ms"] <= 150,
                "remember_engine_p50_le_200ms": summary(engine_remember)["p50_ms"] <= 200,
            },
        }
    finally:
        subprocess.run([str(ENGRAM), "stop"], cwd=root, env=engine_env, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
