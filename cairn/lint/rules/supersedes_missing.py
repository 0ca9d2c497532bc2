"""supersedes-missing: every id in supersedes names a card of the vault (a typo would leave the old card live), and
no card supersedes one that supersedes it back (each card in such a loop stays superseded: none is served)."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

from cairn.cards.card import card_id_from_path, file_key, nfd_spelling
from cairn.finding import Finding
from cairn.lint.model import ERROR, Context, Rule, Target


def check(target: Target, context: Context) -> Iterator[Finding]:
    card = target.card
    assert card is not None
    line = target.line_of("supersedes")
    for old in card.supersedes:
        if old == card.id:
            yield RULE.at(target, line, f"the card supersedes itself ('{old}'); name the card it replaces")
        elif old in context.cards and (loop := _back_to(card.id, old, context)) is not None:
            path = " -> ".join([card.id, *loop])
            yield RULE.at(
                target,
                line,
                f"supersedes '{old}', which supersedes it back ({path}): each card in the loop stays unserved; keep one "
                "direction",
            )
        elif old not in context.cards:
            as_id = card_id_from_path(old) or (old[:-3] if old.endswith(".md") else None)
            composed = unicodedata.normalize("NFC", old)
            spelled = [i for i in context.cards if unicodedata.normalize("NFC", i) == composed]
            if as_id is not None and as_id in context.cards:
                hint = f"write the id '{as_id}'"
            elif spelled and spelled[0] != composed:  # a file name macOS wrote
                hint = (
                    f"cards/{spelled[0]}.md reads the same but {nfd_spelling(spelled[0])} (Unicode NFD); "
                    f"rename it to cards/{composed}.md, as card-path says"
                )
            elif spelled:
                hint = (
                    f"it {nfd_spelling(old)} (Unicode NFD), cards/{spelled[0]}.md composed; write it "
                    "composed, as `cairn list` prints it"
                )
            elif cased := context.ids_by_file.get(file_key(old)):
                # typed as a Mac or Windows checkout finds the file, where git, the index and the hook are exact
                hint = (
                    f"cards/{cased[0]}.md differs only in case; write '{cased[0]}' (ids are case-sensitive, as git is)"
                )
            else:
                hint = "use the replaced card's id (its path under cards/ without .md)"
            yield RULE.at(target, line, f"supersedes '{old}', but no card has that id; {hint}")


def _back_to(start: str, first: str, context: Context) -> list[str] | None:
    """The ids from `first` along `supersedes` back to `start` (a loop: `A` supersedes `B`, `B` supersedes `A`, and
    each stays superseded, so neither is served), or None; breadth first, every card visited once."""
    came_from: dict[str, str | None] = {first: None}
    queue = [first]
    for current in queue:
        facts = context.cards.get(current)
        for nxt in facts.supersedes if facts is not None else ():
            if nxt == start:
                path = [current]
                while (before := came_from[path[-1]]) is not None:
                    path.append(before)
                return [*reversed(path), start]
            if nxt not in came_from:
                came_from[nxt] = current
                queue.append(nxt)
    return None


RULE = Rule("supersedes-missing", ERROR, ("vault",), __doc__ or "", check)
