"""Does the audit trail agree with the store on a disk that fills up mid-change?

Mounts a small tmpfs (root only), makes a workspace on it, fills the disk to its last
byte, then runs ``remember`` again and again while freeing a little room after each try,
with the room check off (``app.trust.ROOM = 0``): that is the race the check leaves,
another process filling the disk between the check and the writes. At the end the disk is
freed and one more change is made (which settles what the trail left pending). Prints the
memories stored and the ``create`` entries the trail holds; they agree when every entry of
a change that never landed was taken back or settled.

    sudo PYTHONPATH=server python scripts/bench/full_disk_trail.py --free 6144 --steps 60

The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _fill(path: Path) -> int:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    for chunk in (1 << 16, 4096, 1):  # to the last byte
        try:
            while True:
                os.write(fd, b"\0" * chunk)
        except OSError:
            pass
    os.close(fd)
    return path.stat().st_size


def walk(root: Path, free: int, steps: int) -> dict[str, object]:
    from engram.app import Engine
    from engram.app import trust as app_trust
    from engram.app.remember import remember

    app_trust.ROOM = 0  # the race: the room was there when checked
    filler = root.parent / "filler"
    failed = 0
    started = time.perf_counter()
    with Engine.open(root, {"embed": {"model": "none"}}) as engine:
        remember(engine, "the store exists before the disk fills", scope="global")
        size = _fill(filler)
        for step in range(steps):
            try:
                remember(engine, f"memory {step} about the job queue {step * 7919}", scope="global")
            except Exception:  # the disk is full: counted, the walk goes on
                failed += 1
            size = max(0, size - free)
            os.truncate(filler, size)
        os.truncate(filler, 0)
        remember(engine, "the disk has room again", scope="global")
        stored = {m.id for m in engine.store.list(engine.filter(include_deprecated=True))}
        entries = engine.audit.recent(10_000)
    creates = [e for e in entries if e.event == "create"]
    return {
        "steps": steps,
        "free_per_step": free,
        "failed_changes": failed,
        "stored": len(stored),
        "create_entries": len(creates),
        "creates_without_memory": sum(1 for e in creates if e.memory_id not in stored),
        "memories_without_create": len(stored - {e.memory_id for e in creates}),
        "pending_left": sum(1 for e in entries if getattr(e, "pending", False)),
        "seconds": round(time.perf_counter() - started, 1),
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="24m", help="tmpfs size")
    parser.add_argument("--free", type=int, default=6144, help="bytes freed after each try")
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    logging.basicConfig(level=logging.CRITICAL)
    mount = Path(tempfile.mkdtemp(prefix="engram-full-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={args.size}", "tmpfs", mount], check=True)
    try:
        root = mount / "ws"
        root.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        (root / "jobs.py").write_text("def run():\n    return 1\n")
        result = walk(root, args.free, args.steps)
    finally:
        subprocess.run(["umount", mount], check=False)
        mount.rmdir()
    print(json.dumps(result))
    sys.exit(0 if result["creates_without_memory"] == result["memories_without_create"] == 0 else 1)


if __name__ == "__main__":
    main()
