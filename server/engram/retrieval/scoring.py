"""The pure arithmetic of ranking: query types, fusion, boosts and per-memory weights.

Everything here is a function of its arguments (no store, no clock), so each stage is unit
tested on its own and the :class:`~engram.retrieval.Retriever` only wires them together.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime

import attrs

from engram.model import Memory, MemorySource, MemoryType, UniversalPhase
from engram.retrieval.types import QueryType

T = MemoryType

#: Phase-aware type weights: the complete table of docs/retrieval.md (types it omits weigh 1.0).
PHASE_WEIGHTS: Mapping[UniversalPhase, Mapping[MemoryType, float]] = {
    UniversalPhase.DEFINE: {
        T.REQUIREMENT: 1.5, T.DECISION: 1.3, T.WORKFLOW_RECIPE: 1.5, T.TASK_CALIBRATION: 1.4,
        T.PATTERN: 1.2, T.WORK_STATE: 1.1, T.PREFERENCE: 1.0, T.MODULE_INSIGHT: 1.0,
        T.GOTCHA: 0.8, T.ERROR_PATTERN: 0.7, T.CAUSAL_DEPENDENCY: 0.9, T.DEAD_END: 1.2,
        T.E2E_OBSERVATION: 0.6, T.PREFETCH_PATTERN: 0.5, T.WORK_UNIT_OUTCOME: 1.0,
        T.CONTEXT_COST: 1.3,
    },
    UniversalPhase.IMPLEMENT: {
        T.GOTCHA: 1.5, T.ERROR_PATTERN: 1.3, T.CAUSAL_DEPENDENCY: 1.3, T.PATTERN: 1.2,
        T.MODULE_INSIGHT: 1.2, T.PREFETCH_PATTERN: 1.1, T.WORK_STATE: 1.0, T.DEAD_END: 1.3,
        T.WORKFLOW_RECIPE: 1.4, T.WORK_UNIT_OUTCOME: 0.9, T.E2E_OBSERVATION: 0.7,
        T.REQUIREMENT: 0.8, T.DECISION: 0.7, T.TASK_CALIBRATION: 0.5, T.PREFERENCE: 0.9,
        T.CONTEXT_COST: 0.4,
    },
    UniversalPhase.VALIDATE: {
        T.ERROR_PATTERN: 1.5, T.REQUIREMENT: 1.4, T.E2E_OBSERVATION: 1.5, T.GOTCHA: 1.2,
        T.DECISION: 1.1, T.MODULE_INSIGHT: 0.9, T.DEAD_END: 0.8, T.WORK_STATE: 0.5,
        T.PREFETCH_PATTERN: 0.3, T.CAUSAL_DEPENDENCY: 1.0, T.TASK_CALIBRATION: 0.8,
        T.WORKFLOW_RECIPE: 0.6, T.WORK_UNIT_OUTCOME: 1.1, T.CONTEXT_COST: 0.3,
    },
    UniversalPhase.REFINE: {
        T.PATTERN: 1.4, T.ERROR_PATTERN: 1.3, T.GOTCHA: 1.2, T.DEAD_END: 1.4, T.DECISION: 1.0,
        T.MODULE_INSIGHT: 1.1, T.WORK_STATE: 0.9, T.REQUIREMENT: 0.7, T.E2E_OBSERVATION: 0.8,
        T.WORKFLOW_RECIPE: 1.0, T.CAUSAL_DEPENDENCY: 1.1, T.WORK_UNIT_OUTCOME: 0.8,
        T.CONTEXT_COST: 0.4,
    },
    UniversalPhase.EXPLORE: {
        T.DECISION: 1.4, T.MODULE_INSIGHT: 1.3, T.PATTERN: 1.2, T.WORKFLOW_RECIPE: 1.1,
        T.REQUIREMENT: 1.0, T.PREFERENCE: 1.0, T.DEAD_END: 0.9, T.WORK_UNIT_OUTCOME: 1.0,
        T.GOTCHA: 0.8, T.ERROR_PATTERN: 0.7, T.E2E_OBSERVATION: 0.9, T.CAUSAL_DEPENDENCY: 1.1,
        T.TASK_CALIBRATION: 0.6, T.CONTEXT_COST: 0.5,
    },
    UniversalPhase.REFLECT: {
        T.WORK_UNIT_OUTCOME: 1.5, T.TASK_CALIBRATION: 1.4, T.DEAD_END: 1.3,
        T.ERROR_PATTERN: 1.2, T.DECISION: 1.2, T.MODULE_INSIGHT: 1.1, T.E2E_OBSERVATION: 1.0,
        T.WORK_STATE: 0.7, T.GOTCHA: 0.8, T.CONTEXT_COST: 1.3, T.WORKFLOW_RECIPE: 0.6,
        T.PREFETCH_PATTERN: 0.4,
    },
}  # fmt: skip

#: Source trust multipliers (docs/retrieval.md): what a user taught outranks what was inferred;
#: what a repository's own files said (``repository``) is nobody's word here until confirmed.
SOURCE_TRUST: Mapping[MemorySource, float] = {
    MemorySource.USER_TAUGHT: 1.4,
    MemorySource.AGENT_EXPLICIT: 1.2,
    MemorySource.QA_AUTO: 1.1,
    MemorySource.MCP_AUTO: 1.0,
    MemorySource.COMMIT_AUTO: 1.0,
    MemorySource.REPOSITORY: 1.0,
    MemorySource.OBSERVER_INFERRED: 0.85,
}

BM25 = "bm25"
DENSE = "dense"
GRAPH = "graph"
#: BM25 + dense again inside the time window a query names (engram.retrieval.timeframe)
TIME = "time"
#: Its fusion weight, on top of the query type's weights (which sum to 1).
TIME_WEIGHT = 0.4
#: ... and a memory recorded inside the window weighs this much more.
TIME_MATCH_BOOST = 1.25

#: Path weights by query type (docs/retrieval.md stage 2a). For natural-language (semantic) queries
#: the design
#: gives dense twice BM25's weight; measured on LoCoMo with the default MiniLM model, BM25
#: is the stronger path (0.68 vs 0.57 recall@10) and equal weights fuse best, so semantic
#: queries weigh them equally (docs/retrieval.md).
FUSION_WEIGHTS: Mapping[QueryType, Mapping[str, float]] = {
    QueryType.IDENTIFIER: {BM25: 0.5, GRAPH: 0.3, DENSE: 0.2},
    QueryType.SEMANTIC: {DENSE: 0.4, BM25: 0.4, GRAPH: 0.2},
    QueryType.STRUCTURAL: {GRAPH: 0.6, BM25: 0.25, DENSE: 0.15},
}

_IDENTIFIER = re.compile(
    r"[a-z0-9][A-Z]"  # camelCase
    r"|[A-Za-z0-9]_[A-Za-z0-9]"  # snake_case
    r"|[A-Za-z0-9]\.[A-Za-z]{1,4}\b"  # a file name (auth.py) or attribute (os.path)
    r"|::|->|\w\(\)"  # Rust/C++ paths, members, calls
    r"|/"  # paths
)
_STRUCTURAL = re.compile(
    r"\b(?:imports?|imported\s+by|depends?\s+on|dependenc(?:y|ies)|dependents?|callers?"
    r"|call\s+graph|calls|called\s+by|who\s+uses|used\s+by|impact|affect(?:s|ed)?"
    r"|blast\s+radius|neighbou?rs?|upstream|downstream)\b",
    re.IGNORECASE,
)


def detect_query_type(query: str) -> QueryType:
    """Identifier (code names, paths), structural (about dependencies) or semantic
    (docs/retrieval.md).

    The design reads structural intent off recent graph tool calls; a stateless server reads it off
    the words instead (``who calls``, ``depends on``, ``impact`` …).
    """
    if _IDENTIFIER.search(query):
        return QueryType.IDENTIFIER
    if _STRUCTURAL.search(query):
        return QueryType.STRUCTURAL
    return QueryType.SEMANTIC


def weighted_rrf(
    paths: Mapping[str, Sequence[str]], weights: Mapping[str, float], k: int = 60
) -> dict[str, float]:
    """Weighted reciprocal rank fusion: ``sum(weight / (k + rank))`` with 1-based ranks.

    Paths with no results simply contribute nothing; the order among the rest is the same
    whether or not the weights are renormalised, so they are not.
    """
    scores: dict[str, float] = {}
    for name, ids in paths.items():
        weight = weights.get(name, 0.0)
        if weight <= 0:
            continue
        for rank, memory_id in enumerate(ids, start=1):
            scores[memory_id] = scores.get(memory_id, 0.0) + weight / (k + rank)
    return scores


#: What the best item of a rank-only path (graph weights) is worth in normalised units:
#: about what the top hit of a 50-item BM25 or cosine list scores after normalisation.
RANK_ONLY_TOP = 3.0
#: Lower bound of a path's score spread, as a fraction of its best score.
MIN_SPREAD = 0.1


def normalise_scores(hits: Sequence[tuple[str, float]]) -> dict[str, float]:
    """``(score - min) / spread`` over one path's list: 0 for its weakest candidate.

    Unlike RRF this keeps how far ahead a strong match is (a BM25 hit on a rare name, a
    near-duplicate cosine); unlike min-max it is not decided by one outlier. The spread is
    the standard deviation, but at least a tenth of the best score, so that near-ties in a
    short list stay near-ties. A list with no spread at all (one hit, all equal) counts
    every member as 1.
    """
    if not hits:
        return {}
    values = [score for _, score in hits]
    lowest, highest = min(values), max(values)
    if highest - lowest <= 1e-12:
        return {mid: 1.0 for mid, _ in hits}
    mean = sum(values) / len(values)
    stdev = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    spread = max(stdev, MIN_SPREAD * abs(highest))
    out: dict[str, float] = {}
    for mid, score in hits:
        out.setdefault(mid, (score - lowest) / spread)
    return out


def weighted_score_fusion(
    paths: Mapping[str, Sequence[tuple[str, float]]],
    weights: Mapping[str, float],
    *,
    rank_only: set[str] | frozenset[str] = frozenset(),
) -> dict[str, float]:
    """Weighted sum of per-path normalised scores (:func:`normalise_scores`).

    Paths in ``rank_only`` carry weights rather than similarities (the graph path): their
    members get ``RANK_ONLY_TOP * weight / max weight``. On LoCoMo this fuses BM25 and dense
    clearly better than RRF (recall@10 0.73 vs 0.67, docs/retrieval.md), because RRF throws
    away how much better the first hit is than the fiftieth.
    """
    fused: dict[str, float] = {}
    for name, hits in paths.items():
        weight = weights.get(name, 0.0)
        if weight <= 0 or not hits:
            continue
        if name in rank_only:
            top = max(score for _, score in hits) or 1.0
            values = {mid: RANK_ONLY_TOP * score / top for mid, score in hits}
        else:
            values = normalise_scores(hits)
        for mid, value in values.items():
            fused[mid] = fused.get(mid, 0.0) + weight * value
    return fused


def graph_scale(
    ranked: Sequence[tuple[str, float]],
    graph_hits: Sequence[tuple[str, float]],
    strength: float,
) -> list[tuple[str, float]]:
    """Scale each ranked item by ``1 + strength * graph weight / best graph weight``.

    Without a file in the request the graph path is evidence *about* results (memories on
    files next to the best matches' files), not a match of its own: it multiplies the
    relevance an item already has (docs/retrieval.md, "relevance first"), so an item the
    query does not match gains nothing from it.
    """
    weights = dict(graph_hits)
    best = max(weights.values(), default=0.0)
    if best <= 0 or strength <= 0:
        return list(ranked)
    out = [(mid, score * (1.0 + strength * weights.get(mid, 0.0) / best)) for mid, score in ranked]
    out.sort(key=lambda item: -item[1])
    return out


def graph_neighbourhood_boost(
    ranked: Sequence[tuple[str, float]],
    files_of: Mapping[str, Sequence[str]],
    neighbour_files: Mapping[str, float] | set[str] | frozenset[str],
    *,
    top_k: int = 10,
    window: int = 50,
    strength: float = 0.3,
) -> tuple[list[tuple[str, float]], set[str]]:
    """Stage 2b (docs/retrieval.md): lift candidates ranked ``top_k+1..window`` that sit next to
    the top ones.

    ``neighbour_files`` are the graph neighbours of the top results' files. A lower-ranked
    candidate's score is multiplied by ``1 + strength * shared / max(top_files, 1)`` (the design
    adds
    ``0.3 x neighbour_count / top_files`` to normalised scores; a multiplier keeps the
    boost proportional to the candidate's own relevance, so a weak match stays weak).
    Returns the re-sorted list and the ids that were boosted.
    """
    if not ranked or not neighbour_files:
        return list(ranked), set()
    top_files = {f for memory_id, _ in ranked[:top_k] for f in files_of.get(memory_id, ())}
    denominator = max(len(top_files), 1)
    boosted: set[str] = set()
    out: list[tuple[str, float]] = []
    for position, (memory_id, score) in enumerate(ranked):
        if top_k <= position < window:
            shared = sum(1 for f in files_of.get(memory_id, ()) if f in neighbour_files)
            if shared:
                score *= 1.0 + strength * min(shared, denominator) / denominator
                boosted.add(memory_id)
        out.append((memory_id, score))
    out.sort(key=lambda item: -item[1])
    return out, boosted


@attrs.define
class WeightBreakdown:
    """The multiplicative factors applied to a memory's fused relevance, for ``reasons``."""

    phase: float = 1.0
    trust: float = 1.0
    confidence: float = 1.0
    recency: float = 1.0
    frequency: float = 1.0
    preference: float = 1.0
    tags: float = 1.0
    stale: float = 1.0

    @property
    def total(self) -> float:
        return (
            self.phase
            * self.trust
            * self.confidence
            * self.recency
            * self.frequency
            * self.preference
            * self.tags
            * self.stale
        )


#: Multiplier for a memory that is itself a question when the query is one: "Who's your
#: favourite team?" resembles "Which team does Tim support?" in words and meaning but never
#: answers it; the reply after it does (docs/retrieval.md "Questions and their replies";
#: 0.2 chosen by cross-validation over LoCoMo dev conversations).
QUESTION_PENALTY = 0.8
#: Extra share of a question's score passed to the memory recorded right after it in its
#: episode (its reply), on top of ``EPISODE_SHARE`` (same cross-validation).
REPLY_SHARE = 0.1

_TRAILING_ASIDE = re.compile(r"\s*[\[(][^\[\]()]*[\])]\s*$")
_QUESTION_START = re.compile(
    r"^\s*(?:who|whom|whose|what|when|where|which|why|how|is|are|was|were|do|does|did|"
    r"can|could|should|would|will|has|have|had)\b",
    re.IGNORECASE,
)


def is_question(text: str) -> bool:
    """Whether ``text`` ends by asking something (a trailing "[...]"/"(...)" aside ignored)."""
    stripped = text.strip()
    while True:
        shorter = _TRAILING_ASIDE.sub("", stripped)
        if shorter == stripped:
            break
        stripped = shorter
    return stripped.endswith("?")


def is_question_query(query: str) -> bool:
    """A query asked as a question: a question mark, or a question word first."""
    return query.strip().endswith("?") or _QUESTION_START.match(query) is not None


#: Multiplier for a stale memory on explicit search ("returned with a confidence penalty",
#: docs/retrieval.md).
STALE_PENALTY = 0.5
#: Multiplier when the query names one of the memory's tags (a person, a module, a topic).
TAG_MATCH_BOOST = 1.25
#: Days for the recency signal to fall to 1/e (docs/retrieval.md base hybrid score: exp(-days/30)).
RECENCY_DAYS = 30.0
#: Access count that saturates the frequency signal (log1p(n) / log1p(100), docs/retrieval.md).
FREQUENCY_SATURATION = 100


def memory_weight(
    memory: Memory,
    *,
    now: datetime,
    phase: UniversalPhase | None,
    stale: bool,
    tag_match: bool = False,
) -> WeightBreakdown:
    """Phase x trust x decayed confidence x recency x frequency x pinned/verified x staleness.

    The design (docs/retrieval.md) computes ``(0.6 cos + 0.25 recency + 0.15 freq) * phase * trust
    * confidence``. Fused
    RRF scores are rank-based and flat (1/61 vs 1/70), so additive recency would swamp
    relevance; we keep the same signals as gentle multipliers instead: recency and access
    frequency add at most +15 % and +10 %, decayed confidence scales between 0.5x and 1x,
    pinned and user-verified memories get +15 % / +10 %.
    """
    phase_w = 1.0 if phase is None else PHASE_WEIGHTS.get(phase, {}).get(memory.type, 1.0)
    trust = SOURCE_TRUST.get(memory.source, 1.0)
    confidence = 0.5 + 0.5 * memory.current_confidence(now)
    days = max(0.0, (now - memory.last_accessed_at).total_seconds() / 86400.0)
    recency = 1.0 + 0.15 * math.exp(-days / RECENCY_DAYS)
    frequency = 1.0 + 0.10 * min(
        1.0, math.log1p(max(0, memory.access_count)) / math.log1p(FREQUENCY_SATURATION)
    )
    preference = (1.15 if memory.pinned else 1.0) * (1.10 if memory.user_verified else 1.0)
    return WeightBreakdown(
        phase=phase_w,
        trust=trust,
        confidence=confidence,
        recency=recency,
        frequency=frequency,
        preference=preference,
        tags=TAG_MATCH_BOOST if tag_match else 1.0,
        stale=STALE_PENALTY if stale else 1.0,
    )
