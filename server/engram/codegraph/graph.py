"""The structural code graph in SQLite: files, symbols, edges and a bounded closure table.

Why this shape:

* **Two phases per run.** Phase 1 parses changed files (one at a time: no AST outlives its
  file) and stores their symbols plus *raw* references (import specs, callee names). Phase 2
  resolves the references of every file marked stale against the current file list, derives
  file-level dependencies and updates the closure. A file's ``stale_at`` is set in phase 1 and
  cleared in phase 2, so an interrupted run resumes exactly where it stopped.
* **Batched transactions.** Phase 1 commits every :data:`BATCH_SIZE` files; nothing half
  written is ever visible (WAL, one transaction per batch).
* **Closure table on files.** ``closure(ancestor, descendant)`` means *descendant depends on
  ancestor* within :data:`MAX_DEPTH` hops, with the product of edge weights (docs/codegraph.md) and
  the
  path. Impact and neighbour queries are index lookups. When a file's dependencies change
  only the rows whose descendant can reach it are recomputed.

Long on purpose: the incremental index, the closure table and the graph queries share one
SQLite schema and its invariants (docs/codegraph.md).
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
import sqlite3
import threading
import time
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from engram.codegraph.extract import DEPTH_NOTE, ImportRef, collector_paused, parse, reparse
from engram.codegraph.languages import (
    LanguageRegistry,
    LanguageSpec,
    LoadedLanguage,
    is_indexable,
    language_for,
)
from engram.codegraph.parse_worker import (
    Examined,
    FileRows,
    ParsePool,
    PoolStartError,
    Task,
    examine,
    worker_count,
)
from engram.codegraph.project import ProjectFact, detect_project
from engram.codegraph.resolve import ImportResolver, read_go_modules, read_js_packages
from engram.codegraph.symbols import Symbol
from engram.codegraph.walk import iter_workspace_files
from engram.config import EngramConfig, IndexConfig
from engram.progress import Progress, statements_cancelled_by
from engram.workspace import Workspace, WorkspaceError

if TYPE_CHECKING:
    from tree_sitter import Parser, Tree

    from engram.codegraph.chunking import ChunkSink
    from engram.jsontypes import JsonObject

log = logging.getLogger(__name__)

#: 2: ``files.basename`` (indexed) for naming-convention lookups (docs/codegraph.md);
#: 3: ``closure`` a rowid table with a unique ``(ancestor, descendant)`` index, no
#: ``nodes_name``; 4: ``edges_dst`` for resolved targets only, ``edges_unresolved`` by name
#: (what a cold index builds cheaper; each upgraded in place)
SCHEMA_VERSION = 4
#: What extraction gives a file, stored beside the schema. An index re-parses only changed
#: files, so a graph whose rows an older extractor wrote would stay mixed: opening it forgets
#: the stored hashes of the languages whose output changed since, and the next index
#: re-parses those files once. 2: a Go method is named by its receiver's type,
#: ``Command.Execute`` (was ``Execute``).
EXTRACTOR_VERSION = 2
#: version -> the languages whose extraction it changed
EXTRACTOR_CHANGES: dict[int, tuple[str, ...]] = {2: ("go",)}
MAX_DEPTH = 3
#: Files whose dependents :meth:`CodeGraph.dependents` remembers (per graph version).
DEPENDENTS_CACHED = 16
BATCH_SIZE = 100
#: Syntax trees kept for incremental re-parsing of files edited through ``reindex_file``
#: (the files open in an editor); a bulk index never keeps a tree.
RECENT_TREES = 4
#: Impact propagation weights per edge type (docs/codegraph.md).
EDGE_WEIGHTS: dict[str, float] = {
    "imports": 0.9,
    "calls": 0.8,
    "implements": 0.7,
    "extends": 0.7,
    "exports": 0.6,
    "contains": 1.0,
}
DEPENDENCY_KINDS = ("imports", "calls", "extends", "implements")
#: Manifests import resolution reads (module paths, package names).
_RESOLVER_MANIFESTS = frozenset({"go.mod", "package.json"})
_RECEIVER_WORDS = frozenset({"self", "this", "cls", "super", "Self"})

CancelCallback = Callable[[], bool]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    language TEXT,
    hash TEXT,
    size INTEGER,
    mtime_ns INTEGER,
    status TEXT NOT NULL DEFAULT 'ok',
    note TEXT,
    package TEXT,
    stale_at REAL,
    basename TEXT
);
CREATE INDEX IF NOT EXISTS files_stale ON files(stale_at) WHERE stale_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS files_basename ON files(basename);
CREATE TABLE IF NOT EXISTS nodes (
    id INTEGER PRIMARY KEY,
    file_id INTEGER,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    qualname TEXT NOT NULL,
    start_line INTEGER,
    end_line INTEGER,
    parent_id INTEGER,
    exported INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS nodes_file ON nodes(file_id);
CREATE TABLE IF NOT EXISTS imports (
    file_id INTEGER NOT NULL,
    module TEXT NOT NULL,
    names TEXT NOT NULL,
    wildcard INTEGER NOT NULL,
    line INTEGER NOT NULL,
    resolved INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS imports_file ON imports(file_id);
CREATE TABLE IF NOT EXISTS edges (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    src_file INTEGER,
    src_node INTEGER,
    dst_file INTEGER,
    dst_name TEXT,
    target TEXT,
    weight REAL NOT NULL,
    line INTEGER
);
CREATE INDEX IF NOT EXISTS edges_src ON edges(src_file, kind);
CREATE INDEX IF NOT EXISTS edges_dst ON edges(dst_file, kind, dst_name) WHERE dst_file IS NOT NULL;
CREATE INDEX IF NOT EXISTS edges_unresolved ON edges(dst_name) WHERE dst_file IS NULL;
CREATE TABLE IF NOT EXISTS file_deps (
    src INTEGER NOT NULL,
    dst INTEGER NOT NULL,
    weight REAL NOT NULL,
    kinds TEXT NOT NULL,
    PRIMARY KEY (src, dst)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS file_deps_dst ON file_deps(dst);
CREATE TABLE IF NOT EXISTS closure (
    ancestor INTEGER NOT NULL,
    descendant INTEGER NOT NULL,
    depth INTEGER NOT NULL,
    weight REAL NOT NULL,
    path TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS closure_key ON closure(ancestor, descendant);
CREATE INDEX IF NOT EXISTS closure_descendant ON closure(descendant);
"""


#: Secondary indexes a cold index creates once its rows are in instead of growing them row by
#: row (their keys arrive in no useful order); neither phase of a run reads them, edits and
#: queries do, so every run and every edit makes sure they exist (docs/codegraph.md, "How
#: indexing works"). An edge's target is indexed by file once resolved and by name while
#: not (what re-resolving callers looks up): two partial indexes, cheaper to build than
#: one over both, as the unresolved ones' keys sort on a name past an equal file and kind.
_DEFERRED_INDEXES = {
    "edges_dst": "CREATE INDEX IF NOT EXISTS edges_dst ON edges(dst_file, kind, dst_name) "
    "WHERE dst_file IS NOT NULL",
    "edges_unresolved": "CREATE INDEX IF NOT EXISTS edges_unresolved ON edges(dst_name) "
    "WHERE dst_file IS NULL",
    "file_deps_dst": "CREATE INDEX IF NOT EXISTS file_deps_dst ON file_deps(dst)",
}

#: The definition names of a file that has none.
_NO_NAMES: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())

#: Resolving more files than this at once reads every file id up front; fewer (an edit)
#: looks up only the paths it meets: building the map was O(files) per edited file.
_PRELOAD_IDS_OVER = 200


#: A closure update touching more files than this (and over half the graph) starts over.
_FULL_CLOSURE_OVER = 200
#: Closure walks (one a file) between two looks at a run's cancel.
_CLOSURE_WALKS = 256


#: Files whose definition names one resolution pass keeps (a few MB at most).
_NAMES_KEPT = 10_000
#: Package folders whose name index one resolution pass keeps.
_PACKAGES_KEPT = 2_000
#: Files one resolution statement reads or writes for (docs/codegraph.md, "At 50,000 files").
_RESOLVE_CHUNK = 256
#: What a cold run's parse phase keeps in memory for its resolution, counted in calls and
#: definition names (58k files keep ~2.2M, packed as text: tens of MB); past it, files are
#: read back from SQLite.
_KEPT_ITEMS = 4_000_000


def _unpack_names(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(names of the definitions, of the top-level ones) :func:`.parse_worker.pack_names` packed."""
    if not text:
        return _NO_NAMES
    items = text.split("\x00")[1:]
    names = frozenset([n.removeprefix("\x01") for n in items])
    top = frozenset([n[1:] for n in items if n[:1] == "\x01"])
    return names, names if len(top) == len(names) else top


class _KeptRows:
    """What a cold run's parse phase wrote, kept for its resolution (bounded by
    :data:`_KEPT_ITEMS`).

    Resolution otherwise reads back the ~1.7M call rows (at 58k files) and every file's
    definition names the parse phase has just written. Only files new to the graph in a
    cold run are kept: none of their calls is resolved yet. A file that did not fit is read
    from SQLite as before. Each file's calls and names are kept as one string apiece, not
    as objects: keeping ~175 MB of small objects (frozensets of names, import references,
    tuples) through the parse phase made tree-sitter's parsing and the extraction ~5 CPU s
    slower at 58k files, more than resolution saved (docs/codegraph.md, "a third pass").
    """

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.items = 0
        self.full = False
        #: the next (node, edge, import) ids the parse phase's inserts take
        self.next_ids: tuple[int, ...] | None = None
        #: file id -> the id of its first call edge and its calls (parse_worker.pack_calls),
        #: as ``f"{id}{calls}"``; taken (and dropped) by the resolution of its chunk
        self.calls: dict[int, str] = {}
        #: file id -> its definition names (:func:`.parse_worker.pack_names`), kept to the end of
        #: resolution: calls into a file resolve against them
        self.names: dict[int, str] = {}

    def fits(self, items: int) -> bool:
        """Reserve room for ``items``; False past the budget, and from then on for every
        file: the rest of the run's files are read back."""
        if self.full or self.items + items > self.budget:
            self.full = True
            return False
        self.items += items
        return True


@attrs.define
class _Resolved:
    """What resolving one file's imports found; its calls add to ``deps``."""

    #: dependency file id -> (weight, edge kinds)
    deps: dict[int, tuple[float, set[str]]] = attrs.field(factory=dict)
    #: (resolved?, imports rowid)
    resolved_rows: list[tuple[int, int]] = attrs.field(factory=list)
    #: (src, dst, module, weight, line) of the import edges
    import_edges: list[tuple[int, int, str, float, int]] = attrs.field(factory=list)
    imported_names: dict[str, list[int]] = attrs.field(factory=lambda: defaultdict(list))
    module_aliases: dict[str, list[int]] = attrs.field(factory=lambda: defaultdict(list))

    def add_dep(self, file_id: int, dst: int, kind: str) -> None:
        """Called per resolved reference (~1M in a cold index at 58k files), so a known
        dependency is updated in place instead of building a default pair each time."""
        if dst == file_id:
            return
        weight = EDGE_WEIGHTS[kind]
        known = self.deps.get(dst)
        if known is None:
            self.deps[dst] = (weight, {kind})
            return
        known[1].add(kind)
        if weight > known[0]:
            self.deps[dst] = (weight, known[1])


class _FileIds:
    """``files.path`` <-> ``files.id`` during one resolution pass, read as needed."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        preload: bool,
        kept: dict[int, str] | None = None,
    ) -> None:
        self._conn = conn
        self._complete = preload
        #: the names a cold run's parse phase kept (:class:`_KeptRows`), never read back
        self._kept: dict[int, str] = kept or {}
        self._by_path: dict[str, int | None] = {}
        self._by_id: dict[int, str | None] = {}
        #: file id -> (names of its definitions, of its top-level ones); one pass reads a
        #: much-imported file's names once, not once per importer (docs/codegraph.md,
        #: "At 50,000 files")
        self._names: dict[int, tuple[frozenset[str], frozenset[str]]] = {}
        #: folder -> :meth:`package_names` of its files (Go and Java packages)
        self._packages: dict[tuple[str, tuple[str, ...]], dict[str, list[int]]] = {}
        if preload:
            for file_id, path in conn.execute("SELECT id, path FROM files"):
                self._by_path[str(path)] = int(file_id)
                self._by_id[int(file_id)] = str(path)

    def id_of(self, path: str) -> int | None:
        if path not in self._by_path:
            if self._complete:
                return None
            row = self._conn.execute("SELECT id FROM files WHERE path=?", (path,)).fetchone()
            self._by_path[path] = int(row[0]) if row else None
        return self._by_path[path]

    def ids_of(self, paths: Iterable[str]) -> list[int]:
        return [i for i in (self.id_of(p) for p in paths) if i is not None]

    def names(self, file_id: int) -> frozenset[str]:
        """Names of the definitions in a file (what calls into it resolve to)."""
        return self._definitions(file_id)[0]

    def top_names(self, file_id: int) -> frozenset[str]:
        """Names of a file's top-level definitions (what its package's other files see)."""
        return self._definitions(file_id)[1]

    def _definitions(self, file_id: int) -> tuple[frozenset[str], frozenset[str]]:
        found = self._names.get(file_id)
        if found is None and file_id in self._kept:
            found = _unpack_names(self._kept[file_id])
            if len(self._names) >= _NAMES_KEPT:  # bounded on a huge tree
                self._names.clear()
            self._names[file_id] = found
        if found is None:
            rows = self._conn.execute(
                "SELECT name, parent_id IS NULL FROM nodes WHERE file_id=?", (file_id,)
            ).fetchall()
            found = (frozenset(r[0] for r in rows), frozenset(r[0] for r in rows if r[1]))
            if len(self._names) >= _NAMES_KEPT:  # bounded on a huge tree
                self._names.clear()
            self._names[file_id] = found
        return found

    def read_names(self, file_ids: Iterable[int]) -> None:
        """Read the definition names of the files not yet known, in one statement per
        500 files (what a chunk of a resolution pass is about to ask for)."""
        missing = sorted(i for i in set(file_ids) if i not in self._names)
        if len(self._names) + len(missing) > _NAMES_KEPT:  # bounded on a huge tree
            self._names.clear()
        kept = self._kept
        if kept:
            for file_id in [i for i in missing if i in kept]:
                self._names[file_id] = _unpack_names(kept[file_id])
            missing = [i for i in missing if i not in kept]
        for start in range(0, len(missing), 500):
            part = missing[start : start + 500]
            rows: dict[int, list[tuple[str, int]]] = {i: [] for i in part}
            marks = ",".join("?" * len(part))
            for file_id, name, top in self._conn.execute(
                f"SELECT file_id, name, parent_id IS NULL FROM nodes WHERE file_id IN ({marks})",
                part,
            ):
                rows[file_id].append((name, top))
            for file_id, named in rows.items():
                self._names[file_id] = (
                    frozenset(r[0] for r in named),
                    frozenset(r[0] for r in named if r[1]),
                )

    def package_names(
        self, folder: str, extensions: tuple[str, ...], paths: Callable[[], list[str]]
    ) -> dict[str, list[int]]:
        """``name -> the two lowest ids of files in paths() (one folder's files of one
        language: its package) with a top-level definition of that name``; a file's package
        siblings are the others. ``paths`` is called only when the folder is not known."""
        key = (folder, extensions)
        found = self._packages.get(key)
        if found is None:
            found = {}
            siblings = sorted(self.ids_of(paths()))
            self.read_names(siblings)
            for sibling in siblings:
                for name in self.top_names(sibling):
                    hits = found.get(name)
                    if hits is None:
                        found[name] = [sibling]
                    elif len(hits) < 2:
                        hits.append(sibling)
            if len(self._packages) >= _PACKAGES_KEPT:
                self._packages.clear()
            self._packages[key] = found
        return found

    def path_of(self, file_id: int) -> str | None:
        if file_id not in self._by_id:
            if self._complete:
                return None
            row = self._conn.execute("SELECT path FROM files WHERE id=?", (file_id,)).fetchone()
            self._by_id[file_id] = str(row[0]) if row else None
        return self._by_id[file_id]


class _Adjacency:
    """``file_deps`` as ``src -> [(dst, weight)]`` in ``dst`` order, read per file as the
    closure's walk meets it, or all at once for a rebuild of the whole closure."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._complete = False
        self._by_src: dict[int, list[tuple[int, float]]] = {}

    def load_all(self) -> None:
        by_src: dict[int, list[tuple[int, float]]] = defaultdict(list)
        for src, dst, weight in self._conn.execute(
            "SELECT src, dst, weight FROM file_deps ORDER BY src, dst"
        ):
            by_src[src].append((dst, weight))
        self._by_src = dict(by_src)
        self._complete = True

    def sources(self) -> set[int]:
        return set(self._by_src)

    @property
    def loaded(self) -> dict[int, list[tuple[int, float]]] | None:
        """Every file's dependencies once ``load_all`` ran, else None: the closure's walk
        then reads the map itself instead of calling :meth:`of` at every hop."""
        return self._by_src if self._complete else None

    def of(self, node: int) -> list[tuple[int, float]]:
        found = self._by_src.get(node)
        if found is None:
            if self._complete:
                return []
            found = self._by_src[node] = [
                (int(r[0]), float(r[1]))
                for r in self._conn.execute(
                    "SELECT dst, weight FROM file_deps WHERE src=? ORDER BY dst", (node,)
                )
            ]
        return found


@attrs.frozen
class ReferenceSite:
    """One reference by name to a file's definition, with what the graph knows of how it
    was written (:meth:`CodeGraph.reference_sites`)."""

    file: str
    kind: str
    line: int
    #: the calling file's language
    language: str | None
    #: what a call was made on (``c`` of ``c.Execute()``); ``None``: a bare call, or not a call
    obj: str | None = None
    #: ``obj`` names a module the calling file imports (``cobra.Execute()``)
    obj_is_module: bool = False


@attrs.define
class IndexReport:
    files_seen: int = 0
    files_indexed: int = 0
    files_unchanged: int = 0
    files_removed: int = 0
    files_skipped: int = 0
    bytes_indexed: int = 0
    nodes: int = 0
    edges: int = 0
    closure_rows: int = 0
    seconds: float = 0.0
    #: CPU seconds of the run, this process's and its parse workers' (wall seconds also
    #: count a busy machine's neighbours; scripts/bench/scale.py compares on both)
    cpu_seconds: float = 0.0
    #: parse worker processes the run used (0: it parsed in this process)
    workers: int = 0
    #: the part of ``cpu_seconds`` the workers spent (their start-up included)
    worker_cpu_seconds: float = 0.0
    #: the workers' peak resident memory, added up (MiB)
    worker_peak_rss_mb: float = 0.0
    #: CPU seconds the workers spent cutting code-search chunks for a keyword-only run
    #: (``index(chunks=...)``): not in ``cpu_seconds``, which stays the graph's
    chunk_cpu_seconds: float = 0.0
    interrupted: bool = False
    #: files added or modified in this run: the ones whose code chunks need re-embedding
    changed_files: list[str] = attrs.field(factory=list)
    removed_files: list[str] = attrs.field(factory=list)
    #: one line per file that was skipped or only partly understood
    notes: list[str] = attrs.field(factory=list)
    #: listed paths (symlinks) whose real location is outside the workspace: never read
    outside_workspace: list[str] = attrs.field(factory=list)
    project_facts: list[ProjectFact] = attrs.field(factory=list)

    def to_dict(self) -> JsonObject:
        data = attrs.asdict(self, recurse=False)
        data["project_facts"] = [f.to_dict() for f in self.project_facts]
        return data


@attrs.define
class ReindexResult:
    path: str
    changed: bool
    removed: bool = False
    milliseconds: float = 0.0


def _children_cpu() -> float:
    """CPU seconds of this process's ended (waited-for) children, as the OS counts them."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class IndexInterrupted(Exception):
    """Raised inside a run when the cancel callback says stop; the run is resumable."""


def _stop_here(cancel: CancelCallback | None) -> None:
    """Raise :class:`IndexInterrupted` when ``cancel`` says stop."""
    if cancel is not None and cancel():
        raise IndexInterrupted


@attrs.frozen
class _Checkpoint:
    """Where a long phase after the parse (resolution, the closure) says how far it is and
    stops on a cancel: every :data:`_RESOLVE_CHUNK` files or :data:`_CLOSURE_WALKS` walks.
    It looked at the cancel only when it began, so a stop landing in its ~11 s at 58k
    files waited for its end (docs/engine.md "Faults"); and it said nothing meanwhile."""

    cancel: CancelCallback | None = None
    progress: Progress | None = None

    def __call__(self, done: int, total: int, what: str) -> None:
        if self.progress is not None:
            self.progress(done, total, what)
        _stop_here(self.cancel)


#: What :meth:`CodeGraph.index` says while it resolves and walks the closure.
RESOLVING = "resolving references"
CLOSURE = "dependency closure"


#: SQLite virtual-machine steps between two looks at the cancel while one statement runs
#: (a closure index over millions of rows, the deferred indexes): ~a millisecond of work.
_CANCEL_STEPS = 100_000


#: What one file's facts store, split in two: everything but line numbers (the rows'
#: identities), and the line numbers in a fixed order.
_StoredForm = tuple[tuple[object, ...], tuple[int, ...]]


def _stored_form(rows: FileRows | None, note: str | None, language: str | None) -> _StoredForm:
    """What :meth:`CodeGraph._write_file` and ``_write_facts`` store of one file's rows,
    without row ids: two contents with the same form leave the same graph. The line numbers
    are apart so that an edit that only moved lines is told by :func:`_line_shift`."""
    if rows is None:
        return (language, note, None), ()
    shape = (
        language,
        note,
        rows.package,
        tuple((n[0], n[1], n[2], n[5], n[6]) for n in rows.nodes),
        tuple(i[:3] for i in rows.imports),
        tuple(c[:3] for c in rows.calls),
        tuple(r[:3] for r in rows.bases),
    )
    lines: list[int] = []
    for n in rows.nodes:
        lines.append(n[3])
        lines.append(n[4])
    lines.extend(i[3] for i in rows.imports)
    lines.extend(c[3] for c in rows.calls)
    lines.extend(r[3] for r in rows.bases)
    return shape, tuple(lines)


def _line_shift(old: tuple[int, ...], new: tuple[int, ...]) -> tuple[int, int] | None:
    """``(threshold, delta)`` when ``new`` is ``old`` with every line at or past
    ``threshold`` moved by ``delta`` and every line before it left as it was (lines inserted
    or deleted, nothing else changed); ``None`` otherwise (or when nothing moved)."""
    if len(old) != len(new):
        return None
    threshold: int | None = None
    delta = 0
    for before, after in zip(old, new, strict=True):
        if before != after and (threshold is None or before < threshold):
            threshold, delta = before, after - before
    if threshold is None or delta == 0:
        return None
    for before, after in zip(old, new, strict=True):
        if after != (before + delta if before >= threshold else before):
            return None
    return threshold, delta


class CodeGraph:
    """The code graph of one workspace, stored in ``.engram/graph.sqlite``.

    Thread-safe (one connection guarded by a lock): the LSP may re-index an edited file
    while a hover asks for symbols. Implements :class:`engram.retrieval.GraphProvider`.
    """

    def __init__(
        self,
        workspace: Workspace,
        config: EngramConfig | IndexConfig | None = None,
        *,
        db_path: Path | None = None,
        registry: LanguageRegistry | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.workspace = workspace
        if isinstance(config, EngramConfig):
            config = config.index
        self.config: IndexConfig = config or IndexConfig()
        self._db_path = db_path
        self._registry = registry or LanguageRegistry()
        self._clock = clock
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._parser: Parser | None = None
        self._resolver: ImportResolver | None = None
        self._manifest_paths: list[str] | None = None
        #: path -> (language, source, tree) of the last few files re-indexed one by one
        self._recent_trees: OrderedDict[str, tuple[str, bytes, Tree]] = OrderedDict()
        #: path -> (what its last re-index stored, the graph version after that commit):
        #: an edit that stores the same rows again needs no rewrite and no resolution
        self._kept_facts: OrderedDict[str, tuple[_StoredForm, tuple[int, int]]] = OrderedDict()
        #: set by ``_store_bytes`` when the rows of the file were left as they were
        self._rows_kept = False
        #: during a cold ``index`` run: the rows its parse phase wrote, for its resolution
        self._kept: _KeptRows | None = None
        #: how many items (references, imports, names) a cold run keeps (:data:`_KEPT_ITEMS`)
        self.kept_budget = _KEPT_ITEMS
        #: (file id, depth) -> its named dependents, valid for ``_dependents_version``
        self._dependents_cache: OrderedDict[
            tuple[int, int], tuple[tuple[str, int, float, tuple[str, ...]], ...]
        ] = OrderedDict()
        self._dependents_version: tuple[int, int] | None = None

    def reconfigure(self, config: IndexConfig) -> None:
        """Take new index settings (``exclude``, ``max_file_bytes``) for the next run.

        Every reader of ``self.config`` holds the graph's lock, so this waits for an index
        run or re-index in progress: it finishes with the settings it started with, and
        no run mixes two. Files a new ``exclude`` leaves out are dropped by the next full
        ``index``, as files removed from disk are.
        """
        with self._lock:
            self.config = config

    # -- connection ------------------------------------------------------------------------
    @property
    def db_path(self) -> Path:
        if self._db_path is None:
            self._db_path = self.workspace.ensure_engram_dir() / "graph.sqlite"
        return self._db_path

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
            conn: sqlite3.Connection | None = None
            try:
                conn = self._connect()
                upgraded = self._prepare_schema(conn)
            except sqlite3.OperationalError:
                raise  # busy or locked: another process holds it; never a reason to delete
            except sqlite3.DatabaseError as exc:
                # not a database, a corrupt page: the graph is derived from the workspace,
                # so it is rebuilt (never a crash)
                if conn is not None:
                    conn.close()
                log.warning(
                    "code graph %s is unreadable (%s): discarded; the next index rebuilds it",
                    self.db_path,
                    exc,
                )
                self._discard_db()
                conn = self._connect()
                upgraded = self._prepare_schema(conn)
            if not upgraded:
                conn.close()
                self._discard_db()
                conn = self._connect()
                self._prepare_schema(conn)
            self._conn = conn
        return self._conn

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.db_path, timeout=30, isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=OFF")
        return conn

    def _discard_db(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.db_path}{suffix}").unlink(missing_ok=True)

    @staticmethod
    def _stored_schema(conn: sqlite3.Connection, key: str = "schema") -> tuple[bool, int]:
        """``(present, version)`` of the stored schema (or of ``key``'s version, e.g. the
        extractor's); version -1 when unreadable."""
        has_meta = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
        ).fetchone()
        row = (
            conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
            if has_meta
            else None
        )
        if row is None:
            return False, 0
        try:
            return True, int(row[0])
        except (TypeError, ValueError):
            return True, -1

    def _forget_old_extraction(self, conn: sqlite3.Connection) -> None:
        """Make the next index re-parse the files an older extractor wrote differently.

        A graph from before the version was recorded holds version 1 rows; one from a newer
        Engram (or unreadable) has all its files re-parsed. Their hash and mtime are
        cleared, so the unchanged check cannot skip them; their rows stay readable until
        then. Runs in :meth:`_prepare_schema`'s transaction, after the schema upgrade.
        """
        present, stored = self._stored_schema(conn, "extractor")
        if present and stored == EXTRACTOR_VERSION:
            return
        if not present:
            stored = 1
        if 1 <= stored < EXTRACTOR_VERSION:
            languages = sorted(
                {lang for v in range(stored + 1, EXTRACTOR_VERSION + 1)
                 for lang in EXTRACTOR_CHANGES.get(v, ())}
            )  # fmt: skip
            marks = ",".join("?" * len(languages))
            cleared = conn.execute(
                f"UPDATE files SET hash=NULL, mtime_ns=NULL WHERE language IN ({marks})",
                languages,
            ).rowcount
        else:
            cleared = conn.execute("UPDATE files SET hash=NULL, mtime_ns=NULL").rowcount
        if cleared:
            log.warning(
                "code graph %s: extractor %s -> %d: the next index re-parses %d files",
                self.db_path,
                stored if stored >= 0 else "unreadable",
                EXTRACTOR_VERSION,
                cleared,
            )

    def _prepare_schema(self, conn: sqlite3.Connection) -> bool:
        """Create or upgrade the schema; False when the file must be rebuilt instead.

        Version 1 graphs (before ``files.basename``) are upgraded in place: one column,
        filled from the paths, and its index; nothing is re-parsed. Version 2 graphs (and
        1) get the closure's rows copied into its version 3 table (:meth:`_upgrade_closure`)
        and lose the unread ``nodes_name`` index; version 3 graphs (and older) get the
        edge target indexes of version 4. A graph written by a newer Engram (or with an
        unreadable version) is rebuilt, with a log line saying so. Files whose rows an
        older extractor wrote are re-parsed by the next index (:meth:`_forget_old_extraction`).
        """
        if self._stored_schema(conn) == (True, SCHEMA_VERSION) and self._stored_schema(
            conn, "extractor"
        ) == (True, EXTRACTOR_VERSION):
            return True  # the usual case: no write, so no wait behind a running index
        conn.execute("BEGIN IMMEDIATE")  # one process upgrades; the others wait and see it
        try:
            present, version = self._stored_schema(conn)
            if not present:  # new, or tables from before the schema was recorded
                old_files = conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE type='table' AND name='files'"
                ).fetchone()
                version = 1 if old_files else SCHEMA_VERSION
            if version == 1:
                log.warning(
                    "code graph %s: upgrading schema 1 -> %d (file basenames, closure layout)",
                    self.db_path,
                    SCHEMA_VERSION,
                )
                columns = {r[1] for r in conn.execute("PRAGMA table_info(files)")}
                if "basename" not in columns:
                    conn.execute("ALTER TABLE files ADD COLUMN basename TEXT")
                conn.executemany(
                    "UPDATE files SET basename=? WHERE id=?",
                    [
                        (posixpath.basename(path), file_id)
                        for file_id, path in conn.execute("SELECT id, path FROM files")
                    ],
                )
            if version in (2, 3):
                log.warning(
                    "code graph %s: upgrading schema %d -> %d (%s)",
                    self.db_path,
                    version,
                    SCHEMA_VERSION,
                    "edge indexes" if version == 3 else "closure layout, edge indexes",
                )
            if version in (1, 2):
                self._upgrade_closure(conn)
                conn.execute("DROP INDEX IF EXISTS nodes_name")
            if version in (1, 2, 3):
                conn.execute("DROP INDEX IF EXISTS edges_dst")  # rebuilt partial below
            elif version != SCHEMA_VERSION:
                log.warning(
                    "code graph %s has schema %s; this Engram reads %d: discarded; the next "
                    "index rebuilds it",
                    self.db_path,
                    version if version >= 0 else "unreadable",
                    SCHEMA_VERSION,
                )
                conn.rollback()
                return False
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            self._forget_old_extraction(conn)
            conn.execute(
                "INSERT OR REPLACE INTO meta VALUES ('extractor', ?)", (str(EXTRACTOR_VERSION),)
            )
            conn.commit()
        except BaseException:
            if conn.in_transaction:
                conn.rollback()
            raise
        return True

    @staticmethod
    def _upgrade_closure(conn: sqlite3.Connection) -> None:
        """Copy a version 1-2 closure (``WITHOUT ROWID``, keyed by ``(ancestor,
        descendant)``) into the version 3 table, rows unchanged; the schema's statements
        then build its two indexes. Inside the caller's transaction."""
        row = conn.execute(
            "SELECT sql FROM sqlite_master WHERE type='table' AND name='closure'"
        ).fetchone()
        if row is None or "WITHOUT ROWID" not in str(row[0]).upper():
            return  # no closure yet (the schema creates it) or already the new table
        conn.execute("DROP TABLE IF EXISTS closure_upgrade")
        conn.execute(
            "CREATE TABLE closure_upgrade (ancestor INTEGER NOT NULL, descendant INTEGER "
            "NOT NULL, depth INTEGER NOT NULL, weight REAL NOT NULL, path TEXT NOT NULL)"
        )
        conn.execute(
            "INSERT INTO closure_upgrade SELECT ancestor, descendant, depth, weight, path "
            "FROM closure ORDER BY descendant, ancestor"
        )
        conn.execute("DROP TABLE closure")  # and its closure_descendant index
        conn.execute("ALTER TABLE closure_upgrade RENAME TO closure")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._recent_trees.clear()
            self._dependents_cache.clear()
            self._dependents_version = None
            self._kept_facts.clear()

    def __enter__(self) -> CodeGraph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _get_parser(self) -> Parser:
        if self._parser is None:
            from tree_sitter import Parser

            self._parser = Parser()
        return self._parser

    # -- indexing --------------------------------------------------------------------------
    def index(
        self,
        progress: Progress | None = None,
        cancel: CancelCallback | None = None,
        *,
        chunks: ChunkSink | None = None,
    ) -> IndexReport:
        """Bring the graph up to date with the workspace; resumable after an interruption.

        ``progress(done, total, path)`` is called per file; ``cancel()`` returning true stops
        the run after the current file (the report says ``interrupted``). A
        ``KeyboardInterrupt`` rolls back the open batch and propagates. ``chunks`` hears
        the code-search chunks of the files parse workers parsed (a run in one process
        has none: ``CodeSearch.index_chunks`` cuts every file after the graph), and that
        the parse phase is over (not told when it stopped: cancelled, an error).
        """
        started = time.perf_counter()
        cpu_started = time.process_time()
        report = IndexReport()
        with self._lock:
            conn = self._db()
            listed, _ = self._list_files(report.outside_workspace)
            report.notes.extend(
                f"{rel}: skipped: a link to a file outside the workspace"
                for rel in report.outside_workspace
            )
            report.files_seen = len(listed)
            known = {
                row[0]: (row[1], row[2], row[3], row[4])
                for row in conn.execute("SELECT path, hash, size, mtime_ns, status FROM files")
            }
            removed = sorted(set(known) - set(listed))
            added = [p for p in listed if p not in known]
            if known:
                self._ensure_indexes()  # a cold run killed before it built them
            else:
                self._drop_deferred_indexes()
            try:
                # the pass's rows (a batch's, a chunk's) form no reference cycles and die by
                # reference counting; with the collector on, holding them tripped twice the
                # full collections of a file-at-a-time pass (docs/codegraph.md)
                with collector_paused():
                    # a cold run hands its parse phase's rows to its resolution (kept
                    # before the collector resumes: they form no cycles either)
                    self._kept = None if known else _KeptRows(self.kept_budget)
                    try:
                        self._phase_parse(listed, known, report, progress, cancel, chunks)
                        if chunks is not None:
                            chunks.parsed()
                        if removed:
                            self._remove_files(removed)
                            report.files_removed = len(removed)
                            report.removed_files = removed
                        self._resolver = None
                        if added or removed:
                            if known:  # a cold run's files are all stale already
                                self._mark_reresolvable(added, removed)
                            self._sync_modules()
                        self._phase_resolve(_Checkpoint(cancel, progress))
                    finally:
                        self._kept = None
            except IndexInterrupted:
                report.interrupted = True
            except BaseException:
                if conn.in_transaction:
                    conn.rollback()
                raise
            if not report.interrupted:
                # a stopped run leaves them to the next write, which builds them first
                # (an edit's reindex_file, the next index): at 58k files they took
                # seconds of a stop (docs/engine.md "Faults")
                self._ensure_indexes()
            if progress is not None:
                progress(report.files_seen, report.files_seen, "")
            report.project_facts = detect_project(self.workspace.root)
            report.nodes = conn.execute("SELECT count(*) FROM nodes").fetchone()[0]
            report.edges = conn.execute("SELECT count(*) FROM edges").fetchone()[0]
            report.closure_rows = conn.execute("SELECT count(*) FROM closure").fetchone()[0]
        report.seconds = time.perf_counter() - started
        report.cpu_seconds = time.process_time() - cpu_started + report.worker_cpu_seconds
        return report

    def _drop_deferred_indexes(self) -> None:
        conn = self._db()
        conn.execute("BEGIN")
        for name in _DEFERRED_INDEXES:
            conn.execute(f"DROP INDEX IF EXISTS {name}")
        conn.commit()

    def _ensure_indexes(self) -> None:
        """Create the deferred indexes that are missing (writes only when one is)."""
        conn = self._db()
        present = {
            str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")
        }
        missing = [sql for name, sql in _DEFERRED_INDEXES.items() if name not in present]
        if missing:
            conn.execute("BEGIN")
            for sql in missing:
                conn.execute(sql)
            conn.commit()

    def _list_files(self, outside: list[str] | None = None) -> tuple[list[str], list[str]]:
        listed: list[str] = []
        manifests: list[str] = []
        for rel in iter_workspace_files(self.workspace.root, self.config.exclude, outside):
            if posixpath.basename(rel) in _RESOLVER_MANIFESTS:
                manifests.append(rel)
            if is_indexable(rel):
                listed.append(rel)
        self._manifest_paths = manifests
        return listed, manifests

    def _phase_parse(
        self,
        listed: list[str],
        known: dict[str, tuple[str | None, int | None, int | None, str]],
        report: IndexReport,
        progress: Progress | None,
        cancel: CancelCallback | None,
        chunks: ChunkSink | None = None,
    ) -> None:
        """Store every listed file that changed, in listing order, a batch per commit.

        The files to parse are read, hashed, parsed and extracted in worker processes when
        there are at least ``index.workers_min_files`` of them (:meth:`_parse_pool`); this
        process writes their rows in the same order and batches either way, so the ids and
        the graph do not depend on where the parsing ran.
        """
        conn = self._db()
        total = len(listed)
        root = str(self.workspace.root)
        reader = self.workspace.bulk_reader()
        # the stat and the unchanged check come first: they say how many files to parse
        stats: list[os.stat_result | None] = []
        tasks: list[Task] = []
        for rel in listed:
            try:
                stat = os.stat(f"{root}/{rel}")
            except OSError:
                stats.append(None)
                continue
            previous = known.get(rel)
            if (
                previous is not None
                and previous[1] == stat.st_size
                and previous[2] == stat.st_mtime_ns
                and previous[3] != "error"
            ):
                stats.append(None)
                report.files_unchanged += 1
                continue
            stats.append(stat)
            tasks.append(
                (rel, stat.st_size, stat.st_mtime_ns, previous[0] if previous else None,
                 previous[3] if previous else None)
            )  # fmt: skip
        pool = self._parse_pool(len(tasks), chunks=chunks is not None)
        pool_cpu_started, main_cpu_started = _children_cpu(), time.process_time()
        finished = False
        try:
            examined = pool.results(tasks) if pool is not None else None
            conn.execute("BEGIN")
            in_batch = 0
            for done, rel in enumerate(listed):
                if cancel is not None and cancel():
                    conn.commit()
                    raise IndexInterrupted
                if progress is not None:
                    progress(done, total, rel)
                listed_stat = stats[done]
                if listed_stat is None:
                    continue
                stat = listed_stat
                previous = known.get(rel)
                found = next(examined) if examined is not None else None
                if found is None:  # in-process (no pool, or the pool gave up)
                    outcome = self._store_path(
                        rel, stat.st_size, stat.st_mtime_ns, previous, read=reader.read_bytes
                    )
                else:
                    if found.status == "crashed":  # the file killed a worker
                        found = self._examine(
                            rel, stat.st_size, stat.st_mtime_ns, previous,
                            read=reader.read_bytes, died=found.note,
                        )  # fmt: skip
                    outcome = self._store_examined(
                        rel, stat.st_size, stat.st_mtime_ns, previous, found
                    )
                    if chunks is not None and found.chunks is not None and outcome is not None:
                        assert found.digest is not None  # an ok file was read
                        chunks.add(rel, found.digest, found.chunks)
                if outcome is None:
                    report.files_unchanged += 1
                    continue
                status, note = outcome
                if status == "ok":
                    report.files_indexed += 1
                    report.bytes_indexed += stat.st_size
                    report.changed_files.append(rel)
                else:
                    report.files_skipped += 1
                if note:
                    report.notes.append(f"{rel}: {note}")
                in_batch += 1
                if in_batch >= BATCH_SIZE:
                    conn.commit()
                    conn.execute("BEGIN")
                    in_batch = 0
            conn.commit()
            finished = True
        finally:
            if pool is not None:
                if finished:
                    pool.close()
                else:  # cancelled, Ctrl-C, an error: the workers end now
                    pool.terminate()
                report.workers = pool.used
                report.worker_cpu_seconds = pool.cpu_seconds
                report.chunk_cpu_seconds = pool.chunk_cpu_seconds
                report.worker_peak_rss_mb = round(pool.peak_rss_mb, 1)
                log.info(
                    "parsed %d files in %d worker processes (%d started): %.1f CPU s (%.1f by "
                    "the OS's count of ended children), peak RSS %.0f MB together; writing "
                    "their rows here: %.1f CPU s",
                    len(tasks),
                    report.workers,
                    pool.started,
                    pool.cpu_seconds,
                    _children_cpu() - pool_cpu_started,
                    pool.peak_rss_mb,
                    time.process_time() - main_cpu_started,
                )

    def _parse_pool(self, files: int, *, chunks: bool = False) -> ParsePool | None:
        """Worker processes for a run with ``files`` to parse, or None (in-process): when
        there are fewer than ``index.workers_min_files`` (starting a worker costs ~0.5 s of
        CPU), one CPU or ``index.workers`` 0, or when no worker starts (logged)."""
        workers = worker_count(self.config.workers)
        if workers < 1 or files < max(1, self.config.workers_min_files):
            return None
        workers = min(workers, -(-files // max(1, self.config.workers_min_files)))
        try:
            return ParsePool(
                workers,
                root=self.workspace.root,
                max_file_bytes=self.config.max_file_bytes,
                query_root=self._registry.query_root,
                pack=self._kept is not None,
                chunks=chunks,
            )
        except (PoolStartError, OSError) as exc:
            log.warning("parse workers unavailable (%s): parsing in-process", exc)
            return None

    def _examine(
        self,
        rel: str,
        size: int,
        mtime_ns: int,
        previous: tuple[str | None, int | None, int | None, str] | None,
        *,
        keep_tree: bool = False,
        read: Callable[[str], bytes] | None = None,
        died: str | None = None,
    ) -> Examined:
        """:func:`examine` in this process; ``died`` (a worker's exit code) gives the file
        the ``parse failed`` note a grammar that raises gets, without parsing it here."""

        def parse_tree(loaded: LoadedLanguage, data: bytes) -> Tree:
            if died is not None:
                raise RuntimeError(f"the parser process died on it ({died})")
            return self._parse(rel, loaded, data, keep_tree=keep_tree)

        return examine(
            (rel, size, mtime_ns, previous[0] if previous else None,
             previous[3] if previous else None),
            read=read or self.workspace.read_bytes,
            max_file_bytes=self.config.max_file_bytes,
            registry=self._registry,
            parse_tree=parse_tree,
            pack=previous is None and self._kept is not None,
        )  # fmt: skip

    def _store_path(
        self,
        rel: str,
        size: int,
        mtime_ns: int,
        previous: tuple[str | None, int | None, int | None, str] | None,
        *,
        keep_tree: bool = False,
        read: Callable[[str], bytes] | None = None,
    ) -> tuple[str, str | None] | None:
        """Read and store one file; ``None`` when its content hash is unchanged.

        ``keep_tree`` keeps the syntax tree for an incremental re-parse of the next edit;
        ``read`` is the confined reader (a bulk pass passes one that confines per folder).
        """
        found = self._examine(rel, size, mtime_ns, previous, keep_tree=keep_tree, read=read)
        return self._store_examined(rel, size, mtime_ns, previous, found, keep_tree=keep_tree)

    def _store_examined(
        self,
        rel: str,
        size: int,
        mtime_ns: int,
        previous: tuple[str | None, int | None, int | None, str] | None,
        found: Examined,
        *,
        keep_tree: bool = False,
    ) -> tuple[str, str | None] | None:
        """Write what :func:`examine` found of one file (here or in a worker): its row and
        rows; ``None`` when it is unchanged."""
        conn = self._db()
        new = previous is None
        status, digest, note, language, rows, _chunks = found
        if status == "same":
            return None
        if status == "unchanged":
            conn.execute("UPDATE files SET mtime_ns=?, size=? WHERE path=?", (mtime_ns, size, rel))
            return None
        if note is not None and note.startswith("parse failed"):
            log.warning("%s for %s", note, rel)
        if status != "ok":
            self._write_file(rel, digest, size, mtime_ns, status, note, None, new=new)
            return status, note
        assert digest is not None
        if keep_tree and not new:
            key = _stored_form(rows, note, language)
            kept = self._kept_facts.pop(rel, None)
            if kept is not None and kept[1] == self._version() and kept[0][0] == key[0]:
                # the rows this content gives are the ones stored by this connection's last
                # re-index of the file, and nothing was written since (by anyone), but for
                # their line numbers: only the file's hash moves, and the lines when a pure
                # shift moved them (docs/codegraph.md, "One edited file")
                shift = _line_shift(kept[0][1], key[1]) if kept[0][1] != key[1] else (0, 0)
                if shift is not None:
                    row = conn.execute(
                        "UPDATE files SET hash=?, size=?, mtime_ns=? WHERE path=? RETURNING id",
                        (digest, size, mtime_ns, rel),
                    ).fetchone()
                    if shift[1]:
                        self._shift_lines(int(row[0]), *shift)
                    self._rows_kept = True
            self._kept_facts[rel] = (key, (-1, -1))  # its version is set after the commit
            while len(self._kept_facts) > RECENT_TREES:
                self._kept_facts.popitem(last=False)
            if self._rows_kept:
                return "ok", note
        file_id = self._write_file(
            rel, digest, size, mtime_ns, "ok", note, language, new=new,
            package=rows.package if rows is not None else None,
        )  # fmt: skip
        if rows is not None:
            self._write_facts(file_id, rows, keep=new and self._kept is not None)
        return "ok", note

    def _shift_lines(self, file_id: int, threshold: int, delta: int) -> None:
        """Move every line number of the file's rows at or past ``threshold`` by ``delta``:
        its nodes, its edges (contains, exports, calls, bases and resolved imports: each
        carries a line of the file) and its imports. Nothing else of the graph has one."""
        conn = self._db()
        conn.execute(
            """UPDATE nodes SET
                 start_line = CASE WHEN start_line >= ?1 THEN start_line + ?2 ELSE start_line END,
                 end_line = CASE WHEN end_line >= ?1 THEN end_line + ?2 ELSE end_line END
               WHERE file_id = ?3 AND (start_line >= ?1 OR end_line >= ?1)""",
            (threshold, delta, file_id),
        )
        conn.execute(
            "UPDATE edges SET line = line + ?2 WHERE src_file = ?3 AND line >= ?1",
            (threshold, delta, file_id),
        )
        conn.execute(
            "UPDATE imports SET line = line + ?2 WHERE file_id = ?3 AND line >= ?1",
            (threshold, delta, file_id),
        )

    def _parse(self, rel: str, loaded: LoadedLanguage, data: bytes, *, keep_tree: bool) -> Tree:
        """Parse ``data``, incrementally from the file's previous tree when one was kept."""
        recent = self._recent_trees.pop(rel, None)
        parser = self._get_parser()
        if recent is not None and recent[0] == loaded.spec.name:
            tree = reparse(parser, loaded, recent[1], recent[2], data)
        else:
            tree = parse(parser, loaded, data)
        if keep_tree:
            self._recent_trees[rel] = (loaded.spec.name, data, tree)
            while len(self._recent_trees) > RECENT_TREES:
                self._recent_trees.popitem(last=False)
        return tree

    def _write_file(
        self,
        rel: str,
        digest: str | None,
        size: int,
        mtime_ns: int,
        status: str,
        note: str | None,
        language: str | None,
        *,
        new: bool = False,
        package: str | None = None,
    ) -> int:
        """Insert or update a file's row; a ``new`` file (not in the graph when the run
        began) has no rows of its own to delete. ``package`` (Go, Java: the parsed package
        clause) goes in with the row, not in an ``UPDATE`` of its own (14k Java files at
        58k)."""
        conn = self._db()
        row = conn.execute(
            """INSERT INTO files(path, language, hash, size, mtime_ns, status, note, stale_at,
                                 basename, package)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
               ON CONFLICT(path) DO UPDATE SET language=excluded.language, hash=excluded.hash,
                 size=excluded.size, mtime_ns=excluded.mtime_ns, status=excluded.status,
                 note=excluded.note, stale_at=excluded.stale_at, package=excluded.package
               RETURNING id""",
            (rel, language, digest, size, mtime_ns, status, note, self._clock(),
             posixpath.basename(rel), package or None),
        ).fetchone()  # fmt: skip
        file_id = int(row[0])
        if new:
            if self._kept is not None and self._kept.fits(1):
                # no facts (yet): _write_facts replaces this for a parsed file
                self._kept.calls[file_id] = "0"
                self._kept.names[file_id] = ""
            return file_id
        # the file's own part of the graph is rebuilt from scratch
        conn.execute("DELETE FROM nodes WHERE file_id=?", (file_id,))
        conn.execute("DELETE FROM edges WHERE src_file=?", (file_id,))
        conn.execute("DELETE FROM imports WHERE file_id=?", (file_id,))
        return file_id

    def _write_facts(self, file_id: int, rows: FileRows, *, keep: bool = False) -> None:
        """Store one file's rows (made here or in a worker: :func:`examine`); ``keep`` (a
        file new to the graph in a cold run) also hands them to this run's resolution
        (:class:`_KeptRows`)."""
        conn = self._db()
        # ids are assigned here (as SQLite would: max + 1) so that all rows of the file go in
        # with a few executemany calls instead of one statement per definition; the caller
        # already holds the write transaction, so nobody else can take these ids
        kept = self._kept
        if keep and kept is not None:
            # the node, edge and import ids the inserts below take: read once a cold run,
            # then counted (every row of its parse phase goes in here, none is deleted)
            if kept.next_ids is None:
                kept.next_ids = tuple(
                    int(v) + 1
                    for v in conn.execute(
                        "SELECT (SELECT coalesce(max(id), 0) FROM nodes), "
                        "(SELECT coalesce(max(id), 0) FROM edges), "
                        "(SELECT coalesce(max(rowid), 0) FROM imports)"
                    ).fetchone()
                )
            base, next_edge, next_import = kept.next_ids
        else:
            if kept is not None:
                kept.next_ids = None  # rows not counted: read the ids again
            base = int(conn.execute("SELECT coalesce(max(id), 0) FROM nodes").fetchone()[0]) + 1
        node_rows: list[tuple[int, int, str, str, str, int, int, int | None, int]] = []
        edge_rows: list[tuple[str, int, int | None, int, str, float, int]] = []
        contains, exports = EDGE_WEIGHTS["contains"], EDGE_WEIGHTS["exports"]
        node_id = base
        for kind, name, qualname, start, end, parent, exported in rows.nodes:
            parent_id = base + parent if parent is not None else None
            node_rows.append(
                (node_id, file_id, kind, name, qualname, start, end, parent_id, exported)
            )
            node_id += 1
            edge_rows.append(("contains", file_id, parent_id, file_id, qualname, contains, start))
            if exported:
                edge_rows.append(("exports", file_id, None, file_id, name, exports, start))
        conn.executemany(
            """INSERT INTO nodes(id, file_id, kind, name, qualname, start_line, end_line,
                                 parent_id, exported) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            node_rows,
        )
        conn.executemany(
            """INSERT INTO edges(kind, src_file, src_node, dst_file, dst_name, weight, line)
               VALUES (?, ?, ?, ?, ?, ?, ?)""",
            edge_rows,
        )
        conn.executemany(
            "INSERT INTO imports(file_id, module, names, wildcard, line) VALUES (?, ?, ?, ?, ?)",
            [(file_id, *ref) for ref in rows.imports],
        )
        calls = EDGE_WEIGHTS["calls"]
        conn.executemany(
            """INSERT INTO edges(kind, src_file, src_node, dst_file, dst_name, target, weight, line)
               VALUES ('calls', ?, ?, NULL, ?, ?, ?, ?)""",
            [
                (file_id, base + caller if caller is not None else None, name, obj, calls, line)
                for caller, name, obj, line in rows.calls
            ],
        )
        conn.executemany(
            """INSERT INTO edges(kind, src_file, src_node, dst_file, dst_name, weight, line)
               VALUES (?, ?, ?, NULL, ?, ?, ?)""",
            [
                (kind, file_id, base + owner if owner is not None else None, base_name,
                 EDGE_WEIGHTS[kind], line)
                for kind, owner, base_name, line in rows.bases
            ],
        )  # fmt: skip
        if keep and kept is not None:
            first_call = next_edge + len(edge_rows)
            kept.next_ids = (
                node_id,
                first_call + len(rows.calls) + len(rows.bases),
                next_import + len(rows.imports),
            )
            self._keep_facts(file_id, rows, first_call)

    def _keep_facts(self, file_id: int, rows: FileRows, first_call: int) -> None:
        """Keep what :meth:`_write_facts` just wrote of the file's calls (from edge id
        ``first_call`` on) and definition names, as resolution would read them back."""
        kept = self._kept
        assert kept is not None
        if rows.packed is None or not kept.fits(len(rows.calls) + len(rows.nodes)):
            kept.calls.pop(file_id, None)  # read back from SQLite
            kept.names.pop(file_id, None)
            return
        kept.calls[file_id] = f"{first_call}{rows.packed[0]}"
        kept.names[file_id] = rows.packed[1]

    def _file_id(self, rel: str) -> int | None:
        row = self._db().execute("SELECT id FROM files WHERE path=?", (rel,)).fetchone()
        return int(row[0]) if row else None

    def _remove_files(self, paths: Sequence[str]) -> None:
        conn = self._db()
        conn.execute("BEGIN")
        now = self._clock()
        for rel in paths:
            file_id = self._file_id(rel)
            if file_id is None:
                continue
            # files that depended on it must re-resolve (their imports now dangle)
            conn.execute(
                "UPDATE files SET stale_at=? WHERE id IN (SELECT src FROM file_deps WHERE dst=?)",
                (now, file_id),
            )
            conn.execute(
                "UPDATE files SET stale_at=? WHERE id IN "
                "(SELECT descendant FROM closure WHERE ancestor=? AND depth<?)",
                (now, file_id, MAX_DEPTH),
            )
            # the dependencies on it stay until their files are resolved again (marked
            # above): resolution compares a file's old dependencies with its new ones, and
            # only a file whose dependencies changed has the closure rows through it
            # recomputed; deleted here, the rows of files that reached others through it
            # outlived it
            for table, column in (("nodes", "file_id"), ("edges", "src_file"),
                                  ("imports", "file_id"), ("file_deps", "src"),
                                  ("closure", "ancestor"),
                                  ("closure", "descendant")):  # fmt: skip
                conn.execute(f"DELETE FROM {table} WHERE {column}=?", (file_id,))
            conn.execute("UPDATE edges SET dst_file=NULL WHERE dst_file=?", (file_id,))
            conn.execute("DELETE FROM files WHERE id=?", (file_id,))
        conn.commit()

    def _mark_reresolvable(self, added: Sequence[str], removed: Sequence[str]) -> None:
        """Files with unresolved imports that may now resolve to a new file become stale."""
        if not added:
            return
        conn = self._db()
        stems: set[str] = set()
        for rel in added:
            base = posixpath.basename(rel)
            stems.add(base.split(".")[0])
            parent = posixpath.basename(posixpath.dirname(rel))
            if parent:
                stems.add(parent)
        conn.execute("BEGIN")
        now = self._clock()
        if len(stems) > 200:
            conn.execute(
                "UPDATE files SET stale_at=? WHERE id IN "
                "(SELECT file_id FROM imports WHERE resolved=0)",
                (now,),
            )
        else:
            for stem in stems:
                pattern = f"%{stem}%"
                conn.execute(
                    "UPDATE files SET stale_at=? WHERE stale_at IS NULL AND id IN "
                    "(SELECT file_id FROM imports WHERE resolved=0 "
                    " AND (module LIKE ? OR names LIKE ?))",
                    (now, pattern, pattern),
                )
        conn.commit()

    def _sync_modules(self) -> None:
        """Module nodes are the folders; each contains its files.

        One ``executemany`` per table for every folder (23k at 58k files), the node ids
        given as the one-row inserts numbered them (the largest id left plus one, in
        folder order), so the rows and ids are those of a statement per folder.
        """
        conn = self._db()
        conn.execute("BEGIN")
        conn.execute("DELETE FROM edges WHERE kind='contains' AND src_file IS NULL")
        conn.execute("DELETE FROM nodes WHERE kind='module' AND file_id IS NULL")
        by_dir: dict[str, list[int]] = defaultdict(list)
        for file_id, path in conn.execute("SELECT id, path FROM files"):
            by_dir[posixpath.dirname(path)].append(file_id)
        module_id = int(conn.execute("SELECT coalesce(max(id), 0) FROM nodes").fetchone()[0])
        modules: list[tuple[int, str, str]] = []
        contains: list[tuple[int, int, float]] = []
        weight = EDGE_WEIGHTS["contains"]
        for directory, file_ids in sorted(by_dir.items()):
            module_id += 1
            modules.append((module_id, posixpath.basename(directory) or ".", directory or "."))
            contains += [(module_id, fid, weight) for fid in file_ids]
        conn.executemany(
            "INSERT INTO nodes(id, file_id, kind, name, qualname) VALUES (?, NULL, 'module', ?, ?)",
            modules,
        )
        conn.executemany(
            """INSERT INTO edges(kind, src_file, src_node, dst_file, weight)
               VALUES ('contains', NULL, ?, ?, ?)""",
            contains,
        )
        conn.commit()

    # -- phase 2: resolution and closure ---------------------------------------------------
    def _get_resolver(self) -> ImportResolver:
        if self._resolver is None:
            conn = self._db()
            paths = [row[0] for row in conn.execute("SELECT path FROM files")]
            if self._manifest_paths is None:
                self._manifest_paths = self._scan_manifests()
            contents: dict[str, bytes] = {}
            for rel in self._manifest_paths:
                try:
                    contents[rel] = self.workspace.read_bytes(rel)
                except (OSError, WorkspaceError):
                    continue
            go_mods = {p: c for p, c in contents.items() if p.endswith("go.mod")}
            packages = {p: c for p, c in contents.items() if p.endswith("package.json")}
            self._resolver = ImportResolver(
                paths, read_go_modules(go_mods), read_js_packages(packages)
            )
        return self._resolver

    def _scan_manifests(self) -> list[str]:
        return [
            rel
            for rel in iter_workspace_files(self.workspace.root, self.config.exclude)
            if posixpath.basename(rel) in _RESOLVER_MANIFESTS
        ]

    def _phase_resolve(self, checkpoint: _Checkpoint | None = None) -> None:
        """Resolve the stale files and update the closure in one transaction. The cancel is
        looked at by every :class:`_Checkpoint` and inside long statements: a cancel rolls
        it all back (the files stay stale, the next run resolves them), so a stop landing
        here ends in ~a second, not after the ~11 s the phase takes at 58k files."""
        conn = self._db()
        any_stale = conn.execute("SELECT 1 FROM files WHERE stale_at IS NOT NULL LIMIT 1")
        if any_stale.fetchone() is None:
            return
        cancel = checkpoint.cancel if checkpoint is not None else None
        _stop_here(cancel)
        conn.execute("BEGIN")
        try:
            with statements_cancelled_by(conn, cancel, IndexInterrupted, _CANCEL_STEPS):
                self._resolve_stale(checkpoint)
            conn.commit()
        except BaseException:
            conn.rollback()
            raise

    def _resolve_stale(self, checkpoint: _Checkpoint | None = None) -> None:
        """Resolve every stale file and update the closure, inside the caller's transaction."""
        conn = self._db()
        stale = [int(r[0]) for r in conn.execute("SELECT id FROM files WHERE stale_at IS NOT NULL")]
        if not stale:
            return
        changed = self._resolve_files(stale, self._get_resolver(), checkpoint)
        self._update_closure(changed, checkpoint)
        # the files read above, as nothing in between marks one (one statement, not one a file)
        conn.execute("UPDATE files SET stale_at=NULL WHERE stale_at IS NOT NULL")

    def _resolve_files(
        self,
        file_ids: Sequence[int],
        resolver: ImportResolver,
        checkpoint: _Checkpoint | None = None,
    ) -> set[int]:
        """Resolve references of ``file_ids``; returns the files whose dependencies changed.

        The files go :data:`_RESOLVE_CHUNK` at a time: each chunk's rows are read with one
        statement per table and written with one ``executemany`` per statement, instead
        of a dozen statements per file (a cold index resolves every file; at 58k files the
        per-file statements were a third of resolution, docs/codegraph.md). The rows
        written are the ones the per-file order writes, row ids included.
        """
        kept = self._kept
        ids = _FileIds(
            self._db(),
            preload=len(file_ids) > _PRELOAD_IDS_OVER,
            kept=kept.names if kept is not None else None,
        )
        changed: set[int] = set()
        for start in range(0, len(file_ids), _RESOLVE_CHUNK):
            if checkpoint is not None:
                checkpoint(start, len(file_ids), RESOLVING)
            chunk = file_ids[start : start + _RESOLVE_CHUNK]
            changed |= self._resolve_chunk(chunk, resolver, ids)
        return changed

    def _resolve_chunk(
        self, chunk: Sequence[int], resolver: ImportResolver, ids: _FileIds
    ) -> set[int]:
        conn = self._db()
        named = [(file_id, rel) for file_id in chunk if (rel := ids.path_of(file_id)) is not None]
        if not named:
            return set()
        keys = [file_id for file_id, _ in named]
        # a cold run's calls come from what its parse phase kept: only its bases are read
        kept: dict[int, str] = {}
        if self._kept is not None:
            kept_calls = self._kept.calls
            kept = {k: calls for k in keys if (calls := kept_calls.pop(k, None)) is not None}
        marks = ",".join("?" * len(keys))
        before: dict[int, set[tuple[int, float]]] = defaultdict(set)
        for src, dst, weight in conn.execute(
            f"SELECT src, dst, weight FROM file_deps WHERE src IN ({marks})", keys
        ):
            before[int(src)].add((int(dst), float(weight)))
        packages: dict[int, str | None] = {
            int(r[0]): r[1]
            for r in conn.execute(f"SELECT id, package FROM files WHERE id IN ({marks})", keys)
        }
        import_rows: dict[int, list[tuple[int, ImportRef]]] = defaultdict(list)
        stored = conn.execute(
            "SELECT file_id, rowid, module, names, wildcard, line FROM imports "
            f"WHERE file_id IN ({marks}) ORDER BY file_id, rowid",
            keys,
        ).fetchall()
        # every names column is the JSON text of a list: one decode for the chunk (a
        # json.loads per import was half of reading them: 280k at 58k files)
        listed: list[list[str]] = json.loads("[" + ",".join([r[3] for r in stored]) + "]")
        for (file_id, rowid, module, _, wildcard, line), names in zip(stored, listed, strict=True):
            import_rows[file_id].append((rowid, ImportRef(module, names, bool(wildcard), line)))
        references: dict[int, list[tuple[int, str, str, str | None, int | None]]] = defaultdict(
            list
        )
        read = [k for k in keys if k not in kept]
        for part, kinds in ((read, "'calls', 'extends', 'implements'"),
                            (list(kept), "'extends', 'implements'")):  # fmt: skip
            if not part:
                continue
            for src, edge_id, kind, name, obj, current in conn.execute(
                "SELECT src_file, id, kind, dst_name, target, dst_file FROM edges "
                f"WHERE src_file IN ({','.join('?' * len(part))}) AND kind IN ({kinds})",
                part,
            ):
                references[int(src)].append((edge_id, kind, name, obj, current))
        with_import_edges = {
            int(r[0])
            for r in conn.execute(
                "SELECT DISTINCT src_file FROM edges "
                f"WHERE kind='imports' AND src_file IN ({marks})",
                keys,
            )
        }
        # imports first (pure string work), so the definition names of every file the
        # chunk's calls may resolve to are read in one statement
        resolved = [
            (file_id, rel, spec, self._resolve_imports(
                file_id, rel, spec, resolver, ids, packages.get(file_id),
                import_rows[file_id], fresh=file_id in kept))
            for file_id, rel in named
            for spec in (language_for(rel),)
        ]  # fmt: skip
        wanted = set(keys)
        for _, _, _, found in resolved:
            wanted.update(found.deps)
        ids.read_names(wanted)
        resolved_rows: list[tuple[int, int]] = []
        import_edges: list[tuple[int, int, str, float, int]] = []
        updates: list[tuple[int | None, int]] = []
        deps_rows: list[tuple[int, int, float, str]] = []
        changed: set[int] = set()
        insert_import_edges = """INSERT INTO edges(kind, src_file, dst_file, target, weight, line)
               VALUES ('imports', ?, ?, ?, ?, ?)"""
        for file_id, rel, spec, found in resolved:
            if file_id in with_import_edges:
                # ids go as in a file-by-file pass: this file's old edges leave before the
                # edges of the files before it are in
                conn.executemany(insert_import_edges, import_edges)
                import_edges = []
                conn.execute("DELETE FROM edges WHERE src_file=? AND kind='imports'", (file_id,))
            resolved_rows += found.resolved_rows
            import_edges += found.import_edges
            self._resolve_references(
                file_id, rel, spec, resolver, ids, found, references[file_id], updates,
                kept.get(file_id),
            )  # fmt: skip
            deps = found.deps
            deps_rows += [  # in key order: the table is keyed by (src, dst)
                (file_id, dst, weight, ",".join(sorted(kinds)))
                for dst, (weight, kinds) in sorted(deps.items())
            ]
            after = {(dst, weight) for dst, (weight, _) in deps.items()}
            if before.get(file_id, set()) != after:
                changed.add(file_id)
        conn.executemany("UPDATE imports SET resolved=? WHERE rowid=?", resolved_rows)
        conn.executemany(insert_import_edges, import_edges)
        conn.executemany("UPDATE edges SET dst_file=? WHERE id=?", updates)
        conn.execute(f"DELETE FROM file_deps WHERE src IN ({marks})", keys)
        conn.executemany(
            "INSERT INTO file_deps(src, dst, weight, kinds) VALUES (?, ?, ?, ?)", deps_rows
        )
        return changed

    @staticmethod
    def _resolve_imports(
        file_id: int,
        rel: str,
        spec: LanguageSpec | None,
        resolver: ImportResolver,
        ids: _FileIds,
        package: str | None,
        rows: Sequence[tuple[int, ImportRef]],
        *,
        fresh: bool = False,
    ) -> _Resolved:
        """One file's imports: the files they name, and the rows that record it (``fresh``:
        every row is stored unresolved, so only the resolved ones are written)."""
        found = _Resolved()
        for rowid, ref in rows:
            module = ref.module
            targets = (
                [i for t in resolver.resolve(spec.resolver, rel, ref, package)
                 if (i := ids.id_of(t)) is not None]
                if spec is not None else []
            )  # fmt: skip
            if targets or not fresh:
                found.resolved_rows.append((int(bool(targets)), rowid))
            for target in targets:
                found.add_dep(file_id, target, "imports")
                found.import_edges.append(
                    (file_id, target, module, EDGE_WEIGHTS["imports"], ref.line)
                )
                for name in ref.names:
                    found.imported_names[name].append(target)
                alias = module.replace("::", "/").replace(".", "/").rstrip("/").split("/")[-1]
                found.module_aliases[alias].append(target)
        return found

    @staticmethod
    def _resolve_references(
        file_id: int,
        rel: str,
        spec: LanguageSpec | None,
        resolver: ImportResolver,
        ids: _FileIds,
        found: _Resolved,
        references: Sequence[tuple[int, str, str, str | None, int | None]],
        updates: list[tuple[int | None, int]],
        kept: str | None = None,
    ) -> None:
        """One file's calls and bases: the file each names (``updates`` gets the edges
        whose target moved; ``found.deps`` the files they make it depend on). ``kept``: the
        file's call edges as a cold run's parse phase kept them (:attr:`_KeptRows.calls`,
        all stored unresolved); ``references`` then holds only its bases."""
        deps = found.deps
        imported_names = found.imported_names
        module_aliases = found.module_aliases
        # names the calls may refer to: the definitions of this file, of the files it
        # depends on so far and (Go, Java) of its package's other files; a name defined in
        # several of them means the one with the lowest file id
        own = ids.names(file_id)
        dep_set = set(deps)
        dep_defs: dict[str, int] = {}
        for dep in sorted(deps, reverse=True):  # the lowest id written last wins
            dep_defs.update(dict.fromkeys(ids.names(dep), dep))
        package_defs: dict[str, list[int]] = {}
        if spec is not None and spec.package_is_directory:
            folder = posixpath.dirname(rel)
            package_defs = ids.package_names(
                folder, spec.extensions, lambda: resolver.files_in_dir(folder, spec.extensions)
            )

        def defined_in_package(name: str) -> int | None:
            for sibling in package_defs.get(name, ()):
                if sibling != file_id:
                    return sibling
            return None

        def pick(name: str, obj: str | None) -> int | None:
            local = obj is None or obj in _RECEIVER_WORDS
            if local and name in own:
                return file_id
            if obj is not None and obj in module_aliases:
                for f in module_aliases[obj]:
                    if f in dep_set and name in ids.names(f):
                        return f
            if name in imported_names:
                return imported_names[name][0]
            found_in = dep_defs.get(name)
            if found_in is not None:
                return found_in
            found_in = defined_in_package(name)
            if found_in is not None:
                return found_in
            if name in own:
                return file_id
            return None

        # what pick() reads is fixed for the file, so a name called from several of its
        # definitions (one edge per caller) is looked up once
        picked: dict[tuple[str, str | None], int | None] = {}
        first, separator, packed = (kept or "").partition("\x00")
        if separator:
            # each distinct packed call (``name`` or ``name\x01object``) is looked up once and
            # adds its dependency once; the 1.7M calls of 58k files then cost a string-keyed
            # lookup each instead of a tuple, a lookup and a call (docs/codegraph.md, "a
            # fourth pass")
            items = packed.split("\x00")
            targets: dict[str, int | None] = {}
            for item in dict.fromkeys(items):
                callee, marked, on = item.partition("\x01")
                key = (callee, on if marked else None)
                dst = picked[key] if key in picked else picked.setdefault(key, pick(*key))
                targets[item] = dst
                if dst is not None:
                    found.add_dep(file_id, dst, "calls")
            edge_id = int(first)
            # stored unresolved: only the resolved ones are written
            updates += [
                (dst, edge_id + offset)
                for offset, item in enumerate(items)
                if (dst := targets[item]) is not None
            ]
        for edge_id, kind, name, obj, current in references:
            key = (name, obj if kind == "calls" else None)
            if key in picked:
                dst = picked[key]
            else:
                dst = picked[key] = pick(*key)
            if dst != current:  # most calls (builtins, libraries) stay unresolved: no write
                updates.append((dst, edge_id))
            if dst is not None:
                found.add_dep(file_id, dst, kind)

    def _forward_bfs(
        self, start: int, adjacency: _Adjacency
    ) -> list[tuple[int, int, int, float, str]]:
        """The closure rows of ``start``: everything it depends on within MAX_DEPTH, as
        ``(ancestor, start, depth, weight, path)`` where path is the stored JSON text of the
        path from the ancestor to ``start``.

        The text is built a hop at a time as the walk extends a path (``"b, a, start]"``),
        not formatted from a list per closure row. A file keeps the depth it is first
        reached at, so every file on a path was reached at a smaller depth than the path's
        end: a step back onto the path is the ``known[0] < depth`` skip, and only ``start``
        (never in ``best``) needs its own test, so no tuple of the path is built per hop
        (the walk is most of a cold closure's Python: docs/codegraph.md, "At 50,000 files").
        """
        loaded = adjacency.loaded
        neighbours = adjacency.of
        best: dict[int, tuple[int, float, str]] = {}
        lookup = best.get
        frontier: list[tuple[int, float, str]] = [(start, 1.0, f"{start}]")]
        for depth in range(1, MAX_DEPTH + 1):
            next_frontier: dict[int, tuple[int, float, str]] = {}
            for node, weight, text in frontier:
                edges = loaded.get(node, ()) if loaded is not None else neighbours(node)
                for dst, edge_weight in edges:
                    if dst == start:
                        continue
                    total = weight * edge_weight
                    known = lookup(dst)
                    if known is None or (known[0] == depth and total > known[1]):
                        entry = (depth, total, f"{dst}, {text}")
                        best[dst] = entry
                        next_frontier[dst] = entry
            if not next_frontier:
                break
            frontier = [(n, w, t) for n, (_, w, t) in next_frontier.items()]
        return [(a, start, depth, weight, f"[{text}") for a, (depth, weight, text) in best.items()]

    def _update_closure(self, changed: set[int], checkpoint: _Checkpoint | None = None) -> None:
        """Recompute closure rows whose descendant can reach a changed file."""
        if not changed:
            return
        conn = self._db()
        adjacency = _Adjacency(conn)
        if len(changed) > _FULL_CLOSURE_OVER and (
            len(changed) > self._count_files() // 2
            or conn.execute("SELECT 1 FROM closure LIMIT 1").fetchone() is None
        ):
            # every affected file is changed or reaches one: the rebuild below would be
            # chosen whatever the walk adds (a cold index: the walk took seconds at 58k).
            # And with no closure yet (a cold index), every file with dependencies is
            # changed, so the rebuild stores the rows the update would: at 58k files only
            # 24,606 of 67,227 have any, and the update's row-by-row inserts in random key
            # order cost twice the rebuild's (docs/codegraph.md, "At 50,000 files")
            self._rebuild_closure(adjacency, checkpoint)
            return
        affected: set[int] = set(changed)
        marks = ",".join("?" * len(changed))
        for (descendant,) in conn.execute(
            f"SELECT descendant FROM closure WHERE ancestor IN ({marks}) AND depth < ?",
            [*changed, MAX_DEPTH],
        ):
            affected.add(int(descendant))
        # and through the new edges: reverse BFS over the current dependencies
        frontier = set(changed)
        for _ in range(MAX_DEPTH - 1):
            if not frontier:
                break
            marks = ",".join("?" * len(frontier))
            found = {
                int(r[0])
                for r in conn.execute(
                    f"SELECT src FROM file_deps WHERE dst IN ({marks})", list(frontier)
                )
            }
            frontier = found - affected
            affected |= found
        # counting the files costs a pass over an index: only worth it when a rebuild from
        # scratch might be cheaper than recomputing each affected row (an edit: never)
        if len(affected) > _FULL_CLOSURE_OVER and len(affected) > self._count_files() // 2:
            self._rebuild_closure(adjacency, checkpoint)
            return
        ids = sorted(affected)
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            conn.execute(f"DELETE FROM closure WHERE descendant IN ({marks})", chunk)
        rows: list[tuple[int, int, int, float, str]] = []
        for done, descendant in enumerate(ids):
            if checkpoint is not None and done % _CLOSURE_WALKS == 0:
                checkpoint(done, len(ids), CLOSURE)
            rows.extend(self._forward_bfs(descendant, adjacency))
            if len(rows) > 5000:
                conn.executemany("INSERT OR REPLACE INTO closure VALUES (?, ?, ?, ?, ?)", rows)
                rows = []
        conn.executemany("INSERT OR REPLACE INTO closure VALUES (?, ?, ?, ?, ?)", rows)

    def _count_files(self) -> int:
        return int(self._db().execute("SELECT count(*) FROM files").fetchone()[0])

    def _rebuild_closure(
        self, adjacency: _Adjacency, checkpoint: _Checkpoint | None = None
    ) -> None:
        """The whole closure from scratch, inside the caller's transaction.

        The walk yields rows by descendant; the table is a rowid table, so they are
        appended as they come, and its two indexes, the unique ``(ancestor, descendant)``
        key and ``descendant``, are built once afterwards through SQLite's sorter (bounded
        memory: it spills to a temporary file). Row-by-row inserts into a table keyed by
        ancestor landed on random pages (twice the CPU); a keyed table filled in key order
        needed the rows copied and sorted once more (docs/codegraph.md, "a fourth pass").
        The rows are the same.
        """
        conn = self._db()
        conn.execute("DROP INDEX IF EXISTS closure_key")
        conn.execute("DROP INDEX IF EXISTS closure_descendant")
        conn.execute("DELETE FROM closure")
        adjacency.load_all()  # one scan instead of a query per file
        rows: list[tuple[int, int, int, float, str]] = []
        insert = "INSERT INTO closure VALUES (?, ?, ?, ?, ?)"
        sources = sorted(adjacency.sources())
        for done, descendant in enumerate(sources):
            if checkpoint is not None and done % _CLOSURE_WALKS == 0:
                checkpoint(done, len(sources), CLOSURE)
            rows.extend(self._forward_bfs(descendant, adjacency))
            if len(rows) > 5000:
                conn.executemany(insert, rows)
                rows = []
        conn.executemany(insert, rows)
        conn.execute("CREATE UNIQUE INDEX closure_key ON closure(ancestor, descendant)")
        conn.execute("CREATE INDEX closure_descendant ON closure(descendant)")

    # -- single-file updates ---------------------------------------------------------------
    def reindex_file(self, path: str | os.PathLike[str]) -> ReindexResult:
        """Re-read one file (after an edit or save); only its part of the graph changes."""
        started = time.perf_counter()
        rel = self.workspace.relative(path)
        absolute = self.workspace.root / rel
        with self._lock:
            conn = self._db()
            self._ensure_indexes()
            existing = conn.execute(
                "SELECT hash, size, mtime_ns, status FROM files WHERE path=?", (rel,)
            ).fetchone()
            if not absolute.is_file() or not is_indexable(rel):
                if existing is None:
                    return ReindexResult(rel, changed=False)
                self._remove_files([rel])
                self._resolver = None
                self._sync_modules()
                self._phase_resolve(None)
                return ReindexResult(
                    rel, changed=True, removed=True,
                    milliseconds=(time.perf_counter() - started) * 1000,
                )  # fmt: skip
            stat = absolute.stat()
            previous = (existing[0], existing[1], existing[2], existing[3]) if existing else None
            conn.execute("BEGIN")
            self._rows_kept = False
            try:
                names_before = self._defined_names(rel) if existing is not None else set()
                outcome = self._store_path(
                    rel, stat.st_size, stat.st_mtime_ns, previous, keep_tree=True
                )
                if outcome is not None and existing is not None and not self._rows_kept:
                    # an edited known file: store and resolve in one transaction (one commit,
                    # and readers never see its facts without their resolution); callers of
                    # a name it no longer defines (or now defines) are resolved again too
                    self._mark_callers_stale(rel, names_before, self._defined_names(rel))
                    self._resolve_stale()
                conn.commit()
            except BaseException:
                conn.rollback()
                self._kept_facts.pop(rel, None)
                raise
            kept = self._kept_facts.get(rel)
            if kept is not None and kept[1] == (-1, -1):  # stored (or kept) by this call
                self._kept_facts[rel] = (kept[0], self._version())
            if outcome is None:
                elapsed = (time.perf_counter() - started) * 1000
                return ReindexResult(rel, changed=False, milliseconds=elapsed)
            if existing is None:
                self._resolver = None
                self._mark_reresolvable([rel], [])
                self._sync_modules()
                self._phase_resolve(None)
        return ReindexResult(rel, changed=True, milliseconds=(time.perf_counter() - started) * 1000)

    def _defined_names(self, rel: str) -> set[str]:
        """Names of the definitions in ``rel`` (what other files' calls resolve to)."""
        file_id = self._file_id(rel)
        if file_id is None:
            return set()
        rows = self._db().execute(
            "SELECT DISTINCT name FROM nodes WHERE file_id=? AND kind != 'module'", (file_id,)
        )
        return {str(r[0]) for r in rows}

    def _mark_callers_stale(self, rel: str, before: set[str], after: set[str]) -> None:
        """Files depending on ``rel`` whose calls may now resolve differently become stale.

        A removed definition leaves callers pointing at nothing (their edge must move or
        go); a new one may be what their unresolved call meant. Only files that already
        depend on ``rel`` (imports it, calls into it) are considered: a call can only
        resolve to a file its own file reaches.
        """
        removed, added = sorted(before - after), sorted(after - before)
        file_id = self._file_id(rel)
        if file_id is None or not (removed or added):
            return
        conn = self._db()
        now = self._clock()
        kinds = "('calls', 'extends', 'implements')"
        for start in range(0, len(removed), 500):
            chunk = removed[start : start + 500]
            marks = ",".join("?" * len(chunk))
            conn.execute(
                f"""UPDATE files SET stale_at=? WHERE id != ? AND id IN (
                      SELECT src_file FROM edges WHERE dst_file=? AND kind IN {kinds}
                      AND dst_name IN ({marks}))""",
                (now, file_id, file_id, *chunk),
            )
        for start in range(0, len(added), 500):
            chunk = added[start : start + 500]
            marks = ",".join("?" * len(chunk))
            conn.execute(
                f"""UPDATE files SET stale_at=? WHERE id != ?
                      AND id IN (SELECT src FROM file_deps WHERE dst=?)
                      AND id IN (SELECT src_file FROM edges WHERE dst_file IS NULL
                                 AND kind IN {kinds} AND dst_name IN ({marks}))""",
                (now, file_id, file_id, *chunk),
            )

    # -- queries ---------------------------------------------------------------------------
    def files(self) -> list[tuple[str, str | None, str | None, str]]:
        """``(path, language, content hash, status)`` of every known file."""
        with self._lock:
            return [
                (r[0], r[1], r[2], r[3])
                for r in self._db().execute(
                    "SELECT path, language, hash, status FROM files ORDER BY path"
                )
            ]

    def has_file(self, rel: str) -> bool:
        with self._lock:
            return self._file_id(rel) is not None

    def neighbours(self, files: Sequence[str], depth: int = 1) -> dict[str, float]:
        """Files next to ``files`` in the dependency graph, both directions, best weight.

        Depth 1 reads direct dependencies; deeper reads the closure table (≤ MAX_DEPTH).
        Implements :class:`engram.retrieval.GraphProvider`.
        """
        depth = max(1, min(depth, MAX_DEPTH))
        with self._lock:
            conn = self._db()
            ids = [i for i in (self._file_id(f) for f in files) if i is not None]
            if not ids:
                return {}
            marks = ",".join("?" * len(ids))
            weights: dict[int, float] = {}
            queries = (
                (
                    f"SELECT dst, weight FROM file_deps WHERE src IN ({marks})",
                    f"SELECT src, weight FROM file_deps WHERE dst IN ({marks})",
                )
                if depth == 1
                else (
                    f"SELECT ancestor, weight FROM closure "
                    f"WHERE descendant IN ({marks}) AND depth<=?",
                    f"SELECT descendant, weight FROM closure "
                    f"WHERE ancestor IN ({marks}) AND depth<=?",
                )
            )
            params: list[int] = list(ids) if depth == 1 else [*ids, depth]
            for sql in queries:
                for other, weight in conn.execute(sql, params):
                    other = int(other)
                    if other in ids:
                        continue
                    weights[other] = max(weights.get(other, 0.0), float(weight))
            return self._paths_for(weights)

    def _paths_for(self, weights: dict[int, float]) -> dict[str, float]:
        if not weights:
            return {}
        return {path: weights[file_id] for file_id, path in self._names_for(weights).items()}

    def import_neighbours(self, target: str) -> dict[str, float]:
        """Files that import ``target`` or that it imports (import edges only, depth 1)."""
        with self._lock:
            conn = self._db()
            file_id = self._file_id(target)
            if file_id is None:
                return {}
            weights: dict[int, float] = {}
            for sql in (
                "SELECT DISTINCT dst_file FROM edges WHERE kind='imports' AND src_file=? "
                "AND dst_file IS NOT NULL",
                "SELECT DISTINCT src_file FROM edges WHERE kind='imports' AND dst_file=?",
            ):
                for (other,) in conn.execute(sql, (file_id,)):
                    if int(other) != file_id:
                        weights[int(other)] = EDGE_WEIGHTS["imports"]
            return self._paths_for(weights)

    def dependencies(self, target: str) -> dict[str, float]:
        """Files ``target`` depends on directly (file -> weight)."""
        with self._lock:
            file_id = self._file_id(target)
            if file_id is None:
                return {}
            rows = self._db().execute("SELECT dst, weight FROM file_deps WHERE src=?", (file_id,))
            return self._paths_for({int(r[0]): float(r[1]) for r in rows})

    def dependents(
        self, target: str, max_depth: int = MAX_DEPTH
    ) -> list[tuple[str, int, float, list[str]]]:
        """``(file, depth, weight, path)`` of files depending on ``target``, nearest first.

        ``path`` runs from the target to the dependent. Answered from the closure table in
        one query and remembered for the graph's current version (:meth:`_version`): an
        impact report asks for a file's dependents at full depth and at depth 2, and a hub
        has a thousand of them (docs/codegraph.md, "At 50,000 files").
        """
        with self._lock:
            conn = self._db()
            file_id = self._file_id(target)
            if file_id is None:
                return []
            version = self._version()
            if self._dependents_version != version:
                self._dependents_cache.clear()
                self._dependents_version = version
            rows = self._dependents_cache.get((file_id, MAX_DEPTH))
            if rows is None:
                rows = self._dependents_cache.get((file_id, max_depth))
            else:
                rows = tuple(r for r in rows if r[1] <= max_depth)
            if rows is None:
                rows = self._read_dependents(conn, file_id, target, max_depth)
                self._dependents_cache[(file_id, max_depth)] = rows
                while len(self._dependents_cache) > DEPENDENTS_CACHED:
                    self._dependents_cache.popitem(last=False)
            return [(file, depth, weight, list(path)) for file, depth, weight, path in rows]

    def _read_dependents(
        self, conn: sqlite3.Connection, file_id: int, target: str, max_depth: int
    ) -> tuple[tuple[str, int, float, tuple[str, ...]], ...]:
        """The closure rows of ``file_id`` with their paths named, ordered as
        :meth:`dependents` returns them.

        Every file on a stored path is itself a dependent at a smaller depth (its prefix
        is a path too), so the join that names the dependents names the paths; ids it
        does not name (a closure older than its files) are looked up, and dropped when
        the file is gone, as before.
        """
        rows = conn.execute(
            "SELECT c.descendant, c.depth, c.weight, c.path, f.path FROM closure c "
            "LEFT JOIN files f ON f.id = c.descendant WHERE c.ancestor=? AND c.depth<=? "
            "ORDER BY c.depth, c.weight DESC, c.descendant",
            (file_id, max_depth),
        ).fetchall()
        if not rows:
            return ()
        id_to_name: dict[int, str] = {file_id: target}
        for descendant, _, _, _, name in rows:
            if name is not None:
                id_to_name[int(descendant)] = str(name)
        # one decode of all paths: each is the JSON text of a list of ints
        paths: list[list[int]] = json.loads("[" + ",".join(r[3] for r in rows) + "]")
        missing = {i for ids in paths for i in ids if i not in id_to_name}
        if missing:
            id_to_name.update(self._names_for(missing))
        name_of = id_to_name.__getitem__
        # a file on a path that is gone is left out of the path, as before
        kept = [[i for i in ids if i in id_to_name] for ids in paths] if missing else paths
        return tuple(
            (str(name), int(depth), float(weight), tuple(map(name_of, ids)))
            for (_, depth, weight, _, name), ids in zip(rows, kept, strict=True)
            if name is not None
        )

    def _version(self) -> tuple[int, int]:
        """Changes when the stored graph may have: another connection committed
        (``PRAGMA data_version``) or this one wrote (``total_changes``)."""
        conn = self._db()
        return int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes

    def _names_for(self, ids: Iterable[int]) -> dict[int, str]:
        wanted = list(ids)
        out: dict[int, str] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for file_id, path in self._db().execute(
                f"SELECT id, path FROM files WHERE id IN ({marks})", chunk
            ):
                out[int(file_id)] = str(path)
        return out

    def symbol_dependents(self, target: str, symbol: str) -> list[tuple[str, str, int]]:
        """``(file, kind, line)`` of references to ``symbol`` of ``target`` from other files."""
        name = symbol.rsplit(".", 1)[-1]
        with self._lock:
            rows = self._reference_rows(target, name)
        return sorted({(str(r[0]), str(r[1]), int(r[2] or 0)) for r in rows})

    def _reference_rows(
        self, target: str, name: str
    ) -> list[tuple[str, str, int | None, str | None, str | None, int]]:
        """``(path, kind, line, language, object, source file id)`` of the calls, base
        classes and imports of ``name`` of ``target`` in other files: the one query both
        :meth:`symbol_dependents` and :meth:`reference_sites` read (under the lock)."""
        conn = self._db()
        file_id = self._file_id(target)
        if file_id is None:
            return []
        rows: list[tuple[str, str, int | None, str | None, str | None, int]] = conn.execute(
            """SELECT f.path, e.kind, e.line, f.language, e.target, e.src_file
               FROM edges e JOIN files f ON f.id = e.src_file
               WHERE e.dst_file=? AND e.dst_name=? AND e.src_file != ?
               AND e.kind IN ('calls', 'extends', 'implements')""",
            (file_id, name, file_id),
        ).fetchall()
        rows += conn.execute(
            """SELECT f.path, 'imports', i.line, f.language, NULL, i.file_id
               FROM imports i JOIN files f ON f.id = i.file_id
               JOIN edges e ON e.src_file = i.file_id AND e.kind='imports' AND e.dst_file=?
                    AND e.line = i.line
               WHERE i.names LIKE ? AND i.file_id != ?""",
            (file_id, f'%"{name}"%', file_id),
        ).fetchall()
        return rows

    def reference_sites(self, target: str, name: str) -> list[ReferenceSite]:
        """The references :meth:`symbol_dependents` lists for ``name``, each with the
        calling file's language and, for a call, the object it was made on: impact tells a
        method's calls from a same-named function's with them (docs/codegraph.md)."""
        with self._lock:
            conn = self._db()
            rows = self._reference_rows(target, name)
            modules: dict[int, set[str]] = {}
            for src in {int(r[5]) for r in rows if r[4] is not None}:
                names = modules[src] = set()
                for (module,) in conn.execute("SELECT module FROM imports WHERE file_id=?", (src,)):
                    # the alias the resolver gives an import (_resolve_imports), and the path
                    path = module.replace("::", "/").replace(".", "/").rstrip("/")
                    names.update((path.split("/")[-1], module))
        sites = {
            ReferenceSite(
                str(path), str(kind), int(line or 0), language,
                obj, obj is not None and obj in modules.get(int(src), ()),
            )
            for path, kind, line, language, obj, src in rows
        }  # fmt: skip
        return sorted(sites, key=lambda s: (s.file, s.line, s.kind, s.obj or ""))

    def package_files(self, rel: str) -> list[str]:
        """The other files of ``rel``'s package where a package is its folder (Go, Java:
        ``LanguageSpec.package_is_directory``): same folder, same language; else none."""
        spec = language_for(rel)
        if spec is None or not spec.package_is_directory:
            return []
        folder = posixpath.dirname(rel)
        low, high = (f"{folder}/", f"{folder}0") if folder else ("", "\U0010ffff")
        query = "SELECT path FROM files WHERE language=? AND path >= ? AND path < ?"
        with self._lock:
            rows = self._db().execute(query, (spec.name, low, high)).fetchall()
        paths = sorted(str(r[0]) for r in rows)
        return [p for p in paths if p != rel and posixpath.dirname(p) == folder]

    def importers(self, target: str) -> list[str]:
        """Files with an import edge to ``target``."""
        with self._lock:
            file_id = self._file_id(target)
            if file_id is None:
                return []
            return sorted(
                str(r[0])
                for r in self._db().execute(
                    "SELECT DISTINCT f.path FROM edges e JOIN files f ON f.id=e.src_file "
                    "WHERE e.kind='imports' AND e.dst_file=?",
                    (file_id,),
                )
            )

    def paths_with_basename(self, name: str) -> list[str]:
        """Known files whose last path component is ``name`` (naming conventions)."""
        return self.paths_with_basenames([name]).get(name, [])

    def paths_with_basenames(self, names: Sequence[str]) -> dict[str, list[str]]:
        """``name -> known files whose last path component is name`` (exact, indexed).

        One lookup on the ``files_basename`` index for all names: impact asks for up to a
        dozen test-naming conventions per file, and at 58k files a path scan per name was
        most of its time (docs/codegraph.md, "At 50,000 files").
        """
        wanted = sorted(set(names))
        out: dict[str, list[str]] = {}
        if not wanted:
            return out
        with self._lock:
            conn = self._db()
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for base, path in conn.execute(
                    f"SELECT basename, path FROM files WHERE basename IN ({marks})", chunk
                ):
                    out.setdefault(str(base), []).append(str(path))
        return {base: sorted(paths) for base, paths in out.items()}

    def fan_in(self, files: Sequence[str]) -> dict[str, int]:
        """How many files depend directly on each of ``files`` (hub detection)."""
        if not files:
            return {}
        with self._lock:
            out: dict[str, int] = {}
            for start in range(0, len(files), 500):
                chunk = list(files[start : start + 500])
                marks = ",".join("?" * len(chunk))
                for path, count in self._db().execute(
                    f"""SELECT f.path, count(d.src) FROM files f LEFT JOIN file_deps d
                        ON d.dst = f.id WHERE f.path IN ({marks}) GROUP BY f.path""",
                    chunk,
                ):
                    out[str(path)] = int(count)
            return out

    def symbols_in(self, file: str) -> list[Symbol]:
        """Definitions of one file in source order (no module nodes)."""
        with self._lock:
            return [
                Symbol(r[0], r[1], r[2], file, int(r[3]), int(r[4]), bool(r[5]))
                for r in self._db().execute(
                    """SELECT n.name, n.kind, n.qualname, n.start_line, n.end_line, n.exported
                       FROM nodes n JOIN files f ON f.id = n.file_id
                       WHERE f.path=? ORDER BY n.start_line, n.end_line DESC""",
                    (file,),
                )
            ]

    def symbol_at(self, file: str, line: int) -> Symbol | None:
        """The innermost definition spanning ``line`` (1-based)."""
        best: Symbol | None = None
        for symbol in self.symbols_in(file):
            if symbol.start_line <= line <= symbol.end_line and (
                best is None
                or symbol.end_line - symbol.start_line <= best.end_line - best.start_line
            ):
                best = symbol
        return best

    def find_symbol(self, file: str, name: str) -> Symbol | None:
        """A definition by qualified name, else by plain name (first in source order)."""
        symbols = self.symbols_in(file)
        for symbol in symbols:
            if symbol.qualname == name:
                return symbol
        for symbol in symbols:
            if symbol.name == name:
                return symbol
        return None

    def partial_files(self) -> list[tuple[str, str]]:
        """(path, note) of the files a limit kept from being read in full: nested deeper
        than the queries go (``extract.DEPTH_NOTE``), or over ``index.max_file_bytes``
        (``engram doctor`` names them: docs/codegraph.md "Pathological files")."""
        with self._lock:
            rows = (
                self._db()
                .execute(
                    "SELECT path, note FROM files WHERE note LIKE ? OR note LIKE ? ORDER BY path",
                    (f"%{DEPTH_NOTE}%", "skipped: % over index.max_file_bytes%"),
                )
                .fetchall()
            )
        return [(str(path), str(note)) for path, note in rows]

    def stats(self) -> dict[str, int]:
        with self._lock:
            conn = self._db()
            return {
                table: int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
                for table in ("files", "nodes", "edges", "file_deps", "closure")
            }


def build_graph_at(root: Path, db_path: Path, config: IndexConfig | None = None) -> CodeGraph:
    """Index a checkout (e.g. a repository at an older commit in a temp dir) into ``db_path``.

    Used by the co-change evaluation to get the import graph as it was at the split commit.
    """
    graph = CodeGraph(Workspace.open(root), config, db_path=db_path)
    graph.index()
    return graph
