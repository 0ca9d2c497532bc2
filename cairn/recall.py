"""Recall: rank the indexed cards for a prompt with BM25F, admit, gate, and keep at most three (or none).

1. The query's distinct tokens are weighted: IDF in this vault; agent instruction words (`tokens.INSTRUCTION_WORDS`)
   count for `instruction_weight` of their IDF; words the vault never uses weigh as much as a word found in one
   card, times `unknown_weight`, and count only for coverage (no card can match them).
2. BM25F (name with aliases, summary and body, each length-normalised, one saturation) ranks every card sharing
   a term with the query.
3. Admission, in ranking order: status, expiry, supersedes, scope, not_when, already injected in the session.
   Rejected cards are listed but take no slot and are not "the next candidate" for a margin.
4. The gates (`cairn.gates`) run on the admissible cards in order. Injection is a prefix of that order: once a
   card fails a gate, no card ranked below it is injected (it would win only because a better match was refused).

Hot path: standard library and Cairn's hot-path modules only.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from cairn import gates
from cairn.config import RecallSettings, config_from_dict
from cairn.store import IndexedCard, IndexReader
from cairn.tokens import INSTRUCTION_WORDS, is_cjk, tokenize

INJECTED = "injected"
REJECTED = "rejected"
OVER_LIMIT = "over_limit"
# How many scored cards recall looks at beyond what the gates need, so explain and logs show the neighbourhood.
_MIN_EXAMINED = 20


def settings_of(index: IndexReader) -> RecallSettings:
    """The `[recall]` settings the index was built with (from cairn.toml at the indexed commit)."""
    return config_from_dict(index.config).recall


@dataclass(frozen=True, slots=True)
class Candidate:
    """One scored card and what recall decided about it.

    score: raw BM25F score. norm_score, coverage, margin: the three gate values (0.0 for cards refused at
    admission, which never reach the gates). decision: `injected` or `rejected`. reason: None when injected, else
    why not: a gate (`below_score`, `low_coverage`, `small_margin`), admission (`out_of_scope`, `expired`,
    `retired`, `draft`, `superseded`, `not_when`, `already_injected`) or `over_limit`.
    matched: the query terms the card matched. blocked_by: for a card that passed its own gates but sits below a
    card the gates refused, that card's id (its reason is then `small_margin`: it does not stand clear of it).
    """

    card: IndexedCard
    score: float
    norm_score: float
    coverage: float
    margin: float
    decision: str
    reason: str | None
    matched: tuple[str, ...] = ()
    blocked_by: str | None = None


@dataclass(frozen=True, slots=True)
class Result:
    """injected: the cards to give the agent, best first. candidates: every card examined, by score."""

    injected: tuple[Candidate, ...]
    candidates: tuple[Candidate, ...]
    settings: RecallSettings

    @property
    def abstained(self) -> bool:
        return not self.injected


@dataclass(frozen=True, slots=True)
class QueryWeights:
    """The query's terms and their weights in this vault.

    idf: weight of each term the vault knows (IDF times the instruction discount). mass: their sum, the most a card
    could score. unknown: weight of the terms the vault never uses. total: mass + unknown, the coverage denominator.
    """

    terms: tuple[str, ...]
    idf: dict[str, float]
    mass: float
    unknown: float

    @property
    def total(self) -> float:
        return self.mass + self.unknown


def query_terms(query: str) -> list[str]:
    """Distinct query tokens in order of first appearance."""
    return list(dict.fromkeys(tokenize(query)))


def rank(index: IndexReader, query: str, settings: RecallSettings | None = None) -> list[tuple[int, float]]:
    """(card row, BM25F score) for every card sharing a term with the query, best first; ties by row."""
    settings = settings or settings_of(index)
    scores, _, _ = _score(index, query_terms(query), settings)
    return _ranked(scores)


def recall(
    index: IndexReader,
    query: str,
    *,
    scope: Sequence[str] | None = None,
    already_injected: Collection[str] = (),
    today: dt.date | None = None,
    settings: RecallSettings | None = None,
    examine_all: bool = False,
) -> Result:
    """The cards to inject for `query` (at most `settings.max_cards`, possibly none) and every card examined.

    scope: the declared scope tags (empty = no scope filtering). already_injected: card ids this session got.
    examine_all: look at every scored card (for `cairn explain`), not just enough to decide.
    """
    settings = settings or settings_of(index)
    scores, matched, weights = _score(index, query_terms(query), settings)
    ranked = _ranked(scores)
    today_iso = (today or dt.date.today()).isoformat()
    wanted_scope = {s.strip().lower() for s in scope or () if s.strip()}
    lowered_query = query.lower()
    needed = settings.max_cards + 1  # the gates need the admissible cards up to one past the last slot

    admitted: list[tuple[IndexedCard, float]] = []
    refused: list[Candidate] = []
    examined = 0
    for start in range(0, len(ranked), 64):
        if not examine_all and len(admitted) >= needed and examined >= _MIN_EXAMINED:
            break
        chunk = ranked[start : start + 64]
        cards = index.cards(row for row, _ in chunk)
        for row, score in chunk:
            examined += 1
            card = cards[row]
            reason = admission(card, today_iso, wanted_scope, lowered_query, already_injected)
            if reason is None:
                admitted.append((card, score))
            else:
                refused.append(_refused(card, score, matched.get(row, ()), reason))

    decided = _gate(admitted, matched, weights, settings)
    injected = tuple(c for c in decided if c.decision == INJECTED)
    pool = sorted(decided + refused, key=lambda c: (-c.score, c.card.row))
    return Result(injected=injected, candidates=tuple(pool), settings=settings)


def admission(
    card: IndexedCard, today_iso: str, scope: set[str], lowered_query: str, already: Collection[str]
) -> str | None:
    """Why a card may not be injected whatever its score, or None when it may."""
    if card.status == "retired":
        return "retired"
    if card.status != "active":
        return "draft"
    if card.expires_on and card.expires_on < today_iso:
        return "expired"
    if card.superseded_by:
        return "superseded"
    if scope and card.scope and not scope.intersection(card.scope):
        return "out_of_scope"
    if any(term.strip() and term.strip().lower() in lowered_query for term in card.not_when):
        return "not_when"
    if card.id in already:
        return "already_injected"
    return None


def _gate(
    admitted: Sequence[tuple[IndexedCard, float]],
    matched: dict[int, list[str]],
    weights: QueryWeights,
    settings: RecallSettings,
) -> list[Candidate]:
    out: list[Candidate] = []
    blocker: Candidate | None = None
    n_injected = 0
    for i, (card, score) in enumerate(admitted):
        terms = matched.get(card.row, [])
        next_score = admitted[i + 1][1] if i + 1 < len(admitted) else 0.0
        norm = gates.norm_score(score, weights.mass)
        cover = gates.coverage(terms, weights.idf, weights.total)
        gap = gates.margin(score, next_score)
        reason = gates.failed_gate(norm, cover, gap, settings)
        blocked_by = None
        if reason is None and blocker is not None:
            reason, blocked_by = gates.SMALL_MARGIN, blocker.card.id
        elif reason is None and n_injected >= settings.max_cards:
            reason = OVER_LIMIT
        candidate = Candidate(
            card,
            round(score, 4),
            round(norm, 4),
            round(cover, 4),
            round(gap, 4),
            INJECTED if reason is None else REJECTED,
            reason,
            tuple(terms),
            blocked_by,
        )
        if reason is None:
            n_injected += 1
        elif blocker is None and reason != OVER_LIMIT:
            blocker = candidate
        out.append(candidate)
    return out


def _refused(card: IndexedCard, score: float, terms: Sequence[str], reason: str) -> Candidate:
    return Candidate(card, round(score, 4), 0.0, 0.0, 0.0, REJECTED, reason, tuple(terms))


def _ranked(scores: dict[int, float]) -> list[tuple[int, float]]:
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def query_weights(index: IndexReader, terms: Sequence[str], settings: RecallSettings) -> QueryWeights:
    """IDF weights of the query terms in this vault (see the module docstring)."""
    return _score(index, terms, settings, score=False)[2]


def _score(
    index: IndexReader, terms: Sequence[str], settings: RecallSettings, score: bool = True
) -> tuple[dict[int, float], dict[int, list[str]], QueryWeights]:
    n = max(index.n_cards, 1)
    postings = index.postings(terms)
    unknown_idf = math.log(1 + (n - 0.5) / 1.5)  # as rare as a term found in one card
    idf: dict[str, float] = {}
    unknown = 0.0
    for term in terms:
        discount = settings.instruction_weight if term in INSTRUCTION_WORDS else 1.0
        found = postings.get(term)
        if found is None:
            # A CJK 2-gram the vault never uses is mostly a pair straddling two words: no evidence either way.
            if not is_cjk(term):
                unknown += discount * settings.unknown_weight * unknown_idf
        else:
            idf[term] = discount * math.log(1 + (n - found.df + 0.5) / (found.df + 0.5))
    weights = QueryWeights(tuple(terms), idf, sum(idf.values()), unknown)
    scores: dict[int, float] = {}
    matched: dict[int, list[str]] = {}
    if not score:
        return scores, matched, weights
    avg_name, avg_summary, avg_body = (max(a, 1.0) for a in index.avg_lengths)
    k1, b = settings.k1, settings.b
    w_name, w_summary, w_body = settings.weight_name, settings.weight_summary, settings.weight_body
    for term in terms:
        found = postings.get(term)
        if found is None:
            continue
        weight = idf[term]
        for row, tf_n, tf_s, tf_b, len_n, len_s, len_b in found:
            tf = (
                w_name * tf_n / (1 - b + b * len_n / avg_name)
                + w_summary * tf_s / (1 - b + b * len_s / avg_summary)
                + w_body * tf_b / (1 - b + b * len_b / avg_body)
            )
            if tf <= 0:
                continue
            scores[row] = scores.get(row, 0.0) + weight * tf / (k1 + tf)
            matched.setdefault(row, []).append(term)
    return scores, matched, weights
