"""The one progress callback every long step reports through.

``progress(done, total, message)``: ``done`` items of ``total`` (``None`` when unknown),
``message`` what is being worked on (a file, "embedding"). The CLI draws it as a bar on
stderr, the language server as ``$/progress``; indexing, history mining, embedding and
consolidation call it the same way, so no front end adapts one signature to another.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import sqlite3


class Progress(Protocol):
    def __call__(self, done: int, total: int | None, message: str = "") -> None: ...


class PhaseBar:
    """One progress bar for a run of phases, each counting from 0 again: ``(done, total,
    message)`` becomes ``(text, percentage)``, or ``None`` when it is not news yet (within
    ``interval`` seconds of the last, in the same phase, before the phase's end).

    The text names the phase (the longest of ``phases`` the message is, or begins with
    followed by ": "), never a file it is at, and a phase once left is not reported again;
    the percentage moves through the phase's band (from its start to the next phase's) and
    never goes back. ``phases``: ``(name, start
    percentage)`` in the order they run. The editor's ``$/progress`` said "indexing
    18076/18076", then "indexing 256/18078" once resolution counted again (stop 29)."""

    def __init__(
        self,
        phases: Sequence[tuple[str, int]],
        default: str = "working",
        *,
        interval: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.phases = list(phases)
        self.default = default
        self.interval = interval
        self.clock = clock
        self.percentage: int | None = None
        self._phase: str | None = None
        self._at: int | None = None
        self._last: float | None = None

    def __call__(
        self, done: int, total: int | None, message: str = ""
    ) -> tuple[str, int | None] | None:
        found = [
            (n, i)
            for i, (n, _) in enumerate(self.phases)
            if message == n or message.startswith(f"{n}: ")
        ]
        name, at = max(found, key=lambda f: len(f[0])) if found else (message, None)
        name = name or self.default
        if at is not None and self._at is not None and at < self._at:
            return None  # a phase left is not gone back to (the graph's closing summary)
        now = self.clock()
        news = name != self._phase or done == total
        if not news and self._last is not None and now - self._last < self.interval:
            return None
        self._phase, self._last = name, now
        if at is not None:
            self._at = at
            start = self.phases[at][1]
            end = self.phases[at + 1][1] if at + 1 < len(self.phases) else 100
            share = min(1.0, done / total) if total else 0.0
            pct = int(start + (end - start) * share)
            self.percentage = pct if self.percentage is None else max(self.percentage, pct)
        return f"{name} {done}/{total}" if total else f"{name} {done}", self.percentage


@contextmanager
def statements_cancelled_by(
    conn: sqlite3.Connection,
    cancel: Callable[[], bool] | None,
    stopped: type[Exception],
    steps: int,
) -> Iterator[None]:
    """Let ``cancel`` interrupt the SQLite statements run on ``conn`` inside (a progress
    handler every ``steps`` virtual-machine steps); their "interrupted" error becomes
    ``stopped``. One statement can run for seconds (a ``CREATE INDEX`` at 58k files, the
    co-change fit's read of every commit), long past the ~1 s a stop may take."""
    import sqlite3

    if cancel is None:
        yield
        return
    conn.set_progress_handler(lambda: bool(cancel()), steps)
    try:
        yield
    except sqlite3.OperationalError as exc:
        if "interrupted" in str(exc) and cancel():
            raise stopped from exc
        raise
    finally:
        conn.set_progress_handler(None, 0)


__all__ = ["PhaseBar", "Progress", "statements_cancelled_by"]
