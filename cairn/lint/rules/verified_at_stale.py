"""verified-at-stale: an active card was verified within `[lint] max_age_days` (default 365).

A card with its own `review_after` is judged by that date instead (`review-expired` once it has passed), as `cairn
list` dates its review: the vault's age limit is the default for cards that name none.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

from cairn.finding import Finding
from cairn.lint.model import WARNING, Context, Rule, Target


def check(target: Target, context: Context) -> Iterator[Finding]:
    card = target.card
    assert card is not None
    max_age = context.settings.max_age_days
    if card.status != "active" or card.verified_at is None or card.review_after is not None:
        return
    if context.today - card.verified_at <= dt.timedelta(days=max_age):  # a difference: no date overflows
        return
    if by := context.superseded_by.get(card.id):
        yield RULE.at(
            target,
            target.line_of("verified_at"),
            f"verified_at {card.verified_at.isoformat()} is more than {max_age} days ago, and it is superseded by "
            f"{', '.join(by)}, so agents do not get this card; a new verified_at would not serve it",
        )
    else:
        yield RULE.at(
            target,
            target.line_of("verified_at"),
            f"verified_at {card.verified_at.isoformat()} is more than {max_age} days ago; check the lesson still "
            "holds, then update verified_at",
        )


RULE = Rule("verified-at-stale", WARNING, ("verified-at",), __doc__ or "", check, reads_config=True)
