"""name-unique: no two cards in the vault share a name (case and spacing ignored)."""

from __future__ import annotations

from collections.abc import Iterator

from cairn.cards.similarity import name_key
from cairn.finding import Finding
from cairn.lint.model import ERROR, Context, Rule, Target

MAX_NAMED = 3  # others named on a card's line: n cards of one name would print n lines of n paths


def check(target: Target, context: Context) -> Iterator[Finding]:
    assert target.card is not None
    others = sorted(i for i in context.ids_by_name.get(name_key(target.card.name), ()) if i != target.card.id)
    if others:
        paths = ", ".join(f"cards/{i}.md" for i in others[:MAX_NAMED])
        if len(others) > MAX_NAMED:
            paths += f" and {len(others) - MAX_NAMED} more"
        yield RULE.at(target, target.line_of("name"), f"the name is also used by {paths}; names must be unique")


RULE = Rule("name-unique", ERROR, ("vault",), __doc__ or "", check)
