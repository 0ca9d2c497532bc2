"""An index held in memory that `cairn.hot.recall.rank` reads as it reads an index file.

One benchmark question's haystack is small (a few hundred turns), and each question has its own: writing index
files for it costs far more than ranking it. `MemoryIndex` offers what recall's ranking reads from
`cairn.hot.index.IndexReader` (`postings(terms)`, `n_cards`, `avg_lengths`, `config`, `cards(rows)`, `id_order`), with the
values an index file written by `cairn.index.store.write_index` from the same documents would hold: rows count from
1 in document order, counts and lengths are capped at 65,535, the average field lengths are rounded to 4 places.
Recall's own scoring code then ranks it, to the bit as it ranks the file (`tests/test_membench_memindex.py`).

A document is three fields (name, summary, body); a field is a tuple of `Bag`s, whose counts add up: a turn's body
is the bags of the turns around it, shared with the other documents that hold them, never copied. Postings are
built only for the terms a query asks for, by looking each term up in each document.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from cairn.hot.index import IndexedCard, Postings

_U16 = 0xFFFF  # an index file stores counts and lengths as unsigned 16-bit values


class Bag:
    """A bag of tokens: how often each occurs, and how many there are in all."""

    __slots__ = ("counts", "length")

    def __init__(self, tokens: Iterable[str] = ()) -> None:
        self.counts: dict[str, int] = Counter(tokens)
        self.length: int = sum(self.counts.values())


Field = tuple[Bag, ...]
Document = tuple[Field, Field, Field]
EMPTY: Field = ()


def document_id(row: int) -> str:
    """The id of the document at `row` (from 1): recall ranks documents that score alike by id, so ids sort as rows
    do, and a haystack's ties go in corpus order, as the benchmarks' protocol ranks them."""
    return f"d{row:09d}"


class MemoryIndex:
    """`documents` as an index: document i is row i + 1."""

    def __init__(self, documents: Sequence[Document]) -> None:
        self.documents = documents
        self._lengths = [tuple(min(sum(bag.length for bag in field), _U16) for field in doc) for doc in documents]
        n = len(documents)
        totals = [sum(lengths[f] for lengths in self._lengths) for f in range(3)]
        self._avg = tuple(round(total / n, 4) if n else 0.0 for total in totals)
        self._postings: dict[str, Postings | None] = {}
        # Each distinct bag once, with the (document, field) places that hold it: a term is looked up once per bag.
        places: dict[int, tuple[Bag, list[tuple[int, int]]]] = {}
        for i, doc in enumerate(documents):
            for f, field in enumerate(doc):
                for bag in field:
                    places.setdefault(id(bag), (bag, []))[1].append((i, f))
        self._places = list(places.values())

    @property
    def n_cards(self) -> int:
        return len(self.documents)

    @property
    def n_cjk_cards(self) -> int:
        """Every session counts (recall's `IndexReader.n_cjk_cards` for an index that does not count them): a CJK
        term's IDF is taken over all sessions, as before the count."""
        return len(self.documents)

    @property
    def avg_lengths(self) -> tuple[float, float, float]:
        a, b, c = self._avg
        return a, b, c

    @property
    def config(self) -> dict[str, Any]:
        return {}

    def postings(self, terms: Iterable[str]) -> dict[str, Postings]:
        found: dict[str, Postings] = {}
        for term in sorted(set(terms)):
            if term not in self._postings:
                self._postings[term] = self._build(term)
            got = self._postings[term]
            if got is not None:
                found[term] = got
        return found

    def id_order(self) -> Sequence[int]:
        """Each row's place among the ids sorted (`IndexReader.id_order`): the row itself (`document_id`)."""
        return range(1, len(self.documents) + 1)

    def cards(self, rows: Iterable[int]) -> dict[int, IndexedCard]:
        """Documents as recall's cards: active, unscoped, with the id `document_id(row)`."""
        out: dict[int, IndexedCard] = {}
        for row in rows:
            if 1 <= row <= len(self.documents):
                n, s, b = self._lengths[row - 1]
                name = document_id(row)
                out[row] = IndexedCard(row, name, name, "", "", "active", None, (), (), (), (n, s, b))
        return out

    def _build(self, term: str) -> Postings | None:
        found: dict[int, list[int]] = {}
        for bag, places in self._places:
            count = bag.counts.get(term)
            if count:
                for i, f in places:
                    counts = found.get(i)
                    if counts is None:
                        counts = found[i] = [0, 0, 0]
                    counts[f] += count
        if not found:
            return None
        rows = array("I")
        stats = array("H")
        for i in sorted(found):
            rows.append(i + 1)
            stats.extend([min(c, _U16) for c in found[i]])
            stats.extend(self._lengths[i])
        return Postings(len(rows), rows, stats, _frontier(stats))


def _frontier(stats: Sequence[int]) -> array[int]:
    """Per field, the (frequency, length) pairs no other posting beats on both, highest frequency first, as a
    count and then the pairs: the score bound an index file stores beside each term's postings."""
    out = array("H")
    for f in range(3):
        pairs = {(stats[j + f], stats[j + 3 + f]) for j in range(0, len(stats), 6) if stats[j + f]}
        kept: list[int] = []
        shortest = None
        for tf, length in sorted(pairs, key=lambda pair: (-pair[0], pair[1])):
            if shortest is None or length < shortest:
                kept += (tf, length)
                shortest = length
        out.append(len(kept) // 2)
        out.extend(kept)
    return out
