"""The learned re-ranker: its features, its re-ordering, and the shipped weights."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from engram.config import RetrievalConfig
from engram.model import Memory
from engram.retrieval import Retriever, SearchRequest
from engram.retrieval.rerank import (
    FEATURES,
    RERANK_WINDOW,
    Candidate,
    RerankModel,
    candidate_features,
    default_model,
    rerank_order,
)
from engram.retrieval.scoring import BM25, DENSE

from .fakes import FakeStore, HashEmbedder
from .test_retriever import NOW, mem
from .test_scripts import ROOT, tiny_locomo


def column(name: str) -> int:
    return FEATURES.index(name)


def only(name: str, weight: float = 1.0) -> RerankModel:
    """A model that ranks by one feature alone."""
    return RerankModel(features=(name,), mean=(0.0,), scale=(1.0,), weights=(weight,))


def test_features_describe_the_query_and_the_memory() -> None:
    answer = Memory(
        content="Ana adopted two kittens in March 2023.", tags=["speaker:Ana"], id="m-a"
    )
    question = Memory(content="Did you adopt anything?", id="m-q", extra={"adjacent": ["m-a"]})
    other = Memory(content="The weather was fine.", id="m-o")
    cands = [
        Candidate(memory=question, score=1.0, tag_match=False),
        Candidate(memory=answer, score=0.5, tag_match=True),
        Candidate(memory=other, score=0.25, tag_match=False),
    ]
    scores = {BM25: {"m-q": 4.0, "m-a": 2.0}, DENSE: {"m-a": 0.6, "m-o": 0.2}}
    ranks = {BM25: {"m-q": 1, "m-a": 2}, DENSE: {"m-a": 1, "m-o": 2}}
    x = candidate_features("When did Ana adopt kittens?", cands, scores, ranks)
    assert x.shape == (3, len(FEATURES))
    q, a, o = x
    assert list(x[:, column("score")]) == [1.0, 0.5, 0.25]
    assert a[column("bm25")] == 0.5 and a[column("bm25_rr")] == 0.5
    assert q[column("dense")] == 0.2  # not in the dense list: its lowest cosine
    assert a[column("both")] == 1.0 and q[column("both")] == 0.0
    assert q[column("question")] == 1.0 and a[column("question")] == 0.0
    assert a[column("overlap")] == 1.0  # ana, adopt(ed), kitten(s)
    assert o[column("overlap")] == 0.0
    assert a[column("names")] == 1.0 and o[column("names")] == 0.0
    assert a[column("tag")] == 1.0
    assert a[column("when_time")] == 1.0 and o[column("when_time")] == 0.0
    assert q[column("neighbour")] == 0.5  # its neighbour m-a scored half the best


def test_rerank_reorders_the_window_and_keeps_the_rest_in_place() -> None:
    n = RERANK_WINDOW + 3
    cands = [
        Candidate(memory=Memory(content=f"note {i}", id=f"m-{i}"), score=1.0 / (i + 1),
                  tag_match=False)
        for i in range(n)
    ]  # fmt: skip
    order = rerank_order(only("log_rank"), "a query", cands, {}, {})
    assert order[:RERANK_WINDOW] == list(range(RERANK_WINDOW))[::-1]
    assert order[RERANK_WINDOW:] == [RERANK_WINDOW, RERANK_WINDOW + 1, RERANK_WINDOW + 2]
    same = rerank_order(only("score"), "a query", cands, {}, {})
    assert same == list(range(n))


def test_retriever_applies_the_model_and_hands_scores_out_in_the_new_order() -> None:
    memories = [
        mem("deploy failed because the cache was cold", id="m-1"),
        mem("the deploy script retries twice", id="m-2"),
        mem("deploy on fridays is forbidden by the team", id="m-3"),
    ]
    emb = HashEmbedder()
    store = FakeStore(emb)
    store.add(memories)
    plain = Retriever(store, emb, RetrievalConfig(), clock=lambda: NOW, rerank=None)  # type: ignore[arg-type]
    flipped = Retriever(
        store,  # type: ignore[arg-type]
        emb,
        RetrievalConfig(),
        clock=lambda: NOW,
        rerank=only("log_rank"),  # the pipeline's last first
    )
    request = SearchRequest(query="deploy", k=10)
    before = plain.search(request)
    after = flipped.search(request)
    assert len(before) == 3
    assert [h.memory.id for h in after] == [h.memory.id for h in before][::-1]
    assert [h.score for h in after] == [h.score for h in before]  # same scale, new order


def test_the_retrieval_rerank_setting_turns_the_shipped_model_off() -> None:
    """``retrieval.rerank = false`` keeps the pipeline's own order: no model is loaded, and
    the results equal those of a retriever built without one. An explicit model still wins
    (the evaluation scripts pass one)."""
    memories = [mem(f"deploy note {i} about the cache", id=f"m-{i}") for i in range(5)]
    emb = HashEmbedder()
    store = FakeStore(emb)
    store.add(memories)
    on = Retriever(store, emb, RetrievalConfig(), clock=lambda: NOW)  # type: ignore[arg-type]
    off = Retriever(store, emb, RetrievalConfig(rerank=False), clock=lambda: NOW)  # type: ignore[arg-type]
    plain = Retriever(store, emb, RetrievalConfig(), clock=lambda: NOW, rerank=None)  # type: ignore[arg-type]
    assert on.rerank_model is not None and off.rerank_model is None
    request = SearchRequest(query="deploy cache", k=10)
    assert [h.memory.id for h in off.search(request)] == [
        h.memory.id for h in plain.search(request)
    ]
    explicit = Retriever(
        store,  # type: ignore[arg-type]
        emb,
        RetrievalConfig(rerank=False),
        clock=lambda: NOW,
        rerank=only("log_rank"),
    )
    assert explicit.rerank_model is not None


def test_shipped_weights_are_a_model_over_known_features() -> None:
    model = default_model()
    assert model is not None
    assert set(model.features) <= set(FEATURES)
    assert len(model.mean) == len(model.scale) == len(model.weights) == len(model.features)
    assert all(s > 0 for s in model.scale)
    x = np.zeros((2, len(FEATURES)))
    x[0, column("score")] = 1.0  # the pipeline's best ...
    x[1, column("score")] = 0.1
    x[1, column("log_rank")] = np.log1p(20)  # ... against its 21st, otherwise alike
    scores = model.scores(x)
    assert scores[0] > scores[1]


def test_fit_script_cross_validates_and_writes_weights(tmp_path: Path) -> None:
    data = tmp_path / "tiny"
    data.mkdir()
    tiny_locomo(data)
    for name in ("2", "3"):  # three folds
        (data / f"{name}.json").write_text((data / "1.json").read_text())
    weights = tmp_path / "weights.py"
    proc = subprocess.run(
        [
            sys.executable, str(ROOT / "scripts/eval/rerank_fit.py"), "--data", str(data),
            "--json", "--write", "--weights-file", str(weights),
            "--cache", str(tmp_path / "cache.sqlite"),
        ],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(result["folds"]) == {"1", "2", "3"}
    for fold in result["folds"].values():
        assert 0.0 <= fold["baseline"] <= fold["in_window"] <= 1.0
        assert 0.0 <= fold["reranked"] <= fold["in_window"]
    assert result["baseline"]["fold_mean"] == 1.0  # a tiny store: every answer is in the top 10
    space: dict[str, object] = {}
    exec(weights.read_text(), space)
    assert space["FEATURES"] == tuple(result["features"])
    assert len(space["WEIGHTS"]) == len(result["features"])  # type: ignore[arg-type]
