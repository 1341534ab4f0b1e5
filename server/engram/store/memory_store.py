"""The memory store: LanceDB table ``.engram/memories.lance`` plus an in-process snapshot.

Layout of a row: ``id``, ``type``, ``source``, ``scope``, ``content``, ``search_text``
(content + tags + anchor files/symbols + related files/modules, with camelCase split; the
BM25 column), ``files`` (anchor files and related files), ``needs_review``,
``deprecated``, ``stale``, ``pinned``, ``updated_at``, ``record`` (the whole memory as JSON
through :func:`engram.model.memory_to_dict`, so the codec's schema migrations apply on
read), ``vector`` (float32 bytes, nullable; bytes rather than a fixed-size list so that
vectors of a new model can coexist with the old ones while they are re-embedded), ``dim``
and ``model_id``.

Reads (``get``, ``list``, ``vector_search``) are served from a snapshot: ids, filter
columns as NumPy arrays, the raw JSON records (decoded on first use and cached) and one
unit-vector matrix per dimension for exact cosine search (NumPy over 100k x 384 is ~20 ms;
LanceDB's flat search is several times slower). The snapshot is rebuilt only when the
table version moved under us (another process wrote); our own writes patch it in place.
``keyword_search`` goes to LanceDB's native BM25 index, with the filter applied as a SQL
prefilter so top-k is taken among matching memories only.

Objects returned by ``get``/``get_many``/``list`` are the snapshot's own: treat them as
read-only, or pass a modified copy (``attrs.evolve``) to :meth:`MemoryStore.update`.
``add`` and ``update`` both upsert by id.

Long on purpose: the snapshot, its patching from other processes' writes and the LanceDB
writes must agree on one row layout; they are kept in one module (docs/storage.md).
"""

from __future__ import annotations

import enum
import json
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
import numpy.typing as npt

from engram.jsontypes import JsonObject
from engram.model import (
    SCHEMA_VERSION,
    Memory,
    MemorySource,
    MemoryType,
    SchemaError,
    memory_from_dict,
    memory_to_dict,
)
from engram.model.codec import make_converter
from engram.model.timewindow import TimeWindow
from engram.store.changelog import ChangeLog, SharedChangeLog
from engram.store.errors import StoreError
from engram.store.fts_text import document_text, sql_quote
from engram.store.heap import release_freed_heap
from engram.store.hybrid import (
    CLEANUP_AFTER,
    META_TABLE,
    META_TABLE_VERSION,
    HybridTable,
    WriteResult,
)
from engram.store.location import StoreLocation
from engram.store.lock import WriteLock
from engram.store.snapshot import GrowColumn, RecordColumn, VectorBlock, vectors_from_binary
from engram.workspace import Workspace

if TYPE_CHECKING:
    import pyarrow as pa

    from engram.store.frame import Hiding


log = logging.getLogger(__name__)

TABLE_NAME = "memories"
#: Version of the table layout (columns); bump it and extend ``_migrate_table``.
MEMORY_TABLE_VERSION = 1
LOCK_FILE = "write.lock"

#: A foreign write touching more ids than this is cheaper to take by a full reload.
MAX_PATCH_IDS = 5000
CHANGES_FILE = "memories.changes.sqlite"
#: the change log's table beside a shared store's memories (``SharedChangeLog``)
SHARED_CHANGES_TABLE = "memories_changes"

#: Told what another process or machine changed once this store caught up with it:
#: ``(memories upserted, ids deleted, reloaded)``; ``reloaded`` means the whole snapshot was
#: re-read (the change log had a gap) and the lists are empty.
ChangeListener = Callable[[list[Memory], list[str], bool], None]
#: A time-windowed keyword search names the window's ids to LanceDB up to this many ...
MAX_PREFILTER_IDS = 2000
#: ... and otherwise fetches this many times k and keeps the rows inside the window.
WINDOW_OVERFETCH = 5
_LOAD_COLUMNS = [
    "id",
    "type",
    "source",
    "needs_review",
    "deprecated",
    "stale",
    "updated_at",
    "files",
    "record",
    "vector",
    "dim",
    "model_id",
]

#: ``"valid_from":"<ISO time>"`` in a record (see ``_valid_from_column``)
_VALID_FROM = r'"valid_from":"([^"]+)"'

_TYPES: list[MemoryType] = list(MemoryType)
_SOURCES: list[MemorySource] = list(MemorySource)
_TYPE_CODE = {t: i for i, t in enumerate(_TYPES)}
_SOURCE_CODE = {s: i for i, s in enumerate(_SOURCES)}


@attrs.define
class MemoryFilter:
    """Which memories a list or search may return. ``None`` fields do not filter."""

    types: Sequence[MemoryType] | None = None
    sources: Sequence[MemorySource] | None = None
    #: workspace-relative POSIX path; matches ``anchors[].file`` or ``related_files``
    file: str | None = None
    needs_review: bool | None = None
    include_deprecated: bool = False
    include_stale: bool = True
    #: only memories whose ``valid_from`` falls in this window (a date named in a query)
    valid_within: TimeWindow | None = None


def memory_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("type", pa.string()),
            pa.field("source", pa.string()),
            pa.field("scope", pa.string()),
            pa.field("content", pa.string()),
            pa.field("search_text", pa.string()),
            pa.field("files", pa.list_(pa.string())),
            pa.field("needs_review", pa.bool_()),
            pa.field("deprecated", pa.bool_()),
            pa.field("stale", pa.bool_()),
            pa.field("pinned", pa.bool_()),
            pa.field("updated_at", pa.timestamp("us", tz="UTC")),
            pa.field("record", pa.string()),
            pa.field("vector", pa.binary(), nullable=True),
            pa.field("dim", pa.int32()),
            pa.field("model_id", pa.string(), nullable=True),
        ],
        metadata={
            META_TABLE: TABLE_NAME.encode(),
            META_TABLE_VERSION: str(MEMORY_TABLE_VERSION).encode(),
            b"engram.memory_schema": str(SCHEMA_VERSION).encode(),
        },
    )


def _unit(vector: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Stored vectors are unit length, so loading a snapshot needs no normalisation pass."""
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


def memory_search_text(memory: Memory) -> str:
    """What BM25 sees: content, tags, anchors, related files and modules, episode context."""
    parts = [memory.content, " ".join(memory.tags)]
    for anchor in memory.anchors:
        parts.append(anchor.file)
        if anchor.symbol:
            parts.append(anchor.symbol)
    parts.extend(memory.related_files)
    parts.extend(memory.related_modules)
    # episode context (engram.embed.text.link_episode): a reply or a fix is found by the
    # words of the question or error recorded just before it, as in its embedding text
    before = memory.extra.get("episode_before")
    if isinstance(before, str):
        parts.append(before)
    return document_text(parts)


def _codes(column: Any, vocabulary: Sequence[enum.Enum]) -> npt.NDArray[np.int16]:
    """Enum values as their index in ``vocabulary`` (-1 for unknown), vectorised by Arrow."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values = pa.array([str(v.value) for v in vocabulary])
    codes = pc.index_in(column, value_set=values).fill_null(-1)
    return np.asarray(codes.to_numpy(zero_copy_only=False), dtype=np.int16)


def _filter_key(flt: MemoryFilter | None) -> tuple[Any, ...]:
    flt = flt or MemoryFilter()
    return (
        None if flt.types is None else tuple(sorted(MemoryType(t).value for t in flt.types)),
        None if flt.sources is None else tuple(sorted(MemorySource(s).value for s in flt.sources)),
        flt.file,
        flt.needs_review,
        flt.include_deprecated,
        flt.include_stale,
        flt.valid_within,
    )


#: a snapshot load of at least this many rows hands the heap it freed back (store/heap.py)
TRIM_AFTER_ROWS = 10_000
#: a listing of more memories than this decodes them without caching: the start-up
#: index's history sync lists every anchored memory, and caching all 200,000 kept ~410 MB
#: in a language server for good (issue 18); smaller listings and single reads still cache
KEEP_DECODED_LISTING = 20_000


class _Snapshot:
    """The in-process view of the table at ``version``."""

    def __init__(self) -> None:
        self.version = -1
        self.ids: list[str] = []
        self.row_of: dict[str, int] = {}
        self.records = RecordColumn()
        self.decoded: dict[int, Memory] = {}
        self.files: list[list[str]] = []
        self.file_rows: dict[str, set[int]] = {}
        self.model_ids: list[str | None] = []
        #: model id -> small int, and the per-row code (-1 = no vector), for fast masks
        self.model_codes: dict[str, int] = {}
        self.model_code = GrowColumn(np.int32)
        self.dims: list[int] = []
        self.alive = GrowColumn(np.bool_)
        self.type_code = GrowColumn(np.int16)
        self.source_code = GrowColumn(np.int16)
        self.needs_review = GrowColumn(np.bool_)
        self.deprecated = GrowColumn(np.bool_)
        self.stale = GrowColumn(np.bool_)
        self.updated = GrowColumn(np.float64)
        #: ``valid_from`` as POSIX seconds, built on the first time-window filter (NaN: unread)
        self.valid_from: GrowColumn[np.float64] | None = None
        self.blocks: dict[int, VectorBlock] = {}
        #: bumped on every in-place change, so cached filter masks know they are stale
        self.generation = 0

    def __len__(self) -> int:
        return len(self.row_of)

    def code_of(self, model_id: str | None) -> int:
        if model_id is None:
            return -1
        code = self.model_codes.get(model_id)
        if code is None:
            code = self.model_codes[model_id] = len(self.model_codes)
        return code


class MemoryStore:
    """Typed memories in LanceDB with BM25 + exact dense search (see the module docstring)."""

    def __init__(
        self,
        workspace: Workspace,
        *,
        read_only: bool = False,
        lock_timeout_s: float | None = None,
        cleanup_after: timedelta = CLEANUP_AFTER,
        location: StoreLocation | None = None,
    ) -> None:
        self.workspace = workspace
        self.read_only = read_only
        workspace.check_engram_data_is_own()  # never a store that came with a clone
        if read_only:
            directory = workspace.engram_dir
            lock = None
        else:
            directory = workspace.ensure_engram_dir()
        self.location = location or StoreLocation.local(directory)
        if not read_only:
            timeout = lock_timeout_s or self.location.lock_timeout_seconds
            lock = WriteLock(directory / LOCK_FILE, timeout_s=timeout)
        self._lock = lock
        self._table = HybridTable(
            self.location,
            TABLE_NAME,
            memory_schema(),
            key_column="id",
            text_column="search_text",
            lock=lock,
            read_only=read_only,
            migrate=self._migrate_table,
            cleanup_after=cleanup_after,
        )
        self._changes: ChangeLog | SharedChangeLog = (
            SharedChangeLog(self.location, SHARED_CHANGES_TABLE, read_only=read_only)
            if self.location.remote
            else ChangeLog(directory / CHANGES_FILE, read_only=read_only)
        )
        self._listeners: list[ChangeListener] = []
        #: (prev, version) of each write since :meth:`take_writes`: the agents' digest
        #: follows this chain so a write it never saw cannot hide (docs/storage.md)
        self._writes: list[tuple[int, int]] = []
        self._converter = make_converter()
        self._mutex = threading.RLock()
        self._snap = _Snapshot()
        self._allowed_cache: dict[tuple[Any, ...], npt.NDArray[np.bool_]] = {}
        self._closed = False
        self.refresh()

    @property
    def path(self) -> str:
        return str(self._table.path)

    @property
    def remote(self) -> bool:
        """True when the tables live on object storage shared with other machines."""
        return self.location.remote

    @property
    def version(self) -> int:
        """The table version the snapshot reflects (after catching up)."""
        with self._mutex:
            self.refresh()
            return self._snap.version

    @property
    def seen_version(self) -> int:
        """The version the snapshot reflects now, without asking for a newer one."""
        return self._snap.version

    def watch(self, listener: ChangeListener) -> None:
        """Call ``listener`` whenever the store catches up with someone else's writes."""
        self._listeners.append(listener)

    def changed_ids(self, since: int) -> set[str] | None:
        """Ids written since version ``since`` (None: unknown, read everything again)."""
        with self._mutex:
            self.refresh()
            if since == self._snap.version:
                return set()
            return self._changes.touched_since(since, self._snap.version)

    def _notify(self, upserts: list[Memory], deleted: list[str], reloaded: bool) -> None:
        for listener in list(self._listeners):
            try:
                listener(upserts, deleted, reloaded)
            except Exception as exc:  # a listener (the digest) is a cache: never fail a read
                log.info("store change listener failed: %s", exc)

    def _log(self, result: WriteResult, ids: Sequence[str]) -> None:
        """Record which ids a write touched: one entry on a local store (writes are
        serialised), the commit's own version on a shared one (see ``SharedChangeLog``)."""
        if not self.location.remote:
            self._changes.record(result.prev, result.end, ids)
            self._writes.append((result.prev, result.end))
            return
        self._changes.record(result.commit - 1, result.commit, ids)
        if result.end > result.commit:
            self._changes.record(result.commit, result.end, [])

    def take_writes(self) -> list[tuple[int, int]]:
        """The (prev, version) pairs of this store's local writes since the last call."""
        with self._mutex:
            writes, self._writes = self._writes, []
        return writes

    # ------------------------------------------------------------------ snapshot

    def refresh(self) -> bool:
        """Rebuild the snapshot if the table version changed; True when it was rebuilt."""
        with self._mutex:
            if self._closed:
                raise StoreError("the memory store was closed")
            version = self._table.version()
            if version == self._snap.version:
                return False
            self._catch_up(version)
            return True

    def _catch_up(self, version: int) -> None:
        """Bring the snapshot to ``version``: patch the ids the change log names, else reload."""
        snap = self._snap
        if 0 < snap.version < version:
            touched = self._changes.touched_since(snap.version, version)
            if touched is not None and len(touched) <= MAX_PATCH_IDS:
                self._patch(sorted(touched), version)
                return
        self._load()

    def _patch(self, ids: Sequence[str], version: int) -> None:
        upserted: list[Memory] = []
        dropped: list[str] = []
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            where = f"id IN ({', '.join(sql_quote(i) for i in chunk)})"
            data = self._table.fetch(where, ["id", "record", "vector", "model_id"])
            if data is not None:
                found.update({str(r["id"]): r for r in data.to_pylist()})
        for memory_id in ids:
            row = found.get(memory_id)
            memory = None
            if row is not None and row["record"] is not None:
                try:
                    memory = memory_from_dict(json.loads(row["record"]), self._converter)
                except (SchemaError, ValueError) as exc:
                    log.warning("skipping unreadable memory %s: %s", memory_id, exc)
            if memory is None:
                self._drop_row(memory_id)
                dropped.append(memory_id)
                continue
            raw = row["vector"] if row is not None else None
            vector = np.frombuffer(raw, dtype=np.float32).copy() if raw else None
            model_id = row["model_id"] if vector is not None and row is not None else None
            self._put_row(memory, row["record"] if row is not None else "", vector, model_id)
            upserted.append(memory)
        self._snap.version = version
        self._allowed_cache.clear()
        if self._listeners and (upserted or dropped):
            self._notify(upserted, dropped, False)

    def _load(self) -> None:
        catching_up = self._snap.version > 0
        data, version = self._table.read_all(_LOAD_COLUMNS)
        snap = _Snapshot()
        snap.version = version
        snap.generation = self._snap.generation + 1
        self._allowed_cache.clear()
        rows = data.num_rows if data is not None else 0
        if data is not None and rows:
            self._table.guard("read", lambda: self._fill(snap, data))
        self._snap = snap
        data = None  # the scan's buffers (and the old snapshot) are garbage now
        if rows >= TRIM_AFTER_ROWS:
            release_freed_heap()  # else glibc keeps them: ~290 MB at 200,000 memories
        if catching_up and self._listeners:
            self._notify([], [], True)

    @staticmethod
    def _fill(snap: _Snapshot, data: pa.Table) -> None:
        n = data.num_rows
        snap.ids = [str(x) for x in data.column("id").to_pylist()]
        snap.row_of = {mid: i for i, mid in enumerate(snap.ids)}
        snap.records = RecordColumn(data.column("record"))
        snap.files = [f or [] for f in data.column("files").to_pylist()]
        for row, files in enumerate(snap.files):
            for path in files:
                members = snap.file_rows.get(path)
                if members is None:
                    snap.file_rows[path] = {row}
                else:
                    members.add(row)
        snap.model_ids = data.column("model_id").to_pylist()
        codes = [snap.code_of(mid) for mid in snap.model_ids]
        snap.model_code = GrowColumn.from_array(np.asarray(codes, np.int32), np.int32)
        dims = data.column("dim").fill_null(0).to_numpy().astype(np.int64).tolist()
        snap.dims = dims

        def bools(name: str) -> npt.NDArray[np.bool_]:
            return np.asarray(data.column(name).fill_null(False).to_numpy(), dtype=np.bool_)

        snap.alive = GrowColumn.from_array(np.ones(n, np.bool_), np.bool_)
        snap.type_code = GrowColumn.from_array(_codes(data.column("type"), _TYPES), np.int16)
        snap.source_code = GrowColumn.from_array(_codes(data.column("source"), _SOURCES), np.int16)
        snap.needs_review = GrowColumn.from_array(bools("needs_review"), np.bool_)
        snap.deprecated = GrowColumn.from_array(bools("deprecated"), np.bool_)
        snap.stale = GrowColumn.from_array(bools("stale"), np.bool_)
        updated = data.column("updated_at").cast("int64").fill_null(0).to_numpy() / 1e6
        snap.updated = GrowColumn.from_array(np.asarray(updated, np.float64), np.float64)
        for dim, (rows, matrix) in vectors_from_binary(data.column("vector"), dims).items():
            sample = np.linalg.norm(matrix[:: max(1, len(matrix) // 64)], axis=1)
            unit = bool(np.all((np.abs(sample - 1.0) < 1e-3) | (sample == 0)))
            snap.blocks[dim] = VectorBlock.from_matrix(dim, rows, matrix, normalised=unit)

    def _memory_at(self, row: int, keep: bool = True) -> Memory | None:
        """The memory of ``row``, decoded from its record on first use; ``keep``: cache
        the decoded memory (a listing too large to keep decodes without caching)."""
        snap = self._snap
        cached = snap.decoded.get(row)
        if cached is not None:
            return cached
        raw = snap.records[row]
        if raw is None:
            return None
        try:
            memory = memory_from_dict(json.loads(raw), self._converter)
        except (SchemaError, ValueError) as exc:
            log.warning("skipping unreadable memory %s: %s", snap.ids[row], exc)
            return None
        if keep:
            snap.decoded[row] = memory
        return memory

    def _put_row(
        self,
        memory: Memory,
        record: str,
        vector: npt.NDArray[np.float32] | None,
        model_id: str | None,
    ) -> None:
        """Patch the snapshot with one upserted memory (our own write)."""
        snap = self._snap
        snap.generation += 1
        row = snap.row_of.get(memory.id)
        files = memory.files
        dim = 0 if vector is None else int(vector.shape[0])
        if row is None:
            row = len(snap.ids)
            snap.ids.append(memory.id)
            snap.row_of[memory.id] = row
            snap.records.append(record)
            snap.files.append(files)
            snap.model_ids.append(model_id)
            snap.model_code.append(-1)
            snap.dims.append(dim)
            for column in (snap.alive, snap.needs_review, snap.deprecated, snap.stale):
                column.append(False)
            snap.type_code.append(-1)
            snap.source_code.append(-1)
            snap.updated.append(0.0)
            if snap.valid_from is not None:
                snap.valid_from.append(np.nan)
        else:
            for path in snap.files[row]:
                snap.file_rows.get(path, set()).discard(row)
            snap.records[row] = record
            snap.files[row] = files
            old_dim = snap.dims[row]
            if old_dim and old_dim != dim and old_dim in snap.blocks:
                snap.blocks[old_dim].remove(row)
            snap.model_ids[row] = model_id
            snap.dims[row] = dim
        for path in files:
            snap.file_rows.setdefault(path, set()).add(row)
        snap.decoded[row] = memory
        snap.model_code.data[row] = snap.code_of(model_id) if vector is not None else -1
        snap.alive.data[row] = True
        snap.type_code.data[row] = _TYPE_CODE.get(memory.type, -1)
        snap.source_code.data[row] = _SOURCE_CODE.get(memory.source, -1)
        snap.needs_review.data[row] = memory.needs_review
        snap.deprecated.data[row] = memory.deprecated
        snap.stale.data[row] = memory.stale_at is not None
        snap.updated.data[row] = memory.updated_at.timestamp()
        if snap.valid_from is not None:
            snap.valid_from.data[row] = memory.valid_from.timestamp()
        if vector is not None:
            block = snap.blocks.get(dim)
            if block is None:
                block = snap.blocks[dim] = VectorBlock(dim)
            block.put(row, vector)

    def _drop_row(self, memory_id: str) -> bool:
        snap = self._snap
        snap.generation += 1
        row = snap.row_of.pop(memory_id, None)
        if row is None:
            return False
        snap.alive.data[row] = False
        snap.records[row] = None
        snap.decoded.pop(row, None)
        for path in snap.files[row]:
            snap.file_rows.get(path, set()).discard(row)
        snap.files[row] = []
        dim = snap.dims[row]
        if dim and dim in snap.blocks:
            snap.blocks[dim].remove(row)
        snap.dims[row] = 0
        snap.model_ids[row] = None
        snap.model_code.data[row] = -1
        return True

    def _existing_vector(self, memory_id: str) -> tuple[npt.NDArray[np.float32] | None, str | None]:
        snap = self._snap
        row = snap.row_of.get(memory_id)
        if row is None or not snap.dims[row]:
            return None, None
        block = snap.blocks.get(snap.dims[row])
        pos = None if block is None else block.position.get(row)
        if block is None or pos is None:
            return None, None
        return block.matrix[pos].copy(), snap.model_ids[row]

    # ------------------------------------------------------------------ filters

    def _row_mask(self, flt: MemoryFilter | None) -> npt.NDArray[np.bool_]:
        flt = flt or MemoryFilter()
        snap = self._snap
        mask = snap.alive.view().copy()
        if not flt.include_deprecated:
            mask &= ~snap.deprecated.view()
        if not flt.include_stale:
            mask &= ~snap.stale.view()
        if flt.needs_review is not None:
            mask &= snap.needs_review.view() == bool(flt.needs_review)
        if flt.types is not None:
            codes = [_TYPE_CODE[MemoryType(t)] for t in flt.types]
            mask &= np.isin(snap.type_code.view(), codes)
        if flt.sources is not None:
            codes = [_SOURCE_CODE[MemorySource(s)] for s in flt.sources]
            mask &= np.isin(snap.source_code.view(), codes)
        if flt.file is not None:
            in_file = np.zeros(len(mask), np.bool_)
            rows = list(snap.file_rows.get(flt.file, ()))
            if rows:
                in_file[rows] = True
            mask &= in_file
        if flt.valid_within is not None:
            mask &= flt.valid_within.mask(self._valid_from_column())
        return mask

    def _valid_from_column(self) -> npt.NDArray[np.float64]:
        """``valid_from`` of every row (POSIX seconds; NaN for dead or unreadable rows).

        Built once per snapshot on the first time-window filter, then kept current by
        ``_put_row``: loading it with every snapshot would cost every start-up for a
        filter most sessions never use. The raw JSON is scanned for the field (the codec
        writes it as an ISO string), and only rows where that fails are decoded.
        """
        snap = self._snap
        if snap.valid_from is not None:
            return snap.valid_from.view()
        values = np.full(len(snap.ids), np.nan, dtype=np.float64)
        alive = snap.alive.view()
        stamps = snap.records.extract(_VALID_FROM)
        for row, text in enumerate(stamps):
            if not alive[row]:  # dropped rows are dead: their record is None
                continue
            moment: datetime | None = None
            if text is not None:
                try:
                    moment = datetime.fromisoformat(text)
                except ValueError:
                    moment = None
            if moment is None:
                memory = self._memory_at(row)
                moment = memory.valid_from if memory is not None else None
            if moment is not None:
                if moment.tzinfo is None:
                    moment = moment.replace(tzinfo=UTC)
                values[row] = moment.timestamp()
        snap.valid_from = GrowColumn.from_array(values, np.float64)
        return snap.valid_from.view()

    @staticmethod
    def _where(flt: MemoryFilter | None) -> str | None:
        flt = flt or MemoryFilter()
        parts: list[str] = []
        if not flt.include_deprecated:
            parts.append("deprecated = false")
        if not flt.include_stale:
            parts.append("stale = false")
        if flt.needs_review is not None:
            parts.append(f"needs_review = {'true' if flt.needs_review else 'false'}")
        if flt.types is not None:
            values = ", ".join(sql_quote(MemoryType(t).value) for t in flt.types) or "''"
            parts.append(f"type IN ({values})")
        if flt.sources is not None:
            values = ", ".join(sql_quote(MemorySource(s).value) for s in flt.sources) or "''"
            parts.append(f"source IN ({values})")
        if flt.file is not None:
            parts.append(f"array_has(files, {sql_quote(flt.file)})")
        return " AND ".join(parts) or None

    # ------------------------------------------------------------------ writes

    def _rows(
        self,
        memories: Sequence[Memory],
        vectors: Sequence[npt.NDArray[np.float32] | None],
        model_ids: Sequence[str | None],
    ) -> tuple[pa.Table, list[str]]:
        import pyarrow as pa

        records = [
            json.dumps(
                memory_to_dict(m, self._converter), ensure_ascii=False, separators=(",", ":")
            )
            for m in memories
        ]
        table = pa.table(
            {
                "id": [m.id for m in memories],
                "type": [m.type.value for m in memories],
                "source": [m.source.value for m in memories],
                "scope": [m.scope.value for m in memories],
                "content": [m.content for m in memories],
                "search_text": [memory_search_text(m) for m in memories],
                "files": [m.files for m in memories],
                "needs_review": [m.needs_review for m in memories],
                "deprecated": [m.deprecated for m in memories],
                "stale": [m.stale_at is not None for m in memories],
                "pinned": [m.pinned for m in memories],
                "updated_at": [m.updated_at for m in memories],
                "record": records,
                "vector": [None if v is None else _unit(v).tobytes() for v in vectors],
                "dim": [0 if v is None else int(v.shape[0]) for v in vectors],
                "model_id": list(model_ids),
            },
            schema=memory_schema(),
        )
        return table, records

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the writer lock across a read-modify-write (``app.trust.apply``, a use
        counted): what is read inside is the latest version, and no other process commits
        until the block ends, so the record written back is the one that was read. Read
        outside it and written back whole, a use counted by a command running in-process
        beside the engine put back the record as it was before the engine's confirm."""
        with self._table.held():
            self.refresh()
            yield

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """The writer lock, then this store's mutex: every thread takes them in this order
        (a read-modify-write holds the lock while it reads, which takes the mutex)."""
        if self.read_only:
            with self._mutex:
                yield
            return
        with self._table.hold(), self._mutex:
            yield

    def _upsert(
        self,
        memories: Sequence[Memory],
        vectors: npt.NDArray[np.float32] | None,
        model_id: str | None,
        keep_existing_vectors: bool,
    ) -> None:
        memories = list(memories)
        if not memories:
            return
        ids = [m.id for m in memories]
        if len(set(ids)) != len(ids):
            raise ValueError("the same memory id appears twice in one write")
        if vectors is not None:
            vectors = np.asarray(vectors, dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[0] != len(memories):
                raise ValueError(
                    f"vectors must have shape ({len(memories)}, dim), got {vectors.shape}"
                )
            if model_id is None:
                raise ValueError("model_id is required with vectors")

        prepared: dict[str, Any] = {}

        def before(version: int) -> None:
            with self._mutex:
                if version != self._snap.version:
                    self._catch_up(version)
                row_vectors: list[npt.NDArray[np.float32] | None] = []
                row_models: list[str | None] = []
                for i, memory in enumerate(memories):
                    if vectors is not None:
                        row_vectors.append(vectors[i])
                        row_models.append(model_id)
                    elif keep_existing_vectors:
                        vec, mid = self._existing_vector(memory.id)
                        row_vectors.append(vec)
                        row_models.append(mid)
                    else:
                        row_vectors.append(None)
                        row_models.append(None)
                table, records = self._rows(memories, row_vectors, row_models)
                prepared.update(
                    table=table,
                    records=records,
                    vectors=row_vectors,
                    models=row_models,
                    version=version,
                    all_new=not any(m.id in self._snap.row_of for m in memories),
                )

        def write(table: Any) -> None:
            if prepared["all_new"]:  # the common case: a plain append, no join on id
                table.add(prepared["table"])
            else:
                self._table.upsert(table, prepared["table"])

        with self._writing():
            result = self._table.write(write, before=before, after=lambda r: self._log(r, ids))
            for memory, record, vec, mid in zip(
                memories, prepared["records"], prepared["vectors"], prepared["models"], strict=True
            ):
                self._put_row(memory, record, vec, mid)
            self._settle(result)

    def add(
        self,
        memories: Sequence[Memory],
        vectors: npt.NDArray[np.float32] | None = None,
        model_id: str | None = None,
    ) -> None:
        """Store new memories (one batch, one version). An existing id is replaced."""
        self._upsert(memories, vectors, model_id, keep_existing_vectors=False)

    def update(
        self,
        memories: Sequence[Memory],
        vectors: npt.NDArray[np.float32] | None = None,
        model_id: str | None = None,
    ) -> None:
        """Replace memories by id; without ``vectors`` each keeps its stored vector."""
        self._upsert(memories, vectors, model_id, keep_existing_vectors=True)

    def delete(self, ids: Sequence[str]) -> int:
        """Remove memories by id; returns how many existed."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return 0
        existing: list[str] = []

        def before(version: int) -> None:
            with self._mutex:
                if version != self._snap.version:
                    self._catch_up(version)
                existing.extend(i for i in wanted if i in self._snap.row_of)

        def write(table: Any) -> None:
            if existing:
                table.delete(f"id IN ({', '.join(sql_quote(i) for i in existing)})")

        with self._writing():
            result = self._table.write(write, before=before, after=lambda r: self._log(r, existing))
            for memory_id in existing:
                self._drop_row(memory_id)
            self._settle(result)
        return len(existing)

    def _settle(self, result: WriteResult) -> None:
        """After our write: the snapshot is at ``result.end`` unless other machines
        committed between our last look and our commit; then catch up on theirs too."""
        if result.foreign:
            self._snap.version = result.prev
            self._catch_up(result.end)
        else:
            self._snap.version = result.end

    def upkeep_later(self, schedule: Callable[[Callable[[], None]], None] | None) -> None:
        """Hand the index upkeep a write makes due (every ``OPTIMIZE_EVERY_WRITES``
        writes: :meth:`compact`) to ``schedule``, which runs it after the request (the
        engine process, docs/engine.md "Writes"), instead of inside that write.
        ``None``: each write does it itself again."""
        self._table.upkeep_later = None if schedule is None else lambda: schedule(self.compact)

    def compact(self) -> None:
        """Compact fragments, update the FTS index and remove old versions."""
        with self._writing():
            self._table.compact(after=lambda r: self._log(r, []))
            self.refresh()

    # ------------------------------------------------------------------ reads

    def get(self, memory_id: str) -> Memory | None:
        with self._mutex:
            self.refresh()
            row = self._snap.row_of.get(memory_id)
            return None if row is None else self._memory_at(row)

    def get_many(self, ids: Sequence[str]) -> list[Memory]:
        """The memories that exist among ``ids``, in the order asked."""
        with self._mutex:
            self.refresh()
            out: list[Memory] = []
            for memory_id in ids:
                row = self._snap.row_of.get(memory_id)
                memory = None if row is None else self._memory_at(row)
                if memory is not None:
                    out.append(memory)
            return out

    def ids_for_file(self, path: str) -> list[str]:
        """Ids of memories anchored to or related to ``path`` (cheap, no decoding)."""
        with self._mutex:
            self.refresh()
            snap = self._snap
            return [snap.ids[r] for r in sorted(snap.file_rows.get(path, ()))]

    def keyword_search(
        self, query: str, k: int, flt: MemoryFilter | None = None
    ) -> list[tuple[str, float]]:
        """BM25 over content, tags and anchors: ``(id, score)`` best first.

        A time window (``flt.valid_within``) is not a table column: the ids inside it come
        from the snapshot and go to LanceDB as a prefilter when there are few of them (a
        day, a month); a wide window over-fetches and keeps the rows inside it.
        """
        if k <= 0:
            return []
        with self._mutex:
            self.refresh()
            where = self._where(flt)
            fetch = k
            inside: set[str] | None = None
            if flt is not None and flt.valid_within is not None:
                rows_in = np.flatnonzero(self._row_mask(flt))
                if not len(rows_in):
                    return []
                inside = {self._snap.ids[r] for r in rows_in.tolist()}
                if len(inside) <= MAX_PREFILTER_IDS:
                    ids = ", ".join(sql_quote(mid) for mid in sorted(inside))
                    where = f"{where} AND id IN ({ids})" if where else f"id IN ({ids})"
                else:
                    fetch = k * WINDOW_OVERFETCH
        # the FTS query itself runs without the snapshot's lock: the retriever runs it on
        # a worker thread while this thread's vector search holds that lock, and holding
        # it here made the two paths take turns instead of overlapping (p95 +5-10 ms)
        hits = self._table.keyword_search(query, fetch, where)
        with self._mutex:
            row_of = self._snap.row_of
            found = [(key, score) for key, score in hits if key in row_of]
        if inside is not None:
            found = [hit for hit in found if hit[0] in inside]
        return found[:k]

    def vector_search(
        self,
        vector: npt.NDArray[np.float32],
        k: int,
        flt: MemoryFilter | None = None,
        *,
        model_id: str | None = None,
    ) -> list[tuple[str, float]]:
        """Exact cosine search: ``(id, cosine)`` best first.

        Only vectors of the query's dimension are compared; with ``model_id`` only vectors
        of that model (after a model switch, until ``missing_vectors`` are re-embedded).
        """
        return self.vector_search_each(vector, k, [flt], model_id=model_id)[0]

    def vector_search_each(
        self,
        vector: npt.NDArray[np.float32],
        k: int,
        filters: Sequence[MemoryFilter | None],
        *,
        model_id: str | None = None,
    ) -> list[list[tuple[str, float]]]:
        """:meth:`vector_search` under each of ``filters``, from one matrix product.

        A dated query's dense paths (the whole store, then inside its time window) share
        the query vector; one product serves both (``FrozenBlock.search_each``).
        """
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self._mutex:
            self.refresh()
            block = self._snap.blocks.get(int(query.shape[0]))
            if block is None or k <= 0:
                return [[] for _ in filters]
            alloweds = [self._allowed(block, flt, model_id) for flt in filters]
            frozen, ids = block.frozen(), self._snap.ids
        # the matrix product (the O(n·dim) step, ~8 ms at 100k) runs without the lock, so
        # the retriever's keyword search on its worker thread is not kept waiting for it
        found = frozen.search_each(query, k, alloweds)
        return [[(ids[row], score) for row, score in hits] for hits in found]

    def _allowed(
        self, block: VectorBlock, flt: MemoryFilter | None, model_id: str | None
    ) -> npt.NDArray[np.bool_]:
        """Block positions ``flt`` and ``model_id`` allow (cached until the next write)."""
        key = (self._snap.generation, block.dim, model_id, _filter_key(flt))
        allowed = self._allowed_cache.get(key)
        if allowed is None:
            mask = self._row_mask(flt)
            if model_id is not None:
                code = self._snap.model_codes.get(model_id, -2)
                mask &= self._snap.model_code.view() == code
            allowed = block.allowed(mask)
            if len(self._allowed_cache) > 32:
                self._allowed_cache.clear()
            self._allowed_cache[key] = allowed
        return allowed

    def missing_vectors(self, model_id: str) -> list[Memory]:
        """Memories with no vector from ``model_id`` (never embedded, or another model)."""
        with self._mutex:
            self.refresh()
            snap = self._snap
            out: list[Memory] = []
            for row in np.flatnonzero(snap.alive.view()).tolist():
                if snap.model_ids[row] != model_id or not snap.dims[row]:
                    memory = self._memory_at(int(row))
                    if memory is not None:
                        out.append(memory)
            return out

    def count(self) -> int:
        with self._mutex:
            self.refresh()
            return len(self._snap)

    def stats(self) -> JsonObject:
        """Counts for ``engram stats``/``doctor``: memories, vectors per model, versions."""
        with self._mutex:
            self.refresh()
            snap = self._snap
            per_model: dict[str, int] = {}
            for row in np.flatnonzero(snap.alive.view()).tolist():
                mid = snap.model_ids[row]
                if mid and snap.dims[row]:
                    per_model[mid] = per_model.get(mid, 0) + 1
            return {
                "path": self.path,
                "memories": len(snap),
                "vectors": per_model,
                "table_version": snap.version,
                "versions_kept": self._table.version_count(),
            }

    def frame(self, hiding: Hiding | None = None) -> pa.Table:
        """Every readable memory as Arrow columns (``engram.store.frame.frame_schema``):
        what an aggregate over the whole store reads instead of :meth:`list`, in row order.

        The snapshot's columns give type, flags, ``updated_at`` and files; the JSON records
        give the rest through Arrow's JSON reader; only rows it cannot take are decoded
        (see ``engram.store.frame``).
        """
        import pyarrow as pa

        from engram.store.frame import (
            default_half_lives,
            frame_from_memories,
            frame_schema,
            parse_records,
        )

        # the snapshot's state is copied under the lock (cheap: arrays, list copies, an
        # immutable Arrow column); parsing 100k records takes a second or two and runs
        # outside it, so the searches a workspace engine serves meanwhile are not held up
        with self._mutex:
            self.refresh()
            snap = self._snap
            n = len(snap.ids)
            ids = list(snap.ids)
            files = list(snap.files)
            alive = snap.alive.view().copy()
            type_code = snap.type_code.view().copy()
            needs_review = snap.needs_review.view().copy()
            deprecated = snap.deprecated.view().copy()
            stale = snap.stale.view().copy()
            updated = (snap.updated.view() * 1e6).round().astype("int64")
            records = snap.records.arrow()
        parsed, ok = parse_records(records)
        ok &= alive & (type_code >= 0)
        flagged = parsed.column("flagged")
        if hiding is not None:  # the trust model's rule, read where a record may hold a flag
            import pyarrow.compute as pc

            marked = np.zeros(n, np.bool_)
            for mark in hiding.marks:
                found = pc.match_substring(records, mark).fill_null(False)
                marked |= np.asarray(found.to_numpy(zero_copy_only=False), np.bool_)
            by_rule = np.zeros(n, np.bool_)
            for row in np.flatnonzero(marked & ok & ~deprecated).tolist():
                try:  # as ``_memory_at`` decodes, from the record copied above
                    memory = memory_from_dict(json.loads(records[row].as_py()), self._converter)
                except (SchemaError, ValueError, TypeError):
                    continue  # decoded on the slow path below
                by_rule[row] = hiding.flagged(memory)
            flagged = pa.array(by_rule)
        types = np.array([t.value for t in _TYPES], dtype=object)[np.maximum(type_code, 0)]
        fast = pa.table(
            {
                "id": pa.array(ids, pa.string()),
                "type": pa.array(types, pa.string()),
                "content": parsed.column("content"),
                "files": pa.array(files, pa.list_(pa.string())),
                "needs_review": pa.array(needs_review),
                "deprecated": pa.array(deprecated),
                "stale": pa.array(stale),
                "flagged": flagged,
                "pinned": parsed.column("pinned"),
                "confidence": parsed.column("confidence"),
                "half_life_days": parsed.column("half_life_days"),
                "created_at": parsed.column("created_at"),
                "updated_at": pa.array(updated).cast(pa.timestamp("us", tz="UTC")),
                "last_accessed_at": parsed.column("last_accessed_at"),
                "conflicts_with": parsed.column("conflicts_with"),
                "shared_by": parsed.column("shared_by"),
            }
        )
        slow: list[Memory] = []
        for row in np.flatnonzero(alive & ~ok).tolist():
            raw = records[row].as_py()
            try:  # as ``_memory_at`` decodes, from the record copied above
                slow.append(memory_from_dict(json.loads(raw), self._converter))
            except (SchemaError, ValueError, TypeError) as exc:
                log.warning("skipping unreadable memory %s: %s", ids[row], exc)
        half_life = np.array(
            fast.column("half_life_days").to_numpy(zero_copy_only=False), np.float64
        )
        default_half_lives(types, half_life)
        half_life[half_life <= 0] = np.nan
        fast = fast.set_column(
            fast.schema.get_field_index("half_life_days"),
            "half_life_days",
            pa.array(half_life, from_pandas=True),
        )
        fast = fast.filter(pa.array(ok[:n])).cast(frame_schema())
        if slow:
            log.info("%d memory records decoded one by one for a frame", len(slow))
            fast = pa.concat_tables([fast, frame_from_memories(slow, hiding)])
        return fast

    def close(self) -> None:
        with self._mutex:
            self._table.close()
            self._changes.close()
            self._closed = True

    # defined last: inside the class body ``list`` would shadow the builtin in annotations
    def list(self, flt: MemoryFilter | None = None, limit: int | None = None) -> list[Memory]:
        """Matching memories, most recently updated first."""
        with self._mutex:
            self.refresh()
            mask = self._row_mask(flt)
            rows = np.flatnonzero(mask)
            order = rows[np.argsort(-self._snap.updated.view()[rows], kind="stable")]
            wanted = len(order) if limit is None else min(limit, len(order))
            keep = wanted <= KEEP_DECODED_LISTING
            out: list[Memory] = []
            for row in order.tolist():
                memory = self._memory_at(int(row), keep)
                if memory is not None:
                    out.append(memory)
                    if limit is not None and len(out) >= limit:
                        break
            return out

    # ------------------------------------------------------------------ migrations

    @staticmethod
    def _migrate_table(table: Any, from_version: int) -> None:
        """Upgrade the table layout from ``from_version`` to ``MEMORY_TABLE_VERSION``.

        Version 1 is the first layout; a future column change adds a step here
        (``table.add_columns`` / rewrite) and bumps ``MEMORY_TABLE_VERSION``.
        """
        raise StoreError(
            f"no migration from memory table version {from_version} to {MEMORY_TABLE_VERSION}"
        )
