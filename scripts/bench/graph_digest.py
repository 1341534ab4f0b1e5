#!/usr/bin/env python3
"""Count and SHA-256 of every table of a code graph database, to show two graphs identical.

A change meant to make indexing cheaper must not change the graph: build the same
workspace's cold graph with the old and the new code (``graph_vs_bare.py --keep-db``) and
compare the two outputs. Each table's rows are read in a total order of all its columns
(ids included, so node and edge numbering must match too) and hashed as their ``repr``;
``files`` leaves out the clock columns (``stale_at`` is compared as set or unset), which
differ between any two runs.

``--answers`` digests what the graph answers instead of what it stores: for every file,
``dependents`` (file, depth, weight and path, at full depth), ``dependencies`` and
``neighbours`` at depth 3, through the public API of the code on ``PYTHONPATH``. A change
to the closure's layout keeps the answers, not the stored form: run it with the old code
on the old graph and with the new code on the new one and compare the two digests. A graph
of another schema version is read from a copy (opening it upgrades it).

Usage: scripts/bench/graph_digest.py [--answers] DB [DB2]   (with two, exits 1 when they differ)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

#: Columns read per table; ``files.mtime_ns`` is the workspace's, so it is kept.
TABLES = {
    "files": "id, path, language, hash, size, mtime_ns, status, note, package, "
    "stale_at IS NOT NULL, basename",
    "nodes": "*",
    "imports": "*",
    "edges": "*",
    "file_deps": "*",
    "closure": "*",
    "meta": "*",
}


def digest(db: Path) -> dict[str, dict[str, object]]:
    """``table -> {"rows": count, "sha256": hex}`` for every table the graph holds."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        result: dict[str, dict[str, object]] = {}
        for table, columns in TABLES.items():
            width = len(conn.execute(f"SELECT {columns} FROM {table} LIMIT 0").description)
            order = ", ".join(str(i) for i in range(1, width + 1))
            sha = hashlib.sha256()
            count = 0
            for row in conn.execute(f"SELECT {columns} FROM {table} ORDER BY {order}"):
                sha.update(repr(row).encode())
                sha.update(b"\n")
                count += 1
            result[table] = {"rows": count, "sha256": sha.hexdigest()}
        return result
    finally:
        conn.close()


def answers(db: Path) -> dict[str, dict[str, object]]:
    """``answer -> {"rows": count, "sha256": hex}`` over every file of the graph at ``db``,
    as the ``CodeGraph`` on ``PYTHONPATH`` answers (``files`` in path order)."""
    from engram.codegraph import CodeGraph
    from engram.codegraph.graph import SCHEMA_VERSION
    from engram.workspace import Workspace

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    stored = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
    conn.close()
    with tempfile.TemporaryDirectory(prefix="graph-digest-") as scratch:
        if stored is None or str(stored[0]) != str(SCHEMA_VERSION):
            db = Path(shutil.copy(db, Path(scratch) / "graph.sqlite"))
        graph = CodeGraph(Workspace.open(Path(scratch)), db_path=db)
        try:
            shas = {kind: hashlib.sha256() for kind in ("dependents", "dependencies", "neighbours")}
            counts = dict.fromkeys(shas, 0)
            files = [path for path, _, _, _ in graph.files()]
            for file in files:
                found: dict[str, list[object]] = {
                    "dependents": list(graph.dependents(file)),
                    "dependencies": sorted(graph.dependencies(file).items()),
                    "neighbours": sorted(graph.neighbours([file], depth=3).items()),
                }
                for kind, rows in found.items():
                    shas[kind].update(repr((file, rows)).encode() + b"\n")
                    counts[kind] += len(rows)
        finally:
            graph.close()
    result: dict[str, dict[str, object]] = {"files": {"rows": len(files)}}
    result.update({k: {"rows": counts[k], "sha256": shas[k].hexdigest()} for k in shas})
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("other", type=Path, nargs="?")
    parser.add_argument("--answers", action="store_true", help="digest the answers, not rows")
    args = parser.parse_args(argv)
    read = answers if args.answers else digest
    first = read(args.db)
    if args.other is None:
        print(json.dumps(first))
        return 0
    second = read(args.other)
    differ = sorted(t for t in first if first[t] != second.get(t))
    print(json.dumps({"identical": not differ, "differ": differ, "a": first, "b": second}))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
