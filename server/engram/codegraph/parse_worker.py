"""One file's rows in plain data, and the worker processes a large index parses in.

Why a module of its own: py-tree-sitter holds the GIL while it parses, so a cold index on
a machine with several cores gains nothing from threads; processes do (docs/codegraph.md,
"A cold index on several cores"). A worker reads, hashes, parses and extracts files and
sends back, per file, what :meth:`CodeGraph._store_examined` writes: status, hash, note,
language and :class:`FileRows` (tuples of strings and integers, the rows without their ids).
The main process keeps the one SQLite writer and writes in listing order, so ids, batches
and the graph are those of a run in one process. Both paths go through :func:`examine`
and the same write function; only where :func:`examine` runs differs.

What crosses the pipe is deliberately plain: the extractor's ``attrs`` objects (~3.3M at
58k files) pickled would cost more than the parse saves. Workers are started with
``spawn`` (the engine and the language server run threads: a forked child could inherit
a held lock), ignore ``SIGINT`` (Ctrl-C is the main process's to handle: it rolls back and
ends them) and exit when their pipe closes (a main process killed outright leaves none).

Long on purpose: what a worker makes of a file (rows, and a keyword-only run's chunks),
the worker's life and the pool that drives it share these plain-data types and change
together (a field of :class:`Examined` or :data:`Report` is all three); split, each part
would only be read with the others.
"""

from __future__ import annotations

import logging
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from engram.codegraph.chunking import ChunkRow, chunk_rows
from engram.codegraph.extract import (
    DEPTH_NOTE,
    HIDDEN_KINDS,
    FileFacts,
    collector_paused,
    extract,
    parse,
)
from engram.codegraph.languages import LanguageRegistry, LoadedLanguage, language_for
from engram.codegraph.symbols import Symbol
from engram.interpreter import python_argv
from engram.model import content_hash
from engram.workspace import Workspace, WorkspaceError

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from typing import TypeAlias

    from tree_sitter import Tree

    #: the main process's end of a worker's pipe: a chunk of tasks (None: stop) out,
    #: ``(results or None, CPU seconds, peak RSS KiB)`` in; the worker's end is the mirror
    Pipe: TypeAlias = Connection[list["Task"] | None, "Report"]
    WorkerPipe: TypeAlias = Connection["Report", list["Task"] | None]

log = logging.getLogger(__name__)

BINARY_SNIFF_BYTES = 8192
#: Files one message to a worker carries: large enough that a file's share of the pipe's
#: cost is small, small enough that a worker that dies loses little (its files are retried).
CHUNK_FILES = 32
#: Chunks a worker holds at once (one working, one waiting), so it never idles on the pipe.
IN_FLIGHT = 2
#: Workers that may fail to start (before reading a task) in one run before the run goes
#: on in-process.
START_FAILURES = 3

#: ``(kind, name, qualname, start_line, end_line, parent, exported)``; ``parent`` is the
#: index of the parent's row in :attr:`FileRows.nodes` (a hidden kind's children attach to
#: the nearest visible ancestor), None at the top.
NodeRow = tuple[str, str, str, int, int, int | None, int]
#: ``(module, names as JSON, wildcard, line)``
ImportRow = tuple[str, str, int, int]
#: ``(caller's node row index or None, callee name, object, line)``
CallRow = tuple[int | None, str, str | None, int]
#: ``(kind, class's node row index or None, base name, line)``
BaseRow = tuple[str, int | None, str, int]
#: What one file in a task names: ``(path, size, mtime_ns, previous hash, previous status)``
Task = tuple[str, int, int, str | None, str | None]


class FileRows(NamedTuple):
    """One parsed file's rows as the graph stores them, less the ids SQLite gives them."""

    package: str | None
    nodes: list[NodeRow]
    imports: list[ImportRow]
    calls: list[CallRow]
    bases: list[BaseRow]
    #: ``(calls, names)`` packed (:func:`pack_calls`, :func:`pack_names`) for a cold run's
    #: resolution; None when not asked for or when a name holds a separator
    packed: tuple[str, str] | None


class Examined(NamedTuple):
    """What reading one file found: ``status`` is ``unchanged`` (same hash: only its
    ``mtime_ns`` moves), ``same`` (an over-size file with the same size and time: nothing
    to write), or the status its row gets (``ok``, ``skipped``, ``error``, ``binary``)."""

    status: str
    digest: str | None
    note: str | None
    language: str | None
    rows: FileRows | None
    #: the file's code-search chunks, when asked for (``chunking.ChunkSink``) and ``ok``
    chunks: list[ChunkRow] | None = None


#: A worker's message: ``(results of its oldest chunk, or None when it is ready or
#: stopping, its CPU seconds so far but cutting chunks, its peak RSS in KiB, its CPU seconds
#: cutting chunks)``
Report = tuple[list[Examined] | None, float, int, float]
#: What cuts an ``ok`` file's chunks in :func:`examine`: :func:`file_chunks` or a wrapper
Cut = Callable[[str, bytes, "FileRows | None", "str | None"], "list[ChunkRow]"]


def json_names(names: Sequence[str]) -> str:
    """``json.dumps(names)`` for a list of strings, joined from the strings' JSON forms:
    the same text without the encoder's per-call setup (a third of a microsecond instead of
    one, for each of the 280k imports of a cold index at 58k files; docs/codegraph.md, "a
    fourth pass")."""
    return "[" + ", ".join(map(encode_basestring_ascii, names)) + "]" if names else "[]"


def pack_calls(calls: Sequence[CallRow]) -> str | None:
    """The (callee, object) of each call as one string, each call ``\x00name`` or
    ``\x00name\x01object``; None when a name or an object holds either separator (the file
    is then read back instead). One string a file: the 1.7M calls of 58k files kept as
    objects (the extractor's, or tuples of interned names) pinned 270-480 MB of small
    objects until resolution; as text they take ~40 MB."""
    objects = [c[2] for c in calls]
    text = "".join([f"\x00{c[1]}" if c[2] is None else f"\x00{c[1]}\x01{c[2]}" for c in calls])
    if text.count("\x00") != len(calls) or text.count("\x01") != len(calls) - objects.count(None):
        return None
    return text


def pack_names(nodes: Sequence[NodeRow]) -> str | None:
    """A file's definition names as one string: ``\x00name`` for a nested definition,
    ``\x00\x01name`` for one whose node has no parent; None when a name holds either."""
    text = "".join([f"\x00{r[1]}" if r[5] is not None else f"\x00\x01{r[1]}" for r in nodes])
    tops = [r[5] for r in nodes].count(None)
    if text.count("\x00") != len(nodes) or text.count("\x01") != tops:
        return None
    return text


def file_rows(facts: FileFacts, *, pack: bool) -> FileRows:
    """The rows of ``facts``; ``pack`` also packs its calls and names (a cold run's
    resolution reads them instead of the rows it would read back from SQLite)."""
    visible: list[int | None] = []  # definition index -> its node row (or nearest ancestor's)
    nodes: list[NodeRow] = []
    classes: dict[str, int] = {}
    for definition in facts.definitions:
        parent = visible[definition.parent] if definition.parent is not None else None
        if definition.kind in HIDDEN_KINDS:
            visible.append(parent)
            continue
        index = len(nodes)
        visible.append(index)
        classes[definition.name] = index
        nodes.append(
            (definition.kind, definition.name, definition.qualname, definition.start_line,
             definition.end_line, parent, int(definition.exported))
        )  # fmt: skip
    calls: list[CallRow] = [
        (visible[c.caller] if c.caller is not None else None, c.name, c.obj, c.line)
        for c in facts.calls
    ]
    packed: tuple[str, str] | None = None
    if pack:
        packed_calls, packed_names = pack_calls(calls), pack_names(nodes)
        if packed_calls is not None and packed_names is not None:
            packed = (packed_calls, packed_names)
    return FileRows(
        facts.package,
        nodes,
        [(i.module, json_names(i.names), int(i.wildcard), i.line) for i in facts.imports],
        calls,
        [(r.kind, classes.get(r.class_name), r.base, r.line) for r in facts.inheritance],
        packed,
    )


def examine(
    task: Task,
    *,
    read: Callable[[str], bytes],
    max_file_bytes: int,
    registry: LanguageRegistry,
    parse_tree: Callable[[LoadedLanguage, bytes], Tree],
    pack: bool,
    cut: Cut | None = None,
) -> Examined:
    """Read, hash, parse and extract one file: everything of storing it but the writing.

    The same in the main process and in a worker, so a file gets the same row, note and
    rows either way. A grammar that raises gives a ``parse failed`` note (never the end
    of a run). ``cut`` (:func:`file_chunks`) also cuts an ``ok`` file in its code-search
    chunks, from the same text and definitions: those ``CodeSearch.index_chunks`` would
    make from the file and the graph's symbols of it.
    """
    rel, size, mtime_ns, previous_digest, previous_status = task
    if size > max_file_bytes:
        digest = f"size:{size}:{mtime_ns}"
        if previous_digest == digest:
            return Examined("same", digest, None, None, None)
        too_big = f"skipped: {size} bytes is over index.max_file_bytes ({max_file_bytes})"
        return Examined("skipped", digest, too_big, None, None)
    try:
        data = read(rel)
    except WorkspaceError as exc:
        return Examined("error", None, f"skipped: {exc}", None, None)
    except OSError as exc:
        return Examined("error", None, f"unreadable: {exc.strerror or exc}", None, None)
    digest = content_hash(data)
    if previous_digest == digest and previous_status is not None and previous_status != "error":
        return Examined("unchanged", digest, None, None, None)
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return Examined("binary", digest, "skipped: binary content", None, None)
    spec = language_for(rel)
    loaded = registry.get(spec) if spec is not None else None
    rows: FileRows | None = None
    note: str | None = None
    if loaded is not None:
        try:
            facts = extract(loaded, parse_tree(loaded, data))
        except Exception as exc:  # a grammar bug must not end the run
            note = f"parse failed: {exc}"
        else:
            rows = file_rows(facts, pack=pack)
            if facts.has_errors:
                note = "syntax errors: partial structure"
            if facts.depth_limited:  # docs/codegraph.md "Pathological files"
                note = f"{note}; {DEPTH_NOTE}" if note else DEPTH_NOTE
    language = spec.name if spec else None
    chunks = cut(rel, data, rows, language) if cut is not None else None
    return Examined("ok", digest, note, language, rows, chunks)


def file_chunks(
    rel: str, data: bytes, rows: FileRows | None, language: str | None
) -> list[ChunkRow]:
    """A file's chunks from its bytes and the definitions its rows give the graph: what
    ``CodeSearch`` reads back (``CodeGraph.symbols_in``: the file's nodes, by start line
    and longest first) and cuts, here without the read and the query."""
    symbols: list[Symbol] = []
    if rows is not None and language:
        symbols = [  # in the order stored (chunk_file sorts them as symbols_in does)
            Symbol(name, kind, qualname, rel, start, end, bool(exported))
            for kind, name, qualname, start, end, _parent, exported in rows.nodes
        ]
    return chunk_rows(rel, data.decode("utf-8", errors="replace"), symbols, language)


# -- the worker process ----------------------------------------------------------------------


def _usage() -> tuple[float, int]:
    """(CPU seconds, peak RSS in KiB) of this process so far."""
    return time.process_time(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def worker_main(
    conn: WorkerPipe,
    root: str,
    max_file_bytes: int,
    query_root: str | None,
    pack: bool,
    chunks: bool = False,
) -> None:
    """A worker's life: ready, then a chunk of tasks in and its results out, until None
    (stop: answered with its last usage) or the pipe closes (the main process is gone)."""
    from tree_sitter import Parser

    reader = Workspace(Path(root)).bulk_reader()  # the same per-folder confinement
    registry = LanguageRegistry(Path(query_root) if query_root else None)
    parser = Parser()

    def parse_tree(loaded: LoadedLanguage, data: bytes) -> Tree:
        return parse(parser, loaded, data)

    # the chunks' CPU apart: the graph's figures (issue 18's ratios) stay the graph's
    cutting = 0.0

    def timed_cut(
        rel: str, data: bytes, rows: FileRows | None, language: str | None
    ) -> list[ChunkRow]:
        nonlocal cutting
        started = time.process_time()
        try:
            return file_chunks(rel, data, rows, language)
        finally:
            cutting += time.process_time() - started

    def usage() -> tuple[float, int, float]:
        cpu, rss_kb = _usage()
        return cpu - cutting, rss_kb, cutting

    conn.send((None, *usage()))  # ready
    with collector_paused():
        while True:
            try:
                tasks = conn.recv()
            except (EOFError, OSError):
                return  # the main process is gone
            if tasks is None:  # stop
                conn.send((None, *usage()))
                return
            results = [
                examine(
                    task,
                    read=reader.read_bytes,
                    max_file_bytes=max_file_bytes,
                    registry=registry,
                    parse_tree=parse_tree,
                    pack=pack,
                    cut=timed_cut if chunks else None,
                )
                for task in tasks
            ]
            conn.send((results, *usage()))


class PoolStartError(RuntimeError):
    """No worker process could be started (the run goes on in-process)."""


def child_main() -> None:
    """The entry point of a worker process: ``python -c`` calls it with the socket's file
    descriptor and :func:`worker_main`'s settings as arguments (:meth:`ParsePool._spawn`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    from multiprocessing.connection import Connection

    fd, root, max_file_bytes, query_root, pack, chunks = sys.argv[1:7]
    conn: WorkerPipe = Connection(int(fd))
    worker_main(conn, root, int(max_file_bytes), query_root or None, pack == "1", chunks == "1")


#: What a worker process runs: imports the module by its name (not as ``__main__``: the
#: rows it sends are unpickled as this module's classes)
_CHILD_CODE = "from engram.codegraph.parse_worker import child_main; child_main()"


class _Worker:
    """One worker process, its pipe and the jobs it holds."""

    def __init__(self, process: subprocess.Popen[bytes], conn: Pipe) -> None:
        self.process = process
        self.conn = conn
        self.ready = False
        self.jobs: deque[int] = deque()
        self.cpu = 0.0
        self.rss_kb = 0
        self.chunk_cpu = 0.0


class ParsePool:
    """Worker processes that :func:`examine` a run's files; results in task order.

    :meth:`results` yields one :class:`Examined` per task, in order, or None for a task the
    caller must do itself (the pool gave up: no worker would start). A worker that dies
    mid-chunk (a grammar that crashes the interpreter) has its chunk retried file by file
    in fresh workers; a file that kills a worker on its own is yielded with the status
    ``crashed`` and the exit code as its note (the caller stores the ``parse failed`` row
    a grammar that raises gets).
    """

    def __init__(
        self,
        workers: int,
        *,
        root: Path,
        max_file_bytes: int,
        query_root: Path | None,
        pack: bool,
        chunks: bool = False,
    ) -> None:
        self._args = [
            str(root), str(max_file_bytes), str(query_root or ""),
            "1" if pack else "0", "1" if chunks else "0",
        ]  # fmt: skip
        # the worker imports this very package, wherever it was imported from here
        package_root = str(Path(__file__).resolve().parents[2])
        path = os.environ.get("PYTHONPATH")
        self._env = {
            **os.environ,
            "PYTHONPATH": f"{package_root}{os.pathsep}{path}" if path else package_root,
        }
        self._wanted = workers
        self._workers: list[_Worker] = []
        self._start_failures = 0
        #: CPU seconds and peak RSS (KiB) of workers that have exited
        self._done_cpu = 0.0
        self._done_rss_kb = 0
        self._done_chunk_cpu = 0.0
        #: processes started, and how many of them got ready (imported, a reader built)
        self.started = 0
        self._ready = 0
        #: job -> the task positions it holds; the jobs not yet sent, in sending order
        self._jobs: dict[int, list[int]] = {}
        self._queue: deque[int] = deque()
        self._next_job = 0
        for _ in range(workers):
            self._spawn()
        if not self._workers:
            raise PoolStartError("no worker process started")

    def _spawn(self) -> None:
        """Start one worker: a fresh interpreter (``python -c``), not ``multiprocessing``'s
        spawn, which runs the caller's main script again in the child (a script without
        a ``__main__`` guard indexed the same database from every worker), nor a fork (the
        engine and the language server run threads: a forked child could inherit a held
        lock). A socket pair is the pipe; a dead worker closes its end (EOF here)."""
        from multiprocessing.connection import Connection

        try:
            ours, theirs = socket.socketpair()
        except OSError as exc:
            self._start_failures += 1
            log.warning("could not start a parse worker (%s)", exc)
            return
        try:
            process = subprocess.Popen(
                [*python_argv(), "-c", _CHILD_CODE, str(theirs.fileno()), *self._args],
                pass_fds=(theirs.fileno(),),
                # stdout may be the language server's JSON-RPC stream or `--json` output:
                # nothing a worker (or a library in it) prints may reach it
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env=self._env,
            )
        except (OSError, ValueError, subprocess.SubprocessError) as exc:  # a limit, no exec
            ours.close()
            self._start_failures += 1
            log.warning("could not start a parse worker (%s)", exc)
            return
        finally:
            theirs.close()
        self.started += 1
        self._workers.append(_Worker(process, Connection(ours.detach())))

    @property
    def size(self) -> int:
        """Workers alive now."""
        return len(self._workers)

    @property
    def used(self) -> int:
        """How many workers the run had: those asked for, or fewer when fewer ever got
        ready (0: they all died starting and the run went on in-process)."""
        return min(self._wanted, self._ready)

    def results(self, tasks: Sequence[Task]) -> Iterator[Examined | None]:
        """Examine ``tasks`` in the workers; yields in task order as results come in."""
        from multiprocessing.connection import wait

        self._jobs = {}
        self._queue = deque()
        for start in range(0, len(tasks), CHUNK_FILES):
            self._add_job(list(range(start, min(start + CHUNK_FILES, len(tasks)))))
        jobs, queue = self._jobs, self._queue
        done: dict[int, Examined | None] = {}
        window = max(1, self._wanted) * IN_FLIGHT * CHUNK_FILES * 2
        for position in range(len(tasks)):
            while position not in done:
                if not self._workers:  # none left: the caller does the rest itself
                    log.warning(
                        "no parse worker left (%d started): parsing the rest in-process",
                        self.started,
                    )
                    for job in queue:
                        for p in jobs[job]:
                            done.setdefault(p, None)
                    queue.clear()
                    break
                for worker in self._workers:  # dispatch, never far past what is consumed
                    while (
                        queue
                        and len(worker.jobs) < IN_FLIGHT
                        and jobs[queue[0]][0] < position + window
                    ):
                        job = queue.popleft()
                        try:
                            worker.conn.send([tasks[p] for p in jobs[job]])
                        except OSError:  # it died: its pipe says so below
                            queue.appendleft(job)
                            break
                        worker.jobs.append(job)
                by_pipe = {id(w.conn): w for w in self._workers}
                for handle in wait([w.conn for w in self._workers]):
                    worker = by_pipe[id(handle)]
                    try:
                        message = worker.conn.recv()
                    except (EOFError, OSError):  # it died (its end closed with it)
                        self._lost(worker, done)
                    else:
                        self._receive(worker, message, done)
            yield done.pop(position)

    def _receive(self, worker: _Worker, report: Report, done: dict[int, Examined | None]) -> None:
        """A worker's message: ready (no results, its first), or its oldest chunk's results
        (a worker answers its chunks in the order it got them)."""
        results, worker.cpu, worker.rss_kb, worker.chunk_cpu = report
        if results is None:
            if not worker.ready:
                worker.ready = True
                self._ready += 1
            return
        for p, result in zip(self._jobs.pop(worker.jobs.popleft()), results, strict=True):
            done[p] = result

    def _add_job(self, positions: list[int], *, first: bool = False) -> None:
        job = self._next_job
        self._next_job += 1
        self._jobs[job] = positions
        if first:
            self._queue.appendleft(job)
        else:
            self._queue.append(job)

    def _lost(self, worker: _Worker, done: dict[int, Examined | None]) -> None:
        """A worker died: retry its chunks (the one it was in, file by file), start another."""
        self._workers.remove(worker)
        try:
            code = worker.process.wait(5)
        except subprocess.TimeoutExpired:  # its pipe closed, the process lingers
            worker.process.kill()
            code = worker.process.wait()
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
        worker.conn.close()
        self._done_cpu += worker.cpu
        self._done_rss_kb += worker.rss_kb
        self._done_chunk_cpu += worker.chunk_cpu
        held = list(worker.jobs)
        if not worker.ready:  # it died starting (no file's fault): its chunks as they were
            self._start_failures += 1
            log.warning("a parse worker exited while starting (%s)", how)
            held, begun = [], held
            for job in reversed(begun):
                self._queue.appendleft(job)
        elif held:
            log.warning("a parse worker died (%s): its files are parsed again", how)
        for job in reversed(held[1:]):  # not begun: as they were
            self._queue.appendleft(job)
        if held:
            first = self._jobs.pop(held[0])
            if len(first) == 1:  # this file kills a worker on its own
                done[first[0]] = Examined("crashed", None, how, None, None)
            else:
                for p in reversed(first):
                    self._add_job([p], first=True)
        if self._start_failures < START_FAILURES or any(w.ready for w in self._workers):
            self._spawn()

    def close(self) -> None:
        """Stop the workers: asked to, then ended; none outlives this call."""
        for worker in self._workers:
            try:
                worker.conn.send(None)
            except OSError:
                continue
        deadline = time.monotonic() + 5
        for worker in self._workers:
            try:
                while worker.conn.poll(max(0.0, deadline - time.monotonic())):
                    results, worker.cpu, worker.rss_kb, worker.chunk_cpu = worker.conn.recv()
                    if results is None and worker.ready:  # its answer to stop
                        break
                    if not worker.ready:
                        worker.ready = True
                        self._ready += 1
            except (EOFError, OSError):
                pass
        self.terminate()

    def terminate(self) -> None:
        """End every worker now (cancel, Ctrl-C, an error): joined, so no orphan is left."""
        for worker in self._workers:
            if worker.process.poll() is None:
                worker.process.terminate()
        for worker in self._workers:
            try:
                worker.process.wait(5)
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()
            worker.conn.close()
            self._done_cpu += worker.cpu
            self._done_rss_kb += worker.rss_kb
            self._done_chunk_cpu += worker.chunk_cpu
        self._workers = []

    @property
    def cpu_seconds(self) -> float:
        """CPU seconds the workers reported (start-up included: a worker's clock starts
        with its process); a worker ended mid-chunk loses that chunk's share."""
        return self._done_cpu + sum(w.cpu for w in self._workers)

    @property
    def chunk_cpu_seconds(self) -> float:
        """CPU seconds the workers spent cutting code-search chunks (not in
        :attr:`cpu_seconds`)."""
        return self._done_chunk_cpu + sum(w.chunk_cpu for w in self._workers)

    @property
    def peak_rss_mb(self) -> float:
        """The sum of the workers' peak RSS, in MiB."""
        return (self._done_rss_kb + sum(w.rss_kb for w in self._workers)) / 1024


def worker_count(setting: int | None) -> int:
    """How many workers ``index.workers`` asks for, clamped to ``[0, CPUs]``: a repository's
    own configuration is untrusted (docs/security.md) and may say anything. Unset: one per
    CPU up to 8 (docs/codegraph.md, "A cold index on several cores")."""
    cpus = _cpus()
    wanted = min(cpus, 8) if setting is None else setting
    return max(0, min(int(wanted), cpus))


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1
