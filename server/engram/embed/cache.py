"""Embedding cache by content hash: ``.engram/embed_cache.sqlite``.

Key = sha256(model_id + NUL + text); value = the float32 vector bytes. Re-embedding a
workspace after a restart, re-running an import, or merging a duplicate then costs a
lookup instead of a model call. SQLite in WAL mode, so the language server and a CLI
process can share it; one connection per cache guarded by a lock, so worker threads can
use it too.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    key TEXT PRIMARY KEY,
    model_id TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    created_at REAL NOT NULL
)
"""


def cache_key(model_id: str, text: str) -> str:
    return hashlib.sha256(f"{model_id}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()


class EmbeddingCache:
    """A persistent map (model id, text) -> vector."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(path), timeout=10.0, check_same_thread=False)
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(_SCHEMA)
            self._conn.commit()

    def get_many(
        self, model_id: str, texts: Sequence[str], dim: int
    ) -> list[npt.NDArray[np.float32] | None]:
        """Cached vectors for ``texts`` (``None`` where absent), in order."""
        keys = [cache_key(model_id, t) for t in texts]
        found: dict[str, bytes] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT key, vector FROM embeddings WHERE dim = ? AND key IN ({marks})",
                    [dim, *chunk],
                ).fetchall()
                found.update({str(k): bytes(v) for k, v in rows})
        return [
            np.frombuffer(found[k], dtype=np.float32).copy() if k in found else None for k in keys
        ]

    def put_many(
        self, model_id: str, texts: Sequence[str], vectors: npt.NDArray[np.float32]
    ) -> None:
        now = time.time()
        rows = [
            (cache_key(model_id, t), model_id, int(v.shape[0]), v.astype(np.float32).tobytes(), now)
            for t, v in zip(texts, vectors, strict=True)
        ]
        with self._lock:
            try:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?, ?)", rows
                )
                self._conn.commit()
            except sqlite3.Error as exc:  # a cache must never break embedding
                log.info("embedding cache write failed: %s", exc)

    def count(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM embeddings").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()
