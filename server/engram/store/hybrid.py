"""One LanceDB table with a native full-text index, written under the store's writer lock.

:class:`HybridTable` is the machinery shared by the memory store and the code-chunk store:

* **Opening** is lazy (``import lancedb`` costs seconds) and read-only opens never create
  anything. Any failure of LanceDB to open or read the table becomes a one-line
  :class:`StoreError` naming the path and what to do, never a LanceDB traceback.
* **Versions.** Every read first asks LanceDB for the latest version (``checkout_latest``,
  ~0.1 ms): callers compare it with the version their in-process snapshot was built from.
* **Writes** run under the inter-process :class:`WriteLock`, after re-reading the latest
  version, so a write never builds on a stale view. Rows are upserted with
  ``merge_insert`` on the key column (one version per batch).
* **A shared store** (``store.uri = "s3://…"``, :class:`StoreLocation`): the writer lock
  only orders this machine's processes, so a write that loses a commit race to another
  machine is retried (``commit_retries``, after bringing the caller's snapshot up to the
  new latest version); and since asking an object store for its latest version is a
  network round trip, reads ask at most every ``refresh_seconds`` (another machine's write
  shows up within that time; this process's own writes show at once).
* **Full-text search** uses LanceDB's native BM25 index on one text column. The index is
  created after the first rows exist (never on an empty table). Rows written since the
  last index build are still searched (LanceDB scans unindexed fragments), so a fresh
  write is found immediately; every ``OPTIMIZE_EVERY_WRITES`` writes (or when many rows
  are unindexed) the table is optimised: fragments compacted, the index brought up to
  date, versions older than ``CLEANUP_AFTER`` removed so they do not pile up.

Long on purpose: opening, the version check, the retried writes and the index upkeep all
decide together what a reader may see of another process's (or machine's) commit; split
apart, each part would need the others' state (the mutex, the stamps, the open table).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import attrs

from engram.store.errors import AfterCommitError, StoreError
from engram.store.fts_text import query_terms
from engram.store.location import StoreLocation
from engram.store.lock import WriteLock

if TYPE_CHECKING:
    import pyarrow as pa
    from lancedb.db import DBConnection
    from lancedb.table import Table

log = logging.getLogger(__name__)

#: Optimise (compact + index + cleanup) after this many writes by one process.
OPTIMIZE_EVERY_WRITES = 20
#: ... or as soon as this many rows are outside the FTS index.
MAX_UNINDEXED_ROWS = 2000
#: Versions older than this are removed on optimise. Not zero: another process may be
#: reading an older version right now (readers re-check the latest version before each
#: read and retry once, so a minute is ample).
CLEANUP_AFTER = timedelta(seconds=60)

META_TABLE = b"engram.table"
META_TABLE_VERSION = b"engram.table_version"

T = TypeVar("T")
#: A directory mtime older than this is trusted not to hide a same-tick second write.
_SETTLED_NS = 2_000_000_000


_RUST_LOCATION = re.compile(r",?\s*/\S+\.rs:\d+(?::\d+)?.*$")


def _one_line(exc: BaseException) -> str:
    """The gist of a LanceDB error: one line, without Rust source locations or details."""
    text = " ".join(str(exc).split())
    text = text.split(" Detail: ", 1)[0]
    text = _RUST_LOCATION.sub("", text)
    return text[:200] or type(exc).__name__


@attrs.frozen
class WriteResult:
    """Versions around one write: the latest before it (``prev``), the version of the write's
    own commit (``commit``) and the latest after any index/compaction it triggered (``end``).

    On a local store (one writer at a time) ``commit == prev + 1``; on a shared store other
    machines' commits may sit between ``prev`` and ``commit``: :attr:`foreign` says so.
    """

    prev: int
    commit: int
    end: int

    @property
    def foreign(self) -> bool:
        return self.commit > self.prev + 1


@attrs.define
class BulkWrites:
    """One :meth:`HybridTable.bulk` run: ``upkeep`` False skips its index upkeep at the end."""

    upkeep: bool = True


_CONFLICT_WORDS = ("conflict", "retryable", "concurrent", "precondition", "already exists")


def _not_found(exc: BaseException) -> bool:
    """LanceDB's answer for a table that has no committed version ("… was not found")."""
    return "not found" in str(exc).lower()


def is_commit_conflict(exc: BaseException) -> bool:
    """A commit that lost a race to another writer (LanceDB says "commit conflict")."""
    text = str(exc).lower()
    return any(word in text for word in _CONFLICT_WORDS)


class HybridTable:
    """A LanceDB table ``<location>/<name>.lance`` with BM25 search on ``text_column``
    (``None``: a table searched by vector and key only, which keeps no FTS index).

    ``schema`` must carry ``engram.table_version`` metadata; a table written by a newer
    Engram is refused, an older one is handed to ``migrate(table, old_version)`` (under
    the lock) before first use.
    """

    def __init__(
        self,
        location: StoreLocation | Path,
        name: str,
        schema: pa.Schema,
        *,
        key_column: str,
        text_column: str | None,
        lock: WriteLock | None,
        read_only: bool = False,
        migrate: Callable[[Table, int], None] | None = None,
        cleanup_after: timedelta = CLEANUP_AFTER,
    ) -> None:
        if isinstance(location, Path):
            location = StoreLocation.local(location)
        self.location = location
        self.remote = location.remote
        self.directory = location.local_dir
        self.cleanup_after = cleanup_after
        self.name = name
        #: where the table lives, for messages (a path, or a URI without credentials)
        self.path = (
            location.table_uri(name) if self.remote else str(Path(location.uri) / f"{name}.lance")
        )
        self._local_path: Path | None = None if self.remote else Path(self.path)
        #: when this process last asked a remote store for its latest version
        self._checked_at = 0.0
        self.schema = schema
        self.key_column = key_column
        self.text_column = text_column
        self.read_only = read_only
        self._lock = lock
        self._migrate = migrate
        self._db: DBConnection | None = None
        self._table: Table | None = None
        self._mutex = threading.RLock()
        self._writes_since_optimize = 0
        #: inside :meth:`bulk`: index upkeep waits for the end of the run
        self._bulk = False
        #: called instead of optimising inside the write that made it due (the engine:
        #: :meth:`compact` after the reply); ``None``: the write optimises itself
        self.upkeep_later: Callable[[], None] | None = None
        self._upkeep_asked = False
        #: a table with no text column looked for an older layout's FTS index
        self._fts_checked = False
        self._stamp: tuple[int, int, int] | None = None
        #: ``_versions/`` as our own last write left it, stat'ed under the writer lock
        #: (see ``_maybe_changed``)
        self._own_stamp: tuple[int, int, int] | None = None
        #: the writer lock's hold that write was made in (``WriteLock.hold_id``)
        self._own_hold = 0
        #: the version last read from LanceDB, valid while ``_versions/`` has not moved
        self._version: int | None = None
        meta = schema.metadata or {}
        self.table_version = int(meta.get(META_TABLE_VERSION, b"1"))

    # ------------------------------------------------------------------ errors

    def error(self, action: str, exc: BaseException) -> StoreError:
        from engram.errors import disk_trouble

        # a full disk or a read-only file system is no damage: never advise deleting it
        advice = disk_trouble(exc) or (
            "move it aside and re-import an export (`engram import`), or delete it to start empty"
        )
        return StoreError(
            f"cannot {action} the Engram store at {self.path} ({_one_line(exc)}); {advice}"
        )

    def guard(self, action: str, fn: Callable[[], T]) -> T:
        """Run ``fn``; LanceDB/Arrow/OS failures become one :class:`StoreError` line."""
        try:
            return fn()
        except StoreError:
            raise
        except Exception as exc:  # lancedb raises RuntimeError/OSError/ValueError/...
            raise self.error(action, exc) from exc

    # ------------------------------------------------------------------ opening

    def _connect(self) -> DBConnection:
        if self._db is None:
            from engram.store.lancedb_import import import_lancedb

            lancedb = import_lancedb()
            loc = self.location
            options = dict(loc.storage_options) or None
            self._db = self.guard("open", lambda: lancedb.connect(loc.uri, storage_options=options))
        return self._db

    def exists(self) -> bool:
        if self._local_path is not None:
            return self._local_path.is_dir()
        return self.name in self._remote_tables()

    def _remote_tables(self) -> list[str]:
        db = self._connect()

        def names() -> list[str]:
            listed = db.list_tables() if hasattr(db, "list_tables") else db.table_names()
            tables = getattr(listed, "tables", listed)
            return [str(t) for t in tables]

        return self.guard("open", names)

    def table(self) -> Table | None:
        """The open table at its latest version, or ``None`` when it does not exist yet."""
        return self._current()[0]

    def _current(self) -> tuple[Table | None, bool]:
        """The table, and whether it may have moved since the last look (see below)."""
        with self._mutex:
            if self._table is None:
                if not self.exists():
                    return None, True
                db = self._connect()
                try:
                    self._table = db.open_table(self.name)
                except Exception as exc:  # lancedb raises ValueError/RuntimeError/OSError
                    if self.remote and _not_found(exc):
                        # listed but without a committed version: another machine is
                        # creating it right now (its data files land before its first
                        # manifest), so for us it does not exist yet (docs/storage.md)
                        log.info("%s is being created elsewhere: %s", self.path, _one_line(exc))
                        return None, True
                    raise self.error("open", exc) from exc
                self._check_version(self._table)
                return self._table, True
            if self._maybe_changed():
                self.guard("read", self._table.checkout_latest)
                return self._table, True
            return self._table, False

    def _maybe_changed(self) -> bool:
        """Could another writer have committed since we last looked?

        ``checkout_latest`` is ~0.1 ms on an idle machine but several ms when the CPU is
        busy (it round-trips through LanceDB's event loop), and it runs before every read.
        A new version always adds a manifest to ``_versions/``, which changes that
        directory's mtime; so an unchanged mtime that is older than the filesystem's
        timestamp granularity (we allow 2 s) proves nothing was committed. Anything recent
        or unexpected falls back to asking LanceDB. A remote store has no mtime to look
        at: it is asked at most every ``refresh_seconds``.
        """
        if self._local_path is None:
            now = time.monotonic()
            if now - self._checked_at >= self.location.refresh_seconds:
                self._checked_at = now
                return True
            return False
        try:
            st = os.stat(self._local_path / "_versions")
        except OSError:
            return True
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        settled = time.time_ns() - st.st_mtime_ns > _SETTLED_NS
        if stamp == self._stamp and settled:
            return False
        lock = self._lock
        if stamp == self._own_stamp and lock is not None and lock.still_ours(self._own_hold):
            # our own write moved it last, and nobody has taken the writer lock since that
            # write (every local commit is under it): the version we know is the latest.
            # The record alone is ours inside any later hold, though another process may
            # have written between the two in the same tick of a coarse clock (the stamp
            # alike): hence the hold the write was made in
            return False
        self._stamp = stamp if settled else None
        return True

    def _note_own_write(self) -> None:
        """After our commit, still under the writer lock: how ``_versions/`` looks now."""
        self._own_stamp = None
        self._own_hold = self._lock.hold_id if self._lock is not None else 0
        with suppress(OSError):
            if self._local_path is not None:
                st = os.stat(self._local_path / "_versions")
                self._own_stamp = (st.st_ino, st.st_mtime_ns, st.st_size)

    def _check_version(self, table: Table) -> None:
        meta = self.guard("read", lambda: table.schema.metadata) or {}
        found = int(meta.get(META_TABLE_VERSION, b"1"))
        if found > self.table_version:
            raise StoreError(
                f"the Engram store at {self.path} has table version {found}, newer than this "
                f"Engram ({self.table_version}); upgrade Engram"
            )
        if found < self.table_version:
            if self.read_only or self._migrate is None:
                raise StoreError(
                    f"the Engram store at {self.path} has table version {found} and needs a "
                    f"migration to {self.table_version}; open it once without read-only mode"
                )
            with self._hold():
                self._migrate(table, found)

    def version(self) -> int:
        """The latest committed version (0 when the table does not exist).

        Asked before every read; when ``_versions/`` has not moved (``_maybe_changed``)
        the version read last time is still the latest, and LanceDB (a round trip through
        its event loop, 0.1 to several ms) is not asked again.
        """
        with self._mutex:
            table, moved = self._current()
            if table is None:
                self._version = None
                return 0
            if moved or self._version is None:
                self._version = int(self.guard("read", lambda: table.version))
            return self._version

    def _hold(self) -> AbstractContextManager[None]:
        if self._lock is None:
            raise StoreError(f"the Engram store at {self.path} was opened read-only")
        return self._lock.hold()

    def hold(self) -> AbstractContextManager[None]:
        """The writer lock (re-entrant within this process), taken before any of the
        table's or its owner's mutexes: the one order every thread takes them in."""
        return self._hold()

    @contextmanager
    def held(self) -> Iterator[None]:
        """The writer lock for a read-modify-write: while it is held no other process
        commits, and the next look at the version asks again (a remote store too)."""
        with self._hold():
            with self._mutex:
                self._checked_at = 0.0
            yield

    # ------------------------------------------------------------------ reading

    def read_all(self, columns: Sequence[str] | None = None) -> tuple[pa.Table | None, int]:
        """All rows (optionally some columns) and the version they were read at.

        ``columns`` are projected in the scan, so the columns left out are never read:
        reading the whole table and selecting afterwards held every text column of a
        200k-memory or 500k-chunk table in memory at once (issue 18, docs/lsp.md
        "Memory at scale").
        """

        def attempt() -> tuple[pa.Table | None, int]:
            table = self.table()
            if table is None:
                return None, 0
            version = int(table.version)
            if columns is None:
                return table.to_arrow(), version
            data: pa.Table = table.search().select(list(columns)).limit(None).to_arrow()
            return data, version

        return self._with_retry("read", attempt)

    def _with_retry(self, action: str, fn: Callable[[], T]) -> T:
        """Run a read; on failure re-open at the latest version and try once more.

        Another process may compact the table and remove the files of the version this
        handle was at, between our version check and the read.
        """
        try:
            return fn()
        except StoreError:
            raise
        except Exception as first:
            log.debug("store read failed once, re-opening: %s", first)
            with self._mutex:
                self._table = None
                self._stamp = None
                self._own_stamp = None
                self._version = None
            try:
                return fn()
            except StoreError:
                raise
            except Exception as exc:
                raise self.error(action, exc) from exc

    def fetch(self, where: str, columns: Sequence[str]) -> pa.Table | None:
        """Rows matching a SQL filter (a scan, for a few rows), at the latest version."""

        def attempt() -> pa.Table | None:
            table = self.table()
            if table is None:
                return None
            result: pa.Table = (
                table.search().where(where).select(list(columns)).limit(None).to_arrow()
            )
            return result

        return self._with_retry("read", attempt)

    def keyword_search(self, query: str, k: int, where: str | None) -> list[tuple[str, float]]:
        """BM25 over the text column: ``(key, score)`` of the best ``k`` rows, best first."""
        terms = query_terms(query)
        if not terms or k <= 0:
            return []

        column = self.text_column
        if column is None:
            return []

        def attempt() -> list[tuple[str, float]]:
            table = self.table()
            if table is None or not self._has_fts(table):
                return []
            builder = (
                table.search(" ".join(terms), query_type="fts", fts_columns=column)
                .limit(k)
                .select([self.key_column, "_score"])
            )
            if where:
                builder = builder.where(where, prefilter=True)
            found = builder.to_arrow()
            keys = found.column(self.key_column).to_pylist()
            scores = found.column("_score").to_pylist()
            return [(str(key), float(score)) for key, score in zip(keys, scores, strict=True)]

        return self._with_retry("search", attempt)

    def _has_fts(self, table: Table) -> bool:
        if self.text_column is None:
            return False
        indices = self.guard("read", table.list_indices)
        return any(
            getattr(ix, "index_type", "") == "FTS" and self.text_column in ix.columns
            for ix in indices
        )

    def _drop_unused_fts(self, table: Table) -> None:
        """A table with no text column: drop an FTS index an older layout built (the chunk
        table's over ``search_text``), so that no ``optimize`` brings it up to date again;
        looked for once a process, at its first write."""
        self._fts_checked = True
        for ix in self.guard("read", table.list_indices):
            if getattr(ix, "index_type", "") == "FTS":
                self.guard("index", functools.partial(table.drop_index, str(ix.name)))

    # ------------------------------------------------------------------ writing

    def write(
        self,
        fn: Callable[[Table], object],
        *,
        before: Callable[[int], None] | None = None,
        after: Callable[[WriteResult], None] | None = None,
    ) -> WriteResult:
        """Run ``fn(table)`` under the writer lock; returns the versions around the write.

        ``before(version)`` runs under the lock after re-reading the latest version and
        before ``fn``, so the caller can bring its snapshot up to date first;
        ``after(result)`` runs under the lock once the write (and any compaction it
        triggered) is committed. On a shared store a write that loses a commit race is
        retried: ``before`` runs again at the new latest version, then ``fn``.
        """
        if self.read_only:
            raise StoreError(f"the Engram store at {self.path} was opened read-only")
        retries = self.location.commit_retries if self.remote else 0
        with self._mutex, self._hold():
            attempt = 0
            while True:
                table = self.table() if attempt == 0 else self._latest()
                if table is None:
                    table = self._create()
                prev = int(table.version)
                if before is not None:
                    before(prev)
                try:
                    fn(table)
                    break
                except StoreError:
                    raise
                except Exception as exc:
                    if attempt >= retries or not is_commit_conflict(exc):
                        raise self.error("write", exc) from exc
                    attempt += 1
                    log.info("commit conflict on %s, retry %d: %s", self.path, attempt,
                             _one_line(exc))  # fmt: skip
                    time.sleep(min(1.0, 0.05 * 2**attempt))
            try:
                return self._committed(table, prev, after)
            except AfterCommitError:
                raise
            except Exception as exc:  # the data is stored: say so, so its trail stays
                from engram.errors import disk_trouble

                advice = disk_trouble(exc)
                raise AfterCommitError(
                    f"the change was stored in {self.path}, but a step after it failed "
                    f"({_one_line(exc)})" + (f"; {advice}" if advice else "")
                ) from exc

    def _committed(
        self, table: Table, prev: int, after: Callable[[WriteResult], None] | None
    ) -> WriteResult:
        """What :meth:`write` does once ``fn`` committed: index upkeep, ``after``."""
        commit = int(self.guard("read", lambda: table.version))
        try:
            self._after_write(table)
        except StoreError as exc:
            # index upkeep racing another machine's: the data is committed, and the
            # next write (or `engram index`) brings the index up to date
            if not self.remote or not is_commit_conflict(exc.__cause__ or exc):
                raise
            log.info("index upkeep on %s deferred: %s", self.path, exc)
        end = int(self.guard("read", lambda: table.version))
        self._version = end
        self._note_own_write()
        result = WriteResult(prev, commit, end)
        if after is not None:
            after(result)
        return result

    def _latest(self) -> Table | None:
        """The table re-read at its latest version (after losing a commit race)."""
        with self._mutex:
            self._stamp = None
            self._own_stamp = None
            self._checked_at = 0.0
            return self.table()

    def upsert(self, table: Table, rows: pa.Table) -> None:
        """Insert ``rows``, replacing rows with the same key (one new version)."""
        if rows.num_rows == 0:
            return
        (
            table.merge_insert(self.key_column)
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(rows)
        )

    def _create(self) -> Table:
        db = self._connect()
        if self._local_path is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
        for attempt in range(max(1, self.location.commit_retries if self.remote else 1)):
            try:
                self._table = self.guard(
                    "create", lambda: db.create_table(self.name, schema=self.schema, exist_ok=True)
                )
                break
            except StoreError as exc:
                # machines sharing a fresh remote store race to create its table: the
                # loser opens the winner's table (docs/storage.md)
                if not self.remote or not is_commit_conflict(exc.__cause__ or exc):
                    raise
                log.info("create raced on %s, retry %d: %s", self.path, attempt + 1,
                         _one_line(exc))  # fmt: skip
                time.sleep(min(1.0, 0.05 * 2 ** (attempt + 1)))
                table = self._latest()
                if table is not None:
                    return table
        else:
            raise StoreError(f"cannot create the Engram store at {self.path}: every attempt raced")
        self._check_version(self._table)
        return self._table

    @contextmanager
    def bulk(self) -> Iterator[BulkWrites]:
        """Many writes in a row (a first index of a big workspace): no FTS upkeep or
        compaction after each write, one upkeep at the end (unless the caller sets the
        yielded :class:`BulkWrites`' ``upkeep`` to False: a run given up leaves it to the
        next write rather than build an index over half a table while the user waits).

        Why: ``optimize`` compacts every fragment smaller than LanceDB's target size, so
        the ever-growing first fragment was rewritten every few writes; a cold index of
        N chunks paid O(N²) in rewrites (docs/codegraph.md "At 50,000 files"). Readers in
        between still see every row (unindexed rows are searched flat).
        """
        with self._mutex:
            outer, self._bulk = self._bulk, True
            writes = self._writes_since_optimize
        run = BulkWrites()
        try:
            yield run
        finally:
            with self._mutex:
                self._bulk = outer
                table = self._table
                if (
                    not outer
                    and run.upkeep
                    and table is not None
                    and self._writes_since_optimize > writes
                ):
                    with self._hold():
                        self._after_write(table, counted=True)

    def _after_write(self, table: Table, *, counted: bool = False) -> None:
        if not counted:
            self._writes_since_optimize += 1
        if self.text_column is None and not self._fts_checked:
            self._drop_unused_fts(table)
        if self._bulk:
            return
        if self.text_column is None:
            if counted:
                # a bulk's end: no FTS index to build, and no compaction either (it would
                # rewrite the whole table a cold index just wrote, docs/storage.md): the
                # next write's upkeep is due as after an FTS build
                return
        elif int(self.guard("read", table.count_rows)) == 0:
            return
        elif not self._has_fts(table):
            from lancedb.index import FTS

            column = self.text_column
            self.guard(
                "index",
                lambda: table.create_index(column, config=FTS(with_position=False), replace=True),
            )
            return
        if self._writes_since_optimize >= OPTIMIZE_EVERY_WRITES or (
            self._unindexed_rows(table) >= MAX_UNINDEXED_ROWS
        ):
            later = self.upkeep_later
            # asked and not run after as many writes again (dropped): optimise here
            overdue = self._writes_since_optimize >= 2 * OPTIMIZE_EVERY_WRITES
            if later is None or overdue:
                self._optimize(table)
            elif not self._upkeep_asked:
                # 100-500 ms the write making it due paid in its request; the rows are
                # committed and found (searched flat) whether it runs now or after
                self._upkeep_asked = True
                later()

    def _unindexed_rows(self, table: Table) -> int:
        try:
            stats = table.index_stats(f"{self.text_column}_idx")
        except Exception:
            return 0
        return int(getattr(stats, "num_unindexed_rows", 0) or 0) if stats else 0

    def _optimize(self, table: Table) -> None:
        self.guard("compact", lambda: table.optimize(cleanup_older_than=self.cleanup_after))
        self._writes_since_optimize = 0
        self._upkeep_asked = False

    def compact(self, after: Callable[[WriteResult], None] | None = None) -> None:
        """Compact fragments, bring the FTS index up to date and drop old versions."""
        if self.read_only:
            return
        with self._mutex, self._hold():
            table = self.table()
            if table is not None:
                prev = int(table.version)
                if (
                    self.text_column is not None
                    and not self._has_fts(table)
                    and int(table.count_rows()) > 0
                ):
                    self._after_write(table)
                self._optimize(table)
                end = int(table.version)
                self._version = end
                self._note_own_write()
                if after is not None:
                    after(WriteResult(prev, end, end))

    def version_count(self) -> int:
        table = self.table()
        return 0 if table is None else len(self.guard("read", table.list_versions))

    def close(self) -> None:
        with self._mutex:
            self._table = None
            self._db = None
            self._stamp = None
            self._own_stamp = None
            self._version = None
