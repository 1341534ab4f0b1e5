"""Dates named in a query become a time window on ``valid_from`` (engram.retrieval.timeframe)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from engram.model.timewindow import TimeWindow
from engram.retrieval.timeframe import find_timeframe

NOW = datetime(2026, 11, 26, 15, 0, tzinfo=UTC)


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "start", "end", "every_year"),
    [
        # a named day, with a day of slack on each side
        ("what did we decide on 8th December, 2023?", day(2023, 12, 7), day(2023, 12, 10), False),
        ("the movie on October 13, 2023", day(2023, 10, 12), day(2023, 10, 15), False),
        ("errors from 2024-03-05", day(2024, 3, 4), day(2024, 3, 7), False),
        ("what happened on 1 February, 2023", day(2023, 1, 31), day(2023, 2, 3), False),
        # months and years
        ("what did John host in May 2023", day(2023, 5, 1), day(2023, 6, 1), False),
        ("which releases shipped in 2023?", day(2023, 1, 1), day(2024, 1, 1), False),
        # "the week before" a day
        (
            "where was Tim the week before 16 November 2023",
            day(2023, 11, 8),
            day(2023, 11, 18),
            False,
        ),
        # a range, the year stated once at the end
        ("between August 11 and August 15 2023", day(2023, 8, 10), day(2023, 8, 17), False),
        # no year: its most recent occurrence, matched in every year
        ("when did we go camping in June?", day(2026, 6, 1), day(2026, 7, 1), True),
        ("what broke on 3 December", day(2025, 12, 2), day(2025, 12, 5), True),
        # relative to now
        ("what failed yesterday", day(2026, 11, 25), day(2026, 11, 27), False),
        ("the flaky test from last week", day(2026, 11, 19), day(2026, 11, 27), False),
        ("what did we try in the past 3 days", day(2026, 11, 23), day(2026, 11, 27), False),
    ],
)
def test_reads_the_window_a_query_names(
    query: str, start: datetime, end: datetime, every_year: bool
) -> None:
    window = find_timeframe(query, NOW)
    assert window is not None, query
    assert (window.start, window.end, window.every_year) == (start, end, every_year)
    assert window.text and window.text.lower() in query.lower()


@pytest.mark.parametrize(
    "query",
    [
        "May I change the cache size?",  # the verb, not the month
        "python 3 may break the build",  # a number next to "may" is no date without "on" ...
        "fix the parser bug on line 2023",  # a bare number is no year without "in", "of" ...
        "why does login fail with a 401",
        "",
    ],
)
def test_ignores_what_is_not_a_date(query: str) -> None:
    assert find_timeframe(query, NOW) is None


def test_an_absolute_date_wins_over_relative_words() -> None:
    window = find_timeframe("the issue from last week, as mentioned on November 6, 2023", NOW)
    assert window is not None
    assert window.start == day(2023, 11, 5)


def test_window_masks_timestamps_and_every_year_wraps_new_year() -> None:
    june = TimeWindow(day(2026, 6, 1), day(2026, 7, 1), every_year=True)
    stamps = np.array(
        [day(2023, 6, 27).timestamp(), day(2023, 7, 1).timestamp(), np.nan], dtype=np.float64
    )
    assert june.mask(stamps).tolist() == [True, False, False]
    assert june.contains(day(2019, 6, 30)) and not june.contains(day(2019, 5, 31))
    new_year = TimeWindow(day(2025, 12, 30), day(2026, 1, 3), every_year=True)
    assert new_year.contains(day(2020, 12, 31)) and new_year.contains(day(2020, 1, 2))
    assert not new_year.contains(day(2020, 1, 5))
    exact = TimeWindow(day(2023, 5, 1), day(2023, 6, 1))
    assert exact.contains(day(2023, 5, 31)) and not exact.contains(day(2024, 5, 2))
    assert exact.contains(datetime(2023, 5, 2))  # naive times are read as UTC
