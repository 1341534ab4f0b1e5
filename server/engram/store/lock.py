"""The inter-process writer lock of a store (``.engram/write.lock``).

LanceDB tolerates concurrent writers on a local directory only through optimistic
commits that can fail or, with compaction, drop another writer's fresh version. So every
write in Engram runs under one exclusive ``flock``: two editor windows, the CLI and the
language server can share a workspace and none of them loses data.

Waiters queue: each holder writes a fresh token into the lock file when it takes the lock,
and a waiter's deadline restarts whenever that token changes, so many writers (8 processes
x 25 writes) all get their turn however long the queue is. Only when one holder keeps the
lock past the timeout does a waiter give up with :class:`StoreLocked`, a message naming the
lock file, instead of hanging an editor forever. Polls back off (20 ms up to 200 ms, with
jitter) so waiters do not crowd the holder.

The lock is re-entrant within a process (a thread lock guards the flock), so a write that
triggers compaction does not deadlock on itself.
"""

from __future__ import annotations

import fcntl
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from engram.store.errors import StoreError, StoreLocked

DEFAULT_LOCK_TIMEOUT_S = 15.0
_POLL_S = 0.02
_MAX_POLL_S = 0.2
_TOKEN_BYTES = 64


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
        self._fd: int | None = None

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Hold the lock for the duration of the ``with`` block."""
        deadline = self._clock() + self.timeout_s
        if not self._thread_lock.acquire(timeout=max(self.timeout_s, 0.0)):
            raise StoreLocked(self._locked_message())
        try:
            if self._depth == 0:
                self._acquire_file(deadline)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._release_file()
        finally:
            self._thread_lock.release()

    def _acquire_file(self, deadline: float) -> None:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(
                f"cannot open the write lock {self.path}: {exc.strerror or exc}; "
                "check that the workspace is writable"
            ) from exc
        seen = _read_token(fd)
        poll = _POLL_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                token = _read_token(fd)
                if token != seen:  # the lock changed hands: the queue moves, keep waiting
                    seen = token
                    deadline = self._clock() + self.timeout_s
                    poll = _POLL_S
                elif self._clock() >= deadline:
                    os.close(fd)
                    raise StoreLocked(self._locked_message()) from None
                self._sleep(poll * (0.5 + random.random()))
                poll = min(poll * 1.5, _MAX_POLL_S)
        self._fd = fd
        _write_token(fd)

    def _release_file(self) -> None:
        if self._fd is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None

    def _locked_message(self) -> str:
        return (
            f"another Engram process has held the store lock {self.path} for more than "
            f"{self.timeout_s:g}s; close it or retry"
        )


def _read_token(fd: int) -> bytes:
    try:
        return os.pread(fd, _TOKEN_BYTES, 0)
    except OSError:
        return b""


def _write_token(fd: int) -> None:
    """Mark a new hold, so waiters see the queue move (never fails the write)."""
    token = f"{os.getpid()} {time.time_ns()} {random.getrandbits(32)}\n".encode()
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, token[:_TOKEN_BYTES], 0)
    except OSError:
        pass
