#!/usr/bin/env python3
"""The closure's walk alone, over the dependencies stored in a code graph, in CPU seconds.

A cold index rebuilds the whole closure: one forward walk per file with dependencies
(24,606 at 58k files, 1.88M rows). This times ``CodeGraph._forward_bfs`` of the code on
``PYTHONPATH`` over every file of an existing graph (``graph_vs_bare.py --keep-db``) and
checks that the rows it gives are the stored ``closure`` table, so an older checkout and a
newer one can be compared on the same dependencies without the rest of an index.

Usage: scripts/bench/closure_walk.py GRAPH.sqlite [--rounds 2]   (run it with ``nice``)
"""

from __future__ import annotations

import argparse
import gc
import json
import sqlite3
import sys
import time
from pathlib import Path

Row = tuple[int, int, int, float, str]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)

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


if __name__ == "__main__":
    sys.exit(main())
