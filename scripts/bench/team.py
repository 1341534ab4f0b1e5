#!/usr/bin/env python3
"""Team sharing and consolidation cost: share, sync (first, unchanged, one edit), consolidate.

A scratch git repository gets N confirmed memories (synthetic technical notes, a tenth of
them contradicting another); then, in one run:

* ``share``: ``engram.app.team.share`` writing N files into ``.engram-team/``;
* ``sync_first``: a second clone's first ``engram.app.team.sync_team`` (adds N memories);
* ``sync_unchanged``: the same again (every file skipped by its hash);
* ``sync_one_edit``: one file edited by a teammate (one update, re-embedded);
* ``consolidate``: ``engram.app.maintenance.consolidate`` over the N + a tenth local memories;
* ``remember_batch``: ``remember_many`` (``engram.app.remember``) of the same N notes into a
  fresh store, the comparison row (dedup + contradiction checks included) for what sync costs
  per memory.

The embedding model is off by default (``--model`` to include it): the figures are then
Engram's own cost, not the model's ~70 texts/s.

Usage: scripts/bench/team.py [--memories N] [--model] [--json]
Last stdout line: one JSON object with seconds per step and per memory.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

CLAIMS = [
    ("must run before", "must run after"),
    ("is synchronous in", "is asynchronous in"),
    ("should enable", "should disable"),
    ("needs a lock around", "does not need a lock around"),
]


def _word(rng: random.Random) -> str:
    consonants, vowels = "bcdfghjklmnprstvz", "aeiou"
    return "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(rng.randint(2, 4)))


def notes(count: int, seed: int) -> tuple[list[str], list[str]]:
    """``count`` distinct notes about made-up components, and a tenth as many that
    contradict one of them (the same note with its claim turned around)."""
    rng = random.Random(seed)
    out: list[str] = []
    against: list[str] = []
    for i in range(count):
        left, right = CLAIMS[i % len(CLAIMS)]
        subject = " ".join(_word(rng) for _ in range(3))
        target = " ".join(_word(rng) for _ in range(4))
        out.append(f"the {subject} {left} the {target}")
        if i % 10 == 0:
            against.append(f"the {subject} {right} the {target}")
    return out, against


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=120)


def timed(fn: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    result = fn()
    return result, round(time.perf_counter() - started, 3)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--model", action="store_true", help="embed with the default model")
    parser.add_argument("--json", action="store_true", help="print the JSON summary line")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if args.memories < 10:
        print("team bench: --memories must be at least 10", file=sys.stderr)
        return 2

    from engram.app import Engine
    from engram.app.maintenance import consolidate
    from engram.app.remember import remember_many
    from engram.app.team import share, sync_team
    from engram.config import EmbedConfig, EngramConfig
    from engram.model import Memory, MemoryType
    from engram.workspace import Workspace

    config = EngramConfig(embed=EmbedConfig(model="default" if args.model else "none"))
    texts, against = notes(args.memories, 7)
    figures: dict[str, Any] = {"memories": args.memories, "model": args.model}
    with tempfile.TemporaryDirectory(prefix="bench-team-") as tmp:
        ana_root, ben_root, solo_root = Path(tmp, "ana"), Path(tmp, "ben"), Path(tmp, "solo")
        for root in (ana_root, solo_root):
            root.mkdir()
            git(root, "init", "-q", "-b", "main")
            git(root, "config", "user.name", "Ana")
            git(root, "config", "user.email", "ana@example.com")
        (ana_root / "README.md").write_text("bench\n")
        git(ana_root, "add", ".")
        git(ana_root, "commit", "-qm", "init")

        ana = Engine(Workspace.open(ana_root), config)
        try:
            batch = [Memory(t, type=MemoryType.DECISION, user_verified=True) for t in texts]
            remember_many(ana, batch)
            report, figures["share"] = timed(lambda: share(ana, commit=True))
            figures["shared_files"] = len(report.written)
        finally:
            ana.close()

        git(Path(tmp), "clone", "-q", str(ana_root), str(ben_root))
        ben = Engine(Workspace.open(ben_root), config)
        try:
            local = [Memory(t, type=MemoryType.DECISION) for t in against]
            remember_many(ben, local)
            first, figures["sync_first"] = timed(lambda: sync_team(ben))
            figures["sync_first_added"] = first.added
            figures["sync_first_conflicts"] = len(first.conflicts)
            again, figures["sync_unchanged"] = timed(lambda: sync_team(ben))
            figures["sync_unchanged_count"] = again.unchanged
            edited = sorted((ben_root / ".engram-team").glob("*.json"))[0]
            record = json.loads(edited.read_text())
            record["content"] += " (checked by Ben)"
            edited.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
            one, figures["sync_one_edit"] = timed(lambda: sync_team(ben))
            figures["sync_one_edit_updated"] = one.updated
            merged, figures["consolidate"] = timed(lambda: consolidate(ben))
            figures["consolidate_scanned"] = merged.scanned
        finally:
            ben.close()

        solo = Engine(Workspace.open(solo_root), config)
        try:
            batch = [Memory(t, type=MemoryType.DECISION) for t in texts]
            _, figures["remember_batch"] = timed(lambda: remember_many(solo, batch))
        finally:
            solo.close()

    n = args.memories
    figures["ms_per_memory"] = {
        "share": round(1000 * figures["share"] / n, 2),
        "sync_first": round(1000 * figures["sync_first"] / n, 2),
        "remember_batch": round(1000 * figures["remember_batch"] / n, 2),
        "consolidate": round(1000 * figures["consolidate"] / figures["consolidate_scanned"], 2),
    }
    summary = {"benchmark": "team", **figures}
    print(
        f"{n} memories: share {figures['share']}s, first sync {figures['sync_first']}s "
        f"(remember_many {figures['remember_batch']}s), unchanged sync "
        f"{figures['sync_unchanged']}s, one edit {figures['sync_one_edit']}s, "
        f"consolidate {figures['consolidate']}s",
        file=sys.stderr,
    )
    print(json.dumps(summary) if args.json else json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
