#!/usr/bin/env python3
"""Indexing benchmark: Engram's cold index against bare tree-sitter on the same files.

Measured in one run on a private checkout of REPO (``git clone --local``; REPO is never
modified):

* cold index (walk, hash, parse, extract, SQLite graph, resolution, closure): MB/s, files/s;
* bare tree-sitter: read + parse + the same four queries per file, nothing stored;
* incremental re-index of one edited file (``CodeGraph.reindex_file``), p50/p95 over edits;
* impact query (``ImpactAnalyzer.impact``) p50/p95 over files of the repository;
* peak RSS of the process.

Usage: scripts/bench/index.py REPO [--edits N] [--impacts N] [--json]
Last stdout line: one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def bare_tree_sitter(
    root: Path, files: list[str], *, combined: bool = False
) -> tuple[float, int, int]:
    """Seconds, bytes and files for read + parse + four queries, storing nothing.

    ``combined`` runs the language's four queries as the one combined query the graph's
    extraction runs (``LoadedLanguage.combined``; the four one by one when a language has
    none): the same matches for ~2.5x less query work, so this floor is the lower of the
    two and the graph's ratio to it the stricter (docs/codegraph.md, "The floor").
    """
    from tree_sitter import Parser, QueryCursor

    from engram.codegraph.languages import LanguageRegistry, language_for

    registry = LanguageRegistry()
    parser = Parser()
    for file in files:  # load grammars and compile queries outside the timed loop
        spec = language_for(file)
        if spec is not None:
            registry.get(spec)
    total_bytes = 0
    parsed = 0
    started = time.perf_counter()
    for file in files:
        spec = language_for(file)
        loaded = registry.get(spec) if spec is not None else None
        if loaded is None:
            continue
        data = (root / file).read_bytes()
        parser.language = loaded.language
        tree = parser.parse(data)
        if combined and loaded.combined is not None:
            QueryCursor(loaded.combined).matches(tree.root_node)
        else:
            for query in loaded.queries.values():
                QueryCursor(query).matches(tree.root_node)
        total_bytes += len(data)
        parsed += 1
    return time.perf_counter() - started, total_bytes, parsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--impacts", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    from engram.codegraph import CodeGraph, ImpactAnalyzer
    from engram.codegraph.languages import language_for
    from engram.workspace import Workspace

    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="engram-bench-index-") as scratch:
        checkout = Path(scratch) / "repo"
        subprocess.run(
            [
                "git",
                "clone",
                "-q",
                "--local",
                "--no-hardlinks",
                str(args.repo.resolve()),
                str(checkout),
            ],
            check=True,
        )
        workspace = Workspace.open(checkout)
        graph = CodeGraph(workspace, db_path=Path(scratch) / "graph.sqlite")
        from engram.codegraph.walk import iter_workspace_files

        listed = [p for p in iter_workspace_files(checkout) if language_for(p) is not None]
        for file in listed:  # same warm page cache for both contenders
            (checkout / file).read_bytes()

        bare_seconds, bare_bytes, bare_files = bare_tree_sitter(checkout, listed)

        started = time.perf_counter()
        report = graph.index()
        cold_seconds = time.perf_counter() - started
        code_bytes = sum((checkout / f).stat().st_size for f in listed)

        # incremental: edit a file that others depend on, alternating two versions
        candidates = sorted(listed, key=lambda f: (-len(graph.dependents(f, 1)), f))[
            : max(1, len(listed) // 10)
        ]
        target = rng.choice(candidates) if candidates else None
        edit_ms: list[float] = []
        if target is not None:
            path = checkout / target
            original = path.read_bytes()
            comment = (
                b"\n# engram bench edit\n"
                if target.endswith(".py")
                else b"\n// engram bench edit\n"
            )
            for edit in range(args.edits):
                path.write_bytes(original + comment * (edit % 2 + 1))
                t0 = time.perf_counter()
                result = graph.reindex_file(target)
                edit_ms.append((time.perf_counter() - t0) * 1000)
                assert result.changed
            path.write_bytes(original)
            graph.reindex_file(target)

        analyzer = ImpactAnalyzer(graph)
        impact_files = [rng.choice(listed) for _ in range(args.impacts)] if listed else []
        impact_ms: list[float] = []
        for file in impact_files:
            t0 = time.perf_counter()
            analyzer.impact(file)
            impact_ms.append((time.perf_counter() - t0) * 1000)
        stats = graph.stats()
        graph.close()

    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    mb = 1024 * 1024
    result = {
        "benchmark": "index",
        "repo": args.repo.resolve().name,
        "files": len(listed),
        "bytes": code_bytes,
        "rows": {
            "engram": {
                "seconds": round(cold_seconds, 3),
                "mb_per_s": round(code_bytes / mb / cold_seconds, 6) if cold_seconds else None,
                "files_per_s": round(len(listed) / cold_seconds, 1) if cold_seconds else None,
            },
            "tree_sitter": {
                "seconds": round(bare_seconds, 3),
                "mb_per_s": round(bare_bytes / mb / bare_seconds, 6) if bare_seconds else None,
                "files_per_s": round(bare_files / bare_seconds, 1) if bare_seconds else None,
            },
        },
        "incremental_ms": {
            "file": target,
            "p50": round(percentile(edit_ms, 0.5), 2),
            "p95": round(percentile(edit_ms, 0.95), 2),
        },
        "impact_ms": {
            "p50": round(percentile(impact_ms, 0.5), 3),
            "p95": round(percentile(impact_ms, 0.95), 3),
        },
        "graph": stats,
        "index_notes": len(report.notes),
        "engram_files_seen": report.files_seen,  # also hashes docs/text files for code search
        "peak_rss_mb": round(peak_rss_mb, 1),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
