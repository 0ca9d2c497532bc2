"""Tokens for recall: CJK text as character 2-grams; words case-folded; identifiers split into their parts."""

TYPE_CHECKING = False  # no `typing` import on the hook's path
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

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

# The particle 的 joins two words ("提交的打包文件": 提交 的 打包文件), and the two 2-grams around it in a run ("交的",
# "的打") straddle them: no word, but rare terms in a vault of Chinese cards, whose stock phrasings hold them (the
# `X的Y` of many a one-line description), so they lifted near-topic cards and the prompt's best possible score. A
# prompt's terms leave them out (`_prompt_terms`, `particle_straddles`). At a run's edge ("channel 的缓冲区",
# "要注意的") the 2-gram is kept (left out there too, gostyle-agent got a false injection), and cards keep theirs
# (left out of the index too, gitflight-agent and k8sops-agent lost right cards). Words only: tldr-zh-dev
# Injection@1 0.215 -> 0.231, its false injection rate 0.021 -> 0.026; on the other suites and the follow-ups no
# Injection@1 lower, no false injection rate higher.
# Nothing fitted: 的 alone, the commonest particle (others, 了 着 地 得 将 把, measured: no more on tldr-zh-dev).
CJK_PARTICLE = "的"

# Han, Kana, Hangul: runs of these become character 2-grams. (`_CJK` is the same set as a regex class, for tests.)
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_CJK_RANGES = (
    ("\u3400", "\u4dbf"),
    ("\u4e00", "\u9fff"),
    ("\uf900", "\ufaff"),
    ("\u3040", "\u30ff"),
    ("\uac00", "\ud7af"),
)
_CJK_LOWEST = "\u3040"

# Words, without `re` (importing it costs the hook more than a query). The specification, which the index was
# built with and `tests/test_tokens_equivalence.py` holds this code equal to, is the regex
#     ([CJK]+) | ([A-Za-z0-9_][A-Za-z0-9_.+#/\-]*[A-Za-z0-9_+#]|[A-Za-z0-9_]) (?:'(?:s|t|d|ll|re|ve|m)\b)?
# found left to right. A word starts at an ASCII letter, digit or `_`, runs on over those and `.+#/-`, and ends at
# its last character that is not `.`, `/` or `-`; an English contraction after it (`'s`, `'ll`, ...) is skipped.
# So a word is what is left of each run of `_RUN` characters once `_LEAD` is stripped from its left and `_TRAIL`
# from its right (a run gives at most one word), and only a run that ends at an apostrophe can be followed by a
# contraction.
_WORD_START = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"
_RUN = _WORD_START + ".+#/-"
_LEAD = ".+#/-"
_TRAIL = "./-"
_CONTRACTIONS = ("s", "t", "d", "ll", "re", "ve", "m")
# Bytes of `text.encode("ascii", "replace")` (one per character; any other character is `?`): the run characters
# and the apostrophe stay, everything else becomes a space.
_RUNS = bytes(c if chr(c) in _RUN or c == 0x27 else 0x20 for c in range(128)) + b" " * 128
# Separators inside an identifier (`snake_case`, `a.b/c-d`), and the pieces between them.
_SEPARATORS = str.maketrans("_.-/", "    ")
_UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_DIGITS = frozenset("0123456789")


def _flags(*ranges: tuple[int, int]) -> bytes:
    """A `bytes.translate` table: 1 for the bytes in the (inclusive) ranges, 0 for the others."""
    table = bytearray(256)
    for low, high in ranges:
        table[low : high + 1] = b"\x01" * (high + 1 - low)
    return bytes(table)


# For the CJK mask: a character's UTF-32 bytes (lo, hi, plane, 0) tell whether it is CJK (all ranges are in plane
# 0): the rows `hi` wholly inside a range, and the three rows a range starts or ends inside, with their `lo` bound.
_ROWS_CJK = _flags((0x34, 0x4C), (0x4E, 0x9F), (0xF9, 0xFA), (0xAC, 0xD6))
_ROW_30, _LO_FROM_40 = _flags((0x30, 0x30)), _flags((0x40, 0xFF))  # U+3040..U+30FF
_ROW_4D, _LO_TO_BF = _flags((0x4D, 0x4D)), _flags((0x00, 0xBF))  # U+4D00..U+4DBF
_ROW_D7, _LO_TO_AF = _flags((0xD7, 0xD7)), _flags((0x00, 0xAF))  # U+D700..U+D7AF
_PLANE_0 = _flags((0, 0))


def tokenize(text: str) -> list[str]:
    """Tokens in text order, with repeats; an identifier yields itself and then its parts. Full-width ASCII and
    half-width katakana are read as their usual forms first (`fold_width`), and accents and ligatures as NFC and
    NFKC read them (`fold_letters`)."""
    out: list[str] = []
    if not text:
        return out
    top = max(text)
    if top > "\x7f":
        text = _folded(text, top)
        top = max(text)
    runs = text.encode("ascii", "replace").translate(_RUNS).decode("ascii")
    mask = _cjk_mask(text) if top >= _CJK_LOWEST else b""  # below U+3040 no character is CJK
    if "'" not in runs and 1 not in mask:  # the common case: no contraction to skip, no CJK run to interleave
        for run in runs.split():
            word = run.lstrip(_LEAD).rstrip(_TRAIL)
            if word:
                _add_word(word, out)
        return out
    _tokens_in_order(text, runs, mask, out)
    return out


# Full-width ASCII (U+FF01..U+FF5E: `ｇｉｔ`, `ＣＩ`, `１２`) is ASCII moved up by U+FEE0; half-width katakana and its
# marks (U+FF61..U+FF9F: `ﾃｽﾄ`, `ﾄﾞｯｶｰ`) fold to full-width katakana as NFKC does.
_FULL_WIDTH_LOWEST = "\uff01"
_FULL_WIDTH_ASCII = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}
_HALF_KANA = ("\uff61", "\uff9f")


def fold_width(text: str) -> str:
    """Text with full-width ASCII as ASCII and half-width katakana as full-width, as NFKC reads them: a Japanese or
    Chinese input method types either form, and a card and a prompt meet only when both are read alike (these had
    no token at all). Other characters are left as they are; `unicodedata` is imported only for half-width kana."""
    text = text.translate(_FULL_WIDTH_ASCII)
    low, high = _HALF_KANA
    if not text or max(text) < low:
        return text
    import unicodedata

    out: list[str] = []
    start, end = 0, len(text)
    while start < end:
        kana = low <= text[start] <= high
        stop = start + 1
        while stop < end and (low <= text[stop] <= high) == kana:
            stop += 1
        out.append(unicodedata.normalize("NFKC", text[start:stop]) if kana else text[start:stop])
        start = stop
    return "".join(out)


def _folded(text: str, top: str) -> str:
    """Non-ASCII text as the tokens read it (`fold_width`, then `fold_letters`); top: its highest character."""
    if top >= _FULL_WIDTH_LOWEST:
        text = fold_width(text)
    return fold_letters(text)


# Characters NFC and the letter fold leave as they are, and that NFC never composes with a neighbour (no combining
# mark, no second half of a composition): CJK ideographs, kana, Hangul syllables, CJK and general punctuation, the
# Latin-1 letters. `tests/test_tokens.py` proves each range with `unicodedata`. A text of these and ASCII is read as
# it is, without importing `unicodedata`, a shared library (about 1.4 ms of the hook's start on every Chinese prompt).
_AS_IS = (
    ("\u00c0", "\u00ff"),
    ("\u2010", "\u205e"),
    ("\u3000", "\u3029"),
    ("\u3030", "\u303f"),
    ("\u3041", "\u3096"),
    ("\u309d", "\u309e"),
    ("\u30a1", "\u30fe"),
    ("\u3400", "\u4dbf"),
    ("\u4e00", "\u9fff"),
    ("\uac00", "\ud7a3"),
)


def read_as_is(text: str) -> bool:
    """Whether `fold_letters` leaves `text` as it is without looking: each character is ASCII or in `_AS_IS`."""
    return all(ch < "\x80" or any(low <= ch <= high for low, high in _AS_IS) for ch in set(text))


# Of those, the ones NFKC reads as other characters (`…` as `...`, the ideographic space as a space, `〸` as `十`):
# `tests/test_tokens.py` proves that NFKC leaves every other one alone.
_NFKC_OTHERS = frozenset(
    "\u2011\u2017\u2024\u2025\u2026\u202f\u2033\u2034\u2036\u2037\u203c\u203e\u2047\u2048\u2049\u2057"
    "\u3000\u3036\u3038\u3039\u303a"
)


def nfkc(text: str) -> str:
    """`text` in NFKC (a tag typed `ｇｉｔ` is `git`, a name with its accents as separate marks the composed one).
    Full-width ASCII is folded as NFKC folds it (`fold_width`); `unicodedata` is imported only for a text NFKC may
    still change: not for Chinese, kana or Hangul with their punctuation (`read_as_is`, and none of `_NFKC_OTHERS`),
    whose scope tags or card names would cost a Chinese prompt its import."""
    if text.isascii():
        return text
    if max(text) >= _FULL_WIDTH_LOWEST:
        text = fold_width(text)
    if read_as_is(text) and _NFKC_OTHERS.isdisjoint(text):
        return text
    import unicodedata

    return unicodedata.normalize("NFKC", text)


def fold_letters(text: str) -> str:
    """Text in NFC, each letter that NFKC reads as other letters (a ligature `ﬁ`, a mathematical `𝐛`, the long `ſ`)
    as those: an accent typed as a separate mark (as macOS may send it, NFD) cut a word where the composed letter
    does not (`résumé` gave `re` and `sume`, not `r` and `sum`), and `ﬁle` gave `le`, so a card and a prompt spelling
    a word two ways did not meet. Other compatibility forms are left as they are (NFKC reads `Classy™` as
    `ClassyTM`, `x²` as `x2`). `unicodedata` is not imported for a text `read_as_is` (an ASCII or a Chinese prompt)."""
    if read_as_is(text):
        return text
    import unicodedata

    text = unicodedata.normalize("NFC", text)
    if unicodedata.is_normalized("NFKC", text):
        return text
    return "".join(unicodedata.normalize("NFKC", ch) if not ch.isascii() and ch.isalpha() else ch for ch in text)


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


def phrases(tokens: "Sequence[str]") -> list[str]:
    """The phrases of a text's tokens (`tokenize`'s, in order): each two neighbouring words as one term, `"a b"`
    with a before b (no token holds a space, so a phrase is never a word), in text order with repeats. An
    identifier's parts, which follow it, are left out: "GitHub Actions" is the phrase `action github`, not
    `git hub`. Two CJK 2-grams that overlap are one 3-character run, not a phrase: a CJK phrase is two 2-grams side
    by side, 4 characters. What `recall`'s phrase step counts (RESULTS.md "Round 13")."""
    words: list[str] = []
    whole = ""
    for token in tokens:
        if whole and token != whole and token in whole:
            continue  # a part of the identifier before it
        whole = token
        words.append(token)
    out: list[str] = []
    last = len(words) - 1
    for i in range(last):
        a, j = words[i], i + 1
        if _overlap(a, words[j]):
            j = i + 2
            if j > last or not _overlap(words[i + 1], words[j]):
                continue
        b = words[j]
        if a < b:
            out.append(a + " " + b)
        elif b < a:
            out.append(b + " " + a)
    return out


def _overlap(a: str, b: str) -> bool:
    """Whether two tokens are CJK 2-grams that overlap (`ab`, `bc`)."""
    return len(a) == 2 and len(b) == 2 and a[1] == b[0] and a[0] >= _CJK_LOWEST and is_cjk(a) and is_cjk(b)


def is_cjk(token: str) -> bool:
    """Whether a token is CJK text (a 2-gram or a lone character)."""
    if not token:
        return False
    first = token[0]
    if first < _CJK_LOWEST:  # ASCII and every other script below the lowest CJK range
        return False
    return any(low <= first <= high for low, high in _CJK_RANGES)


def _cjk_run(text: str, mask: bytes, start: int, out: list[str]) -> int:
    """Add the tokens of the CJK run starting at `start` (a lone character, else its 2-grams that are not
    grammar); returns where the next run starts, -1 when none does."""
    stop = mask.find(0, start)
    if stop < 0:
        stop = len(text)
    if stop - start == 1:
        out.append(text[start])
    else:
        out.extend([g for i in range(start, stop - 1) if (g := text[i : i + 2]) not in CJK_STOPWORDS])
    return mask.find(1, stop)


def _cjk_mask(text: str) -> bytes:
    """One byte per character of text: 1 for a CJK character (`_CJK_RANGES`), else 0. Computed from the text's
    UTF-32 bytes with `bytes.translate` and integer bit operations, so the cost is a few passes in C, not a Python
    step per character."""
    raw = text.encode("utf-32-le", "surrogatepass")
    lo, hi, plane = raw[0::4], raw[1::4], raw[2::4]

    def bits(data: bytes, table: bytes) -> int:
        return int.from_bytes(data.translate(table), "little")

    cjk = (
        bits(hi, _ROWS_CJK)
        | bits(hi, _ROW_30) & bits(lo, _LO_FROM_40)
        | bits(hi, _ROW_4D) & bits(lo, _LO_TO_BF)
        | bits(hi, _ROW_D7) & bits(lo, _LO_TO_AF)
    ) & bits(plane, _PLANE_0)
    return cjk.to_bytes(len(text), "little")


def _is_word_char(char: str) -> bool:
    """Whether a character is a word character to a `str` regex (`\\w`, what `\\b` looks at)."""
    return char.isalnum() or char == "_"


def _tokens_in_order(text: str, runs: str, mask: bytes, out: list[str]) -> None:
    """The tokens of text when where things are matters: a contraction after a word is skipped only when a
    non-word character follows it, and CJK runs go between the words around them."""
    spaced = runs.replace("'", " ")
    end_of_text = len(text)
    cjk = mask.find(1)  # where the next CJK run starts (-1: none left)
    end = 0
    skip_to = 0  # the end of the last contraction skipped
    for run in spaced.split():
        start = spaced.find(run, end)  # nothing but spaces lies between the last run's end and this run
        end = start + len(run)
        while 0 <= cjk < start:
            cjk = _cjk_run(text, mask, cjk, out)
        if end <= skip_to:
            continue
        if start < skip_to:
            run = run[skip_to - start :]
        lead = run.lstrip(_LEAD)
        word = lead.rstrip(_TRAIL)
        if not word:
            continue
        _add_word(word, out)
        if len(word) == len(lead) and end < end_of_text and runs[end] == "'":
            for contraction in _CONTRACTIONS:  # their first letters differ: at most one can be there
                if text.startswith(contraction, end + 1):
                    after = end + 1 + len(contraction)
                    if after == end_of_text or not _is_word_char(text[after]):  # `\\b` after it
                        skip_to = after
                    break
    while cjk >= 0:
        cjk = _cjk_run(text, mask, cjk, out)


def _add_word(word: str, out: list[str]) -> None:
    """A word (ASCII, see `_RUN`) as tokens: itself, stemmed, unless a stopword; an identifier whole, then its
    parts. Remembered per word (`_WORD_TOKENS`): indexing 10,000 cards meets the same words a million times."""
    known = _WORD_TOKENS.get(word)
    if known is None:
        if len(_WORD_TOKENS) >= _WORD_TOKENS_MAX:  # a long-lived process (the MCP server) keeps a bounded memory
            _WORD_TOKENS.clear()
        known = _WORD_TOKENS[word] = _word_tokens(word)
    out.extend(known)


_WORD_TOKENS: "dict[str, tuple[str, ...]]" = {}
_WORD_TOKENS_MAX = 200_000


def _word_tokens(word: str) -> "tuple[str, ...]":
    whole = word.lower()
    pieces = [p for chunk in word.translate(_SEPARATORS).split() for p in _parts(chunk)] if _is_compound(word) else []
    if not pieces:
        return () if whole in STOPWORDS else (stem(whole),)
    out = [whole]
    for piece in pieces:
        lowered = piece.lower()
        if lowered != whole and lowered not in STOPWORDS:
            out.append(lowered)
    return tuple(out)


def _is_compound(word: str) -> bool:
    """A separator in it, or an upper-case letter after the first character and a lower-case one anywhere (the
    word is ASCII: `lower()` and `upper()` change exactly its letters of the other case)."""
    if not word.isalnum() and ("_" in word or "." in word or "-" in word or "/" in word):
        return True
    rest = word[1:]
    return rest != rest.lower() and word != word.upper()


def _parts(chunk: str) -> list[str]:
    r"""The parts of an identifier's chunk (ASCII letters, digits, `+`, `#`), as the regex
    `[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+` finds them: `HTTPServer2x` -> HTTP, Server, 2, x."""
    if chunk.isalpha() and chunk.islower():
        return [chunk]
    parts: list[str] = []
    end = len(chunk)
    i = 0
    while i < end:
        char = chunk[i]
        j = i + 1
        if char in _UPPER:
            while j < end and chunk[j] in _UPPER:
                j += 1
            if j < end and chunk[j] in _LOWER:
                if j - i > 1:  # `HTTPServer`: the capitals but the last, which starts the next part
                    j -= 1
                else:  # `Server`
                    j += 1
                    while j < end and chunk[j] in _LOWER:
                        j += 1
        elif char in _LOWER:
            while j < end and chunk[j] in _LOWER:
                j += 1
        elif char in _DIGITS:
            while j < end and chunk[j] in _DIGITS:
                j += 1
        else:  # `+` or `#`: no part
            i = j
            continue
        parts.append(chunk[i:j])
        i = j
    return parts


# -- what a prompt asks (recall's query terms) ------------------------------------------------------------------

# A term found only in pasted material (traceback frames, log lines, code) weighs this share of itself: it can
# still match a card, but it neither dilutes coverage nor inflates the query's best possible score much.
PASTED_WEIGHT = 0.2
# A CJK sentence at least this share of whose characters are instruction words or stopwords is agent boilerplate
# ("先别改任何文件", "同事问了这个问题", "只需要解释一下").
_CJK_BOILERPLATE = 0.5
_SENTENCE_ENDS = frozenset(".!?;。！？；：，\n")  # `.` and `:` only before a space (`a.b`, `C:\x` stay whole)
_CODE_STARTS = (
    "def ",
    "class ",
    "import ",
    "from ",
    "return ",
    "const ",
    "let ",
    "var ",
    "function ",
    "#include",
    ">>> ",
    "$ ",
    "at ",
    'File "',
    "Traceback (",
    "//",
)
_CODE_ENDS = ("{", "}", ";", ")", "(", "[", "]", ",")
_LOG_LEVELS = ("DEBUG", "INFO", "WARN", "WARNING", "ERROR", "FATAL", "TRACE", "CRITICAL")
_PACKAGE_DIRS = ("site-packages/", "dist-packages/", "node_modules/", "gems/", "crates/")


# What a prompt asks: a sentence ending in a question mark, starting with a question word ("why", "how", ...) or
# with an ask before one ("explain why", "I'm wondering whether"), holding a Chinese question word or particle, or
# after a label that announces a question ("Question from a teammate:", "有人问我："). When a prompt asks something,
# the terms of its other sentences (the context: repo, stack, ticket, deliverables) weigh this share of themselves,
# in coverage and in the best possible score, unless the ask says them too. No ask found: every sentence weighs fully.
# Shipped at 1.0, i.e. off: 0.02, fitted leaving a suite out on the dev suites' questions in varied agent wrappers
# (`benchmarks/wrapped.py`), drowned the situation a developer describes before a short question ("My Django template
# loops over books ... one query per book. How do I fetch the authors in one go?" got the force-push card in the
# template vault) and lowered the never-fitted wtfpython-agent suite's long-slice Recall@1 0.614 -> 0.545 (RESULTS.md,
# round 6). What a prompt asks is still found; a weight that knows the situation from the context is the open part.
CONTEXT_WEIGHT = 1.0
_QUESTION_WORDS = frozenset("why how what when where which who whose whom whether".split())
# Words that may come before a question word in an ask ("could you explain why", "I'd like to know how").
_ASK_LEADS = frozenset(
    """explain tell me us i i'm i'd want wanted like to know understand figure find out help please can could would
    you so and but just curious wondering wonder any idea ideas do""".split()
)
_ASK_LABELS = ("question", "asked", "asks", "ask", "wondering", "问", "请教")
_CJK_ASKS = ("为什么", "是否", "能否", "能不能")
# These ask only where a clause opens ("如何导出镜像", "请问怎么..."): further in, they are mostly an instruction's
# ("列出你会怎么做", "总结一下有哪些方案").
_CJK_OPENERS = ("怎么", "如何", "怎样", "什么", "哪", "有没有")
_CJK_OPENING = 3  # the furthest character an opener may start at
_CJK_PARTICLES = ("吗", "呢", "么")
# A yes/no question without its question mark: an auxiliary, then its subject ("Is it possible to ...", "Does the
# export ..."); "Do not ..." is an instruction.
_AUXILIARIES = frozenset("is are was were can could should would will does do did has have".split())
_SUBJECTS = frozenset("it there this that i we you my our the a an he she they anyone someone any".split())
# Words by which an ask points at another sentence ("Is this a bug?", "Can I do it faster?").
_POINTERS = frozenset("it this that these those them".split())
_CJK_POINTERS = ("这个", "这样", "这种", "它")
_CLAUSE_ENDS = frozenset("，;；:：")  # a sentence goes on after these
_BARE_ASK = 1  # an ask of at most this many terms points at the sentence before it
_POINTING_ASK = 3  # ... and so does one of at most this many that says "this" or "it"

# the last prompts' terms and sentences: the hook asks once per vault, with the fragments recall asks alone between
_LAST_PROMPT: "list[tuple[str, dict[str, float], tuple[tuple[str, ...], ...]]]" = []
_LAST_PROMPTS = 8


def prompt_terms(text: str) -> dict[str, float]:
    """`_prompt_terms(text)` (a fresh dict), worked out once for the same prompt asked again in a row (the layered
    hook recalls one prompt from each vault)."""
    return dict(_prompt_parts(text)[0])


def prompt_sentences(text: str) -> "tuple[tuple[str, ...], ...]":
    """The tokens of each prose sentence of a prompt that is not boilerplate (pasted material, exception lines and
    boilerplate left out; a clause ended by `;` or `，` counts as a sentence; the salient evidence, an exception
    line's words and the package a path names, left out of every sentence), as `_prompt_terms` reads it: what recall
    weighs against the vault to find a sentence about something else (`recall.FOREIGN_SHARE`)."""
    return _prompt_parts(text)[1]


def _prompt_parts(text: str) -> "tuple[dict[str, float], tuple[tuple[str, ...], ...]]":
    for seen, weights, said in _LAST_PROMPT:
        if seen == text:
            return weights, said
    sentences: list[tuple[str, ...]] = []
    weights = _prompt_terms(text, sentences)
    _LAST_PROMPT.insert(0, (text, weights, tuple(sentences)))
    del _LAST_PROMPT[_LAST_PROMPTS:]
    return weights, tuple(sentences)


# How `prompt_lines` reads each line of a prompt.
PROSE = "prose"
EXCEPTION = "exception"  # `FileNotFoundError: ...`: the salient evidence (`_exception_line`)
PASTED = "pasted"  # a line of a traceback, a log or code, or inside a ``` fence


def prompt_lines(text: str) -> "Iterator[tuple[str, str]]":
    """Each non-blank line of a prompt, stripped, with how it reads: PROSE, EXCEPTION (even inside a fence) or
    PASTED; the fence lines themselves left out. What `prompt_terms`, `prompt_fragments` and the semantic encoder's
    reading of a prompt (`cairn.semantic.encoder.question`) all go by."""
    fenced = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```") or stripped.startswith("~~~"):
            fenced = not fenced
        elif not stripped:
            continue
        elif _exception_line(stripped):
            yield EXCEPTION, stripped
        elif fenced or _pasted_line(line, stripped):
            yield PASTED, stripped
        else:
            yield PROSE, stripped


def _prompt_terms(text: str, sentences: "list[tuple[str, ...]] | None" = None) -> dict[str, float]:
    """The distinct query terms of a prompt, each with its salience (0 < s <= 1): the question's and the salient
    evidence's first, in order of appearance, then the terms found only in pasted material.

    What a prompt asks weighs fully; what only wraps or accompanies it does not drown it:
    - agent boilerplate: a sentence made only of instruction words and stopwords ("Before you touch any files,
      read the README first.", "只需要解释一下。") is left out, unless every sentence is such;
    - pasted material: lines of a traceback, a log or code (indented, in a ``` fence, or shaped like one) count at
      `PASTED_WEIGHT`, except an exception line (`FileNotFoundError: ...`) and the package a path names
      (`site-packages/acme_cli/...` -> `acme_cli`), which are the salient evidence and weigh fully;
    - context: when a sentence asks something (`_asks`, `_ask_label`; see `CONTEXT_WEIGHT`), the other prose
      sentences (the repo, the stack, the ticket, what to deliver) weigh `CONTEXT_WEIGHT`; an ask that names at
      most one term, or a few and points back ("Is this a bug?", "Can I do it faster?"), asks its neighbour too.
    A term said in the question and in pasted material or context weighs fully. `sentences`, when given, gets the
    tokens of each prose sentence that is not boilerplate (`prompt_sentences`)."""
    prose: list[list[str]] = []  # the tokens of each prose sentence
    boiler: list[bool] = []
    pasted: list[str] = []
    salient: list[str] = []
    member: list[int] = []  # each prose sentence's group (its index in asks)
    asks: list[bool] = []  # whether each sentence group is what the prompt asks
    refers: list[bool] = []  # whether it points at another sentence ("Is this a bug?")
    detect = CONTEXT_WEIGHT < 1.0  # off (shipped): what a prompt asks changes nothing, so it is not worked out
    for kind, stripped in prompt_lines(text):
        if kind == EXCEPTION:  # its words are the evidence; a path in it is pasted material
            for chunk in stripped.split():
                if "/" in chunk or "\\" in chunk:
                    pasted.extend(tokenize(chunk))
                    _package(chunk, salient)
                else:
                    salient.extend(tokenize(chunk))
            continue
        if kind == PASTED:
            pasted.extend(tokenize(stripped))
            _package(stripped, salient)
            continue
        group = False  # whether the sentence so far asks (its clauses, up to its full stop, are one group)
        pending = False  # a sentence is open
        points = False  # the sentence so far points at another ("this", "it")
        for sentence, end in _sentence_ends(stripped):
            pending = True
            tokens = tokenize(sentence)
            if tokens:
                prose.append(tokens)
                boiler.append(_boilerplate(sentence, tokens))
                member.append(len(asks))
            if detect:
                group = group or _asks(sentence, end) or (end in ":：" and end != "" and _ask_label(sentence))
                points = points or (end not in (":", "：") and _refers(sentence))  # "asked me this:" points ahead
            if end and end not in _CLAUSE_ENDS:  # "": a cut glued run or the line's end; the sentence goes on
                asks.append(group)
                refers.append(points)
                group = pending = points = False
        if pending:  # the line's last sentence had no full stop
            asks.append(group)
            refers.append(points)
    if sentences is not None:  # the salient evidence is no sentence's to discount: it weighs fully, as below
        evidence = set(salient)
        sentences.extend(
            tuple(t for t in tokens if t not in evidence)
            for tokens, skip in zip(prose, boiler, strict=True)
            if not skip
        )
    if boiler and all(boiler):
        boiler = [False] * len(boiler)
    said = [0] * len(asks)  # the terms each group says
    for tokens, group_of in zip(prose, member, strict=True):
        said[group_of] += len(tokens)
    pointed = [False] * len(asks)  # an ask that names nothing or points back ("Is this possible?", "Can I do it
    for i, (asks_i, refers_i) in enumerate(zip(asks, refers, strict=True)):  # faster?") asks what the sentence
        if asks_i and (
            said[i] <= _BARE_ASK or refers_i and said[i] <= _POINTING_ASK
        ):  # before it says (after it, for the first sentence)
            pointed[i - 1 if i else min(1, len(asks) - 1)] = True
    asks = [a or p for a, p in zip(asks, pointed, strict=True)]
    ask = [asks[m] and not b for m, b in zip(member, boiler, strict=True)]
    asked = {token for tokens, a in zip(prose, ask, strict=True) if a for token in tokens}
    context = CONTEXT_WEIGHT if asked else 1.0
    weights: dict[str, float] = {}
    for tokens, skip in zip(prose, boiler, strict=True):
        if not skip:
            for token in tokens:
                weights[token] = max(weights.get(token, 0.0), 1.0 if token in asked else context)
    for token in salient:
        weights[token] = 1.0
    for token in pasted:
        if token not in weights:
            weights[token] = PASTED_WEIGHT
    if not weights:  # nothing but boilerplate sentences among pasted ones: take the boilerplate after all
        for tokens in prose:
            for token in tokens:
                weights.setdefault(token, 1.0)
    straddles = particle_straddles(text)
    return {token: weight for token, weight in weights.items() if token not in straddles} if straddles else weights


def particle_straddles(text: str) -> "set[str]":
    """The 2-grams around each `CJK_PARTICLE` inside a CJK run of `text` (one on either side of it), which straddle
    the two words it joins, as the tokens read them (a compatibility ideograph beside it, folded)."""
    out: set[str] = set()
    if CJK_PARTICLE not in text:
        return out
    text = _folded(text, max(text))
    at = text.find(CJK_PARTICLE, 1)
    while 0 < at < len(text) - 1:
        before, after = text[at - 1 : at + 1], text[at : at + 2]
        if is_cjk(before[0]) and is_cjk(after[1]):
            out.update((before, after))
        at = text.find(CJK_PARTICLE, at + 1)
    return out


def _asks(sentence: str, end: str) -> bool:
    """Whether a sentence asks something (see `CONTEXT_WEIGHT`); end: the character that ended it."""
    if end in "?？" and end:
        return True
    text = sentence.strip()
    if text[-1:] in "?？" and text:
        return True
    if max(text, default=" ") >= _CJK_LOWEST:
        if any(word in text for word in _CJK_ASKS) or text.endswith(_CJK_PARTICLES):
            return True
        return any(0 <= text.find(word) <= _CJK_OPENING for word in _CJK_OPENERS)
    words = [word.strip(",;\"'()") for word in text.lower().split()[:6]]
    if len(words) > 1 and words[0] in _AUXILIARIES and words[1] in _SUBJECTS:  # "Is it possible to ...", no "?"
        return True
    for word in words:
        if word in _QUESTION_WORDS:
            return True
        if word not in _ASK_LEADS:
            return False
    return False


def _refers(sentence: str) -> bool:
    """Whether a sentence points at another ("this", "it", "这个")."""
    if max(sentence, default=" ") >= _CJK_LOWEST:
        return any(word in sentence for word in _CJK_POINTERS)
    words = [word.strip(",;\"'()?!.") for word in sentence.lower().split()]
    # "is it possible", "was it ever": a dummy `it`, pointing at nothing
    return any(
        word in _POINTERS and not (word == "it" and words[i - 1 : i] in (["is"], ["was"]))
        for i, word in enumerate(words)
    )


def _ask_label(label: str) -> bool:
    """Whether a label that ends in a colon announces a question ("Question from a teammate:", "有人问我：")."""
    if not label:
        return False
    lowered = label.lower()
    return any(word in lowered for word in _ASK_LABELS)


def _package(text: str, out: list[str]) -> None:
    """The package a path names (`.../site-packages/acme_cli/...` -> `acme_cli`): salient evidence."""
    for marker in _PACKAGE_DIRS:
        at = text.find(marker)
        if at >= 0:
            name = text[at + len(marker) :].split("/", 1)[0].strip("\"'")
            if name:
                out.extend(tokenize(name))


# A capitalised word that opens an instruction to the agent, or a question, glued to the sentence before it without
# a full stop ("... instead of the request details Give me the root cause first", "... in a loop Why does ..."):
# where `prompt_fragments` cuts a sentence in two.
_INSTRUCTION_OPENERS = frozenset(
    """Give Explain Tell Don't Please Run Keep Start Post Reply Answer Walk Check Show Write Make Fix Find Summarise
    Summarize List Add Just No Focus Assume Include Avoid Be Use Note Stick Point Send Look Let Help Propose Suggest
    Return Read Open Describe""".split()
)
_GLUED_OPENERS = _INSTRUCTION_OPENERS | frozenset("Do Can Could Is Are Should Would What Why How".split())
_CLOSING = frozenset(")`'\"")
_GLUE_AFTER = _LOWER | _DIGITS | _CLOSING
_CJK_FULL_STOPS = frozenset("。！？；：")
# A word whose colon introduces a message, not a sentence ("... throws TypeError: Do not know how to serialize a
# BigInt", "circular import error: cannot import name ..."): no fragment ends there.
_MESSAGE_LABELS = ("error", "exception", "warning", "fatal", "panic", "failed", "failure")
# A fragment asked alone names at least this many terms that are not instruction words.
FRAGMENT_MIN_TERMS = 3


def prompt_fragments(text: str) -> "list[str]":
    """The parts of a prompt that recall may ask alone (`recall._fragment_pick`): its prose sentences (cut at `.`,
    `!`, `?` or `;` before a space, at a lower-case word's `:` before a space unless it labels a message, at a CJK
    full stop, and before a capitalised instruction or question glued on without a full stop, `_GLUED_OPENERS`), and
    each exception line whole; never inside a `code span`, a quoted message or command. Pasted lines and fenced
    blocks are no fragment; neither is one that is all boilerplate or names fewer than `FRAGMENT_MIN_TERMS` terms
    that are not instruction words; nor is an instruction to the agent (`_instruction`) when another fragment is not
    one. A prompt of fewer than two fragments has none: it was asked whole. In the prompt's order."""
    return [piece for _, piece in _fragments(text)]


def prose_fragments(text: str) -> "list[str]":
    """The fragments of `prompt_fragments` that are prose, not exception lines: two or more, and the prompt says
    more than one thing in words (a question and its context, or an agent's wrapper around it)."""
    return [piece for kind, piece in _fragments(text) if kind == PROSE]


def _fragments(text: str) -> "list[tuple[str, str]]":
    """`prompt_fragments`, each with its line's kind (PROSE or EXCEPTION)."""
    pieces: list[tuple[str, str]] = []
    for kind, stripped in prompt_lines(text):
        if kind == EXCEPTION:
            pieces.append((kind, stripped))
        elif kind == PROSE:
            cut: list[str] = []
            _cut_fragments(stripped, cut)
            pieces.extend((kind, piece) for piece in cut)
    out = []
    for kind, piece in pieces:
        tokens = tokenize(piece)
        named = {token for token in tokens if token not in INSTRUCTION_WORDS}
        if len(named) >= FRAGMENT_MIN_TERMS and not _boilerplate(piece, tokens):
            out.append((kind, piece))
    if len(out) < 2:
        return []  # one fragment: the prompt itself, all but a few words, is what recall already asked
    asked = [(kind, piece) for kind, piece in out if not _instruction(piece)]
    return asked if asked else out


def _instruction(fragment: str) -> bool:
    """Whether a fragment opens with an imperative addressed to the agent ("Keep changes small and run the tests
    for the package you touch."): beside a fragment that does not, it says how to work, not what is asked."""
    first = fragment.split(None, 1)[0].rstrip(".,;:!?")
    return first[:1].upper() + first[1:] in _INSTRUCTION_OPENERS


def _cut_fragments(line: str, out: list[str]) -> None:
    """Add the fragments of a prose line to out (see `prompt_fragments`), read word by word."""
    for ending in _CJK_FULL_STOPS:
        if ending in line:
            line = line.replace(ending, ending + "\n")
    for part in line.splitlines():
        words = part.split()
        start = 0
        quoted = False  # inside a `code span`: a pasted message or command, not the prompt's sentences
        for i in range(len(words) - 1):
            quoted ^= words[i].count("`") % 2 == 1
            if not quoted and _ends_fragment(words[i], words[i + 1]):
                out.append(" ".join(words[start : i + 1]))
                start = i + 1
        if start < len(words):
            out.append(" ".join(words[start:]))


def _ends_fragment(word: str, following: str) -> bool:
    """Whether a fragment ends after `word` (the next word: `following`): a full stop, a lower-case word's colon that
    is no message label's, or a capitalised instruction or question glued on next."""
    last = word[-1]
    if last in ".!?;":
        return True
    if last == ":":
        return word[-2:-1] in _LOWER | _CLOSING and not word[:-1].lower().endswith(_MESSAGE_LABELS)
    return last in _GLUE_AFTER and following.rstrip(".,;:!?") in _GLUED_OPENERS


def _sentences(line: str) -> list[str]:
    """The sentences of a line of prose; a trailing run of agent boilerplate that starts with a capital after a
    lower-case word ("... the words I type in Don't change anything yet, just explain.", a question pasted without
    its full stop) is a sentence of its own (`_cut_tail`)."""
    return [sentence for sentence, _ in _sentence_ends(line)]


def _sentence_ends(line: str) -> list[tuple[str, str]]:
    """`_sentences(line)`, each with the character that ended it ("" at the end of the line or of a cut)."""
    out: list[str] = []
    ends: list[str] = []
    start = 0
    n = len(line)
    for i, char in enumerate(line):
        if char in _SENTENCE_ENDS:
            if char in ".:" and i + 1 < n and not line[i + 1].isspace():
                continue
            if i > start:
                _cut_tail(line[start:i], out)
                ends.extend([""] * (len(out) - len(ends) - 1) + [char])
            start = i + 1
        elif char == ":" and (i + 1 == n or line[i + 1].isspace()):
            _cut_tail(line[start:i], out)
            ends.extend([""] * (len(out) - len(ends) - 1) + [char])
            start = i + 1
    if start < n:
        _cut_tail(line[start:], out)
    ends.extend([""] * (len(out) - len(ends)))
    return list(zip(out, ends, strict=True))


# What may end a question a boilerplate run is glued to: a lower-case letter, a digit, a closing bracket or quote.
_QUESTION_ENDS = _LOWER | _DIGITS | frozenset(")]}`'\"")
# The longest glued run looked for: an instruction is a short clause.
_TAIL_CHARS = 160


def _cut_tail(sentence: str, out: list[str]) -> None:
    """Add the sentence to out, as two when it ends in the longest run of boilerplate (only instruction words and
    stopwords, as `_boilerplate` reads English) that starts at a capital after a space after a lower-case letter, a
    digit or a closing bracket or quote, within the last `_TAIL_CHARS` characters. Read word by word from the right,
    stopping at the first word that is not boilerplate (a longer run holds it) or is CJK."""
    if " " not in sentence:  # one word: nothing to cut (a paste of thousands of one-word lines reads each once)
        out.append(sentence)
        return
    cut = -1
    seen = 0  # the tokens of the run so far
    end = len(sentence)
    stop = max(0, len(sentence) - _TAIL_CHARS)
    while end > stop:
        space = sentence.rfind(" ", stop, end)
        word = sentence[space + 1 : end]
        if word and max(word) >= _CJK_LOWEST:
            break
        tokens = tokenize(word)
        if any(token not in INSTRUCTION_WORDS for token in tokens):
            break
        seen += len(tokens)
        if space <= 0:
            break
        if seen and word[:1] in _UPPER and sentence[space - 1] in _QUESTION_ENDS:
            cut = space
        end = space
    if cut > 0:
        out.append(sentence[:cut])
        out.append(sentence[cut + 1 :])
    else:
        out.append(sentence)


def _boilerplate(sentence: str, tokens: list[str]) -> bool:
    """Only instruction words and stopwords: the talk around a question, not the question."""
    for token in tokens:  # `tokenize` gives ASCII words and CJK text: a token from U+3040 up is CJK
        if token[0] < _CJK_LOWEST and token not in INSTRUCTION_WORDS:
            return False
    if max(sentence) < _CJK_LOWEST:
        return True
    mask = _cjk_mask(sentence)
    cjk = mask.count(1)
    if not cjk:
        return True
    covered = bytearray(len(sentence) + 1)  # the characters inside a grammar or instruction 2-gram
    i = mask.find(1)
    while i >= 0:
        pair = sentence[i : i + 2]
        if len(pair) == 2 and (pair in INSTRUCTION_WORDS or pair in CJK_STOPWORDS):
            covered[i] = covered[i + 1] = 1
        i = mask.find(1, i + 1)
    return covered.count(1) >= _CJK_BOILERPLATE * cjk


def _exception_line(stripped: str) -> bool:
    """`FileNotFoundError: [Errno 2] ...`, `java.lang.IllegalStateException: ...`, `panic: ...`."""
    head = stripped.split(":", 1)[0] if ":" in stripped else ""
    if not head or " " in head:
        return False
    name = head.rsplit(".", 1)[-1]
    return name.endswith(("Error", "Exception", "Warning", "Exit", "Interrupt")) or name in ("panic", "error", "fatal")


def _pasted_line(line: str, stripped: str) -> bool:
    """A line of a traceback, a log or code, by its shape."""
    if line.startswith(("    ", "\t")):
        return True
    if stripped.startswith(_CODE_STARTS) or stripped.endswith(_CODE_ENDS):
        return True
    if stripped[:1].isdigit() and stripped[:4].isdigit() and stripped[4:5] in "-/.":  # 2024-05-01 12:00 ...
        return True
    first = stripped.split(None, 1)[0].strip("[]():")
    if first in _LOG_LEVELS:
        return True
    if stripped.startswith("["):
        inside = stripped[1:].split("]", 1)[0]
        return inside.strip() in _LOG_LEVELS or inside[:4].isdigit()
    return False
