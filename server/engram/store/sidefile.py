"""A small SQLite file beside the store (the audit trail, pending contradiction checks).

Both open the same way: created on the first write only, never by a reader; WAL so readers
do not block the writer; one connection per object, shared by threads under its lock.
Standard library only: the agents' hook path may read them without LanceDB.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import ClassVar

from engram.workspace import Workspace


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
        if create:
            self.workspace.ensure_engram_dir()
        conn = sqlite3.connect(self.path, timeout=15.0, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(self.SCHEMA)
        self._conn = conn
        return conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


__all__ = ["SqliteSideFile"]
