"""Dates a question names ("on 8 May, 2023", "October 13, 2023", "in June 2022", "in August"), as spans of days,
and how near a session's day is to them: questions that name a date ask about what was said around it. When the day
a question was asked is known, the days it names relative to it ("two weeks ago", "last Saturday") too.

A year on its own names no span (it is too wide to tell sessions apart); a month without a year names that month
in every year.
"""

from __future__ import annotations

import calendar
import datetime as dt
import math
import re
from collections.abc import Sequence

_MONTH_NAMES = "january february march april may june july august september october november december".split()
# Full month names only: "Jan" and "Mar" are as often a name or a verb.
_MONTH = "(" + "|".join(_MONTH_NAMES) + ")"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_PATTERNS = (
    re.compile(rf"\b{_DAY}\s+{_MONTH}\b,?\s*{_YEAR}?", re.IGNORECASE),  # 8 May, 2023 / 8th December 2023
    re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?:,\s*{_YEAR}|\s+{_YEAR})?", re.IGNORECASE),  # October 13, 2023
    re.compile(rf"\b{_MONTH}\b,?\s*{_YEAR}?", re.IGNORECASE),  # June 2022 / in August
)

Span = tuple[int | None, int, int | None]  # (year or None for any year, month, day or None for the whole month)


def date_spans(text: str) -> list[Span]:
    """The dates `text` names, in order: (year | None, month, day | None)."""
    spans: list[Span] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in enumerate(_PATTERNS):
        for m in pattern.finditer(text):
            if any(start < m.end() and m.start() < end for start, end in taken):
                continue
            if kind == 0:
                day, month, year = m.group(1), m.group(2), m.group(3)
            elif kind == 1:
                month, day, year = m.group(1), m.group(2), m.group(3) or m.group(4)
            else:
                month, day, year = m.group(1), None, m.group(2)
                if month.lower() == "may" and not year:
                    continue  # "may" is far more often the verb
            number = _month_number(month)
            if day is not None and not 1 <= int(day) <= 31:
                continue
            taken.append((m.start(), m.end()))
            spans.append((int(year) if year else None, number, int(day) if day else None))
    return spans


def nearness(day: dt.date | None, spans: Sequence[Span], scale_days: float) -> float:
    """1.0 when `day` falls in one of the spans, falling off with the days between them (e^(-days / scale));
    0.0 when there is no day or no span."""
    if day is None or not spans or scale_days <= 0:
        return 0.0
    best = math.inf
    for year, month, date in spans:
        for y in (year,) if year is not None else (day.year - 1, day.year, day.year + 1):
            start, end = _bounds(y, month, date)
            if start is None or end is None:
                continue
            gap = (start - day).days if day < start else (day - end).days if day > end else 0
            best = min(best, gap)
    return math.exp(-best / scale_days) if best < math.inf else 0.0


def _bounds(year: int, month: int, day: int | None) -> tuple[dt.date | None, dt.date | None]:
    try:
        if day is None:
            return dt.date(year, month, 1), dt.date(year, month, calendar.monthrange(year, month)[1])
        one = dt.date(year, month, day)
        return one, one
    except ValueError:
        return None, None


def _month_number(name: str) -> int:
    return _MONTH_NAMES.index(name.lower()) + 1


# Days a question names relative to the day it was asked ("two weeks ago", "in the past month", "last Saturday").
_COUNTS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a couple": 2, "couple of": 2, "a few": 3,
    "few": 3, "several": 3,
}  # fmt: skip
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_COUNT = r"(\d{1,3}|" + "|".join(sorted(_COUNTS, key=len, reverse=True)) + ")"
_UNIT = r"(day|week|month|year)s?"
_WEEKDAY_NAMES = "monday tuesday wednesday thursday friday saturday sunday".split()
_AGO = re.compile(rf"\b{_COUNT}\s+{_UNIT}\s+ago\b", re.IGNORECASE)  # two weeks ago: that day
_PAST = re.compile(rf"\b(past|last|previous)\s+(?:{_COUNT}\s+)?{_UNIT}\b", re.IGNORECASE)  # the past month: till now
_LAST_DAY = re.compile(r"\blast\s+(" + "|".join(_WEEKDAY_NAMES) + r"|weekend)\b", re.IGNORECASE)
_YESTERDAY = re.compile(r"\byesterday\b", re.IGNORECASE)

DayRange = tuple[dt.date, dt.date, float]  # first day, last day, and how fast nearness falls off outside (days)


def relative_ranges(text: str, asked: dt.date) -> list[DayRange]:
    """The days `text` names relative to `asked`: "N days/weeks/months ago" (that day, falling off over half the
    unit), "in the past N weeks" (from then to `asked`), "last week/month" (the unit before), "last Saturday",
    "last weekend", "yesterday" (that day, falling off over a day)."""
    out: list[DayRange] = []
    taken: list[tuple[int, int]] = []
    for m in _AGO.finditer(text):
        unit = _UNIT_DAYS[m.group(2).lower()]
        day = asked - dt.timedelta(days=_count(m.group(1)) * unit)
        out.append((day, day, max(1.0, unit / 2)))
        taken.append(m.span())
    for m in _PAST.finditer(text):
        if any(start < m.end() and m.start() < end for start, end in taken):
            continue
        unit = _UNIT_DAYS[m.group(3).lower()]
        if m.group(2) is None and m.group(1).lower() == "last":  # last week: the week before this one
            out.append((asked - dt.timedelta(days=2 * unit), asked - dt.timedelta(days=1), max(1.0, unit / 4)))
        else:
            out.append((asked - dt.timedelta(days=_count(m.group(2)) * unit), asked, max(1.0, unit / 4)))
    for m in _LAST_DAY.finditer(text):
        name = m.group(1).lower()
        if name == "weekend":
            saturday = asked - dt.timedelta(days=(asked.weekday() - 5) % 7 or 7)
            out.append((saturday, saturday + dt.timedelta(days=1), 1.0))
        else:
            day = asked - dt.timedelta(days=(asked.weekday() - _WEEKDAY_NAMES.index(name)) % 7 or 7)
            out.append((day, day, 1.0))
    for _ in _YESTERDAY.finditer(text):
        day = asked - dt.timedelta(days=1)
        out.append((day, day, 1.0))
    return out


def range_nearness(day: dt.date | None, ranges: Sequence[DayRange]) -> float:
    """1.0 when `day` falls in one of the ranges, else e^(-days outside / the range's fall-off), the best of them;
    0.0 when there is no day or no range."""
    if day is None:
        return 0.0
    best = 0.0
    for first, last, scale in ranges:
        gap = (first - day).days if day < first else (day - last).days if day > last else 0
        best = max(best, math.exp(-gap / scale))
    return best


def _count(word: str | None) -> int:
    if word is None:
        return 1
    lowered = " ".join(word.lower().split())
    return int(lowered) if lowered.isdigit() else _COUNTS.get(lowered, 1)
