"""A change to a memory and its audit entry land together or not at all (docs/trust.md).

On a nearly full disk (the walk of stop 29) ``engram remember`` stored the memory and then
logged "could not write 1 audit entries: database or disk is full": a change without its
entry. The trail is now written first; a trail that cannot be written changes nothing and
says so in one line, a store write that fails takes its entries back, and a write that was
committed before a later step failed keeps them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from engram.app import Engine
from engram.app.memories import confirm, flag, forget, pin
from engram.app.portability import import_file
from engram.app.remember import remember
from engram.app.trust import audit_log, edit
from engram.errors import EngramError
from engram.model import CorrectionKind
from engram.store import AuditLog
from engram.store.hybrid import HybridTable
from engram.workspace import Workspace

NO_MODEL = {"embed": {"model": "none"}}
FULL = "database or disk is full"


@pytest.fixture
def engine(tmp_workspace: Workspace) -> Engine:
    root = tmp_workspace.root
    (root / "jobs.py").write_text("TIMEOUT = 30\n\ndef run():\n    return 1\n")
    (root / "RULES.md").write_text("- Always retry a failed job once before giving up.\n")
    with Engine.open(root, NO_MODEL) as opened:
        yield opened


def _full_trail(monkeypatch: pytest.MonkeyPatch) -> None:
    def full(_self: AuditLog, _entries: object) -> object:
        raise sqlite3.OperationalError(FULL)

    monkeypatch.setattr(AuditLog, "append", full)
    monkeypatch.setattr(AuditLog, "add", full, raising=False)


WRITES: dict[str, Callable[[Engine, str], object]] = {
    "remember": lambda e, _mid: remember(
        e, "run() gives up after the second retry.", file="jobs.py"
    ),
    "confirm": lambda e, mid: confirm(e, mid),
    "flag": lambda e, mid: flag(e, mid, CorrectionKind.OUTDATED),
    "pin": lambda e, mid: pin(e, mid),
    "forget": lambda e, mid: forget(e, mid),
    "edit": lambda e, mid: edit(e, mid, content="run() retries the job three times."),
    "import": lambda e, _mid: import_file(e, Path(e.workspace.root) / "RULES.md"),
}


@pytest.mark.parametrize("name", list(WRITES))
def test_a_trail_that_cannot_be_written_changes_nothing(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    mid = remember(engine, "run() retries the job twice.", file="jobs.py").memory.id
    before = {m.id: m for m in engine.store.list(engine.filter(include_deprecated=True))}
    trail = audit_log(engine, mid)
    _full_trail(monkeypatch)
    with pytest.raises(EngramError) as raised:
        WRITES[name](engine, mid)
    said = str(raised.value)
    assert said.startswith("nothing was changed: the disk holding Engram's data is full"), said
    assert "\n" not in said
    monkeypatch.undo()
    after = {m.id: m for m in engine.store.list(engine.filter(include_deprecated=True))}
    assert after == before
    assert audit_log(engine, mid) == trail


def test_a_store_write_that_fails_takes_its_entries_back(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    mid = remember(engine, "run() retries the job twice.", file="jobs.py").memory.id
    trail = audit_log(engine, mid)

    def broken(_self: HybridTable, *_args: object, **_kwargs: object) -> object:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(HybridTable, "write", broken)
    with pytest.raises(OSError):
        confirm(engine, mid)
    with pytest.raises(OSError):
        remember(engine, "jobs.py's TIMEOUT is thirty seconds.", file="jobs.py")
    monkeypatch.undo()
    assert audit_log(engine, mid) == trail
    assert [e.memory_id for e in engine.audit.recent(10)] == [mid]


def test_a_write_committed_before_a_later_step_failed_keeps_its_entry(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Index upkeep or the change log failing after LanceDB committed: the memory did
    change, so its entry stays (before, the entry was never written)."""
    mid = remember(engine, "run() retries the job twice.", file="jobs.py").memory.id

    def upkeep(_self: HybridTable, *_args: object, **_kwargs: object) -> None:
        raise sqlite3.OperationalError(FULL)

    monkeypatch.setattr(HybridTable, "_after_write", upkeep)
    with pytest.raises(EngramError) as raised:
        confirm(engine, mid)
    assert "the change was stored" in str(raised.value)
    assert "disk holding Engram's data is full" in str(raised.value)
    monkeypatch.undo()
    assert [e.event for e in audit_log(engine, mid)] == ["create", "confirm"]
    with Engine.open(engine.workspace.root, NO_MODEL, read_only=True) as fresh:
        stored = fresh.store.get(mid)
        assert stored is not None and stored.user_verified


def test_a_disk_without_room_for_the_change_and_its_entry_changes_nothing(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a 24 MB tmpfs filled to its last kilobytes, the entry took the room the store
    write then lacked, and taking the entry back failed too: a change is refused first."""
    import shutil
    from collections import namedtuple

    mid = remember(engine, "run() retries the job twice.", file="jobs.py").memory.id
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: usage(24 << 20, 24 << 20, 12 << 10))
    with pytest.raises(EngramError) as raised:
        remember(engine, "run() gives up after the second retry.", file="jobs.py")
    said = str(raised.value)
    assert said.startswith("nothing was changed: the disk holding Engram's data is full (12 KB")
    with pytest.raises(EngramError, match="nothing was changed"):
        confirm(engine, mid)
    monkeypatch.undo()
    assert [m.id for m in engine.store.list()] == [mid]
    assert [e.event for e in engine.audit.recent(10)] == ["create"]
