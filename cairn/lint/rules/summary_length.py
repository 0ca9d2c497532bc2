"""summary-length: the summary, the text agents read, stays within `[lint] summary_max_chars` (default 300)."""

from __future__ import annotations

from collections.abc import Iterator

from cairn.finding import Finding
from cairn.lint.model import WARNING, Context, Rule, Target


def check(target: Target, context: Context) -> Iterator[Finding]:
    assert target.card is not None
    limit = context.settings.summary_max_chars
    length = len(target.card.summary)
    if length > limit:
        yield RULE.at(
            target,
            target.line_of("summary"),
            f"the summary is {length} characters, more than {limit}; keep it to the situation and the fix "
            "(the body holds the rest)",
        )


RULE = Rule("summary-length", WARNING, ("policy",), __doc__ or "", check, reads_config=True)
