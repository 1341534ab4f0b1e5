#!/usr/bin/env python3
"""How long the system's read-modify-writes hold the store's writer lock, on 1,000 memories.

Team sync, prune, consolidate, history sync (renames, code changes) and ``embed_missing``
read records, work a while (git, the file system, the judges, the embedding model) and
write records back. Stop 33 made each re-read and apply its change under the writer lock
(``.engram/write.lock``) instead of writing back what it read before; this prints, per
operation, its wall time and how long the lock was held (total, longest hold, holds), so a
run on the code before and after shows what holding it costs other processes. Holding the
lock across the whole operation would cost its wall time.

A scratch git repository gets ``--memories`` notes (default 1,000) anchored to 60 files, 50
near-duplicate pairs and 20 contradicting pairs stored as separate records (so consolidate
has work), and 100 committed teammate files. Then, in order:

* ``team_sync``: the first ``sync_team`` (adds the 100 teammate memories);
* ``prune``: 15 anchored files deleted from the working tree (stale marks);
* ``history_sync``: 15 other files renamed in a commit (``sync_history``: renames followed,
  the staleness check);
* ``consolidate``: over the whole store (merges, links);
* ``embed_missing``: the store made without a model, embedded with ``--model`` (default
  Engram's own, ``embed.model = "default"``; ``none`` leaves the step out).

Usage: PYTHONPATH=server scripts/bench/lock_hold.py [--memories N] [--model M]
Last stdout line: one JSON object, per operation ``{"wall_s", "lock_total_s",
"lock_max_s", "holds"}``, plus ``loadavg`` before and after.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

WORDS = [
    "cache",
    "queue",
    "worker",
    "retry",
    "timeout",
    "lock",
    "session",
    "token",
    "parser",
    "index",
    "batch",
    "socket",
    "schema",
    "migration",
    "handler",
    "router",
    "buffer",
    "stream",
    "scheduler",
    "job",
    "pool",
    "upload",
]


def _git(root: Path, *args: str, who: str = "Bench") -> None:
    ident = ["-c", f"user.name={who}", "-c", "user.email=bench@example.invalid"]
    subprocess.run(["git", *ident, *args], cwd=root, check=True, capture_output=True)


def _note(rng: random.Random, n: int) -> str:
    words = rng.sample(WORDS, 4)
    return f"Note {n}: the {words[0]} {words[1]} waits for the {words[2]} {words[3]} ({n})."


def build(root: Path, count: int) -> None:
    from engram.app import Engine
    from engram.app.remember import remember_many
    from engram.lifecycle import trust as rules
    from engram.lifecycle.team import render_team_file
    from engram.model import CodeAnchor, Memory

    rng = random.Random(33)
    _git(root, "init", "-q", "-b", "main")
    for f in range(60):
        (root / f"mod{f:02d}.py").write_text(
            "".join(f"def f{i}():\n    return {i}\n\n" for i in range(20))
        )
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "code")
    now_engine = Engine.open(root, {"embed": {"model": "none"}})
    try:
        base = count - 170  # + 70 twins + 100 teammate memories
        memories = [
            Memory(
                _note(rng, n),
                anchors=[
                    CodeAnchor(
                        f"mod{n % 60:02d}.py", start_line=3 * (n % 20), end_line=3 * (n % 20) + 1
                    )
                ],
            )
            for n in range(base)
        ]
        for start in range(0, len(memories), 200):
            remember_many(now_engine, memories[start : start + 200])
        stored = now_engine.store.list(now_engine.filter())
        twins: list[Memory] = []
        for n, original in enumerate(stored[:70]):
            text = original.content.rstrip(".") + (" again." if n < 50 else "")
            if n >= 50:  # a contradiction: the claim turned around
                text = original.content.replace("waits for", "never waits for")
            twin = rules.admit(
                Memory(text, type=original.type, anchors=list(original.anchors)),
                rules.Actor.person("Bench"),
                now=now_engine.clock(),
            ).memory
            twins.append(twin)
        now_engine.store.add(twins)  # separate records: consolidate's work
        folder = root / ".engram-team"
        folder.mkdir()
        stamp = now_engine.clock()
        for n in range(100):
            shared = Memory(
                f"Team note {n}: the {rng.choice(WORDS)} {rng.choice(WORDS)} is idempotent ({n})."
            )
            (folder / f"{shared.id}.json").write_text(
                render_team_file(shared, shared_by="Ada", shared_at=stamp)
            )
        _git(root, "add", "-A", who="Ada")
        _git(root, "commit", "-qm", "team notes", who="Ada")
    finally:
        now_engine.close()


class Holds:
    """Outermost holds of the memory store's writer lock, timed."""

    def __init__(self) -> None:
        self.times: list[float] = []

    @contextmanager
    def patched(self) -> Iterator[None]:
        from engram.store.lock import WriteLock

        original = WriteLock.hold
        times = self.times

        @contextmanager
        def hold(lock: WriteLock) -> Iterator[None]:
            outer = lock._depth == 0 and lock.path.name == "write.lock"
            with original(lock):
                start = time.perf_counter()
                try:
                    yield
                finally:
                    if outer:
                        times.append(time.perf_counter() - start)

        WriteLock.hold = hold  # type: ignore[method-assign]
        try:
            yield
        finally:
            WriteLock.hold = original  # type: ignore[method-assign]


def measure(name: str, run: Callable[[], object], out: dict[str, Any]) -> None:
    holds = Holds()
    with holds.patched():
        start = time.perf_counter()
        result = run()
        wall = time.perf_counter() - start
    out[name] = {
        "wall_s": round(wall, 3),
        "lock_total_s": round(sum(holds.times), 4),
        "lock_max_s": round(max(holds.times, default=0.0), 4),
        "holds": len(holds.times),
    }
    longest = max(holds.times, default=0.0)
    print(
        f"{name:14} wall {wall:7.2f} s  lock held {sum(holds.times):7.3f} s "
        f"(longest {longest:.3f} s, {len(holds.times)} holds)  {_short(result)}"
    )


def _short(result: object) -> str:
    text = str(getattr(result, "to_dict", lambda: result)())
    return text if len(text) < 120 else text[:117] + "..."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--model", default="default", help="embed_missing's model ('none': skip)")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    from engram.app import Engine, maintenance, team
    from engram.app.history_sync import sync_history
    from engram.app.indexing import embed_missing

    out: dict[str, Any] = {
        "memories": args.memories,
        "loadavg": [Path("/proc/loadavg").read_text().split()[0]],
    }
    with tempfile.TemporaryDirectory(prefix="engram-lockhold-") as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        start = time.perf_counter()
        build(root, args.memories)
        print(f"built {args.memories} memories in {time.perf_counter() - start:.1f} s")
        engine = Engine.open(root, {"embed": {"model": "none"}, "observer": {"enabled": False}})
        try:
            out["stored"] = engine.store.count()
            measure("team_sync", lambda: team.sync_team(engine), out)
            for f in range(15):
                (root / f"mod{f:02d}.py").unlink()
            measure("prune", lambda: maintenance.prune(engine), out)
            for f in range(15, 30):
                _git(root, "mv", f"mod{f:02d}.py", f"moved{f:02d}.py")
            _git(root, "commit", "-qm", "rename")
            measure("history_sync", lambda: sync_history(engine), out)
            measure("consolidate", lambda: maintenance.consolidate(engine), out)
        finally:
            engine.close()
        if args.model != "none":
            embedding = Engine.open(root, {"embed": {"model": args.model}})
            try:
                measure("embed_missing", lambda: embed_missing(embedding), out)
            finally:
                embedding.close()
    out["loadavg"].append(Path("/proc/loadavg").read_text().split()[0])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
