"""name-length: the name fits what agents are given of it (`cairn.hot.serve.NAME_CHARS`, 200 characters).

The hook, `cairn recall --json` and the MCP server cut a longer name there, so the agent reads a name its author did
not write; lint said nothing of it."""

from __future__ import annotations

from collections.abc import Iterator

from cairn.finding import Finding
from cairn.hot.serve import NAME_CHARS
from cairn.lint.model import WARNING, Context, Rule, Target


def check(target: Target, context: Context) -> Iterator[Finding]:
    assert target.card is not None
    length = len(target.card.name)
    if length > NAME_CHARS:
        yield RULE.at(
            target,
            target.line_of("name"),
            f"the name is {length} characters; agents are given its first {NAME_CHARS}, so name the situation in "
            "a few words (the summary and the body hold the rest)",
        )


RULE = Rule("name-length", WARNING, ("policy",), __doc__ or "", check)
