"""Progress as plain lines, for a stderr that is not a terminal (CI logs, agents' tool calls,
``engram index 2> log``, and every command the workspace's engine runs for a thin CLI).

A progress bar redraws one line with control characters, which a log shows as garbage, so
rich's bar is switched off there; that left an index of a large repository silent for
minutes (issue 16). :class:`ProgressLines` is the same :class:`~engram.progress.Progress`
callback written as one line at most every :data:`INTERVAL_SECONDS`, plus the first update
at once and a last line with the total and the time taken (docs/cli.md, "progress").
File names come from the repository, so control characters in them are replaced.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from engram.quoting import replace_controls

#: The shortest time between two progress lines of one step.
INTERVAL_SECONDS = 5.0
#: A longer message (a deep path) is cut in the middle to this many characters.
MAX_MESSAGE = 100


def printable(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` on one line with no control or format characters, at most ``limit`` long
    (:func:`engram.quoting.replace_controls`, the one rule for them)."""
    cleaned = replace_controls(text.replace("\t", " "), "?")
    if len(cleaned) > limit:
        half = (limit - 1) // 2
        cleaned = cleaned[:half] + "…" + cleaned[-(limit - 1 - half) :]
    return cleaned


def _duration(seconds: float) -> str:
    whole = int(seconds)
    if whole < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{rest:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class ProgressLines:
    """A :class:`~engram.progress.Progress` that writes ``engram: LABEL: DONE/TOTAL (P%)
    MESSAGE [ELAPSED]`` lines through ``write`` (each ends with a newline)."""

    def __init__(
        self,
        label: str,
        write: Callable[[str], object],
        *,
        interval: float = INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = printable(label)
        self._write = write
        self._interval = interval
        self._clock = clock
        self._started = clock()
        self._last: float | None = None
        self._done = 0
        self._total: int | None = None

    def __call__(self, done: int, total: int | None, message: str = "") -> None:
        self._done, self._total = done, total
        now = self._clock()
        if self._last is not None and now - self._last < self._interval:
            return
        self._last = now
        count = f"{done}/{total}" if total else f"{done}"
        share = f" ({100 * done // total}%)" if total else ""
        what = f" {printable(message)}" if message else ""
        elapsed = _duration(now - self._started)
        self._line(f"{self.label}: {count}{share}{what} [{elapsed}]")

    def finish(self) -> None:
        """The last line, once something was reported: how much, in how long."""
        if self._last is None:
            return
        elapsed = _duration(self._clock() - self._started)
        count = self._total if self._total else self._done
        self._line(f"{self.label}: done, {count} in {elapsed}")

    def _line(self, text: str) -> None:
        self._write(f"engram: {text}\n")


__all__ = ["INTERVAL_SECONDS", "ProgressLines", "printable"]
