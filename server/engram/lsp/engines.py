"""Who is using a folder's engine: leases, so a swap never closes one under a worker.

A settings change can replace a folder's in-process :class:`~engram.app.Engine`, and a
removed workspace folder or a lost connection replaces its link to the workspace engine,
while worker threads are still inside the old one (a command, a snapshot for diagnostics,
the editor event worker, an index). Every such user holds a :class:`Lease`; a swap makes
the new value current at once and closes the old one when its last lease is returned,
never before and never later (the old server kept every replaced engine open until
shutdown). docs/lsp.md "Settings" and docs/architecture.md ("engram.lsp").

Thread-safe: leases are taken on the event loop and returned from worker threads.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class Lease(Generic[T]):
    """One use of a slot's value; :meth:`release` exactly once (``with`` does it)."""

    def __init__(self, slot: Slot[T], value: T, who: str) -> None:
        self._slot = slot
        self.value = value
        self.who = who
        self._released = False

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._slot._returned(self)

    def __enter__(self) -> T:
        return self.value

    def __exit__(self, *_exc: object) -> None:
        self.release()


class Slot(Generic[T]):
    """The current value (an engine, a link) and how many leases each value has out."""

    def __init__(self, close: Callable[[T], None], what: str) -> None:
        self._close = close
        self._what = what
        self._lock = threading.Lock()
        self._current: T | None = None
        #: leases out, by ``id`` of the value (values need not be hashable)
        self._uses: dict[int, int] = {}
        #: replaced values still leased: closed when their count reaches zero
        self._draining: dict[int, T] = {}
        #: who holds the leases out (a log line names them when a swap must wait)
        self._holders: dict[int, list[str]] = {}

    @property
    def current(self) -> T | None:
        """The value new work should use (``None``: there is none)."""
        return self._current

    def acquire(self, who: str) -> Lease[T] | None:
        """A lease on the current value for ``who`` (named in logs), or ``None``."""
        with self._lock:
            value = self._current
            if value is None:
                return None
            self._uses[id(value)] = self._uses.get(id(value), 0) + 1
            self._holders.setdefault(id(value), []).append(who)
            return Lease(self, value, who)

    @contextlib.contextmanager
    def hold(self, who: str) -> Iterator[T | None]:
        """``with slot.hold(who) as value:`` the current value, leased for the block."""
        lease = self.acquire(who)
        try:
            yield None if lease is None else lease.value
        finally:
            if lease is not None:
                lease.release()

    def set(self, value: T | None) -> None:
        """Make ``value`` current; the one it replaces is closed once nobody uses it.

        Blocking when the replaced value is idle (its ``close`` runs here): call it from a
        worker thread, or accept that closing an idle engine is short.
        """
        with self._lock:
            old = self._current
            self._current = value
            idle = old is not None and old is not value and not self._uses.get(id(old))
            waits_for: list[str] = []
            if old is not None and old is not value and not idle:
                self._draining[id(old)] = old
                waits_for = list(self._holders.get(id(old), []))
        if waits_for:
            log.info("the replaced %s closes after: %s", self._what, ", ".join(waits_for))
        if idle and old is not None:
            self._close_quietly(old)

    def close(self) -> None:
        """Retire the current value (shutdown, folder removed): closed when drained."""
        self.set(None)

    @property
    def draining(self) -> int:
        """How many replaced values wait for their last lease (for tests and logs)."""
        with self._lock:
            return len(self._draining)

    def _returned(self, lease: Lease[T]) -> None:
        with self._lock:
            key = id(lease.value)
            holders = self._holders.get(key, [])
            if lease.who in holders:
                holders.remove(lease.who)
            left = self._uses.get(key, 0) - 1
            if left > 0:
                self._uses[key] = left
                return
            self._uses.pop(key, None)
            self._holders.pop(key, None)
            retired = self._draining.pop(key, None)
        if retired is not None:
            log.info("closing a replaced %s: its last user finished", self._what)
            self._close_quietly(retired)

    def _close_quietly(self, value: T) -> None:
        try:
            self._close(value)
        except Exception as exc:  # closing must never fail a request or the shutdown
            log.debug("%s close failed: %s", self._what, exc)
