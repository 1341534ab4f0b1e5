"""Embedder implementations: fastembed ONNX models, and a caching wrapper."""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from engram.embed.cache import EmbeddingCache

log = logging.getLogger(__name__)


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of shape ``(len(texts), dim)``.

    ``model_id`` names the vector space: vectors of different ids are never compared.
    Implementations are thread-safe (the engine embeds from a worker thread).
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...


def l2_normalise(vectors: npt.ArrayLike) -> npt.NDArray[np.float32]:
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: npt.NDArray[np.float32] = (matrix / norms).astype(np.float32, copy=False)
    return result


#: Characters per batch (texts sorted by length, each counted up to ``TRUNCATE_CHARS``).
#: ONNX Runtime keeps the buffers of its largest batch: 300 code chunks of ~600 characters
#: peaked at 1,022 MB in batches of 32 and at 432 MB within this budget, at 32 vs 37
#: texts/s; short memories (70 characters) still go 32 at a time (~460 texts/s).
BATCH_CHAR_BUDGET = 4096
#: The model reads at most ~256 tokens; longer text costs no more than this much.
TRUNCATE_CHARS = 1024


def length_batches(texts: Sequence[str], max_batch: int) -> list[list[int]]:
    """Indices of ``texts`` grouped by similar length, each group within the char budget.

    Sorting by length also cuts padding (a batch is as long as its longest text).
    """
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for index in order:
        size = max(1, min(len(texts[index]), TRUNCATE_CHARS))
        grown = max(longest, size) * (len(current) + 1)
        if current and (len(current) >= max_batch or grown > BATCH_CHAR_BUDGET):
            batches.append(current)
            current, longest = [], 0
        current.append(index)
        longest = max(longest, size)
    if current:
        batches.append(current)
    return batches


class TextEmbeddingModel(Protocol):
    """What the embedder calls on a fastembed ``TextEmbedding`` (fastembed has no types)."""

    def embed(
        self, documents: list[str], batch_size: int = ...
    ) -> Iterable[npt.NDArray[np.number]]: ...


class FastEmbedEmbedder:
    """A fastembed ``TextEmbedding`` behind a lock, embedding in length-bounded batches.

    ``query_model``, when given, is a second session over the same model files (built with
    fewer intra-op threads, ``embed.query_threads``) that embeds calls of a single text
    behind its own lock: a search's query neither pays for every core's spinning threads
    nor waits behind a background batch. Both sessions run the same graph, so the vectors
    agree (tests/embed).

    ``reload``, when given, builds the batch session again: :meth:`release_batch_session`
    drops it once a run of batches is done (an index: onnxruntime's arena keeps the
    largest batch's memory, ~250 MB, for as long as the session lives), and the next
    batch builds it again (about a second).
    """

    def __init__(
        self,
        model: TextEmbeddingModel,
        model_id: str,
        dim: int,
        batch_size: int = 32,
        query_model: TextEmbeddingModel | None = None,
        reload: Callable[[], TextEmbeddingModel] | None = None,
    ) -> None:
        self._model: TextEmbeddingModel | None = model
        self._reload = reload
        self._model_id = model_id
        self._dim = dim
        self._batch_size = max(1, batch_size)
        self._lock = threading.Lock()
        self._query_model = query_model
        self._query_lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def has_query_session(self) -> bool:
        """Whether single texts get their own session (``embed.query_threads`` > 0)."""
        return self._query_model is not None

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self._dim), np.float32)
        if len(texts) == 1 and self._query_model is not None:
            with self._query_lock:
                vectors = list(self._query_model.embed([texts[0]], batch_size=1))
            return l2_normalise(np.vstack(vectors))
        out = np.zeros((len(texts), self._dim), np.float32)
        with self._lock:  # one ONNX session; onnxruntime already uses every core
            model = self._model
            if model is None:  # released after the last run of batches
                assert self._reload is not None
                model = self._model = self._reload()
            for batch in length_batches(texts, self._batch_size):
                chunk = [texts[i] for i in batch]
                vectors = list(model.embed(chunk, batch_size=len(chunk)))
                out[batch] = np.vstack(vectors)
        return l2_normalise(out)

    @property
    def batch_session_loaded(self) -> bool:
        """Whether the batch session is in memory (False after :meth:`release_batch_session`)."""
        return self._model is not None

    def release_batch_session(self) -> bool:
        """Let the batch session leave memory; the next batch builds it again.

        After an index the workspace engine held the session, and the arena of its largest
        batch, until its idle exit ten minutes later: 748 MB, 418 MB without it (docs/engine.md,
        "Memory"). Searches keep their own single-text session. Whether it was dropped.
        """
        if self._reload is None:
            return False
        with self._lock:  # after a batch in flight
            released, self._model = self._model is not None, None
        if released:
            gc.collect()  # the session's arena goes with its last reference
        return released


class CachedEmbedder:
    """Wraps an embedder with an :class:`EmbeddingCache`: each text is embedded once."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self.misses = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def release_batch_session(self) -> bool:
        """:meth:`FastEmbedEmbedder.release_batch_session` of the model it wraps."""
        return release_batch_session(self.inner)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), np.float32)
        if not texts:
            return out
        cached = self.cache.get_many(self.model_id, texts, self.dim)
        missing_texts: dict[str, list[int]] = {}
        for i, (text, vector) in enumerate(zip(texts, cached, strict=True)):
            if vector is None:
                missing_texts.setdefault(text, []).append(i)
            else:
                out[i] = vector
        if missing_texts:
            unique = list(missing_texts)
            fresh = self.inner.embed(unique)
            self.misses += len(unique)
            for text, vector in zip(unique, fresh, strict=True):
                for i in missing_texts[text]:
                    out[i] = vector
            self.cache.put_many(self.model_id, unique, fresh)
        return out


def release_batch_session(embedder: Embedder) -> bool:
    """Drop ``embedder``'s batch session when it has one that can be built again."""
    if isinstance(embedder, FastEmbedEmbedder | CachedEmbedder):
        return embedder.release_batch_session()
    return False
