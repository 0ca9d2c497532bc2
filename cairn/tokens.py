"""Tokens for recall: CJK text as character 2-grams; words case-folded; identifiers split into their parts."""

from __future__ import annotations

import re

# Words that carry no topic in English prompts and card text.
STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does doing for from had has have how i if in into is
    it its itself just me my no not of on or our so than that the their them then there these they this those
    to too up us was we were what when where which while who why will with would you your yours""".split()
)

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"  # Han, Kana, Hangul
_SPLIT = re.compile(rf"([{_CJK}]+)|([A-Za-z0-9_][A-Za-z0-9_.+#/\-]*[A-Za-z0-9_+#]|[A-Za-z0-9_])")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_SEPARATORS = re.compile(r"[_.\-/]+")


def tokenize(text: str) -> list[str]:
    """Tokens in text order, with repeats; an identifier yields itself and then its parts."""
    out: list[str] = []
    for cjk, word in _SPLIT.findall(text):
        if cjk:
            if len(cjk) == 1:
                out.append(cjk)
            else:
                out.extend(cjk[i : i + 2] for i in range(len(cjk) - 1))
            continue
        _add_word(word, out)
    return out


def _add_word(word: str, out: list[str]) -> None:
    whole = word.lower()
    pieces = [p for chunk in _SEPARATORS.split(word) for p in _PARTS.findall(chunk)] if _is_compound(word) else []
    if whole not in STOPWORDS or pieces:
        out.append(whole)
    for piece in pieces:
        lowered = piece.lower()
        if lowered != whole and lowered not in STOPWORDS:
            out.append(lowered)


def _is_compound(word: str) -> bool:
    return bool(_SEPARATORS.search(word)) or (any(c.isupper() for c in word[1:]) and any(c.islower() for c in word))
