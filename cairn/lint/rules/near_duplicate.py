"""near-duplicate: a card is not a near-copy of another (names alike, or summaries or bodies sharing most words).

What counts as a near-copy is `cairn.cards.similarity` (the definition `cairn review` reports too), at `[lint]
duplicate_threshold` (default 0.8). Fast on big vaults: only cards sharing one of this card's rarest terms (terms
on at most 1% of the cards) are compared. Cards linked by `supersedes` are expected to be alike and are not reported.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator

from cairn.cards import similarity
from cairn.finding import Finding
from cairn.lint.model import WARNING, Context, Rule, Target

RARE_WORDS = 8  # a card's rarest terms choose whom it is compared with
MAX_CANDIDATES = 40
MIN_COMMON = 50
MAX_REPORTED = 3


def check(target: Target, context: Context) -> Iterator[Finding]:
    card = target.card
    assert card is not None
    mine = similarity.profile(card.name, card.scope, card.summary)
    postings = context.postings
    own = 1 if card.id in context.cards else 0  # the card's own posting
    common = max(MIN_COMMON, len(context.cards) // 100)  # a term on more cards than this chooses no one
    shared_terms = [t for t in mine.summary | similarity.terms(card.name) if own < len(postings.get(t, ())) <= common]
    rare = sorted(shared_terms, key=lambda t: (len(postings[t]), t))[:RARE_WORDS]
    shared = Counter(other for term in rare for other in postings.get(term, ()) if other != card.id)
    candidates = [other for other, _ in shared.most_common(MAX_CANDIDATES)]
    if not candidates:
        return
    threshold = context.settings.duplicate_threshold
    bodies: dict[str, frozenset[str]] = {}
    my_body = similarity.terms(card.body)
    if len(my_body) >= similarity.MIN_BODY_TERMS:  # else no body is compared, and none is read
        mine = dataclasses.replace(mine, body=my_body)
        bodies = context.body_terms(candidates)
    hits: list[tuple[float, str, str]] = []
    for other_id in candidates:
        other = context.cards[other_id]
        if other.name is None or frozenset((card.id, other_id)) in context.superseded_pairs:
            continue
        theirs = context.profile(other_id)
        if other_id in bodies:
            theirs = dataclasses.replace(theirs, body=bodies[other_id])
        if theirs.name == mine.name:
            continue  # name-unique reports it
        found = similarity.likeness(mine, theirs, floor=threshold).duplicate(threshold)
        if found is not None:
            key, value = found
            hits.append((value, other_id, key))
    hits.sort(key=lambda h: (-h[0], h[1]))
    for value, other_id, key in hits[:MAX_REPORTED]:
        line = card.body_line if key == "body" else target.line_of("summary" if key == "summary" else "name")
        name = context.cards[other_id].name
        yield RULE.at(
            target,
            line,
            f"looks like a copy of cards/{other_id}.md ('{name}'): {similarity.describe(key, value)}; "
            "merge the two or tell them apart",
        )


RULE = Rule("near-duplicate", WARNING, ("vault",), __doc__ or "", check, reads_config=True)
