"""The embedding model's batch session leaves memory after an index and comes back lazily.

The workspace engine kept it, and onnxruntime's arena of its largest batch, until its idle
exit: `engram status` said 746-760 MB after `engram index` of a 57-file repository."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import numpy as np
import numpy.typing as npt
from tests.conftest import git

from engram.app import Engine
from engram.app.indexing import run_index
from engram.config import EngramConfig
from engram.embed import CachedEmbedder, EmbeddingCache
from engram.embed.embedders import FastEmbedEmbedder, release_batch_session
from engram.workspace import Workspace


class _Model:
    """A stand-in ``TextEmbedding`` that records the calls it gets."""

    def __init__(self, value: float) -> None:
        self.value = value
        self.calls: list[list[str]] = []

    def embed(self, documents: list[str], batch_size: int = 32) -> list[npt.NDArray[np.float32]]:
        self.calls.append(list(documents))
        return [np.full(4, self.value, np.float32) for _ in documents]


def _embedder() -> tuple[FastEmbedEmbedder, _Model, list[_Model]]:
    built: list[_Model] = []

    def reload() -> _Model:
        built.append(_Model(1.0))
        return built[-1]

    first, query = _Model(1.0), _Model(2.0)
    return FastEmbedEmbedder(first, "m", 4, query_model=query, reload=reload), first, built


def test_the_batch_session_leaves_and_the_next_batch_builds_it_again() -> None:
    embedder, first, built = _embedder()
    before = embedder.embed(["a", "bb"])
    gone = weakref.ref(first)
    del first
    assert embedder.release_batch_session() and not embedder.batch_session_loaded
    gc.collect()
    assert gone() is None, "nothing else holds the released session"
    assert not embedder.release_batch_session()  # released once
    embedder.embed(["a search"])  # single texts keep their own session
    assert built == []
    after = embedder.embed(["a", "bb"])
    assert len(built) == 1 and built[0].calls == [["a", "bb"]]
    assert np.array_equal(before, after) and embedder.batch_session_loaded


def test_an_embedder_that_cannot_rebuild_keeps_its_session(tmp_path: Path) -> None:
    alone = FastEmbedEmbedder(_Model(1.0), "m", 4)
    assert not alone.release_batch_session() and alone.batch_session_loaded
    embedder, _, _ = _embedder()
    cached = CachedEmbedder(embedder, EmbeddingCache(tmp_path / "cache.sqlite"))
    assert release_batch_session(cached) and not embedder.batch_session_loaded


def test_an_index_run_lets_the_batch_session_go(tmp_workspace: Workspace) -> None:
    root = tmp_workspace.root
    for name in ("app", "jobs", "billing"):  # several chunks: one batch, not one query
        body = "".join(f"def {name}_{i}(path):\n    return open(path).read()\n\n" for i in range(3))
        (root / f"{name}.py").write_text(body)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "app")
    embedder, first, _ = _embedder()
    engine = Engine(tmp_workspace, EngramConfig(), embedder=embedder)
    try:
        run_index(engine)
    finally:
        engine.close()
    assert first.calls, "the index embedded its chunks in the batch session"
    assert not embedder.batch_session_loaded
