"""Contradiction checks the workspace engine still owes (docs/engine.md, "Writes").

In the engine process ``remember`` acknowledges a write before the NLI judge reads the pairs
its rules left open (``app.remember.judge_remembered``, on the engine's deferred thread). A
check still waiting when the engine stops would be lost with the queue, and the conflict it
would have linked never shown. So each one is written here, beside the store, in the same
writer-locked step as the memory it follows, and removed once the judges have read it; the
next engine start, or an in-process ``engram consolidate``, runs whatever is left.

Standard library only, WAL, one row per new memory (its open pairs as JSON). Why apart from
the audit trail: these rows are work, deleted when done, never history.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

import attrs

from engram.store.sidefile import SqliteSideFile

log = logging.getLogger(__name__)

PENDING_FILE = "pending_checks.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS checks (
    memory_id TEXT PRIMARY KEY,
    pairs TEXT NOT NULL,
    cause TEXT NOT NULL
);
"""
#: Most checks one read returns (each is one memory's open pairs; the rest wait their turn).
MAX_READ = 10_000


@attrs.frozen
class PendingCheck:
    """One new memory's open pairs: the other memory's id and the word overlap."""

    memory_id: str
    pairs: tuple[tuple[str, float], ...]
    cause: str = ""


class PendingChecks(SqliteSideFile):
    """``.engram/pending_checks.sqlite``: add a check, drop it when judged, list the rest."""

    FILE = PENDING_FILE
    SCHEMA = _SCHEMA

    def add(self, checks: Sequence[PendingCheck]) -> None:
        """Remember ``checks`` (a later add for the same memory replaces its pairs)."""
        rows = [
            (c.memory_id, json.dumps([[oid, overlap] for oid, overlap in c.pairs]), c.cause)
            for c in checks
        ]
        if not rows or self.read_only:
            return
        with self._lock:
            conn = self._connect(create=True)
            assert conn is not None
            with conn:
                conn.executemany(
                    "INSERT OR REPLACE INTO checks(memory_id, pairs, cause) VALUES (?, ?, ?)", rows
                )

    def done(self, memory_id: str) -> None:
        """The judges have read ``memory_id``'s pairs (or it is gone): forget the check."""
        if not self.read_only:
            self._remove(("DELETE FROM checks WHERE memory_id = ?", (memory_id,)))

    def all(self) -> list[PendingCheck]:
        """The checks still owed, oldest first. A row that does not parse is dropped with a
        log line (it is only work; ``engram consolidate`` reads every pair anyway)."""
        with self._lock:
            conn = self._connect(create=False)
            if conn is None:
                return []
            rows = conn.execute(
                "SELECT memory_id, pairs, cause FROM checks ORDER BY rowid LIMIT ?", (MAX_READ,)
            ).fetchall()
        out: list[PendingCheck] = []
        for memory_id, pairs, cause in rows:
            try:
                parsed = tuple((str(oid), float(overlap)) for oid, overlap in json.loads(pairs))
            except (ValueError, TypeError) as exc:
                log.warning("dropping an unreadable pending check of %s: %s", memory_id, exc)
                self.done(str(memory_id))
                continue
            out.append(PendingCheck(str(memory_id), parsed, str(cause)))
        return out


__all__ = ["PENDING_FILE", "PendingCheck", "PendingChecks"]
