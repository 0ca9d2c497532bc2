"""Which bullets of a CLAUDE.md / AGENTS.md are lessons (the rule `cairn import` applies), and what each is called.

A lesson states a situation and its consequence or fix, with a reason or a failure: "X happens when Y; do Z".
A bullet is kept when its prose (the text outside code spans) has at least three words and names a reason
(because, otherwise, so that, to avoid, 因为, 否则, ...) or a failure or consequence (fails, breaks, flaky,
silently, drops, lost, rejected, stale, error, 失败, 报错, 导致, 丢失, ため, 失敗, 때문, 실패, ...). Everything else is an instruction and is
dropped, with why: a command (a code span or a shell line such as `make lint`, with at most a two-word label), an
instruction or style rule with no reason or failure ("Use black and ruff", "Prefer pathlib", "Never commit to
main"), a statement with no reason or failure (project facts), and every bullet of a section whose heading names
reference material rather than lessons (Commands, Scripts, Setup, Installation, Usage, Code style, Formatting,
Naming, Conventions, Project structure, Overview, Tech stack, Dependencies, Environment, and their Chinese
equivalents), unless the heading also says lessons (Gotchas, Pitfalls, Known issues, Troubleshooting, 踩坑,
注意事项, ...) or `--section` names it. Paragraphs are not read (lessons are bullets); they are listed as dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cairn.terminal import columns

CJK = "\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_CJK_CHAR = re.compile(f"[{CJK}]")
_CJK_BREAK = re.compile(f"(?<=[{CJK}])[ \\t]*\\n\\s*(?=[{CJK}])")
# A code span opens with a whole run of backticks and closes at the next run of the same length (CommonMark). Read
# from any backtick of a run (`(`+)(.+?)\1`), a bullet of 4,000 backticks took 3 s to judge, one of 40,000 an hour;
# from a run's first backtick only, and a span kept to CODE_SPAN_CHARS, the time follows the text.
CODE_SPAN_CHARS = 2000
_CODE_SPAN = re.compile(rf"(?<!`)(`+)(?!`)(.{{1,{CODE_SPAN_CHARS}}}?)(?<!`)\1(?!`)", re.DOTALL)
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")

# Latin words are matched between non-letters rather than at `\b`: a Chinese sentence puts an English word between
# CJK characters with no space ("偶尔会timeout"), where `\b` finds no edge.
_REASON = re.compile(
    r"(?<![A-Za-z0-9_])(?:because|since|otherwise|or else|so that|in order to|to (?:avoid|prevent)|which means|means|"
    r"causes?|caused|causing|leads? to|led to|results? in|resulted in|happens?|happened|"
    r"fail|fails|failed|failing|failures?|breaks|broke|broken|crash(?:es|ed|ing)?|hangs?|hung|freezes|froze|"
    r"flak(?:y|e|es|ed|iness)|silently|drops|dropped|lose|loses|lost|losing|leaks?|leaked|corrupt(?:s|ed|ion)?|"
    r"deadlocks?|race conditions?|races|times? out|timed out|timeouts?|rejected|rejects|blocks|blocked|stale|"
    r"wrong|errors?(?! handling| messages?| codes?| pages?)|exceptions?(?! handling)|bugs?|regressions?|outages?|incidents?|missing|slow(?:s|er|ly|down)?|"
    r"unexpected(?:ly)?|surpris\w*|gotchas?|pitfalls?|beware|careful|watch out|doesn't|does not|won't|"
    r"will not|can't|cannot|no longer|overwrites|overwritten|conflicts?|mismatch\w*|out of memory|oom|"
    r"segfaults?|panics?|oom-?kill(?:ed|s)?|(?:not |non-?|ir)reproducible|non-?deterministic(?:ally)?)(?![A-Za-z0-9_])"
    r"|, so\b"
    # The same reasons and failures in Chinese, word for word where English has one (silently 悄悄, no longer 不再,
    # not reproducible 不可复现, won't 不会, cannot 无法...), so a lesson is not dropped where its translation is kept.
    r"|因为|由于|否则|不然|以免|以防|以便|避免|防止|所以|因此|意味着|导致|造成|引起|发生|失败|报错|出错|错误|异常|"
    r"崩溃|闪退|损坏|卡住|卡死|挂起|无响应|丢失|丢弃|丢掉|泄漏|泄露|超时|死锁|竞态|不稳定|偶发|偶现|阻塞|被拒|拒绝|"
    r"过期|变慢|很慢|太慢|悄悄|静默|默默|不再|不可复现|无法复现|复现不了|无法|不会|拿不到|找不到|看不到|连不上|跑不通|"
    r"缺失|缺少|意外|踩坑|陷阱|小心|当心|无效|不生效|冲突|不匹配|覆盖(?!率)|内存不足|内存溢出|故障|事故|乱码|不一致"
    # Japanese and Korean, in the forms their sentences take (kana endings, Japanese kanji such as 失敗 and 遅, Hangul
    # stems): a Japanese or Korean team's CLAUDE.md states its lessons with these.
    r"|ので|ため|せいで|さもないと|でないと|そうしないと|失敗|壊れ|消え|落ち[るたてま]|遅[いくれ]|文字化け|不具合|"
    r"障害|競合|衝突|漏れ|上書き|ずれ|止ま[るらっり]|タイムアウト|クラッシュ|フリーズ|バグ|エラー(?!ハンドリング|処理)|"
    r"때문|않으면|안 그러면|원인|실패|오류(?! 처리)|에러(?! 처리)|버그|장애|깨[지집져진]|사라[지집져질진]|느려|느립|"
    r"충돌|타임아웃|누락|덮어[쓰써]|멈[추춰춥]",
    re.IGNORECASE,
)
_IMPERATIVE = re.compile(
    r"^(?:always|never|don't|do not|do|use|prefer|avoid|keep|run|write|add|make|put|follow|name|call|import|"
    r"set|store|place|ensure|check|create|remove|delete|update|install|format|lint|test|commit|push|document|"
    r"comment|return|raise|handle|log|wrap|pin|mark|let|only|stick|stay|favor|favour|must|should|please|type)\b"
    r"|^(?:使用|用|优先|总是|始终|永远不要|不要|别|请|必须|应该|务必|保持|运行|执行|禁止|统一)",
    re.IGNORECASE,
)
_REFERENCE_HEADING = re.compile(
    r"\b(?:commands?|scripts?|setup|set up|install(?:ation|ing)?|getting started|quick ?start|usage|"
    r"(?:code|coding) (?:style|standards?)|style(?: guide)?|formatting|linting|naming|conventions?|"
    r"structure|layout|overview|tech(?:nology)? stack|dependencies|environment)\b"
    r"|命令|脚本|安装|环境|快速开始|入门|用法|使用方法|代码风格|编码风格|风格|规范|格式化|命名|项目结构|目录结构|"
    r"概述|简介|技术栈|依赖",
    re.IGNORECASE,
)
_LESSON_HEADING = re.compile(
    r"\b(?:lessons?(?: learn(?:ed|t))?|gotchas?|pitfalls?|traps?|known (?:issues|problems)|troubleshooting|caveats?|warnings?|"
    r"mistakes|post-?mortems?|incidents?)\b|经验|教训|踩坑|注意事项|常见问题|已知问题|陷阱",
    re.IGNORECASE,
)

NAME_MAX_CHARS = 80
_SHOUT = re.compile(
    r"^(?:important|note|nb|warning|caution|tip)\s*[:!-]\s*|^(?:重要|注意|警告|提示)[：:]\s*", re.IGNORECASE
)
# Each reads a run of spaces from its first (`(?<!\s)`): read again from each space, a run of 40,000 took 35 s.
_CLAUSE = re.compile(r"(?<!\s)\s*(?:;|:\s|\s[-–—]\s)|[；：]")
_SITUATION = re.compile(
    r",?(?<!\s)\s+(?:because|unless|otherwise|so that|which means)\s|,\s+so\s|，(?:因为|所以|否则|由于|以免)"
)
# A bullet that is a command line: a tool's name, then arguments (words, flags, paths), nothing else.
_SHELL = re.compile(
    r"^(?:\./\S+|make|npm|npx|yarn|pnpm|pip|pipx|uv|poetry|python3?|pytest|tox|nox|cargo|go|docker|kubectl|ruff|"
    r"mypy|bash|sh|just|bundle|rake|gradle|mvn|dotnet|git)(?:\s+[-\w./:=@,]+)*$"
)


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a bullet is a lesson; `why` says why it was dropped (empty when it is kept)."""

    lesson: bool
    why: str = ""


def flat(text: str) -> str:
    """Whitespace runs as one space, except that a line break between two CJK characters joins them (Chinese and
    Japanese put no space there)."""
    return " ".join(_CJK_BREAK.sub("", text).split())


def is_reference_section(heading: str) -> bool:
    """Whether a heading names reference material (commands, style, setup...) rather than lessons."""
    return bool(_REFERENCE_HEADING.search(heading)) and not _LESSON_HEADING.search(heading)


def without_lesson_words(heading: str) -> str:
    """A heading without its words that say lessons (`Git gotchas` -> `Git`, `Known issues` -> ``)."""
    return _LESSON_HEADING.sub(" ", heading).strip()


def judge(text: str) -> Verdict:
    """Whether a bullet's text (Markdown, flattened) states a lesson; see the module docstring for the rule."""
    text = flat(text)
    if not text:
        return Verdict(False, "the bullet has no text")
    prose = flat(_CODE_SPAN.sub(" ", text).replace("**", " ").replace("__", " "))
    has_code = _CODE_SPAN.search(text) is not None
    imperative = _IMPERATIVE.match(prose.lstrip("*_ ")) is not None
    runs = re.match(r"(?:run|execute|运行|执行)", prose.lstrip("*_ "), re.IGNORECASE) is not None
    if text.startswith("$ ") or (_SHELL.match(text) and not _REASON.search(prose)):
        return Verdict(False, "a command, not a lesson")
    if _words(prose) < 3:
        if has_code and imperative and not runs:  # "Prefer `pathlib` over `os.path`"
            return Verdict(False, _INSTRUCTION)
        if has_code:
            return Verdict(False, "a command, not a lesson")
        return Verdict(False, "too short to state a situation and its consequence")
    if _REASON.search(prose):
        return Verdict(True)
    if text.startswith("`"):
        return Verdict(False, "a command with a note, but no reason or failure")
    if imperative:
        return Verdict(False, _INSTRUCTION)
    return Verdict(False, "a statement with no reason or failure")


_INSTRUCTION = "an instruction or style rule with no reason or failure"


def _words(text: str) -> int:
    """Words in `text`, a run of CJK characters counting one word per two characters."""
    cjk = len(_CJK_CHAR.findall(text))
    latin = len(_WORD.findall(_CJK_CHAR.sub(" ", text)))
    return latin + (cjk + 1) // 2


# Korean ends a sentence with `. ` as English does, and starts the next with a Hangul syllable.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[*_\uac00-\ud7af])|(?<=[。！？])\s*")


def sentences(text: str) -> list[str]:
    """The sentences of `text` that hold a letter or a digit: a run of punctuation (`。。。`) is none. A code span
    ends no sentence (`SELECT ... FOR UPDATE`)."""
    parts = _cut(text, _SENTENCE_END, maxsplit=0)
    return [s for s in parts if _named(s)]


# A quotation (an error message: `fails with "Sandbox: rsync denied"`) is cut no more than a code span is.
_QUOTED = re.compile(r'"[^"\n]+"|“[^”\n]+”|「[^」\n]+」')


def _cut(text: str, at: re.Pattern[str], *, maxsplit: int) -> list[str]:
    """`at.split(text, maxsplit)` (no capturing groups), where `at` is never found inside a code span or a
    quotation."""
    parts, start = [], 0
    for n, found in enumerate(at.finditer(_masked(text)), 1):
        parts.append(text[start : found.start()])
        start = found.end()
        if n == maxsplit:
            break
    return [*parts, text[start:]]


def _masked(text: str) -> str:
    """`text` with the inside of each code span and quotation as `x`s, so that no pattern is found there."""
    masked = _CODE_SPAN.sub(lambda m: m.group(1) + "x" * len(m.group(2)) + m.group(1), text)
    return _QUOTED.sub(lambda m: m.group()[0] + "x" * (len(m.group()) - 2) + m.group()[-1], masked)


def _clause(text: str, at: re.Pattern[str]) -> str:
    """The shortest head of `text` that ends where `at` is found (outside code spans and quotations) and holds three
    words or more: past a label (`Rust: X; do Z` -> `Rust: X`). `text` itself when there is none."""
    for found in at.finditer(_masked(text)):
        if _words(text[: found.start()]) >= 3:
            return text[: found.start()]
    return text


# Markdown's links (their text names them) and the emoji or symbols a bullet opens with (`🚨`, `⚠️`, `✅`).
_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\s]*(?:\s+\"[^\"]*\")?\)")
_SYMBOLS = re.compile(r"^(?:[\u2190-\u2bff\U0001f000-\U0001faff][\ufe0f\u200d]*\s*)+")


def unadorned(text: str) -> str:
    """`text` without the emoji or symbols it opens with, and with each Markdown link as its text."""
    return _SYMBOLS.sub("", _LINK.sub(r"\1", text))


def lesson_name(text: str, bold_lead: str | None = None) -> str:
    """A lesson's name: its bold lead (`**Name**: ...`), else the first clause of its first sentence when the
    sentence is long and the clause has a few words, cut at a word to at most 80 columns; a link is named by its
    text, and the emoji a bullet opens with are left out. A lead or sentence of punctuation alone (`**---**`,
    `。。。`) names nothing and is passed over."""
    text, bold_lead = unadorned(text), unadorned(bold_lead) if bold_lead else None
    if bold_lead and _named(bold_lead):
        return shorten(bold_lead, NAME_MAX_CHARS).rstrip(" :.;,-：；。，")
    shout = _SHOUT.match(text)
    if shout and text[shout.end() :]:
        text = text[shout.end() :]
        text = text[0].upper() + text[1:]
    found = sentences(text)
    sentence = found[0] if found else text
    for split in (_CLAUSE, _SITUATION):  # "X; do Z", then "X happens, because Y"
        if columns(sentence) > 60:
            sentence = _clause(sentence, split)
    return shorten(sentence, NAME_MAX_CHARS).rstrip(" :.;,-：；。，")


def _named(text: str) -> bool:
    """Whether `text` holds a letter or a digit, so that it can name a card."""
    return any(ch.isalnum() for ch in text)


def shorten(text: str, limit: int) -> str:
    """`text` cut to at most `limit` terminal columns (CJK characters and Hangul take two), at a word when one is near,
    with `…`."""
    if columns(text) <= limit:
        return text
    cut = ""
    for ch in text:
        if columns(cut + ch) > limit - 1:
            break
        cut += ch
    space = cut.rfind(" ")
    if space > len(cut) // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-，；：") + "…"


__all__ = [
    "Verdict",
    "flat",
    "is_reference_section",
    "judge",
    "lesson_name",
    "sentences",
    "shorten",
    "unadorned",
    "without_lesson_words",
]
