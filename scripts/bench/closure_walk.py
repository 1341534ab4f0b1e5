#!/usr/bin/env python3
"""The closure's walk alone, over the dependencies stored in a code graph, in CPU seconds.

A cold index rebuilds the whole closure: one forward walk per file with dependencies
(24,606 at 58k files, 1.88M rows). This times ``CodeGraph._forward_bfs`` of the code on
``PYTHONPATH`` over every file of an existing graph (``graph_vs_bare.py --keep-db``) and
checks that the rows it gives are the stored ``closure`` table, so an older checkout and a
newer one can be compared on the same dependencies without the rest of an index.

``--rebuild COPY`` times instead what a cold index spends on the closure and the deferred
indexes: GRAPH is copied to COPY (a new file) and opened by the code on ``PYTHONPATH`` (so
upgraded to its schema), the closure emptied and the deferred indexes dropped as a cold run
has them, then ``CodeGraph._rebuild_closure`` and ``_ensure_indexes`` are timed.

Usage: scripts/bench/closure_walk.py GRAPH.sqlite [--rounds 2] [--rebuild COPY.sqlite]
(run it with ``nice``)
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import sqlite3
import sys
import time
from pathlib import Path

Row = tuple[int, int, int, float, str]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rebuild", type=Path, help="time a cold rebuild on this copy")
    args = parser.parse_args(argv)
    if args.rebuild is not None:
        if args.rebuild.exists():
            parser.error(f"{args.rebuild} exists: the copy must be a new file")
        print(json.dumps(rebuild(args.db, args.rebuild)))
        return 0

    import engram
    from engram.codegraph import graph as graph_module

    conn = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    adjacency = graph_module._Adjacency(conn)
    adjacency.load_all()
    walker = object.__new__(graph_module.CodeGraph)  # the walk reads nothing of the instance
    sources = sorted(adjacency.sources())
    stored = sorted(conn.execute("SELECT ancestor, descendant, depth, weight, path FROM closure"))
    seconds: list[float] = []
    same = True
    gc.disable()  # as in a cold index (collector_paused)
    for _ in range(args.rounds):
        rows: list[Row] = []
        started = time.process_time()
        for start in sources:
            found = walker._forward_bfs(start, adjacency)
            if isinstance(found, dict):  # older checkouts: ancestor -> (depth, weight, path)
                rows.extend((a, start, d, w, p) for a, (d, w, p) in found.items())
            else:
                rows.extend(found)
        seconds.append(round(time.process_time() - started, 2))
        same = same and sorted(rows) == stored
        del rows
    gc.enable()
    print(
        json.dumps(
            {
                "engram": str(Path(engram.__file__).parent),
                "files_walked": len(sources),
                "closure_rows": len(stored),
                "walk_cpu_seconds": seconds,
                "rows_identical_to_stored": same,
            }
        )
    )
    return 0 if same else 1


def rebuild(db: Path, copy: Path) -> dict[str, object]:
    """CPU seconds of a cold index's closure rebuild and deferred index builds on ``copy``."""
    import engram
    from engram.codegraph import graph as graph_module
    from engram.workspace import Workspace

    shutil.copy(db, copy)
    graph = graph_module.CodeGraph(Workspace.open(copy.parent), db_path=copy)
    try:
        conn = graph._db()  # upgrades an older schema first
        conn.execute("BEGIN")
        for name in graph_module._DEFERRED_INDEXES:
            conn.execute(f"DROP INDEX IF EXISTS {name}")
        conn.execute("DELETE FROM closure")
        conn.commit()
        gc.disable()  # as in a cold index (collector_paused)
        started = time.process_time()
        conn.execute("BEGIN")
        graph._rebuild_closure(graph_module._Adjacency(conn))
        conn.commit()
        closure_cpu = time.process_time() - started
        started = time.process_time()
        graph._ensure_indexes()
        index_cpu = time.process_time() - started
        gc.enable()
        rows = int(conn.execute("SELECT count(*) FROM closure").fetchone()[0])
    finally:
        graph.close()
    return {
        "engram": str(Path(engram.__file__).parent),
        "closure_rows": rows,
        "rebuild_closure_cpu_seconds": round(closure_cpu, 2),
        "deferred_indexes_cpu_seconds": round(index_cpu, 2),
        "deferred_indexes": sorted(graph_module._DEFERRED_INDEXES),
    }


if __name__ == "__main__":
    sys.exit(main())
