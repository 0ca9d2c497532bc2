"""encoded-payload: no encoded text in a card: base64, hex or `\\xNN` runs that decode to readable text.

A reader sees noise, a model decodes it. Keys, hashes and ids are not text when decoded, so they pass; a blob that
decodes to words is refused (spell the text out, or leave it out of the card). YAML escapes in the frontmatter
are the `hidden-text` rule's.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator

from cairn.finding import Finding
from cairn.lint.model import ERROR, Context, Field, Rule, Target, field_findings

# A run of base64 characters (left to right, so each match is a whole run); a hex blob is such a run too.
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{24,}={0,2}")
_HEX = re.compile(r"(?:[0-9A-Fa-f]{2}){12,}")
_ESCAPES = re.compile(r"(?:\\x[0-9A-Fa-f]{2}){4,}|(?:\\u00[0-9A-Fa-f]{2}){4,}|(?:%[0-9A-Fa-f]{2}){6,}")
_WORDISH = re.compile(r"[A-Za-z]{3,}")


def _readable(data: bytes, min_words: int = 2) -> str | None:
    """The decoded bytes as text when they read as text (printable, with words), else None."""
    if len(data) < 12:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(1 for ch in text if ch.isprintable() or ch in "\n\t")
    if printable < len(text) * 0.95 or len(_WORDISH.findall(text)) < min_words:
        return None
    letters = sum(1 for ch in text if ch.isalpha() or ch == " ")
    return text if letters >= len(text) * 0.6 else None


def _decode_base64(blob: str) -> bytes | None:
    if not (
        any(c.isdigit() or c in "+/_-=" for c in blob)
        or (any(c.islower() for c in blob) and any(c.isupper() for c in blob))
    ):
        return None
    core = blob.rstrip("=")
    padded = core + "=" * (-len(core) % 4)
    try:
        if "-" in padded or "_" in padded:
            return base64.urlsafe_b64decode(padded)
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None


def _decoded(kind: str, blob: str) -> str | None:
    if kind == "base64":
        data = _decode_base64(blob)
    elif kind == "hex":
        data = bytes.fromhex(blob)
    else:
        parts = re.findall(
            r"[0-9A-Fa-f]{2}(?=[^0-9A-Fa-f]|$)", blob.replace("\\x", " ").replace("\\u00", " ").replace("%", " ")
        )
        data = bytes(int(p, 16) for p in parts)
    return _readable(data, 2 if kind != "escaped" else 1) if data else None


def check(target: Target, context: Context) -> Iterator[Finding]:
    found: list[tuple[Field, int, str]] = []
    for field in target.fields:
        if not field.text:  # the id too: agents receive it with every card
            continue
        hit = _first(field.text)
        if hit is not None:
            offset, kind, text = hit
            shown = " ".join(text.split())[:40]
            found.append(
                (
                    field,
                    offset,
                    f"a {kind} blob decodes to text ('{shown}'); a reader sees noise and a "
                    "model reads it: write the text plainly or leave it out",
                )
            )
    yield from field_findings(RULE, target, found)


def _first(text: str) -> tuple[int, str, str] | None:
    for match in _BASE64.finditer(text):
        blob = match.group()
        kind = "hex" if _HEX.fullmatch(blob) else "base64"
        decoded = _decoded(kind, blob)
        if decoded is not None:
            return match.start(), kind, decoded
    if "\\x" in text or "\\u00" in text or "%" in text:
        for match in _ESCAPES.finditer(text):
            decoded = _decoded("escaped", match.group())
            if decoded is not None:
                return match.start(), "escaped", decoded
    return None


RULE = Rule("encoded-payload", ERROR, ("security",), __doc__ or "", check, needs_card=False)
