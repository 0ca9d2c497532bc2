"""Tokens for recall: CJK text as character 2-grams; words case-folded; identifiers split into their parts."""

from __future__ import annotations

import re

# English words that carry no topic: function words, and the talk that wraps a question in an agent prompt
# ("please explain", "don't change anything yet", "a question from a teammate"). Kept small and general: a word
# that names a topic in some vault (file, read, change, touch) is not here; IDF weighs those.
STOPWORDS = frozenset(
    """a about above after again against all also am an and any anybody anyone anything are aren as at be because
    been before being below between both but by can cannot could couldn did didn do does doesn doing don done down
    during each either else etc ever every few for from further had hadn has hasn have haven having he her here hers
    herself him himself his how however i i'd i'll i'm i've if in into is isn it it's its itself just let's ll me
    might mine more most must mustn my myself need needn no nor not now of off often on once only or other others
    ought our ours ourselves out over own please quite rather re really s same shall shan she should shouldn since
    so some somebody someone something such t than thank thanks that the their theirs them themselves then there
    these they this those though through thus to too under until up upon us ve very via was wasn we were weren what
    whatever when whenever where whereas wherever whether which while who whom whose why will with within without
    won would wouldn yet you your yours yourself yourselves
    hi hello hey ok okay sure maybe kindly
    explain explanation question questions teammate teammates colleague colleagues coworker asked asks ask
    wondering wonder""".split()
)

# Words of the instructions around a question in an agent prompt ("read the README first", "don't change any
# files yet"). They name topics in some vaults, so recall discounts them instead of dropping them.
INSTRUCTION_WORDS = frozenset(
    """readme docs documentation code codebase repo repository project file files folder directory read look
    check review change changes modify edit touch first before after now answer tell describe show help fix
    文件 代码 仓库 项目 目录 修改 改动 阅读 先读 回答 说明""".split()
)

# Chinese 2-grams that are grammar or the talk around a question, not a topic.
CJK_STOPWORDS = frozenset(
    """这个 那个 一个 一下 一些 什么 怎么 怎样 如何 为什么 可以 能否 是否 需要 请问 我们 你们 他们 我的 你的 的话 以及 或者
    因为 所以 但是 如果 然后 还是 已经 就是 只是 只需 不要 任何 问题 这里 那里 一样 非常 谢谢 同事
    解释 请帮 帮我""".split()
)

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"  # Han, Kana, Hangul
_CJK_RANGES = (
    ("\u3400", "\u4dbf"),
    ("\u4e00", "\u9fff"),
    ("\uf900", "\ufaff"),
    ("\u3040", "\u30ff"),
    ("\uac00", "\ud7af"),
)
_CJK_LOWEST = "\u3040"
_WORD = r"([A-Za-z0-9_][A-Za-z0-9_.+#/\-]*[A-Za-z0-9_+#]|[A-Za-z0-9_])(?:'(?:s|t|d|ll|re|ve|m)\b)?"
# Compiling the CJK character class costs ~5 ms (the regex compiler walks all 39,000 characters in Python), more
# than a whole hook run on a small vault: text with no character at or above U+3040 cannot hold CJK, and is split
# with the word pattern alone (the same matches: the CJK alternative never matches there).
_WORDS_ONLY = re.compile(_WORD)
_split: re.Pattern[str] | None = None


def _split_pattern() -> re.Pattern[str]:
    global _split
    if _split is None:
        _split = re.compile(rf"([{_CJK}]+)|{_WORD}")
    return _split


_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_SEPARATORS = re.compile(r"[_.\-/]+")


def tokenize(text: str) -> list[str]:
    """Tokens in text order, with repeats; an identifier yields itself and then its parts."""
    out: list[str] = []
    if not text or max(text) < _CJK_LOWEST:
        for word in _WORDS_ONLY.findall(text):
            _add_word(word, out)
        return out
    for cjk, word in _split_pattern().findall(text):
        if cjk:
            if len(cjk) == 1:
                out.append(cjk)
            else:
                out.extend(g for g in (cjk[i : i + 2] for i in range(len(cjk) - 1)) if g not in CJK_STOPWORDS)
            continue
        _add_word(word, out)
    return out


def stem(word: str) -> str:
    """A light English stem for plain words (plurals, -ing, -ed), so `videos` meets `video` and `buffering` meets
    `buffer`; identifiers and short words are left alone."""
    if len(word) <= 3 or not word.isalpha() or not word.isascii():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    elif word.endswith("ing") and len(word) > 5:
        word = word[:-3]
        if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "lsz":
            word = word[:-1]
    elif word.endswith("ed") and len(word) > 4:
        word = word[:-2]
        if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "lsz":
            word = word[:-1]
    return word


def is_cjk(token: str) -> bool:
    """Whether a token is CJK text (a 2-gram or a lone character)."""
    if not token:
        return False
    first = token[0]
    return any(low <= first <= high for low, high in _CJK_RANGES)


def _add_word(word: str, out: list[str]) -> None:
    word = word.strip(".-/")
    if not word:
        return
    whole = word.lower()
    pieces = [p for chunk in _SEPARATORS.split(word) for p in _PARTS.findall(chunk)] if _is_compound(word) else []
    if not pieces:
        if whole not in STOPWORDS:
            out.append(stem(whole))
        return
    out.append(whole)
    for piece in pieces:
        lowered = piece.lower()
        if lowered != whole and lowered not in STOPWORDS:
            out.append(lowered)


def _is_compound(word: str) -> bool:
    return bool(_SEPARATORS.search(word)) or (any(c.isupper() for c in word[1:]) and any(c.islower() for c in word))
