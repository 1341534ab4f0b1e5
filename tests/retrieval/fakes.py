"""Contract-following fakes for retrieval tests: a store, an embedder and a code graph.

The store ranks keywords by summed IDF of matched query words and vectors by exact cosine,
and honours :class:`engram.store.MemoryFilter`, which is all the retriever relies on.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from engram.model import Memory
from engram.store import MemoryFilter

_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def files_of(memory: Memory) -> list[str]:
    return list(dict.fromkeys([a.file for a in memory.anchors] + list(memory.related_files)))


def accepts(flt: MemoryFilter | None, m: Memory) -> bool:
    flt = flt or MemoryFilter()
    if flt.types is not None and m.type not in flt.types:
        return False
    if flt.sources is not None and m.source not in flt.sources:
        return False
    if flt.file is not None and flt.file not in files_of(m):
        return False
    if flt.needs_review is not None and m.needs_review != flt.needs_review:
        return False
    if flt.valid_within is not None and not flt.valid_within.contains(m.valid_from):
        return False
    if not flt.include_deprecated and m.deprecated:
        return False
    return flt.include_stale or m.stale_at is None


class HashEmbedder:
    """Bag-of-words hashed into 64 dimensions: texts sharing words are close."""

    model_id = "fake-hash-64"
    dim = 64

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, text in enumerate(texts):
            for word in words(text):
                h = int(hashlib.md5(word.encode()).hexdigest(), 16)
                out[i, h % self.dim] += 1.0
            norm = float(np.linalg.norm(out[i])) or 1.0
            out[i] /= norm
        return out


class FakeStore:
    def __init__(self, embedder: HashEmbedder | None = None) -> None:
        self.memories: dict[str, Memory] = {}
        self.vectors: dict[str, npt.NDArray[np.float32]] = {}
        #: the model each vector was embedded with
        self.model_of: dict[str, str] = {}
        self.embedder = embedder
        self.keyword_calls = 0

    def add(self, memories: Sequence[Memory]) -> None:
        for m in memories:
            self.memories[m.id] = m
            if self.embedder is not None:
                self.vectors[m.id] = self.embedder.embed([m.content])[0]
                self.model_of[m.id] = self.embedder.model_id

    def get_many(self, ids: Sequence[str]) -> list[Memory]:
        return [self.memories[i] for i in ids if i in self.memories]

    def ids_for_file(self, path: str) -> list[str]:
        return [m.id for m in self.memories.values() if path in files_of(m)]

    def list(self, flt: MemoryFilter | None = None, limit: int | None = None) -> list[Memory]:
        out = [m for m in self.memories.values() if accepts(flt, m)]
        return out[:limit] if limit is not None else out

    def keyword_search(
        self, query: str, k: int, flt: MemoryFilter | None = None
    ) -> list[tuple[str, float]]:
        self.keyword_calls += 1
        terms = set(words(query))
        docs = {
            mid: set(words(m.content + " " + " ".join(m.tags))) for mid, m in self.memories.items()
        }
        n = len(docs) or 1
        df = {t: sum(1 for d in docs.values() if t in d) for t in terms}
        scored = []
        for mid, doc in docs.items():
            if not accepts(flt, self.memories[mid]):
                continue
            score = sum(math.log(1 + n / df[t]) for t in terms if t in doc)
            if score > 0:
                scored.append((mid, score))
        scored.sort(key=lambda x: (-x[1], x[0]))
        return scored[:k]

    def vector_search(
        self,
        vector: npt.NDArray[np.float32],
        k: int,
        flt: MemoryFilter | None = None,
        *,
        model_id: str | None = None,
    ) -> list[tuple[str, float]]:
        """Exact cosine; one model's vectors only, as ``MemoryStore.vector_search``."""
        scored = [
            (mid, float(vec @ vector))
            for mid, vec in self.vectors.items()
            if accepts(flt, self.memories[mid])
            and (model_id is None or self.model_of[mid] == model_id)
        ]
        scored.sort(key=lambda x: (-x[1], x[0]))
        return scored[:k]

    def vector_search_each(
        self,
        vector: npt.NDArray[np.float32],
        k: int,
        filters: Sequence[MemoryFilter | None],
        *,
        model_id: str | None = None,
    ) -> list[list[tuple[str, float]]]:
        return [self.vector_search(vector, k, flt, model_id=model_id) for flt in filters]


class FakeGraph:
    """An undirected file graph given as edges."""

    def __init__(self, edges: Sequence[tuple[str, str]]) -> None:
        self.adjacent: dict[str, set[str]] = {}
        for a, b in edges:
            self.adjacent.setdefault(a, set()).add(b)
            self.adjacent.setdefault(b, set()).add(a)
        self.calls: list[list[str]] = []

    def neighbours(self, files: Sequence[str], depth: int = 1) -> dict[str, float]:
        self.calls.append(list(files))
        out: dict[str, float] = {}
        for f in files:
            for n in self.adjacent.get(f, ()):
                if n not in files:
                    out[n] = 1.0
        return out
