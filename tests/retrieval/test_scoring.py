"""Each ranking stage on its own: query types, RRF arithmetic, weights, decay, boost."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engram.model import Memory, MemorySource, MemoryType, UniversalPhase
from engram.retrieval import (
    FUSION_WEIGHTS,
    PHASE_WEIGHTS,
    SOURCE_TRUST,
    QueryType,
    detect_query_type,
    graph_neighbourhood_boost,
    graph_scale,
    memory_weight,
    normalise_scores,
    weighted_rrf,
    weighted_score_fusion,
)
from engram.retrieval.scoring import STALE_PENALTY

NOW = datetime(2025, 6, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("parseConfig raises on empty file", QueryType.IDENTIFIER),
        ("why does load_config ignore env", QueryType.IDENTIFIER),
        ("src/auth/jwt.py expiry", QueryType.IDENTIFIER),
        ("what breaks in auth.py", QueryType.IDENTIFIER),
        ("Engine::open fails", QueryType.IDENTIFIER),
        ("who calls the billing module", QueryType.STRUCTURAL),
        ("what depends on the cache", QueryType.STRUCTURAL),
        ("impact of changing the schema", QueryType.STRUCTURAL),
        ("how do we handle rate limits", QueryType.SEMANTIC),
        ("When did Caroline go to the support group?", QueryType.SEMANTIC),
        ("", QueryType.SEMANTIC),
    ],
)
def test_detect_query_type(query: str, expected: QueryType) -> None:
    assert detect_query_type(query) is expected


def test_fusion_weights() -> None:
    assert FUSION_WEIGHTS[QueryType.IDENTIFIER] == {"bm25": 0.5, "graph": 0.3, "dense": 0.2}
    # semantic: equal BM25/dense weights, measured on LoCoMo (docs/retrieval.md)
    assert FUSION_WEIGHTS[QueryType.SEMANTIC] == {"dense": 0.4, "bm25": 0.4, "graph": 0.2}
    assert FUSION_WEIGHTS[QueryType.STRUCTURAL] == {"graph": 0.6, "bm25": 0.25, "dense": 0.15}
    for weights in FUSION_WEIGHTS.values():
        assert sum(weights.values()) == pytest.approx(1.0)


def test_weighted_rrf_arithmetic() -> None:
    scores = weighted_rrf(
        {"bm25": ["a", "b"], "dense": ["b", "c"], "graph": []},
        {"bm25": 0.5, "dense": 0.2, "graph": 0.3},
        k=60,
    )
    assert scores["a"] == pytest.approx(0.5 / 61)
    assert scores["b"] == pytest.approx(0.5 / 62 + 0.2 / 61)
    assert scores["c"] == pytest.approx(0.2 / 62)
    assert set(scores) == {"a", "b", "c"}


def test_score_fusion_normalises_each_path() -> None:
    bm25 = [("a", 12.0), ("b", 6.0), ("c", 4.0)]
    dense = [("b", 0.9), ("d", 0.5)]
    fused = weighted_score_fusion({"bm25": bm25, "dense": dense}, {"bm25": 0.5, "dense": 0.5})
    values = normalise_scores(bm25)
    assert values["c"] == 0.0 and values["a"] > values["b"] > 0
    assert fused["a"] == pytest.approx(0.5 * values["a"])
    assert fused["b"] == pytest.approx(0.5 * values["b"] + 0.5 * normalise_scores(dense)["b"])
    assert fused["d"] == 0.0  # the weakest of its only list
    # a near-tie stays a near-tie (spread is at least a tenth of the best score)
    tie = normalise_scores([("x", 10.0), ("y", 9.99)])
    assert tie["x"] - tie["y"] < 0.02
    # no spread: every member counts as 1; rank-only paths scale their weights
    assert normalise_scores([("x", 3.0)]) == {"x": 1.0}
    graph = weighted_score_fusion(
        {"graph": [("g", 2.0), ("h", 1.0)]}, {"graph": 1.0}, rank_only={"graph"}
    )
    assert graph == {"g": pytest.approx(3.0), "h": pytest.approx(1.5)}


def test_weighted_rrf_ignores_unweighted_paths() -> None:
    assert weighted_rrf({"other": ["x"]}, {"bm25": 1.0}) == {}


def test_phase_weights_are_the_v3_table() -> None:
    assert set(PHASE_WEIGHTS) == set(UniversalPhase)
    implement = PHASE_WEIGHTS[UniversalPhase.IMPLEMENT]
    assert implement[MemoryType.GOTCHA] == 1.5
    assert implement[MemoryType.CONTEXT_COST] == 0.4
    assert PHASE_WEIGHTS[UniversalPhase.DEFINE][MemoryType.REQUIREMENT] == 1.5
    assert PHASE_WEIGHTS[UniversalPhase.VALIDATE][MemoryType.E2E_OBSERVATION] == 1.5
    assert PHASE_WEIGHTS[UniversalPhase.REFLECT][MemoryType.WORK_UNIT_OUTCOME] == 1.5
    assert len(implement) == 16  # every type is weighed while implementing


def test_source_trust_order() -> None:
    assert set(SOURCE_TRUST) == set(MemorySource)
    assert SOURCE_TRUST[MemorySource.USER_TAUGHT] > SOURCE_TRUST[MemorySource.AGENT_EXPLICIT]
    assert SOURCE_TRUST[MemorySource.OBSERVER_INFERRED] == 0.85


def _memory(**kw: object) -> Memory:
    base: dict[str, object] = {
        "content": "x",
        "created_at": NOW,
        "updated_at": NOW,
        "last_accessed_at": NOW,
        "valid_from": NOW - timedelta(days=1),
    }
    base.update(kw)
    return Memory(**base)  # type: ignore[arg-type]


def test_memory_weight_phase_and_trust() -> None:
    gotcha = _memory(type=MemoryType.GOTCHA, source=MemorySource.OBSERVER_INFERRED)
    w = memory_weight(gotcha, now=NOW, phase=UniversalPhase.IMPLEMENT, stale=False)
    assert w.phase == 1.5 and w.trust == 0.85
    assert memory_weight(gotcha, now=NOW, phase=None, stale=False).phase == 1.0
    # a type the phase table leaves out weighs 1.0
    pref = _memory(type=MemoryType.PREFERENCE)
    assert memory_weight(pref, now=NOW, phase=UniversalPhase.VALIDATE, stale=False).phase == 1.0


def test_confidence_decays_by_half_life() -> None:
    fresh = _memory(type=MemoryType.GOTCHA, confidence=0.8)
    old = _memory(type=MemoryType.GOTCHA, confidence=0.8, last_accessed_at=NOW - timedelta(days=60))
    decision = _memory(
        type=MemoryType.DECISION, confidence=0.8, last_accessed_at=NOW - timedelta(days=600)
    )
    w_fresh = memory_weight(fresh, now=NOW, phase=None, stale=False)
    w_old = memory_weight(old, now=NOW, phase=None, stale=False)
    assert old.current_confidence(NOW) == pytest.approx(0.4)  # one half-life (60 days)
    assert w_fresh.confidence == pytest.approx(0.5 + 0.5 * 0.8)
    assert w_old.confidence == pytest.approx(0.5 + 0.5 * 0.4)
    assert w_old.recency < w_fresh.recency
    # decisions never decay; pinned memories never decay
    assert memory_weight(decision, now=NOW, phase=None, stale=False).confidence == pytest.approx(
        0.9
    )
    pinned = _memory(
        type=MemoryType.GOTCHA,
        confidence=0.8,
        pinned=True,
        last_accessed_at=NOW - timedelta(days=600),
    )
    w_pinned = memory_weight(pinned, now=NOW, phase=None, stale=False)
    assert w_pinned.confidence == pytest.approx(0.9)
    assert w_pinned.preference == pytest.approx(1.15)


def test_access_frequency_and_verification_raise_weight() -> None:
    plain = memory_weight(_memory(), now=NOW, phase=None, stale=False)
    used = memory_weight(_memory(access_count=100), now=NOW, phase=None, stale=False)
    verified = memory_weight(_memory(user_verified=True), now=NOW, phase=None, stale=False)
    assert used.frequency == pytest.approx(1.10) and plain.frequency == 1.0
    assert verified.total > plain.total


def test_stale_penalty() -> None:
    w = memory_weight(_memory(), now=NOW, phase=None, stale=True)
    assert w.stale == STALE_PENALTY
    assert w.total == pytest.approx(
        memory_weight(_memory(), now=NOW, phase=None, stale=False).total * 0.5
    )


def test_graph_neighbourhood_boost_lifts_only_lower_ranks() -> None:
    ranked = [(f"m{i}", 1.0 - i * 0.01) for i in range(30)]
    files = {f"m{i}": [f"f{i}.py"] for i in range(30)}
    files["m0"] = ["core.py"]
    # m25 sits on a neighbour of the top results' files, m3 too (but it is already top 10)
    neighbours = {"f25.py": 1.0, "f3.py": 1.0}
    out, boosted = graph_neighbourhood_boost(ranked, files, neighbours)
    assert boosted == {"m25"}
    scores = dict(out)
    top_files = 10
    # a multiplier on its own relevance (relevance first, docs/retrieval.md)
    assert scores["m25"] == pytest.approx(0.75 * (1 + 0.3 * 1 / top_files))
    assert scores["m3"] == pytest.approx(0.97)
    assert [mid for mid, _ in out] == sorted(scores, key=lambda m: -scores[m])


def test_graph_boost_without_neighbours_is_identity() -> None:
    ranked = [("a", 1.0), ("b", 0.5)]
    assert graph_neighbourhood_boost(ranked, {}, {}) == (ranked, set())


def test_graph_scale_multiplies_relevance_and_gives_nothing_to_zero() -> None:
    ranked = [("a", 1.0), ("b", 0.5), ("c", 0.0)]
    out = dict(graph_scale(ranked, [("b", 2.0), ("c", 2.0)], 0.3))
    assert out == {"a": 1.0, "b": pytest.approx(0.65), "c": 0.0}
