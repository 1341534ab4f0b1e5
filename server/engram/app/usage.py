"""The uses reads count, written later, together, off every read's path.

A search or context pack hands out memories; each counts one use (``access_count``,
docs/trust.md: usage may rank within a cap, it is not confidence). Written inside the read,
that was a LanceDB write per ``engram_context`` in-process (about 80 of its 184 profiled
milliseconds, a table version each time) and, in the engine process, a write every two
seconds of an agent's session: a version each, an event to every editor window, a
twentieth of a compaction, and a memory handed out five times in those seconds counted
once. Standard library only: the engine holds one (``Engine.uses``).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram.model import Memory
    from engram.store import MemoryStore

log = logging.getLogger(__name__)

#: How long a use a read counted waits before it is written (with every use counted
#: meanwhile, in one store write); closing the engine writes what waits at once.
USES_WRITE_SECONDS = 30.0


class PendingUses:
    """A read only adds its ids here; the uses are written, each memory's added up, by
    ``write`` (``Engine.count_uses``) on a timer :data:`USES_WRITE_SECONDS` after the first
    one waiting, or when the engine closes (a CLI command after printing its answer, the
    engine process at its stop): no use is lost at a clean exit. A process killed
    meanwhile loses the uses still waiting: bookkeeping, never a memory, its state or its
    confidence.
    """

    def __init__(
        self, write: Callable[[Mapping[str, int]], None], seconds: float = USES_WRITE_SECONDS
    ) -> None:
        self._write = write
        self._seconds = seconds
        self._uses: Counter[str] = Counter()
        self._lock = threading.Lock()  # the counts and the timer
        self._writing = threading.Lock()  # one write at a time; close waits for it
        self._timer: threading.Timer | None = None
        self._closed = False

    def add(self, ids: Sequence[str]) -> None:
        """One read handed out ``ids``: one use each, written later."""
        with self._lock:
            self._uses.update(dict.fromkeys(ids, 1))
            closed = self._closed
            if self._timer is None and not closed and self._uses:
                self._timer = threading.Timer(self._seconds, self.write)
                self._timer.name = "engram-uses"
                self._timer.daemon = True
                self._timer.start()
        if closed:  # a read on an engine already closing: nothing would write it later
            self.write()

    @property
    def waiting(self) -> dict[str, int]:
        """The uses not written yet, by memory id."""
        with self._lock:
            return dict(self._uses)

    def write(self) -> None:
        """Write every use waiting now (one store write)."""
        with self._writing:
            with self._lock:
                uses, self._uses = self._uses, Counter()
                timer, self._timer = self._timer, None
            if timer is not None and timer is not threading.current_thread():
                timer.cancel()
            if not uses:
                return
            try:
                self._write(uses)
            except Exception as exc:  # bookkeeping must never fail anything
                log.info("could not record access: %s", exc)

    def close(self) -> None:
        """The engine is closing: write what waits; a later use is written at once."""
        with self._lock:
            self._closed = True
        self.write()


def write_uses(
    store: MemoryStore,
    uses: Mapping[str, int],
    *,
    lock: AbstractContextManager[object],
    mirror: Callable[[Sequence[Memory]], None],
) -> None:
    """Count ``uses[id]`` uses of each memory in one store write, under the engine's
    ``lock`` and the store's writer lock, and ``mirror`` it (the agents' digest). Nothing
    else changes (docs/trust.md: usage is not confidence, never moves the state or the
    decay clock)."""
    from engram.lifecycle.trust import count_use

    # the records are read and written back under the store's writer lock: read before
    # it, a use counted by a command running in-process beside the engine wrote the
    # record as it was back over the engine's confirm made meanwhile (a lost update)
    with lock, store.locked():
        found = store.get_many(list(uses))
        if not found:
            return
        used = []
        for memory in found:
            for _ in range(uses[memory.id]):
                memory = count_use(memory)
            used.append(memory)
        store.update(used)
        mirror(used)


__all__ = ["USES_WRITE_SECONDS", "PendingUses", "write_uses"]
