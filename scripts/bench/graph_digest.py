#!/usr/bin/env python3
"""Count and SHA-256 of every table of a code graph database, to show two graphs identical.

A change meant to make indexing cheaper must not change the graph: build the same
workspace's cold graph with the old and the new code (``graph_vs_bare.py --keep-db``) and
compare the two outputs. Each table's rows are read in a total order of all its columns
(ids included, so node and edge numbering must match too) and hashed as their ``repr``;
``files`` leaves out the clock columns (``stale_at`` is compared as set or unset), which
differ between any two runs.

Usage: scripts/bench/graph_digest.py DB [DB2]   (with two, exits 1 when they differ)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import sys
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("other", type=Path, nargs="?")
    args = parser.parse_args(argv)
    first = digest(args.db)
    if args.other is None:
        print(json.dumps(first))
        return 0
    second = digest(args.other)
    differ = sorted(t for t in TABLES if first[t] != second[t])
    print(json.dumps({"identical": not differ, "differ": differ, "a": first, "b": second}))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
