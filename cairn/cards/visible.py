"""One reading of card text for everyone: what a reader sees is what an agent gets.

A card's text can hold characters a reader does not see but a model reads: format characters (zero-width spaces
and joiners, bidirectional controls, the U+E0000 tag block that spells ASCII invisibly), control characters,
variation selectors beyond the one an emoji takes, Hangul fillers, private-use code points (no reader sees
them as text, and the hook drops them: `ig<U+E000>nore` reached an agent as `ignore`), and the line and paragraph
separators U+2028, U+2029 and NEL (YAML reads each as a line break, so `name: X<U+2028>status: retired` is two keys
on what a diff shows as one line). `strip_invisible` removes
them from every field the parser returns (so the index, the hook, review and the MCP server never carry them,
linted or not); `invisible_in` lists them for lint's `hidden-text` rule. `fold` is the form the security rules
judge: invisible characters removed, then Unicode NFKC (fullwidth `ｉｇｎｏｒｅ` reads `ignore`, `ﬁ` reads `fi`).
`mixed_script_words` finds words that mix Latin with Cyrillic or Greek look-alikes (homoglyphs: `pаssword` with
a Cyrillic `а`).
"""

from __future__ import annotations

import functools
import re
import unicodedata

_ZWJ = "\u200d"
_EMOJI_VS = "\ufe0e\ufe0f"  # text / emoji presentation: one after a symbol is how emoji are typed
# Not format characters by category, but invisible or blank when rendered.
_BLANK = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u2800\u3164\uffa0")
_SYMBOL_CATS = frozenset({"So", "Sk"})


@functools.lru_cache(maxsize=4096)
def _is_hidden_char(ch: str) -> bool:
    if ch in "\n\t":
        return False
    code = ord(ch)
    if code < 0x80:
        return code < 0x20 or code == 0x7F
    if ch in _BLANK or 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF:
        return True
    return unicodedata.category(ch) in ("Cf", "Cc", "Cs", "Co", "Cn", "Zl", "Zp")


def _allowed_at(text: str, i: int) -> bool:
    """An emoji's own joiner or presentation selector: ZWJ between two symbols, one selector after a symbol."""
    ch = text[i]
    prev = text[i - 1] if i > 0 else ""
    if ch in _EMOJI_VS:
        return bool(prev) and prev not in _EMOJI_VS and prev != _ZWJ and not _is_hidden_char(prev)
    if ch == _ZWJ:
        before = text[i - 2] if prev in _EMOJI_VS and i > 1 else prev
        after = text[i + 1] if i + 1 < len(text) else ""
        return bool(before and after) and all(unicodedata.category(c) in _SYMBOL_CATS for c in (before, after))
    return False


_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def invisible_in(text: str) -> list[tuple[int, str]]:
    """(offset, character) of each invisible character in `text` (an emoji's joiner and selector excepted)."""
    found = [(m.start(), m.group()) for m in _ASCII_CONTROL.finditer(text)]
    if not text.isascii():
        for match in _NON_ASCII.finditer(text):
            at, ch = match.start(), match.group()
            if _is_hidden_char(ch) and not _allowed_at(text, at):
                found.append((at, ch))
        found.sort()
    return found


# Line breaks YAML and `str.splitlines` read but many viewers and diffs do not show: hidden, and read as a newline.
LINE_SEPARATORS = frozenset("\u0085\u2028\u2029")


def strip_invisible(text: str) -> str:
    """`text` without its invisible characters (what a reader of the rendered text would copy); a hidden line
    separator becomes a newline, as a parser reads it, so two words it separates stay two."""
    found = invisible_in(text)
    if not found:
        return text
    drop = {i for i, _ in found}
    return "".join(("\n" if ch in LINE_SEPARATORS else "") if i in drop else ch for i, ch in enumerate(text))


def fold(text: str) -> str:
    """The form security rules judge: invisible characters removed, then NFKC."""
    stripped = strip_invisible(text)
    return stripped if stripped.isascii() else unicodedata.normalize("NFKC", stripped)


def describe(ch: str) -> str:
    """`U+200B ZERO WIDTH SPACE`: a character named for a reader, who cannot see it."""
    name = unicodedata.name(ch, "") or ("PRIVATE USE CHARACTER" if unicodedata.category(ch) == "Co" else "unnamed")
    return f"U+{ord(ch):04X} {name}"


# Letters of another script that look like Latin ones (the ones homoglyph attacks use); a Latin word holding one
# of these reads as the Latin word it imitates.
_CONFUSABLE = frozenset(
    "АВЕЅІЈКМНОРСТХУаеорсухіјѕԁһԛԝӏ"  # Cyrillic
    "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧαικνορτυχ"  # Greek
)
# Japanese and Chinese run words together without spaces ("PNGのαチャンネル"), and Korean glues particles onto
# words: Han, kana and Hangul end a word here, so a Latin name and a Greek letter in one such run are two words.
_WORD = re.compile(r"[^\W\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")


def _script(ch: str) -> str:
    if ch.isascii():
        return "Latin" if ch.isalpha() else ""
    if not ch.isalpha():
        return ""
    name = unicodedata.name(ch, "")
    for script in ("LATIN", "CYRILLIC", "GREEK"):
        if name.startswith(script):
            return script.title()
    return "other"


def mixed_script_words(text: str) -> list[tuple[int, str]]:
    """(offset, word) of words that mix Latin letters with Cyrillic letters, or with Greek look-alikes."""
    if text.isascii():
        return []
    found = []
    for match in _WORD.finditer(text):
        word = match.group()
        if word.isascii():
            continue
        scripts = {_script(ch) for ch in word} - {""}
        if "Latin" not in scripts:
            continue
        if "Cyrillic" in scripts or ("Greek" in scripts and any(ch in _CONFUSABLE for ch in word)):
            found.append((match.start(), word))
    return found
