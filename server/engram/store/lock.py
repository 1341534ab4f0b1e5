"""The inter-process writer lock of a store (``.engram/write.lock``).

LanceDB tolerates concurrent writers on a local directory only through optimistic
commits that can fail or, with compaction, drop another writer's fresh version. So every
write in Engram runs under one exclusive file lock (``filelock``: ``flock`` on POSIX,
``msvcrt`` locking on Windows): two editor windows, the CLI and the language server can
share a workspace and none of them loses data.

Waiters queue: each holder writes a fresh token into ``<lock>.holder`` when it takes the lock
(beside the lock file, which ``filelock`` truncates on every attempt), and a waiter's
deadline restarts whenever that token changes, so many writers (8 processes x 25 writes) all
get their turn however long the queue is. Only when one holder keeps the lock past the
timeout does a waiter give up with :class:`StoreLocked`, a message naming the lock file,
instead of hanging an editor forever. Polls back off (20 ms up to 200 ms, with jitter) so
waiters do not crowd the holder.

The lock is re-entrant within a process (a thread lock guards the file lock), so a write
that triggers compaction does not deadlock on itself.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from filelock import FileLock, Timeout

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
        self._file_lock = FileLock(str(path))

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
        seen = self._read_token()
        poll = _POLL_S
        while True:
            try:
                self._file_lock.acquire(timeout=0)
                break
            except Timeout:
                token = self._read_token()
                if token != seen:  # the lock changed hands: the queue moves, keep waiting
                    seen = token
                    deadline = self._clock() + self.timeout_s
                    poll = _POLL_S
                elif self._clock() >= deadline:
                    raise StoreLocked(self._locked_message()) from None
                self._sleep(poll * (0.5 + random.random()))
                poll = min(poll * 1.5, _MAX_POLL_S)
            except OSError as exc:
                raise StoreError(
                    f"cannot open the write lock {self.path}: {exc.strerror or exc}; "
                    "check that the workspace is writable"
                ) from exc
        self._write_token()

    @property
    def _token_path(self) -> Path:
        return self.path.with_name(self.path.name + ".holder")

    def _read_token(self) -> bytes:
        try:
            with self._token_path.open("rb") as fh:
                return fh.read(_TOKEN_BYTES)
        except OSError:
            return b""

    def _write_token(self) -> None:
        """Mark a new hold, so waiters see the queue move (never fails the write)."""
        token = f"{os.getpid()} {time.time_ns()} {random.getrandbits(32)}\n".encode()
        with suppress(OSError):
            self._token_path.write_bytes(token[:_TOKEN_BYTES])

    def _release_file(self) -> None:
        self._file_lock.release()

    def _locked_message(self) -> str:
        return (
            f"another Engram process has held the store lock {self.path} for more than "
            f"{self.timeout_s:g}s; close it or retry"
        )
