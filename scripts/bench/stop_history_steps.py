#!/usr/bin/env python3
"""A stop inside one step after mining: how long until ``sync_history`` returns
(docs/engine.md "Faults").

On WORKSPACE, already indexed (``engram index --no-embed``), the step's state is reset first
(the renames applied, the fitted co-change model), the store opened, then ``sync_history``
runs with a cancel that turns true ``--into`` seconds after STEP began. Old and new code
compare by ``PYTHONPATH`` (A-B-B-A); the step functions it times are named the same in both.

Usage: scripts/bench/stop_history_steps.py WORKSPACE --step renames|cochange [--into S]
Last stdout line: one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

STEPS = {"renames": "_follow_renames", "cochange": "_learn_cochange"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--step", choices=sorted(STEPS), required=True)
    parser.add_argument("--into", type=float, default=1.0)
    args = parser.parse_args()

    from engram.app import history_sync
    from engram.app.engine import Engine
    from engram.app.state import EngineState

    stop = threading.Event()
    began: list[float] = []
    told: list[float] = []
    inner = getattr(history_sync, STEPS[args.step])

    def timed(*a: Any, **k: Any) -> Any:
        began.append(time.monotonic())

        def later() -> None:
            time.sleep(args.into)
            told.append(time.monotonic())
            stop.set()

        threading.Thread(target=later, daemon=True).start()
        return inner(*a, **k)

    setattr(history_sync, STEPS[args.step], timed)
    root = args.workspace.resolve()
    engine = Engine.open(root, overrides={"embed": {"model": "none"}})
    engine.store.count()  # the store's first open is not the step's work
    EngineState.of(engine.workspace).set("renames_applied_commit", None)
    with sqlite3.connect(root / ".engram" / "history.sqlite") as db:
        db.execute("DELETE FROM meta WHERE key='cochange_model'")
    report = history_sync.sync_history(engine, cancel=stop.is_set)
    end = time.monotonic()
    engine.close()
    print(json.dumps({
        "step": args.step,
        "into_s": args.into,
        "step_to_return_s": round(end - began[0], 2) if began else None,
        "stop_to_return_s": round(end - told[0], 2) if told else None,
        "interrupted": report.interrupted,
        "load": Path("/proc/loadavg").read_text().split()[:3],
    }))  # fmt: skip


if __name__ == "__main__":
    main()
