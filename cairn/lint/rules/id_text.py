"""id-text: a card id (its path under cards/) is plain: no spaces, quotes, angle brackets or other markup.

Agents receive a card's id with its text, so a file name is served like a field: `cards/SYSTEM NOTE for the
assistant/x.md` would put a sentence into every prompt the card fits. Letters of any script, digits and `-_.+!#[]`
are fine; the other security rules read the id too (with `/`, `-` and `_` as spaces; prompt-injection also with
every other joining character as one, and camelCase split). A look-alike of a refused character, one NFKC reads as it
(full-width `＜system＞`, `｜`, `＄`, small `﹤`, superscript `⁼`), is refused as that character: an agent reads it as
markup all the same. Only the East Asian forms of `:;()` pass (full-width `：；（）`, `㈱`), the punctuation a
Chinese or Japanese file name is written with (`注意：日志（旧）.md`); the Greek question mark and the superscript
and subscript parentheses, which look like ASCII's, do not.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterator, Mapping

from cairn.cards.card import card_id_from_path, file_key, slugify
from cairn.finding import Finding
from cairn.lint.model import ERROR, Context, Rule, Target

MAX_PART_CHARS = 200  # a part of an id lint tells a card to take (`card.MAX_ID_PART_BYTES`: ids Cairn writes)
_NOT_PLAIN = re.compile(r"[\s<>|\"'`:;$={}()\\]")
_MARKUP = re.compile(r"[<>|\"'`:;$={}()\\]")  # what a look-alike may be read as (NFKC's `´` is a space and an accent)
_EAST_ASIAN_PUNCTUATION = frozenset(":;()")  # full-width (and small, vertical) forms are natural there: kept


def not_plain(card_id: str) -> tuple[str, str] | None:
    """The first character that keeps `card_id` from being plain, with the ASCII one it is read as (itself, or what
    NFKC reads a look-alike as); None for a plain id."""
    if card_id.isascii():
        match = _NOT_PLAIN.search(card_id)
        return None if match is None else (match.group(), match.group())
    for char in card_id:
        if _NOT_PLAIN.match(char):
            return char, char
        if char.isascii() or unicodedata.is_normalized("NFKC", char):
            continue
        read = _MARKUP.search(unicodedata.normalize("NFKC", char))
        if read is None:
            continue
        if read.group() in _EAST_ASIAN_PUNCTUATION and unicodedata.east_asian_width(char) != "N":
            continue
        return char, read.group()
    return None


def is_plain(card_id: str) -> bool:
    return not_plain(card_id) is None


def slug_id(card_id: str, max_part_chars: int = MAX_PART_CHARS) -> str:
    """The id with each part a lowercase slug: the name lint tells a card to take."""
    return "/".join(slugify(part, max_length=max_part_chars) for part in card_id.split("/"))


def free_id(wanted: str, card_id: str, context: Context) -> str:
    """`wanted`, or `wanted-2`, `wanted-3`... when another card than `card_id` has that id (or one macOS and Windows
    hold as the same file): a rename onto it would overwrite that card."""
    return free_id_among(wanted, card_id, context.ids_by_file)


def free_id_among(wanted: str, card_id: str, ids_by_file: Mapping[str, Collection[str]]) -> str:
    """`free_id` among the ids of `ids_by_file` (`Context.ids_by_file`'s shape): for the index, which has no lint
    context."""
    candidate, n = wanted, 2
    while any(i != card_id for i in ids_by_file.get(file_key(candidate), ())):
        candidate, n = f"{wanted}-{n}", n + 1
    return candidate


def check(target: Target, context: Context) -> Iterator[Finding]:
    card_id = card_id_from_path(target.path)
    if card_id is None:
        return
    found = not_plain(card_id)
    if found:
        char, read = found
        what = "a space" if char == " " else f"'{char}'" if char.isprintable() else f"the character U+{ord(char):04X}"
        if read != char:
            what += f" (U+{ord(char):04X}, read as '{read}')"
        suggested = free_id(slug_id(card_id), card_id, context)
        yield RULE.at(
            target,
            0,
            f"the id holds {what}; agents receive the id, so it must be a plain name: rename the file to "
            f"cards/{suggested}.md",
        )


RULE = Rule("id-text", ERROR, ("security",), __doc__ or "", check, needs_card=False)
