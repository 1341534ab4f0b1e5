"""Dated queries on a real store: the time path's dense hits come from the same product as
the store-wide ones (``MemoryStore.vector_search_each``), and that changes no result."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt

from engram.config import RetrievalConfig
from engram.model import Memory, MemorySource, MemoryType
from engram.retrieval import Retriever, SearchHit, SearchRequest
from engram.store import MemoryFilter, MemoryStore
from engram.workspace import Workspace

DIM = 48
NOW = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "ri", "so", "te") for b in "bdgkmn"]


class LookupEmbedder:
    """The seeded vector of each query text (random vectors: the store has no model)."""

    model_id = "seeded-48"
    dim = DIM

    def __init__(self, table: dict[str, npt.NDArray[np.float32]]) -> None:
        self.table = table

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.vstack([self.table[t] for t in texts]).astype(np.float32)


class RecordedKeywords:
    """The store with each keyword search answered once and replayed after.

    LanceDB's BM25 orders equal scores differently from one query to the next; replaying
    its answers leaves the dense paths, the part that changed, as the only difference.
    """

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.answers: dict[tuple[str, int, str], list[tuple[str, float]]] = {}

    def get_many(self, ids: Sequence[str]) -> list[Memory]:
        return self.store.get_many(ids)

    def ids_for_file(self, path: str) -> list[str]:
        return self.store.ids_for_file(path)

    def keyword_search(
        self, query: str, k: int, flt: MemoryFilter | None = None
    ) -> list[tuple[str, float]]:
        key = (query, k, repr(flt))
        if key not in self.answers:
            self.answers[key] = self.store.keyword_search(query, k, flt)
        return list(self.answers[key])

    def vector_search(
        self,
        vector: npt.NDArray[np.float32],
        k: int,
        flt: MemoryFilter | None = None,
        *,
        model_id: str | None = None,
    ) -> list[tuple[str, float]]:
        return self.store.vector_search(vector, k, flt, model_id=model_id)

    def vector_search_each(
        self,
        vector: npt.NDArray[np.float32],
        k: int,
        filters: Sequence[MemoryFilter | None],
        *,
        model_id: str | None = None,
    ) -> list[list[tuple[str, float]]]:
        return self.store.vector_search_each(vector, k, filters, model_id=model_id)


class SearchPerFilter(RecordedKeywords):
    """The path before one product served both: a separate vector search per filter (the
    window's rows gathered and scored on their own)."""

    def vector_search_each(
        self,
        vector: npt.NDArray[np.float32],
        k: int,
        filters: Sequence[MemoryFilter | None],
        *,
        model_id: str | None = None,
    ) -> list[list[tuple[str, float]]]:
        return [self.store.vector_search(vector, k, f, model_id=model_id) for f in filters]


def seeded(
    store: MemoryStore, n: int = 3000
) -> tuple[list[str], dict[str, npt.NDArray[np.float32]]]:
    """``n`` memories over two years with Zipf-like words and random vectors; dated queries."""
    rng = np.random.default_rng(17)
    vectors = rng.normal(size=(n, DIM)).astype(np.float32)
    weights = 1.0 / np.arange(1, len(WORDS) + 1)
    weights /= weights.sum()
    types, sources = list(MemoryType), list(MemorySource)
    memories = [
        Memory(
            " ".join(rng.choice(WORDS, size=int(rng.integers(6, 20)), p=weights)),
            type=types[i % len(types)],
            source=sources[i % len(sources)],
            valid_from=NOW - timedelta(days=float(rng.uniform(0, 730))),
        )
        for i in range(n)
    ]
    store.add(memories, vectors, LookupEmbedder.model_id)
    dates = ["on 5 March 2025", "in March 2025", "in 2025", "in June", "on 3 June", "last month"]
    texts = [
        f"{' '.join(rng.choice(WORDS, size=3, p=weights))} {dates[i % len(dates)]}"
        for i in range(60)
    ]
    return texts, {t: rng.normal(size=DIM).astype(np.float32) for t in texts}


def shown(hits: list[SearchHit]) -> list[tuple[str, float, list[str]]]:
    return [(h.memory.id, h.score, h.reasons) for h in hits]


def test_dated_queries_rank_as_with_one_vector_search_per_filter(
    tmp_workspace: Workspace,
) -> None:
    store = MemoryStore(tmp_workspace)
    try:
        texts, table = seeded(store)
        config = RetrievalConfig()
        shared = RecordedKeywords(store)
        separate = SearchPerFilter(store)
        separate.answers = shared.answers  # both replay the same BM25 answers
        new = Retriever(shared, LookupEmbedder(table), config, clock=lambda: NOW)
        old = Retriever(separate, LookupEmbedder(table), config, clock=lambda: NOW)
        dated = 0
        for text in texts:
            hits = new.search(SearchRequest(text, k=10))
            assert hits, text
            assert shown(hits) == shown(old.search(SearchRequest(text, k=10))), text
            dated += any(r.startswith("time #") for h in hits for r in h.reasons)
        assert dated >= len(texts) // 2  # the time path took part, not only the main paths
    finally:
        store.close()
