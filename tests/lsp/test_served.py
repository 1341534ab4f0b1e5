"""The engine's side of a thin window's link (``engram.lsp.served``)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

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

    def run_index(engine: object, options: object) -> FakeRun:
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
