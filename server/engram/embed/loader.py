"""``load_embedder``: the configured model, or the reason there is none.

Never downloads: fastembed is constructed with ``HF_HUB_OFFLINE=1`` so a model that is not
on disk fails fast, and every failure becomes :attr:`EmbedderStatus.reason` (shown by
``engram doctor``) while Engram keeps working on keyword + graph retrieval.

``config.embed.model`` may be ``"default"`` (the pip-installed all-MiniLM-L6-v2 int8),
``"none"``, a fastembed model name (loaded from fastembed's local cache), or a path to a
local model directory (``model.onnx`` + tokenizer files; mean pooling unless its
``1_Pooling/config.json`` says CLS).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from engram.config import KEYWORD_ONLY_REASON, EmbedConfig
from engram.embed.cache import EmbeddingCache
from engram.embed.default_model import (
    DEFAULT_DIM,
    DEFAULT_MODEL_ID,
    FASTEMBED_MODEL_NAME,
    DefaultModelFiles,
    ModelFilesError,
    assemble_model_dir,
    fold_model_dir,
    model_cache_roots,
)
from engram.embed.embedders import CachedEmbedder, Embedder, FastEmbedEmbedder
from engram.workspace import Workspace

log = logging.getLogger(__name__)

CACHE_FILE = "embed_cache.sqlite"
_ENV_LOCK = threading.Lock()
_LOCAL_REQUIRED = ("model.onnx", "tokenizer.json", "tokenizer_config.json")


@attrs.define
class EmbedderStatus:
    """Either an embedder (``reason`` says what loaded) or ``None`` and why."""

    embedder: Embedder | None
    reason: str

    @property
    def available(self) -> bool:
        return self.embedder is not None


@contextlib.contextmanager
def _offline() -> Iterator[None]:
    """``HF_HUB_OFFLINE=1`` while fastembed is constructed: never a silent download.

    fastembed also logs its own failures to stderr through loguru; those are muted here
    because the failure comes back as :attr:`EmbedderStatus.reason` instead.
    """
    loguru_logger: Any = None
    with contextlib.suppress(ImportError):  # fastembed depends on loguru
        from loguru import logger as loguru_logger
    with _ENV_LOCK:
        if loguru_logger is not None:
            loguru_logger.disable("fastembed")
        saved = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "HF_HUB_DISABLE_TELEMETRY")}
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
        try:
            yield
        finally:
            if loguru_logger is not None:
                loguru_logger.enable("fastembed")
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def load_embedder(
    config: EmbedConfig,
    workspace: Workspace | None = None,
    *,
    default_files: DefaultModelFiles | None = None,
    model_roots: list[Path] | None = None,
) -> EmbedderStatus:
    """Load the configured model (see the module docstring). Never raises."""
    name = (config.model or "default").strip()
    if name.lower() == "none":
        return EmbedderStatus(None, KEYWORD_ONLY_REASON)
    inner: Embedder
    try:
        if name.lower() == "default":
            engram_dir = workspace.engram_dir if workspace is not None else None
            files = default_files or DefaultModelFiles.installed()
            directory = assemble_model_dir(files, model_roots or model_cache_roots(engram_dir))
            inner = _fastembed(
                FASTEMBED_MODEL_NAME,
                config,
                DEFAULT_MODEL_ID,
                DEFAULT_DIM,
                specific_model_path=str(_folded_or_assembled(directory, workspace)),
            )
            reason = f"default model {DEFAULT_MODEL_ID} (verified, offline)"
        elif _looks_like_path(name, workspace):
            inner, reason = _load_local_dir(_as_path(name, workspace), config)
        else:
            inner, reason = _load_fastembed_name(name, config)
    except ModelFilesError as exc:
        return EmbedderStatus(None, str(exc))
    except _NoModel as exc:
        return EmbedderStatus(None, str(exc))
    except Exception as exc:  # onnxruntime/tokenizers errors: report, keep running
        log.debug("embedding model failed to load", exc_info=True)
        return EmbedderStatus(None, f"embedding model {name!r} failed to load: {_short(exc)}")
    return EmbedderStatus(_with_cache(inner, workspace), reason)


class _NoModel(Exception):
    pass


def _folded_or_assembled(assembled: Path, workspace: Workspace | None) -> Path:
    """The folded copy of the default model (both sessions map one ``weights.bin`` instead
    of each folding ~90 MB of float32), or the assembled directory when it cannot be built
    (a read-only cache, a full disk): the same vectors, each session folding its own.

    Only for an assembled directory in a user cache: one inside the workspace (the last
    resort of ``model_cache_roots``) is not folded, because a folded copy is checked against
    its own manifest only (the assembled one against pinned digests), and a cloned
    repository could ship ``.engram/models/folded-*`` with a graph of its making
    (docs/security.md)."""
    if workspace is not None and assembled.is_relative_to(workspace.root):
        return assembled
    try:
        return fold_model_dir(assembled)
    except Exception as exc:  # OSError, onnxruntime's errors: slower to load, same vectors
        log.info("default model not folded (%s); each session folds its own weights", _short(exc))
        return assembled


def _fastembed(
    model_name: str, config: EmbedConfig, model_id: str, dim: int, **kwargs: Any
) -> FastEmbedEmbedder:
    """The batch session, plus the single-text session when ``embed.query_threads`` > 0.

    Both are built here, at load (the engine's warm-up), so no request waits for the second;
    the batch session is built again after an index released it (``release_batch_session``).
    """
    from fastembed import TextEmbedding

    def batch_session() -> TextEmbedding:
        with _offline():
            return TextEmbedding(
                model_name, threads=config.threads, local_files_only=True, **kwargs
            )

    model = batch_session()
    query_model = None
    if config.query_threads > 0:
        with _offline():
            query_model = TextEmbedding(
                model_name, threads=config.query_threads, local_files_only=True, **kwargs
            )
    return FastEmbedEmbedder(
        model, model_id, dim, config.batch_size, query_model, reload=batch_session
    )


def _looks_like_path(name: str, workspace: Workspace | None) -> bool:
    if name.startswith(("/", "./", "../", "~")) or (os.sep in name and Path(name).is_dir()):
        return True
    return workspace is not None and (workspace.root / name).is_dir()


def _as_path(name: str, workspace: Workspace | None) -> Path:
    path = Path(name).expanduser()
    if not path.is_absolute() and workspace is not None:
        path = workspace.root / path
    return path.absolute()


def _load_fastembed_name(name: str, config: EmbedConfig) -> tuple[Embedder, str]:
    from fastembed import TextEmbedding

    known = {m["model"].lower(): m for m in TextEmbedding.list_supported_models()}
    description = known.get(name.lower())
    if description is None:
        raise _NoModel(
            f"unknown embedding model {name!r}: not a fastembed model name nor a model "
            "directory; use 'default', 'none', a fastembed name or a path"
        )
    try:
        inner = _fastembed(
            description["model"], config, description["model"], int(description["dim"])
        )
    except Exception as exc:
        raise _NoModel(
            f"fastembed model {name!r} is not in the local fastembed cache and Engram never "
            f"downloads silently ({_short(exc)}); use embed.model = 'default' or a model directory"
        ) from exc
    return inner, f"fastembed model {description['model']} (local cache)"


def _load_local_dir(path: Path, config: EmbedConfig) -> tuple[Embedder, str]:
    if not path.is_dir():
        raise _NoModel(f"embedding model directory {path} does not exist")
    missing = [f for f in _LOCAL_REQUIRED if not (path / f).is_file()]
    if missing:
        raise _NoModel(f"embedding model directory {path} lacks {', '.join(missing)}")
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    config_json = _read_json(path / "config.json")
    dim = int(config_json.get("hidden_size") or config_json.get("dim") or 0)
    if dim <= 0:
        raise _NoModel(f"cannot tell the vector size of {path}: config.json has no hidden_size")
    pooling_json = _read_json(path / "1_Pooling" / "config.json")
    pooling = PoolingType.CLS if pooling_json.get("pooling_mode_cls_token") else PoolingType.MEAN
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    registered = f"engram-local/{path.name}-{digest}"
    known = {m["model"].lower() for m in TextEmbedding.list_supported_models()}
    if registered.lower() not in known:
        TextEmbedding.add_custom_model(
            registered,
            pooling=pooling,
            normalization=True,
            sources=ModelSource(hf=registered),
            dim=dim,
            model_file="model.onnx",
        )
    inner = _fastembed(registered, config, f"local:{path.name}", dim, specific_model_path=str(path))
    return inner, f"local model directory {path} ({dim}-d, {pooling.value.lower()} pooling)"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _with_cache(inner: Embedder, workspace: Workspace | None) -> Embedder:
    """Wrap with the workspace's embedding cache when ``.engram/`` is writable."""
    if workspace is None:
        return inner
    opener: Callable[[], EmbeddingCache] = lambda: EmbeddingCache(  # noqa: E731
        workspace.ensure_engram_dir() / CACHE_FILE
    )
    try:
        return CachedEmbedder(inner, opener())
    except Exception as exc:  # read-only checkout, full disk: embed without a cache
        log.info("embedding cache unavailable (%s); embedding without it", _short(exc))
        return inner
