#!/usr/bin/env python3
"""Does a third ranked list lift Engram's CoSQA fusion? Weights by cross-validation.

Issue 17's lever "a code-aware embedding model and/or a small cross-encoder" could only be
tried with what installs offline (docs/codegraph.md lists the packages checked). This lab
scores each query three ways over the chunks ``scripts/eval/cosqa.py`` indexes: keyword
(BM25), dense (the configured model) and an *extra* list, then mixes the z-scores over the
union of each list's top 100 as ``engram.codegraph.search.fuse_scores`` does for two. The
extra list is either

* ``--onnx FILE --tokenizer FILE``: another embedding model run with onnxruntime from a
  local file (``--output`` names the graph output, ``--pooling mean|cls|none``; a graph
  that takes strings and tokenizes inside, with onnxruntime-extensions' custom ops, needs
  no ``--tokenizer``), or
* ``--view docstring``: the configured model on a second text per chunk (the split
  definition name and its docstring).

Weights (dense, extra; keyword gets the rest) come from a 0.1 grid: for each of ``--folds``
contiguous folds of the queries, the weights best on the other folds are scored on it
(held-out fold mean ± sd), next to today's fusion (dense 0.8, keyword 0.2) on the same folds.

Usage: scripts/eval/cosqa_lab.py --data ../shared/data/cosqa-dev
           (--onnx F [--tokenizer F] [--output NAME] [--pooling P] [--max-len N] | --view docstring)
           [--queries FILE] [--folds N] [--workdir DIR]
Last stdout line: {"dataset": ..., "items": N, "baseline": {...}, "cv": {...}, ...}
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.util
import json
import logging
import math
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

HERE = Path(__file__).resolve().parent
TAKE = 100
GRID = [round(0.1 * i, 1) for i in range(11)]
Vector = npt.NDArray[np.float32]


def _cosqa() -> Any:
    spec = importlib.util.spec_from_file_location("cosqa_eval", HERE / "cosqa.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def standardise(values: Vector) -> Vector:
    spread = float(values.std())
    if spread < 1e-9:
        return np.zeros_like(values)
    return ((values - values.mean()) / spread).astype(np.float32)


def fuse(lists: Sequence[Vector], weights: Sequence[float]) -> Vector:
    size = lists[0].shape[0]
    take = min(TAKE, size)
    pool = np.unique(np.concatenate([np.argpartition(-x, take - 1)[:take] for x in lists]))
    mixed = np.zeros(len(pool), dtype=np.float32)
    for values, weight in zip(lists, weights, strict=True):
        if weight:
            mixed += weight * standardise(values[pool])
    out = np.full(size, -np.inf, dtype=np.float32)
    out[pool] = mixed
    return out


def ndcg_at_10(scores: Vector, files: Sequence[str], answer: str) -> float:
    ranked = list(dict.fromkeys(files[i] for i in np.argsort(-scores, kind="stable")[:TAKE]))
    if answer in ranked[:10]:
        return 1.0 / math.log2(ranked.index(answer) + 2)
    return 0.0


class OnnxEmbedder:
    """A local ONNX sentence encoder through onnxruntime (lab only: no sha pin, no cache)."""

    def __init__(
        self, onnx: Path, tokenizer: Path | None, output: str, pooling: str, max_len: int
    ) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        try:  # graphs that tokenize inside (string input) need the extensions' custom ops
            from onnxruntime_extensions import get_library_path

            options.register_custom_ops_library(get_library_path())
        except ImportError:
            pass
        self.session = onnxruntime.InferenceSession(
            str(onnx), options, providers=["CPUExecutionProvider"]
        )
        first = self.session.get_inputs()[0]
        self.string_input = first.name if first.type == "tensor(string)" else None
        self.tokenizer = None
        if self.string_input is None:
            if tokenizer is None:
                raise ValueError(f"{onnx.name} takes token ids: give --tokenizer")
            from tokenizers import Tokenizer

            self.tokenizer = Tokenizer.from_file(str(tokenizer))
            self.tokenizer.enable_truncation(max_len)
            self.tokenizer.enable_padding()
        self.inputs = {i.name for i in self.session.get_inputs()}
        outputs = [o.name for o in self.session.get_outputs()]
        self.output = outputs.index(output) if output in outputs else 0
        self.pooling = pooling

    def embed(self, texts: Sequence[str], batch: int = 32) -> Vector:
        out = np.zeros((len(texts), 0), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), batch):
            rows = order[start : start + batch]
            if self.tokenizer is None:  # the graph takes the strings (pooled inside)
                feed_strings = {str(self.string_input): np.array([texts[i][:1024] for i in rows])}
                pooled = self.session.run(None, feed_strings)[self.output]
                vectors = np.asarray(pooled, dtype=np.float32)
                if out.shape[1] == 0:
                    out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
                out[rows] = vectors
                continue
            encoded = self.tokenizer.encode_batch([texts[i][:1024] for i in rows])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self.inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = np.asarray(self.session.run(None, feed)[self.output], dtype=np.float32)
            if self.pooling == "mean":
                weights = mask[..., None].astype(np.float32)
                vectors = (hidden * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)
            elif self.pooling == "cls":
                vectors = hidden[:, 0]
            else:
                vectors = hidden
            if out.shape[1] == 0:
                out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
            out[rows] = vectors
        norms = np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return (out / norms).astype(np.float32)


def docstring_view(name: str, content: str) -> str:
    from engram.codegraph.chunking import split_identifier

    words = " ".join(split_identifier(name.rsplit(".", 1)[-1])) if name else ""
    doc = ""
    try:
        for node in ast.walk(ast.parse(content)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                doc = ast.get_docstring(node) or ""
                break
    except (SyntaxError, ValueError):
        pass
    return f"{words}\n{doc}".strip() or content[:200]


@attrs.frozen
class Indexed:
    """The CoSQA corpus indexed as ``scripts/eval/cosqa.py`` indexes it, in (file, line) order."""

    cosqa: Any  # the cosqa.py module (its loaders and helpers)
    queries: list[dict[str, Any]]
    embedder: Any
    records: list[Any]  # the chunk records
    files: list[str]
    matrix: Vector
    bm25: Any  # engram.bm25.BM25Index over the same order
    graph: Any  # the CodeGraph and CodeSearch behind them, for close()
    search: Any

    def close(self) -> None:
        self.graph.close()
        self.search.close()


def embedded_text(record: Any) -> str:
    """The text the product embedded for a stored chunk (the table keeps no copy of it)."""
    from engram.codegraph.chunking import CodeChunk

    chunk = CodeChunk(record.file, record.kind, record.name, record.start_line,
                      record.end_line, record.content)  # fmt: skip
    return chunk.embedding_text()


def index_corpus(data: Path, query_file: Path | None, workdir: Path | None) -> Indexed | None:
    """Index the corpus into the scratch workspace ``cosqa.py`` uses (so vectors are reused)
    and read it back; None (after saying why on stderr) when no embedding model loads. Shared
    by this lab and ``cosqa_levers.py``."""
    from engram.codegraph import CodeGraph, CodeSearch
    from engram.config import load_config
    from engram.workspace import Workspace

    cosqa = _cosqa()
    corpus, queries = cosqa.load(data, None, None, query_file)
    if workdir is None:  # the same scratch workspace cosqa.py uses, so vectors are reused
        key = hashlib.sha1(
            f"{data.resolve()}:{sorted(corpus)[:3]}:{len(corpus)}".encode()
        ).hexdigest()[:10]
        workdir = Path(tempfile.gettempdir()) / f"engram-cosqa-{key}"
    workdir.mkdir(parents=True, exist_ok=True)
    cosqa.build_workspace(workdir, corpus)
    workspace = Workspace.open(workdir)
    config = load_config(workspace)
    embedder, reason = cosqa._embedder(config, workspace)
    if embedder is None:
        print(f"no embedder: {reason}", file=sys.stderr)
        return None
    graph = CodeGraph(workspace, config)
    graph.index()
    search = CodeSearch(workspace, graph, embedder)
    search.index_chunks()
    records = sorted(search._chunks().all_chunks(), key=lambda r: (r.file, r.start_line))
    files = [r.file for r in records]
    matrix = search._chunks().vectors_for([r.id for r in records])
    bm25 = search._load().bm25  # built over the same (file, start_line) order
    return Indexed(cosqa, queries, embedder, records, files, matrix, bm25, graph, search)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--queries", type=Path, default=None)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--onnx", type=Path, default=None)
    parser.add_argument("--tokenizer", type=Path, default=None)
    parser.add_argument("--output", default="last_hidden_state")
    parser.add_argument("--pooling", choices=["mean", "cls", "none"], default="mean")
    parser.add_argument("--max-len", type=int, default=256)
    parser.add_argument("--view", choices=["docstring"], default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if (args.onnx is None) == (args.view is None):
        parser.error("give exactly one extra list: --onnx (with --tokenizer) or --view")

    from engram.codegraph.search import tokenize

    indexed = index_corpus(args.data, args.queries, args.workdir)
    if indexed is None:
        return 2
    queries, embedder = indexed.queries, indexed.embedder
    records, files, matrix, bm25 = indexed.records, indexed.files, indexed.matrix, indexed.bm25

    cost: dict[str, float] = {}
    started = time.perf_counter()
    if args.onnx is not None:
        try:
            model = OnnxEmbedder(args.onnx, args.tokenizer, args.output, args.pooling, args.max_len)
        except ValueError as exc:
            parser.error(str(exc))
        extra = model.embed([embedded_text(r) for r in records])
        cost["extra_index_texts_per_s"] = round(len(records) / (time.perf_counter() - started), 1)
        times = []
        query_vectors = []
        for query in queries:
            t0 = time.perf_counter()
            query_vectors.append(model.embed([query["doc"]])[0])
            times.append(time.perf_counter() - t0)
        extra_queries = np.vstack(query_vectors)
        cost["extra_query_p95_ms"] = round(1000 * sorted(times)[int(0.95 * (len(times) - 1))], 2)
    else:
        extra = embedder.embed([docstring_view(r.name, r.content) for r in records])
        cost["extra_index_texts_per_s"] = round(len(records) / (time.perf_counter() - started), 1)
        extra_queries = embedder.embed([q["doc"] for q in queries])
    dense_queries = embedder.embed([q["doc"] for q in queries])

    lists = []
    for i, query in enumerate(queries):
        keyword = bm25.scores(tokenize(query["doc"]))
        lists.append(
            (
                keyword,
                matrix @ dense_queries[i],
                extra @ extra_queries[i],
                f"corpus/c{int(query['retrieval_idx']):05}.py",
            )
        )
    grid = [(d, e) for d in GRID for e in GRID if d + e <= 1.0 + 1e-9]
    size = len(lists)
    folds = max(1, min(args.folds, size))
    bounds = [round(i * size / folds) for i in range(folds + 1)]
    parts = [range(bounds[i], bounds[i + 1]) for i in range(folds)]

    def score(weights: tuple[float, float], part: range) -> float:
        dense_w, extra_w = weights
        values = [
            ndcg_at_10(fuse((k, d, x), (1.0 - dense_w - extra_w, dense_w, extra_w)), files, a)
            for k, d, x, a in (lists[i] for i in part)
        ]
        return statistics.fmean(values) if values else 0.0

    table = {(w, f): score(w, part) for w in grid for f, part in enumerate(parts)}
    held, chosen = [], []
    for f in range(folds):
        others = [g for g in range(folds) if g != f] or [f]
        best = max(grid, key=lambda w: statistics.fmean(table[(w, g)] for g in others))
        chosen.append(list(best))
        held.append(table[(best, f)])
    baseline = [table[((0.8, 0.0), f)] for f in range(folds)]
    extra_alone = [table[((0.0, 1.0), f)] for f in range(folds)]
    result = {
        "dataset": args.data.resolve().name,
        "items": size,
        "chunks": len(records),
        "extra": str(args.onnx.name) if args.onnx is not None else f"view:{args.view}",
        "folds": folds,
        "baseline": {
            "ndcg@10_fold_mean": round(statistics.fmean(baseline), 4),
            "ndcg@10_fold_sd": round(statistics.pstdev(baseline), 4),
        },
        "extra_alone": {"ndcg@10_fold_mean": round(statistics.fmean(extra_alone), 4)},
        "cv": {
            "ndcg@10_fold_mean": round(statistics.fmean(held), 4),
            "ndcg@10_fold_sd": round(statistics.pstdev(held), 4),
            "weights_dense_extra": chosen,
        },
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        **cost,
    }
    indexed.close()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
