#!/usr/bin/env python3
"""The code graph's cold index next to bare tree-sitter, in one process, in CPU seconds.

``scripts/bench/scale.py`` measures the same ratio through ``engram index --no-embed`` (the
whole pipeline: chunks, history); this script isolates the graph so a change to it can be
measured quickly and alternately against an older checkout (``PYTHONPATH=<old>/server``):

* ``bare``: read + parse + the four queries over the files Engram would parse (the floor,
  ``scripts/bench/index.py``'s ``bare_tree_sitter``), and again with the four run as the one
  combined query the graph runs (``bare_combined``, the stricter floor);
* ``graph``: ``CodeGraph.index()`` from nothing into a scratch database: parse, extract,
  store, resolve, closure.

``ratio`` = bare CPU seconds / graph CPU seconds (issue 18's goal: >= 0.8);
``ratio_combined`` the same against the combined-query floor. The graph's CPU seconds are
this process's and its finished children's: a cold index that parses in worker processes
(docs/codegraph.md, "A cold index on several cores") is charged for every worker
(``graph_children_cpu_seconds`` is their part, with the listing's ``git ls-files``, ~0.6 s
at 58k, which runs before this script counted children: ratios from before 28 Nov left it
out). ``throughput`` and ``throughput_combined``
are the same ratios on wall seconds (the floor runs in one process; the index may use
several), and ``graph_tree_peak_rss_mb`` the sampled peak of this process and its workers
together (``proctree.py``).

``--edit FILE`` then edits FILE (relative to the workspace) ``--edits`` times on that
graph as ``scale.py``'s latency phase does (a comment appended, one or two alternately;
then a line inserted at the top) and gives ``CodeGraph.reindex_file``'s wall and CPU
p50/p95 in ms; FILE is restored.

``--keep-db PATH`` writes the graph to PATH (a new file) and keeps it, so that two trees'
cold graphs can be compared with ``scripts/bench/graph_digest.py``.

``--workers N`` sets ``index.workers`` for the graph (0: in one process; without it the
setting's default, one worker per CPU up to 8 for a run of 1,000 files or more).

Usage: scripts/bench/graph_vs_bare.py WORKSPACE [--edit FILE [--edits 40]] [--keep-db PATH]
[--workers N]
(run it with ``nice``; the last stdout line is one JSON object)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram.codegraph import CodeGraph

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--edit", help="a file to re-index after edits, as scale.py does")
    parser.add_argument("--edits", type=int, default=40)
    parser.add_argument("--keep-db", type=Path, help="build the graph here and keep it")
    parser.add_argument(
        "--workers",
        type=int,
        help="index.workers for the graph (default: the setting's default; 0: one process)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    import engram
    from engram.codegraph import CodeGraph
    from engram.codegraph.languages import language_for
    from engram.codegraph.walk import iter_workspace_files
    from engram.workspace import Workspace

    spec = importlib.util.spec_from_file_location("bench_index", HERE / "index.py")
    assert spec is not None and spec.loader is not None
    bench_index = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_index)
    spec = importlib.util.spec_from_file_location("bench_proctree", HERE / "proctree.py")
    assert spec is not None and spec.loader is not None
    proctree = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(proctree)

    files = [p for p in iter_workspace_files(args.workspace) if language_for(p) is not None]
    for file in files:  # the same warm page cache for both
        (args.workspace / file).read_bytes()
    started = time.process_time()
    bare_wall, size, parsed = bench_index.bare_tree_sitter(args.workspace, files)
    bare_cpu = time.process_time() - started
    started = time.process_time()
    combined_wall, _, _ = bench_index.bare_tree_sitter(args.workspace, files, combined=True)
    combined_cpu = time.process_time() - started

    with tempfile.TemporaryDirectory(prefix="engram-graph-vs-bare-") as scratch:
        if args.keep_db is not None and args.keep_db.exists():
            parser.error(f"{args.keep_db} exists: the measured index must start from nothing")
        db_path = args.keep_db or Path(scratch) / "graph.sqlite"
        config = None
        if args.workers is not None:  # a tree from before parse workers has no such setting
            from engram.config import IndexConfig

            config = IndexConfig(workers=args.workers)
        graph = CodeGraph(Workspace.open(args.workspace), config, db_path=db_path)
        started, children = time.process_time(), children_cpu()
        wall = time.perf_counter()
        with proctree.TreeRssSampler(os.getpid()) as sampler:
            report = graph.index()
        graph_wall = time.perf_counter() - wall
        worker_cpu = children_cpu() - children
        graph_cpu = time.process_time() - started - sampler.cpu_seconds + worker_cpu
        edits = edit_latency(graph, args.workspace, args.edit, args.edits) if args.edit else {}
        graph.close()
    result = {
        "engram": str(Path(engram.__file__).parent),
        "files_parsed_bare": parsed,
        "bytes": size,
        "bare_cpu_seconds": round(bare_cpu, 2),
        "bare_combined_cpu_seconds": round(combined_cpu, 2),
        "bare_wall_seconds": round(bare_wall, 2),
        "bare_combined_wall_seconds": round(combined_wall, 2),
        "graph_cpu_seconds": round(graph_cpu, 2),
        "graph_children_cpu_seconds": round(worker_cpu, 2),
        "graph_wall_seconds": round(graph_wall, 2),
        "workers": getattr(report, "workers", 0),
        "files_indexed": report.files_indexed,
        "nodes": report.nodes,
        "edges": report.edges,
        "closure_rows": report.closure_rows,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "graph_tree_peak_rss_mb": sampler.peak_mb,
        "ratio": round(bare_cpu / graph_cpu, 3) if graph_cpu else None,
        "ratio_combined": round(combined_cpu / graph_cpu, 3) if graph_cpu else None,
        "throughput": round(bare_wall / graph_wall, 3) if graph_wall else None,
        "throughput_combined": round(combined_wall / graph_wall, 3) if graph_wall else None,
        **edits,
    }
    print(json.dumps(result))
    return 0


def children_cpu() -> float:
    """CPU seconds of this process's finished (waited-for) children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))], 2)


def edit_latency(graph: CodeGraph, workspace: Path, target: str, count: int) -> dict[str, float]:
    """``reindex_file`` after appended comments, then after a line inserted at the top."""
    path = workspace / target
    original = path.read_bytes()
    comment = b"\n# engram bench edit\n" if target.endswith(".py") else b"\n// engram bench edit\n"
    timings: dict[str, tuple[list[float], list[float]]] = {"append": ([], []), "shift": ([], [])}
    try:
        for kind, (wall_ms, cpu_ms) in timings.items():
            for edit in range(count):
                extra = comment * (edit % 2 + 1)
                if kind == "append":
                    path.write_bytes(original + extra)
                else:
                    path.write_bytes(extra.lstrip(b"\n") + original)
                t0, c0 = time.perf_counter(), time.process_time()
                graph.reindex_file(target)
                wall_ms.append((time.perf_counter() - t0) * 1000)
                cpu_ms.append((time.process_time() - c0) * 1000)
    finally:
        path.write_bytes(original)
        graph.reindex_file(target)
    result: dict[str, float] = {}
    for kind, (wall_ms, cpu_ms) in timings.items():
        result[f"{kind}_p50_ms"] = percentile(wall_ms, 0.5)
        result[f"{kind}_p95_ms"] = percentile(wall_ms, 0.95)
        result[f"{kind}_cpu_p50_ms"] = percentile(cpu_ms, 0.5)
        result[f"{kind}_cpu_p95_ms"] = percentile(cpu_ms, 0.95)
    return result


if __name__ == "__main__":
    sys.exit(main())
