"""contract: the card parses and keeps Experience Contract v1 (the parser's findings, under their own ids).

These findings are reported whatever `--rules` selects: a card that breaks the contract cannot be checked by any
other rule, and it is left out of the index.
"""

from __future__ import annotations

from collections.abc import Iterator

from cairn.finding import Finding
from cairn.lint.model import ERROR, Context, Rule, Target

IDS = (
    "frontmatter-missing",
    "frontmatter-parse",
    "frontmatter-mapping",
    "required-field",
    "field-type",
    "file-encoding",
    "file-binary",
    "file-empty",
    "file-size",
    "file-symlink",
    "path-outside-cards",
    "file-name",
)


def check(target: Target, context: Context) -> Iterator[Finding]:
    yield from target.contract


RULE = Rule("contract", ERROR, ("contract",), __doc__ or "", check, emits=IDS, needs_card=False)
