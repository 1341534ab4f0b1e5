"""A cancel (``engram stop``, SIGTERM) is seen inside every long phase of an index, not only
when the phase begins (docs/engine.md "Faults").

Resolution and the closure looked at the cancel once, when they began: a stop landing in
their ~11 s at 58k files waited for the end, the engine's 10 s drain ran out and the
process exited under the run. Each test cancels from inside one phase only (the cancel
says stop when the phase's own frame is on the stack), so the old code never heard it.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from tests.cli.test_index_one_at_a_time import graph_rows

from engram.codegraph import CodeGraph
from engram.codegraph.graph import IndexInterrupted
from engram.config import IndexConfig
from engram.workspace import Workspace

from .conftest import write_tree

#: more than a resolution chunk (256) and than a closure rebuild's threshold (200)
FILES = 600


def _workspace(root: Path) -> None:
    files: dict[str, str | bytes] = {"pkg/__init__.py": "", "pkg/base.py": "def base():\n  pass\n"}
    for n in range(FILES):
        files[f"pkg/m{n}.py"] = (
            f"from pkg import base\nfrom pkg import m{(n + 1) % FILES}\n\n"
            f"def f{n}():\n    base.base()\n    return m{(n + 1) % FILES}.f{(n + 1) % FILES}()\n"
        )
    write_tree(root, files)


def inside(function: str) -> Callable[[], bool]:
    """A cancel that says stop only when ``function`` is running (on this thread's stack)."""

    def cancel() -> bool:
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_name == function:
                return True
            frame = frame.f_back  # type: ignore[assignment]
        return False

    return cancel


def _graph(root: Path) -> CodeGraph:
    return CodeGraph(Workspace.open(root), IndexConfig(workers=0))


@pytest.mark.parametrize("phase", ["_resolve_files", "_update_closure"])
def test_a_cancel_inside_a_phase_after_the_parse_stops_it_and_the_next_run_resumes(
    tmp_path: Path, phase: str
) -> None:
    root = tmp_path / "ws"
    _workspace(root)
    graph = _graph(root)
    report = graph.index(cancel=inside(phase))
    assert report.interrupted, f"a cancel inside {phase} was not heard"
    conn = sqlite3.connect(graph.db_path)
    stale = conn.execute("SELECT count(*) FROM files WHERE stale_at IS NOT NULL").fetchone()[0]
    conn.close()
    assert stale == FILES + 2, "a rolled-back resolution leaves every file to the next run"
    assert not graph.index().interrupted
    graph.close()

    once = tmp_path / "once"
    _workspace(once)
    single = _graph(once)
    single.index()
    single.close()
    assert graph_rows(graph.db_path) == graph_rows(single.db_path)


def test_a_long_statement_is_interrupted_by_the_cancel(tmp_path: Path) -> None:
    """One SQLite statement (the closure's index at 58k files) runs for seconds: the cancel
    interrupts it (``engram.progress.statements_cancelled_by``) instead of waiting for it."""
    from engram.codegraph.graph import _CANCEL_STEPS
    from engram.progress import statements_cancelled_by

    conn = sqlite3.connect(tmp_path / "x.sqlite")
    told = threading.Event()
    threading.Timer(0.3, told.set).start()
    stopping = statements_cancelled_by(conn, told.is_set, IndexInterrupted, _CANCEL_STEPS)
    with pytest.raises(IndexInterrupted), stopping:
        # counting that would outlast the test: only an interruption ends it (the test
        # timed a minute's count, < 3 s allowed, which a loaded machine can exceed)
        conn.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
            "WHERE i < 9000000000000000000) SELECT count(*) FROM n"
        ).fetchone()
    # the handler is gone afterwards: the connection's next statements run to their end
    assert conn.execute("SELECT 1").fetchone() == (1,)
    conn.close()


class _SlowUpkeepStore:
    """A chunk store whose bulk end (its upkeep: an FTS build on a table with a text
    column) lasts until ``built`` is set."""

    def __init__(self) -> None:
        self.built = threading.Event()
        self.written: list[list[str]] = []
        self.upkeep_ran = False

    def stored_hashes(self) -> Iterator[tuple[str, str, str]]:
        return iter(())

    @contextmanager
    def bulk(self) -> Iterator[object]:
        class Run:
            upkeep = True

        run = Run()
        yield run
        if run.upkeep:
            self.upkeep_ran = True
            self.built.wait(60)

    def replace_files_rows(self, files: list[str], rows: object) -> None:
        self.written.append(files)


def _chunk_row(n: int) -> tuple[str, str, str, int, int, str, str]:
    return (f"c{n}", "function", f"f{n}", 1, 2, "def f(): pass", f"d{n}")


def test_an_abandoned_prefill_waits_for_no_index_build() -> None:
    """A stop during resolution (the parse phase over, the writer building the FTS index):
    ``close(abandon=True)`` returns at once, the caller's cleanup runs when the writer is
    done, and the writer skips a build it had not begun."""
    from engram.codegraph.search import ChunkPrefill

    store = _SlowUpkeepStore()
    prefill = ChunkPrefill(lambda: store)  # type: ignore[arg-type, return-value]
    prefill.add("a.py", "h", [_chunk_row(1)])
    prefill.parsed()
    deadline = time.monotonic() + 60
    while not store.upkeep_ran and time.monotonic() < deadline:  # the build has begun
        time.sleep(0.01)
    # the build lasts until the test ends it: a close that waited for it would not return
    # (it was timed against a 5 s build, < 1 s allowed: a loaded machine can pause longer)
    closed = threading.Event()
    closing = threading.Thread(target=prefill.close, kwargs={"abandon": True, "after": closed.set})
    closing.start()
    closing.join(30)
    assert not closing.is_alive(), "close waited for the FTS build"
    assert not closed.is_set(), "the store was closed under its writer"
    store.built.set()
    assert closed.wait(60), "the cleanup never ran once the writer was done"

    # abandoned before the writer reached its end: no build at all
    store = _SlowUpkeepStore()
    store.built.set()
    prefill = ChunkPrefill(lambda: store)  # type: ignore[arg-type, return-value]
    prefill.add("b.py", "h", [_chunk_row(2)])
    prefill._flush()
    prefill.close(abandon=True)
    assert prefill._thread is not None
    prefill._thread.join(60)
    assert not prefill._thread.is_alive()
    assert not store.upkeep_ran
