#!/usr/bin/env python3
"""``engram stop`` while the workspace engine indexes: how long until stop returns and until
the engine process is gone (docs/engine.md "Faults").

Copies WORKSPACE to a temporary directory (without its ``.engram/``), starts an engine there
in a private runtime directory, asks it for ``engram index --no-embed`` over a connection
that never falls back to in-process (as an editor's link), runs ``engram stop`` after
``--after`` seconds and waits (at most ``--limit`` seconds) for the engine's pid to go.
Compare old and new code in one session by ``PYTHONPATH`` (A-B-B-A).

``--phase`` stops inside one phase instead, ``--into`` seconds after it began, each phase
on a fresh copy: ``parse`` (the first progress line of the graph), ``resolve`` (the
engine's log says the parse workers are done: resolution, the closure and the chunk
writer's FTS build run), ``chunks`` and ``history`` (their progress stage's first line).
Markers every version of the engine writes, so old and new code are stopped alike.

Usage: scripts/bench/stop_during_index.py WORKSPACE [--after S | --phase P... [--into S]]
       [--limit S]
Last stdout line: one JSON object with the figures (per phase with ``--phase``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ENGRAM = Path(sys.executable).with_name("engram")

_FRONT_END = """
import sys
from engram.daemon.address import Address
from engram.daemon.client import Connection
root = sys.argv[1]
connection = Connection.open(Address.for_workspace(root), "cli")
request = {"argv": ["index", "--workspace", root, "--no-embed"], "cwd": root,
           "stream_stderr": True}
try:
    connection.call("cli", request, on_stderr=lambda text: (sys.stdout.write(text),
                                                            sys.stdout.flush()))
except Exception as exc:
    print(type(exc).__name__, file=sys.stderr)
"""

#: What says a phase began: (where, text): ``progress`` lines the front end hears, the
#: engine's ``log``
PHASES = {
    "parse": ("progress", "engram: indexing code: "),
    "resolve": ("log", "worker processes ("),
    "chunks": ("progress", "engram: chunking and embedding code"),
    "history": ("progress", "engram: mining git history"),
}


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return not fh.read().split(") ", 1)[-1].startswith("Z")
    except OSError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--after", type=float, default=20.0)
    parser.add_argument("--phase", action="append", choices=sorted(PHASES))
    parser.add_argument("--into", type=float, default=0.5)
    parser.add_argument("--limit", type=float, default=240.0)
    args = parser.parse_args()
    result: dict[str, object]
    if not args.phase:
        result = stop_once(args.workspace, args.limit, after=args.after)
    else:
        result = {"into_s": args.into}
        for phase in args.phase:
            result[phase] = stop_once(args.workspace, args.limit, phase=phase, into=args.into)
            print(phase, json.dumps(result[phase]), flush=True)
    result["load"] = Path("/proc/loadavg").read_text().split()[:3]
    print(json.dumps(result))
    return 0


def stop_once(
    workspace: Path, limit: float, *, after: float = 0.0, phase: str | None = None,
    into: float = 0.0,
) -> dict[str, object]:  # fmt: skip
    """One engine on a fresh copy of ``workspace``, stopped ``after`` seconds into its
    index or ``into`` seconds into ``phase``: the figures of that stop."""
    with tempfile.TemporaryDirectory(prefix="engram-stop-", dir="/tmp") as tmp:
        root = Path(tmp) / "ws"
        shutil.copytree(workspace, root, symlinks=True,
                        ignore=shutil.ignore_patterns(".engram"))  # fmt: skip
        runtime = Path(tmp) / "run"
        runtime.mkdir(mode=0o700)
        env = {**os.environ, "ENGRAM_RUNTIME_DIR": str(runtime), "ENGRAM_EMBED__MODEL": "none",
               "ENGRAM_ENGINE": "auto", "ENGRAM_PROGRESS_SECONDS": "0.2"}  # fmt: skip
        subprocess.run([str(ENGRAM), "stats"], cwd=root, env=env, capture_output=True,
                       check=True, timeout=240)  # fmt: skip
        [pid_file] = runtime.glob("*.pid")
        engine = int(json.loads(pid_file.read_text())["pid"])
        front = subprocess.Popen([sys.executable, "-c", _FRONT_END, str(root)], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 text=True)  # fmt: skip
        heard: list[str] = []
        assert front.stdout is not None
        reader = threading.Thread(target=lambda: heard.extend(front.stdout or ()), daemon=True)
        reader.start()
        began = time.monotonic()
        reached: float | None = None
        if phase is None:
            time.sleep(after)
        else:
            where, text = PHASES[phase]
            log = root / ".engram" / "logs" / "engine.log"
            while front.poll() is None and time.monotonic() - began < limit:
                lines = heard if where == "progress" else _lines(log)
                if any(text in line for line in lines):
                    reached = time.monotonic() - began
                    break
                time.sleep(0.05)
            time.sleep(into)
        ended_first = front.poll() is not None  # the index ended before the stop came
        started = time.monotonic()
        stop = subprocess.run([str(ENGRAM), "stop"], cwd=root, env=env, capture_output=True,
                              text=True, timeout=240, check=False)  # fmt: skip
        returned = time.monotonic() - started
        while alive(engine) and time.monotonic() - started < limit:
            time.sleep(0.05)
        gone = time.monotonic() - started if not alive(engine) else None
        front.wait(timeout=limit)
        reader.join(5)
        result: dict[str, object] = {
            "stop_returned_s": round(returned, 2),
            "engine_gone_s": round(gone, 2) if gone is not None else None,
            "stop_said": (stop.stdout + stop.stderr).strip().splitlines(),
        }
        if phase is not None:
            result["phase_began_s"] = round(reached, 2) if reached is not None else None
            result["index_ended_before_stop"] = ended_first
            result["last_heard"] = [line.strip() for line in heard[-2:]]
        return result


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


if __name__ == "__main__":
    sys.exit(main())
