"""A small SQLite mirror of the memories, for agent hooks that must answer in milliseconds.

Why: a Claude Code hook is a fresh process per tool call. Opening LanceDB costs ~4.5 s of
imports alone, far over the hook budget (≤ 1.5 s cold, ≤ 150 ms warm). The engine writes
every change to this digest as well (standard-library ``sqlite3``, WAL), so the hook path
reads anchored gotchas and session-start context without importing LanceDB, NumPy or the
model. The digest records the store version it mirrors and advances only along the chain
of writes it was handed; when a write never reached it (another process, or one killed
between its commit and its mirror), :meth:`Digest.is_stale` says so from the store's change
log (a version check, not a timestamp), SessionStart rebuilds it before answering and other
hooks schedule a rebuild in the background instead of blocking the agent (docs/agents.md).

Long on purpose: the writer, the readers and the prompt search share one schema and one
connection, and a hook process imports this module alone (each module more is start-up time
on every agent tool call: tests/agents/test_hook_imports.py pins the set).
"""

from __future__ import annotations

import json
import re
import sqlite3

#: The hook path imports no ``typing``, ``attrs`` or ``logging`` (tests/agents/
#: test_hook_imports.py): each costs a fresh hook process milliseconds; mypy reads these.
TYPE_CHECKING = False
if TYPE_CHECKING:  # the hook path never imports the model
    import logging
    from collections.abc import Callable, Iterable, Sequence
    from pathlib import Path

    from engram.jsontypes import JsonObject
    from engram.model import Memory
    from engram.workspace import Workspace


def _log() -> logging.Logger:
    import logging

    return logging.getLogger(__name__)


DIGEST_FILE = "digest.sqlite"
#: Bump when the tables change: an older digest is dropped and rebuilt (it is only a cache).
DIGEST_SCHEMA = 6
_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    scope TEXT NOT NULL,
    active INTEGER NOT NULL,
    shown INTEGER NOT NULL,
    weight REAL NOT NULL,
    brief TEXT NOT NULL,
    record TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS memory_files (
    file TEXT NOT NULL,
    id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    PRIMARY KEY (file, id)
);
CREATE INDEX IF NOT EXISTS memory_files_id ON memory_files(id);
-- the text row's rowid is its memory's rowid: a memory's text is found without a scan
CREATE VIRTUAL TABLE IF NOT EXISTS memory_text USING fts5(
    id UNINDEXED, content, tokenize = 'porter unicode61'
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

#: Words too common to say what a prompt is about (the prompt search matches the rest).
_STOPWORDS_TEXT = """
a an and are as at be but by can do does for from has have how i if in into is it its me
my no not of on or our please should so that the their then there these this to us was
we what when where which while who why will with would you your
"""
_STOPWORDS = frozenset(_STOPWORDS_TEXT.split())


class Brief:
    """What a hook renders of a memory, read without rebuilding the full record (a plain
    value class: the hook path does not import ``attrs``)."""

    __slots__ = (
        "conflicts",
        "content",
        "file",
        "id",
        "line",
        "needs_review",
        "reviewed",
        "shared_by",
        "team_file",
        "type",
    )
    #: the fields in the order the digest stores them (:meth:`as_dict`)
    FIELDS = (
        "id",
        "type",
        "content",
        "file",
        "line",
        "needs_review",
        "conflicts",
        "shared_by",
        "team_file",
        "reviewed",
    )

    def __init__(
        self,
        id: str,
        type: str,
        content: str,
        file: str | None = None,
        line: int | None = None,
        needs_review: bool = False,
        conflicts: list[str] | None = None,
        shared_by: str | None = None,
        team_file: str | None = None,
        reviewed: bool = False,
    ) -> None:
        self.id = id
        self.type = type
        self.content = content
        self.file = file
        self.line = line
        self.needs_review = needs_review
        #: ids of the memories this one is linked to as a conflict (shown with it, marked)
        self.conflicts: list[str] = list(conflicts or [])
        #: a teammate's memory: who shared it and from which team file (shown as quoted data)
        self.shared_by = shared_by
        self.team_file = team_file
        self.reviewed = reviewed

    def as_dict(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self.FIELDS}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Brief) and self.as_dict() == other.as_dict()

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items())
        return f"Brief({inner})"

    @classmethod
    def of(cls, memory: Memory, conflicts: list[str]) -> Brief:
        anchor = memory.anchors[0] if memory.anchors else None
        origin = memory.extra.get("team")  # engram.model.TEAM_KEY; the hook path stays light
        team = origin if isinstance(origin, dict) else None
        return cls(
            id=memory.id,
            type=memory.type.value,
            content=memory.content,
            file=anchor.file if anchor else None,
            line=anchor.start_line if anchor else None,
            needs_review=memory.needs_review,
            conflicts=conflicts,
            shared_by=str(team.get("by") or "the team") if team else None,
            team_file=str(team.get("file") or "") or None if team else None,
            reviewed=bool(team) and memory.user_verified,
        )

    @property
    def from_team(self) -> bool:
        return self.shared_by is not None


def _weight(memory: Memory) -> float:
    """Order of preference inside the digest: pinned and verified first, then confidence."""
    return (
        memory.confidence + (1.0 if memory.pinned else 0.0) + (0.5 if memory.user_verified else 0)
    )


#: LanceDB creates the (empty) memory table at this version.
_FIRST_VERSION = 1
_INVERTED = 2**63  # LanceDB names manifests u64::MAX - version (newest sorts first)


def lance_manifest_marker(workspace: Workspace) -> str:
    """The newest manifest of the memory table as a string, "" when there is none: a cheap
    "did the store move" marker (the workspace engine polls it, docs/engine.md)."""
    version = lance_table_version(workspace)
    return "" if version is None else str(version)


def lance_table_version(workspace: Workspace) -> int | None:
    """The newest version of the memory table, read from its manifest names only."""
    versions = workspace.engram_dir / "memories.lance" / "_versions"
    found: list[int] = []
    try:
        for path in versions.iterdir():
            if path.suffix != ".manifest" or not path.stem.isdigit():
                continue
            number = int(path.stem)
            found.append(2**64 - 1 - number if number >= _INVERTED else number)
    except OSError:
        return None
    return max(found, default=None)


def _touched_between(workspace: Workspace, start: int, target: int) -> set[str] | None:
    """Ids the store's change log says versions ``start`` -> ``target`` touched, or None
    when the chain breaks (read with sqlite3 directly: the hook never imports the store).
    The log's format is :class:`engram.store.changelog.ChangeLog`'s."""
    path = workspace.engram_dir / "memories.changes.sqlite"
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2.0)
    except sqlite3.Error:
        return None
    from engram.store.changelog import walk

    try:
        return walk(conn, start, target)
    except (sqlite3.Error, ValueError):
        return None
    finally:
        conn.close()


def _damaged(exc: sqlite3.DatabaseError) -> bool:
    """Not (or no longer) an SQLite database, as opposed to a busy or locked one."""
    return getattr(exc, "sqlite_errorcode", None) in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT)


class MirrorRules:
    """What the trust model says of a memory, as the mirror needs it (docs/trust.md). The
    engine passes ``lifecycle.trust``'s rules in, so storage never imports the trust model
    (import-linter's layers, docs/architecture.md)."""

    __slots__ = ("conflicts", "shown")

    def __init__(
        self, shown: Callable[[Memory], bool], conflicts: Callable[[Memory], list[str]]
    ) -> None:
        #: whether an editor or agent may ever receive it (``lifecycle.trust.is_shown``)
        self.shown = shown
        #: the ids it is linked to as a conflict (``lifecycle.trust.conflict_ids``)
        self.conflicts = conflicts


class Digest:
    """Read and write access to ``.engram/digest.sqlite``; writing needs ``rules`` (a hook
    only reads)."""

    def __init__(self, workspace: Workspace, *, rules: MirrorRules | None = None) -> None:
        self.workspace = workspace
        self.rules = rules
        self._conn: sqlite3.Connection | None = None
        #: why a reader could not read the file (not an SQLite database); doctor names it
        self.unreadable: str | None = None

    @property
    def path(self) -> Path:
        return self.workspace.engram_dir / DIGEST_FILE

    def _connect(self, create: bool) -> sqlite3.Connection | None:
        """The connection, opened once; ``None`` for a reader when there is no digest.

        A cache of the store: a file that is not a readable database reads as missing (so
        as stale) and a writer replaces it (it failed every hook, doctor and the rebuild).
        """
        if self._conn is not None:
            return self._conn
        if not create and not self.path.exists():
            return None
        self.workspace.check_engram_data_is_own()  # hooks never inject a clone's memories
        if create:
            self.workspace.ensure_engram_dir()
        try:
            conn = self._open()
        except sqlite3.DatabaseError as exc:
            if not _damaged(exc):
                raise
            self.unreadable = str(exc)
            if not create:
                _log().warning("the agent digest %s is unreadable (%s)", self.path, exc)
                return None
            _log().warning("the agent digest %s was unreadable (%s): rebuilt", self.path, exc)
            for suffix in ("", "-wal", "-shm"):
                self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
            conn = self._open()
            self.unreadable = None
        self._conn = conn
        return conn

    def _open(self) -> sqlite3.Connection:
        # as ``store.sidefile.wal_connect`` (why NORMAL: its docstring), written out here:
        # hooks read through this connection and import only the standard library
        conn = sqlite3.connect(self.path, timeout=5.0, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            if conn.execute("PRAGMA user_version").fetchone()[0] != DIGEST_SCHEMA:
                # an older layout: drop it; with no manifest recorded it reads as stale
                conn.executescript(
                    "DROP TABLE IF EXISTS memory_files; DROP TABLE IF EXISTS memories;"
                    " DROP TABLE IF EXISTS memory_text; DROP TABLE IF EXISTS meta;"
                )
                conn.execute(f"PRAGMA user_version = {DIGEST_SCHEMA}")
            conn.executescript(_SCHEMA)
        except BaseException:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # ----------------------------------------------------------------- writing

    def apply(
        self,
        upserts: Iterable[Memory] = (),
        deleted_ids: Sequence[str] = (),
        *,
        writes: Sequence[tuple[int, int]] | None = None,
    ) -> None:
        """Mirror a store write: insert or replace ``upserts``, drop ``deleted_ids``.

        ``writes`` are the store versions (prev, version) this change committed. The digest's
        version advances only along that chain: if a write in between was never mirrored (a
        process killed after its commit), the version stays behind and :meth:`is_stale`
        says so until a rebuild, whatever later writes do (a version check, not a time).
        """
        conn = self._connect(create=True)
        assert conn is not None
        with conn:
            for memory_id in deleted_ids:
                self._drop_text(conn, memory_id)
                conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
            for memory in upserts:
                self._put(conn, memory)
            current = self._version(conn)
            for prev, version in sorted(writes or ()):
                if current is None:
                    # a digest that never mirrored anything may adopt only a chain that
                    # starts at the empty table; otherwise it waits for a rebuild
                    if prev <= _FIRST_VERSION:
                        current = version
                elif current == prev or (
                    current < prev and _touched_between(self.workspace, current, prev) == set()
                ):
                    current = version  # only compactions happened in between
            if current is not None:
                conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES ('version', ?)",
                    (str(current),),
                )

    def rebuild(self, memories: Iterable[Memory], version: int | None = None) -> int:
        """Replace the whole mirror (after an import, or when it was found stale).

        ``version``: the store version ``memories`` were read at (default: the newest table
        version on disk, which a concurrent writer may already have moved past).
        """
        conn = self._connect(create=True)
        assert conn is not None
        count = 0
        with conn:
            conn.execute("DELETE FROM memory_files")
            conn.execute("DELETE FROM memory_text")
            conn.execute("DELETE FROM memories")
            for memory in memories:
                self._put(conn, memory, fresh=True)
                count += 1
            if version is None:
                version = lance_table_version(self.workspace)
            conn.execute("DELETE FROM meta WHERE key = 'version'")
            if version is not None:
                conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES ('version', ?)",
                    (str(version),),
                )
        return count

    @staticmethod
    def _version(conn: sqlite3.Connection) -> int | None:
        row = conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
        try:
            return int(row[0]) if row else None
        except ValueError:
            return None

    @staticmethod
    def _drop_text(conn: sqlite3.Connection, memory_id: str) -> None:
        """Remove a memory's full-text row by rowid (by ``id`` it is a scan of every row:
        a rebuild of 100,000 memories did not finish in half an hour)."""
        row = conn.execute("SELECT rowid FROM memories WHERE id = ?", (memory_id,)).fetchone()
        if row is not None:
            conn.execute("DELETE FROM memory_text WHERE rowid = ?", (row[0],))

    def _put(self, conn: sqlite3.Connection, memory: Memory, *, fresh: bool = False) -> None:
        """Insert or replace one memory; ``fresh``: the tables were just emptied."""
        from engram.model import memory_to_dict  # writers hold the model already

        if self.rules is None:
            raise RuntimeError("this digest was opened for reading: it has no trust rules")
        # docs/trust.md: flagged, deprecated, retired and forgotten never reach an agent;
        # stale ones are not injected unasked, but still shown next to a conflict partner
        shown = self.rules.shown(memory)
        active = shown and memory.stale_at is None
        if not fresh:
            self._drop_text(conn, memory.id)
            conn.execute("DELETE FROM memory_files WHERE id = ?", (memory.id,))
        cursor = conn.execute(
            "INSERT OR REPLACE INTO memories(id, type, scope, active, shown, weight, brief,"
            " record) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                memory.id,
                memory.type.value,
                memory.scope.value,
                int(active),
                int(shown),
                _weight(memory),
                json.dumps(Brief.of(memory, self.rules.conflicts(memory)).as_dict()),
                json.dumps(memory_to_dict(memory), ensure_ascii=False),
            ),
        )
        conn.executemany(
            "INSERT OR IGNORE INTO memory_files(file, id) VALUES (?, ?)",
            [(f, memory.id) for f in memory.files],
        )
        if active:
            conn.execute(
                "INSERT INTO memory_text(rowid, id, content) VALUES (?, ?, ?)",
                (cursor.lastrowid, memory.id, memory.content),
            )

    def mark_version(self, version: int) -> None:
        """Record the store version the digest mirrors (a shared store, which has no local
        manifest to compare: see ``Engine._follow_shared_store``)."""
        conn = self._connect(create=True)
        if conn is None:
            return
        with conn:
            conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('store_version', ?)",
                (str(int(version)),),
            )

    def mirrored_version(self) -> int | None:
        """The store version last recorded by :meth:`mark_version`, if any."""
        conn = self._connect(create=False)
        if conn is None:
            return None
        row = conn.execute("SELECT value FROM meta WHERE key = 'store_version'").fetchone()
        try:
            return int(row[0]) if row else None
        except ValueError:
            return None

    # ----------------------------------------------------------------- reading

    def is_stale(self) -> bool:
        """True when the store holds a change the digest has not mirrored.

        The digest knows the table version it mirrors; every version after it must have
        touched no memory (a compaction) according to the store's change log, else the
        digest lacks something: a write by a process killed before it mirrored, or one
        whose change log entry is missing.
        """
        table = lance_table_version(self.workspace)
        conn = self._connect(create=False)
        if conn is None:
            return table is not None
        mirrored = self._version(conn)
        if table is None:
            return False
        if mirrored is None:
            return True
        if mirrored >= table:
            return False
        touched = _touched_between(self.workspace, mirrored, table)
        return touched is None or bool(touched)

    def lag(self) -> tuple[int | None, int | None]:
        """(mirrored version, table version), for ``engram doctor``."""
        conn = self._connect(create=False)
        mirrored = self._version(conn) if conn is not None else None
        return mirrored, lance_table_version(self.workspace)

    def _rows(self, sql: str, params: Sequence[str | int | float]) -> list[Brief]:
        conn = self._connect(create=False)
        if conn is None:
            return []
        out: list[Brief] = []
        for (brief,) in conn.execute(sql, params):
            try:
                out.append(Brief(**json.loads(brief)))
            except (ValueError, TypeError) as exc:
                _log().warning("skipping unreadable digest row: %s", exc)
        return out

    def for_file(self, file: str, types: Sequence[str], limit: int = 20) -> list[Brief]:
        """Active memories anchored to or related to ``file``, of ``types``, best first."""
        if not types:
            return []
        marks = ",".join("?" * len(types))
        return self._rows(
            "SELECT m.brief FROM memories m JOIN memory_files f ON f.id = m.id"
            f" WHERE f.file = ? AND m.active = 1 AND m.type IN ({marks})"
            " ORDER BY m.weight DESC LIMIT ?",
            [file, *types, limit],
        )

    def records_for_file(self, file: str) -> list[JsonObject]:
        """Full records (``memory_to_dict``) of the memories anchored to or related to ``file``
        an editor may be shown (docs/trust.md): what the language server shows before the
        engine answers."""
        conn = self._connect(create=False)
        if conn is None:
            return []
        out: list[JsonObject] = []
        rows = conn.execute(
            "SELECT m.record FROM memories m JOIN memory_files f ON f.id = m.id"
            " WHERE f.file = ? AND m.shown = 1 AND m.record != ''",
            (file,),
        )
        for (record,) in rows:
            try:
                value = json.loads(record)
            except ValueError:
                continue
            if isinstance(value, dict):
                out.append(value)
        return out

    def by_type(
        self, types: Sequence[str], scopes: Sequence[str] | None = None, limit: int = 20
    ) -> list[Brief]:
        """Active memories of ``types`` (optionally only ``scopes``), best first."""
        if not types:
            return []
        params: list[str | int | float] = list(types)
        where = f"m.type IN ({','.join('?' * len(types))}) AND m.active = 1"
        if scopes:
            where += f" AND m.scope IN ({','.join('?' * len(scopes))})"
            params.extend(scopes)
        params.append(limit)
        return self._rows(
            f"SELECT m.brief FROM memories m WHERE {where} ORDER BY m.weight DESC LIMIT ?",
            params,
        )

    def shown(self, ids: Sequence[str]) -> list[Brief]:
        """The memories of ``ids`` an agent may be shown (conflict partners, any file)."""
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        return self._rows(
            f"SELECT m.brief FROM memories m WHERE m.id IN ({marks}) AND m.shown = 1",
            list(ids),
        )

    def search(self, text: str, types: Sequence[str], limit: int = 10) -> list[tuple[Brief, int]]:
        """Active memories sharing words with ``text`` (BM25 order), each with how many of
        the text's distinct words it contains, so callers can keep only real matches."""
        conn = self._connect(create=False)
        if conn is None or not types:
            return []
        words = prompt_terms(text)
        if not words:
            return []
        query = " OR ".join(f'"{w}"' for w in words)
        marks = ",".join("?" * len(types))
        try:
            rows = conn.execute(
                "SELECT m.brief, t.content FROM memory_text t JOIN memories m ON m.id = t.id"
                f" WHERE memory_text MATCH ? AND m.active = 1 AND m.type IN ({marks})"
                " ORDER BY bm25(memory_text) LIMIT ?",
                [query, *types, limit * 3],
            ).fetchall()
        except sqlite3.OperationalError as exc:  # a digest without the text table
            _log().warning("digest search unavailable: %s", exc)
            return []
        out: list[tuple[Brief, int]] = []
        wanted = {_stem(w) for w in words}
        for brief, content in rows:
            have = {_stem(w) for w in prompt_terms(content, keep_all=True, limit=None)}
            try:
                out.append((Brief(**json.loads(brief)), len(wanted & have)))
            except (ValueError, TypeError) as exc:
                _log().warning("skipping unreadable digest row: %s", exc)
        return out[:limit]

    def holds(self, memory_id: str) -> bool:
        """Whether the store this digest mirrors has ``memory_id`` (in any state)."""
        conn = self._connect(create=False)
        if conn is None:
            return False
        row = conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory_id,)).fetchone()
        return row is not None

    def count(self) -> int:
        conn = self._connect(create=False)
        if conn is None:
            return 0
        return int(conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])


def prompt_terms(text: str, *, keep_all: bool = False, limit: int | None = 32) -> list[str]:
    """Distinct lower-case words of ``text`` worth matching (no stopwords, 3+ characters)."""
    seen: dict[str, None] = {}
    for word in re.findall(r"[A-Za-z0-9_]+", text.lower()):
        for part in [word, *word.split("_")] if "_" in word else [word]:
            if len(part) >= 3 and (keep_all or part not in _STOPWORDS):
                seen.setdefault(part, None)
    return list(seen)[:limit] if limit is not None else list(seen)


def _stem(word: str) -> str:
    """A crude suffix strip, so "refunds" and "refund" count as one word (FTS uses porter)."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word
