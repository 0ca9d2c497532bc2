"""internal-link: a Markdown link from a card's body to another card points at a card of the vault (links in the
body's first 64 KiB, `cairn.cards.body.MARKDOWN_CHARS`; past them, where a link could be, it says so)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from urllib.parse import unquote

from cairn.cards.body import MARKDOWN_CHARS
from cairn.cards.card import card_id_from_path, file_key
from cairn.finding import Finding
from cairn.lint.model import WARNING, Context, Rule, Target

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def check(target: Target, context: Context) -> Iterator[Finding]:
    card = target.card
    assert card is not None
    for link in target.body.links:
        resolved = _vault_path(target.path, link.href)
        if resolved is None:
            continue
        card_id = card_id_from_path(resolved)
        if card_id is None and resolved.startswith("cards/") and "." not in posixpath.basename(resolved):
            card_id = resolved[len("cards/") :]  # a link to an id, without `.md`
        if card_id is None or card_id in context.cards:
            continue
        # a Mac or Windows checkout opens it by either name, where git, a forge's page and the index are exact
        alike = context.ids_by_file.get(file_key(card_id))
        hint = f"; cards/{alike[0]}.md differs only in case or in how its accents are spelled" if alike else ""
        yield RULE.at(
            target,
            card.body_line + link.line - 1,
            f"the link '{link.href}' points at cards/{card_id}.md, which is not in the vault{hint}",
        )
    if target.body.unread_from is not None:
        yield RULE.at(
            target,
            card.body_line + target.body.unread_from - 1,
            f"links from here on are not checked: lint reads a body's first {MARKDOWN_CHARS // 1024} KiB as Markdown "
            "and a lesson is a few KiB; split this card into smaller ones",
        )


def _vault_path(card_path: str, href: str) -> str | None:
    """The vault-relative path a relative link resolves to; None for URLs, anchors and paths outside the vault."""
    if not href or href.startswith(("#", "//")) or _SCHEME.match(href):
        return None
    path = unquote(href.split("#", 1)[0].split("?", 1)[0])
    if not path:
        return None
    joined = path.lstrip("/") if path.startswith("/") else posixpath.join(posixpath.dirname(card_path), path)
    resolved = posixpath.normpath(joined)
    return None if resolved.startswith("..") else resolved


RULE = Rule("internal-link", WARNING, ("vault",), __doc__ or "", check)
