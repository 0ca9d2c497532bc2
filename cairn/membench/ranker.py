"""A haystack's sessions ranked for a question with Cairn's recall core (`cairn.hot.recall.rank`, BM25F over
`cairn.hot.tokens`), on three small indexes held in memory (`cairn.membench.memindex`):

- sessions: one document per session; name = the session's date in words, body = its turns;
- turns: one document per turn; name = the session's date, summary = the turn, body = the turns around it;
- pairs: one document per turn whose terms are the pairs of nearby words in it (a proximity signal).

A turn's score is its BM25F score plus a share of its proximity score, boosted when the question names the turn's
speaker (the names themselves leave the query: every session has them). A session's score is a weighted sum of
its own score and its two best turns' scores, each divided by the best score in its index: long sessions are found
by the turns that answer, yet the whole session still counts. A question that names a date ("on 8 May, 2023",
"in June") adds a bonus to the sessions held on or near that date, and so does a day named relative to the day the
question was asked ("two weeks ago"). Sessions no index returns follow the returned ones, in corpus order.

With the statistics of the whole benchmark file (`cairn.membench.collection`), each query term is scored alone by
recall's own code and weighed by the collection instead of the haystack (its IDF over all the file's sessions,
times its burstiness), and words that keep company with the query's in the file's turns join the query at a small
weight (`cairn.membench.expansion`). Without them (and with `final_e` off) the ranking is recall's, unchanged.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cairn.config import RecallSettings
from cairn.hot.recall import (
    query_terms,
    rank,
    score_terms,  # recall's own scoring, for a list of terms as they are
)
from cairn.membench.collection import CollectionStats
from cairn.membench.dates import date_spans, nearness, range_nearness, relative_ranges
from cairn.membench.memindex import EMPTY, Document, MemoryIndex
from cairn.membench.sessionbags import SessionCache, drop_final_e, pair_terms
from cairn.membench.suites import Haystack, session_day

if TYPE_CHECKING:
    from collections.abc import Callable

    from cairn.hot.index import IndexReader

# The words that make a sentence a question about a conversation ("what did she mention ..."), not its topic.
# cairn.hot.tokens already drops English function words; these are the question's own verbs and fillers.
QUESTION_WORDS = frozenset(
    """kind type sort mention mentioned mentions say said says tell told talk talked talking discuss discussed
    share shared recall remember remind recently likely""".split()
)
_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")


@dataclass(frozen=True, slots=True)
class RankSettings:
    """How sessions are ranked. The defaults were tuned on the first 5 LoCoMo conversations only
    (benchmarks/RESULTS.md).

    session, turn, pair: the BM25F settings of the three indexes (field weights: name = the date, summary = a turn,
    body = a session's turns, or a turn's neighbours). Question words are not agent instructions here, so none is
    discounted (instruction_weight 1). session_weight: the session score's share in the sum, the rest going to its
    turns: its best turn, plus `second_turn` times its second best. pair_weight: the proximity score's share in a
    turn's score (0 = no pairs index). window: how many turns each side a turn's neighbours reach. date_weight,
    date_scale: the bonus for a session held on a date the question names, falling off by e^(-days / scale) away
    from it (0 = off). speaker_boost: a turn said by a speaker the question names scores (1 + boost) times more,
    and the speakers' names leave the query (0 = names stay in the query, no boost).
    """

    session: RecallSettings = field(
        default_factory=lambda: RecallSettings(
            k1=0.6, b=0.4, weight_name=2.0, weight_summary=0.0, weight_body=1.0, instruction_weight=1.0
        )
    )
    turn: RecallSettings = field(
        default_factory=lambda: RecallSettings(
            k1=0.6, b=0.4, weight_name=0.5, weight_summary=1.0, weight_body=0.4, instruction_weight=1.0
        )
    )
    pair: RecallSettings = field(
        default_factory=lambda: RecallSettings(
            k1=0.6, b=0.4, weight_name=0.0, weight_summary=1.0, weight_body=0.0, instruction_weight=1.0
        )
    )
    session_weight: float = 0.4
    second_turn: float = 0.3
    pair_weight: float = 0.5
    window: int = 2
    date_weight: float = 0.5
    date_scale: float = 7.0
    speaker_boost: float = 0.1
    collection_idf: bool = True
    burstiness: float = 0.5
    relative_date_weight: float = 0.2
    final_e: bool = True
    expansion_weight: float = 0.2
    expansion_terms: int = 5
    drop_question_words: bool = True


def question_query(text: str, settings: RankSettings, names: frozenset[str] = frozenset()) -> str:
    """The question as a query: without the words that only make it a question, nor the speakers' `names`
    (lowercase) when `settings.speaker_boost` uses them instead."""
    drop = (QUESTION_WORDS if settings.drop_question_words else frozenset()) | (
        names if settings.speaker_boost else frozenset()
    )
    if not drop:
        return text
    return _WORD.sub(lambda m: "" if _bare(m.group(0)) in drop else m.group(0), text)


def named_speakers(text: str, names: frozenset[str]) -> frozenset[str]:
    """The speakers (lowercase names) a question names."""
    return frozenset(_bare(m.group(0)) for m in _WORD.finditer(text)) & names


def _bare(word: str) -> str:
    lowered = word.lower()
    return lowered[:-2] if lowered.endswith("'s") else lowered


class HaystackIndex:
    """The three indexes of one haystack (sessions, turns, pairs), in memory, ready to rank questions.

    cache: the bags of sessions already tokenized (shared across haystacks). open_index: what turns a list of
    documents into an index recall can rank (a `MemoryIndex`; the tests also write index files, to hold the two
    equal).
    """

    def __init__(
        self,
        haystack: Haystack,
        settings: RankSettings,
        cache: SessionCache | None = None,
        open_index: Callable[[list[Document]], Any] = MemoryIndex,
        stats: CollectionStats | None = None,
    ) -> None:
        self.haystack = haystack
        self.settings = settings
        self.stats = stats
        cache = cache or SessionCache(settings.final_e)
        if cache.tokenize.final_e != settings.final_e:
            raise ValueError("the session cache and the settings disagree on final_e")
        self._tokenize = cache.tokenize
        sessions: list[Document] = []
        turns: list[Document] = []
        pairs: list[Document] = []
        self._turn_owner: list[int] = [-1]  # index rows count from 1 in document order
        self._turn_speaker: list[str] = [""]
        self._days = [session_day(session.date) for session in haystack.sessions]
        self.names = frozenset(s.lower() for session in haystack.sessions for s in session.speakers if s)
        window = settings.window
        for position, session in enumerate(haystack.sessions):
            date = (cache.date(session),)
            bags = cache.turns(session)
            n = len(bags.turns)
            speakers = session.speakers or ("",) * n
            for j, turn in enumerate(bags.turns):
                context = tuple(bags.turns[k] for k in range(max(j - window, 0), min(j + window + 1, n)) if k != j)
                turns.append((date, (turn,), context))
                pairs.append((EMPTY, (bags.pairs[j],), EMPTY))
                self._turn_owner.append(position)
                self._turn_speaker.append(speakers[j].lower())
            sessions.append((date, EMPTY, bags.turns))
        self._sessions: IndexReader = open_index(sessions)
        self._turns: IndexReader = open_index(turns)
        self._pairs: IndexReader | None = open_index(pairs) if settings.pair_weight else None

    def rank(self, question: str, asked: dt.date | None = None) -> list[int]:
        """Every session's position in the haystack, best first; `asked`: the day the question was asked, if known."""
        settings = self.settings
        query = question_query(question, settings, self.names)
        speakers = named_speakers(question, self.names) if settings.speaker_boost else frozenset()
        by_session = self._scores(self._sessions, query, settings.session)
        by_turn = self._turn_scores(query, speakers)
        combined = self._combine(by_session, by_turn)
        if settings.date_weight and combined and (spans := date_spans(question)):
            for p, day in enumerate(self._days):
                if near := nearness(day, spans, settings.date_scale):
                    combined[p] = combined.get(p, 0.0) + settings.date_weight * near
        if settings.relative_date_weight and combined and asked and (ranges := relative_ranges(question, asked)):
            for p, day in enumerate(self._days):
                if near := range_nearness(day, ranges):
                    combined[p] = combined.get(p, 0.0) + settings.relative_date_weight * near
        returned = sorted(combined, key=lambda position: (-combined[position], position))
        seen = set(returned)
        return returned + [p for p in range(len(self.haystack.sessions)) if p not in seen]

    def _turn_scores(self, query: str, speakers: frozenset[str]) -> dict[int, float]:
        """Turn row -> score: BM25F on the turn, plus the proximity share, times the speaker boost."""
        scores = self._scores(self._turns, query, self.settings.turn)
        if self._pairs is not None and scores:
            pair_query = " ".join(pair_terms(self._tokenize(query)))
            if pair_query:
                pair_scores = self._scores(self._pairs, pair_query, self.settings.pair, pairs=True)
                scores = _mix(scores, pair_scores, self.settings.pair_weight)
        return self._boost(scores, speakers)

    def _scores(
        self, index: IndexReader, query: str, settings: RecallSettings, pairs: bool = False
    ) -> dict[int, float]:
        """Row -> BM25F score of the query in one index: recall's ranking as it is, or, with collection statistics,
        each term scored by recall alone and weighed by the collection (see `RankSettings`)."""
        stats = self.stats if self.settings.collection_idf or self.settings.burstiness else None
        if stats is None and not self.settings.final_e:
            return dict(rank(index, query, settings=settings))
        terms = query_terms(query)
        if self.settings.final_e and not pairs:  # pair terms are made of tokens already through it
            terms = list(dict.fromkeys(drop_final_e(term) for term in terms))
        weighted = [(term, 1.0) for term in terms]
        if stats is not None and stats.associations is not None and self.settings.expansion_weight and not pairs:
            company = dict.fromkeys(
                other for term in terms for other in stats.associations.company(term, self.settings.expansion_terms)
            )
            weighted += [(other, self.settings.expansion_weight) for other in company if other not in terms]
        scores: dict[int, float] = {}
        for term, share in weighted:
            by_row, _, weights = score_terms(index, [term], settings)
            if not by_row:
                continue
            factor = share
            if stats is not None:
                collection = stats.pairs if pairs else stats.words
                if self.settings.collection_idf:
                    factor *= collection.idf(term) / weights.idf[term]
                if self.settings.burstiness:
                    factor *= collection.burstiness(term) ** self.settings.burstiness
            for row, score in by_row.items():
                scores[row] = scores.get(row, 0.0) + factor * score
        return scores

    def _boost(self, scores: dict[int, float], speakers: frozenset[str]) -> dict[int, float]:
        if not speakers:
            return scores
        factor = 1 + self.settings.speaker_boost
        return {row: s * factor if self._turn_speaker[row] in speakers else s for row, s in scores.items()}

    def _combine(self, by_session: dict[int, float], by_turn: dict[int, float]) -> dict[int, float]:
        """Session position -> the weighted sum of its own score and its best turns' (rows count from 1)."""
        best: dict[int, list[float]] = {}
        for row, score in by_turn.items():
            top = best.setdefault(self._turn_owner[row], [0.0, 0.0])
            if score > top[0]:
                top[0], top[1] = score, top[0]
            elif score > top[1]:
                top[1] = score
        turn_total = {p: top[0] + self.settings.second_turn * top[1] for p, top in best.items()}
        top_session = max(by_session.values(), default=0.0) or 1.0
        top_turn = max(turn_total.values(), default=0.0) or 1.0
        weight = self.settings.session_weight
        sessions = {row - 1 for row in by_session} | turn_total.keys()
        return {
            p: weight * by_session.get(p + 1, 0.0) / top_session + (1 - weight) * turn_total.get(p, 0.0) / top_turn
            for p in sessions
        }


def _mix(base: dict[int, float], extra: dict[int, float], weight: float) -> dict[int, float]:
    """base + weight * extra, each divided by its own best score."""
    top_base = max(base.values(), default=0.0) or 1.0
    top_extra = max(extra.values(), default=0.0) or 1.0
    return {
        row: base.get(row, 0.0) / top_base + weight * extra.get(row, 0.0) / top_extra
        for row in base.keys() | extra.keys()
    }
