"""Pieces of the engine machinery that need no process: argv rewriting, the dispatcher."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from pathlib import Path

import attrs
import pytest

from engram.daemon import handlers
from engram.daemon.address import engine_key
from engram.daemon.forward import FORWARDED, _reads_stdin, _rewrite, forward, split_command
from engram.daemon.wire import newer
from engram.errors import InvalidInput


def test_split_command_skips_the_workspace_option() -> None:
    assert split_command(["-w", "/x", "search", "q"]) == (2, "search", "/x")
    assert split_command(["search", "--workspace=/y", "q"]) == (0, "search", "/y")
    assert split_command(["--", "search"]) == (-1, None, None)


def test_rewrite_makes_the_workspace_and_caller_files_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _rewrite(["-w", "ws", "search", "--k", "3", "q"], "search", "/root") == [
        "search",
        "--workspace",
        "/root",
        "--k",
        "3",
        "q",
    ]
    out = _rewrite(["export", "--format", "md", "notes.md"], "export", "/root")
    assert out == ["export", "--workspace", "/root", "--format", "md", str(tmp_path / "notes.md")]
    # memory text that looks like a path is never touched; '--' ends the options
    assert _rewrite(["remember", "--", "-w x"], "remember", "/r") == [
        "remember",
        "--workspace",
        "/r",
        "--",
        "-w x",
    ]


def test_every_command_that_reads_or_writes_the_store_is_forwarded() -> None:
    # restore, edit, log and report came with the trust rules and the report
    assert {"restore", "edit", "log", "report"} <= FORWARDED
    assert not {"serve", "mcp-serve", "hook", "engine", "status", "stop"} & FORWARDED


def test_report_file_is_the_callers_and_edit_text_may_come_from_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = _rewrite(["report", "--module", "a.py", "r.html"], "report", "/root")
    assert out == ["report", "--workspace", "/root", "--module", "a.py", str(tmp_path / "r.html")]
    assert _reads_stdin("edit", ["edit", "m-1", "--text", "-"], 0)
    assert _reads_stdin("edit", ["edit", "m-1", "--text=-"], 0)
    assert not _reads_stdin("edit", ["edit", "m-1", "--text", "new"], 0)


def test_report_open_stays_in_the_callers_process() -> None:
    # the browser to open is this terminal's, not the engine's
    assert forward(["report", "--open"]) is None


def test_engine_key_depends_on_workspace_and_settings(tmp_path: Path) -> None:
    a = engine_key(tmp_path, {})
    assert a == engine_key(tmp_path, {"ENGRAM_ENGINE": "auto", "HOME": "/x"})
    assert a != engine_key(tmp_path, {"ENGRAM_EMBED__MODEL": "none"})
    assert a != engine_key(tmp_path / "other", {})


def test_newer_compares_protocol_then_version() -> None:
    assert newer(2, "0.1.0", 1, "9.9.9")
    assert newer(1, "0.10.0", 1, "0.9.1")
    assert not newer(1, "0.1.0", 1, "0.1.0")


class _Surface(enum.StrEnum):
    LSP = "lsp"


@attrs.define
class _Args:
    text: str


class _Echo:
    """A declaration shaped like engram.api's UseCase."""

    name = "echo"

    def parse(self, raw: Mapping[str, object], surface: object) -> _Args:
        if not isinstance(raw.get("text"), str):
            raise InvalidInput("text: expected a string")
        return _Args(str(raw["text"]))

    def execute(self, engine: object, args: _Args, surface: object) -> str:
        return args.text.upper()

    def to_json(self, result: str) -> dict[str, object]:
        return {"said": result}

    def to_text(self, result: str) -> str:
        return result

    def notes(self, result: str) -> list[str]:
        return ["echoed"]

    def exit_code(self, result: str) -> int:
        return 0

    touched = None
    shown = None
    learned = None
    corrected = None


def test_call_runs_a_declared_use_case(monkeypatch: pytest.MonkeyPatch) -> None:
    def by_name(name: str) -> _Echo:
        if name != "echo":
            raise KeyError(name)
        return _Echo()

    monkeypatch.setattr(handlers, "_declarations", lambda: (by_name, _Surface))
    reply = handlers.run_call(
        None,  # type: ignore[arg-type]
        {"usecase": "echo", "surface": "lsp", "args": {"text": "hi"}},
    )
    assert reply == {
        "json": {"said": "HI"},
        "text": "HI",
        "notes": ["echoed"],
        "exit": 0,
        "touched": None,
        "shown": [],
        "learned": [],
        "corrected": None,
    }
    # an agent's label travels with the call; a front end can never claim to be a person
    agent = {"usecase": "echo", "surface": "lsp", "args": {"text": "a"}, "actor": "agent:lsp:x"}
    assert handlers.run_call(None, agent)["text"] == "A"  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="actor must be an agent"):
        handlers.run_call(None, {**agent, "actor": "person:mallory"})  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="unknown use case"):
        handlers.run_call(None, {"usecase": "nope", "surface": "lsp", "args": {}})  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="text: expected a string"):
        handlers.run_call(None, {"usecase": "echo", "surface": "lsp", "args": {"text": 1}})  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="JSON object"):
        handlers.run_call(None, {"usecase": "echo", "surface": "lsp", "args": []})  # type: ignore[arg-type]


def test_peer_uid_names_the_other_end() -> None:
    import os
    import socket
    import sys

    from engram.daemon.address import peer_uid

    left, right = socket.socketpair(socket.AF_UNIX)
    try:
        uid = peer_uid(left)
    finally:
        left.close()
        right.close()
    if sys.platform.startswith("linux"):
        assert uid == os.getuid()
    else:
        assert uid is None


def test_deferred_work_runs_after_the_reply_at_the_lowest_cpu_priority() -> None:
    """Contradiction checks after a write run on their own thread at nice 19 (Linux), so a
    request overlapping one keeps the CPU (docs/engine.md, "Writes"); a failing job is
    logged and the next one still runs; jobs handed in after close are dropped."""
    import contextlib
    import os
    import sys
    import threading
    from collections.abc import Iterator

    from engram.daemon.server import DEFERRED_NICE, DeferredWork

    engine = object()
    seen: list[tuple[object, int | None]] = []
    done = threading.Event()

    @contextlib.contextmanager
    def borrow() -> Iterator[object]:
        yield engine

    def job(lent: object) -> None:
        nice = None
        if sys.platform.startswith("linux"):
            nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        seen.append((lent, nice))

    def fails(_lent: object) -> None:
        raise RuntimeError("boom")

    work = DeferredWork(borrow)  # type: ignore[arg-type]
    work.add(fails)
    work.add(job)
    work.add(lambda _e: done.set())
    assert done.wait(30)
    assert seen == [(engine, DEFERRED_NICE if sys.platform.startswith("linux") else None)]
    work.close()  # joins the thread: the last job's count is settled
    assert work.pending == 0
    work.add(job)
    assert work.pending == 0 and len(seen) == 1


def test_the_store_upkeep_runs_on_its_own_thread_at_normal_priority() -> None:
    """An engine the slot opens hands the compaction a write makes due to the slot's
    upkeep thread (``engram-upkeep``), not to the judges' niced queue: it holds the store's
    locks while it runs, and a request waiting for them must not wait for a starved thread."""
    import os
    import sys
    import threading

    from engram.daemon.server import EngineSlot

    class FakeEngine:
        def __init__(self) -> None:
            self.write_listeners: list[object] = []
            self.schedule: Callable[[Callable[[], None]], None] | None = None

        def upkeep_after_requests(self, schedule: Callable[[Callable[[], None]], None]) -> None:
            self.schedule = schedule

        def close(self) -> None:
            return None

    engine = FakeEngine()
    slot = EngineSlot(lambda: engine, lambda: None)  # type: ignore[arg-type,return-value]
    slot.start()
    ran: list[tuple[str, int | None]] = []
    done = threading.Event()

    def compact() -> None:
        nice = None
        if sys.platform.startswith("linux"):
            nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        ran.append((threading.current_thread().name, nice))
        done.set()

    assert engine.schedule is not None
    engine.schedule(compact)
    assert done.wait(30)
    slot.close()
    normal = os.getpriority(os.PRIO_PROCESS, 0) if sys.platform.startswith("linux") else None
    assert ran == [("engram-upkeep", normal)]
