"""body-present: the card has a body with the whole lesson (a heading alone is not one)."""

from __future__ import annotations

from collections.abc import Iterator

from cairn.finding import Finding
from cairn.lint.model import WARNING, Context, Rule, Target


def check(target: Target, context: Context) -> Iterator[Finding]:
    assert target.card is not None
    if not target.card.body.strip():
        yield RULE.at(
            target,
            target.card.body_line,
            "the card has no body; write the whole lesson under the frontmatter: what happened, why, the fix",
        )
    elif not target.body.has_content:
        yield RULE.at(
            target,
            target.card.body_line,
            "the body holds no lesson, only headings, rules or comments; write the whole lesson: what happened, why, "
            "the fix",
        )


RULE = Rule("body-present", WARNING, ("policy",), __doc__ or "", check)
