"""near-duplicate: a card is not a near-copy of another (names alike, or summaries or bodies sharing most words).

Fast on big vaults: only cards sharing one of this card's rarest words (words on at most 1% of the cards) are
compared, on word sets and a character ratio of the names. `[lint] duplicate_threshold` (default 0.8) is the similarity that counts.
Cards linked by `supersedes` are expected to be alike and are not reported.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from difflib import SequenceMatcher

from cairn.finding import Finding
from cairn.lint.model import WARNING, Context, Rule, Target, name_key, words_of

RARE_WORDS = 8  # a card's rarest words choose whom it is compared with
MAX_CANDIDATES = 40
MIN_COMMON = 50
MIN_WORDS = 4  # word sets smaller than this are too small to call an overlap
MIN_BODY_WORDS = 20
MAX_REPORTED = 3


def check(target: Target, context: Context) -> Iterator[Finding]:
    card = target.card
    assert card is not None
    summary_words = words_of(card.summary)
    postings = context.postings
    own = 1 if card.id in context.cards else 0  # the card's own posting
    common = max(MIN_COMMON, len(context.cards) // 100)  # a word on more cards than this chooses no one
    shared_words = [w for w in summary_words | words_of(card.name) if own < len(postings.get(w, ())) <= common]
    rare = sorted(shared_words, key=lambda w: (len(postings[w]), w))[:RARE_WORDS]
    shared = Counter(other for word in rare for other in postings.get(word, ()) if other != card.id)
    candidates = [other for other, _ in shared.most_common(MAX_CANDIDATES)]
    if not candidates:
        return
    threshold = context.settings.duplicate_threshold
    my_name = name_key(card.name)
    my_body = words_of(card.body)
    bodies = context.body_words(candidates) if len(my_body) >= MIN_BODY_WORDS else {}
    hits: list[tuple[float, str, str, str]] = []
    for other_id in candidates:
        other = context.cards[other_id]
        if other.name is None or frozenset((card.id, other_id)) in context.superseded_pairs:
            continue
        other_name = name_key(other.name)
        if other_name == my_name:
            continue  # name-unique reports it
        measures = [
            (_name_ratio(my_name, other_name, threshold), "name", "their names are {:.0%} alike"),
            (_jaccard(summary_words, other.words), "summary", "their summaries share {:.0%} of their words"),
            (
                _jaccard(my_body, bodies.get(other_id, frozenset()), MIN_BODY_WORDS),
                "body",
                "their bodies share {:.0%} of their words",
            ),
        ]
        score, key, wording = max(measures, key=lambda m: m[0])
        if score >= threshold:
            hits.append((score, other_id, key, wording.format(score)))
    hits.sort(key=lambda h: (-h[0], h[1]))
    for _score, other_id, key, wording in hits[:MAX_REPORTED]:
        line = card.body_line if key == "body" else target.line_of("summary" if key == "summary" else "name")
        name = context.cards[other_id].name
        yield RULE.at(
            target,
            line,
            f"looks like a copy of cards/{other_id}.md ('{name}'): {wording}; merge the two or tell them apart",
        )


def _name_ratio(a: str, b: str, threshold: float) -> float:
    """difflib's ratio, skipped (0) when its cheap upper bounds already fall short of the threshold."""
    matcher = SequenceMatcher(None, a, b)
    if matcher.real_quick_ratio() < threshold or matcher.quick_ratio() < threshold:
        return 0.0
    return matcher.ratio()


def _jaccard(a: frozenset[str], b: frozenset[str], minimum: int = MIN_WORDS) -> float:
    if len(a) < minimum or len(b) < minimum:
        return 0.0
    return len(a & b) / len(a | b)


RULE = Rule("near-duplicate", WARNING, ("vault",), __doc__ or "", check, reads_config=True)
