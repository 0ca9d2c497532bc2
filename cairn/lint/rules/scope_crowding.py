"""scope-crowding: no scope holds more than `[lint] max_scope_share` of the cards, no card has too many scopes.

A scope on most cards filters nothing when an agent declares it; a card tagged with everything fits nothing.
Shares are checked once the vault has `[lint] crowding_min_cards` cards (default 20).
"""

from __future__ import annotations

from collections.abc import Iterator

from cairn.finding import Finding
from cairn.lint.model import WARNING, Context, Rule, Target


def check(target: Target, context: Context) -> Iterator[Finding]:
    card = target.card
    assert card is not None
    settings = context.settings
    line = target.line_of("scope")
    if len(card.scope) > settings.max_scopes_per_card:
        yield RULE.at(
            target,
            line,
            f"the card has {len(card.scope)} scopes, more than {settings.max_scopes_per_card}; "
            "keep the tags the lesson is really about",
        )
    total = context.n_parsed
    if total < settings.crowding_min_cards:
        return
    for tag in dict.fromkeys(s.lower() for s in card.scope):
        count = context.scope_counts[tag]
        if count / total > settings.max_scope_share:
            yield RULE.at(
                target,
                line,
                f"scope '{tag}' is on {count} of {total} cards, more than {settings.max_scope_share:.0%}; "
                "use narrower tags",
            )


RULE = Rule("scope-crowding", WARNING, ("scope",), __doc__ or "", check, reads_config=True)
