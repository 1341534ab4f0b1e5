"""Hybrid code search over AST chunks: code-aware BM25 + dense vectors, score fusion.

Why not plain reciprocal-rank fusion: RRF throws away how *sure* each retriever is, and on
natural-language code queries the keyword side is much weaker than the dense side, so equal
rank votes drag good dense results down (measured: naive RRF loses to dense alone on CoSQA).
Here both score lists are standardised over the candidate pool (z-scores) and mixed with a
weight that depends on the query: identifier-like queries (``parseConfig``, ``a/b.py``,
``load_config``) lean on keywords, prose questions lean on embeddings. Keyword search splits
camelCase/snake_case in both documents and queries, so ``read config file`` finds
``readConfigFile``.

Chunks and vectors live in ``.engram/code_chunks.sqlite``; the searchable indexes (an inverted
index and a NumPy matrix) are built in memory on first use and rebuilt when the stored
generation changes, so another process's re-index is picked up.
"""

from __future__ import annotations

import logging
import math
import re
import sqlite3
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from engram.codegraph.chunking import CodeChunk, chunk_file, split_identifier
from engram.codegraph.graph import CodeGraph
from engram.workspace import Workspace

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger(__name__)

EMBED_BATCH = 64
#: Dense weight for prose queries and for identifier-like queries.
DENSE_WEIGHT_PROSE = 0.8
DENSE_WEIGHT_IDENTIFIER = 0.35
#: Candidates taken from each retriever before fusion (at least).
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


class BM25Index:
    """Okapi BM25 over pre-tokenised documents, scoring every document with NumPy."""

    def __init__(self, documents: Iterable[list[str]], k1: float = 1.2, b: float = 0.75) -> None:
        import numpy as np

        postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        lengths: list[int] = []
        for doc_id, tokens in enumerate(documents):
            lengths.append(len(tokens))
            for token, count in Counter(tokens).items():
                postings[token].append((doc_id, count))
        self.size = len(lengths)
        self._lengths = np.asarray(lengths, dtype=np.float32)
        average = float(self._lengths.mean()) if self.size else 1.0
        self._norm = k1 * (1.0 - b + b * self._lengths / max(average, 1e-9))
        self._k1 = k1
        self._postings: dict[str, tuple[Any, Any, float]] = {}
        for token, entries in postings.items():
            ids = np.fromiter((e[0] for e in entries), dtype=np.int64, count=len(entries))
            tfs = np.fromiter((e[1] for e in entries), dtype=np.float32, count=len(entries))
            df = len(entries)
            idf = math.log(1.0 + (self.size - df + 0.5) / (df + 0.5))
            self._postings[token] = (ids, tfs, idf)

    def scores(self, query_tokens: Sequence[str]) -> npt.NDArray[np.float32]:
        import numpy as np

        out = np.zeros(self.size, dtype=np.float32)
        for token, weight in Counter(query_tokens).items():
            entry = self._postings.get(token)
            if entry is None:
                continue
            ids, tfs, idf = entry
            out[ids] += weight * idf * tfs * (self._k1 + 1.0) / (tfs + self._norm[ids])
        return out


@attrs.define
class CodeHit:
    file: str
    name: str | None
    kind: str
    start_line: int
    end_line: int
    score: float
    snippet: str

    def to_dict(self) -> dict[str, Any]:
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

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS chunk_files (file TEXT PRIMARY KEY, hash TEXT, model_id TEXT);
CREATE TABLE IF NOT EXISTS chunks (
    id TEXT PRIMARY KEY,
    file TEXT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    language TEXT,
    content TEXT NOT NULL,
    tokens TEXT NOT NULL,
    model_id TEXT,
    vector BLOB
);
CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file);
"""


@attrs.define
class _Snapshot:
    generation: str
    rows: list[tuple[str, str | None, str, int, int, str]]  # file, name, kind, start, end, content
    bm25: BM25Index
    matrix: Any  # np.ndarray (n, dim) or None
    model_id: str | None


class CodeSearch:
    """Chunks, embeds and searches the workspace's code; incremental per file."""

    def __init__(
        self,
        workspace: Workspace,
        graph: CodeGraph,
        embedder: Embedder | None = None,
        *,
        db_path: Path | None = None,
        dense_weight: float = DENSE_WEIGHT_PROSE,
        identifier_dense_weight: float = DENSE_WEIGHT_IDENTIFIER,
    ) -> None:
        self.workspace = workspace
        self.graph = graph
        self.embedder = embedder
        self.dense_weight = dense_weight
        self.identifier_dense_weight = identifier_dense_weight
        self._db_path = db_path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()
        self._snapshot: _Snapshot | None = None

    @property
    def db_path(self) -> Path:
        if self._db_path is None:
            self._db_path = self.workspace.ensure_engram_dir() / "code_chunks.sqlite"
        return self._db_path

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(
                self.db_path, timeout=30, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
            self._conn = conn
        return self._conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- indexing --------------------------------------------------------------------------
    def index_chunks(
        self,
        files: Sequence[str] | None = None,
        progress: Callable[[int, int, str], None] | None = None,
        cancel: Callable[[], bool] | None = None,
    ) -> ChunkIndexReport:
        """(Re)chunk and embed files whose content or embedding model changed.

        ``files`` limits the work (e.g. the ``changed_files`` of an index run); by default
        every file of the graph is checked and chunks of files that left it are dropped.
        """
        started = time.perf_counter()
        report = ChunkIndexReport(dense=self.embedder is not None)
        model_id = self.embedder.model_id if self.embedder is not None else None
        with self._lock:
            conn = self._db()
            graph_files = {
                path: (language, digest)
                for path, language, digest, status in self.graph.files()
                if status == "ok"
            }
            stored = {
                r[0]: (r[1], r[2])
                for r in conn.execute("SELECT file, hash, model_id FROM chunk_files")
            }
            if files is None:
                removed = sorted(set(stored) - set(graph_files))
                if removed:
                    conn.execute("BEGIN")
                    for file in removed:
                        conn.execute("DELETE FROM chunks WHERE file=?", (file,))
                        conn.execute("DELETE FROM chunk_files WHERE file=?", (file,))
                    conn.commit()
                    report.files_removed = len(removed)
                wanted = sorted(graph_files)
            else:
                wanted = [f for f in files if f in graph_files]
            todo = [f for f in wanted if stored.get(f) != (graph_files[f][1], model_id)]
            pending: list[tuple[str, str | None, list[CodeChunk]]] = []
            pending_chunks = 0
            for done, file in enumerate(todo):
                if cancel is not None and cancel():
                    report.interrupted = True
                    break
                if progress is not None:
                    progress(done, len(todo), file)
                chunks = self._chunks_for(file, graph_files[file][0])
                pending.append((file, graph_files[file][1], chunks))
                pending_chunks += len(chunks)
                if pending_chunks >= EMBED_BATCH * 4:
                    report.embedded += self._write(pending, model_id)
                    report.chunks += pending_chunks
                    report.files_chunked += len(pending)
                    pending, pending_chunks = [], 0
            if pending:
                report.embedded += self._write(pending, model_id)
                report.chunks += pending_chunks
                report.files_chunked += len(pending)
            if report.files_chunked or report.files_removed:
                conn.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('generation', ?)", (str(time.time_ns()),)
                )
        report.seconds = time.perf_counter() - started
        return report

    def _chunks_for(self, file: str, language: str | None) -> list[CodeChunk]:
        try:
            data = (self.workspace.root / file).read_bytes()
        except OSError as exc:
            log.info("cannot read %s for chunking: %s", file, exc)
            return []
        text = data.decode("utf-8", errors="replace")
        symbols = self.graph.symbols_in(file) if language else []
        return chunk_file(file, text, symbols, language)

    def _write(
        self, pending: list[tuple[str, str | None, list[CodeChunk]]], model_id: str | None
    ) -> int:
        all_chunks = [c for _, _, chunks in pending for c in chunks]
        vectors: list[bytes | None] = [None] * len(all_chunks)
        if self.embedder is not None and all_chunks:
            texts = [c.embedding_text() for c in all_chunks]
            for start in range(0, len(texts), EMBED_BATCH):
                matrix = self.embedder.embed(texts[start : start + EMBED_BATCH])
                for offset, row in enumerate(matrix):
                    vectors[start + offset] = row.astype("float32").tobytes()
        conn = self._db()
        conn.execute("BEGIN")
        try:
            position = 0
            for file, digest, chunks in pending:
                conn.execute("DELETE FROM chunks WHERE file=?", (file,))
                rows = []
                for chunk in chunks:
                    rows.append(
                        (chunk.chunk_id, chunk.file, chunk.kind, chunk.name, chunk.start_line,
                         chunk.end_line, chunk.language, chunk.content,
                         " ".join(tokenize(chunk.search_text())),
                         model_id if vectors[position] is not None else None, vectors[position])
                    )  # fmt: skip
                    position += 1
                conn.executemany(
                    "INSERT OR REPLACE INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows
                )
                conn.execute(
                    "INSERT OR REPLACE INTO chunk_files VALUES (?, ?, ?)", (file, digest, model_id)
                )
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        return sum(1 for v in vectors if v is not None)

    # -- searching -------------------------------------------------------------------------
    def _load(self) -> _Snapshot:
        import numpy as np

        conn = self._db()
        row = conn.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
        generation = row[0] if row else ""
        if self._snapshot is not None and self._snapshot.generation == generation:
            return self._snapshot
        model_id = self.embedder.model_id if self.embedder is not None else None
        rows: list[tuple[str, str | None, str, int, int, str]] = []
        token_lists: list[list[str]] = []
        vectors: list[Any] = []
        dense_ok = model_id is not None
        for file, name, kind, start, end, content, tokens, chunk_model, blob in conn.execute(
            "SELECT file, name, kind, start_line, end_line, content, tokens, model_id, vector "
            "FROM chunks ORDER BY file, start_line"
        ):
            rows.append((file, name, kind, int(start), int(end), content))
            token_lists.append(tokens.split())
            if dense_ok:
                if blob is None or chunk_model != model_id:
                    dense_ok = False
                else:
                    vectors.append(np.frombuffer(blob, dtype=np.float32))
        matrix = np.vstack(vectors) if dense_ok and vectors else None
        self._snapshot = _Snapshot(generation, rows, BM25Index(token_lists), matrix, model_id)
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
            scores = fuse_scores(keyword, dense, weight, max(CANDIDATES, 5 * k))
        order = np.argsort(-scores, kind="stable")[:k]
        hits = []
        for index in order:
            score = float(scores[index])
            if mode == "bm25" and score <= 0:
                break
            file, name, kind, start, end, content = snapshot.rows[int(index)]
            hits.append(CodeHit(file, name, kind, start, end, round(score, 6), _snippet(content)))
        return hits


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


def _snippet(content: str, max_lines: int = 8, max_chars: int = 400) -> str:
    lines = content.splitlines()[:max_lines]
    return "\n".join(lines)[:max_chars]
