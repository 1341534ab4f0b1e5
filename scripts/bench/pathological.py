#!/usr/bin/env python3
"""Pathological files: what a cold graph index of generated, absurdly nested files costs.

Writes into a temporary workspace a JS and a TS object nested 50,000 levels (200 KB each),
a Python list and a Go expression nested 70,000 levels, and calls nested 30,000 deep in
Python, JS, Rust and Java (90 KB each), then indexes it in this process with
``CodeGraph.index`` (no workers) and prints, per run, the graph's wall and CPU seconds, its
rows and the files noted as partly indexed (docs/codegraph.md "Pathological files").

Compare old and new code in one session by ``PYTHONPATH`` (A-B-B-A), e.g.
``PYTHONPATH=/tmp/old/server scripts/bench/pathological.py``.

Usage: scripts/bench/pathological.py [--runs N]
Last stdout line: one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FILES = {
    "deep_object.js": "const x = " + "{a:" * 50_000 + "1" + "}" * 50_000 + ";\n",
    "deep_object.ts": "const x = " + "{a:" * 50_000 + "1" + "}" * 50_000 + ";\n",
    "deep_list.py": "y = " + "[" * 70_000 + "1" + "]" * 70_000 + "\n",
    "deep_parens.go": "package p\n\nvar y = " + "(" * 70_000 + "1" + ")" * 70_000 + "\n",
    "deep_calls.py": "y = " + "f(" * 30_000 + "1" + ")" * 30_000 + "\n",
    "deep_calls.js": "const y = " + "f(" * 30_000 + "1" + ")" * 30_000 + ";\n",
    "deep_calls.rs": "fn main() { let y = " + "f(" * 30_000 + "1" + ")" * 30_000 + "; }\n",
    "deep_calls.java": "class A { int y = " + "f(" * 30_000 + "1" + ")" * 30_000 + "; }\n",
    "ok.py": "def g(x):\n    return x\n",
}


def one_run(base: Path, run: int) -> dict[str, object]:
    from engram.codegraph import CodeGraph
    from engram.config import IndexConfig
    from engram.workspace import Workspace

    root = base / f"ws{run}"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for name, text in FILES.items():
        (root / name).write_text(text, encoding="utf-8")
    graph = CodeGraph(Workspace.open(root), IndexConfig(workers=0), db_path=base / f"g{run}.db")
    wall, cpu = time.perf_counter(), time.process_time()
    report = graph.index()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    graph.close()
    partial = [n for n in report.notes if "nested deeper" in n]
    return {
        "seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "files": report.files_indexed,
        "nodes": report.nodes,
        "edges": report.edges,
        "partly_indexed": len(partial),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="engram-patho-") as tmp:
        for run in range(args.runs):
            figures = one_run(Path(tmp), run)
            print(f"run {run}: {figures}", file=sys.stderr)
            results.append(figures)
    print(json.dumps({"runs": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
