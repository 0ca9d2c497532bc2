"""scope-vocabulary: scope tags come from the vault's vocabulary when `cairn.toml` declares one (`[lint] scopes`)."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from cairn.finding import Finding
from cairn.hot.serve import scope_tags
from cairn.lint.model import ERROR, Context, Rule, Target


def check(target: Target, context: Context) -> Iterator[Finding]:
    assert target.card is not None
    vocabulary = {s.lower() for s in scope_tags(context.settings.scopes)}  # as the card's are read: NFKC
    if not vocabulary:
        return
    for tag in target.card.scope:
        if tag.lower() in vocabulary:
            continue
        close = difflib.get_close_matches(tag.lower(), sorted(vocabulary), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        yield RULE.at(
            target,
            target.line_of("scope"),
            f"scope '{tag}' is not in the vault's vocabulary (cairn.toml [lint] scopes){hint}",
        )


RULE = Rule("scope-vocabulary", ERROR, ("scope",), __doc__ or "", check, reads_config=True)
