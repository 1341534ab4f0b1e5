"""Engram's storage: memories (and code chunks) in embedded LanceDB under ``.engram/``.

Public surface: :class:`MemoryStore`, :class:`AuditLog`, :class:`MemoryFilter`, :class:`ChunkStore`,
:class:`CodeChunkRecord`, :class:`HybridTable`, :class:`StoreError`, :class:`StoreLocked`,
:class:`StoreLocation` (``.engram/`` or a shared ``s3://`` store, docs/team.md).
Importing this package is cheap: LanceDB and pyarrow are imported when a store opens.
"""

from engram.store.audit import AuditLog
from engram.store.chunk_store import ChunkStore, CodeChunkRecord
from engram.store.errors import StoreError, StoreLocked
from engram.store.hybrid import HybridTable
from engram.store.location import StoreLocation, is_remote_uri
from engram.store.memory_store import MemoryFilter, MemoryStore

__all__ = [
    "AuditLog",
    "ChunkStore",
    "CodeChunkRecord",
    "HybridTable",
    "MemoryFilter",
    "MemoryStore",
    "StoreError",
    "StoreLocation",
    "StoreLocked",
    "is_remote_uri",
]
