#!/usr/bin/env python3
"""CoSQA code search: MRR and nDCG@10 for Engram's hybrid search, BM25 alone and dense alone.

The corpus (``code_idx_map.txt``: code -> index) is written as one Python file per function
into a scratch workspace and goes through the product path: ``CodeGraph.index`` (tree-sitter
definitions) -> ``CodeSearch.index_chunks`` (AST chunks with contextual prefix, embedded with
the default model) -> ``CodeSearch.search`` in three modes, all in one run with default
settings. The scratch workspace persists (``--workdir``) so the embedding cache and chunk
store make reruns fast.

``--queries FILE`` runs any split (a JSON list in the format of
``cosqa-retrieval-dev-500.json``: ``doc`` and ``retrieval_idx`` are read); ``--folds N``
(default 5) cuts the queries into N contiguous folds and reports each row's mean and
standard deviation over them (``fold_mean`` / ``fold_sd``) next to the full figure.

Usage: scripts/eval/cosqa.py --data ../shared/data/cosqa-dev --json [--queries FILE]
           [--limit N] [--folds N]
Last stdout line: {"dataset": "cosqa-dev", "items": N,
                   "rows": {"engram": {...}, "bm25": {...}, "dense": {...}}}
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import sys
import tempfile
import time
from pathlib import Path

MODES = {"engram": "hybrid", "bm25": "bm25", "dense": "dense"}
RANK_DEPTH = 100  # MRR is computed over the top 100 (a miss beyond counts as 0)


def load(
    data: Path, limit: int | None, corpus_limit: int | None, queries_file: Path | None = None
) -> tuple[dict[int, str], list[dict]]:
    corpus_map = json.loads((data / "code_idx_map.txt").read_text(encoding="utf-8"))
    corpus = {int(idx): code for code, idx in corpus_map.items()}
    source = queries_file or data / "cosqa-retrieval-dev-500.json"
    queries = json.loads(source.read_text(encoding="utf-8"))
    if limit is not None:
        queries = queries[:limit]
    if corpus_limit is not None:
        keep = {int(q["retrieval_idx"]) for q in queries}
        for idx in sorted(corpus):
            if len(keep) >= corpus_limit:
                break
            keep.add(idx)
        corpus = {idx: corpus[idx] for idx in sorted(keep)}
    return corpus, queries


def fold_summary(per_query: dict[str, list[tuple[float, float]]], folds: int) -> dict:
    """Mean and standard deviation of MRR and nDCG@10 over contiguous folds of the queries."""
    import statistics

    mean: dict[str, dict[str, float]] = {}
    sd: dict[str, dict[str, float]] = {}
    for row, values in per_query.items():
        size = len(values)
        if folds < 2 or size < folds:
            continue
        bounds = [round(i * size / folds) for i in range(folds + 1)]
        parts = [values[bounds[i] : bounds[i + 1]] for i in range(folds)]
        mrr = [statistics.fmean(v[0] for v in part) for part in parts]
        ndcg = [statistics.fmean(v[1] for v in part) for part in parts]
        mean[row] = {
            "mrr": round(statistics.fmean(mrr), 4),
            "ndcg@10": round(statistics.fmean(ndcg), 4),
        }
        sd[row] = {
            "mrr": round(statistics.pstdev(mrr), 4),
            "ndcg@10": round(statistics.pstdev(ndcg), 4),
        }
    return {"folds": folds, "fold_mean": mean, "fold_sd": sd}


def build_workspace(root: Path, corpus: dict[int, str]) -> None:
    folder = root / "corpus"
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {f"c{idx:05}.py" for idx in corpus}
    for stale in folder.glob("*.py"):
        if stale.name not in wanted:
            stale.unlink()
    for idx, code in corpus.items():
        path = folder / f"c{idx:05}.py"
        text = code if code.endswith("\n") else code + "\n"
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


def _embedder(config: object, workspace: object) -> tuple[object | None, str]:
    try:
        from engram.embed import load_embedder
    except ImportError as exc:
        return None, f"engram.embed unavailable ({exc})"
    status = load_embedder(config.embed, workspace)  # type: ignore[attr-defined]
    return status.embedder, status.reason


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--json", action="store_true", help="print the JSON result line")
    parser.add_argument("--limit", type=int, default=None, help="first N queries only")
    parser.add_argument(
        "--corpus-limit",
        type=int,
        default=None,
        help="keep the answers plus distractors up to this many functions",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="scratch workspace (default: a stable folder in the temp dir)",
    )
    parser.add_argument("--queries", type=Path, default=None, help="a query file to run instead")
    parser.add_argument("--folds", type=int, default=5, help="contiguous folds for mean ± sd")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    from engram.codegraph import CodeGraph, CodeSearch
    from engram.config import load_config
    from engram.workspace import Workspace

    corpus, queries = load(args.data, args.limit, args.corpus_limit, args.queries)
    if args.workdir is None:
        key = hashlib.sha1(
            f"{args.data.resolve()}:{sorted(corpus)[:3]}:{len(corpus)}".encode()
        ).hexdigest()[:10]
        args.workdir = Path(tempfile.gettempdir()) / f"engram-cosqa-{key}"
    args.workdir.mkdir(parents=True, exist_ok=True)
    build_workspace(args.workdir, corpus)
    workspace = Workspace.open(args.workdir)
    config = load_config(workspace)

    embedder, reason = _embedder(config, workspace)
    if embedder is None:
        print(f"no embedder: {reason}; dense rows skipped", file=sys.stderr)

    started = time.perf_counter()
    graph = CodeGraph(workspace, config)
    graph.index()
    search = CodeSearch(workspace, graph, embedder)
    chunk_report = search.index_chunks()
    index_seconds = time.perf_counter() - started
    print(
        f"indexed {len(corpus)} functions in {index_seconds:.1f}s "
        f"({chunk_report.embedded} newly embedded)",
        file=sys.stderr,
    )

    modes = {row: mode for row, mode in MODES.items() if embedder is not None or mode == "bm25"}
    totals = {row: {"mrr": 0.0, "ndcg@10": 0.0, "recall@10": 0.0} for row in modes}
    per_query: dict[str, list[tuple[float, float]]] = {row: [] for row in modes}
    latencies: dict[str, list[float]] = {row: [] for row in modes}
    for query in queries:
        answer = f"corpus/c{int(query['retrieval_idx']):05}.py"
        for row, mode in modes.items():
            t0 = time.perf_counter()
            hits = search.search(query["doc"], k=RANK_DEPTH, mode=mode)
            latencies[row].append(time.perf_counter() - t0)
            ranked = list(dict.fromkeys(hit.file for hit in hits))
            rr = ndcg = 0.0
            if answer in ranked:
                rank = ranked.index(answer) + 1
                rr = 1.0 / rank
                totals[row]["mrr"] += rr
                if rank <= 10:
                    ndcg = 1.0 / math.log2(rank + 1)
                    totals[row]["ndcg@10"] += ndcg
                    totals[row]["recall@10"] += 1.0
            per_query[row].append((rr, ndcg))
    count = max(1, len(queries))
    rows = {}
    for row in modes:
        ordered = sorted(latencies[row])
        rows[row] = {name: round(value / count, 4) for name, value in totals[row].items()}
        rows[row]["p50_ms"] = round(1000 * ordered[len(ordered) // 2], 2) if ordered else 0.0
    result = {
        "dataset": args.data.resolve().name,
        "items": len(queries),
        "corpus": len(corpus),
        "embedder": getattr(embedder, "model_id", None),
        "rows": rows,
        **fold_summary(per_query, args.folds),
    }
    graph.close()
    search.close()
    for row, metrics in rows.items():
        print(
            f"{row:7s} mrr={metrics['mrr']:.4f} ndcg@10={metrics['ndcg@10']:.4f}", file=sys.stderr
        )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
