"""Which ids each committed version touched, so other processes can catch up cheaply.

A snapshot that sees a newer table version would otherwise reload the whole table (about
3 s at 100k memories): an editor would stall on its first hover after the CLI wrote one
memory. Every Engram write appends ``(prev_version, version, ids)`` here under the writer
lock; a reader follows the chain from its snapshot's version and re-reads only those ids.
A missing link (a crash between commit and log, an old Engram) just means a full reload.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

log = logging.getLogger(__name__)

#: Keep this many entries; older ones are pruned on write.
KEEP_ENTRIES = 2000


class ChangeLog:
    """``changes(prev, version, ids)`` in a small SQLite file next to the table."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def _connection(self) -> sqlite3.Connection | None:
        if self._conn is None:
            if self.read_only:
                if not self.path.exists():
                    return None
                uri = f"file:{self.path}?mode=ro"
                self._conn = sqlite3.connect(uri, uri=True, timeout=5.0, check_same_thread=False)
            else:
                self._conn = sqlite3.connect(str(self.path), timeout=5.0, check_same_thread=False)
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute(
                    "CREATE TABLE IF NOT EXISTS changes ("
                    "version INTEGER PRIMARY KEY, prev INTEGER NOT NULL, ids TEXT NOT NULL)"
                )
                self._conn.execute("CREATE INDEX IF NOT EXISTS changes_prev ON changes(prev)")
                self._conn.commit()
        return self._conn

    def record(self, prev: int, version: int, ids: Sequence[str]) -> None:
        """Log that ``version`` (built on ``prev``) touched ``ids``. Never raises."""
        if self.read_only or version == prev:
            return
        with self._lock:
            try:
                conn = self._connection()
                if conn is None:
                    return
                conn.execute(
                    "INSERT OR REPLACE INTO changes VALUES (?, ?, ?)",
                    (version, prev, json.dumps(list(ids))),
                )
                conn.execute("DELETE FROM changes WHERE version < ?", (version - KEEP_ENTRIES,))
                conn.commit()
            except sqlite3.Error as exc:
                log.info("store change log not written (%s); readers will reload", exc)

    def touched_since(self, start: int, target: int) -> set[str] | None:
        """Ids touched from ``start`` up to at least ``target``, or None if the chain breaks."""
        with self._lock:
            try:
                conn = self._connection()
                if conn is None:
                    return None
                touched: set[str] = set()
                current = start
                while current < target:
                    row = conn.execute(
                        "SELECT version, ids FROM changes WHERE prev = ? ORDER BY version DESC "
                        "LIMIT 1",
                        (current,),
                    ).fetchone()
                    if row is None or int(row[0]) <= current:
                        return None
                    current = int(row[0])
                    touched.update(json.loads(row[1]))
                return touched
            except (sqlite3.Error, ValueError) as exc:
                log.info("store change log unreadable (%s); reloading", exc)
                return None

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
