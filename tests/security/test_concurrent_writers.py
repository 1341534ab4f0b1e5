"""Issue 13, writers queue instead of failing: a waiter's deadline restarts whenever the lock
changes hands (engram.store.lock); only one holder keeping the lock past the timeout makes a
waiter give up.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from engram.store import MemoryStore, StoreLocked
from engram.store.lock import WriteLock
from engram.workspace import Workspace


def test_a_waiter_outlasts_its_timeout_while_the_lock_changes_hands(tmp_path: Path) -> None:
    path = tmp_path / "write.lock"
    busy = WriteLock(path, timeout_s=30)
    holding = threading.Event()

    def hand_over_and_over() -> None:
        for _ in range(10):  # 10 holds of 0.3 s, re-taken at once: 3 s in all
            with busy.hold():
                holding.set()
                time.sleep(0.3)

    holder = threading.Thread(target=hand_over_and_over)
    holder.start()
    assert holding.wait(10)
    waiter = WriteLock(path, timeout_s=1.0)
    started = time.monotonic()
    with waiter.hold():  # before: StoreLocked after 1 s, however busy the queue
        waited = time.monotonic() - started
    holder.join()
    assert waited < 30  # it got its turn (no StoreLocked) once the queue moved on


#: One "machine" remembering COUNT memories through the engine, printing each acknowledged id
#: (the shared-store tests' writer: the same use case, here on a local store).
WRITER = Path(__file__).resolve().parents[1] / "shared_store" / "writer.py"
#: The holder is starved like a process on a machine at load 15 on 2 cores, made
#: deterministic: stopped for STOP_S, then run for RUN_S (about 8% of a CPU) while it holds.
STOP_S, RUN_S = 0.6, 0.05
#: How long the holders are starved (the first writes, the table's creation included).
STARVE_FOR_S = 15.0
#: Far below how long the starved holders keep the queue waiting, far above STOP_S. 2 s
#: failed once at load 10-13 (ba894cc's CI run): the machine's own load starved the holder
#: further, below the heartbeat's CPU share for 2 s, which is the rule working as written.
TIMEOUT_S = 4.0


def _starve_holders(record: Path, pids: set[int], done: threading.Event) -> None:
    """SIGSTOP/SIGCONT whichever of ``pids`` the holder record names, for STARVE_FOR_S."""
    until = time.monotonic() + STARVE_FOR_S
    while not done.is_set() and time.monotonic() < until:
        try:
            pid = int(record.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pid = 0
        if pid not in pids:
            time.sleep(0.01)
            continue
        try:
            os.kill(pid, signal.SIGSTOP)
            time.sleep(STOP_S)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        time.sleep(RUN_S)


@pytest.mark.skipif(os.name != "posix", reason="starves the holder with SIGSTOP/SIGCONT")
# the writers' own limit (900 s each), not the suite's 300 s: 200 writes by 8 processes
# had not ended after 300 s at load 16-20 on 2 cores (the first writer still writing)
@pytest.mark.timeout(900)
def test_eight_by_twenty_five_writers_all_succeed_while_the_holder_is_starved(
    tmp_workspace: Workspace,
) -> None:
    """The issue's scenario: 8 processes x 25 ``remember`` at once, every write acknowledged
    and stored. Before, a waiter gave up after the timeout however busy the holder was: a
    starved holder keeping the lock past it made 7 of 8 writers fail."""
    env = {
        **os.environ,
        "ENGRAM_EMBED__MODEL": "none",
        "ENGRAM_INDEX__EMBED_IN_BACKGROUND": "false",
        "ENGRAM_STORE__LOCK_TIMEOUT_SECONDS": str(TIMEOUT_S),
    }
    root = str(tmp_workspace.root)
    procs = [
        subprocess.Popen(
            [sys.executable, str(WRITER), root, f"w{i}", "25"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(8)
    ]
    done = threading.Event()
    record = tmp_workspace.root / ".engram" / "write.lock.holder"
    starver = threading.Thread(
        target=_starve_holders, args=(record, {p.pid for p in procs}, done), daemon=True
    )
    starver.start()
    acknowledged: list[str] = []
    failures: list[str] = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=900)
            acknowledged += out.split()
            if proc.returncode != 0:
                failures.append(err.strip().splitlines()[-1] if err.strip() else "no stderr")
    finally:
        done.set()
        starver.join()
        for proc in procs:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
    assert failures == []
    assert len(acknowledged) == 200
    store = MemoryStore(tmp_workspace, read_only=True)
    assert {m.id for m in store.get_many(acknowledged)} == set(acknowledged)


HOLDER = """
import sys, time
from pathlib import Path
from engram.store.lock import WriteLock

lock = WriteLock(Path(sys.argv[1]), timeout_s=float(sys.argv[3]))
with lock.hold():
    print("held", flush=True)
    if sys.argv[2] == "busy":  # a slow write: making progress
        end = time.monotonic() + float(sys.argv[4])
        while time.monotonic() < end:
            sum(range(10_000))
    else:  # hung (a deadlock, a read that never returns): no CPU time used
        time.sleep(float(sys.argv[4]))
"""


def _holding(path: Path, how: str, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path), how, "0.5", str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_holder_making_progress_is_waited_for_past_the_timeout(tmp_path: Path) -> None:
    path = tmp_path / "write.lock"
    holder = _holding(path, "busy", 3.0)
    try:
        started = time.monotonic()
        with WriteLock(path, timeout_s=0.5).hold():  # before: StoreLocked after 0.5 s
            waited = time.monotonic() - started
        assert waited > 1.0
    finally:
        holder.kill()
        holder.wait()


def test_a_hung_holder_is_named_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "write.lock"
    holder = _holding(path, "hung", 60.0)
    try:
        with pytest.raises(StoreLocked) as err, WriteLock(path, timeout_s=0.5).hold():
            pass
        message = str(err.value)
        assert f"pid {holder.pid}" in message and f"kill {holder.pid}" in message
        assert "no progress" in message and "\n" not in message
    finally:
        holder.kill()
        holder.wait()
    with WriteLock(path, timeout_s=0.5).hold():  # a dead holder's lock is free at once
        pass


def test_waiters_are_served_in_order_of_arrival(tmp_path: Path) -> None:
    path = tmp_path / "write.lock"
    queue = tmp_path / "write.lock.queue"
    queue.mkdir()
    earlier = queue / f"{time.time_ns() - 10**9:020d}-{os.getpid()}-000001"
    earlier.touch()  # a live process queued a second ago (this one)
    threading.Timer(0.5, earlier.unlink).start()  # ... and gets its turn after 0.5 s
    started = time.monotonic()
    with WriteLock(path, timeout_s=5).hold():  # the lock is free, but it is not our turn
        waited = time.monotonic() - started
    assert waited >= 0.4
    stale = queue / f"{time.time_ns() - 10**9:020d}-999999999-000002"
    stale.touch()  # the ticket of a process that no longer exists is skipped at once
    waits: list[float] = []  # counted, not timed: a loaded machine paused 0.4 s at times
    with WriteLock(path, timeout_s=5, sleep=waits.append).hold():
        assert waits == []
    assert not stale.exists()


def test_one_heartbeat_thread_serves_every_hold_and_never_beats_after_release(
    tmp_path: Path,
) -> None:
    """The heartbeat is one thread for the lock's life (a thread per hold cost a warm
    remember its start-up): holds in a row reuse it, a busy hold still beats, and once a
    hold ends no beat of it overwrites the record the next holder writes."""
    lock = WriteLock(tmp_path / "write.lock", timeout_s=0.2)  # a beat every 0.05 s
    record = tmp_path / "write.lock.holder"
    threads = set()
    for _ in range(5):
        with lock.hold():
            threads.add(lock._heartbeat._thread)
            first = _settled(record)
            # busy (CPU: the beat counts it as progress) until a beat comes; 0.4 s of it
            # saw none at times on a loaded machine, where a beat every 0.05 s can wait
            deadline = time.monotonic() + 60
            while (beaten := _settled(record)) == first and time.monotonic() < deadline:
                sum(range(1000))
        assert beaten != first and beaten.split(b" ")[2] == first.split(b" ")[2]
    assert len(threads) == 1 and None not in threads
    record.write_bytes(b"4242 1 0000abcd someone else\n")  # the next holder's record
    time.sleep(0.3)
    assert record.read_bytes() == b"4242 1 0000abcd someone else\n"
    assert not lock.still_ours()


def _settled(record: Path) -> bytes:
    """The holder record once a write of it is complete (a beat truncates, then writes)."""
    for _ in range(100):
        data = record.read_bytes()
        if data.endswith(b"\n"):
            return data
        time.sleep(0.005)
    return data
