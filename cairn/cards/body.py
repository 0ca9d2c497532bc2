"""A card's Markdown body read with markdown-it-py: whether it holds more than headings, and its links.

Only a body's first `MARKDOWN_CHARS` are read as Markdown. markdown-it-py takes 2 to 30 seconds per MiB on shapes a
writer can choose (a paragraph of `[`, a list of 250,000 items, a line of `*a`), and a card may be 1 MiB: one such
card kept `cairn lint` busy for 23 s in every teammate's pre-commit hook and in CI. A lesson is a few KiB (the
largest card of the benchmark suites is 10 KB); past the cut, lint says which lines it did not read for links.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote

if TYPE_CHECKING:  # markdown-it is imported where a body is parsed: loading the lint rules (`cairn show`) needs none
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

_CONTENT_BLOCKS = frozenset(
    {
        "paragraph_open",
        "fence",
        "code_block",
        "bullet_list_open",
        "ordered_list_open",
        "blockquote_open",
        "table_open",
        "html_block",
    }
)


@dataclass(frozen=True, slots=True)
class Link:
    """A Markdown link (inline or by reference). line: 1-based line in the body where the target is written."""

    href: str
    line: int


@dataclass(frozen=True, slots=True)
class CardBody:
    """What lint needs from a body.

    links: every link, for internal-link. has_content: whether anything besides headings is written (prose, lists,
    code), for body-present. unread_from: the first line (1-based, in the body) not read as Markdown when the body is
    longer than `MARKDOWN_CHARS` and what follows could hold a link (a `[` or a `<`), else None.
    """

    links: tuple[Link, ...]
    has_content: bool
    unread_from: int | None = None


MARKDOWN_CHARS = 64 * 1024


_PARSER: MarkdownIt | None = None


def read_body(text: str) -> CardBody:
    """Parse a body (the Markdown after the frontmatter)."""
    global _PARSER
    if _PARSER is None:
        from markdown_it import MarkdownIt

        _PARSER = MarkdownIt("commonmark")
    read, rest = _cut(text)
    tokens = _PARSER.parse(read)
    lines = read.split("\n")
    definitions = _definition_lines(read)
    links: list[Link] = []
    has_content = False
    for token in tokens:
        if token.type in _CONTENT_BLOCKS:
            has_content = True
        elif token.type == "inline" and token.children:
            links.extend(_links(token, lines, definitions))
    if rest and not has_content:  # past the cut, any line but a heading or a blank one is content
        has_content = any(line.strip() and not line.lstrip().startswith("#") for line in rest.split("\n"))
    unread_from = read.count("\n") + 1 if "[" in rest or "<" in rest else None
    return CardBody(links=tuple(links), has_content=has_content, unread_from=unread_from)


def _cut(text: str) -> tuple[str, str]:
    """The body split where Markdown reading stops: after the last blank line (else the last line) that ends within
    `MARKDOWN_CHARS`, so no paragraph is read in part; the whole body and "" when it is that short."""
    if len(text) <= MARKDOWN_CHARS:
        return text, ""
    end = text.rfind("\n\n", 0, MARKDOWN_CHARS - 1) + 2  # after the blank line
    if end < MARKDOWN_CHARS // 2:
        end = text.rfind("\n", 0, MARKDOWN_CHARS) + 1
    if end <= 0:
        end = MARKDOWN_CHARS
    return text[:end], text[end:]


# A reference definition, `[label]: target` (the target may start on the next line), in a quote or a list too.
_DEFINITION = re.compile(r"^[ \t>*+-]*\[(?:[^\]\\\n]|\\.){1,999}\]:[ \t]*\n?[ \t>]*<?([^\s>]+)", re.MULTILINE)


def _definition_lines(text: str) -> dict[str, int]:
    """Each reference definition's target with the 1-based line it is written on (the first, for a target defined
    twice): where a reference link's target is written."""
    found: dict[str, int] = {}
    at, line = 0, 1
    for match in _DEFINITION.finditer(text):
        at, line = match.start(1), line + text.count("\n", at, match.start(1))
        found.setdefault(match.group(1), line)
    return found


_NEAR = 4096  # characters after the link before: where a reference's target is looked for before its definition


def _links(inline: Token, lines: list[str], definitions: dict[str, int]) -> list[Link]:
    """The links of one inline token, each at the first line that names its target: in the block, from the link
    before it on (links come in the order they are written), else at its reference definition, else at the block's
    first line. Each search is bounded (a target defined by a reference is looked for near the link before it; one
    missing from the rest of the block is not looked for again), never the whole body per link: 40,000 links in a
    body took minutes."""
    start, end = (int(inline.map[0]), int(inline.map[1])) if inline.map else (0, len(lines))
    block = "\n".join(lines[start:end])
    found: list[Link] = []
    offset, line = 0, start + 1  # where the link before this one was found, in `block`, and its line
    missing: set[str] = set()  # targets not in the block from `offset` on (nor, so, from any later offset)
    for child in inline.children or []:
        if child.type != "link_open":
            continue
        href = str(child.attrs.get("href", ""))
        at = -1
        for target in dict.fromkeys((unquote(href), href)):  # markdown-it percent-encodes what the source wrote
            if not target or target in missing:
                continue
            if target in definitions:
                at = block.find(target, offset, offset + _NEAR + len(target))
            else:
                at = block.find(target, offset)
                if at < 0:
                    missing.add(target)
            if at >= 0:
                break
        if at >= 0:
            offset, line = at, line + block.count("\n", offset, at)
            found.append(Link(href, line))
        else:
            found.append(Link(href, definitions.get(unquote(href), definitions.get(href, start + 1))))
    return found
