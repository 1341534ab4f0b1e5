"""The audit trail: an append-only SQLite log of every change of a memory (docs/trust.md).

Why apart from the memory table: the trail must outlive the memory (a forgotten or deleted
memory still answers "who removed this, and what did it say?"), entries are appended far
more often than they are read, and the agents' hook path may read it without LanceDB.
Standard library only; WAL so readers never block the writer.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from datetime import datetime

from engram.model import AuditEntry
from engram.store.sidefile import SqliteSideFile

log = logging.getLogger(__name__)

AUDIT_FILE = "audit.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id TEXT NOT NULL,
    at TEXT NOT NULL,
    event TEXT NOT NULL,
    actor TEXT NOT NULL,
    cause TEXT NOT NULL,
    before TEXT NOT NULL,
    after TEXT NOT NULL,
    note TEXT
);
CREATE INDEX IF NOT EXISTS entries_memory ON entries(memory_id, seq);
"""
#: Most entries one read returns (``engram log`` pages with ``limit``).
MAX_READ = 10_000


class AuditLog(SqliteSideFile):
    """``.engram/audit.sqlite``: append entries, read them per memory or newest first."""

    FILE = AUDIT_FILE
    SCHEMA = _SCHEMA

    def append(self, entries: Iterable[AuditEntry]) -> int:
        """Add ``entries`` in order; returns how many were written."""
        return len(self.add(entries))

    def add(self, entries: Iterable[AuditEntry]) -> range:
        """Add ``entries`` in order, durably; returns their sequence numbers, which
        :meth:`withdraw` takes to remove them again (the change they describe failed)."""
        rows = [
            (
                e.memory_id,
                e.at.isoformat(),
                e.event,
                e.actor,
                e.cause,
                json.dumps(dict(e.before), default=str, ensure_ascii=False),
                json.dumps(dict(e.after), default=str, ensure_ascii=False),
                e.note,
            )
            for e in entries
        ]
        if not rows:
            return range(0)
        with self._lock:
            conn = self._connect(create=True)
            assert conn is not None
            with conn:
                conn.executemany(
                    "INSERT INTO entries(memory_id, at, event, actor, cause, before, after, note)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
                # one write transaction holds the file's only write lock: the rows are
                # numbered one after another, ending at the largest number
                last = int(conn.execute("SELECT MAX(seq) FROM entries").fetchone()[0])
        return range(last - len(rows) + 1, last + 1)

    def withdraw(self, seqs: range) -> None:
        """Remove the entries :meth:`add` numbered ``seqs``: the change they describe was
        never stored, and the trail says only what happened (docs/trust.md)."""
        if seqs:
            self._remove("DELETE FROM entries WHERE seq BETWEEN ? AND ?", (seqs[0], seqs[-1]))

    def _read(self, sql: str, params: Sequence[object]) -> list[AuditEntry]:
        with self._lock:
            conn = self._connect(create=False)
            if conn is None:
                return []
            rows = conn.execute(sql, params).fetchall()
        out: list[AuditEntry] = []
        for memory_id, at, event, actor, cause, before, after, note in rows:
            try:
                out.append(
                    AuditEntry(
                        memory_id=memory_id,
                        at=datetime.fromisoformat(at),
                        event=event,
                        actor=actor,
                        cause=cause,
                        before=json.loads(before),
                        after=json.loads(after),
                        note=note,
                    )
                )
            except ValueError as exc:  # a damaged row: skip it, keep the trail readable
                log.warning("skipping an unreadable audit entry: %s", exc)
        return out

    _COLUMNS = "memory_id, at, event, actor, cause, before, after, note"

    def for_memory(self, memory_id: str, limit: int = MAX_READ) -> list[AuditEntry]:
        """The trail of one memory, oldest first."""
        return self._read(
            f"SELECT {self._COLUMNS} FROM entries WHERE memory_id = ? ORDER BY seq LIMIT ?",
            (memory_id, min(limit, MAX_READ)),
        )

    def for_memories(self, memory_ids: Sequence[str]) -> dict[str, list[AuditEntry]]:
        """Trails of several memories (export), oldest first each."""
        out: dict[str, list[AuditEntry]] = {}
        ids = list(dict.fromkeys(memory_ids))
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            for entry in self._read(
                f"SELECT {self._COLUMNS} FROM entries WHERE memory_id IN ({marks}) ORDER BY seq",
                part,
            ):
                out.setdefault(entry.memory_id, []).append(entry)
        return out

    def recent(self, limit: int = 50) -> list[AuditEntry]:
        """The newest entries of the whole store, newest first."""
        return self._read(
            f"SELECT {self._COLUMNS} FROM entries ORDER BY seq DESC LIMIT ?",
            (max(0, min(limit, MAX_READ)),),
        )

    def count(self) -> int:
        with self._lock:
            conn = self._connect(create=False)
            if conn is None:
                return 0
            return int(conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0])
