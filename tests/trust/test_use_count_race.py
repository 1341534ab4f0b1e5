"""Counting a use never loses another process's write (docs/trust.md, "Usage is not confidence").

A read counts one use (``app.recall.record_access``). Until stop 32 it read the records,
added one to ``access_count`` and wrote the whole records back, under the engine's own
lock only: a command that ran in-process because no engine answered, counting a search's
hits while the engine confirmed one of them, wrote the record it had read before the
confirm back over it, and the confirm was gone (a lost update); a session credited the
same way brought a flagged memory back. Now a use is counted, and a trust move made, on
the record as the store holds it under its writer lock (``MemoryStore.locked``), so
neither loses the other.

The interleaving is injected: the other process's write is started at the moment the
command has the record in hand, and given time to land before the command writes.
"""

from __future__ import annotations

import os
import threading

import pytest

from engram.app import Engine, recall
from engram.app.memories import confirm, flag
from engram.app.remember import remember
from engram.lifecycle import trust as rules
from engram.model import Memory


def _interleaved(
    monkeypatch: pytest.MonkeyPatch, command: Engine, other: threading.Thread
) -> threading.Event:
    """When the command has a record in hand to change it, the other write starts and
    may land (1 s) before the command writes."""
    started = threading.Event()
    store = command.store
    memory_at = store._memory_at

    def read_while_another_writes(row: int, keep: bool = True) -> Memory | None:
        found = memory_at(row, keep)
        if not started.is_set():
            started.set()
            other.start()
            other.join(timeout=1.0)  # blocked by the writer lock: the command goes first
        return found

    monkeypatch.setattr(store, "_memory_at", read_while_another_writes)
    return started


def test_a_use_counted_in_process_never_undoes_the_engines_confirm(
    two: tuple[Engine, Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, command = two
    memory = remember(engine, "The job timeout in jobs.py is 30s.", scope="global").memory
    assert command.store.get(memory.id) is not None  # the command has seen it
    confirmed = threading.Thread(target=confirm, args=(engine, memory.id))
    started = _interleaved(monkeypatch, command, confirmed)

    recall.record_access(command, [memory.id])
    confirmed.join(timeout=30)
    assert started.is_set() and not confirmed.is_alive()

    for store in (engine, command):
        stored = store.store.get(memory.id)
        assert stored is not None
        assert rules.state_of(stored) is rules.TrustState.VERIFIED, stored
        assert stored.access_count == 1, stored
    assert engine.audit.for_memory(memory.id)[-1].event == "confirm"


def test_a_session_credited_in_process_never_undoes_the_engines_flag(
    two: tuple[Engine, Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, command = two
    memory = remember(engine, "run() retries the job by default.", scope="global").memory
    assert command.store.get(memory.id) is not None
    flagged = threading.Thread(target=flag, args=(engine, memory.id, "not_useful"))
    started = _interleaved(monkeypatch, command, flagged)

    assert recall.credit_session(command, [memory.id], "s-1") == 1
    flagged.join(timeout=30)
    assert started.is_set() and not flagged.is_alive()
    stored = engine.store.get(memory.id)
    assert stored is not None
    assert rules.state_of(stored) is rules.TrustState.FLAGGED, stored
    assert stored.provenance.confirmed_by_sessions == ["s-1"]


def test_a_use_counted_after_another_process_wrote_in_the_same_tick_sees_its_write(
    two: tuple[Engine, Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a file system whose timestamps are coarse (a second on ext3 or HFS+, two on
    FAT; the store allows 2 s), another process's write in the same tick as ours leaves
    ``_versions/`` looking as our own write left it. The store took that for "nothing new"
    whenever the writer lock's record was its own, which it always is inside a hold: so
    inside ``locked()`` the record read was the one before the other's confirm, and the
    use counted wrote it back over it (stop 33). Timestamps are cut to the second here,
    and the three writes start at a second's beginning (on the old code the confirm was
    lost whenever they ended within it)."""
    import time
    import types

    from engram.store import hybrid

    def coarse_stat(path: object) -> object:
        st = os.stat(path)  # type: ignore[call-overload]
        second = st.st_mtime_ns // 1_000_000_000 * 1_000_000_000
        return types.SimpleNamespace(st_ino=st.st_ino, st_mtime_ns=second, st_size=st.st_size)

    monkeypatch.setattr(hybrid, "os", types.SimpleNamespace(stat=coarse_stat))
    engine, command = two
    memory = remember(engine, "The job timeout in jobs.py is 30s.", scope="global").memory
    time.sleep(1 - time.time() % 1 + 0.01)  # the three writes within one second
    recall.record_access(command, [memory.id])  # the command's own write: its stamp
    confirm(engine, memory.id)  # the engine's, in the same second
    recall.record_access(command, [memory.id])
    stored = engine.store.get(memory.id)
    assert stored is not None
    assert rules.state_of(stored) is rules.TrustState.VERIFIED, stored
    assert stored.access_count == 2, stored
