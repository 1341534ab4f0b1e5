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


def test_an_entry_whose_takeback_failed_is_pending_until_the_next_change_settles_it(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race the room check leaves (stop 30): the disk fills between the check and the
    writes, the store write fails and taking the entry back fails too. The entry stays,
    marked pending (``engram log`` says so), and the next change settles it against the
    store: a change that never landed is withdrawn, so the trail and the store agree."""
    from engram.api.render import log_text

    mid = remember(engine, "run() retries the job twice.", file="jobs.py").memory.id

    def broken(_self: HybridTable, *_args: object, **_kwargs: object) -> object:
        raise OSError(28, "No space left on device")

    def full(_self: AuditLog, *_statements: object) -> None:
        raise sqlite3.OperationalError(FULL)

    monkeypatch.setattr(HybridTable, "write", broken)
    monkeypatch.setattr(AuditLog, "_remove", full)  # the takeback finds no room
    with pytest.raises(OSError):
        confirm(engine, mid)
    with pytest.raises(OSError):
        remember(engine, "jobs.py's TIMEOUT is thirty seconds.", file="jobs.py")
    monkeypatch.undo()

    trail = audit_log(engine, mid)
    assert [(e.event, e.pending) for e in trail] == [("create", False), ("confirm", True)]
    assert "PENDING: not known to have been stored" in log_text(trail, with_id=False)
    stored = engine.store.get(mid)
    assert stored is not None and not stored.user_verified
    assert len(engine.audit.recent(10)) == 3  # the lost remember's create, pending too

    pin(engine, mid)  # the next change settles both: neither landed
    assert [(e.event, e.pending) for e in audit_log(engine, mid)] == [
        ("create", False),
        ("pin", False),
    ]
    assert [e.event for e in engine.audit.recent(10)] == ["pin", "create"]


def test_a_stored_change_whose_entry_could_not_be_marked_landed_is_kept(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store write landed and marking its entry landed failed: the entry is pending
    (never lost), and the next change finds the change in the store and keeps it."""
    mid = remember(engine, "run() retries the job twice.", file="jobs.py").memory.id

    def full(_self: AuditLog, *_statements: object) -> None:
        raise sqlite3.OperationalError(FULL)

    monkeypatch.setattr(AuditLog, "_remove", full)  # marking it landed finds no room
    confirm(engine, mid)  # stored: the failure to mark it is only logged
    made = remember(engine, "jobs.py's TIMEOUT is thirty seconds.", file="jobs.py").memory
    monkeypatch.undo()
    assert [(e.event, e.pending) for e in audit_log(engine, mid)] == [
        ("create", False),
        ("confirm", True),
    ]
    flag(engine, made.id, CorrectionKind.NOT_USEFUL)
    assert [(e.event, e.pending) for e in audit_log(engine, mid)] == [
        ("create", False),
        ("confirm", False),
    ]
    assert [(e.event, e.pending) for e in audit_log(engine, made.id)] == [
        ("create", False),
        ("flag", False),
    ]


def test_an_entry_of_a_process_that_ended_mid_write_is_settled_by_the_next(
    engine: Engine, tmp_workspace: Workspace
) -> None:
    """A process that wrote the entry and ended before its store write (killed): its
    entry is pending under a process that no longer runs, and the next change of any
    process withdraws it, while another live process's pending entry is left alone."""
    from engram.model import AuditEntry

    mid = remember(engine, "run() retries the job twice.", file="jobs.py").memory.id
    ghost, other = (
        AuditEntry(
            memory_id=mid_,
            at=engine.clock(),
            event="create",
            actor="person:Ana",
            after={"state": "active", "content": text},
        )
        for mid_, text in (("m-0000000001", "lost"), ("m-0000000002", "busy"))
    )
    dead = AuditLog(tmp_workspace)
    dead._token = "gone"
    dead.add([ghost])
    live = AuditLog(tmp_workspace)
    live.add([other])
    conn = sqlite3.connect(engine.audit.path)
    with conn:  # the first writer's process ended: a pid no process has
        conn.execute("UPDATE pending SET owner = '999999999:gone' WHERE owner LIKE '%:gone'")
    conn.close()
    dead.close()
    confirm(engine, mid)
    assert audit_log(engine, "m-0000000002")[0].pending
    assert [e.memory_id for e in engine.audit.recent(10)] == [mid, "m-0000000002", mid]
    live.close()
