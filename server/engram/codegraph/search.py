"""Hybrid code search over AST chunks: code-aware BM25 + dense vectors, score fusion.

Why not plain reciprocal-rank fusion: RRF throws away how *sure* each retriever is, and on
natural-language code queries the keyword side is much weaker than the dense side, so equal
rank votes drag good dense results down (measured: naive RRF loses to dense alone on CoSQA).
Here both score lists are standardised over the candidate pool (z-scores) and mixed with a
weight that depends on the query: identifier-like queries (``parseConfig``, ``a/b.py``,
``load_config``) lean on keywords, prose questions lean on embeddings. Keyword search splits
camelCase/snake_case in both documents and queries, so ``read config file`` finds
``readConfigFile``.

Chunks and vectors live in the LanceDB-backed ``engram.store.ChunkStore``
(``.engram/chunks.lance``); the searchable indexes (an inverted index and a NumPy matrix)
are built in memory on first use and rebuilt when the table version changes, so another
process's re-index is picked up.

Long on purpose: chunking, the chunk store and hybrid ranking form one pipeline whose steps
share the chunk records; split, each part would only be read with the others.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

import attrs

from engram.bm25 import BM25Index
from engram.codegraph.chunking import (
    ChunkRow,
    CodeChunk,
    split_identifier,
    text_digest,
    unique_chunks,
)
from engram.codegraph.graph import CodeGraph
from engram.progress import Progress
from engram.workspace import Workspace, WorkspaceError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

    from engram.jsontypes import JsonObject
    from engram.store.chunk_store import ChunkStore
    from engram.store.location import StoreLocation

log = logging.getLogger(__name__)

EMBED_BATCH = 64
#: Dense weight for prose queries and for identifier-like queries.
DENSE_WEIGHT_PROSE = 0.8
DENSE_WEIGHT_IDENTIFIER = 0.35
#: Candidates taken from each retriever before fusion (more only when more results are asked
#: for). The pool must not grow with ``k``: z-scores depend on the pool, so a pool of ``5 * k``
#: made the top 10 of a ``k=100`` call differ from a ``k=10`` call (and rank worse: CoSQA dev
#: nDCG@10 0.5918 -> 0.5961, MRR 0.5233 -> 0.5284 once the pool stopped following ``k``).
CANDIDATES = 100

_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "for",
        "with",
        "by",
        "from",
        "as",
        "at",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "how",
        "what",
        "which",
        "who",
        "whom",
        "why",
        "when",
        "where",
        "do",
        "does",
        "did",
        "can",
        "could",
        "should",
        "would",
        "will",
        "i",
        "you",
        "we",
        "they",
        "he",
        "she",
        "me",
        "my",
        "your",
        "our",
        "their",
        "using",
        "use",
        "into",
        "via",
        "than",
        "then",
        "there",
        "if",
        "else",
        "not",
        "no",
        "so",
    ]
)
_WORD_RE = re.compile(r"[A-Za-z0-9_]+")
_IDENTIFIER_QUERY_RE = re.compile(r"[a-z][A-Z]|[A-Za-z]_[A-Za-z]|\w\.\w|/|\(\)|::|->")


def stem(word: str) -> str:
    """Light English suffix stripping: ``files``/``file`` and ``parsing``/``parse`` meet."""
    if len(word) <= 3 or word.isdigit():
        return word
    for suffix, replacement in (
        ("ies", "y"),
        ("sses", "ss"),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith("ss"):
                return word
            base = word[: len(word) - len(suffix)] + replacement
            if suffix in ("ing", "ed") and len(base) > 2 and base[-1] == base[-2]:
                base = base[:-1]  # running -> run
            return base
    return word


def tokenize(text: str) -> list[str]:
    """Code-aware tokens: identifiers split into stemmed words, compounds kept too."""
    tokens: list[str] = []
    for raw in _WORD_RE.findall(text):
        parts = split_identifier(raw)
        if len(parts) > 1:
            tokens.append(raw.lower())
        for part in parts:
            if part in _STOPWORDS or (len(part) < 2 and not part.isdigit()):
                continue
            tokens.append(stem(part))
    return tokens


def is_identifier_query(query: str) -> bool:
    """Queries naming code (camelCase, snake_case, paths, calls) rather than describing it."""
    return bool(_IDENTIFIER_QUERY_RE.search(query)) or (len(query.split()) == 1 and len(query) > 2)


class Embedder(Protocol):
    """The ``engram.embed`` embedder contract (structural)."""

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...


@attrs.define
class CodeHit:
    file: str
    name: str | None
    kind: str
    start_line: int
    end_line: int
    score: float
    snippet: str

    def to_dict(self) -> JsonObject:
        return attrs.asdict(self)


@attrs.define
class ChunkIndexReport:
    files_chunked: int = 0
    files_removed: int = 0
    chunks: int = 0
    embedded: int = 0
    seconds: float = 0.0
    interrupted: bool = False
    dense: bool = False

    def to_dict(self) -> JsonObject:
        return attrs.asdict(self)


def _beat(
    progress: Callable[[int, int, str], None] | None, done: int, todo: Sequence[str]
) -> Callable[[str], None] | None:
    """Progress while a write embeds: the files done so far, and what the model is at."""
    if progress is None:
        return None
    return lambda message: progress(done, len(todo), message)


@attrs.frozen
class ChunkCoverage:
    """How many stored code chunks carry a vector from the current model.

    Dense code search needs every chunk embedded by the same model (``CodeSearch._load``
    builds one matrix or none), so one chunk left unembedded (``engram index --no-embed``,
    an interrupted run, a model switch) turns meaning search over code off; ``engram doctor``
    says so (docs/cli.md).
    """

    chunks: int
    embedded: int
    model_id: str | None

    @property
    def missing(self) -> int:
        return self.chunks - self.embedded


#: Chunks of at most this many files are embedded and written as one LanceDB version: a
#: write holds one batch in memory, never the repository's chunks.
WRITE_BATCH_CHUNKS = EMBED_BATCH * 16
#: Chunks per LanceDB version when the parse workers' chunks are written
#: (:class:`ChunkPrefill`, keyword-only): nothing is embedded, so only the version's cost
#: and the queued batches' memory weigh, and every add costs Lance a fixed share (its
#: version, its fragment): 2,048 rows a version cut the writer's CPU by ~20 % on gs-ws
#: (89k chunks: 3.0 -> 2.6 CPU s for the adds) for +54 MB at the end of the run (then an
#: FTS build; 4,096: -1.1 CPU s for +140 MB; issue 18, docs/codegraph.md "The CPU of a
#: cold index").
PREFILL_BATCH_CHUNKS = WRITE_BATCH_CHUNKS * 2
LEGACY_DB_NAME = "code_chunks.sqlite"


def chunk_digest(chunk: CodeChunk) -> str:
    """Hash of what is embedded for a chunk: equal digests can share one vector."""
    return text_digest(chunk.embedding_text())


def stored_hash(file_hash: str | None, model_id: str | None, digest: str) -> str:
    """``content_hash`` as stored: ``<file hash>|<model id>|<chunk digest>``.

    Why pack three parts: the file hash and model id let an index run skip unchanged files
    without re-reading them, the chunk digest lets a changed file reuse the vectors of its
    unchanged chunks; ``ChunkStore`` keeps one hash column, and chunks are derived data.
    """
    return f"{file_hash or ''}|{model_id or ''}|{digest}"


def parse_stored_hash(value: str) -> tuple[str, str, str]:
    """``(file hash, model id, chunk digest)``; unknown formats give empty parts."""
    parts = value.split("|")
    if len(parts) != 3:
        return "", "", ""
    return parts[0], parts[1], parts[2]


def _chunks_current(
    stored: tuple[str, str] | None, file_hash: str | None, model_id: str | None
) -> bool:
    """Whether a file's stored chunks (``(file hash, model id)`` of them) need no new run.

    A run with a model wants that model's vectors. A keyword-only run (``model_id`` None:
    the language server's start-up index, ``engram index --no-embed``) wants only current
    text: it used to re-chunk every file some model had embedded, writing its chunks back
    without vectors, so each editor start dropped all of code search's embeddings (a
    short session ended before the background child re-embedded them).
    """
    if stored is None or stored[0] != (file_hash or ""):
        return False
    return model_id is None or stored[1] == model_id


@attrs.define
class _Snapshot:
    version: int
    rows: list[tuple[str, str | None, str, int, int, str]]  # file, name, kind, start, end, content
    bm25: BM25Index
    matrix: npt.NDArray[np.float32] | None  # (n, dim); None: no model, or mixed models
    model_id: str | None
    prose: npt.NDArray[np.bool_] | None = None  # chunks of files no parser knows (Markdown)


@attrs.define
class _PendingFile:
    file: str
    file_hash: str | None
    chunks: list[CodeChunk]


class CodeSearch:
    """Chunks, embeds and searches the workspace's code; incremental per file.

    Chunks and vectors live in ``engram.store.ChunkStore`` (``.engram/chunks.lance``); the
    ranking indexes (code-aware BM25, a NumPy matrix) are built in memory from it and rebuilt
    when the LanceDB table version changes, so another process's re-index is picked up.
    """

    def __init__(
        self,
        workspace: Workspace,
        graph: CodeGraph,
        embedder: Embedder | None = None,
        *,
        dense_weight: float = DENSE_WEIGHT_PROSE,
        identifier_dense_weight: float = DENSE_WEIGHT_IDENTIFIER,
        location: StoreLocation | None = None,
    ) -> None:
        self.workspace = workspace
        self.location = location
        self.graph = graph
        self.embedder = embedder
        self.dense_weight = dense_weight
        self.identifier_dense_weight = identifier_dense_weight
        self._store: ChunkStore | None = None
        self._lock = threading.RLock()
        self._snapshot: _Snapshot | None = None

    def _chunks(self) -> ChunkStore:
        """The chunk store, opened on first use (importing it loads NumPy/LanceDB glue)."""
        if self._store is None:
            from engram.store.chunk_store import ChunkStore

            self._store = ChunkStore(self.workspace, location=self.location)
        return self._store

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None
            self._snapshot = None

    # -- indexing --------------------------------------------------------------------------
    def index_chunks(
        self,
        files: Sequence[str] | None = None,
        progress: Progress | None = None,
        cancel: Callable[[], bool] | None = None,
        *,
        prefilled: PrefillStored | None = None,
    ) -> ChunkIndexReport:
        """(Re)chunk and embed files whose content or embedding model changed (keyword-only:
        whose content changed; another model's vectors stay).

        ``files`` limits the work (e.g. the ``changed_files`` of an index run); by default
        every file of the graph is checked and chunks of files that left it are dropped.
        A changed file's chunks are replaced as a whole; chunks whose embedded text did not
        change keep their stored vector instead of being embedded again. ``prefilled``
        (:meth:`ChunkPrefill.stored_alone`, keyword-only runs) is the whole table a cold
        run's workers wrote: it stands for the scan of every stored hash (506,821 rows at
        58k files, ~1 s after the graph), and the files they found no chunk in are not
        cut again (the same cut, on the same bytes and symbols: none).
        """
        started = time.perf_counter()
        report = ChunkIndexReport(dense=self.embedder is not None)
        model_id = self.embedder.model_id if self.embedder is not None else None
        with self._lock:
            store = self._chunks()
            graph_files = {
                path: (language, digest)
                for path, language, digest, status in self.graph.files()
                if status == "ok"
            }
            stored_state: dict[str, tuple[str, str]] = {}
            reusable: dict[str, str] = {}  # chunk digest -> id of a stored chunk with a vector
            without_chunks: dict[str, str] = {}
            if prefilled is not None and model_id is None:
                # what the scan below reads back from the rows ChunkPrefill wrote
                stored_state = {f: (h, "") for f, h in prefilled.with_chunks.items()}
                without_chunks = prefilled.without_chunks
            else:
                for chunk_id, chunk_file, content_hash in store.stored_hashes():
                    file_hash, chunk_model, digest = parse_stored_hash(content_hash or "")
                    stored_state.setdefault(chunk_file, (file_hash, chunk_model))
                    if model_id is not None and chunk_model == model_id and digest:
                        reusable.setdefault(digest, chunk_id)
            if files is None:
                removed = sorted(set(stored_state) - set(graph_files))
                if removed:
                    store.replace_files(removed, [])
                    report.files_removed = len(removed)
                wanted = sorted(graph_files)
            else:
                wanted = [f for f in files if f in graph_files]
            todo = [
                f
                for f in wanted
                if not _chunks_current(stored_state.get(f), graph_files[f][1], model_id)
                and (f not in without_chunks or without_chunks[f] != graph_files[f][1])
            ]
            pending: list[_PendingFile] = []
            pending_chunks = 0
            # a first index writes hundreds of batches: index upkeep once, at the end
            with store.bulk() if len(todo) > 1 else contextlib.nullcontext():
                for done, file in enumerate(todo):
                    if cancel is not None and cancel():
                        report.interrupted = True
                        break
                    if progress is not None:
                        progress(done, len(todo), file)
                    chunks = self._chunks_for(file, graph_files[file][0])
                    if not chunks and file not in stored_state:
                        continue  # nothing stored, nothing to store (e.g. an empty __init__.py)
                    pending.append(_PendingFile(file, graph_files[file][1], chunks))
                    pending_chunks += len(chunks)
                    if pending_chunks >= WRITE_BATCH_CHUNKS:
                        report.embedded += self._write(
                            pending,
                            model_id,
                            stored_state,
                            reusable,
                            _beat(progress, done + 1, todo),
                        )
                        report.chunks += pending_chunks
                        report.files_chunked += len(pending)
                        pending, pending_chunks = [], 0
                if pending:
                    report.embedded += self._write(
                        pending, model_id, stored_state, reusable,
                        _beat(progress, len(todo), todo),
                    )  # fmt: skip
                    report.chunks += pending_chunks
                    report.files_chunked += len(pending)
            # No compaction here (the bulk's end does none on the chunk table): LanceDB's
            # optimize() reads every fragment below its 1M-row target, i.e. the whole table:
            # on the 58k-file workspace it set the index's peak RSS (issue 18;
            # docs/codegraph.md "At 50,000 files").
            # The store's periodic upkeep compacts later, as for any other writes.
            if not report.interrupted:
                self._drop_legacy_db()
        report.seconds = time.perf_counter() - started
        return report

    def prefill(self) -> ChunkPrefill:
        """A writer for the chunks a cold run's parse workers make (keyword-only: no model
        here); :meth:`index_chunks` after the graph then finds those files done."""
        if self.embedder is not None:
            raise ValueError("the parse workers' chunks are keyword-only")
        return ChunkPrefill(self._chunks)

    def _drop_legacy_db(self) -> None:
        """Delete the pre-LanceDB ``code_chunks.sqlite`` once its workspace is re-indexed."""
        engram_dir = self.workspace.engram_dir
        for suffix in ("", "-wal", "-shm"):
            path = engram_dir / (LEGACY_DB_NAME + suffix)
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:
                log.info("cannot remove the old chunk database %s: %s", path, exc)

    def _chunks_for(self, file: str, language: str | None) -> list[CodeChunk]:
        try:
            data = self.workspace.read_bytes(file)
        except (OSError, WorkspaceError) as exc:
            log.info("cannot read %s for chunking: %s", file, exc)
            return []
        text = data.decode("utf-8", errors="replace")
        symbols = self.graph.symbols_in(file) if language else []
        return unique_chunks(file, text, symbols, language)

    def _write(
        self,
        pending: list[_PendingFile],
        model_id: str | None,
        stored_state: dict[str, tuple[str, str]],
        reusable: dict[str, str],
        beat: Callable[[str], None] | None = None,
    ) -> int:
        """Embed what is new, then replace the pending files' chunks in one write.

        Returns how many chunks were embedded (reused vectors do not count). ``beat`` hears
        after each embedded batch: one write embeds up to ``WRITE_BATCH_CHUNKS`` chunks,
        minutes on a slow machine, and progress must not stop meanwhile (issue 16).
        """
        import numpy as np

        from engram.store.chunk_store import CodeChunkRecord

        store = self._chunks()
        embedded_texts = [(p, c, c.embedding_text()) for p in pending for c in p.chunks]
        items = [(p, c, text_digest(text)) for p, c, text in embedded_texts]
        records = [
            CodeChunkRecord(
                id=chunk.chunk_id,
                file=chunk.file,
                kind=chunk.kind,
                name=chunk.name or "",
                start_line=chunk.start_line,
                end_line=chunk.end_line,
                content=chunk.content,
                content_hash=stored_hash(p.file_hash, model_id, digest),
            )
            for p, chunk, digest in items
        ]
        vectors = None
        embedded = 0
        if self.embedder is not None and items:
            vectors = np.zeros((len(items), self.embedder.dim), dtype=np.float32)
            reuse_rows = [i for i, (_, _, d) in enumerate(items) if d in reusable]
            if reuse_rows:
                old = store.vectors_for([reusable[items[i][2]] for i in reuse_rows])
                if old is not None and old.shape[1] == vectors.shape[1]:
                    vectors[reuse_rows] = old
                else:
                    reuse_rows = []
            reused = set(reuse_rows)
            fresh = [i for i in range(len(items)) if i not in reused]
            texts = [embedded_texts[i][2] for i in fresh]
            for start in range(0, len(texts), EMBED_BATCH):
                batch = self.embedder.embed(texts[start : start + EMBED_BATCH])
                vectors[fresh[start : start + EMBED_BATCH]] = np.asarray(batch, np.float32)
                if beat is not None:
                    beat(f"embedded {min(start + EMBED_BATCH, len(texts))}/{len(texts)} chunks")
            embedded = len(fresh)
        replaced = [p.file for p in pending if p.file in stored_state]
        store.replace_files(replaced, records, vectors, model_id)
        for p in pending:
            stored_state[p.file] = (p.file_hash or "", model_id or "")
        return embedded

    def coverage(self) -> ChunkCoverage:
        """Stored chunks and how many of them the current model embedded (no model: none)."""
        model_id = self.embedder.model_id if self.embedder is not None else None
        chunks = embedded = 0
        for _id, _file, content_hash in self._chunks().stored_hashes():
            chunks += 1
            if model_id is not None and parse_stored_hash(content_hash or "")[1] == model_id:
                embedded += 1
        return ChunkCoverage(chunks=chunks, embedded=embedded, model_id=model_id)

    # -- searching -------------------------------------------------------------------------
    def _load(self) -> _Snapshot:
        store = self._chunks()
        version = store.version()
        if self._snapshot is not None and self._snapshot.version == version:
            return self._snapshot
        model_id = self.embedder.model_id if self.embedder is not None else None
        records = sorted(store.all_chunks(), key=lambda r: (r.file, r.start_line))
        rows = [
            (r.file, r.name or None, r.kind, int(r.start_line), int(r.end_line), r.content)
            for r in records
        ]
        token_lists = [tokenize(f"{r.file} {r.name} {r.content}") for r in records]
        matrix = None
        if model_id is not None and records:
            same_model = all(parse_stored_hash(r.content_hash)[1] == model_id for r in records)
            if same_model:
                matrix = store.vectors_for([r.id for r in records])
        import numpy as np

        prose = np.fromiter((r.kind == "text" for r in records), dtype=bool, count=len(records))
        self._snapshot = _Snapshot(version, rows, BM25Index(token_lists), matrix, model_id, prose)
        return self._snapshot

    def search(self, query: str, k: int = 10, mode: str = "hybrid") -> list[CodeHit]:
        """Best chunks for ``query``. ``mode``: ``hybrid`` (default), ``bm25`` or ``dense``."""
        import numpy as np

        query = query.strip()
        if not query or k <= 0:
            return []
        with self._lock:
            snapshot = self._load()
        if not snapshot.rows:
            return []
        keyword = snapshot.bm25.scores(tokenize(query))
        dense = None
        if snapshot.matrix is not None and self.embedder is not None and mode != "bm25":
            vector = np.asarray(self.embedder.embed([query])[0], dtype=np.float32)
            dense = snapshot.matrix @ vector
        if mode == "dense" and dense is None:
            return []
        if mode == "bm25" or dense is None:
            scores = keyword
        elif mode == "dense":
            scores = dense
        else:
            weight = (
                self.identifier_dense_weight if is_identifier_query(query) else self.dense_weight
            )
            scores = fuse_scores(keyword, dense, weight, max(CANDIDATES, k))
        if mode == "hybrid" and is_identifier_query(query):
            scores = demote_prose(scores, snapshot.prose, keyword)
        # keyword scores alone say "no match" (0); fused ones are -inf outside both
        # retrievers' candidates: neither is a hit (a query matching nothing answered every
        # chunk at 0.000 when the index had no vectors, e.g. embed.model = "none")
        keyword_only = mode == "bm25" or dense is None
        order = np.argsort(-scores, kind="stable")[:k]
        hits = []
        for index in order:
            score = float(scores[index])
            if not np.isfinite(score) or (keyword_only and score <= 0):
                break
            file, name, kind, start, end, content = snapshot.rows[int(index)]
            hits.append(CodeHit(file, name, kind, start, end, round(score, 6), _snippet(content)))
        return hits


#: A batch the prefill's writer thread stores as one version: ``(files whose old chunks go,
#: chunks' columns)``; None: the parse phase is over; :data:`_GIVEN_UP`: the run stopped
#: (cancel, Ctrl-C, an error)
_Batch = tuple[list[str], "_PrefillColumns"]


class _PrefillColumns(NamedTuple):
    """A batch of the parse workers' chunks as the columns it is written from (one list
    a column, not one record object a chunk: 500k chunks at 58k files;
    :func:`_keyword_table`)."""

    ids: list[str]
    files: list[str]
    kinds: list[str]
    names: list[str]
    starts: list[int]
    ends: list[int]
    contents: list[str]
    hashes: list[str]

    @classmethod
    def empty(cls) -> _PrefillColumns:
        return cls([], [], [], [], [], [], [], [])


_GIVEN_UP: _Batch = ([], _PrefillColumns.empty())


def _keyword_table(columns: _PrefillColumns) -> pa.Table:
    """The chunk table's rows of a prefill batch: those :meth:`ChunkStore.replace_files`
    makes of the same chunks as ``CodeChunkRecord``s, built from the columns."""
    import pyarrow as pa

    from engram.store.chunk_store import chunk_schema

    string = pa.string()
    count = len(columns.ids)
    return pa.table(
        {
            "id": pa.array(columns.ids, string),
            "file": pa.array(columns.files, string),
            "kind": pa.array(columns.kinds, string),
            "name": pa.array(columns.names, string),
            "start_line": pa.array(columns.starts, pa.int32()),
            "end_line": pa.array(columns.ends, pa.int32()),
            "content": pa.array(columns.contents, string),
            "text": pa.nulls(count, string),
            "search_text": pa.nulls(count, string),
            "content_hash": pa.array(columns.hashes, string),
            "vector": pa.nulls(count, pa.binary()),
            "dim": pa.array([0] * count, pa.int32()),
            "model_id": pa.nulls(count, string),
        },
        schema=chunk_schema(),
    )


@attrs.frozen
class PrefillStored:
    """What a cold run's :class:`ChunkPrefill` stored into an empty chunk table: each file
    written with its chunks, and each file the workers found to have none (file -> the
    file hash the graph holds), for :meth:`CodeSearch.index_chunks` to skip both."""

    with_chunks: dict[str, str]
    without_chunks: dict[str, str]


class ChunkPrefill:
    """Stores the code-search chunks parse workers made, while they parse on.

    Why: after the graph, :meth:`CodeSearch.index_chunks` read every file again, asked the
    graph for its symbols and cut it in this one process, about half of a cold
    ``engram index --no-embed`` (issue 18, docs/codegraph.md "The whole cold index"). The
    workers cut the chunks from the text and definitions they already hold
    (:func:`engram.codegraph.parse_worker.file_chunks`); this process gathers them in
    columns and hands batches of ``PREFILL_BATCH_CHUNKS`` to one writer thread, which
    writes them inside one :meth:`ChunkStore.bulk` (LanceDB's work runs outside the GIL).
    The queue holds two batches: the writer falling behind stops the parse phase, never
    grows memory.

    Rows and ids are those :meth:`CodeSearch.index_chunks` stores for the same file (the
    stored hash says keyword-only, ``<file hash>||<digest>``), so its pass after the
    graph skips every file written here and cuts only the others (files parsed in this
    process, a file that killed a worker, a run stopped half-way). A failed write is
    logged and leaves those files to that pass.
    """

    def __init__(self, store: Callable[[], ChunkStore]) -> None:
        import queue

        self._open = store
        self._queue: queue.Queue[_Batch | None] = queue.Queue(maxsize=2)
        self._files: list[str] = []
        self._columns = _PrefillColumns.empty()
        self._thread: threading.Thread | None = None
        self._ended = False
        #: the run gave up (a stop): the writer writes no further batch and builds no index
        self._abandoned = threading.Event()
        #: what runs once the writer is done (:meth:`close` with ``after``) and whether it is
        self._after: Callable[[], None] | None = None
        self._done = False
        self._done_lock = threading.Lock()
        self.error: BaseException | None = None
        #: files with chunks and chunks handed to the writer
        self.files = 0
        self.chunks = 0
        #: file -> file hash: handed to the writer with chunks, and found to have none
        self._with_chunks: dict[str, str] = {}
        self._without_chunks: dict[str, str] = {}
        #: the writer found the table empty and wrote every batch (:meth:`stored_alone`)
        self._whole = False

    def add(self, path: str, file_hash: str, chunks: list[ChunkRow]) -> None:
        """Queue one file's chunks (a batch goes to the writer once it is full)."""
        if self._ended:
            return
        self._files.append(path)
        if not chunks:
            self._without_chunks[path] = file_hash
            return
        self._with_chunks[path] = file_hash
        self.files += 1
        columns = self._columns
        ids, kinds, names, starts, ends, contents, digests = zip(*chunks, strict=True)
        columns.ids.extend(ids)
        columns.files.extend([path] * len(chunks))
        columns.kinds.extend(kinds)
        columns.names.extend(names)
        columns.starts.extend(starts)
        columns.ends.extend(ends)
        columns.contents.extend(contents)
        columns.hashes.extend([stored_hash(file_hash, None, digest) for digest in digests])
        if len(columns.ids) >= PREFILL_BATCH_CHUNKS:
            self._flush()

    def _flush(self) -> None:
        if not self._files:
            return
        if self._thread is None:  # started by the first batch: a run with none pays nothing
            # a daemon: a stopping engine exits without waiting for an FTS build it gave
            # up (:meth:`close`; LanceDB commits an index atomically, as after a crash)
            self._thread = threading.Thread(
                target=self._write, name="engram-chunk-writer", daemon=True
            )
            self._thread.start()
        self.chunks += len(self._columns.ids)
        self._queue.put((self._files, self._columns))
        self._files, self._columns = [], _PrefillColumns.empty()

    def parsed(self) -> None:
        """The last batch to the writer (which then ends its bulk, in its thread)."""
        if self._ended:
            return
        self._ended = True
        try:
            self._flush()
        finally:
            if self._thread is not None:
                self._queue.put(None)

    def close(self, *, abandon: bool = False, after: Callable[[], None] | None = None) -> None:
        """Wait for the writer (its last batch): none outlives this.

        A run that stopped before :meth:`parsed` (cancel, Ctrl-C, an error) drops its last
        partial batch; the run that resumes writes those files.

        ``abandon`` (a run cancelled after its parse phase: a stop during resolution)
        waits for nothing: the writer drops the batches it has not begun; a write it has
        begun (LanceDB cannot cancel it) ends in the background or with the process.
        ``after`` runs once the
        writer is done, here or in its thread (the caller's store must not close under
        it); the next run's chunk pass writes what was dropped (docs/engine.md "Faults").
        """
        import queue

        if abandon:
            self._abandoned.set()
        if not self._ended:
            self._ended = True
            self._files, self._columns = [], _PrefillColumns.empty()
            if self._thread is not None:
                if abandon:  # a full queue: the writer sees the event after its write
                    with contextlib.suppress(queue.Full):
                        self._queue.put_nowait(_GIVEN_UP)
                else:
                    self._queue.put(_GIVEN_UP)
        if self._thread is not None and not abandon:
            self._thread.join()
        with self._done_lock:
            if self._thread is not None and not self._done:
                self._after = after
                return
        if after is not None:
            after()

    def stored_alone(self) -> PrefillStored | None:
        """After :meth:`close`: the whole chunk table, when this run's writer found it
        empty and wrote every batch it was handed (a cold run: what a scan of the stored
        hashes would read, without the scan), else None (something may be stored that
        this run did not write: :meth:`CodeSearch.index_chunks` reads the table)."""
        if not self._whole or self.error is not None or self._abandoned.is_set():
            return None
        return PrefillStored(dict(self._with_chunks), dict(self._without_chunks))

    def _finished(self) -> None:
        """The writer's last act: what :meth:`close` left it to run."""
        with self._done_lock:
            self._done = True
            after, self._after = self._after, None
        if after is not None:
            after()

    def _write(self) -> None:
        """The writer thread: opens the store (LanceDB's import takes seconds: not in the
        parse loop), writes batches until None; after a failure it only drains the queue
        (the add side must never block on a dead writer)."""
        ended = False
        try:
            store = self._open()
            # files with chunks stored before this run: their old chunks go first; a file
            # without chunks and without stored ones is no write at all (as index_chunks)
            stored = {file for _id, file, _hash in store.stored_hashes()}
            whole = False
            with store.bulk() as run:
                while (batch := self._queue.get()) is not None:
                    if batch is _GIVEN_UP or self._abandoned.is_set():
                        run.upkeep = False
                        break
                    files, columns = batch
                    replaced = [f for f in files if f in stored]
                    store.replace_files_rows(replaced, _keyword_table(columns))
                else:
                    whole = not stored
                ended = True
                if self._abandoned.is_set():
                    run.upkeep = False
                    whole = False
            self._whole = whole  # the bulk ended well too
        except Exception as exc:  # the pass after the graph writes those files instead
            self.error = exc
            log.warning("writing the parse workers' code chunks failed: %s", exc)
            while not ended and not self._abandoned.is_set():
                batch = self._queue.get()
                ended = batch is None or batch is _GIVEN_UP
        finally:
            self._finished()


def fuse_scores(
    keyword: npt.NDArray[np.float32],
    dense: npt.NDArray[np.float32],
    dense_weight: float,
    candidates: int,
) -> npt.NDArray[np.float32]:
    """Convex mix of z-scored keyword and dense scores over the union of both top lists.

    Documents outside the candidate pool keep a score below every candidate, so the top of
    the ranking only ever comes from documents one of the retrievers found.
    """
    import numpy as np

    size = keyword.shape[0]
    take = min(candidates, size)
    pool = np.union1d(
        np.argpartition(-keyword, take - 1)[:take], np.argpartition(-dense, take - 1)[:take]
    )
    fused = np.full(size, -np.inf, dtype=np.float32)

    def standardise(values: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        spread = float(values.std())
        if spread < 1e-9:
            return np.zeros_like(values)
        standard: npt.NDArray[np.float32] = ((values - values.mean()) / spread).astype(np.float32)
        return standard

    fused[pool] = dense_weight * standardise(dense[pool]) + (1.0 - dense_weight) * standardise(
        keyword[pool]
    )
    return fused


def demote_prose(
    scores: npt.NDArray[np.float32],
    prose: npt.NDArray[np.bool_] | None,
    keyword: npt.NDArray[np.float32],
) -> npt.NDArray[np.float32]:
    """For a query that names code: prose ranks below every code chunk that names it too.

    ``SuggestionsFor``, ``parse_config``, ``a/b.go``: a changelog line or a guide that
    mentions a function must not outrank the function. Prose chunks (files no parser knows:
    Markdown, text) keep their order among themselves and are shifted just below the
    weakest code chunk with a keyword hit; with no such code chunk they are left alone, so
    prose still answers when no code does.
    """
    import numpy as np

    if prose is None or not prose.any():
        return scores
    finite = np.isfinite(scores)
    code_hits = ~prose & finite & (keyword > 0)
    prose_rows = prose & finite
    if not code_hits.any() or not prose_rows.any():
        return scores
    floor = float(scores[code_hits].min())
    top = float(scores[prose_rows].max())
    if top < floor:
        return scores
    out = scores.copy()
    out[prose_rows] -= (top - floor) + 1e-3
    return out


def _snippet(content: str, max_lines: int = 8, max_chars: int = 400) -> str:
    lines = content.splitlines()[:max_lines]
    return "\n".join(lines)[:max_chars]
