"""secret: no credential anywhere in the card (private keys, cloud keys, tokens); git history would keep it.

The finding names the kind of secret and never repeats the value.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator

from cairn.finding import Finding
from cairn.lint.model import ERROR, Context, Rule, Target

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a private key block", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")),
    (
        "an AWS secret access key",
        re.compile(r"(?i)aws_?secret_?(?:access_?)?key\s*[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+]{40}\b"),
    ),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b")),
    ("a GitLab token", re.compile(r"\bgl(?:pat|dt|ptt|rt)-[A-Za-z0-9_-]{20,}")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("a Slack webhook URL", re.compile(r"https://hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]+")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("a Stripe live key", re.compile(r"\b[sr]k_live_[0-9A-Za-z]{20,}\b")),
    ("a JSON Web Token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
)
_ASSIGNED = re.compile(
    r"(?i)\b(?:api[_-]?key|apikey|secret(?:[_-]?key)?|access[_-]?token|auth[_-]?token|token|passw(?:or)?d|"
    r"client[_-]?secret)\b[\"']?\s*[:=]\s*[\"']([^\"'\s]{16,})[\"']"
)
# Documentation's placeholders and the well-known example keys are not secrets.
_PLACEHOLDER = re.compile(
    r"(?i:example|placeholder|changeme|your[_-]|xxxx)|\*\*\*|\.\.\.|<[^>]*>|\$\{?[A-Z_][A-Z0-9_]*"
)
_MIN_ENTROPY = 3.5  # bits per character; hex digests and random keys are above it, words and paths below


def check(target: Target, context: Context) -> Iterator[Finding]:
    text = target.text
    if not text:
        return
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            if not _PLACEHOLDER.search(match.group(0)):
                yield _found(target, match.start(), kind)
    for match in _ASSIGNED.finditer(text):
        value = match.group(1)
        if not _PLACEHOLDER.search(value) and _entropy(value) >= _MIN_ENTROPY:
            yield _found(target, match.start(), "a hard-coded credential (a key, token or password assigned a value)")


def _found(target: Target, offset: int, kind: str) -> Finding:
    return RULE.at(
        target,
        target.line_at(offset),
        f"this looks like {kind}; remove it and rotate it (git history keeps it), or use a placeholder",
    )


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


RULE = Rule("secret", ERROR, ("security",), __doc__ or "", check, needs_card=False)
