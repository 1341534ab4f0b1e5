#!/usr/bin/env python3
"""What a first index pays to write its code chunks: per-write index upkeep vs ``bulk``.

A cold ``engram index`` writes one LanceDB version per ~1,000 chunks. With upkeep after
each write (``HybridTable._after_write``: compaction every few writes; the chunk table has
no FTS index since stop 33), the growing table was rewritten every few writes;
``ChunkStore.bulk()`` defers that past its end. Both variants write the same ``--batches`` x
``--rows`` synthetic chunks into a fresh store, compact, and check that the last batch's
first five chunks are found by id; wall and CPU seconds (all threads of the process,
LanceDB's included) are reported.

Usage: scripts/bench/chunk_writes.py [--batches 60] [--rows 1024]
Last stdout line: one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def run(bulk: bool, batches: int, rows: int) -> dict[str, Any]:
    from engram.store.chunk_store import ChunkStore, CodeChunkRecord
    from engram.workspace import Workspace

    with tempfile.TemporaryDirectory(prefix="engram-bench-chunks-") as scratch:
        root = Path(scratch)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        store = ChunkStore(Workspace.open(root))
        started, cpu = time.perf_counter(), time.process_time()
        with store.bulk() if bulk else contextlib.nullcontext():
            for b in range(batches):
                records = [
                    CodeChunkRecord(
                        id=f"c{b}-{i}",
                        file=f"pkg{b}/mod{i // 10}.py",
                        kind="function",
                        name=f"fn{i}",
                        start_line=1,
                        end_line=20,
                        content=f"def fn{i}(x):\n    return x + {b * i}\n" * 20,
                        content_hash=f"h{b}-{i}",
                    )
                    for i in range(rows)
                ]
                files = sorted({r.file for r in records})
                store.replace_files(files, records)
        store.compact()
        result = {
            "bulk": bulk,
            "rows": store.count(),
            "seconds": round(time.perf_counter() - started, 2),
            "cpu_seconds": round(time.process_time() - cpu, 2),
            "found": len(store.get_many([f"c{batches - 1}-{i}" for i in range(5)])),
        }
        store.close()
        return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=60)
    parser.add_argument("--rows", type=int, default=1024)
    args = parser.parse_args(argv)
    bulk = run(True, args.batches, args.rows)
    per_write = run(False, args.batches, args.rows)
    print(
        json.dumps(
            {
                "benchmark": "chunk_writes",
                "batches": args.batches,
                "rows_per_batch": args.rows,
                "bulk": bulk,
                "per_write_upkeep": per_write,
                "cpu_ratio": round(per_write["cpu_seconds"] / max(bulk["cpu_seconds"], 1e-9), 2),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
