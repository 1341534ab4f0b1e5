#!/usr/bin/env python3
"""Fit the learned re-ranker of memory search and measure it by cross-validation.

Every conversation of a LoCoMo-format folder is indexed once, exactly as
``scripts/eval/locomo.py`` does (the product path, default model and settings). For each
question the unchanged pipeline runs with the re-ranker off, and the finalised top 30 (the
window the re-ranker sees) is kept with its feature vectors
(``engram.retrieval.rerank.candidate_features``) and which results hold an evidence turn.

Then, leave one conversation out: for each held-out conversation the regularisation is
picked by an inner leave-one-out over the other conversations, the model is fitted on them
(pairwise logistic loss, Newton's method), and recall@10 of the re-ordered window on the
held-out conversation is reported next to the pipeline's own order. ``--write`` then fits
on every conversation with the regularisation they pick together and writes
``server/engram/retrieval/rerank_weights.py``.

Usage: scripts/eval/rerank_fit.py --data ../shared/data/locomo-dev [--features a,b,...]
           [--dump FILE] [--write] [--json]
Last stdout line: {"folds": {...}, "baseline": {...}, "reranked": {...}, "chosen": {...}}
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
WEIGHTS_FILE = ROOT / "server" / "engram" / "retrieval" / "rerank_weights.py"
K = 10
LAMBDAS = (1e-4, 1e-3, 1e-2, 1e-1)

log = logging.getLogger("rerank_fit")

Question = dict[str, Any]  # {"conv", "x" (n x F), "y" (n,), "base_hit"}


def collect(data: Path, cache: Path | None, limit_questions: int | None) -> list[Question]:
    """The finalised window, features and labels of every question (see the docstring)."""
    sys.path.insert(0, str(HERE))
    import locomo  # the same indexing as the evaluation

    from engram.app import Engine
    from engram.app.remember import remember_many
    from engram.config import EngramConfig
    from engram.retrieval import SearchRequest
    from engram.workspace import Workspace

    embedder = locomo.load_embedder("default", cache)
    out: list[Question] = []
    for path in sorted(data.glob("*.json")):
        conv = json.loads(path.read_text(encoding="utf-8"))
        turns = locomo.conversation_turns(conv)
        known = {t["dia_id"] for t in turns}
        questions = []
        for qa in conv.get("qa", []):
            evidence = set(locomo.evidence_ids(qa.get("evidence"))) & known
            if evidence and str(qa.get("question", "")).strip():
                questions.append((str(qa["question"]).strip(), evidence))
        questions = questions[:limit_questions] if limit_questions else questions
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix=f"rerank-{path.stem}-") as tmp:
            config = EngramConfig()
            if embedder is None:
                config.embed.model = "none"
            engine = Engine(Workspace.open(tmp), config, embedder=embedder)
            try:
                results = remember_many(engine, locomo.turn_memories(path.stem, turns))
                memory_turns: dict[str, set[str]] = {}
                for turn, result in zip(turns, results, strict=True):
                    memory_turns.setdefault(result.memory.id, set()).add(turn["dia_id"])
                if embedder is not None:
                    embedder.embed([q for q, _ in questions])
                retriever = engine.retriever
                for question, evidence in questions:
                    request = SearchRequest(query=question, k=K)
                    now = retriever._clock()
                    ranked, notes, ranks, scores = retriever._rank(question, request, now)
                    hits = retriever._finalise(ranked, request, now, ranks, notes)
                    candidates = retriever.rerank_candidates(question, hits)
                    y = np.array(
                        [bool(memory_turns.get(h.memory.id, set()) & evidence) for h in hits],
                        dtype=bool,
                    )
                    # the re-ranker's inputs, so features can be recomputed from a --dump
                    inputs = (question, candidates, scores, ranks)
                    out.append({"conv": path.stem, "inputs": inputs, "y": y})
            finally:
                engine.close()
        log.warning(
            "%s: %d questions in %.0fs", path.stem, len(questions), time.perf_counter() - started
        )
    return out


def pairs(
    questions: Sequence[Question], per_question: bool
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Differences (relevant - other) within each question's window, and their weights."""
    diffs: list[npt.NDArray[np.float64]] = []
    weights: list[npt.NDArray[np.float64]] = []
    for q in questions:
        y = q["y"]
        pos, neg = np.flatnonzero(y), np.flatnonzero(~y)
        if len(pos) == 0 or len(neg) == 0:
            continue
        d = (q["x"][pos][:, None, :] - q["x"][neg][None, :, :]).reshape(-1, q["x"].shape[1])
        diffs.append(d)
        w = 1.0 / len(d) if per_question else 1.0
        weights.append(np.full(len(d), w))
    if not diffs:
        raise SystemExit("rerank_fit: no question has both relevant and other results")
    return np.vstack(diffs), np.concatenate(weights)


def fit(
    questions: Sequence[Question], columns: list[int], lam: float, per_question: bool
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Pairwise logistic regression (no intercept), L2 ``lam``; returns mean, scale, w."""
    allx = np.vstack([q["x"][:, columns] for q in questions])
    mean = allx.mean(axis=0)
    scale = allx.std(axis=0)
    scale[scale < 1e-9] = 1.0
    d, sw = pairs(questions, per_question)
    z = d[:, columns] / scale  # the mean cancels in a difference
    sw = sw / sw.sum()
    w = np.zeros(len(columns))
    for _ in range(50):
        m = z @ w
        p = 1.0 / (1.0 + np.exp(m))  # sigmoid(-margin)
        grad = -(z * (sw * p)[:, None]).sum(axis=0) + lam * w
        hess = (z * (sw * p * (1 - p))[:, None]).T @ z + lam * np.eye(len(columns))
        step = np.linalg.solve(hess, grad)
        w = w - step
        if np.abs(step).max() < 1e-8:
            break
    return mean, scale, w


def hits(
    questions: Sequence[Question],
    model: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]] | None,
    columns: list[int],
) -> list[bool]:
    """Per question, whether an evidence turn is in the top 10 of the window in the
    pipeline's order (model None) or re-ordered by the model."""
    out = []
    for q in questions:
        y = q["y"]
        if model is None:
            top = y[:K]
        else:
            mean, scale, w = model
            s = ((q["x"][:, columns] - mean) / scale) @ w
            order = sorted(range(len(y)), key=lambda i: -s[i])
            top = y[order[:K]]
        out.append(bool(top.any()))
    return out


def recall(
    questions: Sequence[Question],
    model: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]] | None,
    columns: list[int],
) -> float:
    """Recall@10 (see :func:`hits`)."""
    found = hits(questions, model, columns)
    return sum(found) / len(found) if found else 0.0


def choose(
    questions: Sequence[Question], columns: list[int], grid: Sequence[tuple[float, bool]]
) -> tuple[float, bool]:
    """The setting with the best mean leave-one-conversation-out recall@10 on ``questions``."""
    convs = sorted({q["conv"] for q in questions})
    best: tuple[float, tuple[float, bool]] | None = None
    for lam, per_q in grid:
        values = []
        for held in convs:
            train = [q for q in questions if q["conv"] != held]
            test = [q for q in questions if q["conv"] == held]
            values.append(recall(test, fit(train, columns, lam, per_q), columns))
        score = statistics.fmean(values)
        if best is None or score > best[0] + 1e-12:
            best = (score, (lam, per_q))
    assert best is not None
    return best[1]


def write_weights(
    target: Path,
    names: Sequence[str],
    model: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]],
    setting: tuple[float, bool],
    note: str,
) -> None:
    mean, scale, w = model
    from engram.retrieval import rerank_weights as current

    version = int(current.VERSION) + 1

    def block(name: str, kind: str, values: Sequence[str]) -> str:
        inner = "".join(f"    {v},\n" for v in values)
        return f"{name}: tuple[{kind}, ...] = (\n{inner})\n"

    def numbers(values: npt.NDArray[np.float64]) -> list[str]:
        return [f"{float(v):.6g}" for v in values]

    lines = "\n".join(textwrap.wrap(note, 96))
    text = (
        '"""Weights of the learned re-ranker (:mod:`engram.retrieval.rerank`).\n\n'
        "Generated by ``scripts/eval/rerank_fit.py --write``; do not edit by hand.\n"
        f"{lines}\n"
        f"Regularisation {setting[0]:g}, pairs weighted "
        f"{'per question' if setting[1] else 'equally'}.\n"
        '"""\n\n'
        f"VERSION = {version}\n"
        + block("FEATURES", "str", [f'"{n}"' for n in names])
        + block("MEAN", "float", numbers(mean))
        + block("SCALE", "float", numbers(scale))
        + block("WEIGHTS", "float", numbers(w))
    )
    target.write_text(text, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    from engram.retrieval.rerank import FEATURES

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="folder of LoCoMo *.json")
    parser.add_argument("--features", default=",".join(FEATURES), help="comma-separated subset")
    parser.add_argument("--dump", type=Path, default=None, help="cache of the collected windows")
    parser.add_argument("--cache", type=Path, default=None, help="embedding cache file")
    parser.add_argument("--limit-questions", type=int, default=None, help="per conversation")
    parser.add_argument("--write", action="store_true", help="write the fitted weights")
    parser.add_argument(
        "--weights-file", type=Path, default=WEIGHTS_FILE, help="where --write writes them"
    )
    parser.add_argument(
        "--lambdas", default=",".join(f"{v:g}" for v in LAMBDAS), help="regularisation grid"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    if args.dump is not None and args.dump.exists():
        import pickle

        questions: list[Question] = pickle.loads(args.dump.read_bytes())
    else:
        questions = collect(args.data, args.cache, args.limit_questions)
        if args.dump is not None:
            import pickle

            args.dump.write_bytes(pickle.dumps([{**q, "x": None} for q in questions]))
    from engram.retrieval.rerank import candidate_features

    for q in questions:
        q["x"] = candidate_features(*q["inputs"])
    names = [n for n in args.features.split(",") if n]
    unknown = [n for n in names if n not in FEATURES]
    if unknown:
        raise SystemExit(f"rerank_fit: unknown features {unknown}")
    columns = [FEATURES.index(n) for n in names]
    lambdas = [float(v) for v in args.lambdas.split(",") if v]
    grid = [(lam, per_q) for lam in lambdas for per_q in (False, True)]
    convs = sorted({q["conv"] for q in questions})
    folds: dict[str, dict[str, Any]] = {}
    for held in convs:
        train = [q for q in questions if q["conv"] != held]
        test = [q for q in questions if q["conv"] == held]
        setting = choose(train, columns, grid) if len(convs) > 2 else grid[0]
        model = fit(train, columns, *setting)
        before, after = hits(test, None, columns), hits(test, model, columns)
        folds[held] = {
            "baseline": round(sum(before) / len(test), 4),
            "reranked": round(sum(after) / len(test), 4),
            # questions the re-ranker finds that the pipeline's order misses, and the reverse
            "gained": sum(a and not b for a, b in zip(after, before, strict=True)),
            "lost": sum(b and not a for a, b in zip(after, before, strict=True)),
            "setting": list(setting),
            "questions": len(test),
            "in_window": round(statistics.fmean(bool(q["y"].any()) for q in test), 4),
        }
        print(f"{held}: {folds[held]}", file=sys.stderr, flush=True)

    def summary(key: str) -> dict[str, float]:
        values = [f[key] for f in folds.values()]
        return {
            "fold_mean": round(statistics.fmean(values), 4),
            "fold_sd": round(statistics.pstdev(values), 4) if len(values) > 1 else 0.0,
        }

    chosen = choose(questions, columns, grid) if len(convs) > 2 else grid[0]
    full_model = fit(questions, columns, *chosen)
    result = {
        "questions": len(questions),
        "gained": sum(f["gained"] for f in folds.values()),
        "lost": sum(f["lost"] for f in folds.values()),
        "features": names,
        "folds": folds,
        "baseline": {**summary("baseline"), "all": round(recall(questions, None, columns), 4)},
        "reranked": summary("reranked"),
        "chosen": {
            "setting": list(chosen),
            "fitted_on_all": round(recall(questions, full_model, columns), 4),
            "weights": dict(zip(names, (round(float(v), 4) for v in full_model[2]), strict=True)),
        },
    }
    if args.write:
        write_weights(
            args.weights_file,
            names,
            full_model,
            chosen,
            f"Fitted on {len(questions)} questions of {len(convs)} conversations "
            f"({args.data.name}).",
        )
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
