"""engram.bm25: the one BM25 (bm25s underneath) scores like Okapi BM25 by hand."""

from __future__ import annotations

import math

import pytest

from engram.bm25 import K1, B, BM25Index


def okapi(tf: int, df: int, n: int, length: int, average: float) -> float:
    idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
    return idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / average))


DOCS = [["parse", "config", "file"], ["parse", "parse", "json"], ["write", "file"], []]


def test_scores_are_okapi_bm25() -> None:
    index = BM25Index(DOCS)
    average = sum(map(len, DOCS)) / len(DOCS)
    scores = index.scores(["parse", "file", "unknown"])
    expected = [
        okapi(1, 2, 4, 3, average) + okapi(1, 2, 4, 3, average),
        okapi(2, 2, 4, 3, average),
        okapi(1, 2, 4, 2, average),
        0.0,
    ]
    assert list(scores) == pytest.approx(expected, rel=1e-5)
    assert "parse" in index and "unknown" not in index and "" not in index
    assert sorted(index.vocabulary) == ["config", "file", "json", "parse", "write"]


def test_repeats_and_weights() -> None:
    index = BM25Index(DOCS)
    once = index.scores(["json"])
    assert list(index.scores(["json", "json"])) == pytest.approx(list(2 * once))
    weighted = index.scores({"json": 0.5, "write": 1.0})
    assert list(weighted) == pytest.approx(list(0.5 * once + index.scores(["write"])))


def test_empty_corpora_score_zero() -> None:
    assert BM25Index([]).scores(["a"]).shape == (0,)
    assert list(BM25Index([[], []]).scores(["a"])) == [0.0, 0.0]
