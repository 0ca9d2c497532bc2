"""hidden-text: nothing in a card that a reader does not see but an agent reads.

Lint, review, the index and the hook judge the same text: field values as YAML decodes them, then Unicode NFKC.
This rule reports what would make that text differ from what a reader sees: invisible and format characters
(zero-width spaces and joiners, bidirectional controls, U+E0000 tag characters, control characters, the line and
paragraph separators YAML reads as line breaks; the parser removes them from every served field anyway), words that mix Latin with Cyrillic or Greek look-alike letters
(homoglyphs), YAML escapes that write plain letters (`"\\x49gnore"` reads `Ignore`), and HTML comments in a served
field (name, summary, aliases), which a rendered view hides.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from cairn.cards.visible import LINE_SEPARATORS, describe, invisible_in, mixed_script_words
from cairn.finding import Finding
from cairn.lint.model import ERROR, Context, Field, Rule, Target, field_findings

_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\(x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8})")
_COMMENT = re.compile(r"<!--")  # an opener hides what follows it; "build --> test" hides nothing
_IN_COMMENT = (
    "an HTML comment in a served field (name, summary, aliases): a rendered view hides it, the agent reads it; "
    "delete it"
)


def _mixed(word: str) -> str:
    return (
        f"the word '{_shown(word)}' mixes Latin with Cyrillic or Greek letters that look Latin (a homoglyph hides "
        "the word from readers and filters); retype it"
    )


def check(target: Target, context: Context) -> Iterator[Finding]:
    yield from _invisible(target)
    found: list[tuple[Field, int, str]] = []
    for field in target.fields:
        if field.served and field.key != "id":
            match = _COMMENT.search(field.text)
            if match:
                found.append((field, match.start(), _IN_COMMENT))
        if field.key == "name+summary" or (field.key == "file" and target.card is not None):
            continue
        for offset, word in mixed_script_words(field.text):
            found.append((field, offset, _mixed(word)))
    yield from field_findings(RULE, target, found)
    yield from _escapes(target)


def _invisible(target: Target) -> Iterator[Finding]:
    card_id = target.path.removeprefix("cards/").removesuffix(".md")
    in_id = invisible_in(card_id)
    if in_id:
        yield RULE.at(
            target,
            0,
            f"the file name holds invisible characters ({_chars(ch for _, ch in in_id)}); "
            "agents receive the id, so rename the file",
        )
    card = target.card
    reported = False
    if card is not None:
        for key, chars in card.hidden:
            line = card.body_line if key == "body" else target.line_of(key)
            yield RULE.at(
                target,
                line,
                f"the {key} holds invisible characters ({_chars(chars)}) that a reader "
                "does not see and an agent reads; delete them",
            )
            reported = True
    if reported or not target.text:
        return
    lines: dict[int, list[str]] = {}
    for offset, ch in invisible_in(target.text):
        lines.setdefault(target.line_at(offset), []).append(ch)
    for line, on_line in sorted(lines.items())[:20]:
        if all(ch in LINE_SEPARATORS for ch in on_line):
            why = (
                f"the line holds a line separator ({_chars(on_line)}) that YAML and agents read as a line break "
                "and a diff may not show (`name: X<U+2028>status: retired` is two keys); use a plain newline"
            )
        else:
            why = (
                f"the line holds invisible characters ({_chars(on_line)}) that a reader does not see and an agent reads"
            )
            why += "; delete them"
        yield RULE.at(target, line, why)


def _escapes(target: Target) -> Iterator[Finding]:
    """YAML escapes in the frontmatter that write a plain, visible character: the only reason is to hide a word."""
    text = target.text or ""
    if not text.startswith("---"):
        return
    front = target.front
    decoded = [f.text for f in target.fields if f.key not in ("file", "id", "name+summary", "body")]
    for match in _ESCAPE.finditer(front):
        code = int(match.group(1)[1:], 16)
        ch = chr(code) if code < 0x110000 else ""
        if not (ch.isascii() and ch.isprintable() and ch != " "):  # tools escape non-ASCII text; not letters
            continue
        literal = "\\" + match.group(1)
        if target.card is not None and any(literal in value for value in decoded):
            continue  # a plain scalar: the backslash is text, not an escape
        yield RULE.at(
            target,
            target.line_at(match.start()),
            f"a YAML escape ({literal}) writes the plain character "
            f"'{ch}', which hides the word from readers and searches; write the text as it reads",
        )
        return


def _chars(chars: object) -> str:
    unique = list(dict.fromkeys(chars))  # type: ignore[call-overload]
    shown = ", ".join(describe(ch) for ch in unique[:3])
    return shown + (f" and {len(unique) - 3} more" if len(unique) > 3 else "")


def _shown(word: str) -> str:
    return "".join(ch if ch.isascii() else f"\\u{ord(ch):04x}" for ch in word[:40])


RULE = Rule("hidden-text", ERROR, ("security",), __doc__ or "", check, needs_card=False)
