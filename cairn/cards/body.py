"""A card's Markdown body read with markdown-it-py: whether it holds more than headings, and its links."""

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
class Link:
    """A Markdown link (inline or by reference). line: 1-based line in the body where the target is written."""

    href: str
    line: int


@dataclass(frozen=True, slots=True)
class CardBody:
    """What lint needs from a body.

    links: every link, for internal-link. has_content: whether anything besides headings is written (prose, lists,
    code), for body-present.
    """

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
    links: list[Link] = []
    has_content = False
    for token in tokens:
        if token.type in _CONTENT_BLOCKS:
            has_content = True
        elif token.type == "inline" and token.children:
            links.extend(_links(token, lines))
    return CardBody(links=tuple(links), has_content=has_content)


def _links(inline: Token, lines: list[str]) -> list[Link]:
    start, end = (int(inline.map[0]), int(inline.map[1])) if inline.map else (0, len(lines))
    found: list[Link] = []
    children = inline.children or []
    for child in children:
        if child.type == "link_open":
            href = str(child.attrs.get("href", ""))
            found.append(Link(href, _line_of(href, lines, start, end)))
    return found


def _line_of(href: str, lines: list[str], start: int, end: int) -> int:
    """The first line that names the target: in the link's block, else anywhere (a reference definition)."""
    for number in itertools.chain(range(start, min(end, len(lines))), range(len(lines))):
        if href and href in lines[number]:
            return number + 1
    return start + 1
