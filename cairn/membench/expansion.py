"""Words that keep company with a query term across the collection's turns: a count-based, model-free bridge
between a question's words and the words a conversation used ("commute" -> podcast, audiobook; "cocktail" -> gin,
syrup; "doctor" -> appointment, medication).

For a query term t found in at most `MAX_SHARE` of the collection's distinct turns (a common word has no useful
company), each word u that shares at least `MIN_TURNS` turns with it and is at least `MIN_LIFT` times likelier in
t's turns than in all turns is scored by c * log(lift) (c: turns with both; lift: P(u | t) / P(u)); the best
`RankSettings.expansion_terms` join the query at `RankSettings.expansion_weight` of a query term's weight. Only the
sessions' text is read: no label, answer or question.
"""

from __future__ import annotations

import math
from collections import Counter

from cairn.membench.sessionbags import SessionCache
from cairn.membench.suites import Haystack

MAX_SHARE = 0.02
MIN_TURNS = 3
MIN_LIFT = 2.0


class Associations:
    """The collection's distinct turns as sets of terms, with the turns each term is in."""

    def __init__(self, cache: SessionCache) -> None:
        self._cache = cache
        self._turns: list[tuple[str, ...]] = []
        self._where: dict[str, list[int]] = {}
        self._seen: set[tuple[str, ...]] = set()
        self._found: dict[tuple[str, int], list[str]] = {}

    def add(self, haystack: Haystack) -> None:
        """Take in the haystack's sessions not taken in yet."""
        for session in haystack.sessions:
            if session.turns in self._seen:
                continue
            self._seen.add(session.turns)
            for bag in self._cache.turns(session).turns:
                terms = tuple(bag.counts)
                n = len(self._turns)
                self._turns.append(terms)
                for term in terms:
                    self._where.setdefault(term, []).append(n)

    def company(self, term: str, k: int) -> list[str]:
        """The `k` words most associated with `term`, best first (none for a term too common or unknown)."""
        key = (term, k)
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = self._company(term, k)
        return found

    def _company(self, term: str, k: int) -> list[str]:
        where = self._where.get(term, [])
        n = len(self._turns)
        if not where or len(where) > MAX_SHARE * n or k <= 0:
            return []
        together: Counter[str] = Counter()
        for i in where:
            together.update(self._turns[i])
        scored = []
        for other, c in together.items():
            if other == term or c < MIN_TURNS:
                continue
            lift = (c / len(where)) / (len(self._where[other]) / n)
            if lift >= MIN_LIFT:
                scored.append((-c * math.log(lift), other))
        return [other for _, other in sorted(scored)[:k]]
