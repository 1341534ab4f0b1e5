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

Long on purpose: the feature definitions are one table shared by the product's ranking and
``scripts/eval/cochange_lab.py``, which must compute exactly the same features (including
the author features the lab measures and the product does not choose) for its
cross-validation to say anything about the shipped model (docs/history.md "Second round").
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

import attrs
import numpy as np
import numpy.typing as npt

#: Every feature the model knows, by name. A model stores the names it was fitted on
#: (:attr:`CochangeModel.features`); :data:`FEATURES` is the default set, chosen by
#: leave-one-repository-out cross-validation (docs/history.md "How the features were
#: chosen"). Shares and strengths enter as logs: in the softmax ranking a weight becomes an
#: exponent (score ~ confidence^w1 x support^w2 ...), which is how such evidence combines.
ALL_FEATURES = (
    "plain_confidence",  # support / commits of the query file (ROSE's own number)
    "short_confidence",  # the same on recency-weighted commits (half-life SHORT_HALF_LIFE)
    "log_support",  # log1p(support): how sure the confidence is
    "reverse_confidence",  # support / commits of the partner (the rule the other way)
    "partner_rate",  # the partner's share of all commits (often-changed files)
    "structure",  # the caller's structural evidence in 0..1 (import graph, test naming)
    "no_history",  # 1 when the pair never changed together (a prior-only candidate)
    "size_confidence",  # confidence with each commit weighted 1/(its other files): small
    #                     commits are sharper evidence than sweeping ones
    "own_recent_confidence",  # confidence over the query file's own last few commits
    "last_together_age",  # log1p(commits since the pair last changed together)
    "partner_age",  # log1p(commits since the partner last changed at all)
    "partner_recent_rate",  # the partner's share of recent commits (half-life RECENT)
    "path_proximity",  # shared leading folders / deeper of the two folder depths
    "name_match",  # same file stem once test/spec markers are dropped (foo.py, test_foo.py)
    "session_confidence",  # share of the query's commits with the partner changed within
    #                        SESSION_SECONDS (the same sitting, split over commits)
    "author_confidence",  # confidence over the query file's commits by the query's author
    "author_recent_rate",  # the partner's share of the author's own recent commits
    #                        (half-life AUTHOR_HALF_LIFE of them): what they work on lately
    "author_partner_share",  # share of the partner's commits made by the query's author
)
FEATURES = (
    "plain_confidence",
    "short_confidence",
    "log_support",
    "reverse_confidence",
    "partner_rate",
    "structure",
    "no_history",
    "partner_recent_rate",
    "name_match",
)
#: Half-life of ``short_confidence``, in commits.
SHORT_HALF_LIFE = 200.0
#: Half-life of ``own_recent_confidence``, in the query file's own commits.
OWN_HALF_LIFE = 4.0
#: Half-life of ``partner_recent_rate``, in commits.
RECENT_HALF_LIFE = 100.0
#: Half-life of ``author_recent_rate``, in the author's own commits.
AUTHOR_HALF_LIFE = 10.0
#: ``session_confidence``: commits this close in time count as one sitting ...
SESSION_SECONDS = 4 * 3600
#: ... looking at most this many commits either side.
SESSION_SPAN = 20
#: Added before taking logs of shares and strengths (a pair never seen together is not -inf).
FLOOR = 0.01
#: L2 penalty of the logistic regression (on standardised features).
L2 = 3.0
#: Self-training: the most recent eligible commits used as labelled queries ...
TRAIN_COMMITS = 300
#: ... in this many consecutive time splits (the newest first) ...
WINDOWS = 1
#: ... and the least history a repository needs before a model is learned at all.
MIN_TRAIN_COMMITS = 40
MIN_POSITIVES = 30
#: Most changed files that join every candidate list (often-changed files: changelog, tests).
POPULAR = 20
_TEST_MARK = re.compile(r"(^|[._-])(tests?|specs?)(?=$|[._-])|^test|test$|spec$", re.IGNORECASE)


@attrs.define
class CommitIndex:
    """The mined, co-change eligible commits in memory: who changed with whom, and when.

    ``commits[i]`` is the canonical file ids of the i-th eligible commit (oldest first);
    ``touching[f]`` the positions of the commits that touched file ``f``, ascending;
    ``times[i]`` the i-th commit's unix time (empty when unknown); ``authors[i]`` who made
    it. The product's mining does not record authors (the author features were not chosen,
    docs/history.md), so ``authors`` stays empty there and the author features are constant;
    the lab (scripts/eval/cochange_lab.py) fills it from ``git log`` to measure them.
    """

    commits: list[tuple[int, ...]]
    touching: dict[int, list[int]]
    names: dict[int, str]
    alive: set[int]
    times: list[int] = attrs.field(factory=list)
    #: ``authors[i]``: who made the i-th eligible commit (empty when not mined)
    authors: list[str] = attrs.field(factory=list)

    @classmethod
    def build(
        cls,
        rows: Iterable[tuple[int, int]],
        names: Mapping[int, str],
        alive: Iterable[int],
        times: Mapping[int, int] | None = None,
    ) -> CommitIndex:
        """From ``(commit order, canonical file id)`` rows of eligible commits."""
        grouped: dict[int, list[int]] = {}
        for commit, file in rows:
            grouped.setdefault(commit, []).append(file)
        order = sorted(grouped)
        commits = [tuple(dict.fromkeys(grouped[c])) for c in order]
        touching: dict[int, list[int]] = {}
        for position, files in enumerate(commits):
            for file in files:
                touching.setdefault(file, []).append(position)
        stamps = [int(times.get(c, 0)) for c in order] if times else []
        return cls(commits, touching, dict(names), set(alive), stamps)

    @property
    def size(self) -> int:
        return len(self.commits)


@attrs.define
class HistoryStats:
    """Per-file facts of the commits before one cutoff, shared by every query at it."""

    end: int
    rates: dict[int, float]  # share of commits touching the file
    recent: dict[int, float]  # the same, recency weighted (half-life RECENT_HALF_LIFE)
    last: dict[int, int]  # position of the file's newest commit


def history_stats(index: CommitIndex, before: int | None = None) -> HistoryStats:
    """:class:`HistoryStats` of the eligible commits before ``before`` (all by default)."""
    end = index.size if before is None else before
    rates: dict[int, float] = {}
    recent: dict[int, float] = {}
    last: dict[int, int] = {}
    if end <= 0:
        return HistoryStats(0, rates, recent, last)
    newest = end - 1
    total_recent = sum(_decay(newest - p, RECENT_HALF_LIFE) for p in range(end))
    for file, positions in index.touching.items():
        count = bisect.bisect_left(positions, end)
        if not count:
            continue
        rates[file] = count / end
        last[file] = positions[count - 1]
        weight = sum(_decay(newest - p, RECENT_HALF_LIFE) for p in positions[:count])
        recent[file] = weight / total_recent
    return HistoryStats(end, rates, recent, last)


@attrs.define
class Candidates:
    """Candidate partners of one file and their feature rows."""

    files: list[int]
    features: npt.NDArray[np.float64]
    support: list[int]


def _decay(age: float, half_life: float | None) -> float:
    return 1.0 if not half_life else 0.5 ** (max(0.0, age) / half_life)


def _folders(path: str) -> list[str]:
    return path.split("/")[:-1]


def _stem(path: str) -> str:
    base = path.rsplit("/", 1)[-1].split(".", 1)[0]
    return _TEST_MARK.sub("", base).strip("._-").lower()


def path_proximity(a: str, b: str) -> float:
    """Shared leading folders over the deeper folder depth (+1): 1.0 in the same folder."""
    left, right = _folders(a), _folders(b)
    shared = 0
    for x, y in zip(left, right, strict=False):
        if x != y:
            break
        shared += 1
    return (shared + 1) / (max(len(left), len(right)) + 1)


def name_match(a: str, b: str) -> float:
    """1.0 when the stems agree once test/spec markers are dropped, 0.5 when one holds the other."""
    left, right = _stem(a), _stem(b)
    if not left or not right:
        return 0.0
    if left == right:
        return 1.0
    if min(len(left), len(right)) >= 3 and (left in right or right in left):
        return 0.5
    return 0.0


def _session_partners(index: CommitIndex, positions: Sequence[int], end: int) -> dict[int, int]:
    """For each file: in how many of ``positions`` it changed within SESSION_SECONDS."""
    times = index.times
    out: dict[int, int] = {}
    if not times:
        return out
    for position in positions:
        stamp = times[position]
        seen: set[int] = set()
        for step in (-1, 1):
            other = position + step
            while 0 <= other < end and abs(other - position) <= SESSION_SPAN:
                if abs(times[other] - stamp) > SESSION_SECONDS:
                    break
                seen.update(index.commits[other])
                other += step
        seen.update(index.commits[position])
        for file in seen:
            out[file] = out.get(file, 0) + 1
    return out


def candidate_features(
    index: CommitIndex,
    file: int,
    *,
    before: int | None = None,
    structure: Mapping[int, float] | None = None,
    popular: Sequence[int] = (),
    stats: HistoryStats | None = None,
    features: Sequence[str] = FEATURES,
    names: Mapping[int, str] | None = None,
    author: str | None = None,
) -> Candidates:
    """Features of every candidate partner of ``file`` from the commits before ``before``.

    Candidates: living files that changed with it, the structural prior's files,
    ``popular`` and, when ``session_confidence`` is asked for, files changed in the same
    sittings. ``stats`` (:func:`history_stats` at ``before``) may be passed in when many
    queries share one cutoff; ``names`` covers files git has not seen (graph-only ids).
    """
    end = index.size if before is None else before
    if stats is None or stats.end != end:
        stats = history_stats(index, end)
    names = index.names if names is None else names
    wanted = set(features)
    touching = index.touching.get(file, [])
    mine = touching[: bisect.bisect_left(touching, end)]
    newest = end - 1
    n_short = n_own = n_size = 0.0
    support: dict[int, int] = {}
    short: dict[int, float] = {}
    own: dict[int, float] = {}
    sized: dict[int, float] = {}
    together: dict[int, int] = {}
    for rank, position in enumerate(reversed(mine)):
        recent = _decay(newest - position, SHORT_HALF_LIFE)
        mine_recent = _decay(rank, OWN_HALF_LIFE)
        changed = index.commits[position]
        size_weight = 1.0 / max(1, len(changed) - 1)
        n_short += recent
        n_own += mine_recent
        n_size += size_weight
        for other in changed:
            if other == file:
                continue
            support[other] = support.get(other, 0) + 1
            short[other] = short.get(other, 0.0) + recent
            own[other] = own.get(other, 0.0) + mine_recent
            sized[other] = sized.get(other, 0.0) + size_weight
            together.setdefault(other, position)
    session: dict[int, int] = {}
    if "session_confidence" in wanted:
        session = _session_partners(index, mine, end)
    by_author: dict[int, float] = {}
    author_recent: dict[int, float] = {}
    n_by_author = n_author_recent = 0.0
    if author and index.authors and wanted & {"author_confidence", "author_recent_rate"}:
        authors = index.authors
        for position in mine:
            if authors[position] == author:
                n_by_author += 1
                for other in index.commits[position]:
                    by_author[other] = by_author.get(other, 0.0) + 1
        rank = 0
        for position in range(end - 1, -1, -1):
            if authors[position] != author:
                continue
            weight = _decay(rank, AUTHOR_HALF_LIFE)
            if weight < 1e-3:
                break
            n_author_recent += weight
            for other in index.commits[position]:
                author_recent[other] = author_recent.get(other, 0.0) + weight
            rank += 1
    prior = {f: w for f, w in (structure or {}).items() if w > 0 and f != file}
    pool = dict.fromkeys(f for f in support if f in index.alive)
    pool.update(dict.fromkeys(prior))
    pool.update(dict.fromkeys(f for f in popular if f != file))
    pool.update(dict.fromkeys(f for f in session if f != file and f in index.alive))
    files = list(pool)
    rows = np.zeros((len(files), len(features)), dtype=np.float64)
    floor_rate = 0.5 / max(end, 1)
    log = math.log
    my_name = names.get(file, "")
    never = math.log1p(max(end, 1))
    # one column per feature, each a comprehension over the candidates (a hub's impact
    # has a thousand of them; the same arithmetic as per cell, docs/codegraph.md)
    counts = [support.get(other, 0) for other in files]
    for j, feature in enumerate(features):
        column: list[float]
        if feature == "plain_confidence":
            n_mine = len(mine)
            column = (
                [log(s / n_mine + FLOOR) for s in counts] if mine else [log(FLOOR)] * len(files)
            )
        elif feature == "short_confidence":
            column = (
                [log(short.get(other, 0.0) / n_short + FLOOR) for other in files]
                if n_short
                else [log(FLOOR)] * len(files)
            )
        elif feature == "log_support":
            column = [math.log1p(s) for s in counts]
        elif feature == "reverse_confidence":
            column = []
            for other, s in zip(files, counts, strict=True):
                n_other = bisect.bisect_left(index.touching.get(other, []), end)
                column.append(log(s / n_other + FLOOR) if n_other else log(FLOOR))
        elif feature == "partner_rate":
            column = [log(max(stats.rates.get(other, 0.0), floor_rate)) for other in files]
        elif feature == "structure":
            column = [log(prior.get(other, 0.0) + FLOOR) for other in files]
        elif feature == "no_history":
            column = [float(s == 0) for s in counts]
        elif feature == "size_confidence":
            column = (
                [log(sized.get(other, 0.0) / n_size + FLOOR) for other in files]
                if n_size
                else [log(FLOOR)] * len(files)
            )
        elif feature == "own_recent_confidence":
            column = (
                [log(own.get(other, 0.0) / n_own + FLOOR) for other in files]
                if n_own
                else [log(FLOOR)] * len(files)
            )
        elif feature == "last_together_age":
            column = [
                math.log1p(newest - together[other]) if other in together else never
                for other in files
            ]
        elif feature == "partner_age":
            column = [
                math.log1p(newest - stats.last[other]) if other in stats.last else never
                for other in files
            ]
        elif feature == "partner_recent_rate":
            column = [log(max(stats.recent.get(other, 0.0), floor_rate)) for other in files]
        elif feature in ("path_proximity", "name_match"):
            measure = path_proximity if feature == "path_proximity" else name_match
            column = []
            for other in files:
                other_name = names.get(other, "")
                column.append(measure(my_name, other_name) if my_name and other_name else 0.0)
        elif feature == "session_confidence":
            column = (
                [log(session.get(other, 0) / len(mine) + FLOOR) for other in files]
                if mine
                else [log(FLOOR)] * len(files)
            )
        elif feature == "author_confidence":
            column = (
                [log(by_author.get(other, 0.0) / n_by_author + FLOOR) for other in files]
                if n_by_author
                else [log(FLOOR)] * len(files)
            )
        elif feature == "author_recent_rate":
            column = (
                [log(author_recent.get(other, 0.0) / n_author_recent + FLOOR) for other in files]
                if n_author_recent
                else [log(FLOOR)] * len(files)
            )
        elif feature == "author_partner_share":
            column = [
                log(_author_share(index, other, author, end) + FLOOR) if author else log(FLOOR)
                for other in files
            ]
        else:
            raise ValueError(f"unknown co-change feature {feature!r}")
        if files:
            rows[:, j] = column
    return Candidates(files, rows, [support.get(f, 0) for f in files])


def _author_share(index: CommitIndex, file: int, author: str, end: int) -> float:
    """Share of ``file``'s commits before ``end`` made by ``author``."""
    if not index.authors:
        return 0.0
    positions = index.touching.get(file, [])
    count = bisect.bisect_left(positions, end)
    if not count:
        return 0.0
    return sum(index.authors[p] == author for p in positions[:count]) / count


def change_rates(index: CommitIndex, before: int | None = None) -> dict[int, float]:
    """Share of the eligible commits before ``before`` that touch each file."""
    return history_stats(index, before).rates


def popular_files(rates: Mapping[int, float], alive: set[int], k: int = POPULAR) -> list[int]:
    ranked = sorted((f for f in rates if f in alive), key=lambda f: -rates[f])
    return ranked[:k]


@attrs.define
class CochangeModel:
    """Standardisation and logistic-regression weights over the named ``features``."""

    mean: npt.NDArray[np.float64]
    scale: npt.NDArray[np.float64]
    weights: npt.NDArray[np.float64]  # bias first
    trained_on: int = 0  # labelled queries
    positives: int = 0
    features: tuple[str, ...] = FEATURES

    def score(self, features: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        if features.shape[0] == 0:
            return np.zeros(0)
        z = (features - self.mean) / self.scale
        result: npt.NDArray[np.float64] = self.weights[0] + z @ self.weights[1:]
        return result

    def to_dict(self) -> dict[str, object]:
        return {
            "features": list(self.features),
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "weights": self.weights.tolist(),
            "trained_on": self.trained_on,
            "positives": self.positives,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> CochangeModel | None:
        """The stored model, or None when it was stored for another feature set."""
        names = data.get("features", [])
        if not isinstance(names, list) or tuple(names) != FEATURES:
            return None  # fitted for another default set: refit with today's
        try:
            return cls(
                np.asarray(data["mean"], dtype=np.float64),
                np.asarray(data["scale"], dtype=np.float64),
                np.asarray(data["weights"], dtype=np.float64),
                int(data.get("trained_on", 0)),  # type: ignore[call-overload]
                int(data.get("positives", 0)),  # type: ignore[call-overload]
                tuple(str(n) for n in names),
            )
        except (KeyError, TypeError, ValueError):
            return None


class StepCancelled(Exception):
    """A cancel (a stop) came while a step after mining ran (the co-change fit, rename
    following): it stops there, nothing half-done is stored, and the next run does it."""


def _stop_here(cancel: Callable[[], bool] | None) -> None:
    if cancel is not None and cancel():
        raise StepCancelled


def fit_listwise(
    groups: Sequence[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]],
    l2: float = L2,
    iterations: int = 30,
    cancel: Callable[[], bool] | None = None,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Conditional-logit (softmax) ranking weights, one group per query, by Newton's method.

    Each query's true partners are scored against that query's own candidates (the ranking
    a user sees), not against all pairs at once: a pointwise fit is pulled towards whatever
    separates busy queries from quiet ones. Features are standardised over all rows; the
    L2 penalty keeps weights of rare or collinear features small. Returns ``(mean, scale,
    weights)``; the first weight is a bias kept at 0 (it cancels within a query).
    ``cancel`` is looked at before each Newton step and each backtracking trial
    (:class:`StepCancelled`).
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
        _stop_here(cancel)
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
            _stop_here(cancel)
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
    index: CommitIndex, *, train_commits: int = TRAIN_COMMITS, max_files: int = 30, window: int = 0
) -> tuple[int, list[tuple[int, set[int]]]]:
    """``(cutoff, [(file, other files of its commit)])`` for self-training.

    Window 0 holds the last ``held = min(train_commits, 20 %)`` eligible commits out as
    labelled queries, window 1 the ``held`` before those, and so on: features come from the
    commits before the window's cutoff, labels from the window, so every window is a time
    split of the repository's own earlier history. Each file of a window's commit that has
    history before the cutoff is a query. An empty list when the window does not fit.
    """
    total = index.size
    held = min(train_commits, total // 5)
    end = total - held * window
    cutoff = end - held
    queries: list[tuple[int, set[int]]] = []
    if held <= 0 or cutoff < held:
        return max(cutoff, 0), queries
    for position in range(cutoff, end):
        files = index.commits[position]
        if not 2 <= len(files) <= max_files:
            continue
        for file in files:
            if any(p < cutoff for p in index.touching.get(file, ())):
                queries.append((file, set(files) - {file}))
    return cutoff, queries


def training_files(index: CommitIndex, windows: int = WINDOWS) -> set[int]:
    """Every file that is a self-training query in one of the ``windows``."""
    return {f for w in range(windows) for f, _ in training_queries(index, window=w)[1]}


def learn(
    index: CommitIndex,
    *,
    structure_for: Mapping[int, Mapping[int, float]] | None = None,
    l2: float = L2,
    train_commits: int = TRAIN_COMMITS,
    features: Sequence[str] = FEATURES,
    windows: int = WINDOWS,
    cancel: Callable[[], bool] | None = None,
) -> CochangeModel | None:
    """A model fitted on the repository's own earlier history, or None with too little.

    ``windows`` time splits (:func:`training_queries`) give the labelled queries; the
    newest one must hold at least ``MIN_TRAIN_COMMITS`` commits. ``cancel`` is looked at
    every query and every step of the fit: a stop raises :class:`StepCancelled` within
    moments instead of after the whole fit (~2 s on babel at load 12, more at 58k files).
    """
    held = min(train_commits, index.size // 5)
    if held < MIN_TRAIN_COMMITS:
        return None
    groups: list[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]] = []
    for window in range(max(1, windows)):
        cutoff, queries = training_queries(index, train_commits=train_commits, window=window)
        if not queries:
            break
        stats = history_stats(index, cutoff)
        popular = popular_files(stats.rates, set(stats.rates))
        for file, truth in queries:
            _stop_here(cancel)
            found = candidate_features(
                index,
                file,
                before=cutoff,
                structure=(structure_for or {}).get(file),
                popular=popular,
                stats=stats,
                features=features,
            )
            labels = np.asarray([float(f in truth) for f in found.files])
            if labels.sum() == 0 or labels.sum() == len(labels):
                continue  # nothing to tell apart: the truth is out of reach or everything
            groups.append((found.features, labels))
    positives = int(sum(float(y.sum()) for _, y in groups))
    if positives < MIN_POSITIVES:
        return None
    mean, scale, weights = fit_listwise(groups, l2, cancel=cancel)
    return CochangeModel(mean, scale, weights, len(groups), positives, tuple(features))
