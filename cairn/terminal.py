"""Text bound for a terminal: control characters and escape sequences from card files are made harmless."""

from __future__ import annotations

import re
import unicodedata

from cairn.cards.visible import invisible_in

# CSI/OSC/other ESC sequences and every C0/C1 control character except tab and newline.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]?")
# Lone surrogates (undecodable bytes in file names) cannot be written to a UTF-8 terminal at all.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def clean(text: str) -> str:
    """Show escape sequences, control and invisible characters as `?`; JSON output never goes through this.

    Invisible characters (zero-width, tag characters, fillers: `cards.visible`, the same list lint flags) would let a
    file name or finding read differently on a terminal than it does to a program.
    """
    text = _CONTROLS.sub("?", _ESCAPES.sub("?", text))
    if text.isascii():
        return text
    hidden = {at for at, _ in invisible_in(text)}
    return "".join("?" if at in hidden else ch for at, ch in enumerate(text)) if hidden else text


# What `clean` leaves of the characters `str.splitlines` breaks at (the others are controls, already `?`), and the tab
_LINE_BREAKS = str.maketrans({"\n": "?", "\u2028": "?", "\u2029": "?", "\t": " "})


def clean_line(text: str) -> str:
    """`clean` for a line that must stay one line (a finding, a file name): newlines and tabs become `?` too."""
    return clean(text).translate(_LINE_BREAKS)


def columns(text: str) -> int:
    """How many terminal columns `text` takes: a wide or fullwidth character (CJK, most emoji) two, a combining
    mark none, the rest one; `len` counted `中文/缓存` as 5 of its 9 columns. A Hangul syllable decomposed (NFD, as
    macOS names files) is its leading consonant, two columns, then vowel and final jamo that join it and take none."""
    if text.isascii():
        return len(text)
    return sum(map(_width, text))


def _width(ch: str) -> int:
    if unicodedata.combining(ch) or "\u1160" <= ch <= "\u11ff" or "\ud7b0" <= ch <= "\ud7ff":
        return 0  # Hangul vowel and final jamo (wcwidth gives them none): they join the syllable before them
    return 2 if unicodedata.east_asian_width(ch) in "WF" else 1


def pad(text: str, width: int) -> str:
    """`text` padded with spaces to `width` terminal columns (`str.ljust` for text that may hold wide characters)."""
    return text + " " * max(0, width - columns(text))
