"""Dates a question names ("on 8 May, 2023", "October 13, 2023", "in June 2022", "in August"), as spans of days,
and how near a session's day is to them: questions that name a date ask about what was said around it.

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
