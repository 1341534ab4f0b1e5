"""Editor events reach the observer: unit tests of the feed, and a real server end to end."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from tests.lsp.conftest import lsp_session, open_doc, uri, wait_for, wait_ready

from engram.app.observe import session_summary
from engram.config import EngramConfig, ObserverConfig
from engram.lsp.folder import Folder
from engram.lsp.observe import DEBOUNCE_SECONDS, EditorEventFeed
from engram.workspace import Workspace

# --------------------------------------------------------------------------- the feed


class RecordingEngine:
    def __init__(self, config: EngramConfig | None = None, fail: bool = False) -> None:
        self.config = config or EngramConfig()
        self.events: list[dict[str, Any]] = []
        self.fail = fail
        self.seen = threading.Event()

    def observer_or_build(self, build: Any) -> RecordingEngine:
        return self  # the feed reaches the observer through the engine

    def observe(self, event: dict[str, Any]) -> None:
        self.seen.set()
        if self.fail:
            raise RuntimeError("observer is broken")
        self.events.append(event)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def folder_with(tmp_path: Path, engine: RecordingEngine | None) -> Folder:
    folder = Folder("file:///ws", tmp_path)
    folder.engines.set(engine)  # type: ignore[arg-type]
    if engine is not None:
        folder.configure(engine.config, agent=False, overrides={})
    return folder


def test_changes_are_debounced_per_document_and_the_session_ends(tmp_path: Path) -> None:
    engine = RecordingEngine()
    folder = folder_with(tmp_path, engine)
    clock = Clock()
    feed = EditorEventFeed(clock=clock, wall_clock=lambda: 1.0)
    assert feed.emit(folder, "open", "a.py")
    assert feed.emit(folder, "change", "a.py")
    assert not feed.emit(folder, "change", "a.py")  # typing on: one event
    assert feed.emit(folder, "change", "b.py")  # another document
    clock.now += DEBOUNCE_SECONDS
    assert feed.emit(folder, "change", "a.py")
    assert feed.emit(folder, "save", "a.py") and feed.emit(folder, "save", "a.py")
    feed.close()

    actions = [(e["kind"], e.get("action"), e.get("files")) for e in engine.events]
    assert actions == [
        ("editor", "open", ["a.py"]),
        ("editor", "change", ["a.py"]),
        ("editor", "change", ["b.py"]),
        ("editor", "change", ["a.py"]),
        ("editor", "save", ["a.py"]),
        ("editor", "save", ["a.py"]),
        ("session_end", None, None),
    ]
    assert {e["session_id"] for e in engine.events} == {feed.session_id}
    assert not feed.emit(folder, "open", "a.py")  # closed


def test_events_wait_for_the_engine_and_respect_the_setting(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, None)
    feed = EditorEventFeed()
    assert feed.emit(folder, "open", "a.py")  # the engine is still opening
    engine = RecordingEngine()
    folder.engines.set(engine)  # type: ignore[arg-type]
    assert engine.seen.wait(5), "queued event never delivered"
    off = RecordingEngine(EngramConfig(observer=ObserverConfig(enabled=False)))
    other = folder_with(tmp_path, off)
    assert not feed.emit(other, "open", "b.py")
    feed.close()
    assert [e["kind"] for e in engine.events] == ["editor", "session_end"]
    assert off.events == []


def test_a_failing_observer_never_reaches_the_editor(tmp_path: Path) -> None:
    engine = RecordingEngine(fail=True)
    feed = EditorEventFeed()
    assert feed.emit(folder_with(tmp_path, engine), "open", "a.py")
    assert engine.seen.wait(5)
    feed.close()
    assert feed.dropped == 1 and feed.delivered == 0


# --------------------------------------------------------------------------- end to end


def scratchpad_events(root: Path) -> list[dict[str, Any]]:
    events = []
    for path in (root / ".engram" / "observer").glob("lsp-*.jsonl"):
        for line in path.read_text().splitlines():
            if line.strip():
                events.append(json.loads(line).get("event", {}))
    return events


@pytest.mark.timeout(180)
async def test_open_change_save_become_observer_events(app_workspace: Workspace) -> None:
    root = app_workspace.root
    path = root / "src" / "app.py"
    async with lsp_session([root]) as client:
        await wait_ready(client)
        doc_uri = await open_doc(client, path)
        for version in (2, 3, 4):  # three keystrokes: one change event
            client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(
                        uri=doc_uri, version=version
                    ),
                    content_changes=[
                        types.TextDocumentContentChangePartial(
                            range=types.Range(types.Position(0, 0), types.Position(0, 0)),
                            text="#",
                        )
                    ],
                )
            )
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(doc_uri))
        )

        def actions() -> list[str]:
            return [e.get("action", "") for e in scratchpad_events(root)]

        await wait_for(lambda: "save" in actions(), timeout=30, what="save event on disk")
        events = scratchpad_events(root)
        assert [e["action"] for e in events] == ["open", "change", "save"]
        assert all(e["kind"] == "editor" and e["files"] == ["src/app.py"] for e in events)
        session_id = events[0]["session_id"]
        assert session_id.startswith("lsp-") and {e["session_id"] for e in events} == {session_id}
        assert uri(path) == doc_uri
    # shutdown ended the session: the observer finalised it and wrote its summary
    from engram.app import Engine

    with Engine.open(root, {"embed": {"model": "none"}}) as engine:
        summary = session_summary(engine, session_id)
    assert summary["found"] and summary["session_id"] == session_id
    assert summary["outcome"] != "running"
