"""verified-at-future: verified_at is not a date in the future (nobody can have checked a lesson then).

A date one day ahead of the checking machine's passes: `cairn add` writes the author's local date, and the
commit's checks may run where that day has not begun (a morning in Tokyo is the day before in UTC CI)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

from cairn.finding import Finding
from cairn.lint.model import ERROR, Context, Rule, Target

# A date ahead by a day is today somewhere (UTC+14 against UTC-12 differ by two for two hours a day: left out).
_ZONES = dt.timedelta(days=1)


def check(target: Target, context: Context) -> Iterator[Finding]:
    verified = target.card.verified_at if target.card else None
    if verified is not None and verified - context.today > _ZONES:  # a difference: no date overflows
        yield RULE.at(
            target,
            target.line_of("verified_at"),
            f"verified_at {verified.isoformat()} is in the future; write the date the lesson was checked",
        )


RULE = Rule("verified-at-future", ERROR, ("verified-at",), __doc__ or "", check)
