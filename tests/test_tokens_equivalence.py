"""The tokenizer's fast paths (no CJK character class compiled for text that cannot hold CJK; `is_cjk` without a
regex) give exactly what the single-regex tokenizer gave, on random text of every kind."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.hot import tokens

_SPLIT = re.compile(
    rf"([{tokens._CJK}]+)|([A-Za-z0-9_][A-Za-z0-9_.+#/\-]*[A-Za-z0-9_+#]|[A-Za-z0-9_])(?:'(?:s|t|d|ll|re|ve|m)\b)?"
)
_CJK_CHAR = re.compile(f"[{tokens._CJK}]")


def reference_tokenize(text: str) -> list[str]:
    """The tokenizer as it was: one regex with the CJK class for every text."""
    out: list[str] = []
    for cjk, word in _SPLIT.findall(text):
        if cjk:
            if len(cjk) == 1:
                out.append(cjk)
            else:
                out.extend(g for g in (cjk[i : i + 2] for i in range(len(cjk) - 1)) if g not in tokens.CJK_STOPWORDS)
            continue
        tokens._add_word(word, out)
    return out


PIECES = st.sampled_from(
    [
        "git",
        "push",
        "--force",
        "HTTPServer",
        "snake_case",
        "a.b/c-d",
        "don't",
        "it's",
        "C++",
        "C#",
        "v1.2.3",
        "_x_",
        " ",
        "\n",
        "'",
        "-",
        ".",
        "/",
        "切换分支",
        "暂存",
        "的",
        "カタカナ",
        "한국어",
        "café",
        "naïve",
        "—",
        "’s",
        "😀",
        "\u3040",
        "\u30ff",
        "\u33ff",
        "\u3400",
        "\ud7af",
        "\ufaff",
        "ß",
    ]
)
TEXT = st.one_of(
    st.lists(PIECES, max_size=30).map("".join),
    st.text(max_size=80),
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7F), max_size=80),
    st.text(alphabet=st.characters(min_codepoint=0x3000, max_codepoint=0xFFFF), max_size=30),
)


@settings(max_examples=600, deadline=None)
@given(TEXT)
def test_tokenize_matches_the_single_regex_tokenizer(text: str) -> None:
    assert tokens.tokenize(text) == reference_tokenize(text)


@settings(max_examples=600, deadline=None)
@given(st.text(max_size=3))
def test_is_cjk_matches_the_character_class(token: str) -> None:
    assert tokens.is_cjk(token) == bool(_CJK_CHAR.match(token))


def test_range_edges() -> None:
    for code in (
        0x303F,
        0x3040,
        0x30FF,
        0x3100,
        0x33FF,
        0x3400,
        0x4DBF,
        0x4DC0,
        0x4DFF,
        0x4E00,
        0x9FFF,
        0xA000,
        0xABFF,
        0xAC00,
        0xD7AF,
        0xD7B0,
        0xF8FF,
        0xF900,
        0xFAFF,
        0xFB00,
    ):
        char = chr(code)
        assert tokens.is_cjk(char) == bool(_CJK_CHAR.match(char)), hex(code)
        for text in (char, f"ab{char}{char}cd", f"x {char}y"):
            assert tokens.tokenize(text) == reference_tokenize(text), hex(code)
