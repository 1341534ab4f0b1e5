"""A small SQLite file beside the store (the audit trail, pending contradiction checks).

Both open the same way: created on the first write only, never by a reader; WAL so readers
do not block the writer; one connection per object, shared by threads under its lock.
Standard library only: the agents' hook path may read them without LanceDB.

:func:`wal_connect` is how the SQLite files a store write touches are opened for writing (these
two, the store's change log; the agents' digest sets the same pragmas itself, for the hooks'
imports): WAL with ``synchronous=NORMAL``.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from engram.workspace import Workspace


def wal_connect(path: Path | str, *, timeout: float) -> sqlite3.Connection:
    """A writer's connection to a SQLite file beside the store: WAL, ``synchronous=NORMAL``.

    In WAL mode ``NORMAL`` still writes every commit to the WAL before ``commit`` returns,
    so a commit survives the process being killed (the engine's kill -9 tests count every
    acknowledged memory); what it skips is the ``fsync`` of the WAL on each commit, which
    only power loss or an OS crash needs, and which the LanceDB store these files sit
    beside does not do for its own writes either (``strace`` of the engine: no ``fsync``
    from LanceDB, one ``fdatasync`` per commit of each SQLite file). With ``FULL`` (the
    default) a warm ``remember`` paid three of them (change log, audit trail, digest),
    5-20 ms each on this machine's disk, under the writer lock (docs/engine.md, "Figures").
    """
    conn = sqlite3.connect(path, timeout=timeout, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


class SqliteSideFile:
    """``.engram/<FILE>`` with ``SCHEMA``; subclasses add the reads and writes."""

    FILE: ClassVar[str]
    SCHEMA: ClassVar[str]

    def __init__(self, workspace: Workspace, *, read_only: bool = False) -> None:
        self.workspace = workspace
        self.read_only = read_only
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        return self.workspace.engram_dir / self.FILE

    def _connect(self, create: bool) -> sqlite3.Connection | None:
        if self._conn is not None:
            return self._conn
        if not self.path.exists() and (not create or self.read_only):
            return None
        self.workspace.check_engram_data_is_own()  # never an audit trail from a clone
        if create:
            self.workspace.ensure_engram_dir()
        conn = wal_connect(self.path, timeout=15.0)
        conn.executescript(self.SCHEMA)
        self._conn = conn
        return conn

    def _remove(self, *statements: tuple[str, Sequence[object]]) -> None:
        """Run removals on the file in one transaction, when it exists (a removal never
        creates it)."""
        with self._lock:
            conn = self._connect(create=False)
            if conn is None:
                return
            with conn:
                for sql, params in statements:
                    conn.execute(sql, params)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


__all__ = ["SqliteSideFile", "wal_connect"]
