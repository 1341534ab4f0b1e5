"""The engine's side of a thin window's link (``engram.lsp.served``)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs
import pytest

from engram.app import indexing
from engram.lsp import served


@attrs.define
class FakeRun:
    code: dict[str, int] = attrs.field(factory=dict)


def test_index_requests_of_several_windows_run_one_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every window of a workspace asks its engine for an index at start, and VS Code asks
    for the first index right after its start: in a real VS Code on the 6k-file gs-ws
    slice two ran at once in one engine and one failed with 'UNIQUE constraint failed:
    nodes.id' (both wrote the same graph rows)."""
    running = 0
    most = 0
    lock = threading.Lock()

    def run_index(engine: object, options: object, *args: object, **kwargs: object) -> FakeRun:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.05)  # long enough for the others to arrive while it runs
        with lock:
            running -= 1
        return FakeRun({"files_indexed": 1})

    monkeypatch.setattr(indexing, "run_index", run_index)
    with ThreadPoolExecutor(4) as pool:
        answers = list(
            pool.map(lambda _: served.answer(object(), {"what": "index"}), range(4))  # type: ignore[arg-type]
        )
    assert most == 1, f"{most} index runs at once in one engine"
    assert all(a == {"report": {"files_indexed": 1}} for a in answers), answers


def test_an_index_request_tells_whom_it_waits_for_then_how_far_it_got(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The engine's start-up index for a window waited for ``.engram/index.lock`` (an
    ``engram index`` in a terminal) or for another window's index, and the window showed
    "indexing" with nothing moving: the request's notes now say whom it waits for, then
    its progress (a thin window shows them in its ``$/progress``)."""
    import json

    from engram.app.index_lock import IndexHolder

    release = threading.Event()

    def run_index(engine: object, options: object, progress: Any, *args: Any, **kw: Any) -> FakeRun:
        kw["on_wait"](IndexHolder(4242, "2026-11-28 21:00:00 UTC", "engram index"))
        release.wait(5)
        progress(3, 3, "indexing code")
        return FakeRun({"files_indexed": 3})

    monkeypatch.setattr(indexing, "run_index", run_index)
    heard: list[list[dict[str, Any]]] = [[], []]
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(
            served.answer, object(), {"what": "index"}, lambda t: heard[0].append(json.loads(t))
        )
        time.sleep(0.2)  # the first holds the engine's index turn
        second = pool.submit(
            served.answer, object(), {"what": "index"}, lambda t: heard[1].append(json.loads(t))
        )
        time.sleep(0.2)
        release.set()
        first.result(10), second.result(10)
    assert heard[0] == [
        {"message": "waiting for another index (pid 4242, engram index, "
                    "started 2026-11-28 21:00:00 UTC)", "percentage": None},
        {"message": "indexing code 3/3", "percentage": 55},
    ]  # fmt: skip
    assert heard[1][0] == {
        "message": "waiting for another window's index of this folder",
        "percentage": None,
    }


def test_a_windows_cancel_stops_its_index_in_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The editor's progress offers a cancel; for the index the engine ran for the window
    it did nothing. ``cancel_index`` with the run's id stops it; an unknown run is no-op."""

    def run_index(engine: object, options: object, progress: Any, cancel: Any, **kw: Any) -> Any:
        while not cancel():
            time.sleep(0.01)
        return FakeRun({"interrupted": True})

    monkeypatch.setattr(indexing, "run_index", run_index)
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(served.answer, object(), {"what": "index", "run": "r1"})
        time.sleep(0.1)
        assert not running.done()
        stop = served.answer(object(), {"what": "cancel_index", "run": "r1"})  # type: ignore[arg-type]
        assert stop == {"cancelled": True}
        assert running.result(5) == {"report": {"interrupted": True}}
    late = served.answer(object(), {"what": "cancel_index", "run": "r1"})  # type: ignore[arg-type]
    assert late == {"cancelled": False}  # finished: nothing kept for it


def test_an_index_progress_names_its_phase_and_never_goes_back() -> None:
    """Resolution counts its files from 0 again after the parse: the editor said "indexing
    18076/18076", then "indexing 256/18078" (stop 29). Each note now names the phase, a new
    phase is said at once, and the percentage only moves forward."""
    import json

    from engram.codegraph.graph import CLOSURE, RESOLVING

    heard: list[dict[str, Any]] = []
    notes = served.IndexNotes(lambda text: heard.append(json.loads(text)))
    # the notes' own clock: a loaded machine can pause past the 0.2 s interval between two
    # calls, and a note "within the interval" was then news
    now = [0.0]
    notes.bar.clock = lambda: now[0]
    code = indexing.CODE
    notes.progress(0, 18076, f"{code}: lib/a.js")
    notes.progress(1, 18076, f"{code}: lib/b.js")  # within the interval: not news
    notes.progress(18076, 18076, f"{code}: lib/z.js")
    notes.progress(0, 18078, f"{code}: {RESOLVING}")
    notes.progress(256, 18078, f"{code}: {RESOLVING}")
    now[0] += 0.25
    notes.progress(512, 18078, f"{code}: {RESOLVING}")
    notes.progress(0, 900, f"{code}: {CLOSURE}")
    notes.progress(5, 9, f"{indexing.HISTORY}: commits")
    assert [h["message"] for h in heard] == [
        "indexing code 0/18076",
        "indexing code 18076/18076",
        "indexing code: resolving references 0/18078",
        "indexing code: resolving references 512/18078",
        "indexing code: dependency closure 0/900",
        "mining git history 5/9",
    ]
    shares = [h["percentage"] for h in heard]
    assert shares == sorted(shares) and shares[0] == 0 and shares[-1] < 100, shares
