"""An in-memory store and a tiny deterministic embedder for engine tests.

They implement the store/embed contract of docs/architecture.md so the engine's own rules
(validation, redaction, dedup, corrections) are tested fast and without LanceDB; the CLI
tests exercise the real store end to end.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta

import attrs
import numpy as np
import pytest

from engram.app import Engine
from engram.config import EmbedConfig, EngramConfig
from engram.model import Memory, MemorySource, MemoryType
from engram.workspace import Workspace


@attrs.define
class FakeFilter:
    types: Sequence[MemoryType] | None = None
    sources: Sequence[MemorySource] | None = None
    file: str | None = None
    needs_review: bool | None = None
    include_deprecated: bool = False
    include_stale: bool = True

    def accepts(self, m: Memory) -> bool:
        if self.types is not None and m.type not in self.types:
            return False
        if self.sources is not None and m.source not in self.sources:
            return False
        if self.file is not None and self.file not in (
            {a.file for a in m.anchors} | set(m.related_files)
        ):
            return False
        if self.needs_review is not None and m.needs_review != self.needs_review:
            return False
        if m.deprecated and not self.include_deprecated:
            return False
        return not (m.is_stale and not self.include_stale)


class FakeStore:
    #: a local store (``MemoryStore.remote``): no author is stamped on writes
    remote = False

    def __init__(self) -> None:
        self.memories: dict[str, Memory] = {}
        self.vectors: dict[str, np.ndarray] = {}
        self.writes = 0

    def add(self, memories, vectors=None, model_id=None):  # type: ignore[no-untyped-def]
        self.writes += 1
        for i, m in enumerate(memories):
            assert m.id not in self.memories
            self.memories[m.id] = m
            if vectors is not None:
                self.vectors[m.id] = vectors[i]

    def update(self, memories, vectors=None, model_id=None):  # type: ignore[no-untyped-def]
        self.writes += 1
        for i, m in enumerate(memories):
            assert m.id in self.memories
            self.memories[m.id] = m
            if vectors is not None:
                self.vectors[m.id] = vectors[i]

    def get(self, memory_id: str) -> Memory | None:
        return self.memories.get(memory_id)

    def ids_for_file(self, path: str) -> list[str]:
        return [m.id for m in self.list(FakeFilter(file=path, include_deprecated=True))]

    def get_many(self, ids: Sequence[str]) -> list[Memory]:
        return [self.memories[i] for i in ids if i in self.memories]

    def delete(self, ids: Sequence[str]) -> int:
        return sum(1 for i in ids if self.memories.pop(i, None) is not None)

    def list(self, flt=None, limit=None):  # type: ignore[no-untyped-def]
        flt = flt or FakeFilter()
        found = [m for m in self.memories.values() if flt.accepts(m)]
        return found[:limit] if limit is not None else found

    def keyword_search(self, query, k, flt=None):  # type: ignore[no-untyped-def]
        words = set(query.lower().split())
        scored = []
        for m in self.list(flt):
            overlap = len(words & set(m.content.lower().split()))
            if overlap:
                scored.append((m.id, float(overlap)))
        return sorted(scored, key=lambda x: -x[1])[:k]

    def vector_search(self, vector, k, flt=None, *, model_id=None):  # type: ignore[no-untyped-def]
        scored = [
            (m.id, float(np.dot(self.vectors[m.id], vector)))
            for m in self.list(flt)
            if m.id in self.vectors
        ]
        return sorted(scored, key=lambda x: -x[1])[:k]

    def vector_search_each(self, vector, k, filters, *, model_id=None):  # type: ignore[no-untyped-def]
        return [self.vector_search(vector, k, flt, model_id=model_id) for flt in filters]

    @property
    def version(self) -> int:
        """Moves with every write, as a table version does (``MemoryStore.version``)."""
        return self.writes

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """One process, no other writer (``MemoryStore.locked`` holds the writer lock)."""
        yield

    def take_writes(self) -> list[tuple[int, int]]:
        """No table versions here: the digest's version chain is MemoryStore's."""
        return []

    def count(self) -> int:
        return len(self.memories)

    def close(self) -> None:
        pass


class HashEmbedder:
    """Bag-of-words hashed into 64 dims: similar texts get similar vectors."""

    model_id = "test-hash-64"
    dim = 64

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
            norm = float(np.linalg.norm(out[row])) or 1.0
            out[row] /= norm
        return out


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2025, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kwargs: float) -> None:
        self.now += timedelta(**kwargs)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def fake_store() -> FakeStore:
    return FakeStore()


@pytest.fixture
def engine(tmp_workspace: Workspace, fake_store: FakeStore, clock: Clock) -> Engine:
    """An engine on a temp workspace with the in-memory store and no embedding model."""
    config = EngramConfig(embed=EmbedConfig(model="none"))
    return Engine(tmp_workspace, config, store=fake_store, clock=clock, filter_factory=FakeFilter)


@pytest.fixture
def dense_engine(tmp_workspace: Workspace, fake_store: FakeStore, clock: Clock) -> Engine:
    """Same, with the hashed bag-of-words embedder so cosine dedup can be tested."""
    import importlib

    # the engine needs engram.embed.memory_embedding_text for the contextual text
    try:
        module = importlib.import_module("engram.embed")
    except ModuleNotFoundError:
        pytest.skip("engram.embed not available yet")
    if not hasattr(module, "memory_embedding_text"):
        pytest.skip("engram.embed.memory_embedding_text not available yet")
    return Engine(
        tmp_workspace,
        EngramConfig(),
        store=fake_store,
        embedder=HashEmbedder(),
        clock=clock,
        filter_factory=FakeFilter,
    )
