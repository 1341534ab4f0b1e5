#!/usr/bin/env python3
"""Do general levers (no new model) lift Engram's CoSQA fusion? Each chosen by cross-validation.

Issue 17 asks for CoSQA nDCG@10 >= 0.65 and 0.03 above the dense row, and no code-aware model
installs offline (docs/codegraph.md lists the packages checked). This lab measures levers that
need no new model over the chunks ``scripts/eval/cosqa.py`` indexes (same scratch workspace,
so its vectors are reused). Part one, a grid:

* query rewriting (``rewrite_query``): the query as typed, without programming-language names
  (``python``, ``in java``, ...), or without those and a leading question phrase (``how to``,
  ``how do i``, ...), chosen separately for the dense and the keyword path;
* Rocchio pseudo-relevance feedback on the dense path (the query vector moved halfway towards
  the mean of its top 3 chunks);
* a third ranked list: BM25 over the definition's split name and docstring only;
* the fusion weights (dense, keyword; name+docstring gets the rest) on a 0.1 grid.

Part two, a learned linear fusion: over the product's candidate pool (the union of the dense
and the BM25 top 100), a linear score of simple features (z-scored dense and BM25 scores, BM25
of the rewritten query, name+docstring BM25, query words in the definition name, docstring
present, chunk length, reciprocal ranks, the dense gap to the top, BM25 over its maximum),
trained with a listwise softmax loss (the answer against its pool) by gradient descent.

Either part: for each of ``--folds`` contiguous folds of the queries, what is best (part one)
or trained (part two) on the other folds is scored on it: held-out nDCG@10 fold mean ± sd,
next to today's fusion (dense 0.8 / keyword 0.2 on the query as typed) on the same folds.

Usage: scripts/eval/cosqa_levers.py --data ../shared/data/cosqa-dev
           [--queries FILE] [--folds N] [--workdir DIR]
Last stdout line: {"dataset": ..., "items": N, "baseline": {...}, "grid": {...},
                   "learned": {...}, "single": {...}}
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import logging
import math
import re
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

HERE = Path(__file__).resolve().parent
GRID = [round(0.1 * i, 1) for i in range(11)]
POOL = 100  # engram.codegraph.search.CANDIDATES
Vector = npt.NDArray[np.float32]
Matrix = npt.NDArray[np.float64]

LANGUAGES = [
    "python", "python2", "python3", "py", "java", "javascript", "js", "node", "nodejs",
    "typescript", "ts", "golang", "rust", "ruby", "php", "kotlin", "scala", "csharp", "c#",
    "c++", "cpp", "swift", "perl", "haskell", "lua",
]  # fmt: skip
_LANGUAGE_RE = re.compile(
    r"(?:\b(?:in|with|using|for|via)\s+)?(?<![\w#+])(?:"
    + "|".join(re.escape(n) for n in sorted(LANGUAGES, key=len, reverse=True))
    + r")(?:\s*v?[23](?:\.\d+)?x?)?(?![\w#+])",
    re.IGNORECASE,
)
_QUESTION_RE = re.compile(
    r"^\s*(?:how\s+(?:do|can|would|should)\s+(?:i|you|we|one)\s+(?:to\s+)?|how\s+to\s+|"
    r"what\s+(?:is|are)\s+(?:the\s+)?|is\s+there\s+(?:a\s+)?way\s+to\s+|"
    r"(?:the\s+)?(?:best|easiest|fastest)\s+way\s+to\s+)",
    re.IGNORECASE,
)


def rewrite_query(query: str, question: bool = True) -> str:
    """``how do i cut off leading zeroes in python`` -> ``cut off leading zeroes``.

    Drops programming-language names (with an ``in``/``using`` before and a version after
    them) and, with ``question``, a leading question phrase; a query with nothing else stays.
    """
    text = _LANGUAGE_RE.sub(" ", query)
    if question:
        text = _QUESTION_RE.sub("", text)
    return " ".join(text.split()) or query


def _load_script(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prf(
    matrix: Vector, query: Vector, scores: Vector, depth: int = 3, alpha: float = 0.5
) -> Vector:
    """Rocchio pseudo-relevance feedback: move the query towards its top ``depth`` chunks."""
    depth = min(depth, len(scores))
    top = np.argpartition(-scores, depth - 1)[:depth]
    moved = query + alpha * matrix[top].mean(axis=0)
    moved /= max(float(np.linalg.norm(moved)), 1e-12)
    return (matrix @ moved).astype(np.float32)


def _z(values: npt.NDArray[Any]) -> Matrix:
    values = values.astype(np.float64)
    spread = float(values.std())
    return (values - values.mean()) / spread if spread > 1e-9 else np.zeros_like(values)


def _ranks(values: Vector) -> Matrix:
    out = np.empty(len(values), dtype=np.float64)
    out[np.argsort(-values, kind="stable")] = np.arange(len(values))
    return out


def pool_features(
    dense: Vector,
    keyword: Vector,
    keyword_rewritten: Vector,
    namedoc: Vector,
    in_name: Vector,
    has_doc: Vector,
    length: Vector,
) -> tuple[npt.NDArray[np.int64], Matrix]:
    """The product's candidate pool and one feature row per candidate (column 0 dense z,
    column 1 keyword z, so today's fusion is ``0.8 * F[:, 0] + 0.2 * F[:, 1]``)."""
    take = min(POOL, len(dense))
    pool = np.union1d(
        np.argpartition(-dense, take - 1)[:take], np.argpartition(-keyword, take - 1)[:take]
    )
    d, k = dense[pool], keyword[pool]
    columns = [
        _z(d),
        _z(k),
        _z(keyword_rewritten[pool]),
        _z(namedoc[pool]),
        in_name[pool].astype(np.float64),
        has_doc[pool].astype(np.float64),
        _z(length[pool]),
        1.0 / (_ranks(d) + 1.0),
        1.0 / (_ranks(k) + 1.0),
        (d - d.max()).astype(np.float64),
        (k / max(float(k.max()), 1e-9)).astype(np.float64),
    ]
    return pool, np.stack(columns, axis=1)


def train_listwise(
    items: Sequence[tuple[Matrix, int]], steps: int = 300, rate: float = 0.5, l2: float = 1e-3
) -> Matrix:
    """Weights maximising the softmax probability of the answer within its pool."""
    width = items[0][0].shape[1]
    weights = np.zeros(width)
    weights[:2] = (0.8, 0.2)  # start from today's fusion
    usable = [(f, p) for f, p in items if p >= 0]
    for _ in range(steps):
        grad = np.zeros(width)
        for features, positive in usable:
            scores = features @ weights
            prob = np.exp(scores - scores.max())
            prob /= prob.sum()
            grad += features.T @ prob - features[positive]
        weights -= rate * (grad / max(len(usable), 1) + l2 * weights)
    return weights


def ndcg_in_pool(scores: Matrix, pool: npt.NDArray[np.int64], answer: int) -> float:
    top = pool[np.argsort(-scores, kind="stable")[:10]]
    hit = np.flatnonzero(top == answer)
    return 1.0 / math.log2(int(hit[0]) + 2) if len(hit) else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--queries", type=Path, default=None)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    from engram.bm25 import BM25Index
    from engram.codegraph.chunking import split_identifier
    from engram.codegraph.search import tokenize

    lab = _load_script("cosqa_lab")
    indexed = lab.index_corpus(args.data, args.queries, args.workdir)
    if indexed is None:
        return 2
    queries, embedder = indexed.queries, indexed.embedder
    records, files, matrix, bm25 = indexed.records, indexed.files, indexed.matrix, indexed.bm25
    namedoc = BM25Index([tokenize(lab.docstring_view(r.name, r.content)) for r in records])

    rewrites: dict[str, Callable[[str], str]] = {
        "typed": lambda q: q,
        "no_language": lambda q: rewrite_query(q, question=False),
        "no_language_question": lambda q: rewrite_query(q, question=True),
    }
    texts = [q["doc"] for q in queries]
    dense: dict[str, list[Vector]] = {}
    keyword: dict[str, list[Vector]] = {}
    doc: dict[str, list[Vector]] = {}
    for name, rewrite in rewrites.items():
        rewritten = [rewrite(t) for t in texts]
        vectors = embedder.embed(rewritten)
        dense[name] = [matrix @ v for v in vectors]
        dense[f"{name}+prf"] = [
            prf(matrix, v, s) for v, s in zip(vectors, dense[name], strict=True)
        ]
        keyword[name] = [bm25.scores(tokenize(t)) for t in rewritten]
        doc[name] = [namedoc.scores(tokenize(t)) for t in rewritten]
    answers = [f"corpus/c{int(q['retrieval_idx']):05}.py" for q in queries]

    size = len(queries)
    folds = max(1, min(args.folds, size))
    bounds = [round(i * size / folds) for i in range(folds + 1)]
    parts = [range(bounds[i], bounds[i + 1]) for i in range(folds)]

    def fold_mean(values: Sequence[float], part: range) -> float:
        return statistics.fmean(values[i] for i in part) if len(part) else 0.0

    def summary(values: Sequence[float]) -> dict[str, float]:
        means = [fold_mean(values, p) for p in parts]
        return {
            "ndcg@10": round(statistics.fmean(values), 4) if values else 0.0,
            "fold_mean": round(statistics.fmean(means), 4),
            "fold_sd": round(statistics.pstdev(means), 4),
        }

    # part one: the grid
    weights = [(d, k) for d in GRID for k in GRID if d + k <= 1.0 + 1e-9]
    base = ("typed", "typed", (0.8, 0.2))
    configs = [base] + [  # ties go to today's fusion
        (dr, kr, w)
        for dr, kr in itertools.product(dense, rewrites)
        for w in weights
        if (dr.startswith(kr) or dr.startswith("typed") or kr == "typed") and (dr, kr, w) != base
    ]

    def per_query(config: tuple[str, str, tuple[float, float]]) -> list[float]:
        dr, kr, (dw, kw) = config
        out = []
        for i in range(size):
            lists = (dense[dr][i], keyword[kr][i], doc[kr][i])
            mixed = lab.fuse(lists, (dw, kw, round(1.0 - dw - kw, 1)))
            out.append(lab.ndcg_at_10(mixed, files, answers[i]))
        return out

    scored = {c: per_query(c) for c in configs}
    held, chosen = [], []
    for f in range(folds):
        others = [g for g in range(folds) if g != f] or [f]
        best = max(
            configs, key=lambda c: statistics.fmean(fold_mean(scored[c], parts[g]) for g in others)
        )
        chosen.append([best[0], best[1], list(best[2])])
        held.append(fold_mean(scored[best], parts[f]))

    # part two: the learned linear fusion over the product's pool
    index = {file: i for i, file in enumerate(files)}
    in_name_sets = [
        set(tokenize(" ".join(split_identifier((r.name or "").rsplit(".", 1)[-1]))))
        for r in records
    ]
    has_doc = np.array(['"""' in r.content or "'''" in r.content for r in records])
    length = np.array([math.log1p(len(r.content)) for r in records], dtype=np.float32)
    items = []
    for i, text in enumerate(texts):
        words = set(tokenize(rewrite_query(text)))
        in_name = np.array(
            [len(words & s) / len(words) if words else 0.0 for s in in_name_sets], np.float32
        )
        pool, features = pool_features(
            dense["typed"][i],
            keyword["typed"][i],
            keyword["no_language"][i],
            doc["no_language_question"][i],
            in_name,
            has_doc.astype(np.float32),
            length,
        )
        answer = index.get(answers[i], -1)
        where = np.flatnonzero(pool == answer)
        items.append((pool, features, answer, int(where[0]) if len(where) else -1))
    learned_held, today_held, learned_weights = [], [], []
    for f in range(folds):
        train = [(it[1], it[3]) for i, it in enumerate(items) if i not in parts[f]] or [
            (it[1], it[3]) for it in items
        ]
        w = train_listwise(train)
        learned_weights.append([round(float(x), 3) for x in w])
        learned_held.append(
            fold_mean([ndcg_in_pool(it[1] @ w, it[0], it[2]) for it in items], parts[f])
        )
        today = [ndcg_in_pool(0.8 * it[1][:, 0] + 0.2 * it[1][:, 1], it[0], it[2]) for it in items]
        today_held.append(fold_mean(today, parts[f]))

    single = {
        f"{dr}/{kr}/{w[0]}-{w[1]}": summary(scored[(dr, kr, w)])
        for dr, kr, w in configs
        if w in {(0.8, 0.2), (1.0, 0.0), (0.0, 1.0), (0.0, 0.0), (0.7, 0.2), (0.7, 0.3)}
    }
    result = {
        "dataset": args.data.resolve().name,
        "items": size,
        "chunks": len(records),
        "folds": folds,
        "baseline": summary(scored[base]),
        "grid": {
            "ndcg@10_fold_mean": round(statistics.fmean(held), 4),
            "ndcg@10_fold_sd": round(statistics.pstdev(held), 4),
            "chosen_dense_keyword_rewrite_weights": chosen,
        },
        "learned": {
            "ndcg@10_fold_mean": round(statistics.fmean(learned_held), 4),
            "ndcg@10_fold_sd": round(statistics.pstdev(learned_held), 4),
            "today_same_pool_fold_mean": round(statistics.fmean(today_held), 4),
            "today_same_pool_fold_sd": round(statistics.pstdev(today_held), 4),
            "weights": learned_weights,
        },
        "single": single,
    }
    indexed.close()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
