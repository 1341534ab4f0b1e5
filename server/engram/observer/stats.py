"""Cross-session statistics in SQLite: the co-access graph, signal frequencies, tool-sequence
n-grams, what was already promoted, and recent edits for parallel-conflict detection.

Why SQLite: several processes (editor windows, CLI hooks) observe one workspace; SQLite in
WAL mode lets them share counts safely, and the standard library already has it. Session
statistics are written once per finished session in one transaction (docs/observer.md "incremental
synthesis, no LLM"); the only per-event write is the small ``recent_edits`` upsert on edits.

Co-access weights decay with a half-life (default 30 days) so that coupling the team has
since removed fades out; :meth:`ObserverStats.coaccess_partners` is what the code-graph
helper's impact ranking reads. A cold-start seed from git co-commits (history helper's
``GitHistory.coaccess_seed()``) is kept in its own table and blended in at a discount, so
observed behaviour always outweighs history once it exists.
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from engram.observer.patterns import module_of

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY, session_type TEXT, outcome TEXT, started REAL, ended REAL,
    steps INTEGER, validated INTEGER);
CREATE TABLE IF NOT EXISTS files (
    file TEXT PRIMARY KEY, sessions INTEGER NOT NULL, weight REAL NOT NULL, last_ts REAL NOT NULL);
CREATE TABLE IF NOT EXISTS pairs (
    a TEXT NOT NULL, b TEXT NOT NULL, sessions INTEGER NOT NULL, weight REAL NOT NULL,
    last_ts REAL NOT NULL, PRIMARY KEY (a, b));
CREATE INDEX IF NOT EXISTS pairs_b ON pairs (b);
CREATE TABLE IF NOT EXISTS modules (module TEXT PRIMARY KEY, sessions INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS module_files (
    module TEXT NOT NULL, file TEXT NOT NULL, sessions INTEGER NOT NULL,
    PRIMARY KEY (module, file));
CREATE TABLE IF NOT EXISTS seed (
    a TEXT NOT NULL, b TEXT NOT NULL, weight REAL NOT NULL, PRIMARY KEY (a, b));
CREATE INDEX IF NOT EXISTS seed_b ON seed (b);
CREATE TABLE IF NOT EXISTS signal_stats (
    kind TEXT NOT NULL, key TEXT NOT NULL, sessions INTEGER NOT NULL, occurrences INTEGER NOT NULL,
    last_ts REAL NOT NULL, PRIMARY KEY (kind, key));
CREATE TABLE IF NOT EXISTS sequences (
    gram TEXT PRIMARY KEY, n INTEGER NOT NULL, sessions INTEGER NOT NULL, last_ts REAL NOT NULL);
CREATE TABLE IF NOT EXISTS promoted (key TEXT PRIMARY KEY, memory_id TEXT, ts REAL);
CREATE TABLE IF NOT EXISTS recent_edits (
    file TEXT PRIMARY KEY, session_id TEXT NOT NULL, agent_id TEXT, ts REAL NOT NULL);
"""

GRAM_SEP = " → "
#: n-gram lengths mined from validated sessions for workflow recipes (4+ steps, docs/observer.md).
#: Recipes must end in a validation step; ``promoted_like`` finds earlier recipes.
GRAM_LENGTHS = (4, 5, 6, 7, 8)
#: Seed (git co-commit) weights count this much against observed co-access.
SEED_DISCOUNT = 0.5


def _decay(weight: float, last_ts: float, now: float, half_life_s: float) -> float:
    if half_life_s <= 0 or now <= last_ts:
        return weight
    return weight * math.pow(0.5, (now - last_ts) / half_life_s)


class ObserverStats:
    """One SQLite file of observer statistics; safe to share between threads."""

    def __init__(self, path: Path | str, *, half_life_days: float = 30.0) -> None:
        self.path = str(path)
        self.half_life_s = half_life_days * 86400.0
        self._lock = threading.RLock()
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=10.0, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._db.commit()
        self._known: set[tuple[str, ...]] | None = None

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ------------------------------------------------------------------ per-session update

    def record_session(
        self,
        *,
        session_id: str,
        session_type: str,
        outcome: str,
        started: float,
        ended: float,
        steps: int,
        validated: bool,
        accessed: Iterable[str],
        edited: Iterable[str],
        pairs: Iterable[tuple[str, str]],
        signal_keys: dict[tuple[str, str], int],
        labels: Sequence[str],
    ) -> None:
        """Fold one finished session into the cross-session counts (one transaction)."""
        now = ended
        accessed_set = sorted(set(accessed))
        edited_modules = sorted({module_of(f) for f in edited})
        with self._lock, self._db:
            seen = self._db.execute(
                "SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            self._db.execute(
                "INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?)",
                (session_id, session_type, outcome, started, ended, steps, int(validated)),
            )
            # a finished session no longer conflicts with anyone
            self._db.execute("DELETE FROM recent_edits WHERE session_id = ?", (session_id,))
            if seen:  # a session is counted once, even if finalised twice
                return
            for file in accessed_set:
                self._bump("files", ("file",), (file,), now)
            for a, b in sorted({tuple(sorted(p)) for p in pairs}):
                self._bump("pairs", ("a", "b"), (a, b), now)
            for module in edited_modules:
                self._db.execute(
                    "INSERT INTO modules VALUES (?, 1) "
                    "ON CONFLICT(module) DO UPDATE SET sessions = sessions + 1",
                    (module,),
                )
                for file in accessed_set:
                    self._db.execute(
                        "INSERT INTO module_files VALUES (?, ?, 1) "
                        "ON CONFLICT(module, file) DO UPDATE SET sessions = sessions + 1",
                        (module, file),
                    )
            for (kind, key), count in signal_keys.items():
                self._db.execute(
                    "INSERT INTO signal_stats VALUES (?, ?, 1, ?, ?) ON CONFLICT(kind, key) "
                    "DO UPDATE SET sessions = sessions + 1, occurrences = occurrences + ?, "
                    "last_ts = ?",
                    (kind, key, count, now, count, now),
                )
            if validated:
                grams = {
                    tuple(labels[i : i + n])
                    for n in GRAM_LENGTHS
                    for i in range(len(labels) - n + 1)
                }
                for gram in grams:
                    self._db.execute(
                        "INSERT INTO sequences VALUES (?, ?, 1, ?) ON CONFLICT(gram) "
                        "DO UPDATE SET sessions = sessions + 1, last_ts = ?",
                        (GRAM_SEP.join(gram), len(gram), now, now),
                    )
                self._known = None

    def _bump(self, table: str, cols: tuple[str, ...], key: tuple[str, ...], now: float) -> None:
        where = " AND ".join(f"{c} = ?" for c in cols)
        row = self._db.execute(f"SELECT weight, last_ts FROM {table} WHERE {where}", key).fetchone()
        if row is None:
            placeholders = ", ".join("?" for _ in cols)
            self._db.execute(
                f"INSERT INTO {table} ({', '.join(cols)}, sessions, weight, last_ts) "
                f"VALUES ({placeholders}, 1, 1.0, ?)",
                (*key, now),
            )
        else:
            weight = _decay(float(row[0]), float(row[1]), now, self.half_life_s) + 1.0
            self._db.execute(
                f"UPDATE {table} SET sessions = sessions + 1, weight = ?, last_ts = ? "
                f"WHERE {where}",
                (weight, now, *key),
            )

    # ------------------------------------------------------------------ co-access graph

    def file_sessions(self, file: str) -> int:
        with self._lock:
            row = self._db.execute("SELECT sessions FROM files WHERE file = ?", (file,)).fetchone()
        return int(row[0]) if row else 0

    def pair_sessions(self, a: str, b: str) -> int:
        a, b = sorted((a, b))
        with self._lock:
            row = self._db.execute(
                "SELECT sessions FROM pairs WHERE a = ? AND b = ?", (a, b)
            ).fetchone()
        return int(row[0]) if row else 0

    def coaccess_partners(
        self, file: str, k: int = 10, *, now: float | None = None
    ) -> list[tuple[str, float]]:
        """Files accessed together with ``file``, best first, score in [0, 1].

        The observed score is the decayed share of ``file``'s sessions in which the partner
        was accessed within 3 steps; the git seed joins by noisy-or at a discount.
        """
        import time

        now = time.time() if now is None else now
        with self._lock:
            frow = self._db.execute(
                "SELECT weight, last_ts FROM files WHERE file = ?", (file,)
            ).fetchone()
            rows = self._db.execute(
                "SELECT b, weight, last_ts FROM pairs WHERE a = ? "
                "UNION ALL SELECT a, weight, last_ts FROM pairs WHERE b = ?",
                (file, file),
            ).fetchall()
            seeds = self._db.execute(
                "SELECT b, weight FROM seed WHERE a = ? "
                "UNION ALL SELECT a, weight FROM seed WHERE b = ?",
                (file, file),
            ).fetchall()
        scores: dict[str, float] = {}
        if frow is not None:
            base = _decay(float(frow[0]), float(frow[1]), now, self.half_life_s)
            for partner, weight, last_ts in rows:
                w = _decay(float(weight), float(last_ts), now, self.half_life_s)
                scores[partner] = min(1.0, w / base) if base > 0 else 0.0
        for partner, weight in seeds:
            seeded = max(0.0, min(1.0, float(weight))) * SEED_DISCOUNT
            observed = scores.get(partner, 0.0)
            scores[partner] = 1.0 - (1.0 - observed) * (1.0 - seeded)
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
        return [(p, round(s, 4)) for p, s in ranked[: max(0, k)] if s > 0]

    def seed(self, edges: Iterable[tuple[str, str, float]]) -> int:
        """Cold-start co-access from git co-commits: ``(file_a, file_b, weight)`` as
        ``GitHistory.coaccess_seed`` gives them; weights are clamped to [0, 1]."""
        rows: list[tuple[str, str, float]] = []
        for file_a, file_b, weight in edges:
            if file_a and file_b and file_a != file_b:
                a, b = sorted((file_a, file_b))
                rows.append((a, b, max(0.0, min(1.0, float(weight)))))
        with self._lock, self._db:
            self._db.executemany(
                "INSERT INTO seed VALUES (?, ?, ?) ON CONFLICT(a, b) "
                "DO UPDATE SET weight = max(weight, excluded.weight)",
                rows,
            )
        return len(rows)

    # ------------------------------------------------------------------ modules, signals

    def module_sessions(self, module: str) -> int:
        with self._lock:
            row = self._db.execute(
                "SELECT sessions FROM modules WHERE module = ?", (module,)
            ).fetchone()
        return int(row[0]) if row else 0

    def module_files(self, module: str) -> list[tuple[str, int]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT file, sessions FROM module_files WHERE module = ? "
                "ORDER BY sessions DESC, file",
                (module,),
            ).fetchall()
        return [(str(f), int(s)) for f, s in rows]

    def signal_sessions(self, kind: str, key: str) -> tuple[int, int]:
        """(sessions, occurrences) of one signal key across finished sessions."""
        with self._lock:
            row = self._db.execute(
                "SELECT sessions, occurrences FROM signal_stats WHERE kind = ? AND key = ?",
                (kind, key),
            ).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def frequent_sequences(self, min_sessions: int) -> list[tuple[tuple[str, ...], int]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT gram, sessions FROM sequences WHERE sessions >= ? "
                "ORDER BY n DESC, sessions DESC, last_ts DESC, gram",
                (min_sessions,),
            ).fetchall()
        return [(tuple(str(g).split(GRAM_SEP)), int(s)) for g, s in rows]

    def known_sequences(self, min_sessions: int = 2) -> set[tuple[str, ...]]:
        """4-step sequences seen in earlier validated sessions (cached until the next write)."""
        if self._known is None:
            with self._lock:
                rows = self._db.execute(
                    "SELECT gram FROM sequences WHERE n = 4 AND sessions >= ?", (min_sessions,)
                ).fetchall()
            self._known = {tuple(str(r[0]).split(GRAM_SEP)) for r in rows}
        return self._known

    def session_count(self, *, validated: bool | None = None) -> int:
        with self._lock:
            if validated is None:
                row = self._db.execute("SELECT count(*) FROM sessions").fetchone()
            else:
                row = self._db.execute(
                    "SELECT count(*) FROM sessions WHERE validated = ?", (int(validated),)
                ).fetchone()
        return int(row[0])

    # ------------------------------------------------------------------ promotion ledger

    def promoted(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute(
                "SELECT memory_id FROM promoted WHERE key = ?", (key,)
            ).fetchone()
        return str(row[0]) if row else None

    def promoted_like(self, prefix: str) -> list[str]:
        """Ledger keys starting with ``prefix`` (e.g. every promoted recipe)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT key FROM promoted WHERE key >= ? AND key < ?", (prefix, prefix + "\uffff")
            ).fetchall()
        return [str(r[0]) for r in rows]

    def mark_promoted(self, items: Iterable[tuple[str, str]], ts: float) -> None:
        with self._lock, self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO promoted VALUES (?, ?, ?)",
                [(key, mid, ts) for key, mid in items],
            )

    # ------------------------------------------------------------------ parallel edits

    def check_edit(
        self, file: str, session_id: str, agent_id: str | None, ts: float, window_s: float
    ) -> tuple[str, str | None] | None:
        """Record an edit; return the other (session, agent) that edited ``file`` within
        ``window_s`` seconds, if any."""
        with self._lock, self._db:
            row = self._db.execute(
                "SELECT session_id, agent_id, ts FROM recent_edits WHERE file = ?", (file,)
            ).fetchone()
            self._db.execute(
                "INSERT OR REPLACE INTO recent_edits VALUES (?, ?, ?, ?)",
                (file, session_id, agent_id, ts),
            )
        if row is None:
            return None
        other_session, other_agent, other_ts = str(row[0]), row[1], float(row[2])
        if abs(ts - other_ts) > window_s:
            return None
        if other_session == session_id and (other_agent or None) == (agent_id or None):
            return None
        return other_session, (str(other_agent) if other_agent else None)


__all__ = ["GRAM_SEP", "ObserverStats"]
