"""prompt-injection: no text telling the agent to drop its instructions or act outside the task.

Summaries go into agents' prompts as they are, so the whole card (summary and body) is read for: overriding
instructions, taking on a new role, acting without asking, hiding things from the user, sending data out,
HTML comments addressed to the agent, and invisible characters that can carry hidden text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from cairn.finding import Finding
from cairn.lint.model import ERROR, Context, Rule, Target

_S = r"[\s>]+"  # words may be folded across YAML lines or quoted with `>`
_PHRASES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (what, re.compile(pattern, re.IGNORECASE))
    for what, pattern in (
        (
            "tells the agent to ignore its instructions",
            rf"\b(?:ignore|disregard|forget|override|bypass){_S}(?:(?:all|any|every|the|your|my|of|these|those)"
            rf"{_S}){{0,3}}(?:previous|prior|above|earlier|preceding|original|system|existing|safety)?{_S}?"
            r"(?:instructions?|prompts?|rules|directions|guidelines|guardrails|context|system\s+prompt)\b",
        ),
        (
            "tells the agent to reveal its instructions",
            rf"\b(?:reveal|print|show|output|repeat|leak){_S}(?:\w+{_S}){{0,2}}(?:system{_S}prompt|"
            r"hidden\s+instructions)\b",
        ),
        (
            "gives the agent a new role",
            rf"\b(?:you{_S}are{_S}now{_S}(?:a|an|the|my|no{_S}longer|in{_S}(?:developer|god|jailbreak|DAN)"
            rf"{_S}mode)\b|from{_S}now{_S}on,?{_S}you{_S}(?:are|will|must)|act{_S}as{_S}(?:an?{_S})?"
            r"(?:unrestricted|jailbroken|DAN)\b|\bDAN\s+mode)",
        ),
        (
            "tells the agent to act without asking or to keep the user uninformed",
            rf"(?:^|[.!?:;,]\s+|\n[\s>*-]*)(?:(?:always|just|simply|please|now){_S})?(?:run|execute|apply|install|"
            rf"delete|remove|push|commit|deploy|do){_S}[^\n.]{{0,60}}?\bwithout{_S}(?:asking|confirmation|confirming|"
            rf"permission|approval|prompting|checking)\b|\b(?:do{_S}not|don'?t|never){_S}(?:tell|inform|notify|"
            rf"warn){_S}(?:the{_S})?(?:user|human|developer|operator)\b|\b(?:do{_S}not|don'?t|never){_S}ask{_S}"
            rf"(?:the{_S}(?:user|human)|for{_S}(?:permission|confirmation|approval))\b",
        ),
        (
            "tells the agent to send data out",
            r"\b(?:send|post|upload|exfiltrate|forward|transmit|leak|copy|pipe)\b[^\n]{0,100}?"
            r"(?:\b(?:credentials?|secrets?|tokens?|passwords?|api[\s_-]?keys?|private\s+keys?|env(?:ironment)?"
            r"\s+var\w*|id_rsa|cookies?|source\s+code|the\s+(?:repo|repository|codebase))|\.env\b|\.ssh|\.aws)"
            r"[^\n]{0,100}?\b(?:to|into|at)\s+(?:https?://|ftp://|\S+@\S+\.\w)",
        ),
        (
            "pipes secrets or the environment to the network",
            r"(?:\benv\b|\bprintenv\b|~/\.ssh|~/\.aws|\.env\b|id_rsa)[^\n|]{0,60}\|\s*(?:curl|wget|nc|ncat)\b",
        ),
    )
)
_COMMENT = re.compile(r"<!--(.*?)-->", re.DOTALL)
_ADDRESSED = re.compile(
    r"\b(?:ai|assistant|agent|llm|model|claude|chatgpt|gpt|codex|gemini|copilot|instructions?|system\s+prompt)\b",
    re.IGNORECASE,
)
# Unicode tag characters and bidirectional overrides: invisible to a reader, visible to a model.
_INVISIBLE = re.compile("[\U000e0000-\U000e007f\u202a-\u202e\u2066-\u2069]")


def check(target: Target, context: Context) -> Iterator[Finding]:
    text = target.text
    if not text:
        return
    for what, pattern in _PHRASES:
        for match in pattern.finditer(text):
            yield _found(target, match.start(), f"the text {what}")
    for match in _COMMENT.finditer(text):
        if _ADDRESSED.search(match.group(1)):
            yield _found(target, match.start(), "a hidden HTML comment addresses the agent")
    hidden = _INVISIBLE.search(text)
    if hidden:
        yield _found(target, hidden.start(), "the text holds invisible Unicode characters that can hide instructions")


def _found(target: Target, offset: int, what: str) -> Finding:
    return RULE.at(
        target,
        target.line_at(offset),
        f"{what}; cards state lessons, they do not instruct the agent (prompt injection)",
    )


RULE = Rule("prompt-injection", ERROR, ("security",), __doc__ or "", check, needs_card=False)
