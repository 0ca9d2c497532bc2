"""A card's Markdown body read with markdown-it-py: its first heading, its sections and its links."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

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
class Section:
    """A heading. level: 1 for `#`; line: 1-based line in the body."""

    title: str
    level: int
    line: int


@dataclass(frozen=True, slots=True)
class Link:
    """A Markdown link (inline or by reference). line: 1-based line in the body where the target is written."""

    href: str
    text: str
    line: int


@dataclass(frozen=True, slots=True)
class CardBody:
    """What lint needs from a body.

    first_heading: the first heading's text, or None.
    has_content: whether anything besides headings is written (prose, lists, code).
    """

    first_heading: str | None
    sections: tuple[Section, ...]
    links: tuple[Link, ...]
    has_content: bool


_PARSER: MarkdownIt | None = None


def read_body(text: str) -> CardBody:
    """Parse a body (the Markdown after the frontmatter)."""
    global _PARSER
    if _PARSER is None:
        _PARSER = MarkdownIt("commonmark")
    tokens = _PARSER.parse(text)
    lines = text.split("\n")
    sections: list[Section] = []
    links: list[Link] = []
    has_content = False
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and i + 1 < len(tokens):
            start = token.map[0] if token.map else 0
            sections.append(Section(tokens[i + 1].content.strip(), int(token.tag[1:]), start + 1))
        elif token.type in _CONTENT_BLOCKS:
            has_content = True
        if token.type == "inline" and token.children:
            links.extend(_links(token, lines))
    return CardBody(
        first_heading=sections[0].title if sections else None,
        sections=tuple(sections),
        links=tuple(links),
        has_content=has_content,
    )


def _links(inline: Token, lines: list[str]) -> list[Link]:
    start, end = (int(inline.map[0]), int(inline.map[1])) if inline.map else (0, len(lines))
    found: list[Link] = []
    children = inline.children or []
    for j, child in enumerate(children):
        if child.type != "link_open":
            continue
        href = str(child.attrs.get("href", ""))
        label = children[j + 1].content if j + 1 < len(children) and children[j + 1].type == "text" else ""
        found.append(Link(href, label, _line_of(href, lines, start, end)))
    return found


def _line_of(href: str, lines: list[str], start: int, end: int) -> int:
    """The first line that names the target: in the link's block, else anywhere (a reference definition)."""
    for number in itertools.chain(range(start, min(end, len(lines))), range(len(lines))):
        if href and href in lines[number]:
            return number + 1
    return start + 1
