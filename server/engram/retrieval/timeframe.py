"""Dates named in a query, as a time window on when memories became true.

"What did we decide about caching in March 2024?", "the error from 3 June", "what broke
last week": a query that names a date is asking about memories recorded (``valid_from``)
then. :func:`find_timeframe` reads the absolute and relative date expressions people write
and returns the window they name; the retriever then searches inside that window as one
more candidate path and lifts in-window results (docs/retrieval.md, "Dates in a query").

Only explicit expressions are read; words like "recently" or "before" alone are not. A
day carries a day of slack on each side (a memory recorded the day after, or late in
another time zone, still matches). A month or a day named without a year means its most
recent occurrence up to ``now``, matched in every year (``TimeWindow.every_year``): "in
June" finds June memories of any year rather than only this one.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from engram.model.timewindow import TimeWindow

__all__ = ["TimeWindow", "find_timeframe"]

#: Slack around a named day: recorded the day after, or in another time zone.
DAY_SLACK = timedelta(days=1)

_MONTH_NAMES = [
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
]  # fmt: skip
#: English month names and abbreviations (not the locale's: queries are read the same way
#: on every machine)
_MONTHS = {name: number for number, name in enumerate(_MONTH_NAMES, start=1)} | {
    name[:3]: number for number, name in enumerate(_MONTH_NAMES, start=1)
}
_MONTHS["sept"] = 9
_MONTH = r"(?P<{}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<{}>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<{}>(?:19|20)\d\d)"


def _group(pattern: str, name: str) -> str:
    return pattern.format(name)


# "2024-03-05"
_ISO = re.compile(r"\b(?P<y>(?:19|20)\d\d)-(?P<m>[01]\d)-(?P<d>[0-3]\d)\b")
# "March 5, 2024", "Mar 5th 2024", "March 5" (year optional)
_MONTH_DAY = re.compile(
    r"\b"
    + _group(_MONTH, "m")
    + r"\s+"
    + _group(_DAY, "d")
    + r"\b(?:,?\s*"
    + _group(_YEAR, "y")
    + r")?",
    re.IGNORECASE,
)
# "5 March 2024", "5th of March, 2024", "5 March" (year optional)
_DAY_MONTH = re.compile(
    r"\b"
    + _group(_DAY, "d")
    + r"\s+(?:of\s+)?"
    + _group(_MONTH, "m")
    + r"(?:,?\s*"
    + _group(_YEAR, "y")
    + r")?\b",
    re.IGNORECASE,
)
# "March 2024", "March of 2024"
_MONTH_YEAR = re.compile(
    r"\b" + _group(_MONTH, "m") + r"\s+(?:of\s+)?" + _group(_YEAR, "y") + r"\b", re.IGNORECASE
)
# "in March", "during May", "early June": a bare month name needs a preposition ("may")
_BARE_MONTH = re.compile(
    r"\b(?:in|during|since|of|early|mid|late|last|this|through|throughout)\s+(?:of\s+)?"
    + _group(_MONTH, "m")
    + r"\b(?!\s*(?:[0-3]?\d\b|(?:19|20)\d\d))",
    re.IGNORECASE,
)
# "in 2024", "during 2023": a bare number needs a preposition ("line 2023" is no date)
_YEAR_ONLY = re.compile(
    r"\b(?:in|during|since|of|from|throughout|until|before|after)\s+(?:early\s+|late\s+)?"
    + _group(_YEAR, "y")
    + r"\b",
    re.IGNORECASE,
)
_ANY_YEAR = re.compile(r"\b" + _group(_YEAR, "y") + r"\b")
_AGO = re.compile(
    r"\b(?P<n>\d+|a|an|one|two|three|four|five|six)\s+(?P<unit>day|week|month)s?\s+ago\b", re.I
)
_PAST = re.compile(r"\b(?:past|last)\s+(?P<n>\d+)\s+(?P<unit>day|week|month)s\b", re.I)
_RELATIVE = re.compile(
    r"\b(?P<what>today|yesterday|(?:last|this|past)\s+(?:week|month|year))\b", re.IGNORECASE
)
# "the week before <date>", "the week of <date>"
_WEEK_BEFORE = re.compile(r"\bweek\s+(?P<rel>before|of)\s+$", re.IGNORECASE)
# the word before a day named without a year ("on 3 June", "since March 5")
_DAY_LEAD = re.compile(
    r"\b(?:on|since|from|until|till|by|before|after|between|and|of|the)\s+$", re.IGNORECASE
)
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def _day(year: int, month: int, day: int) -> datetime | None:
    try:
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None


def _month_window(year: int, month: int) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return start, end


def _latest_year(month: int, day: int, now: datetime) -> int:
    """The year of the most recent ``month``/``day`` up to ``now``."""
    return now.year if (month, day) <= (now.month, now.day) else now.year - 1


def _day_frame(moment: datetime, text: str, prefix: str, every_year: bool) -> TimeWindow:
    week = _WEEK_BEFORE.search(prefix)
    if week is not None and week.group("rel").lower() == "before":
        start, end = moment - timedelta(days=7) - DAY_SLACK, moment + 2 * DAY_SLACK
    elif week is not None:
        start, end = moment - timedelta(days=3), moment + timedelta(days=4)
    else:
        start, end = moment - DAY_SLACK, moment + 2 * DAY_SLACK
    return TimeWindow(start, end, every_year, text)


def _days(query: str, now: datetime) -> list[tuple[datetime, bool, re.Match[str]]]:
    """Every day named in the query: (midnight UTC, named without a year, match)."""
    stated = _ANY_YEAR.search(query)
    found: list[tuple[datetime, bool, re.Match[str]]] = []
    for pattern in (_ISO, _MONTH_DAY, _DAY_MONTH):
        for match in pattern.finditer(query):
            groups = match.groupdict()
            month_text = groups["m"]
            month = int(month_text) if month_text.isdigit() else _MONTHS[month_text.lower()]
            day = int(groups["d"])
            if groups.get("y"):
                year, every_year = int(groups["y"]), False
            elif not _DAY_LEAD.search(query[: match.start()]):
                continue  # "python 3 may break": a year-less day needs "on", "since", ...
            elif stated is not None:  # "between August 11 and August 15 2023"
                year, every_year = int(stated.group("y")), False
            else:
                year, every_year = _latest_year(month, day, now), True
            moment = _day(year, month, day)
            if moment is not None:
                found.append((moment, every_year, match))
    found.sort(key=lambda item: item[2].start())
    return found


def _absolute(query: str, now: datetime) -> TimeWindow | None:
    days = _days(query, now)
    if len(days) >= 2 and re.search(r"\bbetween\b", query[: days[0][2].start()], re.I):
        (first, every_year, m1), (last, _, m2) = days[0], days[1]
        if first <= last:
            text = query[m1.start() : m2.end()]
            return TimeWindow(first - DAY_SLACK, last + 2 * DAY_SLACK, every_year, text)
    if days:
        moment, every_year, first_day = days[0]
        text = first_day.group(0).strip()
        return _day_frame(moment, text, query[: first_day.start()], every_year)
    month_year = _MONTH_YEAR.search(query)
    if month_year is not None:
        month = _MONTHS[month_year.group("m").lower()]
        start, end = _month_window(int(month_year.group("y")), month)
        return TimeWindow(start, end, False, month_year.group(0))
    bare_month = _BARE_MONTH.search(query)
    if bare_month is not None:
        month = _MONTHS[bare_month.group("m").lower()]
        year = now.year if month <= now.month else now.year - 1
        start, end = _month_window(year, month)
        return TimeWindow(start, end, True, bare_month.group(0))
    year_only = _YEAR_ONLY.search(query)
    if year_only is not None:
        year = int(year_only.group("y"))
        start, end = datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)
        return TimeWindow(start, end, False, year_only.group(0))
    return None


def _unit_days(unit: str) -> int:
    return {"day": 1, "week": 7, "month": 30}[unit.lower()]


def _relative(query: str, now: datetime) -> TimeWindow | None:
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    tomorrow = today + timedelta(days=1)
    match = _AGO.search(query)
    if match is not None:
        raw = match.group("n").lower()
        n = int(raw) if raw.isdigit() else _NUMBERS[raw]
        moment = today - timedelta(days=n * _unit_days(match.group("unit")))
        width = timedelta(days=_unit_days(match.group("unit")))
        return TimeWindow(moment - width / 2, moment + width / 2 + DAY_SLACK, text=match.group(0))
    match = _PAST.search(query)
    if match is not None:
        days = int(match.group("n")) * _unit_days(match.group("unit"))
        return TimeWindow(today - timedelta(days=days), tomorrow, text=match.group(0))
    match = _RELATIVE.search(query)
    if match is None:
        return None
    what = " ".join(match.group("what").lower().split())
    if what == "today":
        return TimeWindow(today, tomorrow, text=match.group(0))
    if what == "yesterday":
        return TimeWindow(today - timedelta(days=1), tomorrow, text=match.group(0))
    span = {"week": 7, "month": 31, "year": 366}[what.split()[1]]
    if what.startswith("this"):
        span = {"week": today.weekday() + 1, "month": today.day, "year": today.timetuple().tm_yday}[
            what.split()[1]
        ]
    return TimeWindow(today - timedelta(days=span), tomorrow, text=match.group(0))


def find_timeframe(query: str, now: datetime) -> TimeWindow | None:
    """The time window a query names, or None.

    Absolute dates win over relative words ("last week, as mentioned on 6 November 2023"
    is about 6 November 2023).
    """
    if not query or (not any(ch.isdigit() for ch in query) and not _has_date_word(query)):
        return None
    return _absolute(query, now) or _relative(query, now)


_DATE_WORD = re.compile(
    r"\b(?:today|yesterday|week|month|year|ago|"
    + "|".join(sorted(_MONTHS, key=len, reverse=True))
    + r")\b",
    re.IGNORECASE,
)


def _has_date_word(query: str) -> bool:
    return _DATE_WORD.search(query) is not None
