"""How informative a word is, measured on every session of the benchmark file rather than on one haystack.

A LongMemEval haystack holds ~50 sessions: too few to tell a topic word from chat. In one haystack "suggestion"
and "Denver" may each be in a few sessions; over the file's ~10,000 sessions, "suggestion" is in 1,490 and
"Denver" in 19. Two statistics of the whole collection weigh each query term (no label, answer or question is
read, only the sessions' text):

- IDF over the collection's distinct sessions, in place of the haystack's own (recall's formula, with the
  collection's counts);
- burstiness, the term's mean count in the sessions that use it (cf / df): a topic is repeated where it is talked
  about ("cocktail" 3.4 times per session that has it), circumstance is said once ("upcoming" 1.2, "choose" 1.2)
  (Church and Gale, 1995). It multiplies the weight by (cf / df) ^ `burstiness`.

With one haystack, the collection is that haystack, and the first statistic changes nothing.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from cairn.membench.expansion import Associations
from cairn.membench.sessionbags import SessionCache
from cairn.membench.suites import Haystack


class TermStats:
    """Session counts (df) and total counts (cf) of terms over `n` distinct sessions."""

    __slots__ = ("n", "df", "cf")

    def __init__(self) -> None:
        self.n = 0
        self.df: Counter[str] = Counter()
        self.cf: Counter[str] = Counter()

    def add(self, counts: Counter[str]) -> None:
        self.n += 1
        self.df.update(counts.keys())
        self.cf.update(counts)

    def idf(self, term: str) -> float:
        """Recall's IDF (`cairn.hot.recall`) with the collection's counts."""
        df = self.df.get(term, 0)
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))

    def burstiness(self, term: str) -> float:
        """The term's mean count in the sessions that have it (1.0 for a term none has)."""
        df = self.df.get(term, 0)
        return self.cf[term] / df if df else 1.0


class CollectionStats:
    """Term statistics over every distinct session (by its turns) of some haystacks: words, and word pairs; with
    `associations`, the words that keep company in turns too (`cairn.membench.expansion`)."""

    def __init__(self, haystacks: Iterable[Haystack], cache: SessionCache, associations: bool = False) -> None:
        self.words = TermStats()
        self.pairs = TermStats()
        self.associations = Associations(cache) if associations else None
        self._cache = cache
        self._seen: set[tuple[str, ...]] = set()
        for haystack in haystacks:
            self.add(haystack)

    def add(self, haystack: Haystack) -> None:
        """Count the haystack's sessions not counted yet."""
        if self.associations is not None:
            self.associations.add(haystack)
        for session in haystack.sessions:
            if session.turns in self._seen:
                continue
            self._seen.add(session.turns)
            bags = self._cache.turns(session)
            words: Counter[str] = Counter()
            pairs: Counter[str] = Counter()
            for bag in bags.turns:
                words.update(bag.counts)
            for bag in bags.pairs:
                pairs.update(bag.counts)
            self.words.add(words)
            self.pairs.add(pairs)
