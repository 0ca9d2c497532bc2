"""Recall: rank the indexed cards for a prompt with BM25F, admit, gate, and keep at most three (or none).

Hot path: standard library and Cairn's hot-path modules only.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from cairn.config import RecallSettings, config_from_dict
from cairn.store import IndexedCard, IndexReader
from cairn.tokens import tokenize

INJECTED = "injected"
REJECTED = "rejected"


def settings_of(index: IndexReader) -> RecallSettings:
    """The `[recall]` settings the index was built with (from cairn.toml at the indexed commit)."""
    return config_from_dict(index.config).recall


@dataclass(frozen=True, slots=True)
class Candidate:
    """One scored card and what recall decided about it.

    score: raw BM25F score. norm_score, coverage, margin: the three gate values.
    reason: None when injected, else why not (`below_score`, `low_coverage`, `small_margin`, `out_of_scope`, ...).
    """

    card: IndexedCard
    score: float
    norm_score: float
    coverage: float
    margin: float
    decision: str
    reason: str | None


@dataclass(frozen=True, slots=True)
class Result:
    injected: tuple[Candidate, ...]
    candidates: tuple[Candidate, ...]
    settings: RecallSettings

    @property
    def abstained(self) -> bool:
        return not self.injected


def query_terms(query: str) -> list[str]:
    """Distinct query tokens in order of first appearance."""
    return list(dict.fromkeys(tokenize(query)))


def rank(index: IndexReader, query: str, settings: RecallSettings | None = None) -> list[tuple[int, float]]:
    """(card row, BM25F score) for every card sharing a term with the query, best first; ties by row."""
    settings = settings or settings_of(index)
    scores, _ = _score(index, query_terms(query), settings)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def recall(
    index: IndexReader,
    query: str,
    *,
    scope: Sequence[str] | None = None,
    already_injected: Collection[str] = (),
    today: dt.date | None = None,
    settings: RecallSettings | None = None,
) -> Result:
    settings = settings or settings_of(index)
    terms = query_terms(query)
    scores, matched = _score(index, terms, settings)
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    cards = index.cards(row for row, _ in ranked)
    today = today or dt.date.today()
    wanted_scope = {s.strip().lower() for s in scope or () if s.strip()}
    lowered_query = query.lower()
    max_possible = _max_score(index, terms, settings)

    admissible: list[tuple[IndexedCard, float]] = []
    rejected: list[Candidate] = []
    for row, score in ranked:
        card = cards[row]
        reason = _admission(card, today, wanted_scope, lowered_query, already_injected)
        if reason is None:
            admissible.append((card, score))
        else:
            rejected.append(_candidate(card, score, max_possible, matched, terms, 0.0, REJECTED, reason))

    decided: list[Candidate] = []
    injected: list[Candidate] = []
    for i, (card, score) in enumerate(admissible):
        next_score = admissible[i + 1][1] if i + 1 < len(admissible) else 0.0
        margin = (score - next_score) / score if score > 0 else 0.0
        norm = score / max_possible if max_possible > 0 else 0.0
        coverage = _coverage(index, matched.get(card.row, set()), terms)
        if norm < settings.min_score:
            reason = "below_score"
        elif coverage < settings.min_coverage:
            reason = "low_coverage"
        elif i == 0 and margin < settings.min_margin:
            reason = "small_margin"
        elif len(injected) >= settings.max_cards:
            reason = "over_limit"
        else:
            reason = None
        candidate = _candidate(
            card, score, max_possible, matched, terms, margin, INJECTED if reason is None else REJECTED, reason
        )
        decided.append(candidate)
        if reason is None:
            injected.append(candidate)
    pool = sorted(decided + rejected, key=lambda c: (-c.score, c.card.id))
    return Result(injected=tuple(injected), candidates=tuple(pool), settings=settings)


def _candidate(card, score, max_possible, matched, terms, margin, decision, reason):  # type: ignore[no-untyped-def]
    norm = score / max_possible if max_possible > 0 else 0.0
    coverage = len(matched.get(card.row, ())) / len(terms) if terms else 0.0
    return Candidate(card, round(score, 4), round(norm, 4), round(coverage, 4), round(margin, 4), decision, reason)


def _admission(
    card: IndexedCard, today: dt.date, scope: set[str], lowered_query: str, already: Collection[str]
) -> str | None:
    if card.status == "retired":
        return "retired"
    if card.status != "active":
        return "draft"
    if card.expires_on and card.expires_on < today.isoformat():
        return "expired"
    if card.superseded_by:
        return "superseded"
    if scope and card.scope and not scope.intersection(card.scope):
        return "out_of_scope"
    if any(term.lower() in lowered_query for term in card.not_when):
        return "not_when"
    if card.id in already:
        return "already_injected"
    return None


def _score(
    index: IndexReader, terms: Sequence[str], settings: RecallSettings
) -> tuple[dict[int, float], dict[int, set[str]]]:
    n = max(index.n_cards, 1)
    avg_name, avg_summary, avg_body = (max(a, 1.0) for a in index.avg_lengths)
    k1, b = settings.k1, settings.b
    w_name, w_summary, w_body = settings.weight_name, settings.weight_summary, settings.weight_body
    scores: dict[int, float] = {}
    matched: dict[int, set[str]] = {}
    for term, postings in index.postings(terms).items():
        idf = math.log(1 + (n - postings.df + 0.5) / (postings.df + 0.5))
        for row, tf_n, tf_s, tf_b, len_n, len_s, len_b in postings:
            tf = (
                w_name * tf_n / (1 - b + b * len_n / avg_name)
                + w_summary * tf_s / (1 - b + b * len_s / avg_summary)
                + w_body * tf_b / (1 - b + b * len_b / avg_body)
            )
            scores[row] = scores.get(row, 0.0) + idf * tf / (k1 + tf)
            matched.setdefault(row, set()).add(term)
    return scores, matched


def _max_score(index: IndexReader, terms: Sequence[str], settings: RecallSettings) -> float:
    """The score a card would get if it matched every known query term fully: the normaliser of the score gate."""
    n = max(index.n_cards, 1)
    total = 0.0
    for postings in index.postings(terms).values():
        total += math.log(1 + (n - postings.df + 0.5) / (postings.df + 0.5))
    return total


def _coverage(index: IndexReader, matched: set[str], terms: Sequence[str]) -> float:
    return len(matched) / len(terms) if terms else 0.0
