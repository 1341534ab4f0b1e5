"""Code chunks in ``.engram/chunks.lance``: rows and vectors for ``CodeSearch`` (exact dense
search here; its BM25 runs in process over the chunks, ``engram.codegraph.search``).

Surface (all the code-graph needs for ``engram search --code``)::

    store = ChunkStore(workspace)                    # read_only=True never writes
    store.upsert_chunks(records, vectors, model_id)  # replace chunks by id (one version)
    store.replace_file(file, records, vectors, model_id)  # delete a file's chunks + add, one lock
    store.replace_files(files, records, vectors, model_id)  # many files, one version
    store.delete_file(file) -> int
    store.chunks_for_file(file) -> list[CodeChunkRecord]
    store.vector_search(vector, k) -> [(id, cosine)]
    store.get_many(ids) -> list[CodeChunkRecord]; store.count(); store.compact(); store.close()
    store.version(); store.all_chunks(); store.vectors_for(ids)  # for in-process indexes
    store.stored_hashes()  # (id, file, content_hash) per chunk, no snapshot (re-chunk checks)

The same machinery as the memory store (:class:`HybridTable`): writer lock, version check,
snapshot of vectors refreshed only when the version changed; no FTS index (nothing searched
one: a 58k-file cold index spent ~1/8 of its CPU building it, docs/codegraph.md).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
import numpy.typing as npt

from engram.store.errors import StoreError
from engram.store.fts_text import sql_quote
from engram.store.hybrid import (
    CLEANUP_AFTER,
    META_TABLE,
    META_TABLE_VERSION,
    BulkWrites,
    HybridTable,
)
from engram.store.location import StoreLocation
from engram.store.lock import WriteLock
from engram.store.snapshot import VectorBlock, vectors_from_binary
from engram.workspace import Workspace

if TYPE_CHECKING:
    import pyarrow as pa

TABLE_NAME = "chunks"
CHUNK_TABLE_VERSION = 1
_COLUMNS = [
    "id",
    "file",
    "kind",
    "name",
    "start_line",
    "end_line",
    "content",
    "content_hash",
]
#: Columns of the first layout that nothing reads any more (the embedded text and its FTS
#: text, each a copy of up to 2,000 characters of ``content``): kept in the schema so that
#: tables written before and after are one layout that any Engram reads and writes, and
#: written as nulls (docs/storage.md).
_UNUSED_TEXT_COLUMNS = ("text", "search_text")


@attrs.define
class CodeChunkRecord:
    """One stored code chunk (its embedded text, ``chunking.embedding_text``, is not stored:
    it is made from these fields when embedding, and its digest is in ``content_hash``)."""

    id: str
    file: str
    kind: str
    name: str
    start_line: int
    end_line: int
    content: str
    content_hash: str


#: ``content`` is written without Lance's string compression: it was ~0.4 of the adds'
#: CPU (wss's 48k chunks replayed 2,048 a version: 0.45-0.53 -> 0.27-0.30 CPU s) for 23 ->
#: 37 MB on disk, which the null text columns more than pay for (74 MB before; issue 18,
#: docs/codegraph.md "A seventh look"). A table written before keeps its encoding.
_STORED_PLAIN = {"lance-encoding:compression": "none"}


def chunk_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("file", pa.string()),
            pa.field("kind", pa.string()),
            pa.field("name", pa.string()),
            pa.field("start_line", pa.int32()),
            pa.field("end_line", pa.int32()),
            pa.field("content", pa.string(), metadata=_STORED_PLAIN),
            pa.field("text", pa.string()),  # _UNUSED_TEXT_COLUMNS: nulls
            pa.field("search_text", pa.string()),
            pa.field("content_hash", pa.string()),
            pa.field("vector", pa.binary(), nullable=True),
            pa.field("dim", pa.int32()),
            pa.field("model_id", pa.string(), nullable=True),
        ],
        metadata={
            META_TABLE: TABLE_NAME.encode(),
            META_TABLE_VERSION: str(CHUNK_TABLE_VERSION).encode(),
        },
    )


class ChunkStore:
    """Code chunks with hybrid search (see the module docstring)."""

    def __init__(
        self,
        workspace: Workspace,
        *,
        read_only: bool = False,
        lock_timeout_s: float | None = None,
        cleanup_after: timedelta = CLEANUP_AFTER,
        location: StoreLocation | None = None,
    ) -> None:
        workspace.check_engram_data_is_own()  # never chunks that came with a clone
        if read_only:
            directory, lock = workspace.engram_dir, None
        else:
            directory = workspace.ensure_engram_dir()
        location = location or StoreLocation.local(directory)
        if not read_only:
            timeout = lock_timeout_s or location.lock_timeout_seconds
            lock = WriteLock(directory / "write.lock", timeout_s=timeout)
        self._table = HybridTable(
            location,
            TABLE_NAME,
            chunk_schema(),
            key_column="id",
            text_column=None,
            lock=lock,
            read_only=read_only,
            cleanup_after=cleanup_after,
        )
        self._mutex = threading.RLock()
        self._version = -1
        self._records: dict[str, CodeChunkRecord] = {}
        self._ids: list[str] = []
        self._blocks: dict[int, VectorBlock] = {}

    # ------------------------------------------------------------------ snapshot

    def refresh(self) -> None:
        with self._mutex:
            version = self._table.version()
            if version == self._version:
                return
            data, version = self._table.read_all([*_COLUMNS, "vector", "dim"])
            records: dict[str, CodeChunkRecord] = {}
            ids: list[str] = []
            blocks: dict[int, VectorBlock] = {}
            if data is not None and data.num_rows:
                for row in data.select(_COLUMNS).to_pylist():
                    rec = CodeChunkRecord(**row)
                    records[rec.id] = rec
                    ids.append(rec.id)
                dims = [int(d or 0) for d in data.column("dim").to_pylist()]
                for dim, (rows, matrix) in vectors_from_binary(data.column("vector"), dims).items():
                    blocks[dim] = VectorBlock.from_matrix(dim, rows, matrix)
            self._records, self._ids, self._blocks, self._version = records, ids, blocks, version

    # ------------------------------------------------------------------ writes

    def _arrow(
        self,
        records: Sequence[CodeChunkRecord],
        vectors: npt.NDArray[np.float32] | None,
        model_id: str | None,
    ) -> pa.Table:
        import pyarrow as pa

        if vectors is not None:
            vectors = np.asarray(vectors, dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[0] != len(records):
                raise ValueError(f"vectors must have shape ({len(records)}, dim)")
        columns: dict[str, Any] = {c: [getattr(r, c) for r in records] for c in _COLUMNS}
        for name in _UNUSED_TEXT_COLUMNS:
            columns[name] = pa.nulls(len(records), pa.string())
        if vectors is None:
            columns["vector"] = [None] * len(records)
            columns["dim"] = [0] * len(records)
            columns["model_id"] = [None] * len(records)
        else:
            columns["vector"] = [v.tobytes() for v in vectors]
            columns["dim"] = [int(vectors.shape[1])] * len(records)
            columns["model_id"] = [model_id] * len(records)
        return pa.table(columns, schema=chunk_schema())

    def upsert_chunks(
        self,
        records: Sequence[CodeChunkRecord],
        vectors: npt.NDArray[np.float32] | None = None,
        model_id: str | None = None,
    ) -> None:
        if not records:
            return
        rows = self._arrow(records, vectors, model_id)
        with self._mutex:
            self._table.write(lambda table: self._table.upsert(table, rows))

    def replace_file(
        self,
        file: str,
        records: Sequence[CodeChunkRecord],
        vectors: npt.NDArray[np.float32] | None = None,
        model_id: str | None = None,
    ) -> None:
        """Replace every chunk of ``file`` with ``records`` under one lock."""
        rows = self._arrow(records, vectors, model_id)

        def write(table: Any) -> None:
            table.delete(f"file = {sql_quote(file)}")
            if rows.num_rows:
                table.add(rows)

        with self._mutex:
            self._table.write(write)

    def replace_files(
        self,
        files: Sequence[str],
        records: Sequence[CodeChunkRecord],
        vectors: npt.NDArray[np.float32] | None = None,
        model_id: str | None = None,
    ) -> None:
        """Replace every chunk of all ``files`` with ``records`` in one write.

        Why: a first index touches thousands of files and every LanceDB write is a version,
        so per-file writes would cost a version per file.
        """
        if not files and not records:
            return
        self.replace_files_rows(files, self._arrow(records, vectors, model_id))

    def replace_files_rows(self, files: Sequence[str], rows: pa.Table) -> None:
        """:meth:`replace_files` with the rows already in Arrow (:func:`chunk_schema`): a
        cold run's parse workers' chunks (``engram.codegraph.search.ChunkPrefill``)."""
        if not files and not rows.num_rows:
            return
        where = "file IN (" + ", ".join(sql_quote(f) for f in files) + ")" if files else None

        def write(table: Any) -> None:
            if where is not None:
                table.delete(where)
            if rows.num_rows:
                table.add(rows)

        with self._mutex:
            self._table.write(write)

    def delete_file(self, file: str) -> int:
        with self._mutex:
            self.refresh()
            count = sum(1 for r in self._records.values() if r.file == file)
            if count:
                self._table.write(lambda table: table.delete(f"file = {sql_quote(file)}"))
            return count

    def compact(self) -> None:
        with self._mutex:
            self._table.compact()

    @contextmanager
    def bulk(self) -> Iterator[BulkWrites]:
        """Index upkeep once at the end of many writes (``HybridTable.bulk``)."""
        with self._table.bulk() as run:
            yield run

    # ------------------------------------------------------------------ reads

    def chunks_for_file(self, file: str) -> list[CodeChunkRecord]:
        with self._mutex:
            self.refresh()
            return sorted(
                (r for r in self._records.values() if r.file == file), key=lambda r: r.start_line
            )

    def version(self) -> int:
        """The table's latest committed version (0 before the first write); cheap."""
        with self._mutex:
            return self._table.version()

    def stored_hashes(self) -> Iterator[tuple[str, str, str]]:
        """``(id, file, content_hash)`` of every stored chunk, without the snapshot.

        What deciding which files to re-chunk needs: three short columns read in one
        projected scan and handed out batch by batch. Building the snapshot instead (every
        chunk's code and contextual text as Python objects) took the language server from
        1 GB to 4.3 GB at the start of its index on a 500k-chunk workspace (issue 18,
        docs/lsp.md "Memory at scale").
        """
        data, _version = self._table.read_all(["id", "file", "content_hash"])
        if data is None:
            return
        for batch in data.to_batches(max_chunksize=8192):
            ids, files, hashes = (batch.column(i).to_pylist() for i in range(3))
            yield from zip(ids, files, hashes, strict=True)

    def all_chunks(self) -> list[CodeChunkRecord]:
        """Every stored chunk (snapshot order), for callers that build their own indexes."""
        with self._mutex:
            self.refresh()
            return [self._records[i] for i in self._ids]

    def vectors_for(self, ids: Sequence[str]) -> npt.NDArray[np.float32] | None:
        """Unit vectors of ``ids`` in order, or ``None`` unless every id has one (same dim)."""
        with self._mutex:
            self.refresh()
            if not ids:
                return None
            row_of = {chunk_id: row for row, chunk_id in enumerate(self._ids)}
            for block in self._blocks.values():
                positions = [block.position.get(row_of.get(i, -1)) for i in ids]
                if all(p is not None for p in positions):
                    return block.matrix[[p for p in positions if p is not None]].copy()
            return None

    def get_many(self, ids: Sequence[str]) -> list[CodeChunkRecord]:
        with self._mutex:
            self.refresh()
            return [self._records[i] for i in ids if i in self._records]

    def count(self) -> int:
        with self._mutex:
            self.refresh()
            return len(self._records)

    def vector_search(self, vector: npt.NDArray[np.float32], k: int) -> list[tuple[str, float]]:
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self._mutex:
            self.refresh()
            block = self._blocks.get(int(query.shape[0]))
            if block is None:
                return []
            return [(self._ids[row], score) for row, score in block.search(query, k, None)]

    def close(self) -> None:
        with self._mutex:
            self._table.close()


__all__ = ["ChunkStore", "CodeChunkRecord", "StoreError"]
