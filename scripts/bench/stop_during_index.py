#!/usr/bin/env python3
"""``engram stop`` while the workspace engine indexes: how long until stop returns and until
the engine process is gone (docs/engine.md "Faults").

Copies WORKSPACE to a temporary directory (without its ``.engram/``), starts an engine there
in a private runtime directory, asks it for ``engram index --no-embed`` over a connection
that never falls back to in-process (as an editor's link), runs ``engram stop`` after
``--after`` seconds and waits (at most ``--limit`` seconds) for the engine's pid to go.
Compare old and new code in one session by ``PYTHONPATH`` (A-B-B-A).

Usage: scripts/bench/stop_during_index.py WORKSPACE [--after S] [--limit S]
Last stdout line: one JSON object with the figures.
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

ENGRAM = Path(sys.executable).with_name("engram")

_FRONT_END = """
import sys
from engram.daemon.address import Address
from engram.daemon.client import Connection
root = sys.argv[1]
connection = Connection.open(Address.for_workspace(root), "cli")
try:
    connection.call("cli", {"argv": ["index", "--workspace", root, "--no-embed"], "cwd": root})
except Exception as exc:
    print(type(exc).__name__, file=sys.stderr)
"""


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
    parser.add_argument("--limit", type=float, default=240.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="engram-stop-", dir="/tmp") as tmp:
        root = Path(tmp) / "ws"
        shutil.copytree(args.workspace, root, symlinks=True,
                        ignore=shutil.ignore_patterns(".engram"))  # fmt: skip
        runtime = Path(tmp) / "run"
        runtime.mkdir(mode=0o700)
        env = {**os.environ, "ENGRAM_RUNTIME_DIR": str(runtime), "ENGRAM_EMBED__MODEL": "none",
               "ENGRAM_ENGINE": "auto"}  # fmt: skip
        subprocess.run([str(ENGRAM), "stats"], cwd=root, env=env, capture_output=True,
                       check=True, timeout=240)  # fmt: skip
        [pid_file] = runtime.glob("*.pid")
        engine = int(json.loads(pid_file.read_text())["pid"])
        front = subprocess.Popen([sys.executable, "-c", _FRONT_END, str(root)], env=env,
                                 stderr=subprocess.DEVNULL)  # fmt: skip
        time.sleep(args.after)
        started = time.monotonic()
        stop = subprocess.run([str(ENGRAM), "stop"], cwd=root, env=env, capture_output=True,
                              text=True, timeout=240, check=False)  # fmt: skip
        returned = time.monotonic() - started
        while alive(engine) and time.monotonic() - started < args.limit:
            time.sleep(0.05)
        gone = time.monotonic() - started if not alive(engine) else None
        front.wait(timeout=args.limit)
        result = {
            "stop_returned_s": round(returned, 2),
            "engine_gone_s": round(gone, 2) if gone is not None else None,
            "stop_said": (stop.stdout + stop.stderr).strip().splitlines(),
        }
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
