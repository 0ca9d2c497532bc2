"""supersedes-missing: every id in supersedes names a card of the vault (a typo would leave the old card live)."""

from __future__ import annotations

from collections.abc import Iterator

from cairn.cards.card import card_id_from_path
from cairn.finding import Finding
from cairn.lint.model import ERROR, Context, Rule, Target


def check(target: Target, context: Context) -> Iterator[Finding]:
    card = target.card
    assert card is not None
    line = target.line_of("supersedes")
    for old in card.supersedes:
        if old == card.id:
            yield RULE.at(target, line, f"the card supersedes itself ('{old}'); name the card it replaces")
        elif old not in context.cards:
            as_id = card_id_from_path(old) or (old[:-3] if old.endswith(".md") else None)
            if as_id is not None and as_id in context.cards:
                hint = f"write the id '{as_id}'"
            else:
                hint = "use the replaced card's id (its path under cards/ without .md)"
            yield RULE.at(target, line, f"supersedes '{old}', but no card has that id; {hint}")


RULE = Rule("supersedes-missing", ERROR, ("vault",), __doc__ or "", check)
