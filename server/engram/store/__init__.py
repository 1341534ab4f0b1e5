"""Engram's storage: memories (and code chunks) in embedded LanceDB under ``.engram/``.

Public surface: :class:`MemoryStore`, :class:`AuditLog`, :class:`MemoryFilter`, :class:`ChunkStore`,
:class:`CodeChunkRecord`, :class:`HybridTable`, :class:`StoreError`, :class:`StoreLocked`,
:class:`StoreLocation` (``.engram/`` or a shared ``s3://`` store, docs/team.md),
:class:`PendingChecks` (contradiction checks the engine still owes, ``.engram/``),
``is_remote_uri``, and :class:`Digest` (the SQLite mirror of the memories that agent hooks
read without LanceDB). Importing this package imports none of them until a name is used (PEP 562):
``engram.store.digest`` stays light for hooks, and LanceDB and pyarrow are imported only
when a store opens.
"""

#: not ``typing.TYPE_CHECKING``: an agent hook imports this package and no ``typing``
TYPE_CHECKING = False
if TYPE_CHECKING:
    from engram.store.audit import AuditLog
    from engram.store.chunk_store import ChunkStore, CodeChunkRecord
    from engram.store.digest import Digest
    from engram.store.errors import StoreError, StoreLocked
    from engram.store.hybrid import HybridTable
    from engram.store.location import StoreLocation, is_remote_uri
    from engram.store.memory_store import MemoryFilter, MemoryStore
    from engram.store.pending import PendingCheck, PendingChecks

_HOME = {
    "AuditLog": "engram.store.audit",
    "ChunkStore": "engram.store.chunk_store",
    "CodeChunkRecord": "engram.store.chunk_store",
    "Digest": "engram.store.digest",
    "StoreError": "engram.store.errors",
    "StoreLocked": "engram.store.errors",
    "HybridTable": "engram.store.hybrid",
    "StoreLocation": "engram.store.location",
    "is_remote_uri": "engram.store.location",
    "MemoryFilter": "engram.store.memory_store",
    "MemoryStore": "engram.store.memory_store",
    "PendingCheck": "engram.store.pending",
    "PendingChecks": "engram.store.pending",
}


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'engram.store' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


__all__ = [
    "AuditLog",
    "ChunkStore",
    "CodeChunkRecord",
    "Digest",
    "HybridTable",
    "MemoryFilter",
    "MemoryStore",
    "PendingCheck",
    "PendingChecks",
    "StoreError",
    "StoreLocation",
    "StoreLocked",
    "is_remote_uri",
]
