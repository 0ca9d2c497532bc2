"""verified-at-future: verified_at is not a date in the future (nobody can have checked a lesson then)."""

from __future__ import annotations

from collections.abc import Iterator

from cairn.finding import Finding
from cairn.lint.model import ERROR, Context, Rule, Target


def check(target: Target, context: Context) -> Iterator[Finding]:
    verified = target.card.verified_at if target.card else None
    if verified is not None and verified > context.today:
        yield RULE.at(
            target,
            target.line_of("verified_at"),
            f"verified_at {verified.isoformat()} is in the future; write the date the lesson was checked",
        )


RULE = Rule("verified-at-future", ERROR, ("verified-at",), __doc__ or "", check)
