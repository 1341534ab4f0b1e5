"""Embeddings: the offline default model, sha256 pinning, load reasons, cache, text."""

from __future__ import annotations

import gc
import os
import shutil
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from tests.conftest import git

from engram.app import Engine
from engram.app.indexing import run_index
from engram.config import EmbedConfig, EngramConfig
from engram.embed import (
    DEFAULT_DIM,
    DEFAULT_MODEL_ID,
    CachedEmbedder,
    Embedder,
    EmbeddingCache,
    load_embedder,
    memory_embedding_text,
)
from engram.embed.default_model import (
    FOLDED_WEIGHTS,
    DefaultModelFiles,
    assemble_model_dir,
    fold_model_dir,
)
from engram.embed.embedders import FastEmbedEmbedder, release_batch_session
from engram.model import CodeAnchor, Memory, MemoryType
from engram.workspace import Workspace


@pytest.fixture(scope="module")
def model_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def default_embedder(model_root: Path) -> Embedder:
    status = load_embedder(EmbedConfig(), None, model_roots=[model_root])
    assert status.embedder is not None, status.reason
    assert "verified" in status.reason
    return status.embedder


def cos(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> float:
    return float(a @ b)


def test_default_model_loads_offline_and_is_sensible(default_embedder: Embedder) -> None:
    assert default_embedder.model_id == DEFAULT_MODEL_ID and default_embedder.dim == DEFAULT_DIM
    texts = [
        "How do I reset my password?",
        "I forgot my login password and need to change it",
        "The cat sat on the mat",
        "A kitten is resting on a rug",
        "Quarterly revenue grew by ten percent",
    ]
    v = default_embedder.embed(texts)
    assert v.shape == (5, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    assert cos(v[0], v[1]) > 0.6 and cos(v[2], v[3]) > 0.4
    for unrelated in (v[2], v[3], v[4]):
        assert cos(v[0], v[1]) > cos(v[0], unrelated) + 0.4
    assert default_embedder.embed([]).shape == (0, 384)


def test_default_model_uses_mean_pooling_like_sentence_transformers(
    default_embedder: Embedder, model_root: Path
) -> None:
    """Recompute one embedding by hand: tokenizer -> ONNX -> masked mean -> L2 norm."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    directory = next(model_root.glob(f"{DEFAULT_MODEL_ID}-*"))
    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=256)
    text = "Engram remembers gotchas about the payment retry logic"
    enc = tokenizer.encode(text)
    session = ort.InferenceSession(str(directory / "model.onnx"))
    feeds = {
        "input_ids": np.array([enc.ids], np.int64),
        "attention_mask": np.array([enc.attention_mask], np.int64),
        "token_type_ids": np.array([enc.type_ids], np.int64),
    }
    names = {i.name for i in session.get_inputs()}
    hidden = session.run(None, {k: v for k, v in feeds.items() if k in names})[0][0]
    mean = hidden.mean(axis=0)
    mean /= np.linalg.norm(mean)
    cls = hidden[0] / np.linalg.norm(hidden[0])
    got = default_embedder.embed([text])[0]
    assert cos(got, mean) > 0.999
    assert cos(got, cls) < 0.99
    long_text = "word " * 600  # truncated at 256 tokens, not an error
    assert default_embedder.embed([long_text]).shape == (1, 384)


def test_damaged_model_file_is_refused_with_a_reason(tmp_path: Path) -> None:
    installed = DefaultModelFiles.installed()
    files_dir = tmp_path / "files"
    shutil.copytree(installed.files_dir, files_dir)
    tokenizer = files_dir / "tokenizer.json"
    tokenizer.write_bytes(tokenizer.read_bytes().replace(b"[UNK]", b"[XXX]", 1))
    damaged = DefaultModelFiles(installed.onnx_path, files_dir)
    status = load_embedder(
        EmbedConfig(), None, default_files=damaged, model_roots=[tmp_path / "models"]
    )
    assert status.embedder is None
    assert "sha256" in status.reason and "tokenizer.json" in status.reason
    fake_onnx = tmp_path / "model.onnx"
    fake_onnx.write_bytes(b"not a model")
    status = load_embedder(
        EmbedConfig(),
        None,
        default_files=DefaultModelFiles(fake_onnx, installed.files_dir),
        model_roots=[tmp_path / "models"],
    )
    assert status.embedder is None and "model.onnx" in status.reason


def test_assembled_directory_is_reused_and_repaired(tmp_path: Path) -> None:
    files = DefaultModelFiles.installed()
    first = assemble_model_dir(files, [tmp_path])
    assert assemble_model_dir(files, [tmp_path]) == first
    (first / "tokenizer.json").write_text("{}")
    assert assemble_model_dir(files, [tmp_path]) == first
    assert (first / "tokenizer.json").read_bytes() == (
        files.files_dir / "tokenizer.json"
    ).read_bytes()
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where a directory should be")
    assert assemble_model_dir(files, [blocked, tmp_path / "second"]).parent == tmp_path / "second"


def test_two_installs_sharing_a_cache_keep_their_own_directories(tmp_path: Path) -> None:
    """Two installs of the same weights (another venv, another checkout) share the user
    cache: assembling for one must not rebuild the other's directory, which a process of
    the other install may be loading at that moment."""
    installed = DefaultModelFiles.installed()
    other_onnx = tmp_path / "other-venv" / "model.onnx"
    other_onnx.parent.mkdir()
    shutil.copyfile(installed.onnx_path, other_onnx)
    other = DefaultModelFiles(other_onnx, installed.files_dir)
    cache = tmp_path / "cache"
    mine = assemble_model_dir(installed, [cache])
    built = {p.name: p.lstat().st_mtime_ns for p in mine.iterdir()}
    theirs = assemble_model_dir(other, [cache])
    assert theirs != mine and theirs.parent == mine.parent == cache
    assert {p.name: p.lstat().st_mtime_ns for p in mine.iterdir()} == built
    assert os.readlink(mine / "model.onnx") == str(installed.onnx_path)
    assert os.readlink(theirs / "model.onnx") == str(other_onnx)
    assert assemble_model_dir(installed, [cache]) == mine


def test_local_model_directory_loads(default_embedder: Embedder, model_root: Path) -> None:
    directory = next(model_root.glob(f"{DEFAULT_MODEL_ID}-*"))
    status = load_embedder(EmbedConfig(model=str(directory)), None)
    assert status.embedder is not None, status.reason
    assert status.embedder.dim == 384 and status.embedder.model_id.startswith("local:")
    text = ["the local copy gives the same vectors"]
    assert cos(status.embedder.embed(text)[0], default_embedder.embed(text)[0]) > 0.9999


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("none", "keyword-only"),
        ("no-such/model-xyz", "unknown embedding model"),
        ("./not-a-dir/", "does not exist"),
    ],
)
def test_no_model_gives_a_reason(model: str, expected: str) -> None:
    status = load_embedder(EmbedConfig(model=model), None)
    assert status.embedder is None and not status.available
    assert expected in status.reason and "\n" not in status.reason


def test_fastembed_name_not_in_cache_never_downloads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    status = load_embedder(EmbedConfig(model="BAAI/bge-small-en-v1.5"), None)
    assert status.embedder is None and "not in the local fastembed cache" in status.reason
    assert "HF_HUB_OFFLINE" not in os.environ  # restored after construction


class CountingEmbedder:
    def __init__(self) -> None:
        self.seen: list[str] = []

    @property
    def model_id(self) -> str:
        return "count-4"

    @property
    def dim(self) -> int:
        return 4

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.seen.extend(texts)
        return np.array([[len(t), 1.0, 0.0, 0.0] for t in texts], np.float32)


def test_cache_avoids_re_embedding_across_instances(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, EmbeddingCache(tmp_path / "cache.sqlite"))
    first = cached.embed(["a", "bb", "a"])
    assert inner.seen == ["a", "bb"]  # duplicates inside one call embedded once
    again = CachedEmbedder(inner, EmbeddingCache(tmp_path / "cache.sqlite"))
    second = again.embed(["bb", "ccc", "a"])
    assert inner.seen == ["a", "bb", "ccc"]
    assert np.array_equal(second[0], first[1]) and np.array_equal(second[2], first[0])
    assert again.cache.count() == 3


def test_workspace_embedder_is_cached_and_thread_safe(
    tmp_workspace: Workspace, model_root: Path
) -> None:
    status = load_embedder(EmbedConfig(batch_size=4), tmp_workspace, model_roots=[model_root])
    embedder = status.embedder
    assert isinstance(embedder, CachedEmbedder)
    assert (tmp_workspace.engram_dir / "embed_cache.sqlite").is_file()
    texts = [f"thread safety sentence number {i}" for i in range(10)]
    results: list[npt.NDArray[np.float32]] = []
    threads = [
        threading.Thread(target=lambda: results.append(embedder.embed(texts))) for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 3 and all(np.allclose(r, results[0], atol=1e-5) for r in results)
    misses = embedder.misses
    embedder.embed(texts)
    assert embedder.misses == misses


def test_memory_embedding_text_puts_context_before_content() -> None:
    m = Memory(
        "refresh tokens rotate on every use",
        type=MemoryType.ERROR_PATTERN,
        anchors=[CodeAnchor("src/auth/jwt.py", symbol="rotate")],
        related_files=["src/auth/session.py"],
        related_modules=["auth"],
        tags=["security"],
    )
    text = memory_embedding_text(m)
    head, content = text.split("\n\n", 1)
    assert content == m.content
    for part in (
        "Type: error pattern",
        "src/auth/jwt.py",
        "src/auth/session.py",
        "Module: auth",
        "Symbol: rotate",
        "Tags: security",
    ):
        assert part in head
    assert memory_embedding_text(Memory("plain")).startswith("Type: module insight\n\n")


_QUERY_TEXTS = [
    "How do I reset my password?",
    "refresh tokens rotate on every use",
    "def parse(path: str) -> Config: read the TOML file and validate it",
    "The cat sat on the mat",
    "why does the build fail on Windows when the path has spaces",
]


def test_single_text_session_gives_the_batch_sessions_vectors(
    default_embedder: Embedder, model_root: Path
) -> None:
    assert isinstance(default_embedder, FastEmbedEmbedder)
    assert default_embedder.has_query_session  # embed.query_threads defaults to 1
    shared = load_embedder(EmbedConfig(query_threads=0), None, model_roots=[model_root])
    assert isinstance(shared.embedder, FastEmbedEmbedder)
    assert not shared.embedder.has_query_session
    batch = shared.embedder.embed(_QUERY_TEXTS)
    for i, text in enumerate(_QUERY_TEXTS):
        single = default_embedder.embed([text])
        assert single.shape == (1, DEFAULT_DIM) and single.dtype == np.float32
        assert np.allclose(single[0], shared.embedder.embed([text])[0], atol=1e-5)
        assert np.allclose(single[0], batch[i], atol=1e-5)


class _RecordingModel:
    """A stand-in ``TextEmbedding`` that records the calls it gets."""

    def __init__(self, value: float) -> None:
        self.value = value
        self.calls: list[list[str]] = []

    def embed(self, documents: list[str], batch_size: int = 32) -> list[npt.NDArray[np.float32]]:
        self.calls.append(list(documents))
        return [np.full(4, self.value, np.float32) for _ in documents]


def test_one_text_goes_to_the_query_session_and_lists_to_the_batch_session() -> None:
    batch_model, query_model = _RecordingModel(1.0), _RecordingModel(2.0)
    embedder = FastEmbedEmbedder(batch_model, "m", 4, batch_size=8, query_model=query_model)
    embedder.embed(["one query"])
    embedder.embed(["a", "bb", "ccc"])
    assert query_model.calls == [["one query"]]
    assert sorted(t for call in batch_model.calls for t in call) == ["a", "bb", "ccc"]
    alone = FastEmbedEmbedder(batch_model, "m", 4, batch_size=8)
    alone.embed(["one query"])
    assert batch_model.calls[-1] == ["one query"] and len(query_model.calls) == 1


def test_cache_serves_single_queries_embedded_by_the_query_session(
    tmp_workspace: Workspace, model_root: Path
) -> None:
    status = load_embedder(EmbedConfig(), tmp_workspace, model_roots=[model_root])
    embedder = status.embedder
    assert isinstance(embedder, CachedEmbedder)
    assert isinstance(embedder.inner, FastEmbedEmbedder) and embedder.inner.has_query_session
    first = embedder.embed(["where is the retry policy configured"])
    assert embedder.misses == 1
    again = CachedEmbedder(embedder.inner, EmbeddingCache(embedder.cache.path))
    second = again.embed(["where is the retry policy configured"])
    assert again.misses == 0 and np.array_equal(first, second)


def test_default_model_loads_folded_and_gives_the_assembled_models_vectors(
    default_embedder: Embedder, model_root: Path
) -> None:
    """Both sessions load the folded copy (one mapped weights.bin); its vectors are the ones
    fastembed gives over the assembled int8 model, which folds its weights in memory."""
    from fastembed import TextEmbedding

    assembled = next(model_root.glob(f"{DEFAULT_MODEL_ID}-*"))
    folded = [p for p in model_root.iterdir() if p.name.startswith(f"folded-{assembled.name}-")]
    assert len(folded) == 1 and (folded[0] / FOLDED_WEIGHTS).stat().st_size > 80_000_000
    plain = TextEmbedding(
        "sentence-transformers/all-MiniLM-L6-v2",
        specific_model_path=str(assembled),
        local_files_only=True,
    )
    texts = [*_QUERY_TEXTS, "word " * 600]
    expected = np.vstack(list(plain.embed(texts)))
    assert np.allclose(default_embedder.embed(texts), expected, atol=1e-5)
    for i, text in enumerate(texts):
        assert np.allclose(default_embedder.embed([text])[0], expected[i], atol=1e-5)


def test_folded_directory_is_reused_and_rebuilt_when_damaged(tmp_path: Path) -> None:
    assembled = assemble_model_dir(DefaultModelFiles.installed(), [tmp_path])
    folded = fold_model_dir(assembled)
    assert folded.parent == tmp_path and folded != assembled
    built = {p.name: p.stat().st_mtime_ns for p in folded.iterdir()}
    assert fold_model_dir(assembled) == folded
    assert {p.name: p.stat().st_mtime_ns for p in folded.iterdir()} == built
    weights = folded / FOLDED_WEIGHTS
    good = weights.read_bytes()
    with weights.open("r+b") as handle:  # one damaged byte in the middle of the weights
        handle.seek(len(good) // 2)
        handle.write(bytes([good[len(good) // 2] ^ 0xFF]))
    assert fold_model_dir(assembled) == folded
    assert (folded / FOLDED_WEIGHTS).read_bytes() == good


def test_folding_removes_copies_nothing_can_read(tmp_path: Path) -> None:
    """An upgrade of onnxruntime folds a new copy, and a deleted venv leaves its copy: each
    ~87 MB would stay in the cache for good. A live install's copy is not touched."""
    assembled = assemble_model_dir(DefaultModelFiles.installed(), [tmp_path])
    old_runtime = tmp_path / f"folded-{assembled.name}-ort0.0.1"
    gone, live = tmp_path / "default-gone", tmp_path / "default-live"
    for owner, target in (
        (gone, tmp_path / "no-such-install.onnx"),
        (live, assembled / "model.onnx"),
    ):
        owner.mkdir()
        (owner / "model.onnx").symlink_to(target)
    leftovers = [
        old_runtime,
        tmp_path / "folded-default-gone-ort1.0",
        tmp_path / "folded-default-live-ort1.0",
    ]
    for leftover in leftovers:
        leftover.mkdir()
        (leftover / FOLDED_WEIGHTS).write_bytes(b"old")
    folded = fold_model_dir(assembled)
    assert folded.is_dir()
    assert [p.exists() for p in leftovers] == [False, False, True]


def test_a_folded_copy_inside_the_workspace_is_never_loaded(
    default_embedder: Embedder, tmp_workspace: Workspace
) -> None:
    """The workspace's own folder is the last place a model directory may be assembled; a
    cloned repository can ship files there. The assembled directory is checked against
    pinned digests, but a folded copy only against its own manifest, so one inside the
    workspace is never folded into or loaded: a planted copy with a consistent manifest
    and a graph of its making is ignored (docs/security.md)."""
    import json

    import onnxruntime as ort

    from engram.embed.default_model import FOLDED_MANIFEST, ONNX_FILE, sha256_file

    root = tmp_workspace.engram_dir / "models"
    assembled = assemble_model_dir(DefaultModelFiles.installed(), [root])
    planted = root / f"folded-{assembled.name}-ort{ort.__version__}"
    shutil.copytree(assembled, planted, symlinks=False)
    (planted / ONNX_FILE).write_bytes(b"not the model")
    (planted / FOLDED_WEIGHTS).write_bytes(b"not the weights")
    digests = {name: sha256_file(planted / name) for name in (ONNX_FILE, FOLDED_WEIGHTS)}
    manifest = {"onnxruntime": str(ort.__version__), "sha256": digests}
    (planted / FOLDED_MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")

    status = load_embedder(EmbedConfig(), tmp_workspace, model_roots=[root])
    assert status.embedder is not None, status.reason
    text = ["the assembled model, verified against pinned digests"]
    assert np.allclose(status.embedder.embed(text), default_embedder.embed(text), atol=1e-5)
    assert (planted / ONNX_FILE).read_bytes() == b"not the model"  # left alone, unused
    assert sorted(p.name for p in root.glob("folded-*")) == [planted.name]


def test_default_model_loads_unfolded_when_folding_fails(
    default_embedder: Embedder, model_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engram.embed import loader

    def refuse(assembled: Path) -> Path:
        raise OSError(f"read-only cache next to {assembled}")

    monkeypatch.setattr(loader, "fold_model_dir", refuse)
    status = load_embedder(EmbedConfig(), None, model_roots=[model_root])
    assert status.embedder is not None and "verified" in status.reason
    text = ["the unfolded model gives the same vectors"]
    assert np.allclose(status.embedder.embed(text), default_embedder.embed(text), atol=1e-5)


# --- the batch session leaves memory after an index and comes back lazily: the workspace
# engine kept it, and onnxruntime's arena of its largest batch, until its idle exit
# (`engram status` said 748 MB after `engram index` of a 57-file repository, 418 MB now)


def _embedder() -> tuple[FastEmbedEmbedder, _RecordingModel, list[_RecordingModel]]:
    built: list[_RecordingModel] = []

    def reload() -> _RecordingModel:
        built.append(_RecordingModel(1.0))
        return built[-1]

    first, query = _RecordingModel(1.0), _RecordingModel(2.0)
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
    alone = FastEmbedEmbedder(_RecordingModel(1.0), "m", 4)
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
