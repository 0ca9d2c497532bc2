"""card-path: a card lives at `cards/<topic>/<slug>.md` with lowercase slugs (policy: such cards are still indexed).

Two ids that differ in case or Unicode form alone (`git/Rebase`, `git/rebase`) are one file on macOS and Windows: a
clone there keeps one of the two cards.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Iterator, Mapping

from cairn.cards.card import card_id_from_path, file_key, misnamed_card_id, nfd_spelling
from cairn.finding import Finding
from cairn.lint.model import WARNING, Context, Rule, Target
from cairn.lint.rules import id_text

# Files git itself reads, or that keep a folder git would not record empty (`cards/.gitkeep`, the usual placeholder):
# no card was meant there, and the index passes them over in silence, as lint does.
GIT_FILES = frozenset({".gitkeep", ".keep", ".gitignore", ".gitattributes"})


def check(target: Target, context: Context) -> Iterator[Finding]:
    if not target.path.startswith("cards/") or target.path == "cards/.git":
        return  # the contract reports it (a `cards/.git`: path-outside-cards)
    card_id = card_id_from_path(target.path)
    if card_id is None and target.path.rsplit("/", 1)[-1] in GIT_FILES:
        return
    if card_id is None:
        yield RULE.at(target, 0, no_card_message(target.path, context.ids_by_file))
        return
    if not id_text.is_plain(card_id):
        return  # id-text says it, as an error, with the same rename
    same_file = sorted(i for i in context.ids_by_file.get(file_key(card_id), ()) if i != card_id)
    if same_file:
        # a teammate's Mac or Windows clone checks out one of them and shows the other's file as changed
        others = ", ".join(f"cards/{i}.md" for i in same_file)
        yield RULE.at(
            target,
            0,
            f"the id '{card_id}' differs from {others} only in case or in how its accents are spelled: on macOS and "
            "Windows they are one file and a clone keeps only one card; rename one of them to a name of its own "
            "(and update links and supersedes that name it)",
        )
        return
    suggested = id_text.slug_id(card_id)
    if suggested != card_id:
        # a file name macOS wrote (NFD) looks like its composed form, the one a keyboard types and `cairn add` writes
        if suggested == unicodedata.normalize("NFC", card_id):
            why = f"{nfd_spelling(card_id)} (Unicode NFD, as macOS names files)"
        elif suggested == unicodedata.normalize("NFKC", card_id):
            # an input method's full-width letters, a ligature: `cairn show python/fullwidth-x` does not find it
            why = "spells letters in full-width or ligature forms (Unicode compatibility forms)"
        elif id_text.slug_id(card_id, max_part_chars=len(card_id)) == card_id:
            why = f"has a part longer than {id_text.MAX_PART_CHARS} characters"  # a slug, only too long
        else:
            why = "is not lowercase slugs"
        yield RULE.at(
            target,
            0,
            f"the id '{card_id}' {why}; rename the file to cards/{id_text.free_id(suggested, card_id, context)}.md "
            "(and update links and supersedes that name it)",
        )


def no_card_message(path: str, ids_by_file: Mapping[str, Collection[str]]) -> str:
    """What card-path says of a file under cards/ that gives no card id (`x.MD`, `cards/.md`), with the name to take
    among the ids of `ids_by_file` (`Context.ids_by_file`'s shape): lint's words, and the index's of such a file."""
    meant = misnamed_card_id(path)  # `.MD`, as Windows and macOS tools may write it
    why, fix = "card files end in `.md`", "rename or move it"
    if path.endswith(".md"):
        why = "its file name gives no id (a card is cards/<topic>/<slug>.md)"  # `cards/.md`, `cards/..md`
    elif meant is not None and id_text.is_plain(meant):
        why = "card files end in `.md`, lowercase"
        # "": the file has no id of its own, so a card whose id is `meant` (`x.md` beside `x.MD`) is another's
        fix = f"rename it to cards/{id_text.free_id_among(id_text.slug_id(meant), '', ids_by_file)}.md"
    return f"not a card: {why}; this file is ignored ({fix})"


RULE = Rule("card-path", WARNING, ("policy",), __doc__ or "", check, needs_card=False)
