#!/usr/bin/env python3
"""Choose the co-change ranking's features by leave-one-repository-out cross-validation.

The same protocol as ``scripts/eval/cochange.py`` (train on the first 80 % of non-merge
commits, query every file of each later 2–30-file commit, the rest of its commit is the
truth), without the code graph, so that many feature sets can be compared in one run:
each repository's candidates and every feature of
``engram.history.cochange_model.ALL_FEATURES`` are computed once, then each configuration
(a feature set and an L2 penalty) is fitted on that repository's own self-training
queries (commits before the split only) and scored on its test queries. ROSE (support
over the query's commits, the ``rose`` row of cochange.py) is scored on the same queries.

Selection: for each development repository held out, the configuration with the best mean
MAP ratio to ROSE on the *other* development repositories is chosen and its held-out ratio
reported (fold mean ± sd); the configuration best on all development repositories is then
scored once on the ``--test`` repositories, which take no part in any choice.

Usage: scripts/eval/cochange_lab.py --dev /work/repos/flask /work/repos/click ...
           [--test /work/repos/fd ...] [--max-commits N] [--json]
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
            for file, truth_ids in self_queries:
                found = candidate_features(
                    index, file, before=cutoff, popular=popular, stats=stats, features=ALL_FEATURES
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
        conn = history._db()
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


def cached(repo: Path, max_commits: int | None, cache: Path | None) -> Prepared:
    """:func:`prepare`, read from / written to ``cache`` when given (our own pickles only)."""
    if cache is None:
        return prepare(repo, max_commits)
    head = _eval_module().git_bytes(repo, "rev-parse", "HEAD").decode().strip()
    path = cache / f"{repo.resolve().name}-{head[:12]}-{max_commits}-v2.pickle"
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


def run_config(
    data: Prepared, features: Sequence[str], l2: float, windows: int = 1
) -> tuple[dict[str, float], dict[str, float], float]:
    """(engram metrics, rose metrics, fit seconds) of one configuration on one repository."""
    from engram.history.cochange_model import ALL_FEATURES, CochangeModel, fit_listwise

    ev = _eval_module()
    columns = [ALL_FEATURES.index(f) for f in features]
    keep_session = "session_confidence" in features
    groups = []
    for x, y, session_only, window in data.train:
        if window >= windows:
            continue
        mask = np.ones(len(y), dtype=bool) if keep_session else ~session_only
        xs, ys = x[mask][:, columns], y[mask]
        if 0 < ys.sum() < len(ys):
            groups.append((xs, ys))
    t0 = time.monotonic()
    if groups:
        mean, scale, weights = fit_listwise(groups, l2)
    else:  # nothing to learn from: all scores tie and support decides (ROSE's order)
        mean, scale, weights = (
            np.zeros(len(columns)),
            np.ones(len(columns)),
            np.zeros(len(columns) + 1),
        )
    fit_s = time.monotonic() - t0
    model = CochangeModel(mean, scale, weights, features=tuple(features))
    ours, rose = [], []
    for q in data.queries:
        mask = np.ones(len(q.names), dtype=bool) if keep_session else ~q.session_only
        idx = np.flatnonzero(mask)
        scores = model.score(q.features[idx][:, columns]) if len(idx) else np.zeros(0)
        order = sorted(
            range(len(idx)),
            key=lambda i: (-scores[i], -q.support[idx[i]], q.names[idx[i]]),
        )
        ranked = [q.names[idx[i]] for i in order if q.names[idx[i]]]
        ours.append(ev.score_ranking(ranked, q.truth))
        rose.append(ev.score_ranking(q.rose, q.truth))
    return ev.average(ours), ev.average(rose), fit_s


def configurations() -> list[tuple[str, tuple[str, ...], float, int]]:
    """The compared configurations: the first learned set, it plus each lever alone, it
    plus the two levers that beat it on most development repositories alone (a second
    round of the same cross-validation, docs/history.md), and everything."""
    out: list[tuple[str, tuple[str, ...], float, int]] = []
    for windows in WINDOW_CHOICES:
        for l2 in L2S:
            tail = f"l2={l2} windows={windows}"
            out.append((f"base {tail}", BASE, l2, windows))
            for feature in NEW:
                out.append((f"base+{feature} {tail}", (*BASE, feature), l2, windows))
            pair = ("partner_recent_rate", "name_match")
            out.append((f"base+{'+'.join(pair)} {tail}", (*BASE, *pair), l2, windows))
            out.append((f"all {tail}", (*BASE, *NEW), l2, windows))
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
    args = parser.parse_args(argv)
    from engram.history.cochange_model import FEATURES, L2, WINDOWS

    logging.basicConfig(level=logging.WARNING)

    def say(message: str) -> None:
        print(message, file=sys.stderr)

    dev = []
    for repo in args.dev:
        dev.append(cached(repo, args.max_commits, args.cache))
        say(f"prepared {dev[-1].name}: {len(dev[-1].queries)} queries {dev[-1].seconds}")
    configs = configurations()
    table: dict[str, dict[str, tuple[dict[str, float], dict[str, float], float]]] = {}
    for label, features, l2, windows in configs:
        table[label] = {d.name: run_config(d, features, l2, windows) for d in dev}
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
    chosen_features, chosen_l2, chosen_windows = next(
        (f, l2, w) for lab, f, l2, w in configs if lab == chosen
    )

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
        test_rows[data.name] = row(
            data.name, run_config(data, chosen_features, chosen_l2, chosen_windows)
        )
        test_rows[data.name]["queries"] = len(data.queries)
        # today's default on the same queries: the chosen configuration's gain over it
        default, _, _ = run_config(data, FEATURES, L2, WINDOWS)
        test_rows[data.name]["default"] = default
        say(f"test {data.name}: {test_rows[data.name]['map_ratio']}")
    result = {
        "dataset": "cochange-lab",
        "chosen": {
            "label": chosen,
            "features": list(chosen_features),
            "l2": chosen_l2,
            "windows": chosen_windows,
        },
        "folds": folds,
        "fold_ratio_mean": round(statistics.mean(fold_ratios), 4),
        "fold_ratio_sd": round(statistics.stdev(fold_ratios), 4) if len(folds) > 1 else 0.0,
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
