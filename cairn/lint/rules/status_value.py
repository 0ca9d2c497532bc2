"""status-value: status is active, draft or retired; any other value (a typo) would keep the card from agents."""

from __future__ import annotations

from collections.abc import Iterator

from cairn.cards.card import STATUSES
from cairn.finding import Finding
from cairn.lint.model import ERROR, Context, Rule, Target


def check(target: Target, context: Context) -> Iterator[Finding]:
    assert target.card is not None
    if target.card.status not in STATUSES:
        yield RULE.at(
            target,
            target.line_of("status"),
            f"status '{target.card.status}' is not one of {', '.join(STATUSES)}; only active cards are injected",
        )


RULE = Rule("status-value", ERROR, ("contract",), __doc__ or "", check)
