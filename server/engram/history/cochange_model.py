"""Co-change ranking learned from the repository's own history.

ROSE (Zimmermann et al., ICSE 2004) ranks the files that changed with ``A`` by one number,
the rule's confidence. Several other facts in the same history predict the next change as
well: how *recently* the pair last changed together (a rule whose last support is 2,000
commits old describes code that has moved on), how many times it did (support, the
certainty behind a confidence), the rule in the other direction, how often the partner
changes at all, and the code graph's proximity. Rolfsnes et al. aggregate several rules;
learning-to-rank work on change impact (e.g. arXiv 2411.19099) combines such features with
a learned model.

Here the weights are learned **per repository, from its own history**, and never by hand:
the mined commits are split at a cutoff, features are computed from the commits before it,
and the commits after it say which candidates really changed with each file. A logistic
regression on those pairs gives the weights; queries then compute the same features from
the whole history. Nothing depends on which repository it is: a repository with too
little history to learn from keeps the closed-form m-estimate of
:meth:`~engram.history.GitHistory.rank_with_prior`.

The only constants are the ones below (feature transforms, the regularisation, the size of
the self-training window); they were chosen by cross-validation over repositories
(docs/history.md).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence

import attrs
import numpy as np
import numpy.typing as npt

#: Names of the features, in the order of the weight vector (after the bias). Shares and
#: strengths enter as logs: in the softmax ranking a weight becomes an exponent
#: (score ~ confidence^w1 x support^w2 ...), which is how such evidence combines.
FEATURES = (
    "plain_confidence",  # support / commits of the query file (ROSE's own number)
    "short_confidence",  # the same on recency-weighted commits (half-life SHORT_HALF_LIFE)
    "log_support",  # log1p(support): how sure the confidence is
    "reverse_confidence",  # support / commits of the partner (the rule the other way)
    "partner_rate",  # the partner's share of all commits (often-changed files)
    "structure",  # the caller's structural evidence in 0..1 (import graph, test naming)
    "no_history",  # 1 when the pair never changed together (a prior-only candidate)
)
#: Half-life of ``short_confidence``, in commits.
SHORT_HALF_LIFE = 200.0
#: Added before taking logs of shares and strengths (a pair never seen together is not -inf).
FLOOR = 0.01
#: L2 penalty of the logistic regression (on standardised features).
L2 = 1.0
#: Self-training: the most recent eligible commits used as labelled queries ...
TRAIN_COMMITS = 300
#: ... and the least history a repository needs before a model is learned at all.
MIN_TRAIN_COMMITS = 40
MIN_POSITIVES = 30
#: Most changed files that join every candidate list (often-changed files: changelog, tests).
POPULAR = 20


@attrs.define
class CommitIndex:
    """The mined, co-change eligible commits in memory: who changed with whom, and when.

    ``commits[i]`` is the canonical file ids of the i-th eligible commit (oldest first);
    ``touching[f]`` the positions of the commits that touched file ``f``, ascending.
    """

    commits: list[tuple[int, ...]]
    touching: dict[int, list[int]]
    names: dict[int, str]
    alive: set[int]

    @classmethod
    def build(
        cls,
        rows: Iterable[tuple[int, int]],
        names: Mapping[int, str],
        alive: Iterable[int],
    ) -> CommitIndex:
        """From ``(commit order, canonical file id)`` rows of eligible commits."""
        grouped: dict[int, list[int]] = {}
        for commit, file in rows:
            grouped.setdefault(commit, []).append(file)
        commits = [tuple(dict.fromkeys(grouped[c])) for c in sorted(grouped)]
        touching: dict[int, list[int]] = {}
        for position, files in enumerate(commits):
            for file in files:
                touching.setdefault(file, []).append(position)
        return cls(commits, touching, dict(names), set(alive))

    @property
    def size(self) -> int:
        return len(self.commits)


@attrs.define
class Candidates:
    """Candidate partners of one file and their feature rows."""

    files: list[int]
    features: npt.NDArray[np.float64]
    support: list[int]


def _decay(age: float, half_life: float | None) -> float:
    return 1.0 if not half_life else 0.5 ** (max(0.0, age) / half_life)


def candidate_features(
    index: CommitIndex,
    file: int,
    *,
    before: int | None = None,
    structure: Mapping[int, float] | None = None,
    popular: Sequence[int] = (),
    rates: Mapping[int, float] | None = None,
) -> Candidates:
    """Features of every candidate partner of ``file`` from the commits before ``before``.

    Candidates: living files that changed with it, the structural prior's files and
    ``popular``. ``rates`` (share of commits touching each file, up to ``before``) may be
    passed in when many queries share one cutoff.
    """
    end = index.size if before is None else before
    mine = index.touching.get(file, [])[: bisect.bisect_left(index.touching.get(file, []), end)]
    newest = end - 1
    n_short = 0.0
    support: dict[int, int] = {}
    short: dict[int, float] = {}
    for position in mine:
        recent = _decay(newest - position, SHORT_HALF_LIFE)
        n_short += recent
        for other in index.commits[position]:
            if other == file:
                continue
            support[other] = support.get(other, 0) + 1
            short[other] = short.get(other, 0.0) + recent
    prior = {f: w for f, w in (structure or {}).items() if w > 0 and f != file}
    pool = dict.fromkeys(f for f in support if f in index.alive)
    pool.update(dict.fromkeys(prior))
    pool.update(dict.fromkeys(f for f in popular if f != file))
    files = list(pool)
    if rates is None:
        rates = change_rates(index, end)
    rows = np.zeros((len(files), len(FEATURES)), dtype=np.float64)
    floor_rate = 0.5 / max(end, 1)
    log = math.log
    for i, other in enumerate(files):
        s = support.get(other, 0)
        n_other = bisect.bisect_left(index.touching.get(other, []), end)
        rows[i, 0] = log(s / len(mine) + FLOOR) if mine else log(FLOOR)
        rows[i, 1] = log(short.get(other, 0.0) / n_short + FLOOR) if n_short else log(FLOOR)
        rows[i, 2] = math.log1p(s)
        rows[i, 3] = log(s / n_other + FLOOR) if n_other else log(FLOOR)
        rows[i, 4] = log(max(rates.get(other, 0.0), floor_rate))
        rows[i, 5] = log(prior.get(other, 0.0) + FLOOR)
        rows[i, 6] = float(s == 0)
    return Candidates(files, rows, [support.get(f, 0) for f in files])


def change_rates(index: CommitIndex, before: int | None = None) -> dict[int, float]:
    """Share of the eligible commits before ``before`` that touch each file."""
    end = index.size if before is None else before
    if end <= 0:
        return {}
    out: dict[int, float] = {}
    for file, positions in index.touching.items():
        count = bisect.bisect_left(positions, end)
        if count:
            out[file] = count / end
    return out


def popular_files(rates: Mapping[int, float], alive: set[int], k: int = POPULAR) -> list[int]:
    ranked = sorted((f for f in rates if f in alive), key=lambda f: -rates[f])
    return ranked[:k]


@attrs.define
class CochangeModel:
    """Standardisation and logistic-regression weights over :data:`FEATURES`."""

    mean: npt.NDArray[np.float64]
    scale: npt.NDArray[np.float64]
    weights: npt.NDArray[np.float64]  # bias first
    trained_on: int = 0  # labelled queries
    positives: int = 0

    def score(self, features: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        if features.shape[0] == 0:
            return np.zeros(0)
        z = (features - self.mean) / self.scale
        result: npt.NDArray[np.float64] = self.weights[0] + z @ self.weights[1:]
        return result

    def to_dict(self) -> dict[str, object]:
        return {
            "features": list(FEATURES),
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "weights": self.weights.tolist(),
            "trained_on": self.trained_on,
            "positives": self.positives,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> CochangeModel | None:
        """The stored model, or None when it was stored for another feature set."""
        if list(data.get("features", [])) != list(FEATURES):  # type: ignore[call-overload]
            return None
        try:
            return cls(
                np.asarray(data["mean"], dtype=np.float64),
                np.asarray(data["scale"], dtype=np.float64),
                np.asarray(data["weights"], dtype=np.float64),
                int(data.get("trained_on", 0)),  # type: ignore[call-overload]
                int(data.get("positives", 0)),  # type: ignore[call-overload]
            )
        except (KeyError, TypeError, ValueError):
            return None


def fit_listwise(
    groups: Sequence[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]],
    l2: float = L2,
    iterations: int = 30,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Conditional-logit (softmax) ranking weights, one group per query, by Newton's method.

    Each query's true partners are scored against that query's own candidates (the ranking
    a user sees), not against all pairs at once: a pointwise fit is pulled towards whatever
    separates busy queries from quiet ones. Features are standardised over all rows; the
    L2 penalty keeps weights of rare or collinear features small. Returns ``(mean, scale,
    weights)``; the first weight is a bias kept at 0 (it cancels within a query).
    """
    x_all = np.vstack([x for x, _ in groups])
    mean = x_all.mean(axis=0)
    scale = x_all.std(axis=0)
    scale[scale < 1e-9] = 1.0
    standard = [((x - mean) / scale, y) for x, y in groups]
    dim = x_all.shape[1]
    ridge = l2

    def loss(w: npt.NDArray[np.float64]) -> float:
        total = 0.5 * ridge * float(w @ w)
        for z, y in standard:
            logits = z @ w
            top = float(logits.max())
            # each query counts once, whatever the size of its commit (MAP averages queries)
            total += top + math.log(float(np.exp(logits - top).sum()))
            total -= float(logits @ y) / float(y.sum())
        return total

    w = np.zeros(dim)
    current = loss(w)
    for _ in range(iterations):
        gradient = ridge * w
        hessian = np.eye(dim) * (ridge + 1e-9)
        for z, y in standard:
            logits = z @ w
            p = np.exp(logits - logits.max())
            p /= p.sum()
            expected = z.T @ p
            gradient += expected - z.T @ y / float(y.sum())
            hessian += (z * p[:, None]).T @ z - np.outer(expected, expected)
        step = np.linalg.solve(hessian, gradient)
        size = 1.0
        while size > 1e-4:  # backtracking: a full Newton step can overshoot
            trial = w - size * step
            value = loss(trial)
            if value <= current:
                break
            size /= 2
        else:
            break
        w, improvement = trial, current - value
        current = value
        if improvement < 1e-7 * max(1.0, abs(current)):
            break
    return mean, scale, np.concatenate([[0.0], w])


def training_queries(
    index: CommitIndex, *, train_commits: int = TRAIN_COMMITS, max_files: int = 30
) -> tuple[int, list[tuple[int, set[int]]]]:
    """``(cutoff, [(file, other files of its commit)])`` for self-training.

    The cutoff leaves the last ``min(train_commits, 20 %)`` eligible commits as labelled
    queries; each file of such a commit that has history before the cutoff is a query.
    """
    total = index.size
    held = min(train_commits, total // 5)
    cutoff = total - held
    queries: list[tuple[int, set[int]]] = []
    for position in range(cutoff, total):
        files = index.commits[position]
        if not 2 <= len(files) <= max_files:
            continue
        for file in files:
            if any(p < cutoff for p in index.touching.get(file, ())):
                queries.append((file, set(files) - {file}))
    return cutoff, queries


def learn(
    index: CommitIndex,
    *,
    structure_for: Mapping[int, Mapping[int, float]] | None = None,
    l2: float = L2,
    train_commits: int = TRAIN_COMMITS,
) -> CochangeModel | None:
    """A model fitted on the repository's own recent history, or None with too little."""
    cutoff, queries = training_queries(index, train_commits=train_commits)
    if index.size - cutoff < MIN_TRAIN_COMMITS or not queries:
        return None
    rates = change_rates(index, cutoff)
    alive_then = {f for f in rates}
    popular = popular_files(rates, alive_then)
    groups: list[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]] = []
    for file, truth in queries:
        found = candidate_features(
            index,
            file,
            before=cutoff,
            structure=(structure_for or {}).get(file),
            popular=popular,
            rates=rates,
        )
        labels = np.asarray([float(f in truth) for f in found.files])
        if labels.sum() == 0 or labels.sum() == len(labels):
            continue  # nothing to tell apart: the truth is out of reach or everything
        groups.append((found.features, labels))
    positives = int(sum(float(y.sum()) for _, y in groups))
    if positives < MIN_POSITIVES:
        return None
    mean, scale, weights = fit_listwise(groups, l2)
    return CochangeModel(mean, scale, weights, len(groups), positives)
