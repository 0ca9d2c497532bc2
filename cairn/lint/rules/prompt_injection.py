"""prompt-injection: no text addressed to the agent, telling it to drop its instructions or act outside the task.

Summaries go into agents' prompts as they are, so every field (as YAML decodes it, after NFKC; the id with its
separators read as spaces; name, summary and aliases also joined, for an instruction split across them) and the body
are read for: overriding instructions, taking on a new role, acting without asking or with "pre-approved"
permissions, hiding things from the user, sending data out, chat-template role and delimiter markers (`SYSTEM:`,
`</system>`, `<|im_start|>`, `[INST]`, `### Instruction`), in English, Chinese, Japanese, Korean, Spanish, French,
German, Portuguese, Italian and Russian; paraphrases (an agent addressed as the reader, "if you are an AI",
"whatever the user asks", "ignore the above and", a changed task, covert acts, secrets put into the agent's answer);
and HTML comments, or Markdown ones (`[//]: # (...)`, a link definition's title), addressed to the agent. Each field
is also read with HTML character references decoded (`&#73;gnore`, `Ig&shy;nore`: a model reads them as the
letters), as rendered Markdown reads (percent-escapes decoded, `%49gnore`; emphasis, inline tags, comments and
one-word code spans read past, `Ig**nore**`, `I_gnore_`, `**Ignore** all`, ``Please `ignore` all``), with a word
hyphenated across a line break joined (`Ig-` and `nore` on the next line), look-alike letters and typographic
apostrophes NFKC leaves alone mapped (`ı`, `ɪ`, Armenian `օ`, `don’t`), combining marks dropped and letters spelled
one by one joined (`I.g.n.o.r.e`); the id is read as words whatever joins them (`ignore.previous.instructions`,
`IgnorePreviousInstructions`), and the name, summary and aliases with hyphens and underscores between letters as
spaces (`Ignore-all-previous-instructions`)."""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Iterator

from cairn.cards.visible import fold
from cairn.finding import Finding
from cairn.lint.model import (
    ERROR,
    PERCENT_ESCAPES,
    Context,
    Field,
    Rule,
    Target,
    decoded_references,
    field_findings,
    needle_masks,
    unpercent,
)

_S = r"[\s>]+"  # words may be folded across YAML lines or quoted with `>`
_ALL, _SERVED = "all", "served"
_I = re.IGNORECASE

_ROLE = "tells the agent it holds a chat role or delimiter marker"
_OVERRIDE = "tells the agent to ignore its instructions"
_NEW_ROLE = "gives the agent a new role"
_UNASKED = "tells the agent to act without asking or to keep the user uninformed"
_APPROVED = "claims the user has approved actions in advance"
_ADDRESSED = "addresses the agent directly"


Needles = tuple[tuple[str, ...], ...]


class _Pattern:
    """A pattern compiled when it first runs: compiling all of them took 38 ms of every process that imports the
    rule (a pre-commit lint, an index update of one card), which runs the few a card's needles call for."""

    __slots__ = ("source", "flags", "_compiled")

    def __init__(self, source: str, flags: int) -> None:
        self.source, self.flags = source, flags
        self._compiled: re.Pattern[str] | None = None

    def search(self, text: str) -> re.Match[str] | None:
        if self._compiled is None:
            self._compiled = re.compile(self.source, self.flags)
        return self._compiled.search(text)


def _p(
    what: str, pattern: str, where: str = _ALL, flags: int = _I, *, needles: tuple[str, ...] | Needles
) -> tuple[str, _Pattern, str, Needles]:
    """A pattern and its needles: strings (lowercase, spaces single; as written for a case-sensitive pattern) one
    of which any match holds, or groups of such strings, one of each group; a cheap test before the regex runs.
    A needle holds a space only where the pattern takes whitespace alone (`_S` takes `>` too), and a needle added to
    narrow a pattern holds no `i` when the pattern ignores case: `ı` and `İ` match `i` there, yet lowercase to
    something else, so such a needle would keep the pattern from text it matches."""
    groups = (needles,) if isinstance(needles[0], str) else needles
    return what, _Pattern(pattern, flags), where, groups


_PATTERNS: tuple[tuple[str, _Pattern, str, Needles], ...] = (
    _p(
        _OVERRIDE,
        rf"\b(?:ignore|disregard|forget|override|bypass|skip|discard|abandon){_S}(?:(?:all|any|every|each|the|your|my|of|"
        rf"these|those)"
        rf"{_S}){{0,3}}(?:previous|prior|above|earlier|preceding|original|system|existing|safety|former)?{_S}?"
        r"(?:instructions?|prompts?|rules|directions|guidelines|guidance|guardrails|context|system\s+prompt|"
        r"directives?|constraints|policies)\b",
        needles=(
            ("ignor", "disregard", "forget", "overrid", "bypass", "skip", "discard", "abandon"),
            (
                "instruction",
                "prompt",
                "rule",
                "direction",
                "guideline",
                "guidance",
                "guardrail",
                "context",
                "directive",
                "constraint",
                "polic",
            ),
        ),
    ),
    # Without a word for which (`previous`, `prior`...), the agent's own instructions named: "ignore your
    # instructions", "ignore all instructions", "the instructions you were given" ("ignore rules" is a .gitignore's).
    _p(
        _OVERRIDE,
        rf"\b(?:ignore|disregard|forget){_S}(?:(?:all{_S}(?:of{_S})?(?:the{_S}|your{_S}|my{_S})?|your{_S}|any{_S}(?:and{_S}"
        rf"all{_S})?|every{_S})(?:instructions|directives|guardrails|system{_S}prompt)\b|(?:all{_S})?(?:the{_S})?"
        rf"(?:instructions|directives){_S}(?:above|you{_S}(?:were|have{_S}been){_S}given|given{_S}to{_S}you|you{_S}"
        r"received)\b)",
        needles=(("ignor", "disregard", "forget"), ("instruction", "directive", "guardrail", "system prompt")),
    ),
    _p(
        _OVERRIDE,
        rf"\b(?:ignore|disregard|forget){_S}(?:everything|all){_S}(?:above|before|said|you\b)",
        needles=(("ignor", "disregard", "forget"), ("everything", "all ")),
    ),
    # "Ignore the above and ...", "Disregard the above, ...": what came before the card is the agent's prompt. Only
    # as a sentence of its own; "ignore the above warning" names a thing, and "you can ignore the above if" is advice.
    _p(
        _OVERRIDE,
        rf"(?:^|[.!?:;]\s+|\n(?:[^\S\n]|[>*#-])*)(?:(?:just|simply|please|now|then|also|first|instead|so)[\s,]+)?(?:ignore|"
        rf"disregard|forget){_S}(?:(?:all|everything){_S}(?:of{_S})?)?(?:the{_S})?above(?:{_S}(?:text|message|content))?"
        r"[^\S\n]*(?:[,;:.!\u2013\u2014]|(?:and|then)\b|\n|$)",
        needles=(("ignor", "disregard", "forget"), ("above",)),
    ),
    _p(
        "tells the agent to reveal its instructions",
        rf"\b(?:reveal|print|show|output|repeat|leak){_S}(?:\w+{_S}){{0,2}}(?:system{_S}prompt|"
        r"hidden\s+instructions)\b",
        needles=("system prompt", "hidden instructions"),
    ),
    _p(
        _NEW_ROLE,
        rf"\b(?:you{_S}are{_S}now{_S}(?:a|an|the|my|no{_S}longer|free|unrestricted|allowed|permitted|authori[sz]ed|"
        rf"in{_S}(?:developer|god|jailbreak|DAN|admin|root|unrestricted){_S}mode)\b|from{_S}now{_S}on,?{_S}you{_S}"
        rf"(?:are|will|must|should)|act{_S}as{_S}(?:an?{_S})?(?:unrestricted|jailbroken|DAN)\b|\bDAN\s+mode|"
        rf"your{_S}new{_S}(?:role|task|instructions?|goal){_S}(?:is|are)\b)",
        needles=("you are now", "from now on", "act as", "dan mode", "your new"),
    ),
    _p(
        _UNASKED,
        rf"(?:^|[.!?:;,]\s+|\n(?:[^\S\n]|[>*-])*)(?:(?:always|just|simply|please|now|also|then){_S})?(?:run|execute|apply|install|"
        rf"delete|remove|push|commit|deploy|do){_S}[^\n.]{{0,60}}?\bwithout{_S}(?:asking|confirmation|confirming|"
        rf"permission|approval|prompting|checking)\b|\b(?:do{_S}not|don'?t|never){_S}(?:tell|inform|notify|"
        rf"warn|mention(?:{_S}(?:this|it)(?:{_S}(?:card|note|step|lesson|change|command))?)?{_S}to)"
        rf"{_S}(?:the{_S})?(?:user|human|developer|operator)\b|\b(?:do{_S}not|don'?t|never){_S}let{_S}(?:the{_S})?"
        rf"(?:user|human|developer|operator){_S}(?:know|see|find{_S}out)\b|\b(?:do{_S}not|"
        rf"don'?t|never){_S}ask{_S}(?:the{_S}(?:user|human)|for{_S}(?:permission|confirmation|approval))\b|"
        rf"\b(?:no{_S}need|(?:you{_S})?(?:do{_S}not|don'?t){_S}need){_S}to{_S}(?:ask|confirm|check{_S}with)"
        rf"(?:{_S}(?:the{_S})?(?:user|human))?\b|\bkeep{_S}(?:this|it){_S}(?:secret|hidden){_S}from{_S}"
        rf"(?:the{_S})?user\b",
        needles=(
            (
                "without",
                "not tell",
                "n't tell",
                "never tell",
                "dont tell",
                "not inform",
                "n't inform",
                "never inform",
                "dont inform",
                "not notify",
                "n't notify",
                "never notify",
                "dont notify",
                "not warn",
                "n't warn",
                "never warn",
                "dont warn",
                "not mention",
                "n't mention",
                "never mention",
                "dont mention",
                "not let",
                "n't let",
                "never let",
                "dont let",
                "not ask",
                "n't ask",
                "never ask",
                "dont ask",
                "no need to",
                "need to ask",
                "need to confirm",
                "need to check",
                "secret from",
                "hidden from",
            ),
            # every match ends with one of these (`without asking`, `not tell the user`, `no need to confirm`)
            ("ask", "conf", "perm", "approval", "prompt", "check", "user", "human", "developer", "operator"),
        ),
    ),
    _p(
        _APPROVED,
        rf"\b(?:user|human|operator|developer|owner|team)s?{_S}(?:has{_S}|have{_S})?(?:already{_S})?"
        rf"(?:pre-?approved|pre-?authori[sz]ed|approved|authori[sz]ed|consented{_S}to|allowed|granted){_S}"
        rf"(?:(?:you{_S})?(?:to{_S})?)?(?:all|every|any|each)\b|\b(?:pre-?approved|pre-?authori[sz]ed|"
        rf"auto-?approved){_S}(?:\w+{_S}){{0,3}}?(?:commands?|shell|actions?|tool\s*calls?|tools|changes|"
        r"operations|everything|requests?|scripts?)\b",
        needles=(
            ("approv", "authori", "consent", "allowed", "granted"),
            (
                "user",
                "human",
                "operator",
                "developer",
                "owner",
                "team",
                "pre-approv",
                "preapprov",
                "pre-authori",
                "preauthori",
                "auto-approv",
                "autoapprov",
            ),
        ),
    ),
    _p(
        _ADDRESSED,
        rf"(?:note|message|instructions?|reminder|request|directive|tip|hint|heads{_S}up)s?{_S}(?:for|to){_S}"
        rf"(?:the{_S}|any{_S}|all{_S})?"
        rf"(?:(?:ai|coding|code|autonomous|llm){_S}){{0,2}}(?:assistants?|agents?|ai|llms?|language{_S}models?|models?|"
        r"claude|codex|gemini|copilot|"
        r"chatgpt)\b",
        needles=(
            ("note", "message", "instruction", "reminder", "request", "directive", "tip", "hint", "heads"),
            (" for ", " to "),
        ),
    ),
    _p(
        _ADDRESSED,
        r"(?:^|(?:[.!?]\s*|\n[^\S\n]*))(?:(?:dear|hey|hi|hello|attention|ok|okay|listen)[\s,]+)?(?:(?:ai|coding)\s+)?(?:assistant|agent|"
        r"claude|codex|gemini|copilot|chatgpt|llm)[^\S\n]*(?:[,:;!]|[^\S\n]-{1,2}|[\u2013\u2014])\s*(?:(?:also|then|now|just|quietly|silently)\s+)?"
        r"(?:you\s+(?:must|should|will|need)|"
        r"always|never|please|ignore|run|execute|do\s+not|don'?t|make\s+sure|first|delete|remove|push|commit|send|print|"
        r"install|add|append|edit|change|reveal|open|download|upload|copy)\b",
        needles=("assistant", "agent", "claude", "codex", "gemini", "copilot", "chatgpt", "llm"),
    ),
    # Paraphrases: an agent addressed as the reader, a changed task, the user's request set aside, covert acts,
    # approval claimed in other words, secrets put into the agent's answer.
    _p(
        _ADDRESSED,
        rf"\b(?:any|every|each|all|the|an?){_S}(?:(?:ai|coding|code|autonomous|llm){_S}){{0,2}}(?:assistants?|agents?|"
        rf"language{_S}models?|models?|llms?|bots?|ai){_S}(?:(?:that|who|which){_S}(?:is{_S}|are{_S})?)?(?:reads?|reading|"
        rf"sees?|seeing|receives?|receiving|given|shown|parsing|parses){_S}(?:this|these)(?:{_S}(?:card|note|lesson|"
        rf"message|text|summary|entry|line)s?)?(?:{_S}(?:should|must|will|needs?|has|have|is|are|shall|can)\b|\s*[,:;.!\u2013\u2014])",
        needles=(("assistant", "agent", "model", "llm", "bot", "ai "), ("this", "these")),
    ),
    _p(
        _ADDRESSED,
        rf"\bif{_S}you(?:{_S}are|'re){_S}(?:an?{_S}|the{_S})?(?:(?:ai|coding|code|autonomous|large){_S}){{0,2}}(?:ai|llm|"
        rf"language{_S}model|assistant|agent|chatbot|bot|claude|codex|gemini|copilot|chatgpt|gpt|model)(?:\s*[,:;.!?)\u2013\u2014]|"
        rf"{_S}(?:reading|that|who|like|then|you|please)\b)",
        needles=("if you are", "if you're"),
    ),
    # The agent's own turn named as the moment to act ("before answering anything, first run ...", "before you
    # respond, ..."): a lesson for people says before what task, not before a reply to the prompt.
    _p(
        _ADDRESSED,
        rf"\bbefore{_S}(?:answering|responding|replying|you{_S}(?:answer|respond|reply))(?:(?:{_S}to)?{_S}(?:anything|any"
        rf"(?:{_S}(?:question|prompt|request|message)s?)?|the{_S}(?:user|prompt|question|request)|this{_S}(?:prompt|"
        rf"question|request))\b|\s*[,:;\u2013\u2014])|\b(?:in|at{_S}the{_S}(?:start|end|beginning|top|bottom){_S}of)"
        rf"{_S}(?:each|every|all|any){_S}(?:one{_S})?of{_S}your{_S}(?:replies|reply|answers?|responses?)\b",
        needles=(
            ("before answering", "before respond", "before reply", "before you", "of your"),
            ("answer", "respon", "repl"),
        ),
    ),
    _p(
        _OVERRIDE,
        rf"\b(?:pay{_S}no{_S}(?:attention|heed){_S}to|set{_S}aside|put{_S}aside|disobey|stop{_S}following|no{_S}longer{_S}"
        rf"(?:follow|obey)|throw{_S}out){_S}(?:(?:all|any|every|the|your|my|of|these|those){_S}){{0,3}}(?:previous|prior|"
        rf"above|earlier|preceding|original|system|user'?s|human'?s|operator'?s){_S}(?:\w+{_S})?(?:instructions?|prompts?|"
        r"rules|directions|guidelines|guidance|guardrails|directives?|constraints|polic(?:y|ies)|orders|requests?|"
        r"messages?|commands|wishes)\b",
        needles=("pay no", "aside", "disobey", "stop following", "no longer", "throw out"),
    ),
    # The agent's own instructions named without a word for which: "stop obeying your instructions", "disobey your
    # rules", "do not follow any instructions you received before this", "forget what you were told".
    _p(
        _OVERRIDE,
        rf"\b(?:disobey|stop{_S}(?:following|obeying)|no{_S}longer{_S}(?:follow|obey)){_S}(?:all{_S})?your{_S}"
        r"(?:instructions|rules|guidelines|guardrails|directives|system\s+prompt)\b",
        needles=(("disobey", "stop following", "stop obeying", "no longer"), ("your",)),
    ),
    _p(
        _OVERRIDE,
        rf"\b(?:do{_S}not|don'?t|never){_S}(?:follow|obey){_S}(?:any|the|your){_S}(?:\w+{_S}){{0,2}}?(?:instructions|"
        rf"directives){_S}(?:you{_S}(?:received|were{_S}given|got|had)|given{_S}(?:to{_S}you|before|earlier)|from{_S}"
        r"before)\b",
        needles=(
            ("not follow", "n't follow", "never follow", "not obey", "n't obey", "never obey"),
            ("instruction", "directive"),
        ),
    ),
    _p(
        _OVERRIDE,
        rf"\b(?:ignore|disregard|forget){_S}(?:everything{_S})?what{_S}you{_S}(?:were|have{_S}been){_S}(?:told|given|"
        r"asked|instructed)\b",
        needles=(("ignor", "disregard", "forget"), ("you were", "you have been")),
    ),
    # The user's own request set aside, in the imperative ("Ignore the user's request and ...", "Disregard what the
    # user asked"): "the server may ignore the user's request" is a lesson, so only a sentence that starts with it.
    _p(
        _OVERRIDE,
        rf"(?:^|[.!?:;]\s+|\n(?:[^\S\n]|[>*#-])*)(?:(?:always|just|simply|please|now|then|also|first|quietly|silently|instead)"
        rf"[\s,]+)?(?:you{_S}(?:must|should|can|may|will|need{_S}to|have{_S}to){_S})?(?:ignore|disregard|forget|"
        rf"override|overrule|skip){_S}(?:(?:whatever|what|anything|everything){_S}(?:the{_S})?(?:user|human|developer|"
        rf"operator|person){_S}(?:asks?|asked|says?|said|wants?|wanted|requests?|requested|types?|typed|writes?|wrote|"
        rf"tells?{_S}you|told{_S}you)\b|(?:(?:the|this|that|any|all|your){_S})?(?:user|human|developer|operator)(?:'|\u2019)s"
        rf"{_S}(?:(?:own|actual|original|real|current|latest|last|first|initial){_S})?(?:request|question|prompt|"
        rf"instruction|task|message|ask|wish|order|command)(?:e?s)?\b|the{_S}(?:user|human)\s*(?:[,;.!\u2013\u2014]|"
        r"and\b|$))",
        needles=(
            ("ignor", "disregard", "forget", "overrid", "overrul", "skip"),
            ("user", "human", "developer", "operator", "person"),
        ),
    ),
    # The agent's own rules set aside, in the imperative ("You must now forget your rules", "Disregard all your
    # guidelines"): "ESLint will ignore your rules if ..." and "ignore your rules file" are lessons, so only a sentence
    # or clause that starts with it, and not before a word that makes the rules a file's.
    _p(
        _OVERRIDE,
        rf"(?:^|[.!?:;,]\s+|\n(?:[^\S\n]|[>*#-])*)(?:(?:always|just|simply|please|now|then|also|first|instead|from{_S}now{_S}on)"
        rf"[\s,]+)?(?:you{_S}(?:must|should|can|may|will|need{_S}to|have{_S}to){_S}(?:(?:now|simply|just|also){_S})?)?"
        rf"(?:ignore|disregard|forget|abandon|drop|discard){_S}(?:all{_S}(?:of{_S})?)?your{_S}(?:(?:own|current|usual|old|"
        rf"previous|prior|original|core|safety){_S})?(?:rules|guidelines|guidance|constraints|policies|principles|"
        rf"restrictions|programming|training|values)\b(?!{_S}(?:files?|folders?|director(?:y|ies)|config\w*|sets?)\b)",
        needles=(("ignor", "disregard", "forget", "abandon", "drop", "discard"), ("your",)),
    ),
    _p(
        _OVERRIDE,
        rf"\byour{_S}(?:instructions?|task|goal|role|orders|directives?|mission|objective|priorit(?:y|ies)){_S}"
        rf"(?:(?:has|have){_S}been{_S}(?:updated|changed|replaced|superseded|revoked|overridden|overwritten)|"
        rf"(?:is|are){_S}now{_S}to)\b|\byour{_S}(?:instructions|orders|directives){_S}have{_S}changed\b|\b(?:whatever|no{_S}matter{_S}what|regardless{_S}of{_S}what){_S}(?:the{_S})?"
        rf"(?:user|human|person|developer|operator|prompt){_S}(?:asks?|requests?|says?|wants?|writes?|types?|tells?{_S}you)"
        rf"(?:{_S}(?:for|you))?(?:{_S})?,?{_S}(?:you{_S}(?:must|should|will|need{_S}to|have{_S}to)|always|first|instead|also|"
        rf"just)\b|\bthe{_S}user'?s{_S}(?:real|actual|true|new){_S}(?:request|task|instructions?|question){_S}"
        rf"(?:is|are|follows)\b",
        needles=(("your", "whatever", "no matter", "regardless", "user"),),
    ),
    _p(
        _UNASKED,
        rf"(?:^|[.!?:;,]\s+|\n(?:[^\S\n]|[>*-])*)(?:(?:always|just|simply|please|now|then|also){_S})?(?:run|execute|apply|install|"
        rf"delete|remove|push|commit|deploy|do|send|upload|change|edit|modify|overwrite|disable){_S}[^\n.]{{0,60}}?"
        rf"\bwithout{_S}(?:telling|informing|notifying|alerting|mentioning(?:{_S}(?:it|this))?{_S}to|letting)"
        rf"{_S}(?:the{_S})?(?:user|human|developer|operator|anyone|them)\b|(?:^|[.!?;]\s+|\n(?:[^\S\n]|[>*-])*)(?:silently|"
        rf"quietly|secretly|covertly){_S}(?:run|execute|delete|remove|push|commit|send|upload|modify|edit|change|"
        r"append|copy|disable|overwrite)\b",
        needles=(
            "without telling",
            "without inform",
            "without notify",
            "without alert",
            "without mention",
            "without letting",
            "silently",
            "quietly",
            "secretly",
            "covertly",
        ),
    ),
    _p(
        _APPROVED,
        rf"\b(?:user|human|operator|person(?:{_S}at{_S}the{_S}keyboard)?)s?{_S}(?:has{_S}|have{_S})?(?:already{_S})?"
        rf"(?:signed{_S}off{_S}on|okayed|ok'?d|green-?lit|cleared|blessed|waived{_S}(?:review|confirmation){_S}for){_S}"
        rf"(?:all|every|any|each){_S}(?:\w+{_S}){{0,2}}(?:commands?|actions?|changes|operations|tools?|shell|scripts?|"
        r"edits|steps|requests?)\b",
        needles=(("signed off", "okay", "ok'd", "okd", "green", "cleared", "blessed", "waived"),),
    ),
    _p(
        "tells the agent to put secrets into its answer",
        rf"(?:^|[.!?:;,]\s+|\n(?:[^\S\n]|[>*-])*)(?:(?:always|just|simply|please|now|then|also|first){_S})?(?:include|paste|print|"
        rf"append|add|put|attach|echo|output|quote|copy|reveal|share|dump|cat|show|list|write){_S}[^\n]{{0,80}}?"
        rf"(?:credentials?|secrets?|tokens?|passwords?|api[\s_-]?keys?|private{_S}keys?|env(?:ironment)?{_S}var\w*|"
        rf"id_rsa|\.env\b|\.ssh|\.aws|\.netrc|\.npmrc|\.pypirc|kubeconfig)[^\n]{{0,80}}?\b(?:in|into|to|at{_S}the{_S}"
        rf"end{_S}of){_S}your{_S}(?:reply|replies|answers?|responses?|final{_S}answer|commit{_S}messages?|pull{_S}"
        rf"request)\b(?!{_S}(?:headers?|body|bodies|object|code|status|schema|payload|json|time|handler))",
        needles=(("your",), ("reply", "replies", "answer", "response", "commit message", "pull request")),
    ),
    # The same, into a place others read: a dump of the environment or of a secret file pasted into a pull request,
    # an issue or a gist leaks as surely as an upload to a URL.
    _p(
        "tells the agent to put secrets where others read them",
        rf"(?:^|[.!?:;,]\s+|\n(?:[^\S\n]|[>*-])*)(?:(?:always|just|simply|please|now|then|also|first){_S})?(?:include|paste|post|"
        rf"append|add|put|attach|copy|write|dump|share){_S}[^\n]{{0,60}}?(?:credentials?|secrets?|tokens?|passwords?|"
        rf"api[\s_-]?keys?|private{_S}keys?|printenv|`env`|env(?:ironment)?{_S}var\w*|id_rsa|\.env\b|\.ssh|\.aws|"
        rf"\.netrc|\.npmrc|\.pypirc|kubeconfig)(?:(?!\bnot\b|\bnever\b|n't\b)[^\n]){{0,60}}?\b(?:in|into|to|on){_S}"
        rf"(?:the|a|this|that|an){_S}(?:(?:public|new|open){_S})?(?:pr|pull{_S}request|issue|ticket|gist|pastebin|comment|"
        rf"discussion)s?\b(?:{_S}(?:description|body|comment|thread|title))?",
        needles=(
            (
                "printenv",
                "env",
                "secret",
                "token",
                "password",
                "key",
                "credential",
                "id_rsa",
                ".ssh",
                ".aws",
                ".netrc",
                ".npmrc",
                ".pypirc",
                "kubeconfig",
            ),
            ("pr", "pull request", "issue", "ticket", "gist", "pastebin", "comment", "discussion"),
        ),
    ),
    # Chat-template roles and delimiters: what a model reads as the start of another turn.
    _p(
        _ROLE,
        r"(?<![\w-])(?:SYSTEM|ASSISTANT|DEVELOPER)(?:\s+(?:NOTE|MESSAGE|PROMPT|OVERRIDE|INSTRUCTIONS?))?\s*:",
        flags=0,
        needles=("SYSTEM", "ASSISTANT", "DEVELOPER"),
    ),
    _p(_ROLE, r"\bSYSTEM\s+(?:NOTE|MESSAGE|PROMPT|OVERRIDE|INSTRUCTIONS?)\b", flags=0, needles=("SYSTEM",)),
    _p(
        _ROLE,
        r"(?:^|[.!?]\s+)(?:system|assistant|developer|user|human)(?:\s+(?:note|message|prompt))?\s*:",
        _SERVED,
        needles=(("system", "assistant", "developer", "user", "human"), (":",)),
    ),
    _p(_ROLE, r"(?m)^[^\S\n]*(?:system|assistant|human)\s*:", needles=(("system", "assistant", "human"), (":",))),
    _p(
        _ROLE,
        r"<\|\s*[a-z_]{2,30}\s*\|>|\[/?INST\]|<</?SYS>>|<\s*/?\s*(?:im_start|im_end|system|assistant)\s*>",
        needles=("<|", "inst]", "<<sys", "im_start", "im_end", "system>", "assistant>", "system >", "assistant >"),
    ),
    _p(
        _ROLE,
        r"<\s*/?\s*(?:user|developer|human|instructions?|context|prompt|tool_call|function_results?)\b"
        r"[^<>]{0,40}>",
        _SERVED,
        needles=("<",),
    ),
    _p(
        _ROLE,
        r"(?m)^[^\S\n]*#{1,6}\s*(?:Instruction|System(?:\s+Prompt)?|New\s+Instructions?)\s*:?\s*$",
        needles=(("#",), ("instruction", "system")),
    ),
    _p(_ROLE, r"(?<!#)#{2,}\s*(?:instructions?|system|response)\b", _SERVED, needles=("#",)),
    # Chinese, Japanese and Korean: overriding, new roles, hiding from the user, pre-approval.
    _p(
        _OVERRIDE,
        # Between the verb and what it drops, only words that say whose or which ones, as the English rules allow
        # (`all`, `previous`, `your`, `system`...): "忽略之前的所有指令", "绕过安全限制", but not a lesson's
        # "JVM 忽略 cgroup 限制" (the JVM ignores cgroup limits), which any 12 characters let through.
        r"(?:忽略|忽视|无视|無視|忽視|不要理会|不要理會|不必理会|无需理会|不用理会|忘记|忘記|跳过|绕过|不用管|不要管|别管|"
        r"抛开|撇开|无视掉)(?:\s|所有|一切|全部|任何|之前|以前|先前|此前|上面|上述|以上|前面|前述|你|您|系统|系統|原有|原来|"
        r"原來|原始|安全|这些|這些|那些|用户|用戶|使用者|别人|收到|得到|被|给|給|的|了|掉|都|[，,]){0,8}"
        r"(?:指令|指示|说明|說明|提示词?|规则|規則|命令|限制|要求|設定|设定|说了什么|说什么|的话)",
        needles=(
            "忽略",
            "忽视",
            "无视",
            "無視",
            "忽視",
            "理会",
            "理會",
            "忘记",
            "忘記",
            "跳过",
            "绕过",
            "不用管",
            "不要管",
            "别管",
            "抛开",
            "撇开",
        ),
    ),
    _p(
        _OVERRIDE,
        r"(?:以前|前|これまで|上記|上)の?(?:指示|命令|ルール|指令|プロンプト)を?(?:すべて|全て)?(?:無視|忘れ)",
        needles=("無視", "忘れ"),
    ),
    _p(
        _OVERRIDE,
        r"(?:이전|위의?|앞의?)\s*(?:지시|명령|지침|규칙)[을를]?\s*(?:모두\s*)?(?:무시|잊어)",
        needles=("무시", "잊어"),
    ),
    _p(
        _NEW_ROLE,
        r"(?:你现在是|你現在是|从现在开始[，,]?你|從現在開始[，,]?你|你的新(?:角色|任务|任務)|あなたは今|今からあなたは|"
        r"これからあなたは|당신은\s*이제|너는\s*이제)",
        needles=("你现在是", "你現在是", "从现在开始", "從現在開始", "你的新", "あなたは", "당신은", "너는"),
    ),
    _p(
        _UNASKED,
        r"(?:不要|别|別|切勿|不得)(?:告诉|告訴|通知|提醒|让|讓)(?:用户|用戶|使用者)|(?:无需|無需|无须|無須|毋需|毋须|不需要|不必|"
        r"不用)(?:向|跟|问|問)?(?:用户|用戶|使用者)?(?:确认|確認|询问|詢問|请示|批准|同意|征求|允许|许可)|(?:不经|不經|未经|未經)"
        r"(?:用户|用戶)?(?:确认|確認|同意)|(?:不用|不要|别|別|无需|无须|不必)(?:问|問|征求|请示)(?:一下)?(?:用户|用戶|使用者)|"
        r"(?:不要|别|別|切勿|不得)(?:跟|和|对|對|向)(?:用户|用戶|使用者)(?:说|說|讲|講|提|提及|透露|汇报|彙報|解释)|"
        r"瞒着(?:用户|用戶|使用者)|瞞著(?:用户|用戶|使用者)|(?:悄悄|偷偷|暗中)地?(?:执行|執行|运行|運行|删除|刪除|推送|提交|修改|"
        r"上传|上傳|发送|發送|安装|安裝|覆盖|禁用)",
        needles=(
            "用户",
            "用戶",
            "使用者",
            "确认",
            "確認",
            "询问",
            "詢問",
            "请示",
            "批准",
            "同意",
            "悄悄",
            "偷偷",
            "暗中",
        ),
    ),
    _p(
        _UNASKED,
        r"ユーザー?に(?:は)?(?:言わ|伝え|知らせ|報告し|教え)ないで|確認(?:せず|しないで|なしで)に?(?:実行|削除|"
        r"プッシュ|コミット)|사용자에게\s*(?:알리지|말하지)\s*(?:마|말)",
        needles=("ユーザ", "確認", "사용자"),
    ),
    _p(
        _APPROVED,
        r"(?:用户|用戶|使用者)(?:已经|已經|已)?(?:预先|預先|事先)?(?:批准|授权|授權|同意|允许|允許)了?[^。\n]{0,6}?(?:所有|全部|任何|"
        r"一切)|"
        r"ユーザーは?(?:すでに|既に|事前に)?(?:すべて|全て)?の?(?:コマンド|操作)?を?(?:承認|許可)(?:済み|しています|した)",
        needles=("用户", "用戶", "使用者", "ユーザー"),
    ),
    _p(
        _ADDRESSED,
        r"(?:AI|ai|人工智能|大模型|语言模型|語言模型|编程|編程)\s*(?:助手|智能体|智能體|代理|模型)[\s，,：:。!！]*(?:请|請|务必|務必|"
        r"注意)|如果你是\s*(?:一个|一個|一名)?\s*(?:AI|ai|人工智能|助手|语言模型|語言模型|大模型|智能体|智能體|机器人|機器人|模型)\s*"
        r"(?:[，,：:。！!]|的话|的話|请|請)|(?:读到|讀到|看到|收到|处理|處理)(?:这|這|此)(?:条|條|张|張|段|份|个|個)?(?:笔记|筆記|卡片|"
        r"说明|說明|内容|內容|消息|提示|文字)的\s*(?:AI|ai|人工智能|助手|模型|智能体|智能體|代理)",
        needles=(
            "助手",
            "智能体",
            "智能體",
            "代理",
            "模型",
            "如果你是",
            "读到",
            "讀到",
            "看到",
            "收到",
            "处理",
            "處理",
        ),
    ),
    _p(
        "tells the agent to put secrets into its answer",
        r"(?:回复|回覆|回答|答复|答覆|输出|輸出)(?:中|里|裡|末尾|结尾)[^。\n]{0,6}(?:附上|附带|附帶|包含|贴出|貼出|粘贴|粘貼|打印|列出|"
        r"写上|寫上|加上)[^。\n]{0,40}(?:密钥|密鑰|密码|密碼|令牌|凭证|憑證|凭据|憑據|token|credentials|\.env|id_rsa|\.ssh|\.aws)|"
        r"(?:把|将|將)[^。\n]{0,40}(?:密钥|密鑰|密码|密碼|令牌|凭证|憑證|凭据|憑據|token|credentials|\.env|id_rsa|\.ssh|\.aws)"
        r"[^。\n]{0,30}(?:附|贴|貼|写|寫|放|加|包含)[^。\n]{0,4}(?:回复|回覆|回答|答复|答覆)",
        needles=("回复", "回覆", "回答", "答复", "答覆", "输出", "輸出"),
    ),
    # Spanish, Portuguese, French, Italian, German, Russian.
    _p(
        _OVERRIDE,
        r"\b(?:ignora|ignore|olvida|esquece|omite)\s+(?:todas\s+|todos\s+)?(?:las|as|os|los)\s+"
        r"(?:instrucciones|instruções|instrucoes|indicaciones|reglas|regras)\b",
        needles=(("ignora", "ignore", "olvida", "esquece", "omite"), ("nstru", "ones", "reglas", "regras")),
    ),
    _p(
        _OVERRIDE,
        r"\b(?:ignore[zs]?|oublie[zs]?)\s+(?:toutes\s+)?les\s+(?:instructions|consignes|règles)\b",
        needles=(("ignore", "oublie"), ("nstructions", "gnes", "règles")),
    ),
    _p(
        _OVERRIDE,
        r"\b(?:ignora|dimentica)\s+(?:tutte\s+)?le\s+(?:istruzioni|regole)\b",
        needles=("ignora", "dimentica"),
    ),
    _p(
        _OVERRIDE,
        r"\b(?:ignoriere|vergiss|missachte)\s+(?:alle\s+)?(?:vorherigen\s+|bisherigen\s+|obigen\s+)?"
        r"(?:Anweisungen|Instruktionen|Regeln|Vorgaben)\b",
        needles=("ignorier", "vergiss", "missacht"),
    ),
    _p(
        _OVERRIDE,
        r"(?:игнорируй|игнорируйте|забудь|забудьте)\s+(?:все\s+)?(?:предыдущие\s+)?(?:инструкции|указания|правила)",
        needles=("игнор", "забуд"),
    ),
    _p(
        _NEW_ROLE,
        r"\b(?:ahora\s+eres|a\s+partir\s+de\s+ahora\s+eres|agora\s+você\s+é|você\s+agora\s+é|tu\s+es\s+"
        r"maintenant|vous\s+êtes\s+maintenant|ora\s+sei|du\s+bist\s+jetzt|ab\s+jetzt\s+bist\s+du)\b|теперь\s+ты\b",
        needles=("eres", "você", "maintenant", "ora sei", "jetzt", "теперь"),
    ),
    _p(
        _UNASKED,
        r"\b(?:no\s+(?:le\s+)?(?:digas|informes|avises|cuentes)\s+(?:nada\s+)?al\s+usuario|sin\s+(?:preguntar|"
        r"pedir\s+(?:permiso|confirmación)|confirmación)|não\s+(?:conte|diga|informe)\s+ao\s+usuário|sem\s+perguntar|"
        r"ne\s+(?:dis|dites)\s+(?:rien\s+)?(?:pas\s+)?à\s+l'utilisateur|sans\s+(?:demander|confirmation)|"
        r"sag\s+(?:es\s+)?(?:dem\s+)?(?:Benutzer|Nutzer)\s+nicht|ohne\s+(?:zu\s+fragen|Rückfrage|Bestätigung))\b|"
        r"не\s+(?:говори|сообщай)\s+пользователю|без\s+подтверждения",
        needles=(
            "usuario",
            "usuário",
            "utilisateur",
            "nutzer",
            "benutzer",
            "sin ",
            "sem ",
            "sans ",
            "ohne",
            "пользовател",
            "без ",
        ),
    ),
    _p(
        _APPROVED,
        r"\b(?:el\s+usuario\s+(?:ya\s+)?ha\s+(?:pre)?aprobado|o\s+usuário\s+(?:já\s+)?(?:pré-?)?aprovou|"
        r"l'utilisateur\s+a\s+(?:déjà\s+)?(?:pré-?)?approuvé|der\s+(?:Benutzer|Nutzer)\s+hat\s+(?:bereits\s+)?"
        r"(?:alle|jeden)\b)",
        needles=("usuario", "usuário", "utilisateur", "nutzer", "benutzer"),
    ),
    _p(
        "tells the agent to send data out",
        r"\b(?:send|post|upload|exfiltrate|forward|transmit|leak|copy|pipe|email|mail)\b[^\n]{0,100}?"
        r"(?:\b(?:credentials?|secrets?|tokens?|passwords?|api[\s_-]?keys?|private\s+keys?|env(?:ironment)?"
        r"\s+var\w*|id_rsa|cookies?|source\s+code|the\s+(?:repo|repository|codebase))|\.env\b|\.ssh|\.aws)"
        r"[^\n]{0,100}?\b(?:to|into|at)\s+(?:https?://|ftp://|\S+@\S+\.\w)",
        needles=(
            ("http", "ftp", "@"),
            ("send", "post", "upload", "exfiltrate", "forward", "transmit", "leak", "copy", "pipe", "mail"),
            (
                "credential",
                "secret",
                "token",
                "password",
                "api",
                "key",
                "env",
                "id_rsa",
                "cookie",
                "source code",
                "repo",
                "codebase",
                ".ssh",
                ".aws",
            ),
        ),
    ),
)
# Patterns that cannot match ASCII text (every needle of one of their groups is non-ASCII): skipped on ASCII text.
_NEEDS_NON_ASCII = frozenset(
    pattern for _, pattern, _, groups in _PATTERNS if any(all(not n.isascii() for n in g) for g in groups)
)


def _comments(text: str) -> Iterator[tuple[int, str]]:
    """Each HTML comment of the text: (its start, what it holds), found by `str.find` in one pass. The expression
    `<!--(.*?)-->` read to the text's end from every `<!--` that no `-->` closes: a body of 160 KB of `<!-- ` took
    107 s of `cairn lint`."""
    at = text.find("<!--")
    while at >= 0:
        end = text.find("-->", at + 4)
        if end < 0:
            return  # no `-->` after this one, so none after any later `<!--` either
        yield at, text[at + 4 : end]
        at = text.find("<!--", end + 3)


# A Markdown link reference definition renders as nothing, its title included: one that links nowhere (`#`, `<>`)
# is the common way to write a comment in Markdown (`[//]: # (text)`), as hidden from a reader as `<!-- text -->`.
# (A real link's title shows on hover, and names a "model" or an "agent" as often as any text.) One line each.
_LINK_DEFINITION = re.compile(
    r"^ {0,3}\[[^\]\n]{1,999}\]:[ \t]*(?:#|<>)[ \t]+(?:\"([^\"\n]*)\"|'([^'\n]*)'|\(([^)\n]*)\))[ \t]*$",
    re.MULTILINE,
)


def _link_titles(text: str) -> Iterator[tuple[int, str]]:
    """Each Markdown comment's text (`[//]: # (text)`, a link definition to nowhere): (its start, its text)."""
    for match in _LINK_DEFINITION.finditer(text):
        yield match.start(), next(group for group in match.groups() if group is not None)


_TO_AGENT = re.compile(
    r"\b(?:ai|assistant|agent|llm|model|claude|chatgpt|gpt|codex|gemini|copilot|instructions?|system\s+prompt)\b"
    r"|助手|智能体|模型|指令|アシスタント|エージェント",
    re.IGNORECASE,
)


# A pattern runs on a text only when each group of its needles has one in the text (`needle_masks`): a folded
# needle is looked for in the lowercased text (the case-insensitive patterns'), an exact one as written. The flags
# are read here once: an enum flag test costs more than a needle test.
_KINDS, _PATTERN_MASKS = needle_masks((bool(p.flags & re.IGNORECASE), groups) for _, p, _, groups in _PATTERNS)
_FOLDED_MASKS, _EXACT_MASKS = _KINDS.get(True, {}), _KINDS.get(False, {})


def _needle_tree(masks: dict[str, int], gates: tuple[str, ...] = ()) -> tuple[tuple[str, int, int], ...]:
    """The needles in an order that tests each only where it can be: after the longest other needle (or gate, a
    string shared by several needles, of mask 0) it holds, so that one absent skips all that hold it. Each entry:
    (needle, mask, how many entries to skip when it is absent: its own and those tested after it)."""
    strings = sorted({*masks, *gates}, key=lambda n: (len(n), n))
    children: dict[str | None, list[str]] = {}
    for i, needle in enumerate(strings):
        held = [other for other in strings[:i] if other in needle and len(other) < len(needle)]
        children.setdefault(max(held, key=len) if held else None, []).append(needle)
    out: list[tuple[str, int, int]] = []

    def add(needle: str) -> None:
        at = len(out)
        out.append((needle, masks.get(needle, 0), 0))
        for child in children.get(needle, ()):
            add(child)
        out[at] = (needle, masks.get(needle, 0), len(out) - at)

    for root in children.get(None, ()):
        add(root)
    return tuple(out)


# Gates: strings several needles share that no needle is (`not tell`, `not warn`... all hold `not `).
_ASCII_FOLDED = _needle_tree(
    {n: m for n, m in _FOLDED_MASKS.items() if n.isascii()}, ("n't ", "not ", "never ", "no ", "you ")
)
_OTHER_FOLDED = _needle_tree({n: m for n, m in _FOLDED_MASKS.items() if not n.isascii()})
_ASCII_EXACT = _needle_tree({n: m for n, m in _EXACT_MASKS.items() if n.isascii()})
_OTHER_EXACT = _needle_tree({n: m for n, m in _EXACT_MASKS.items() if not n.isascii()})
_SPACED_FOLDED = _needle_tree({n: m for n, m in _FOLDED_MASKS.items() if " " in n}, ("n't ", "not ", "never ", "no "))


def _runs(served: bool, ascii_only: bool) -> tuple[tuple[str, _Pattern, int], ...]:
    """(what, pattern, mask) of the patterns that may run on a field (served or not) of a text (ASCII or not)."""
    return tuple(
        (what, pattern, mask)
        for (what, pattern, where, _), mask in zip(_PATTERNS, _PATTERN_MASKS, strict=True)
        if (served or where != _SERVED) and not (ascii_only and pattern in _NEEDS_NON_ASCII)
    )


_RUNS = {(served, ascii_only): _runs(served, ascii_only) for served in (False, True) for ascii_only in (False, True)}


# Letters a model reads as Latin ones that NFKC leaves alone: Latin small capitals and variants (`ɪ`, `ı`, `ɡ`),
# Armenian, Cyrillic and Greek look-alikes, and typographic apostrophes (`Don’t tell the user`). A text holding
# them is also read with them mapped and combining marks dropped (`iǵnore`, `i̶gnore`), so a look-alike
# spelling of a phrase reads as the phrase (`_readings`).
_LOOK = str.maketrans(
    "ıɪɩꙇɡɢɑᴀʙᴄᴅᴇꜰɢʜᴊᴋʟᴍɴᴏᴘʀꜱᴛᴜᴠᴡʏᴢȷℓօսոհզցՏԁһԛԝӏаеорсухіјѕвкмнтАВЕЅІЈКМНОРСТХУαικνορτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ\u2018\u2019\u02bc",
    "iiiiggaabcdefghjklmnoprstuvwyzjlounhqgSdhqwlaeopcyxijsbkmhtABESIJKMHOPCTXYaikvoptuxABEZHIKMNOPTYX'''",
)
# Four or more single letters with the same separator between them (`i g n o r e`, `I.g.n.o.r.e`): read joined.
_SPACED = re.compile(r"(?<![^\W\d_])[^\W\d_]([ .*_|/-])(?:[^\W\d_]\1){2,}[^\W\d_](?![^\W\d_])")
# What every match of `_SPACED` holds (`.g.n.`), found faster: it starts with a separator, `_SPACED` with a lookbehind
# tried at every position.
_SPACED_GATE = re.compile(r"([ .*_|/-])[^\W\d_]\1[^\W\d_]\1")
# What Markdown and URLs hide in a word a model reads whole: percent-escapes (`%49gnore`), inline HTML tags
# (`Ig<b>nore</b>`), emphasis and strikethrough markers touching a letter (`Ig**nore**`, `**Ignore** all`), the
# underscores of a word that starts or ends with one (`I_gnore_`, `_previous_`; `snake_case` is left alone), and a
# code span inside a word (``Ig`nore` ``) or of one word opening a sentence (`` `Ignore` all ``): a renderer turns
# them into styling, a model reads past them. Code spans elsewhere are kept: commands are quoted so in every lesson.
_MARKUP = re.compile(
    r"<!--[^\n]{0,200}?-->|</?[A-Za-z][\w-]{0,30}(?:[ \t][^<>\n]{0,200})?/?>"
    r"|(?<=[^\W_])[*~]+|(?<![*~])[*~]+(?=[^\W_])"  # a run's first marker only: from each, a long run was read again
)
# Both alternatives start at a word's start: the second, unanchored, read the rest of a long word from each of its
# letters (`_ ` then 64 KB of letters: 104 s).
_UNDERSCORED = re.compile(r"(?<!\w)_+[^\W_]\w*|(?<!\w)\w*[^\W_]_+(?!\w)")
_CODE_SPAN = re.compile(r"`([^`\s]{1,40})`")
_LETTER = re.compile(r"[^\W\d_]")
_WORD = re.compile(r"[^\W\d_]+")


def _edge_underscore(text: str) -> bool:
    """Whether an underscore in the text starts or ends a word (`_previous_`; `snake_case` holds none): the
    underscores looked at one by one, as a regex with a lookbehind tries every position of the text."""
    at = text.find("_")
    while at >= 0:
        if at == 0 or not text[at - 1].isalnum() or at + 1 == len(text) or not text[at + 1].isalnum():
            return True
        at = text.find("_", at + 1)
    return False


def _code_words(text: str) -> str:
    """The text with the backticks of a one-word code span inside a word, opening a sentence, or of a word of
    letters alone between words dropped (``Please `ignore` all previous``: a model reads the sentence through it)."""
    out: list[str] = []
    at = 0
    for match in _CODE_SPAN.finditer(text):
        start, end = match.span()
        before = text[start - 1] if start else "\n"
        after = text[end : end + 2]
        if before.isalnum() or after[:1].isalnum():  # inside a word: ``Ig`nore` ``
            pass
        elif not (
            before in " \t"
            and _WORD.fullmatch(match.group(1))
            or after[:1] in " \t"
            and _LETTER.match(after[1:])
            and _opens_sentence(text, start)
        ):
            continue
        out += [text[at:start], match.group(1)]
        at = end
    return "".join(out) + text[at:] if out else text


def _opens_sentence(text: str, at: int) -> bool:
    """Whether only list or quote markers stand between `at` and the start of its line or sentence."""
    head = text[max(0, at - 12) : at].rstrip(" \t>*+-")
    return not head or head[-1] in "\n.!?:;"


def _rendered(text: str) -> str | None:
    """The text as a model reads it past Markdown and URL escapes (`_MARKUP`, `_UNDERSCORED`, `_code_words`,
    `PERCENT_ESCAPES`; a doubly escaped `%2549` too, and references a percent-escape spelled decoded), folded as
    every field is; None when that changes nothing. It keeps the text's lines, so a finding in it is reported on its line. Each
    expression runs only on text holding its character: the index reads every card."""
    out = text
    for _ in range(3):
        if "%" not in out:
            break
        unescaped = PERCENT_ESCAPES.sub(unpercent, out)
        if unescaped == out:
            break
        out = html.unescape(unescaped)
    if "_" in out and _edge_underscore(out):
        out = _UNDERSCORED.sub(lambda m: m.group().replace("_", ""), out)
    if "`" in out:
        out = _code_words(out)
    if "*" in out or "~" in out or "<" in out:
        out = _MARKUP.sub("", out)
    return None if out == text else fold(out)


# A word hyphenated across a line break (`Ig-` then `nore all previous instructions`, in a body or a folded summary):
# read whole, the line break moved after it so the reading keeps the text's lines.
_LINE_HYPHEN = re.compile(r"-[^\S\n]*\n[ \t>]*([^\W\d_]+)")  # from the hyphen: a literal the regex finds fast


def _unhyphenated(match: re.Match[str]) -> str:
    """A word hyphenated at a line's end, read whole, when a letter stands before the hyphen."""
    before = match.string[match.start() - 1] if match.start() else ""
    if before.isalnum() and not before.isdecimal():
        return match.group(1) + "\n"
    return match.group()


def _readings(text: str) -> list[str]:
    """The text, then the other ways a model reads it: HTML character references decoded (`&#73;gnore`,
    `Ig&shy;nore`), Markdown and percent-escapes read past (`_rendered`), words hyphenated across a line break
    joined, look-alike letters mapped and combining
    marks dropped, and letters spelled one by one joined (only the readings that differ from the text)."""
    out = [text]
    decoded = decoded_references(text)
    if decoded is not None:
        out.append(decoded)
    rendered = _rendered(out[-1])
    if rendered is not None and rendered != out[-1]:
        out.append(rendered)
    if "\n" in out[-1]:
        joined = _LINE_HYPHEN.sub(_unhyphenated, out[-1])
        if joined != out[-1]:
            out.append(joined)
    last = out[-1]
    if not last.isascii():
        plain = "".join(c for c in unicodedata.normalize("NFKD", last) if not unicodedata.combining(c))
        plain = unicodedata.normalize("NFC", plain.translate(_LOOK))
        if plain != last:
            out.append(plain)
    last = out[-1]
    if _SPACED_GATE.search(last) and _SPACED.search(last):
        out.append(_SPACED.sub(lambda m: m.group().replace(m.group(1), ""), last))
    return out


def check(target: Target, context: Context) -> Iterator[Finding]:
    found: list[tuple[Field, int, str]] = []
    # An ASCII card is read joined and as its file only (`Target.fields`): then each served field is read alone too.
    alone = not any(field.key == "summary" for field in target.fields)
    for field in target.fields:
        if not field.text:
            continue
        seen_here: set[str] = set()
        for text in _readings(field.text) + _words(field):
            runs = _candidates(text, field.served)  # a part holds no needle its whole text lacks
            for start, part in _parts(field, text) if alone and runs else ((0, text),):
                for offset, what in _scan(part, field.served, runs):
                    if what not in seen_here:
                        seen_here.add(what)
                        found.append(
                            (field, _offset_in(field.text, text, start + offset), _message(f"the text {what}"))
                        )
        text = field.text
        if (field.key in ("file", "body") or field.served) and "<!--" in text:
            for start, inner in _comments(text):
                if _TO_AGENT.search(inner):
                    found.append((field, start, _message("a hidden HTML comment addresses the agent")))
        if field.key in ("file", "body") and "]:" in text:
            for start, title in _link_titles(text):
                if _TO_AGENT.search(title):
                    found.append(
                        (field, start, _message("a hidden Markdown comment (`[//]: # (...)`) addresses the agent"))
                    )
    yield from field_findings(RULE, target, found)


# A file name may join its words with any character id-text lets through (`ignore.previous.instructions`,
# `ignore+previous+instructions`, `IgnorePreviousInstructions`), a served name, summary or alias with hyphens,
# underscores or capitals (`Ignore-all-previous-instructions`, `ignore_all_previous_instructions`): a model reads
# them as the words.
_ID_JOINERS = re.compile(r"[\W_]+|(?<=[a-z])(?=[A-Z])")
_WORD_JOINERS = re.compile(r"(?<=[^\W\d_])[-_]+(?=[^\W\d_])|(?<=[a-z])(?=[A-Z])")
# Three words or more joined (an instruction is a few words; `command-line` is one): looked for only where a joiner
# or a capital is, each run from its first letter, as the index reads every card.
_HYPHENATED = re.compile(r"(?<![^\W\d_])[^\W\d_]+(?:[-_]+[^\W\d_]+){2,}")
_CAMEL = re.compile(r"(?<![A-Za-z])(?:[A-Z][a-z]+){3,}")


def _words(field: Field) -> list[str]:
    """A served field read as words (the id: every run of other characters a space; a name, summary or alias: the
    hyphens and underscores between letters; both: camelCase split), when that reads otherwise."""
    text = field.text
    if field.key == "id":
        words = _ID_JOINERS.sub(" ", text)
    elif field.served and (
        ("-" in text or "_" in text) and _HYPHENATED.search(text) or not text.islower() and _CAMEL.search(text)
    ):
        words = _WORD_JOINERS.sub(" ", text)
    else:
        return []
    return [words] if words != text else []


def _offset_in(text: str, reading: str, offset: int) -> int:
    """The offset in a field's text of what a reading of it holds at `offset`: the start of the same line when the
    reading kept the text's lines (a shorter reading puts its offsets earlier: `Ig**nore**` on line 8 of the file
    is read as `Ignore` and was reported on line 7), else the offset itself, kept within the text."""
    if reading is text:
        return offset
    line = reading.count("\n", 0, offset)
    if line == 0 or reading.count("\n") != text.count("\n"):
        return min(offset, len(text))
    at = -1
    for _ in range(line):
        at = text.index("\n", at + 1)
    return at + 1


def _parts(field: Field, text: str) -> list[tuple[int, str]]:
    """(offset, text) to scan: the whole text, and for the joined name, summary and aliases each part alone too,
    since a pattern anchored at a field's start (`User: ...`, `Run ... without asking`) finds none where the name
    comes first."""
    out = [(0, text)]
    if len(field.starts) > 1 and len(text) == len(field.text):
        bounds = [start for start, _ in field.starts] + [len(text) + 1]
        out += [(a, text[a : b - 1]) for a, b in zip(bounds[1:-1], bounds[2:], strict=True)]
    return out


def _scan(text: str, served: bool, runs: list[tuple[str, _Pattern]] | None = None) -> Iterator[tuple[int, str]]:
    """(offset, what) of each pattern that matches the text (`runs`: those whose needles it holds, when known)."""
    for what, pattern in _candidates(text, served) if runs is None else runs:
        match = pattern.search(text)
        if match:
            # a pattern anchored at a sentence's or a line's start matches from the stop or line break before it:
            # the finding's line is the text's own
            matched = match.group()
            yield match.start() + len(matched) - len(matched.lstrip(_ANCHORS)), what


_ANCHORS = " \t\n.!?:;,>*#-"


def _candidates(text: str, served: bool) -> list[tuple[str, _Pattern]]:
    """The patterns whose needles the text holds: the only ones that can match it (or any part of it)."""
    plain = " ".join(text.split())
    lower = plain.lower()
    ascii_only = plain.isascii()
    hit = _hits(_ASCII_FOLDED, lower) | _hits(_ASCII_EXACT, plain)
    if not ascii_only:
        hit |= _hits(_OTHER_FOLDED, lower) | _hits(_OTHER_EXACT, plain)
    if ">" in plain:
        # `_S` takes `>` between words (a line wrapped in a quote, `you are` then `> now a`): the needles with a
        # space are looked for with it read as one; the others cannot be made so.
        unquoted = " ".join(lower.replace(">", " ").split())
        hit |= _hits(_SPACED_FOLDED, unquoted)
    return [(what, pattern) for what, pattern, mask in _RUNS[served, ascii_only] if hit & mask == mask]


def _hits(tree: tuple[tuple[str, int, int], ...], text: str) -> int:
    """The bits of the needles of `tree` (`_needle_tree`) that the text holds."""
    hit = 0
    i, end = 0, len(tree)
    while i < end:
        needle, mask, size = tree[i]
        if needle in text:
            hit |= mask
            i += 1
        else:
            i += size
    return hit


def _message(what: str) -> str:
    return f"{what}; cards state lessons, they do not instruct the agent (prompt injection)"


RULE = Rule("prompt-injection", ERROR, ("security",), __doc__ or "", check, needs_card=False)
