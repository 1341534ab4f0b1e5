"""Code-search chunks cut in the parse workers (issue 18; docs/codegraph.md "The whole cold
index"): the chunk table of a run with workers is the one a run in one process stores, ids,
code and hashes included, and neither keeps an FTS index or a copy of the text; a run
stopped by cancel, Ctrl-C or a killed worker resumes to that same table; the workers'
chunks are not cut again after the graph."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from engram.app.engine import Engine
from engram.app.indexing import IndexOptions, run_index
from engram.codegraph import CodeSearch, search
from engram.store.chunk_store import ChunkStore

from .conftest import write_tree
from .test_parse_workers import children_of, make_workspace, needs_proc

KEYWORD = IndexOptions(embed_chunks=False, seed=False, history=False, team=False,
                       embed_memories=False)  # fmt: skip
COLUMNS = ["id", "file", "kind", "name", "start_line", "end_line", "content", "text",
           "search_text", "content_hash", "model_id"]  # fmt: skip
#: what a row of either run holds in the columns nothing reads any more (docs/storage.md)
UNUSED = {"text": None, "search_text": None}
QUERIES = ["helper", "Thing3 run", "readConfigFile", "parse HTTP response", "Guide"]


def more_files() -> dict[str, str | bytes]:
    """What the mixed tree lacks: prose, a class too big for one chunk, camelCase words,
    a file with no chunks, a file whose definitions share a span, a chunk whose embedded
    text is cut (past 2,000 characters, on non-ASCII ones) and prose with no word to split
    (its search text is its text alone)."""
    long = "def longOne():\n" + "".join(f"    x{i} = 'ééé ünïcödé 😀 {i}'\n" for i in range(100))
    big = "class Huge:\n" + "".join(
        f"    def method{i}(self, parseHTTPResponse{i}):\n        return readConfigFile({i})\n\n"
        for i in range(70)
    )
    return {
        "docs/guide.md": "# Guide\n\nHow to readConfigFile.\n\n## More\n" + "text line\n" * 60,
        "py/huge.py": big,
        "py/pkg0/__init__.py": "",
        "ts/same.ts": "export const a = () => 1, b = () => 2;\n",
        "py/long.py": long,
        "docs/plain.md": "plain words only here\n" * 5,
    }


def workspace(root: Path) -> Path:
    make_workspace(root)
    write_tree(root, more_files())
    return root


def open_engine(root: Path, workers: int) -> Engine:
    overrides: dict[str, object] = {
        "embed": {"model": "none"},
        "index": {"workers": workers, "workers_min_files": 1, "max_file_bytes": 8000},
    }
    return Engine.open(root, overrides)


def chunk_table(root: Path) -> list[tuple[object, ...]]:
    with open_engine(root, 0) as engine:
        store = ChunkStore(engine.workspace)
        try:
            data, _version = store._table.read_all(COLUMNS)
        finally:
            store.close()
    assert data is not None
    rows = sorted(zip(*(data.column(c).to_pylist() for c in COLUMNS), strict=True))
    for name, value in UNUSED.items():
        assert {row[COLUMNS.index(name)] for row in rows} == {value}, name
    return rows


def indices(root: Path) -> list[str]:
    """The chunk table's LanceDB indices (none: nothing searches one)."""
    with open_engine(root, 0) as engine:
        store = ChunkStore(engine.workspace)
        try:
            table = store._table.table()
            return [] if table is None else [str(ix.name) for ix in table.list_indices()]
        finally:
            store.close()


def hits(root: Path) -> list[tuple[str, int, int, float]]:
    with open_engine(root, 0) as engine:
        search = CodeSearch(engine.workspace, engine.codegraph, None)
        try:
            return [
                (h.file, h.start_line, h.end_line, h.score)
                for q in QUERIES
                for h in search.search(q, 10, "bm25")
            ]
        finally:
            search.close()


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of 64 chunks: a run here writes several, and a stop falls between two."""
    monkeypatch.setattr(search, "WRITE_BATCH_CHUNKS", 64)
    monkeypatch.setattr(search, "PREFILL_BATCH_CHUNKS", 64)


@pytest.fixture
def straight(tmp_path: Path) -> Iterator[tuple[list[tuple[object, ...]], list[object]]]:
    """The chunk table and search hits of a run in one process."""
    root = workspace(tmp_path / "straight")
    with open_engine(root, 0) as engine:
        run = run_index(engine, KEYWORD)
    assert run.code.workers == 0 and run.chunks is not None and run.chunks.chunks > 300
    assert run.code.chunk_cpu_seconds == 0
    assert indices(root) == []
    yield chunk_table(root), list(hits(root))


def test_workers_store_the_chunks_one_process_stores(
    tmp_path: Path,
    straight: tuple[list[tuple[object, ...]], list[object]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table, found = straight
    root = workspace(tmp_path / "pooled")
    cut_after_graph: list[str] = []
    chunks_for = CodeSearch._chunks_for

    def counted(self: CodeSearch, file: str, language: str | None):  # type: ignore[no-untyped-def]
        cut_after_graph.append(file)
        return chunks_for(self, file, language)

    monkeypatch.setattr(CodeSearch, "_chunks_for", counted)
    scans: list[str] = []
    stored_hashes = ChunkStore.stored_hashes

    def scan(self: ChunkStore):  # type: ignore[no-untyped-def]
        import threading

        scans.append(threading.current_thread().name)
        return stored_hashes(self)

    monkeypatch.setattr(ChunkStore, "stored_hashes", scan)
    with open_engine(root, 2) as engine:
        run = run_index(engine, KEYWORD)
    assert run.code.workers >= 1 and run.chunks is not None
    # the workers' CPU cutting chunks is counted apart from the graph's
    assert run.code.chunk_cpu_seconds > 0
    assert run.code.cpu_seconds > run.code.worker_cpu_seconds > 0
    # the workers cut every file, the one without chunks included (it was read and cut
    # again after the graph), and wrote them into an empty table: the pass after the
    # graph takes that from the writer instead of reading back every stored hash (~1 s
    # at 58k files, on the run's last stretch: docs/codegraph.md "A fifth look")
    assert cut_after_graph == []
    assert scans == ["engram-chunk-writer"]
    assert run.chunks.chunks == len(table)
    assert chunk_table(root) == table and indices(root) == []
    assert hits(root) == found and found


def test_a_run_in_one_process_after_the_workers_cuts_nothing(
    tmp_path: Path, straight: tuple[list[tuple[object, ...]], list[object]]
) -> None:
    """The workers' chunks carry the hashes the pass after the graph checks: a later run
    (in one process) keeps them all."""
    root = workspace(tmp_path / "pooled")
    with open_engine(root, 2) as engine:
        run_index(engine, KEYWORD)
    with open_engine(root, 0) as engine:
        again = run_index(engine, KEYWORD)
    assert again.chunks is not None and again.chunks.files_chunked == 0
    assert chunk_table(root) == straight[0]


@needs_proc
@pytest.mark.parametrize("how", ["cancel", "ctrl-c", "worker killed"])
def test_a_stopped_run_resumes_to_the_same_chunks(
    tmp_path: Path, straight: tuple[list[tuple[object, ...]], list[object]], how: str
) -> None:
    root = workspace(tmp_path / "cut")
    before = children_of(os.getpid())  # an earlier test's server is not ours
    seen: list[int] = []
    killed: list[int] = []

    def progress(done: int, total: int | None, message: str = "") -> None:
        if not message.startswith("indexing code"):
            return
        seen.append(done)
        if how == "ctrl-c" and len(seen) == 150:
            raise KeyboardInterrupt
        if how == "worker killed" and len(seen) == 60:
            for pid in children_of(os.getpid()) - before:
                if "parse_worker" in Path(f"/proc/{pid}/cmdline").read_text():
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    break

    def cancel() -> bool:
        return how == "cancel" and len(seen) > 150

    with open_engine(root, 2) as engine:
        if how == "ctrl-c":
            with pytest.raises(KeyboardInterrupt):
                run_index(engine, KEYWORD, progress, cancel)
        else:
            run = run_index(engine, KEYWORD, progress, cancel)
            assert run.code.interrupted == (how == "cancel")
    assert bool(killed) == (how == "worker killed")
    assert children_of(os.getpid()) - before == set()
    with open_engine(root, 2) as engine:
        resumed = run_index(engine, KEYWORD)
    assert not resumed.code.interrupted and indices(root) == []
    assert chunk_table(root) == straight[0]
    assert hits(root) == straight[1]


def test_a_run_stopped_in_resolution_leaves_the_chunks_to_the_next_run(
    tmp_path: Path, straight: tuple[list[tuple[object, ...]], list[object]]
) -> None:
    """A stop during resolution returns without waiting for the chunk writer's last
    batches (``ChunkPrefill.close(abandon=True)``); the next run writes
    what was dropped: the same chunks and hits as one run (docs/engine.md "Faults")."""
    from .test_cancel_phases import inside

    root = workspace(tmp_path / "pooled")
    with open_engine(root, 2) as engine:
        stopped = run_index(engine, KEYWORD, cancel=inside("_resolve_files"))
    assert stopped.code.interrupted and stopped.chunks is None
    with open_engine(root, 2) as engine:
        again = run_index(engine, KEYWORD)
    assert not again.code.interrupted
    assert chunk_table(root) == straight[0]
    assert hits(root) == straight[1]


HISTORY = IndexOptions(embed_chunks=False, seed=False, history=True, team=False,
                       embed_memories=False)  # fmt: skip


def committed(root: Path) -> Path:
    """``root`` as a git repository with one commit (something to mine)."""
    from tests.conftest import git

    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


def sync_threads() -> list[str]:
    import threading

    return [
        t.name
        for t in threading.enumerate()
        if t.name in ("engram-history-sync", "engram-history-mining")
    ]


def test_the_history_steps_run_beside_the_chunk_writers_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The steps after mining need the graph, not the chunks: they begin once the graph is
    built, while the chunk writer still ends its bulk (they waited for it, then an FTS
    build, and the chunk pass, each on one core: docs/codegraph.md "A fifth look"). The
    bulk's end here waits until a step has begun (60 s at most: the old order never got
    there)."""
    import threading

    from engram.app import history_sync
    from engram.store.hybrid import HybridTable

    root = committed(workspace(tmp_path / "ws"))
    stepped = threading.Event()
    build_saw_a_step: list[bool] = []
    after_write = HybridTable._after_write

    def slow_build(self: HybridTable, *args: object, **kwargs: object) -> None:
        # the bulk's end, not the writes before it
        if threading.current_thread().name == "engram-chunk-writer" and kwargs.get("counted"):
            build_saw_a_step.append(stepped.wait(60))
        after_write(self, *args, **kwargs)  # type: ignore[arg-type]

    follow = history_sync._follow_renames

    def first_step(*args: object, **kwargs: object) -> None:
        stepped.set()
        follow(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(HybridTable, "_after_write", slow_build)
    monkeypatch.setattr(history_sync, "_follow_renames", first_step)
    heard: list[str] = []
    with open_engine(root, 2) as engine:
        run = run_index(engine, HISTORY, lambda d, t, m="": heard.append(m))
    assert run.code.workers >= 1 and run.chunks is not None and run.chunks.chunks > 300
    assert build_saw_a_step == [True], "the history steps waited for the chunk writer"
    assert run.history is not None and run.history.mined is not None
    assert run.history.mined.commits == 1 and not run.history.interrupted
    assert run.history.head is not None
    # the stages are still told in their order, mining's progress in its own (the chunk
    # pass has nothing to tell: the workers cut every file)
    from engram.app.indexing import STAGES

    stages = [m.split(":")[0] for m in heard]
    order = [s for i, s in enumerate(stages) if i == 0 or stages[i - 1] != s]
    assert order == sorted(order, key=STAGES.index) and len(set(order)) == len(order)
    assert order[0] == "indexing code" and order[-1] == "mining git history"
    assert sync_threads() == []
    assert indices(root) == []


def test_a_stop_in_the_chunk_pass_stops_the_history_steps_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop heard in the chunk pass is heard by the history steps running beside it:
    the run returns with no thread left, its report says the steps were left, and the
    next run does them."""
    import threading

    from engram.app import history_sync
    from engram.app.indexing import was_interrupted
    from engram.app.state import EngineState

    root = committed(workspace(tmp_path / "ws"))
    stopped = threading.Event()
    chunk_pass = CodeSearch.index_chunks

    def stopping_pass(self: CodeSearch, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        stopped.set()
        return chunk_pass(self, *args, **kwargs)  # type: ignore[arg-type]

    follow = history_sync._follow_renames

    def after_the_stop(*args: object, **kwargs: object) -> None:
        assert stopped.wait(60)
        follow(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(CodeSearch, "index_chunks", stopping_pass)
    monkeypatch.setattr(history_sync, "_follow_renames", after_the_stop)
    with open_engine(root, 2) as engine:
        run = run_index(engine, HISTORY, cancel=stopped.is_set)
        assert run.history is not None and run.history.interrupted
        assert was_interrupted(run) and sync_threads() == []
        assert EngineState.of(engine.workspace).get("renames_applied_commit") is None
    monkeypatch.setattr(history_sync, "_follow_renames", follow)
    with open_engine(root, 2) as engine:
        again = run_index(engine, HISTORY)
        assert again.history is not None and not again.history.interrupted
        assert EngineState.of(engine.workspace).get("renames_applied_commit") is not None
    assert sync_threads() == []


def test_a_run_that_fails_beside_the_history_steps_stops_the_mining_they_wait_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that fails in the chunk pass (a full disk, Ctrl-C) while git history is still
    mined stops the mining too: the history steps beside the chunk pass wait on it, and
    the run's end asked only them to stop, so it waited for the whole of mining (minutes
    on a long history) before it raised. The mining here runs until it is told to stop
    (20 s at most: the old order never told it before then)."""
    import time

    from engram.history import GitHistory

    root = committed(workspace(tmp_path / "ws"))
    mine = GitHistory.mine
    told: list[bool] = []

    def long_mining(self: GitHistory, progress=None, cancel=None):  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (cancel is not None and cancel()):
            time.sleep(0.02)
        told.append(cancel is not None and cancel())
        return mine(self, progress=progress, cancel=cancel)

    def failing_pass(self: CodeSearch, *args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(GitHistory, "mine", long_mining)
    monkeypatch.setattr(CodeSearch, "index_chunks", failing_pass)
    started = time.monotonic()
    with open_engine(root, 0) as engine, pytest.raises(OSError, match="No space left"):
        run_index(engine, HISTORY)
    assert told == [True], "the mining ran to its end"
    assert time.monotonic() - started < 15
    assert sync_threads() == []


def test_a_workers_chunk_rows_are_the_chunks_one_process_stores() -> None:
    """``chunk_rows`` (a worker's) gives each chunk :func:`unique_chunks` gives, with the
    digest of its whole embedding text (what ``CodeSearch`` stores and embeds), whatever
    the path (camelCase, digits, non-ASCII, a lone surrogate) and the name."""
    from engram.codegraph.chunking import chunk_rows, text_digest, unique_chunks
    from engram.codegraph.symbols import Symbol

    text = "\n".join(
        ["import fooBar", "", "def parseHTTPConfig(x):", "    return utf8Name", "",
         "class MyThing:", "    def doIt(self): pass", "", "loose = 1", "moreLoose = 2",
         "evenMore = 3", *(f"lineNo{i} = camelCase{i}" for i in range(60)),
         "def longOne():", *(f"    x{i} = 'ééé ünïcödé 😀 {i}'" for i in range(100))]
    )  # fmt: skip
    symbols = [
        Symbol("parseHTTPConfig", "function", "parseHTTPConfig", "", 3, 4, True),
        Symbol("MyThing", "class", "MyThing", "", 6, 7, False),
        Symbol("doIt", "method", "MyThing.doIt", "", 7, 7, False),
        Symbol("longOne", "function", "longOne", "", 72, 172, True),
    ]
    paths = ["src/myPkg/HTTPServer2.py", "naïve/résuméParser.py", "odd\udcffName/xY.py"]
    for path in paths:
        for language, given in (("python", symbols), (None, [])):
            rows = chunk_rows(path, text, given, language)
            chunks = unique_chunks(path, text, given, language)
            assert len(rows) == len(chunks) > 1
            assert rows == [
                (c.chunk_id, c.kind, c.name or "", c.start_line, c.end_line, c.content,
                 text_digest(c.embedding_text()))
                for c in chunks
            ]  # fmt: skip
