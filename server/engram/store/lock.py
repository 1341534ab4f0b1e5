"""The inter-process writer lock of a store (``.engram/write.lock``).

LanceDB tolerates concurrent writers on a local directory only through optimistic
commits that can fail or, with compaction, drop another writer's fresh version. So every
write in Engram runs under one exclusive file lock (``filelock``: ``flock`` on POSIX,
``msvcrt`` locking on Windows): two editor windows, the CLI and the language server can
share a workspace and none of them loses data.

**Waiters give up only on a holder that makes no progress** (docs/security.md "Robust
inputs and nothing silently out of sync"). A fixed timeout cannot tell a stuck holder from a
slow one: on a loaded machine one write (the first one creates the table and its text
index) can take longer than any timeout
while it is making progress, and every waiter behind it then failed. Instead:

* The holder writes a record into ``<lock>.holder`` (beside the lock file, which ``filelock``
  truncates on every attempt): its pid, a counter and the command it runs. While it holds
  the lock a heartbeat thread bumps the counter every ``timeout / 4`` seconds, but only when
  the process used CPU time since the last beat (at least :data:`_MIN_CPU_SHARE` of one CPU,
  counting its other threads: the heartbeat's own time is left out). A starved holder still
  gets some CPU and keeps beating; a hung one (blocked forever, stopped) does not.
* A waiter's deadline restarts whenever that record changes (the lock changed hands or the
  holder beat) or the head of the queue changes. Only ``timeout_s`` without any of that
  makes it give up with :class:`StoreLocked`, one line naming the holder's pid and command
  and how to end it. A dead holder needs nothing: the operating system drops the lock of a
  process that exits (``flock``), and the next holder overwrites its record.
* Waiters are served roughly in order: each one that has to wait puts a ticket (a file named
  by its arrival time) into ``<lock>.queue/`` and touches it while it waits; only the oldest
  live ticket tries the lock, so a process that has just released the lock and wants it
  again (a batch of writes) queues behind the others instead of barging in. Tickets of dead
  processes, or not touched for :data:`STALE_TICKET_S`, are skipped and removed, so a
  crashed waiter never blocks the queue for more than that.

The lock is re-entrant within a process (a thread lock guards the file lock), so a write
that triggers compaction does not deadlock on itself; threads of one process waiting for
each other follow the same progress rule.
"""

from __future__ import annotations

import logging
import os
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import attrs
from filelock import FileLock, Timeout

from engram.store.errors import StoreError, StoreLocked

log = logging.getLogger(__name__)

DEFAULT_LOCK_TIMEOUT_S = 15.0
#: How often the head of the queue tries the lock (seconds, with jitter).
_HEAD_POLL_S = 0.015
#: How often the rest of the queue looks at the holder and the queue (seconds, with jitter).
_QUEUE_POLL_S = 0.1
#: A waiter touches its ticket this often; one not touched for STALE_TICKET_S is skipped.
_TICKET_REFRESH_S = 1.0
STALE_TICKET_S = 10.0
_RECORD_BYTES = 256
#: The least share of one CPU a holder must use between beats to count as working: a
#: starved write gets several percent even at load 15 on 2 cores; a hung process idles
#: (an event loop waking now and then stays far below).
_MIN_CPU_SHARE = 0.005
#: The heartbeat thread ends after this long without a hold (the next hold starts one).
_HEARTBEAT_IDLE_S = 30.0


@attrs.frozen
class Holder:
    """What ``<lock>.holder`` says about the process holding the lock."""

    pid: int | None
    command: str

    @classmethod
    def parse(cls, record: bytes) -> Holder:
        """``b"<pid> <counter> <nonce> <command>"`` (anything else: unknown holder)."""
        parts = record.decode("utf-8", "replace").strip().split(" ", 3)
        pid = int(parts[0]) if parts and parts[0].isdigit() else None
        return cls(pid, parts[3] if len(parts) == 4 else "")

    def describe(self) -> str:
        if self.pid is None:
            return "another process"
        return f"pid {self.pid}" + (f" ({self.command})" if self.command else "")


def _command() -> str:
    """The running command in a few words (``engram remember``), for the holder record."""
    words = [Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python", *sys.argv[1:2]]
    text = " ".join(words)
    return "".join(ch if ch.isprintable() else "?" for ch in text)[:80]


def _pid_alive(pid: int) -> bool:
    """False only when ``pid`` certainly does not exist here (POSIX ``kill(pid, 0)``)."""
    if os.name != "posix":  # os.kill on Windows terminates: never probe there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


class _Heartbeat:
    """Bumps the holder record while the holding process uses CPU (see the module doc).

    One thread per lock for the lock's life, idle between holds: a thread started and
    joined for every hold cost a warm ``remember`` 2-8 ms of thread start-up at load 10.
    :meth:`end` returns only when no beat can follow (a beat writes under ``_mutex`` and
    only while holding), so a beat never overwrites the next holder's record.
    """

    def __init__(self, lock: WriteLock, interval_s: float) -> None:
        self._lock = lock
        self._interval = interval_s
        self._mutex = threading.Lock()
        self._wake = threading.Condition(self._mutex)
        self._holding = False
        self._hold = 0  # which hold the thread is beating for
        self._thread: threading.Thread | None = None

    def begin(self) -> None:
        with self._mutex:
            self._holding = True
            self._hold += 1
            self._wake.notify()
            thread = self._thread
            if thread is None:
                thread = self._thread = threading.Thread(
                    target=self._run, name="engram-lock-heartbeat", daemon=True
                )
            else:
                return
        try:
            thread.start()
        except RuntimeError:  # no thread to spare: waiters then see a slow holder as hung
            log.warning("cannot start the store lock heartbeat; waiters may give up early")
            with self._mutex:
                self._thread = None

    def end(self) -> None:
        with self._mutex:
            self._holding = False
            self._wake.notify()

    def _run(self) -> None:
        least = max(self._interval * _MIN_CPU_SHARE, 0.001)
        while True:
            with self._mutex:
                while not self._holding:
                    if not self._wake.wait(_HEARTBEAT_IDLE_S) and not self._holding:
                        self._thread = None  # the next hold starts another
                        return
                hold = self._hold
            used = time.process_time() - time.thread_time()
            while True:
                with self._mutex:
                    self._wake.wait_for(lambda: not self._holding, self._interval)
                    if not self._holding or self._hold != hold:
                        break
                    if time.process_time() - time.thread_time() - used >= least:
                        self._lock._write_record()
                used = time.process_time() - time.thread_time()


class _Patience:
    """A waiter's deadline, restarted whenever what it watches changes."""

    def __init__(self, timeout_s: float, clock: Callable[[], float], seen: object) -> None:
        self._timeout = timeout_s
        self._clock = clock
        self._seen = seen
        self._deadline = clock() + timeout_s

    def expired(self, now_seen: object) -> bool:
        if now_seen != self._seen:
            self._seen = now_seen
            self._deadline = self._clock() + self._timeout
            return False
        return self._clock() >= self._deadline


class _Ticket:
    """One waiter's place in ``<lock>.queue/`` (a file named by arrival time and pid)."""

    def __init__(self, queue: Path) -> None:
        self.queue = queue
        self.name = f"{time.time_ns():020d}-{os.getpid()}-{random.getrandbits(24):06x}"
        self._touched = 0.0
        self.refresh(force=True)

    @property
    def path(self) -> Path:
        return self.queue / self.name

    def refresh(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._touched < _TICKET_REFRESH_S:
            return
        self._touched = now
        with suppress(OSError):
            try:
                os.utime(self.path)
            except FileNotFoundError:  # first call, or removed as stale while we slept
                self.queue.mkdir(exist_ok=True)
                self.path.touch()

    def leave(self) -> None:
        with suppress(OSError):
            self.path.unlink()


def _head(queue: Path) -> str | None:
    """The oldest live ticket in ``queue`` (removing dead and stale ones on the way)."""
    try:
        names = sorted(os.listdir(queue))
    except OSError:
        return None
    now = time.time()
    for name in names:
        path = queue / name
        pid_text = name.split("-")[1] if name.count("-") >= 2 else ""
        try:
            fresh = now - path.stat().st_mtime < STALE_TICKET_S
        except OSError:
            continue
        alive = not pid_text.isdigit() or _pid_alive(int(pid_text))
        if fresh and alive:
            return name
        with suppress(OSError):
            path.unlink()
    return None


class WriteLock:
    """An exclusive, re-entrant, inter-process lock on one file."""

    def __init__(
        self,
        path: Path,
        timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.path = path
        self.timeout_s = timeout_s
        self._clock = clock
        self._sleep = sleep
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._file_lock = FileLock(str(path))
        self._counter = 0
        self._nonce = 0
        self._heartbeat = _Heartbeat(self, max(timeout_s / 4, 0.05))

    @property
    def _record_path(self) -> Path:
        return self.path.with_name(self.path.name + ".holder")

    @property
    def _queue(self) -> Path:
        return self.path.with_name(self.path.name + ".queue")

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Hold the lock for the duration of the ``with`` block."""
        self._acquire_thread()
        try:
            if self._depth == 0:
                self._acquire_file()
                self._heartbeat.begin()
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._heartbeat.end()
                    self._file_lock.release()
        finally:
            self._thread_lock.release()

    def _acquire_thread(self) -> None:
        """Another thread of this process holds it: wait while that holder progresses."""
        if self._thread_lock.acquire(blocking=False):
            return
        patience = _Patience(self.timeout_s, self._clock, self._read_record())
        while not self._thread_lock.acquire(timeout=_QUEUE_POLL_S):
            record = self._read_record()
            if patience.expired(record):
                raise StoreLocked(self._stuck_message(record))

    def _acquire_file(self) -> None:
        ticket: _Ticket | None = None
        record = self._read_record()
        patience = _Patience(self.timeout_s, self._clock, (record, None))
        try:
            while True:
                head = _head(self._queue)
                my_turn = head is None or (ticket is not None and head >= ticket.name)
                if my_turn and self._try_file():
                    break
                record = self._read_record()
                if patience.expired((record, head)):
                    raise StoreLocked(self._stuck_message(record))
                if ticket is None:
                    ticket = _Ticket(self._queue)
                else:
                    ticket.refresh()
                poll = _HEAD_POLL_S if my_turn else _QUEUE_POLL_S
                self._sleep(poll * (0.5 + random.random()))
        finally:
            if ticket is not None:
                ticket.leave()
        if not self._record_is_ours():
            # a new hold id, unless this hold follows our own with nobody's between (every
            # holder writes its record first): then what our last hold wrote is still the
            # latest, and a store keeps trusting it (``still_ours(hold)``)
            self._nonce = random.getrandbits(32) or 1  # 0: never held (``still_ours``)
            self._counter = 0
        self._write_record()

    def _try_file(self) -> bool:
        try:
            self._file_lock.acquire(timeout=0)
        except Timeout:
            return False
        except OSError as exc:
            raise StoreError(
                f"cannot open the write lock {self.path}: {exc.strerror or exc}; "
                "check that the workspace is writable"
            ) from exc
        return True

    @property
    def hold_id(self) -> int:
        """Which hold of this object is the last (0: never held): :meth:`still_ours` of a
        write made in it."""
        return self._nonce

    def still_ours(self, hold: int | None = None) -> bool:
        """True when nobody has taken the lock since this object last held it: the holder
        record is still the one our last hold wrote (our pid and that hold's nonce; a beat
        changes only the counter). Another process's hold, or another ``WriteLock`` on the
        same file in this process, writes its own record first.

        ``hold``: the :attr:`hold_id` a write was made in, and nobody may have taken the
        lock since that write: inside a later hold of ours the record is ours whoever held
        the lock between the two (stop 33: a store then missed another process's write), so
        a hold keeps the id of the one before it only when nobody's came between."""
        if hold is not None and hold != self._nonce:
            return False  # held again since that write, with another's hold between
        return self._record_is_ours()

    def _record_is_ours(self) -> bool:
        """The holder record is the one this object's last hold wrote (0: never held)."""
        if self._nonce == 0:
            return False
        parts = self._read_record().split(b" ", 3)
        return (
            len(parts) >= 3
            and parts[0] == str(os.getpid()).encode()
            and parts[2] == f"{self._nonce:08x}".encode()
        )

    def _read_record(self) -> bytes:
        try:
            with self._record_path.open("rb") as fh:
                return fh.read(_RECORD_BYTES)
        except OSError:
            return b""

    def _write_record(self) -> None:
        """A new hold or a beat: waiters see progress (never fails the write)."""
        self._counter += 1
        record = f"{os.getpid()} {self._counter} {self._nonce:08x} {_command()}\n".encode()
        with suppress(OSError):
            self._record_path.write_bytes(record[:_RECORD_BYTES])

    def _stuck_message(self, record: bytes) -> str:
        holder = Holder.parse(record)
        if holder.pid is not None and not _pid_alive(holder.pid):
            holder = Holder(None, "")  # the record of a holder long gone: say so plainly
        how = (
            f"if it is hung, stop it (kill {holder.pid}) and retry"
            if holder.pid is not None
            else f"find it with `lsof {self.path}`, stop it and retry"
        )
        return (
            f"the store lock {self.path} is held by {holder.describe()}, which has made no "
            f"progress for {self.timeout_s:g}s; {how}"
        )
