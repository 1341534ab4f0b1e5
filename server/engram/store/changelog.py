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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from engram.store.sidefile import wal_connect

if TYPE_CHECKING:
    from lancedb.table import Table

    from engram.store.location import StoreLocation

log = logging.getLogger(__name__)

#: Keep this many entries; older ones are pruned on write.
KEEP_ENTRIES = 2000


def walk(conn: sqlite3.Connection, start: int, target: int) -> set[str] | None:
    """Ids the versions ``start`` -> ``target`` touched, following each entry's ``prev``;
    None when the chain breaks. One walk for the engine's :class:`ChangeLog` and the hook's
    digest, which reads the same file with sqlite3 alone (docs/storage.md); sqlite3 and JSON
    errors are the caller's to judge."""
    touched: set[str] = set()
    current = start
    while current < target:
        row = conn.execute(
            "SELECT version, ids FROM changes WHERE prev = ? ORDER BY version DESC LIMIT 1",
            (current,),
        ).fetchone()
        if row is None or int(row[0]) <= current:
            return None
        current = int(row[0])
        touched.update(json.loads(row[1]))
    return touched


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
                self._conn = wal_connect(self.path, timeout=5.0)
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
                return walk(conn, start, target)
            except (sqlite3.Error, ValueError) as exc:
                log.info("store change log unreadable (%s); reloading", exc)
                return None

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def covered_ids(
    entries: Sequence[tuple[int, int, Sequence[str]]], start: int, target: int
) -> set[str] | None:
    """Ids touched in ``(start, target]`` from ``(prev, version, ids)`` ranges, or None on a gap.

    On a shared store several machines commit concurrently, so ranges are not a chain
    (machine A's write may be version 5 built on 3 while B wrote 4): every entry that
    overlaps the span counts, and the span must be covered without a hole.
    """
    reach = start
    touched: set[str] = set()
    for prev, version, ids in sorted(entries):
        if version <= start:
            continue
        if prev > reach:
            break
        reach = max(reach, version)
        touched.update(ids)
    return touched if reach >= target else None


class SharedChangeLog:
    """The change log of a store on object storage: a small LanceDB table beside it.

    Other machines' readers need to know which ids each version touched just as local
    processes do, so the log lives with the data (``<uri>/memories_changes.lance``).
    Entries are appends (which never conflict in LanceDB); each write logs the exact
    version of its own commit, so concurrent writers' entries interleave correctly
    (:func:`covered_ids`). A missing entry means a full reload, as for the local log.
    """

    SCHEMA_FIELDS = (("prev", "int64"), ("version", "int64"), ("ids", "string"))

    def __init__(self, location: StoreLocation, name: str, *, read_only: bool = False) -> None:
        self.location = location
        self.name = name
        self.read_only = read_only
        self._lock = threading.Lock()
        self._table: Table | None = None
        self._writes = 0

    def _open(self, create: bool) -> Table | None:
        if self._table is None:
            import pyarrow as pa

            from engram.store.lancedb_import import import_lancedb

            lancedb = import_lancedb()

            options = dict(self.location.storage_options) or None
            db = lancedb.connect(self.location.uri, storage_options=options)
            schema = pa.schema([pa.field(n, getattr(pa, t)()) for n, t in self.SCHEMA_FIELDS])
            try:
                self._table = db.open_table(self.name)
            except (ValueError, FileNotFoundError):
                if not create:
                    return None
                self._table = db.create_table(self.name, schema=schema, exist_ok=True)
        return self._table

    def record(self, prev: int, version: int, ids: Sequence[str]) -> None:
        """Log that ``(prev, version]`` touched ``ids``. Never raises."""
        if self.read_only or version == prev:
            return
        import pyarrow as pa

        with self._lock:
            try:
                table = self._open(create=True)
                assert table is not None
                table.add(pa.table({"prev": [prev], "version": [version],
                                    "ids": [json.dumps(list(ids))]}))  # fmt: skip
                self._writes += 1
                if self._writes % 100 == 0:
                    table.delete(f"version < {int(version) - KEEP_ENTRIES}")
                    table.optimize()
            except Exception as exc:
                log.info("shared change log not written (%s); readers will reload", exc)

    def touched_since(self, start: int, target: int) -> set[str] | None:
        with self._lock:
            try:
                table = self._open(create=False)
                if table is None:
                    return None
                refresh: Callable[[], object] = table.checkout_latest  # untyped in lancedb
                refresh()
                rows = (
                    table.search().where(f"version > {int(start)}")
                    .select(["prev", "version", "ids"]).limit(None).to_arrow().to_pylist()
                )  # fmt: skip
                entries = [(int(r["prev"]), int(r["version"]), json.loads(r["ids"])) for r in rows]
            except Exception as exc:
                log.info("shared change log unreadable (%s); reloading", exc)
                return None
        return covered_ids(entries, start, target)

    def close(self) -> None:
        with self._lock:
            self._table = None
