"""A learned re-ranking of the finalised top results (docs/retrieval.md "Learned re-ranking").

The fused pipeline ranks by one number built from a few scores. Several other facts about a
candidate predict whether it answers the query as well: how it stood on each path (BM25
score and rank, cosine and rank), whether its *own* text holds the query's words and names
(the BM25 text also carries the episode excerpt before it), whether it is a question, how
long it is, how its episode neighbours scored, and a few query/answer shapes ("when" and a
stated time, "how many" and a number). A linear model over these features, fitted with a
pairwise logistic loss (RankNet with a linear scorer) on development data, re-orders the top
:data:`RERANK_WINDOW` finalised results; what is below stays below.

The weights live in :mod:`engram.retrieval.rerank_weights`, written by
``scripts/eval/rerank_fit.py`` (the fitting script, and the cross-validation that chose
its settings). Nothing here knows which data it was fitted on: every feature is a property
of the query, the memory and the pipeline's own scores.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import attrs
import numpy as np
import numpy.typing as npt

from engram.model import Memory
from engram.retrieval.scoring import BM25, DENSE, TIME, is_question, is_question_query

#: Finalised results the model re-orders (the pipeline's ``FINALISE_WINDOW``).
RERANK_WINDOW = 30

#: Every feature, in the order of a feature vector.
FEATURES = (
    "score",  # pipeline score / best pipeline score in the window
    "log_rank",  # log1p(pipeline rank, 0-based)
    "bm25",  # BM25 score / best BM25 score (0 if not a keyword hit)
    "bm25_rr",  # 1 / BM25 rank (0 if not a keyword hit)
    "dense",  # cosine to the query (the lowest cosine in the dense list if not in it)
    "dense_gap",  # best cosine - this cosine
    "dense_rr",  # 1 / dense rank (0 if not in the dense list)
    "both",  # a hit on both paths
    "time",  # found inside the window a dated query names
    "episode",  # lifted by an episode neighbour
    "tag",  # the query names one of the memory's tags
    "question",  # a question query, and the memory is a question itself
    "overlap",  # share of the query's content words in the memory's own text
    "before_overlap",  # share of them in the episode excerpt before it
    "names",  # share of the query's capitalised names in the memory's text or tags
    "log_length",  # log1p(words in the memory)
    "neighbour",  # best score (relative) of an episode neighbour inside the window
    "when_time",  # a "when" query, and the memory states a time
    "count_number",  # a "how many/much/long/often" query, and the memory holds a number
    "feedback",  # pseudo-relevance feedback: share of the words of the top results (other
    #              than the query's) in the memory's text, the top ones weighted by score
)
#: Top results whose words make the feedback model (``feedback``).
FEEDBACK_DOCS = 3

_TOKEN = re.compile(r"[a-z0-9]+")
_NAME = re.compile(r"\b[A-Z][a-z]{2,}\b")
# fmt: off
_STOP = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did",
    "do", "does", "for", "from", "had", "has", "have", "he", "her", "his", "how", "i", "if",
    "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "she", "so", "than",
    "that", "the", "their", "them", "then", "there", "these", "they", "this", "to", "was",
    "we", "were", "what", "when", "where", "which", "who", "whom", "why", "will", "with",
    "would", "you", "your", "yes", "no", "not", "any", "some", "about", "after", "before",
    "over", "also", "just", "very",
})
# fmt: on
_WHEN = re.compile(r"^\s*when\b|\bwhat (?:year|month|day|date|time)\b", re.IGNORECASE)
_COUNT = re.compile(r"\bhow (?:many|much|long|often)\b", re.IGNORECASE)
_TIME_WORDS = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|ago|last|next|week(?:end)?s?|months?|years?|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|"
    r"may|june|july|august|september|october|november|december|spring|summer|autumn|fall|"
    r"winter|(?:19|20)\d\d)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(
    r"\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|"
    r"hundred|once|twice|thrice|several|few|couple)\b",
    re.IGNORECASE,
)
_STEM = 5  # words compared on their first letters: "painting" ~ "paintings" ~ "painted"


@attrs.frozen
class RerankModel:
    """A fitted linear scorer: ``weights . (features - mean) / scale``."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    version: int = 1

    def scores(self, matrix: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        index = [FEATURES.index(name) for name in self.features]
        x = (matrix[:, index] - np.asarray(self.mean)) / np.asarray(self.scale)
        return np.asarray(x @ np.asarray(self.weights), dtype=np.float64)


@attrs.frozen
class Candidate:
    """What the re-ranker needs of one finalised result."""

    memory: Memory
    score: float
    tag_match: bool


def _stems(text: str) -> set[str]:
    return {w[:_STEM] for w in _TOKEN.findall(text.lower()) if w not in _STOP and len(w) > 1}


def _share(wanted: set[str], have: set[str]) -> float:
    return len(wanted & have) / len(wanted) if wanted else 0.0


def candidate_features(
    query: str,
    candidates: Sequence[Candidate],
    path_scores: Mapping[str, Mapping[str, float]],
    path_ranks: Mapping[str, Mapping[str, int]],
) -> npt.NDArray[np.float64]:
    """One row of :data:`FEATURES` per candidate, in the candidates' order."""
    n = len(candidates)
    out = np.zeros((n, len(FEATURES)), dtype=np.float64)
    if n == 0:
        return out
    col = {name: i for i, name in enumerate(FEATURES)}
    best = max((c.score for c in candidates), default=0.0) or 1.0
    bm25 = path_scores.get(BM25, {})
    bm25_best = max(bm25.values(), default=0.0) or 1.0
    dense = path_scores.get(DENSE, {})
    dense_best = max(dense.values(), default=0.0)
    dense_floor = min(dense.values(), default=0.0)
    bm25_ranks = path_ranks.get(BM25, {})
    dense_ranks = path_ranks.get(DENSE, {})
    in_time = path_ranks.get(TIME, {})
    episode = path_ranks.get("episode", {})
    asked = is_question_query(query)
    when = _WHEN.search(query) is not None
    count = _COUNT.search(query) is not None
    words = _stems(query)
    first = query.split()[0] if query.split() else ""
    names = {m.lower() for m in _NAME.findall(query) if m != first}
    relative = {c.memory.id: c.score / best for c in candidates}
    own_stems = [_stems(c.memory.content) for c in candidates]
    feedback = _feedback_terms(candidates, own_stems, relative, words)
    for i, cand in enumerate(candidates):
        memory = cand.memory
        mid = memory.id
        row = out[i]
        row[col["score"]] = relative[mid]
        row[col["log_rank"]] = math.log1p(i)
        row[col["bm25"]] = bm25.get(mid, 0.0) / bm25_best
        row[col["bm25_rr"]] = 1.0 / bm25_ranks[mid] if mid in bm25_ranks else 0.0
        cosine = dense.get(mid, dense_floor)
        row[col["dense"]] = cosine
        row[col["dense_gap"]] = dense_best - cosine
        row[col["dense_rr"]] = 1.0 / dense_ranks[mid] if mid in dense_ranks else 0.0
        row[col["both"]] = float(mid in bm25_ranks and mid in dense_ranks)
        row[col["time"]] = float(mid in in_time)
        row[col["episode"]] = float(mid in episode)
        row[col["tag"]] = float(cand.tag_match)
        row[col["question"]] = float(asked and is_question(memory.content))
        own = own_stems[i]
        row[col["overlap"]] = _share(words, own)
        before = memory.extra.get("episode_before")
        row[col["before_overlap"]] = (
            _share(words, _stems(before)) if isinstance(before, str) else 0.0
        )
        if names:
            have = set(_TOKEN.findall(memory.content.lower()))
            have.update(w for tag in memory.tags for w in _TOKEN.findall(tag.lower()))
            row[col["names"]] = len(names & have) / len(names)
        row[col["log_length"]] = math.log1p(len(memory.content.split()))
        adjacent = memory.extra.get("adjacent")
        if isinstance(adjacent, list):
            row[col["neighbour"]] = max(
                (relative.get(str(a), 0.0) for a in adjacent if a != mid), default=0.0
            )
        row[col["when_time"]] = float(when and _TIME_WORDS.search(memory.content) is not None)
        row[col["count_number"]] = float(count and _NUMBER.search(memory.content) is not None)
        row[col["feedback"]] = _feedback_share(feedback, own, i)
    return out


def _feedback_terms(
    candidates: Sequence[Candidate],
    own_stems: Sequence[set[str]],
    relative: Mapping[str, float],
    query_words: set[str],
) -> list[dict[str, float]]:
    """Per top result, its words (not the query's) weighted by its relative score / count."""
    terms: list[dict[str, float]] = []
    for cand, stems in zip(candidates[:FEEDBACK_DOCS], own_stems, strict=False):
        extra = stems - query_words
        if extra:
            weight = relative[cand.memory.id] / len(extra)
            terms.append(dict.fromkeys(extra, weight))
        else:
            terms.append({})
    return terms


def _feedback_share(feedback: Sequence[dict[str, float]], stems: set[str], index: int) -> float:
    """The feedback model's mass on ``stems``, without the candidate's own contribution."""
    total = 0.0
    found = 0.0
    for j, terms in enumerate(feedback):
        if j == index:
            continue
        for term, weight in terms.items():
            total += weight
            if term in stems:
                found += weight
    return found / total if total else 0.0


def rerank_order(
    model: RerankModel,
    query: str,
    candidates: Sequence[Candidate],
    path_scores: Mapping[str, Mapping[str, float]],
    path_ranks: Mapping[str, Mapping[str, int]],
) -> list[int]:
    """Indices of the first :data:`RERANK_WINDOW` candidates, best first by the model; the
    rest keep their places after them."""
    head = list(candidates[:RERANK_WINDOW])
    if len(head) < 2:
        return list(range(len(candidates)))
    scores = model.scores(candidate_features(query, head, path_scores, path_ranks))
    # a stable sort: ties keep the pipeline's order
    order = sorted(range(len(head)), key=lambda i: -scores[i])
    return order + list(range(len(head), len(candidates)))


def default_model() -> RerankModel | None:
    """The shipped model (:mod:`engram.retrieval.rerank_weights`), None if it has no weights."""
    from engram.retrieval import rerank_weights as fitted

    if not fitted.WEIGHTS:
        return None
    return RerankModel(
        features=tuple(fitted.FEATURES),
        mean=tuple(fitted.MEAN),
        scale=tuple(fitted.SCALE),
        weights=tuple(fitted.WEIGHTS),
        version=fitted.VERSION,
    )
