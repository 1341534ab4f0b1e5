"""Record-level helpers every use case shares, below the trust door (``app/trust.py``).

Reading one memory, embedding memories and naming the person at this checkout are needed by
the trust moves and by the use cases that call them; keeping them here lets ``trust``
import none of those use cases (no import cycle: ``lint-imports`` checks it).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from engram.errors import InvalidInput, NotFound
from engram.model import Memory
from engram.progress import Progress

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from engram.app.engine import Engine

    Vectors = npt.NDArray[np.float32]

log = logging.getLogger(__name__)


def get(engine: Engine, memory_id: str) -> Memory:
    """The memory with this id, or :class:`NotFound`."""
    memory_id = (memory_id or "").strip()
    if not memory_id:
        raise InvalidInput("memory id is empty")
    memory = engine.store.get(memory_id)
    if memory is None:
        raise NotFound(f"no memory with id {memory_id}")
    return memory


def embed_memories(
    engine: Engine, memories: Sequence[Memory], progress: Progress | None
) -> Vectors | None:
    """The contextual embedding of each memory (in batches), or ``None`` without a model."""
    embedder = engine.embedder
    if embedder is None:
        return None
    from engram.embed import memory_embedding_text

    texts = [memory_embedding_text(m) for m in memories]
    batch = max(1, engine.config.embed.batch_size)
    if len(texts) <= batch:
        return embedder.embed(texts)
    import numpy as np

    parts = []
    for start in range(0, len(texts), batch):
        parts.append(embedder.embed(texts[start : start + batch]))
        if progress is not None:
            progress(min(start + batch, len(texts)), len(texts), "embedding")
    return np.vstack(parts)


def git_user(engine: Engine) -> str | None:
    """Who shares (``git config user.name``), or None outside git / without a name."""
    try:
        name = engine.history.user_name()
    except Exception as exc:  # attribution is optional: never fail a share for it
        log.debug("no git user name: %s", exc)
        return None
    return name if isinstance(name, str) and name else None


__all__ = ["embed_memories", "get", "git_user"]
