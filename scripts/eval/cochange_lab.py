#!/usr/bin/env python3
"""Choose the co-change ranking's features by leave-one-repository-out cross-validation.

The same protocol as ``scripts/eval/cochange.py`` (train on the first 80 % of non-merge
commits, query every file of each later 2–30-file commit, the rest of its commit is the
truth), without the code graph, so that many feature sets can be compared in one run:
each repository's candidates and every feature of
``engram.history.cochange_model.ALL_FEATURES`` are computed once, then each configuration
(:class:`Config`: a feature set, an L2 penalty, time-split windows, and in round 2 boosted
stumps, rank fusion with ROSE or a fallback to ROSE) is fitted on that repository's own
self-training queries (commits before the split only) and scored on its test queries. ROSE (support
over the query's commits, the ``rose`` row of cochange.py) is scored on the same queries.

Selection: for each development repository held out, the configuration with the best mean
MAP ratio to ROSE on the *other* development repositories is chosen and its held-out ratio
reported (fold mean ± sd); the configuration best on all development repositories is then
scored once on the ``--test`` repositories, which take no part in any choice.

The configuration replaces the product default only when the folds' held-out mean beats
the default's mean ratio over the development repositories (``adopt``); otherwise the
selection found nothing that carries over and the default stays. Each test row carries
the default's figures next to the chosen configuration's.

The author features need each commit's author, which the product's mining does not keep:
:func:`prepare` reads them with one ``git log --format=%H %ae`` and fills
``CommitIndex.authors``; a query's author is its commit's.

Usage: scripts/eval/cochange_lab.py --dev /work/repos/flask /work/repos/click ...
           [--test /work/repos/fd ...] [--round 1|2] [--max-commits N] [--json]
Last stdout line: {"dataset": "cochange-lab", "chosen": {...}, "folds": [...],
                   "dev": {...}, "test": {...}}
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import pickle
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

log = logging.getLogger("cochange_lab")

#: The first learned feature set (before issue 17); the levers below are added to it.
BASE = (
    "plain_confidence",
    "short_confidence",
    "log_support",
    "reverse_confidence",
    "partner_rate",
    "structure",
    "no_history",
)
NEW = (
    "size_confidence",
    "own_recent_confidence",
    "last_together_age",
    "partner_age",
    "partner_recent_rate",
    "path_proximity",
    "name_match",
    "session_confidence",
)
AUTHOR = ("author_confidence", "author_recent_rate", "author_partner_share")
L2S = (1.0, 3.0)
#: How many consecutive time splits of the earlier history give labelled queries.
WINDOW_CHOICES = (1, 3)


def _eval_module() -> Any:
    path = Path(__file__).with_name("cochange.py")
    spec = importlib.util.spec_from_file_location("cochange_eval", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@attrs.define
class Query:
    features: npt.NDArray[np.float64]
    names: list[str]
    support: list[int]
    session_only: npt.NDArray[np.bool_]
    truth: set[str]
    rose: list[str]


@attrs.define
class Prepared:
    name: str
    #: (features, labels, session-only candidates, time-split window) per self-training query
    train: list[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.bool_], int]]
    queries: list[Query]
    seconds: dict[str, float]


def prepare(repo: Path, max_commits: int | None, max_files: int = 30) -> Prepared:
    """Candidates and all features of a repository's training and test queries."""
    from engram.history import GitHistory, HistoryConfig
    from engram.history.cochange_model import (
        ALL_FEATURES,
        candidate_features,
        history_stats,
        popular_files,
        training_queries,
    )
    from engram.workspace import Workspace

    ev = _eval_module()
    started = time.monotonic()
    commits = ev.load_commits(repo, "HEAD")
    split = max(1, int(len(commits) * 0.8))
    train, test = commits[:split], commits[split:]
    existing = ev.files_at(repo, train[-1].sha)
    test = [c for c in test if 2 <= len(c.paths) <= max_files]
    if max_commits is not None:
        test = test[:max_commits]
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="engram-lab-") as tmp:
        history = GitHistory(
            Workspace.open(repo),
            HistoryConfig(max_files_per_commit=max_files, auto_mine=False),
            db_path=Path(tmp) / "history.sqlite",
        )
        history.ingest(train)
        index = history.commit_index()
        assert index is not None
        conn = history._db()
        by_sha = authors_by_sha(repo)
        eligible = conn.execute(
            "SELECT DISTINCT c.id, c.sha FROM commit_files cf "
            "JOIN commits c ON c.id = cf.commit_id AND c.skipped=0 ORDER BY c.id"
        ).fetchall()
        assert len(eligible) == index.size
        index.authors = [by_sha.get(sha, "") for _, sha in eligible]
        seconds["load_s"] = time.monotonic() - started
        t0 = time.monotonic()
        groups = []
        for window in range(max(WINDOW_CHOICES)):
            cutoff, self_queries = training_queries(index, window=window)
            if not self_queries:
                break
            stats = history_stats(index, cutoff)
            popular = popular_files(stats.rates, set(stats.rates))
            pop = set(popular)
            for file, truth_ids, position in self_queries_at(index, cutoff, window):
                found = candidate_features(
                    index,
                    file,
                    before=cutoff,
                    popular=popular,
                    stats=stats,
                    features=ALL_FEATURES,
                    author=index.authors[position],
                )
                labels = np.asarray([float(f in truth_ids) for f in found.files])
                session_only = np.asarray(
                    [
                        s == 0 and f not in pop
                        for f, s in zip(found.files, found.support, strict=True)
                    ],
                    dtype=bool,
                )
                groups.append((found.features, labels, session_only, window))
        seconds["train_features_s"] = time.monotonic() - t0
        t0 = time.monotonic()
        stats = history_stats(index)
        popular = popular_files(stats.rates, index.alive)
        pop = set(popular)
        queries: list[Query] = []
        for commit in test:
            for path in commit.paths:
                if path not in existing:
                    continue
                truth = set(commit.paths) - {path}
                canon = history._canon_id(conn, path)
                found = candidate_features(
                    index,
                    canon if canon is not None else -1,
                    popular=popular,
                    stats=stats,
                    features=ALL_FEATURES,
                    author=by_sha.get(commit.sha, ""),
                )
                names = [index.names.get(f, "") for f in found.files]
                rose = sorted(
                    (
                        (s, n)
                        for n, s, f in zip(names, found.support, found.files, strict=True)
                        if s > 0 and f in index.alive
                    ),
                    key=lambda item: (-item[0], item[1]),
                )
                session_only = np.asarray(
                    [
                        s == 0 and f not in pop
                        for f, s in zip(found.files, found.support, strict=True)
                    ],
                    dtype=bool,
                )
                queries.append(
                    Query(
                        found.features,
                        names,
                        found.support,
                        session_only,
                        truth,
                        [n for _, n in rose[:10]],
                    )
                )
        seconds["test_features_s"] = time.monotonic() - t0
        history.close()
    return Prepared(repo.resolve().name, groups, queries, seconds)


def authors_by_sha(repo: Path) -> dict[str, str]:
    """Who made each commit (author e-mail), from one ``git log``."""
    out = _eval_module().git_bytes(repo, "log", "--no-merges", "--format=%H %ae", "HEAD")
    pairs = (line.split(" ", 1) for line in out.decode("utf-8", "replace").splitlines())
    return {p[0]: p[1].strip().lower() for p in pairs if len(p) == 2}


def self_queries_at(index: Any, cutoff: int, window: int) -> list[tuple[int, set[int], int]]:
    """``training_queries``' queries of one window with the position of their commit."""
    from engram.history.cochange_model import TRAIN_COMMITS

    held = min(TRAIN_COMMITS, index.size // 5)
    end = index.size - held * window
    out = []
    for position in range(cutoff, end):
        files = index.commits[position]
        if not 2 <= len(files) <= 30:
            continue
        for file in files:
            if any(p < cutoff for p in index.touching.get(file, ())):
                out.append((file, set(files) - {file}, position))
    return out


def cached(repo: Path, max_commits: int | None, cache: Path | None) -> Prepared:
    """:func:`prepare`, read from / written to ``cache`` when given (our own pickles only)."""
    if cache is None:
        return prepare(repo, max_commits)
    head = _eval_module().git_bytes(repo, "rev-parse", "HEAD").decode().strip()
    path = cache / f"{repo.resolve().name}-{head[:12]}-{max_commits}-v3.pickle"
    if path.exists():
        with path.open("rb") as handle:
            name, train, queries, seconds = pickle.load(handle)  # our own pickle (docstring)
        return Prepared(name, train, [Query(*q) for q in queries], seconds)
    data = prepare(repo, max_commits)
    cache.mkdir(parents=True, exist_ok=True)
    plain = (data.name, data.train, [attrs.astuple(q, recurse=False) for q in data.queries])
    with path.open("wb") as handle:
        pickle.dump((*plain, data.seconds), handle)
    return data


@attrs.frozen
class Config:
    """One compared configuration: a feature set, its L2 penalty, how many time-split
    windows train it, and the levers of the second round (docs/history.md): ``stumps``
    boosting rounds on top of the linear scores (0: linear only), ``fuse`` the weight of
    ROSE's rank in a reciprocal-rank fusion with the model's rank (0: the model alone),
    ``fallback``: rank by ROSE when the repository's own self-check (the model fitted on
    the second-newest window, scored on the newest) does not beat ROSE."""

    label: str
    features: tuple[str, ...]
    l2: float
    windows: int = 1
    stumps: int = 0
    fuse: float = 0.0
    fallback: bool = False


#: Boosted stumps: learning rate, leaf L2, the least hessian a leaf holds, bins per feature.
STUMP_RATE, STUMP_L2, STUMP_MIN_HESSIAN, STUMP_BINS = 0.1, 1.0, 1.0, 32
#: Reciprocal-rank fusion offset (Cormack et al. use 60 for long lists; ours have ~10 that count).
FUSE_OFFSET = 10.0


def _training_groups(
    data: Prepared, columns: list[int], keep_session: bool, windows: Sequence[int]
) -> list[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]]:
    groups = []
    for x, y, session_only, window in data.train:
        if window not in windows:
            continue
        mask = np.ones(len(y), dtype=bool) if keep_session else ~session_only
        xs, ys = x[mask][:, columns], y[mask]
        if 0 < ys.sum() < len(ys):
            groups.append((xs, ys))
    return groups


def _softmax_gradient(
    scores: npt.NDArray[np.float64],
    labels: npt.NDArray[np.float64],
    starts: npt.NDArray[np.intp],
    query: npt.NDArray[np.intp],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Gradient and diagonal hessian of the listwise loss ``fit_listwise`` minimises."""
    top = np.maximum.reduceat(scores, starts)
    e = np.exp(scores - top[query])
    p = e / np.add.reduceat(e, starts)[query]
    target = labels / np.add.reduceat(labels, starts)[query]
    return p - target, np.maximum(p * (1 - p), 1e-6)


Stump = tuple[int, float, float, float]  # feature, threshold, value below, value at/above


def _cuts(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Candidate thresholds: midpoints between a feature's distinct values when it has few
    (flags, counts), its quantiles otherwise."""
    distinct = np.unique(values)
    if len(distinct) <= STUMP_BINS + 1:
        return (distinct[:-1] + distinct[1:]) / 2
    return np.unique(np.quantile(values, np.linspace(0, 1, STUMP_BINS + 1)[1:-1]))


def fit_stumps(
    groups: Sequence[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]],
    base: Sequence[npt.NDArray[np.float64]],
    rounds: int,
) -> list[Stump]:
    """Gradient-boosted stumps on the listwise loss, starting from the ``base`` scores
    (the linear model's): a nonlinear correction, one feature threshold per round."""
    x = np.vstack([g[0] for g in groups])
    labels = np.concatenate([g[1] for g in groups])
    sizes = np.asarray([len(g[1]) for g in groups])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)
    query = np.repeat(np.arange(len(groups)), sizes)
    scores = np.concatenate(base).astype(np.float64)
    cuts = [_cuts(x[:, j]) for j in range(x.shape[1])]
    bins = [np.searchsorted(c, x[:, j], side="right") for j, c in enumerate(cuts)]
    stumps: list[Stump] = []
    for _ in range(rounds):
        g, h = _softmax_gradient(scores, labels, starts, query)
        total_g, total_h = g.sum(), h.sum()
        best: tuple[float, int, int] = (0.0, -1, -1)
        for j, b in enumerate(bins):
            if not len(cuts[j]):
                continue
            left_g = np.cumsum(np.bincount(b, weights=g, minlength=len(cuts[j]) + 1))[:-1]
            left_h = np.cumsum(np.bincount(b, weights=h, minlength=len(cuts[j]) + 1))[:-1]
            right_g, right_h = total_g - left_g, total_h - left_h
            ok = (left_h >= STUMP_MIN_HESSIAN) & (right_h >= STUMP_MIN_HESSIAN)
            gain = np.where(
                ok,
                left_g**2 / (left_h + STUMP_L2) + right_g**2 / (right_h + STUMP_L2),
                -np.inf,
            )
            k = int(np.argmax(gain))
            if gain[k] > best[0]:
                best = (float(gain[k]), j, k)
        _, j, k = best
        if j < 0:
            break
        below = bins[j] <= k
        value_below = -STUMP_RATE * g[below].sum() / (h[below].sum() + STUMP_L2)
        value_above = -STUMP_RATE * g[~below].sum() / (h[~below].sum() + STUMP_L2)
        stumps.append((j, float(cuts[j][k]), float(value_below), float(value_above)))
        scores += np.where(below, value_below, value_above)
    return stumps


def _apply_stumps(stumps: Sequence[Stump], x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    out = np.zeros(x.shape[0])
    for j, cut, below, above in stumps:
        out += np.where(x[:, j] < cut, below, above)
    return out


def _fused(scores: npt.NDArray[np.float64], support: Sequence[int], fuse: float) -> list[float]:
    """Reciprocal-rank fusion of the model's ranking with ROSE's (support, most first)."""
    n = len(scores)
    model_rank = np.empty(n)
    model_rank[np.argsort(-scores, kind="stable")] = np.arange(n)
    rose_rank = np.empty(n)
    rose_rank[np.argsort(-np.asarray(support, dtype=np.float64), kind="stable")] = np.arange(n)
    fused = (1 - fuse) / (FUSE_OFFSET + model_rank) + fuse / (FUSE_OFFSET + rose_rank)
    return [float(v) for v in fused]


def _map_of(ranked: Sequence[object], truth: set[object]) -> float:
    return float(_eval_module().score_ranking(ranked, truth)["map"])


def self_check(data: Prepared, config: Config) -> float:
    """MAP ratio to ROSE of ``config``'s linear model fitted on the second-newest
    self-training window and scored on the newest: the repository's own earlier history
    only (0.0 when it has no second window)."""
    from engram.history.cochange_model import ALL_FEATURES, fit_listwise

    columns = [ALL_FEATURES.index(f) for f in config.features]
    support = ALL_FEATURES.index("log_support")
    older = _training_groups(data, columns, False, (1,))
    if not older:
        return 0.0
    mean, scale, weights = fit_listwise(older, config.l2)
    ours, rose = [], []
    for x, y, session_only, window in data.train:
        if window != 0:
            continue
        x, y = x[~session_only], y[~session_only]
        if not 0 < y.sum() < len(y):
            continue
        scores = weights[0] + ((x[:, columns] - mean) / scale) @ weights[1:]
        truth: set[object] = set(np.flatnonzero(y > 0).tolist())
        order = sorted(range(len(y)), key=lambda i: (-scores[i], -x[i, support], i))
        by_rose = [i for i in sorted(range(len(y)), key=lambda i: (-x[i, support], i))
                   if x[i, support] > 0]  # fmt: skip
        ours.append(_map_of(order, truth))
        rose.append(_map_of(by_rose, truth))
    return float(np.mean(ours) / np.mean(rose)) if rose and np.mean(rose) > 0 else 0.0


def run_config(data: Prepared, config: Config) -> tuple[dict[str, float], dict[str, float], float]:
    """(engram metrics, rose metrics, fit seconds) of one configuration on one repository."""
    from engram.history.cochange_model import ALL_FEATURES, CochangeModel, fit_listwise

    ev = _eval_module()
    columns = [ALL_FEATURES.index(f) for f in config.features]
    keep_session = "session_confidence" in config.features
    groups = _training_groups(data, columns, keep_session, range(config.windows))
    t0 = time.monotonic()
    stumps: list[Stump] = []
    if groups:
        mean, scale, weights = fit_listwise(groups, config.l2)
        model = CochangeModel(mean, scale, weights, features=config.features)
        if config.stumps:
            base = [model.score(x) for x, _ in groups]
            stumps = fit_stumps(groups, base, config.stumps)
    else:  # nothing to learn from: all scores tie and support decides (ROSE's order)
        model = CochangeModel(
            np.zeros(len(columns)),
            np.ones(len(columns)),
            np.zeros(len(columns) + 1),
            features=config.features,
        )
    use_rose = config.fallback and self_check(data, config) < 1.0
    fit_s = time.monotonic() - t0
    ours, rose = [], []
    for q in data.queries:
        rose.append(ev.score_ranking(q.rose, q.truth))
        if use_rose:
            ours.append(rose[-1])
            continue
        mask = np.ones(len(q.names), dtype=bool) if keep_session else ~q.session_only
        idx = np.flatnonzero(mask)
        x = q.features[idx][:, columns]
        scores = model.score(x) + _apply_stumps(stumps, x) if len(idx) else np.zeros(0)
        if config.fuse and len(idx):
            scores = np.asarray(_fused(scores, [q.support[i] for i in idx], config.fuse))
        order = sorted(
            range(len(idx)),
            key=lambda i: (-scores[i], -q.support[idx[i]], q.names[idx[i]]),
        )
        ranked = [q.names[idx[i]] for i in order if q.names[idx[i]]]
        ours.append(ev.score_ranking(ranked, q.truth))
    return ev.average(ours), ev.average(rose), fit_s


def first_round() -> list[Config]:
    """Round 1 (issue 17): the first learned set, it plus each lever alone, it plus the two
    levers that beat it on most development repositories alone, and everything."""
    out: list[Config] = []
    for windows in WINDOW_CHOICES:
        for l2 in L2S:
            tail = f"l2={l2} windows={windows}"
            out.append(Config(f"base {tail}", BASE, l2, windows))
            for feature in NEW:
                out.append(Config(f"base+{feature} {tail}", (*BASE, feature), l2, windows))
            pair = ("partner_recent_rate", "name_match")
            out.append(Config(f"base+{'+'.join(pair)} {tail}", (*BASE, *pair), l2, windows))
            out.append(Config(f"all {tail}", (*BASE, *NEW), l2, windows))
    return out


def second_round() -> list[Config]:
    """Round 2: today's default with the author features (each, all three), L2 3 or 10,
    linear or linear + 50 boosted stumps, with or without ROSE's rank fused in (weight 0.2),
    and the default and its best author lever with the self-check fallback to ROSE."""
    from engram.history.cochange_model import FEATURES

    sets = {"default": FEATURES}
    for feature in AUTHOR:
        sets[f"+{feature}"] = (*FEATURES, feature)
    sets["+authors"] = (*FEATURES, *AUTHOR)
    out: list[Config] = []
    for name, features in sets.items():
        for l2 in (3.0, 10.0):
            for stumps in (0, 50):
                for fuse in (0.0, 0.2):
                    label = f"{name} l2={l2} stumps={stumps} fuse={fuse}"
                    out.append(Config(label, features, l2, 1, stumps, fuse))
            if name in ("default", "+author_recent_rate"):
                out.append(Config(f"{name} l2={l2} fallback", features, l2, 1, 0, 0.0, True))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dev", type=Path, nargs="+", required=True)
    parser.add_argument("--test", type=Path, nargs="*", default=[])
    parser.add_argument("--max-commits", type=int, default=None)
    parser.add_argument("--json", action="store_true", help="last line: one JSON object")
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="keep each repository's prepared features here (keyed by its HEAD) for reruns",
    )
    parser.add_argument(
        "--round",
        type=int,
        choices=(1, 2),
        default=2,
        help="which configurations to compare (docs/history.md: round 1 chose today's "
        "default; round 2 tries author features, boosted stumps, rank fusion, fallback)",
    )
    args = parser.parse_args(argv)
    from engram.history.cochange_model import FEATURES, L2, WINDOWS

    logging.basicConfig(level=logging.WARNING)

    def say(message: str) -> None:
        print(message, file=sys.stderr)

    dev = []
    for repo in args.dev:
        dev.append(cached(repo, args.max_commits, args.cache))
        say(f"prepared {dev[-1].name}: {len(dev[-1].queries)} queries {dev[-1].seconds}")
    configs = first_round() if args.round == 1 else second_round()
    default_config = Config("today's default", FEATURES, L2, WINDOWS)
    if default_config.label not in {c.label for c in configs}:
        configs.append(default_config)
    table: dict[str, dict[str, tuple[dict[str, float], dict[str, float], float]]] = {}
    for config in configs:
        label = config.label
        table[label] = {d.name: run_config(d, config) for d in dev}
        ratios = [r[0]["map"] / r[1]["map"] for r in table[label].values()]
        say(f"{label}: mean MAP ratio {statistics.mean(ratios):.3f} min {min(ratios):.3f}")

    def ratio(label: str, name: str) -> float:
        ours, rose, _ = table[label][name]
        return ours["map"] / rose["map"] if rose["map"] else 0.0

    folds: list[dict[str, Any]] = []
    for held in dev:
        others = [d.name for d in dev if d.name != held.name]
        best = max(table, key=lambda lab: statistics.mean(ratio(lab, n) for n in others))
        folds.append(
            {"held_out": held.name, "chosen": best, "ratio": round(ratio(best, held.name), 4)}
        )
        say(f"fold {held.name}: chose {best} -> {folds[-1]['ratio']}")
    fold_ratios = [float(f["ratio"]) for f in folds]
    chosen = max(table, key=lambda lab: statistics.mean(ratio(lab, d.name) for d in dev))
    chosen_config = next(c for c in configs if c.label == chosen)
    default_mean = statistics.mean(ratio(default_config.label, d.name) for d in dev)

    def row(name: str, result: tuple[dict[str, float], dict[str, float], float]) -> dict[str, Any]:
        ours, rose, fit_s = result
        return {
            "engram": ours,
            "rose": rose,
            "map_ratio": round(ours["map"] / rose["map"], 4) if rose["map"] else None,
            "fit_s": round(fit_s, 2),
        }

    test_rows = {}
    for repo in args.test:
        data = cached(repo, args.max_commits, args.cache)
        test_rows[data.name] = row(data.name, run_config(data, chosen_config))
        test_rows[data.name]["queries"] = len(data.queries)
        # today's default on the same queries: the chosen configuration's gain over it
        test_rows[data.name]["default"] = row(data.name, run_config(data, default_config))
        say(
            f"test {data.name}: chosen {test_rows[data.name]['map_ratio']}, "
            f"default {test_rows[data.name]['default']['map_ratio']}"
        )
    result = {
        "dataset": "cochange-lab",
        "chosen": {**attrs.asdict(chosen_config), "features": list(chosen_config.features)},
        "folds": folds,
        "fold_ratio_mean": round(statistics.mean(fold_ratios), 4),
        "fold_ratio_sd": round(statistics.stdev(fold_ratios), 4) if len(folds) > 1 else 0.0,
        # the rule for changing the product: the selection's held-out mean must beat the
        # default's mean over the same repositories, or the default stays
        "default_ratio_mean": round(default_mean, 4),
        "adopt": round(statistics.mean(fold_ratios), 4) > round(default_mean, 4),
        "configs": {lab: {d.name: round(ratio(lab, d.name), 4) for d in dev} for lab in table},
        "dev": {d.name: row(d.name, table[chosen][d.name]) for d in dev},
        "test": test_rows,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
