"""review-expired: an active card's review_after has not passed, and a duration has a verified_at to count from."""

from __future__ import annotations

from collections.abc import Iterator

from cairn.cards.card import renewal
from cairn.finding import Finding
from cairn.lint.model import WARNING, Context, Rule, Target


def check(target: Target, context: Context) -> Iterator[Finding]:
    card = target.card
    assert card is not None
    if card.review_after is None or card.status != "active":
        return
    line = target.line_of("review_after")
    if card.expires_on is None:
        yield RULE.at(
            target, line, f"review_after {card.review_after} counts from verified_at, which is missing; add it"
        )
    elif card.is_expired(context.today) and (by := context.superseded_by.get(card.id)):
        yield RULE.at(
            target,
            line,
            f"the review date {card.expires_on.isoformat()} has passed, and it is superseded by {', '.join(by)}, so "
            "agents do not get this card; a later review date would not serve it",
        )
    elif card.is_expired(context.today):
        yield RULE.at(
            target,
            line,
            f"the review date {card.expires_on.isoformat()} has passed, so agents no longer get this card; "
            + renewal(card.review_after),
        )


RULE = Rule("review-expired", WARNING, ("verified-at",), __doc__ or "", check)
