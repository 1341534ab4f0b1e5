"""The audit trail: an append-only SQLite log of every change of a memory (docs/trust.md).

Why apart from the memory table: the trail must outlive the memory (a forgotten or deleted
memory still answers "who removed this, and what did it say?"), entries are appended far
more often than they are read, and the agents' hook path may read it without LanceDB.
Standard library only; WAL so readers never block the writer.

An entry is written before the change it records (``engram.app.trust.recorded``) and is
*pending* until that change landed: a row of ``pending`` names it, the batch it came in and
the process that wrote it. The row goes when the store write returned (:meth:`landed`) or,
with the entry, when it failed (:meth:`withdraw`); on a full disk either removal can fail
too, and the entry then stays pending (``engram log`` says so) until the next change settles
it against the store (``app.trust``: landed or withdrawn), so the trail and the store agree.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import attrs

from engram.model import AuditEntry
from engram.store.sidefile import SqliteSideFile

if TYPE_CHECKING:
    from engram.workspace import Workspace

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
CREATE TABLE IF NOT EXISTS pending (
    seq INTEGER PRIMARY KEY,
    batch INTEGER NOT NULL,
    owner TEXT NOT NULL
);
"""
#: Most entries one read returns (``engram log`` pages with ``limit``).
MAX_READ = 10_000


@attrs.frozen
class Unsettled:
    """A pending entry (:meth:`AuditLog.unsettled`): its number, its batch (the first
    number of the :meth:`AuditLog.add` it came in) and the process that wrote it."""

    seq: int
    batch: int
    owner: str
    entry: AuditEntry


class AuditLog(SqliteSideFile):
    """``.engram/audit.sqlite``: append entries, read them per memory or newest first."""

    FILE = AUDIT_FILE
    SCHEMA = _SCHEMA

    def __init__(self, workspace: Workspace, *, read_only: bool = False) -> None:
        super().__init__(workspace, read_only=read_only)
        #: who writes this log's pending rows: this process, this instance
        self._token = secrets.token_hex(6)
        #: batches added and not yet landed or withdrawn (their write is under way)
        self._in_flight: set[int] = set()

    @property
    def owner(self) -> str:
        return f"{os.getpid()}:{self._token}"

    def append(self, entries: Iterable[AuditEntry]) -> int:
        """Add ``entries`` in order, landed at once; returns how many were written."""
        seqs = self.add(entries)
        self.landed(seqs)
        return len(seqs)

    def add(self, entries: Iterable[AuditEntry]) -> range:
        """Add ``entries`` in order, durably and pending; returns their sequence numbers,
        which :meth:`landed` takes once the change they describe is stored and
        :meth:`withdraw` to remove them again (it failed)."""
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
                first = last - len(rows) + 1
                owner = self.owner
                conn.executemany(
                    "INSERT INTO pending(seq, batch, owner) VALUES (?, ?, ?)",
                    [(seq, first, owner) for seq in range(first, last + 1)],
                )
            self._in_flight.add(first)
        return range(first, last + 1)

    def landed(self, seqs: range) -> None:
        """The change the entries :meth:`add` numbered ``seqs`` describe was stored: they
        are pending no more."""
        self._settled(seqs, ("pending",))

    def withdraw(self, seqs: range) -> None:
        """Remove the entries :meth:`add` numbered ``seqs``: the change they describe was
        never stored, and the trail says only what happened (docs/trust.md)."""
        self._settled(seqs, ("entries", "pending"))

    def _settled(self, seqs: range, tables: Sequence[str]) -> None:
        # no longer under way, even when the removal fails: :meth:`unsettled` offers it then
        self._in_flight.discard(seqs[0] if seqs else -1)
        if seqs:
            span = (seqs[0], seqs[-1])
            self._remove(*[(f"DELETE FROM {t} WHERE seq BETWEEN ? AND ?", span) for t in tables])

    def unsettled(self) -> list[Unsettled]:
        """The pending entries no write under way here or in a live process stands for:
        those whose landing or withdrawal failed (a full disk) or whose process ended
        between the entry and the store write. Oldest first."""
        with self._lock:
            conn = self._connect(create=False)
            if conn is None:
                return []
            rows = conn.execute(
                f"SELECT p.batch, p.owner, {self._COLUMNS} FROM pending p"
                " JOIN entries e ON e.seq = p.seq ORDER BY p.seq"
            ).fetchall()
        out: list[Unsettled] = []
        for batch, owner, seq, *fields in rows:
            if batch in self._in_flight and owner == self.owner:
                continue
            if owner != self.owner and _alive(owner):
                continue  # another process's write, still under way
            entry = _entry(fields)
            if entry is not None:
                out.append(Unsettled(seq, batch, owner, entry))
        return out

    def _read(self, sql: str, params: Sequence[object]) -> list[AuditEntry]:
        with self._lock:
            conn = self._connect(create=False)
            if conn is None:
                return []
            rows = conn.execute(sql, params).fetchall()
        return [e for row in rows if (e := _entry(row[1:])) is not None]

    #: an entry's columns (``seq`` first), and whether it is pending
    _COLUMNS = (
        "e.seq, e.memory_id, e.at, e.event, e.actor, e.cause, e.before, e.after, e.note,"
        " EXISTS (SELECT 1 FROM pending p WHERE p.seq = e.seq)"
    )

    def for_memory(self, memory_id: str, limit: int = MAX_READ) -> list[AuditEntry]:
        """The trail of one memory, oldest first."""
        return self._read(
            f"SELECT {self._COLUMNS} FROM entries e WHERE e.memory_id = ? ORDER BY e.seq LIMIT ?",
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
                f"SELECT {self._COLUMNS} FROM entries e WHERE e.memory_id IN ({marks})"
                " ORDER BY e.seq",
                part,
            ):
                out.setdefault(entry.memory_id, []).append(entry)
        return out

    def recent(self, limit: int = 50) -> list[AuditEntry]:
        """The newest entries of the whole store, newest first."""
        return self._read(
            f"SELECT {self._COLUMNS} FROM entries e ORDER BY e.seq DESC LIMIT ?",
            (max(0, min(limit, MAX_READ)),),
        )

    def count(self) -> int:
        with self._lock:
            conn = self._connect(create=False)
            if conn is None:
                return 0
            return int(conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0])


def _entry(fields: Sequence[object]) -> AuditEntry | None:
    """One row (``memory_id`` … ``note``, pending) as an entry; a damaged row is skipped."""
    memory_id, at, event, actor, cause, before, after, note, pending = fields
    try:
        return AuditEntry(
            memory_id=str(memory_id),
            at=datetime.fromisoformat(str(at)),
            event=str(event),
            actor=str(actor),
            cause=str(cause),
            before=json.loads(str(before)),
            after=json.loads(str(after)),
            note=None if note is None else str(note),
            pending=bool(pending),
        )
    except ValueError as exc:  # keep the trail readable
        log.warning("skipping an unreadable audit entry: %s", exc)
        return None


def _alive(owner: str) -> bool:
    """Whether the process that wrote a pending row (``pid:token``) still runs."""
    try:
        os.kill(int(owner.partition(":")[0]), 0)
    except ProcessLookupError:
        return False
    except (ValueError, OSError):
        return True  # not ours to signal, or unreadable: leave it to its writer
    return True
