"""The tokenizer without `re` (what the hook runs and the index is built with) gives exactly the tokens of the
regex tokenizer it replaced, kept here as the specification, on random text of every kind."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import example, given, settings
from hypothesis import strategies as st

from cairn.hot import tokens

# The specification: the regexes the tokenizer was written with.
_SPLIT = re.compile(
    rf"([{tokens._CJK}]+)|([A-Za-z0-9_][A-Za-z0-9_.+#/\-]*[A-Za-z0-9_+#]|[A-Za-z0-9_])(?:'(?:s|t|d|ll|re|ve|m)\b)?"
)
_CJK_CHAR = re.compile(f"[{tokens._CJK}]")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_SEPARATORS = re.compile(r"[_.\-/]+")


_FULL_WIDTH = re.compile("[\uff01-\uff5e]")
_HALF_KANA = re.compile("[\uff61-\uff9f]+")


_LETTER = re.compile(r"[^\W\d_]")


def reference_fold(text: str) -> str:
    """Full-width ASCII as ASCII, half-width katakana as NFKC reads it (`tokens.fold_width`); then NFC, and each
    letter as NFKC reads it (`tokens.fold_letters`)."""
    text = _FULL_WIDTH.sub(lambda m: unicodedata.normalize("NFKC", m.group()), text)
    text = _HALF_KANA.sub(lambda m: unicodedata.normalize("NFKC", m.group()), text)
    text = unicodedata.normalize("NFC", text)
    return _LETTER.sub(lambda m: unicodedata.normalize("NFKC", m.group()) if m.group().isalpha() else m.group(), text)


def reference_tokenize(text: str) -> list[str]:
    """The tokenizer as it was: one regex with the CJK class, identifiers split with two more; full-width ASCII and
    half-width katakana folded first."""
    out: list[str] = []
    text = reference_fold(text)
    for cjk, word in _SPLIT.findall(text):
        if cjk:
            if len(cjk) == 1:
                out.append(cjk)
            else:
                out.extend(g for g in (cjk[i : i + 2] for i in range(len(cjk) - 1)) if g not in tokens.CJK_STOPWORDS)
            continue
        _reference_add_word(word, out)
    return out


def _reference_add_word(word: str, out: list[str]) -> None:
    word = word.strip(".-/")
    if not word:
        return
    whole = word.lower()
    compound = bool(_SEPARATORS.search(word)) or (any(c.isupper() for c in word[1:]) and any(c.islower() for c in word))
    pieces = [p for chunk in _SEPARATORS.split(word) for p in _PARTS.findall(chunk)] if compound else []
    if not pieces:
        if whole not in tokens.STOPWORDS:
            out.append(tokens.stem(whole))
        return
    out.append(whole)
    for piece in pieces:
        lowered = piece.lower()
        if lowered != whole and lowered not in tokens.STOPWORDS:
            out.append(lowered)


PIECES = st.sampled_from(
    [
        "git",
        "push",
        "--force",
        "HTTPServer",
        "HTTPServer2x",
        "XMLHttpRequest",
        "ABCdef",
        "aB",
        "Ab",
        "snake_case",
        "a.b/c-d",
        "don't",
        "it's",
        "we'll",
        "they're",
        "I've",
        "I'm",
        "he'd",
        "'s",
        "'ll",
        "'S",
        "C++",
        "C#",
        "+x",
        "#1",
        "v1.2.3",
        "_x_",
        "__",
        " ",
        "\n",
        "\t",
        "'",
        "''",
        "-",
        ".",
        "/",
        "+",
        "#",
        "?",
        "切换分支",
        "暂存",
        "的",
        "カタカナ",
        "・",
        "한국어",
        "café",
        "naïve",
        "é",
        "—",
        "’s",
        "😀",
        "٣",
        "²",
        "\u3040",
        "\u30ff",
        "\u33ff",
        "\u3400",
        "\ud7af",
        "\ufaff",
        "\ud800",
        "ß",
        "ｇｉｔ",
        "ＣＩ＿ｘ",
        "１２",
        "ﾃｽﾄ",
        "ﾄﾞｯｶｰ",
        "ｶﾞ",
        "\uff9e",
        "\uff61",
        "\uff5e",
        "\uff5f",
        "re\u0301sume\u0301",
        "\ufb01le",
        "\u017f",
        "\U0001d41b",
        "\u2122",
        "\u00b2",
        "\u0301",
    ]
)
TEXT = st.one_of(
    st.lists(PIECES, max_size=30).map("".join),
    st.text(max_size=80),
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7F), max_size=80),
    st.text(alphabet=st.sampled_from("aZ09_.+#/-' sltdrvmé中"), max_size=40),
    st.text(alphabet=st.characters(min_codepoint=0x3000, max_codepoint=0xFFFF), max_size=30),
)


@settings(max_examples=3000, deadline=None)
@given(TEXT)
@example("it's")
@example("it'sx")
@example("it's中")
@example("it'sé")
@example("don't.foo")
@example("ab.'s")
@example("a'll'll")
@example("x's's")
@example("HTTPServer2x-YAMLFile_v2")
@example("ｇｉｔ ｐｕｓｈ ﾃｽﾄが落ちる")
@example("ﾞｶﾞ")
@example("re\u0301sume\u0301 \ufb01le Classy\u2122 x\u00b2")
def test_tokenize_matches_the_regex_tokenizer(text: str) -> None:
    assert tokens.tokenize(text) == reference_tokenize(text)


@settings(max_examples=1000, deadline=None)
@given(st.text(max_size=3))
def test_is_cjk_matches_the_character_class(token: str) -> None:
    assert tokens.is_cjk(token) == bool(_CJK_CHAR.match(token))


@settings(max_examples=1000, deadline=None)
@given(st.text(max_size=200))
def test_the_cjk_mask_matches_the_character_class(text: str) -> None:
    assert tokens._cjk_mask(text) == bytes(bool(_CJK_CHAR.match(char)) for char in text)


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet=st.sampled_from("ABCXYZabcxyz0189+#"), max_size=20))
def test_identifier_parts_match_the_parts_regex(chunk: str) -> None:
    assert tokens._parts(chunk) == _PARTS.findall(chunk)


@settings(max_examples=1000, deadline=None)
@given(st.characters())
def test_word_characters_are_the_regex_word_class(char: str) -> None:
    assert tokens._is_word_char(char) == bool(re.match(r"\w", char))


def test_every_character_is_a_word_character_as_the_regex_says() -> None:
    word = re.compile(r"\w")
    assert all(tokens._is_word_char(chr(c)) == bool(word.match(chr(c))) for c in range(0x110000))


def test_range_edges() -> None:
    for code in (
        0x303F,
        0x3040,
        0x30FF,
        0x3100,
        0x33FF,
        0x3400,
        0x4D00,
        0x4DBF,
        0x4DC0,
        0x4DFF,
        0x4E00,
        0x9FFF,
        0xA000,
        0xABFF,
        0xAC00,
        0xD700,
        0xD7AF,
        0xD7B0,
        0xD7FF,
        0xF8FF,
        0xF900,
        0xFAFF,
        0xFB00,
        0x13040,
        0x14E00,
        0x1AC00,
        0x103400,
    ):
        char = chr(code)
        assert tokens.is_cjk(char) == bool(_CJK_CHAR.match(char)), hex(code)
        assert tokens._cjk_mask(char) == bytes([bool(_CJK_CHAR.match(char))]), hex(code)
        for text in (char, f"ab{char}{char}cd", f"x {char}y", f"it's{char}", f"{char}don't"):
            assert tokens.tokenize(text) == reference_tokenize(text), hex(code)


def test_every_bmp_character_is_classed_as_the_cjk_regex_says() -> None:
    text = "".join(chr(c) for c in range(0x10000))
    assert tokens._cjk_mask(text) == bytes(bool(_CJK_CHAR.match(char)) for char in text)


def test_long_prompts_match() -> None:
    rng = __import__("random").Random(7)
    words = ["git", "rebase", "it's", "HTTPServer", "a.b/c", "暂存修改", "😀", "don't", "C++", "--force", "é", "x_y"]
    for _ in range(30):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(100, 2000)))
        assert tokens.tokenize(text) == reference_tokenize(text)
