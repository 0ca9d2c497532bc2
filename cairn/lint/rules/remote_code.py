"""remote-code: no command that runs code fetched from the network or sends local secrets out.

A card's text reaches agents that can run shell commands, so the whole card (decoded, after NFKC; and again with its
HTML character references decoded, `&#124;` for `|`, then its percent-escapes, `%7C`) is read for:
a download piped into a shell or interpreter (`curl … | sh`, `wget -O- | bash`, `curl … | /usr/bin/env bash`,
`curl … | tee i.sh | sh`, `iwr … | iex`) or run by one (`bash <(curl …)`, `eval "$(curl …)"`, `source <(curl …)`),
or saved and then run (`curl -o i.sh … && sh i.sh`),
decoded data piped into a shell (`base64 -d | sh`), reverse shells (`nc -e`, `/dev/tcp/`), uploads of keys and
credential files (`curl -F f=@$HOME/.ssh/id_rsa`), and the environment sent to the network (`env | curl`,
`curl -d "$(printenv)"`). A lesson about such a command can name it in words; the command itself is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from cairn.finding import Finding
from cairn.lint.model import (
    ERROR,
    Context,
    Field,
    Rule,
    Target,
    decoded_percent,
    decoded_references,
    field_findings,
    needle_masks,
)

_FETCH = r"(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod|aria2c|lwp-download)"
_SHELL = r"(?:sudo\s+(?:-\S+\s+)*)?(?:ba|z|k|da|fi|c|tc)?sh|python[0-9.]*|perl|ruby|node|php|iex|invoke-expression|pwsh|powershell"
_SECRET_FILE = (
    r"(?:\.ssh\b|id_rsa|id_ed25519|id_ecdsa|id_dsa|\.aws\b|\.env\b|\.netrc|\.npmrc|\.pypirc|\.git-credentials|"
    r"\.kube/config|\.docker/config|/etc/passwd|/etc/shadow|\.gnupg|credentials\b|\.bash_history|\.pgpass|"
    r"\.config/gh|keychain)"
)
# A shell as a pipe reaches it: by its name, its path (`/bin/bash`), or through `env` (`/usr/bin/env bash`).
_RUN = rf"(?:[\w.~/-]{{0,200}}/)?(?:env\s+(?:-\S+\s+){{0,5}}(?:[\w.~/-]{{0,200}}/)?)?(?:{_SHELL})"
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (what, re.compile(pattern, re.IGNORECASE))
    for what, pattern in (
        (
            "pipes a download into a shell",  # `|&` too, and through a `tee` (`| tee install.sh | sh`)
            rf"\b{_FETCH}\b[^\n|;&]{{0,300}}(?:\|\s*tee\b[^\n|;&]{{0,200}})?\|&?\s*{_RUN}\b",
        ),
        (
            "runs a download in a shell",  # `bash <(curl …)`, `eval "$(curl …)"`, `source <(curl …)`, `. <(curl …)`
            rf"(?:\b(?:{_RUN}|eval|source)|(?<![^\s;&|(])\.)\s+(?:-\S+\s+)*(?:<\(|\"?\$\()\s*{_FETCH}\b",
        ),
        (
            "runs a downloaded file",
            rf"\b{_FETCH}\b[^\n]{{0,300}}?\s(?:-[a-zA-Z]*[oO]|--output(?:-document)?(?:=|\s)|>)\s*['\"]?([^\s'\";&|]+)['\"]?"
            rf"[^\n]{{0,200}}?(?:&&|;|\|\|)\s*(?:(?:{_SHELL})\s+(?:-\S+\s+)*|(?:source|\.)\s+|"
            rf"chmod\s+\S+\s+\S+\s*(?:&&|;)\s*)['\"]?(?:\./)?\1(?![^\s'\";&|])",
        ),
        (
            "pipes decoded data into a shell",
            rf"\b(?:base64|base32|xxd|openssl\s+(?:enc|base64))\b[^\n|]{{0,40}}"
            rf"(?:-d|--decode|-D|-r)\b[^\n|]{{0,40}}\|\s*(?:{_SHELL})\b",
        ),
        (
            "opens a reverse shell",
            r"\b(?:nc|ncat|netcat)\b[^\n|;]{0,80}\s-[a-z]*[ec]\s|/dev/(?:tcp|udp)/|"
            r"\bsocat\b[^\n]{0,80}\bexec:|\bmkfifo\b[^\n]{0,80}\b(?:nc|ncat)\b",
        ),
        (
            "uploads a key or credentials file",
            rf"\b(?:{_FETCH}|scp|rsync|nc|ncat)\b[^\n]{{0,200}}?(?:-F|--form|-d|"
            rf"--data(?:-binary|-raw|-urlencode)?|-T|--upload-file|--post-file|--body-file|<)\s*['\"]?[^\s'\"]*@?"
            rf"[^\s'\"]*{_SECRET_FILE}",
        ),
        (
            "sends a key or credentials file to the network",
            rf"\bcat\b[^\n|]{{0,80}}{_SECRET_FILE}[^\n|]{{0,40}}\|"
            rf"\s*(?:{_FETCH}|nc|ncat|netcat)\b",
        ),
        (
            "sends the environment to the network",
            rf"(?:\benv\b|\bprintenv\b|\bset\b|\bexport\s+-p)\s*\|\s*"
            rf"(?:{_FETCH}|nc|ncat|netcat)\b|\b{_FETCH}\b[^\n]{{0,200}}\$\((?:env|printenv|set)\)|"
            rf"(?:~/\.ssh|~/\.aws|\.env\b|id_rsa)[^\n|]{{0,60}}\|\s*(?:{_FETCH}|nc|ncat)\b",
        ),
    )
)


_FETCHERS = ("curl", "wget", "fetch", "iwr", "irm", "invoke-", "aria2c", "lwp-")
_FILES = (
    ".ssh",
    "id_rsa",
    "id_ed",
    "id_ecdsa",
    "id_dsa",
    ".aws",
    ".env",
    ".netrc",
    ".npmrc",
    ".pypirc",
    "credentials",
    ".kube",
    ".docker",
    "passwd",
    "shadow",
    ".gnupg",
    "history",
    ".pgpass",
    ".config/gh",
    "keychain",
)
# For each pattern: groups of lowercase strings; a match holds one string of every group (tested before the regex).
_NEEDLES: tuple[tuple[tuple[str, ...], ...], ...] = (
    (_FETCHERS, ("|",)),
    (_FETCHERS, ("<(", "$(")),
    (_FETCHERS, ("-", ">"), ("&&", ";", "||")),
    (("base64", "base32", "xxd", "openssl"), ("|",)),
    (("nc", "netcat", "/dev/tcp", "/dev/udp", "socat", "mkfifo"),),
    ((*_FETCHERS, "scp", "rsync", "nc"), _FILES),
    (("cat",), ("|",), _FILES),
    (("env", "set", "export", ".ssh", ".aws", "id_rsa"), (*_FETCHERS, "nc")),
)


_FETCH_WORDS = (
    "curl",
    "wget",
    "fetch",
    "iwr",
    "irm",
    "invoke-webrequest",
    "invoke-restmethod",
    "aria2c",
    "lwp-download",
)
_PIPE_TO_NET = re.compile(r"\|\s*(?:curl|wget|fetch|iwr|irm|invoke-|aria2c|lwp-|nc|ncat|netcat)")


def _word_in(lower: str, words: tuple[str, ...]) -> bool:
    """Whether one of `words` stands in `lower` as a word (`\\b` on both sides, as the patterns ask)."""
    for word in words:
        i = lower.find(word)
        while i >= 0:
            end = i + len(word)
            if (i == 0 or not _is_word_char(lower[i - 1])) and (end == len(lower) or not _is_word_char(lower[end])):
                return True
            i = lower.find(word, i + 1)
    return False


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


# Tighter tests than the needles for the patterns whose needles are common words (`nc` in "once", `set`, `fetch`):
# each holds for any text the pattern matches (a lowercased field), and costs less than the regex (which, starting
# with `\b` and an alternation, walks every position).
_GATES: dict[int, Callable[[str], bool]] = {
    4: lambda lower: (
        "/dev/tcp/" in lower
        or "/dev/udp/" in lower
        or "socat" in lower
        or "mkfifo" in lower
        or _word_in(lower, ("nc", "ncat", "netcat"))
    ),
    5: lambda lower: _word_in(lower, (*_FETCH_WORDS, "scp", "rsync", "nc", "ncat")),
    7: lambda lower: (
        _PIPE_TO_NET.search(lower) is not None or "$(env)" in lower or "$(printenv)" in lower or "$(set)" in lower
    ),
}


# Each group of each pattern's needles as one bit (`needle_masks`): every needle is tested once a text, and a
# pattern runs when the text's needles set every bit of its mask.
_KINDS, _MASKS = needle_masks((None, groups) for groups in _NEEDLES)
_NEEDLE_BITS = tuple(_KINDS.get(None, {}).items())


def check(target: Target, context: Context) -> Iterator[Finding]:
    found: list[tuple[Field, int, str]] = []
    for field in target.fields:
        if field.key == "id" or not field.text:
            continue
        # `&#124; sh`, `%7C sh`, `%69nstall.sh`: a model reads the pipe and the name
        readings = [field.text]
        for decode in (decoded_references, decoded_percent):
            decoded = decode(readings[-1])
            if decoded is not None:
                readings.append(decoded)
        seen: set[str] = set()
        for text in readings:
            lower = text.lower()
            hit = 0
            for bits in [bits for needle, bits in _NEEDLE_BITS if needle in lower]:
                hit |= bits
            for i, ((what, pattern), mask) in enumerate(zip(_PATTERNS, _MASKS, strict=True)):
                if what in seen or hit & mask != mask:
                    continue
                gate = _GATES.get(i)
                if gate is not None and not gate(lower):
                    continue
                match = pattern.search(text)
                if match:
                    seen.add(what)
                    found.append(
                        (
                            field,
                            min(match.start(), len(field.text)),
                            f"the text {what}; an agent could run it as written: "
                            "describe the risk in words instead (remote code / exfiltration)",
                        )
                    )
    yield from field_findings(RULE, target, found)


RULE = Rule("remote-code", ERROR, ("security",), __doc__ or "", check, needs_card=False)
