"""A window of time on when memories became true (``Memory.valid_from``).

Queries that name a date ("in March 2024", "on 3 June", "last week") ask about memories
recorded then; :func:`engram.retrieval.timeframe.find_timeframe` turns the words into a
:class:`TimeWindow` and :class:`engram.store.MemoryFilter` searches inside it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:  # NumPy loads only when a store masks rows: `engram serve` starts without it
    import numpy as np
    import numpy.typing as npt

__all__ = ["TimeWindow"]


def _month_day(moment: datetime) -> int:
    return moment.month * 32 + moment.day


@attrs.frozen
class TimeWindow:
    """``start <= valid_from < end`` (UTC).

    ``every_year``: a date named without a year ("on 3 June", "in March") matches that
    stretch of the calendar in any year, as the reader would (``start``/``end`` then give
    the month and day bounds, in their most recent occurrence). ``text`` is the phrase
    that named it.
    """

    start: datetime
    end: datetime
    every_year: bool = False
    text: str = ""

    def contains(self, when: datetime) -> bool:
        moment = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
        if not self.every_year:
            return self.start <= moment < self.end
        low, high, whole_year = self._calendar_bounds()
        day = _month_day(moment)
        if whole_year:
            return True
        return low <= day < high if low <= high else (day >= low or day < high)

    def mask(self, timestamps: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
        """Which POSIX ``timestamps`` (seconds, UTC) fall in the window."""
        import numpy as np

        stamps = np.asarray(timestamps, dtype=np.float64)
        if not self.every_year:
            return (stamps >= self.start.timestamp()) & (stamps < self.end.timestamp())
        finite = np.isfinite(stamps)
        moments = np.where(finite, stamps, 0).astype("int64").astype("datetime64[s]")
        months = moments.astype("datetime64[M]")
        month = months.astype(np.int64) % 12 + 1
        day = (moments.astype("datetime64[D]") - months.astype("datetime64[D]")).astype(
            np.int64
        ) + 1
        return self._calendar_mask(month * 32 + day) & finite

    def _calendar_bounds(self) -> tuple[int, int, bool]:
        """Month-day bounds of an ``every_year`` window, and whether it spans a year."""
        low, high = _month_day(self.start), _month_day(self.end)
        return low, high, self.end.year > self.start.year and high >= low

    def _calendar_mask(self, month_days: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        import numpy as np

        low, high, whole_year = self._calendar_bounds()
        if whole_year:
            return np.ones(month_days.shape, dtype=np.bool_)
        if low <= high:
            return (month_days >= low) & (month_days < high)
        return (month_days >= low) | (month_days < high)  # across New Year
