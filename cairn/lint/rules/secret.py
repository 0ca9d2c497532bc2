"""secret: no credential anywhere in the card (private keys, cloud and vendor keys, tokens, passwords); git history
would keep it.

Every field is read as YAML decodes it (so `"\\x41KIA…"` is read as `AKIA…`), after NFKC, and the raw file too.
Vendor formats (AWS, OpenAI, Anthropic, GitHub, GitLab, Slack, Google, Stripe, npm, PyPI, Hugging Face, SendGrid,
Twilio, DigitalOcean, Shopify, JWTs, PEM private keys), credentials in URLs (`postgres://app:pw@host`), values
given to password- or key-like names (`password=`, `passwd:`, `DB_PASS=`, `"api_key": "…"`) or in prose
("the password is …"), quoted passphrases of several words (`password: "correct horse battery staple"`), passwords
on command lines (`curl -u user:pw`, `mysql -pS3cr3t`, `sshpass -p`, `docker login -p`) and HTTP credentials
(`Authorization: Basic` with a password in its base64, `Authorization: Bearer` or `token` with a token). Placeholders
(`<password>`, `${DB_PASS}`, `$PASS`, `{{token}}`, `changeme`, `example`, `***`, `xxx`, `username:password`) pass.
The finding names the kind of secret and never repeats the value.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator

from cairn.cards.card import card_id_from_path
from cairn.finding import Finding
from cairn.lint.model import ERROR, Context, Field, Rule, Target, field_findings, needle_masks

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a private key block", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-")),
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b")),
    (
        "an AWS secret access key",
        # `aws configure set aws_secret_access_key KEY` gives it after a space
        re.compile(
            r"(?i)aws_?secret_?(?:access_?)?key(?:\s*[\"']?\s*[:=]\s*[\"']?|[ \t]+)[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])"
        ),
    ),
    ("an OpenAI API key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
    ("an Anthropic API key", re.compile(r"\bsk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_-]{20,}")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})\b")),
    ("a GitLab token", re.compile(r"\bgl(?:pat|dt|ptt|rt|cbt|oas)-[A-Za-z0-9_-]{20,}")),
    ("a Slack token", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}|\bxapp-\d-[A-Za-z0-9-]{10,}")),  # xapp: app-level
    (
        "a Slack webhook URL",
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9]+/[A-Za-z0-9/]+"),
    ),
    (
        "a Discord webhook URL",
        re.compile(r"https://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{20,}"),
    ),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("a Google OAuth token", re.compile(r"\bya29\.[0-9A-Za-z_-]{20,}")),
    ("a Stripe key", re.compile(r"\b(?:[sr]k|whsec)_(?:live|test)_[0-9A-Za-z]{16,}\b|\bwhsec_[0-9A-Za-z]{24,}\b")),
    ("an npm token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("a PyPI token", re.compile(r"\bpypi-AgE[A-Za-z0-9_-]{40,}")),
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("a SendGrid key", re.compile(r"\bSG\.[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}")),
    ("a Twilio key", re.compile(r"\bSK[0-9a-f]{32}\b")),
    ("a DigitalOcean token", re.compile(r"\bdo[por]_v1_[a-f0-9]{64}\b")),
    ("a Shopify token", re.compile(r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b")),
    ("a Telegram bot token", re.compile(r"\b\d{8,10}:AA[A-Za-z0-9_-]{33}\b")),
    ("an Azure storage key", re.compile(r"(?i)AccountKey=[A-Za-z0-9+/]{40,}={0,2}")),
    ("a JSON Web Token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
)
_NEEDLES: tuple[tuple[str, ...], ...] = (
    ("private key", "putty-user-key"),
    ("akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "anpa", "anva", "aipa"),
    ("secret",),
    ("sk-",),
    ("sk-ant-",),
    ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ("glpat-", "gldt-", "glptt-", "glrt-", "glcbt-", "gloas-"),
    ("xox", "xapp-"),
    ("hooks.slack.com",),
    ("discord",),
    ("aiza",),
    ("ya29.",),
    ("_live_", "_test_", "whsec_"),
    ("npm_",),
    ("pypi-age",),
    ("hf_",),
    ("sg.",),
    ("sk",),
    ("_v1_",),
    ("shpat_", "shpca_", "shppa_", "shpss_"),
    (":aa",),
    ("accountkey=",),
    ("eyj",),
)  # one of these (lowercase) is in any match
# Long key- or token-like values: judged by their entropy (hashes and random keys are above it, words below).
_ASSIGNED = re.compile(
    r"(?i)\b(?:api[_-]?key|apikey|secret(?:[_-]?key)?|access[_-]?token|auth[_-]?token|token|passw(?:or)?d|"
    r"client[_-]?secret|private[_-]?key)\b[\"']?\s*[:=]\s*[\"']([^\"'\s]{16,})[\"']"
)
# "Password" in Chinese (simplified, traditional), Japanese and Korean: `密码: ...`, `パスワード：...` (the full-width
# colon an input method types reads as `:`). A word boundary does not fit them: `数据库密码` has none before `密`.
CJK_PASSWORD_WORDS = ("密码", "密碼", "パスワード", "비밀번호")
# Password-like names: any value that is not a placeholder is a password.
_PASSWORD = re.compile(
    r"(?i)(?:(?:\b|_)(?:pass(?:word|wd|phrase)?|pwd|db_?pass\w*|pgpassword|mysql_pwd)|\b\w*_pass(?:word|wd)?|"
    rf"{'|'.join(CJK_PASSWORD_WORDS)})"
    r"[\"']?[ \t]*(?::=|=|:)[ \t]*[\"'`]?([^\s\"'`,;)]{4,128})"
)
_PROSE = re.compile(
    r"(?i)\b(?:pass(?:word|wd|phrase)?|pwd|passcode|pin)\b(?:[ \t]+(?:for|of|to)[ \t]+[\w.@-]+)?[ \t]*(?:[ \t]is|[ \t]was|=|"
    r"[ \t]set[ \t]+to|:)[ \t]+[\"'`]?([^\s\"'`,;]{4,128})"
)
# The user may hold an `@` (`https://jane@acme.com:pw@git.acme.com`: a URL's user info ends at its last `@`).
_URL_CREDENTIAL = re.compile(r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/'\"<>]{1,64}:([^\s@/'\"<>]{1,128})@[\w.-]+")
# A password given on a command line, each with the word that must be in the text for it to match: `curl -u
# user:pw`, `mysql -pS3cr3t` (the value attached: `-p` alone prompts), `sshpass -p pw`, `docker login -p pw`.
# A command's options are read up to 512 characters past its name: an unbounded lazy scan read every line to its end
# from each `curl` of it, so a body of `curl curl curl ...` took minutes (160 KB: 56 s).
_COMMAND_PASSWORDS: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (
        ("curl",),
        re.compile(
            r"\bcurl\b[^\n|;&]{0,512}?[ \t](?:-u|--user|-U|--proxy-user)(?:[ \t]+|=)[\"']?[^\s:\"'@]{1,64}:"
            r"([^\s\"'`@]{1,128})"
        ),
    ),
    (
        ("mysql", "mariadb"),
        re.compile(r"(?i)\b(?:mysql|mariadb)[\w-]*[^\n|;&]{0,512}?[ \t]-p[\"']?([^\s\"'`|;&]{1,128})"),
    ),
    (("sshpass",), re.compile(r"\bsshpass[ \t]+-p[ \t]*[\"']?([^\s\"'`|;&]{1,128})")),
    (
        ("login",),
        re.compile(
            r"\b(?:docker|podman|nerdctl|buildah|skopeo|helm)[ \t]+(?:registry[ \t]+)?login\b[^\n|;&]{0,512}?[ \t]"
            r"(?:-p|--password)(?:[ \t]+|=)[\"']?([^\s\"'`|;&]{1,128})"
        ),
    ),
)
# HTTP credentials in a header: Basic is `user:password` in base64 (judged decoded), Bearer a token (and `token`,
# the scheme GitHub's API takes a classic token under).
_BASIC = re.compile(r"(?i)\bauthorization[\"']?[ \t]*[:=][ \t]*[\"']?basic[ \t]+([A-Za-z0-9+/]{8,}={0,2})(?![\w+/=])")
_BEARER = re.compile(r"(?i)\bauthorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:bearer|token)[ \t]+([A-Za-z0-9._~+/-]{20,}=*)")
# A quoted passphrase of several words (`password: "correct horse battery staple"`); `_looks_like_passphrase`
# tells it from a quoted description ("your password here", "the one in the vault").
_PASSPHRASE = re.compile(
    r"(?i)(?:(?:\b|_)(?:pass(?:word|wd|phrase)?|pwd|passcode|db_?pass\w*)|\b\w*_pass(?:word|wd)?)[\"']?[ \t]*"
    r"(?::=|=|:|[ \t]is|[ \t]was)[ \t]*([\"'])([^\"'\n]{12,128})\1"
)
# Documentation's placeholders and the well-known example keys are not secrets.
_PLACEHOLDER = re.compile(
    r"(?i:example|placeholder|changeme|change_me|your[_-]|xxxx|dummy|redacted|sample|fake)|\*\*\*|\.\.\.|<[^>]*>|"
    r"\$\{[A-Za-z_]|\$[A-Z_][A-Z0-9_]*|\{\{|%\(?[a-z_]*\)?s|^\{|^\$|^%"
)
_PLACEHOLDER_WORDS = frozenset(
    "password passwd pass pwd pw secret token key apikey mypassword yourpassword p4ssw0rd user username none null "
    "true false required optional empty hidden stored prompted prompt set unset given same".split()
)
_MIN_ENTROPY = 3.5  # bits per character; hex digests and random keys are above it, words and paths below


def placeholder_in(text: str) -> bool:
    """Whether a vendor key's or token's match holds a placeholder (`example`, `your_`, `xxxx`...), which passes."""
    return _PLACEHOLDER.search(text) is not None


def is_placeholder(value: str) -> bool:
    """Whether a password or key value is a placeholder (`password`, `<pw>`, `$PASS`, `changeme`), which passes."""
    stripped = value.strip(".,;:!?)(")
    if not stripped or _PLACEHOLDER.search(stripped) or stripped.lower() in _PLACEHOLDER_WORDS:
        return True
    # an environment variable's or a file's name (FILE0, DB_PASSWORD), a path, a flag: not a value
    return (
        re.fullmatch(r"[A-Z][A-Z0-9_]*", stripped) is not None
        or stripped.startswith(("/", "~", "-", "@"))
        or re.fullmatch(r"[a-z]+(?:[_-][a-z]+)*", stripped) is not None
        and len(stripped) < 12
    )


# Words of a description, not of a passphrase ("the one in the vault", "same as above", "not set").
_DESCRIPTION_WORDS = frozenset(
    "a an the of in on to for from with by as at is are be was it its this that these those your my our their you we "
    "they here there same see set use used using via env environment variable var value secret password passphrase "
    "pass token key none null empty blank not no any some one real actual stored store kept keep saved ask asked "
    "prompt prompted enter entered type typed given provided required optional default whatever something anything "
    "and or but if when then else".split()
)


def _looks_like_passphrase(value: str) -> bool:
    words = [w.strip(".,;:!?()").lower() for w in value.split()]
    return (
        len(words) >= 2
        and not _PLACEHOLDER.search(value)
        and all(words)
        and not any(w in _DESCRIPTION_WORDS or w in _PLACEHOLDER_WORDS for w in words)
    )


def _basic_password(blob: str) -> str | None:
    """The password in an HTTP Basic credential (base64 of `user:password`), None when it holds none."""
    try:
        core = blob.rstrip("=")
        decoded = base64.b64decode(core + "=" * (-len(core) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    user, colon, password = decoded.partition(":")
    return password if colon and user.isprintable() and password.isprintable() else None


def _basic_kept(blob: str) -> bool:
    password = _basic_password(blob)
    return password is None or not _looks_like_password(password)


def bearer_kept(token: str) -> bool:
    """Whether this rule lets a bearer token pass (a placeholder, or too plain to be a token)."""
    return (
        _PLACEHOLDER.search(token) is not None
        or _entropy(token) < _MIN_ENTROPY
        or not (any(ch.isdigit() for ch in token) and any(ch.isalpha() for ch in token))
    )


def _looks_like_password(value: str) -> bool:
    stripped = value.strip(".,;:!?)(")
    return (
        len(stripped) >= 5
        and not is_placeholder(stripped)
        and (any(ch.isdigit() for ch in stripped) or any(not ch.isalnum() for ch in stripped) or len(stripped) >= 12)
        and any(ch.isalpha() for ch in stripped)
    )


# Each check's needles as one bit (`_PATTERNS` in order, then the checks after them): every needle is tested once a
# field, and a check runs when its bit is set.
_ASSIGNED_BIT, _PASSWORD_BIT, _PASSPHRASE_BIT, _AUTHORIZATION_BIT = (1 << (len(_PATTERNS) + i) for i in range(4))
_COMMAND_BITS = tuple(1 << (len(_PATTERNS) + 4 + i) for i in range(len(_COMMAND_PASSWORDS)))


_KINDS, _ = needle_masks(
    (None, (needles,))
    for needles in (
        *_NEEDLES,
        ("key", "secret", "token", "passw"),  # _ASSIGNED_BIT
        ("pass", "pwd", "pin", *CJK_PASSWORD_WORDS),  # _PASSWORD_BIT
        ("pass", "pwd"),  # _PASSPHRASE_BIT
        ("authorization",),  # _AUTHORIZATION_BIT
        *(needles for needles, _ in _COMMAND_PASSWORDS),  # _COMMAND_BITS
    )
)
_NEEDLE_BITS = tuple(_KINDS.get(None, {}).items())


def check(target: Target, context: Context) -> Iterator[Finding]:
    found: list[tuple[Field, int, str]] = []
    for field in target.fields:
        text = field.text
        if field.key == "id":  # agents receive it: read as named, since `_` and `-` join a key (`ghp_…`, `xoxb-…`)
            text = card_id_from_path(target.path) or ""
        if not text:
            continue
        lower = text.lower()
        hit = 0
        for bits in [bits for needle, bits in _NEEDLE_BITS if needle in lower]:
            hit |= bits
        for i, (kind, pattern) in enumerate(_PATTERNS):
            if not hit & 1 << i:
                continue
            for match in pattern.finditer(text):
                if not _PLACEHOLDER.search(match.group(0)):
                    found.append((field, match.start(), _message(kind)))
        assigned = set()
        for match in _ASSIGNED.finditer(text) if hit & _ASSIGNED_BIT else ():
            value = match.group(1)
            if not _PLACEHOLDER.search(value) and _entropy(value) >= _MIN_ENTROPY:
                assigned.add(match.start())
                found.append(
                    (
                        field,
                        match.start(),
                        _message("a hard-coded credential (a key, token or password assigned a value)"),
                    )
                )
        for match in _URL_CREDENTIAL.finditer(text) if "://" in text and "@" in text else ():
            if not is_placeholder(match.group(1)):
                found.append((field, match.start(), _message("a URL with a password in it")))
        for bit, (_, pattern) in zip(_COMMAND_BITS, _COMMAND_PASSWORDS, strict=True):
            for match in pattern.finditer(text) if hit & bit else ():
                if _looks_like_password(match.group(1)):
                    found.append((field, match.start(), _message("a password given on a command line")))
        if hit & _AUTHORIZATION_BIT:
            for match in _BASIC.finditer(text):
                if not _basic_kept(match.group(1)):
                    found.append((field, match.start(), _message("an HTTP Basic credential (a password in base64)")))
            for match in _BEARER.finditer(text):
                if not bearer_kept(match.group(1)):
                    found.append((field, match.start(), _message("an HTTP bearer token")))
        for pattern in (_PASSWORD, _PROSE) if hit & _PASSWORD_BIT else ():
            for match in pattern.finditer(text):
                if match.start() not in assigned and _looks_like_password(match.group(1)):
                    found.append((field, match.start(), _message("a password written out")))
        for match in _PASSPHRASE.finditer(text) if hit & _PASSPHRASE_BIT else ():
            if _looks_like_passphrase(match.group(2)):
                found.append((field, match.start(), _message("a password written out")))
    yield from field_findings(RULE, target, found)


# What `cairn sanitize` redacts so that its copy passes this rule: (pattern, the group that is the secret (0: the whole
# match), whether a found value is kept, as this rule lets it pass).
REDACTABLE: tuple[tuple[re.Pattern[str], int, Callable[[str], bool]], ...] = (
    *((pattern, 0, lambda value: _PLACEHOLDER.search(value) is not None) for _, pattern in _PATTERNS),
    (_ASSIGNED, 1, lambda value: _PLACEHOLDER.search(value) is not None or _entropy(value) < _MIN_ENTROPY),
    (_URL_CREDENTIAL, 1, is_placeholder),
    (_PASSWORD, 1, lambda value: not _looks_like_password(value)),
    (_PROSE, 1, lambda value: not _looks_like_password(value)),
    *((pattern, 1, lambda value: not _looks_like_password(value)) for _, pattern in _COMMAND_PASSWORDS),
    (_BASIC, 1, _basic_kept),
    (_BEARER, 1, bearer_kept),
    (_PASSPHRASE, 2, lambda value: not _looks_like_passphrase(value)),
)


def _message(kind: str) -> str:
    return f"this looks like {kind}; remove it and rotate it (git history keeps it), or use a placeholder"


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


RULE = Rule("secret", ERROR, ("security",), __doc__ or "", check, needs_card=False)
