"""What moved LongMemEval: term weights from the whole collection (IDF and burstiness) and days named relative to
the day a question was asked."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from pathlib import Path
from typing import Any

import pytest

from cairn.membench import load_longmemeval
from cairn.membench.collection import CollectionStats
from cairn.membench.dates import range_nearness, relative_ranges
from cairn.membench.ranker import HaystackIndex, RankSettings
from cairn.membench.sessionbags import SessionCache, drop_final_e
from cairn.membench.suites import Haystack, Session

FIXTURES = Path(__file__).parent / "fixtures" / "membench"
ASKED = dt.date(2023, 7, 1)  # a Saturday


def _day(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


@pytest.mark.parametrize(
    ("text", "ranges"),
    [
        ("What sports event did I mention two weeks ago?", [("2023-06-17", "2023-06-17", 3.5)]),
        ("What did I cook a couple of days ago?", [("2023-06-29", "2023-06-29", 1.0)]),
        ("Which book did I finish a week ago?", [("2023-06-24", "2023-06-24", 3.5)]),
        ("the workshop 3 months ago", [("2023-04-02", "2023-04-02", 15.0)]),
        ("How many times did I bake in the past two weeks?", [("2023-06-17", "2023-07-01", 1.75)]),
        ("events in the past month", [("2023-06-01", "2023-07-01", 7.5)]),
        ("How many hours did I jog last week?", [("2023-06-17", "2023-06-30", 1.75)]),
        ("What did I try last weekend?", [("2023-06-24", "2023-06-25", 1.0)]),
        ("Where did I go last Saturday?", [("2023-06-24", "2023-06-24", 1.0)]),
        ("Where did I go last Monday?", [("2023-06-26", "2023-06-26", 1.0)]),
        ("What did I buy yesterday?", [("2023-06-30", "2023-06-30", 1.0)]),
        ("What did I buy on 8 May 2023?", []),  # an absolute date: `date_spans`, not this
        ("In the last few years I moved twice", [("2020-07-01", "2023-07-01", 91.25)]),
    ],
)
def test_days_named_relative_to_the_day_asked(text: str, ranges: list[tuple[str, str, float]]) -> None:
    assert relative_ranges(text, ASKED) == [(_day(a), _day(b), scale) for a, b, scale in ranges]


def test_nearness_to_a_range() -> None:
    ranges = [(_day("2023-06-17"), _day("2023-06-17"), 3.5), (_day("2023-06-20"), _day("2023-06-30"), 2.0)]
    assert range_nearness(_day("2023-06-17"), ranges) == 1.0
    assert range_nearness(_day("2023-06-25"), ranges) == 1.0
    assert range_nearness(_day("2023-06-15"), ranges) == pytest.approx(math.exp(-2 / 3.5))
    assert range_nearness(_day("2023-07-03"), ranges) == pytest.approx(math.exp(-3 / 2.0))
    assert range_nearness(None, ranges) == 0.0
    assert range_nearness(_day("2023-06-15"), []) == 0.0


def test_collection_statistics_count_each_distinct_session_once() -> None:
    shared = Session("s", "2023/01/01 (Sun) 10:00", ("My cocktail recipe: a gin cocktail.", "Any upcoming plans?"))
    other = Session("o", "2023/01/02 (Mon) 10:00", ("Upcoming trip to Denver.",))
    again = Session("s2", "2023/02/01 (Wed) 10:00", shared.turns)  # the same turns on another day: the same session
    stats = CollectionStats([Haystack("a", (shared, other)), Haystack("b", (again,))], SessionCache())
    assert stats.words.n == 2
    assert stats.words.df["cocktail"] == 1 and stats.words.cf["cocktail"] == 2
    assert stats.words.burstiness("cocktail") == 2.0 and stats.words.burstiness("upcom") == 1.0
    assert stats.words.burstiness("absent") == 1.0
    assert stats.words.idf("upcom") == pytest.approx(math.log(1 + 0.5 / 2.5))
    assert stats.words.idf("denver") == pytest.approx(math.log(1 + 1.5 / 1.5))
    assert stats.pairs.df["cocktail_gin"] == 1


def _rank(
    sessions: list[Session], question: str, collection: list[Session] | None = None, **settings: Any
) -> list[int]:
    haystack = Haystack("h", tuple(sessions))
    cache = SessionCache()
    pool = [haystack] + ([Haystack("pool", tuple(collection))] if collection else [])
    stats = CollectionStats(pool, cache, associations=True)
    return HaystackIndex(haystack, RankSettings(**settings), cache, stats=stats).rank(question)


def test_collection_idf_tells_chat_from_topic() -> None:
    # In this haystack "suggestion" and "Denver" are each in one session; across the collection, asking for
    # suggestions is everywhere and Denver is not.
    sessions = [
        Session("a", "", ("Any suggestion?", "A suggestion, please.")),
        Session("b", "", ("I loved the concert in Denver.",)),
        Session("c", "", ("Nothing to see here.",)),
    ]
    chat = [Session(f"p{i}", "", (f"Any suggestion for topic {i}?",)) for i in range(20)]
    question = "Any suggestion for Denver?"
    assert _rank(sessions, question, chat, burstiness=0.0, collection_idf=False)[0] == 0
    assert _rank(sessions, question, chat, burstiness=0.0)[0] == 1


def test_burstiness_prefers_the_repeated_topic_word() -> None:
    # Every word is in one session, here and in the collection; the cocktail session repeats its topic.
    sessions = [
        Session("a", "", ("Which cocktail should I mix? A gin cocktail or a rum cocktail?",)),
        Session("b", "", ("I have an upcoming party.",)),
    ]
    question = "Which cocktail for an upcoming party?"
    assert _rank(sessions, question, burstiness=0.0, pair_weight=0.0)[0] == 1
    assert _rank(sessions, question, burstiness=1.0, pair_weight=0.0)[0] == 0


def test_a_question_asked_two_weeks_after_prefers_the_session_held_then() -> None:
    sessions = [
        Session("a", "2023/06/03 (Sat) 10:00", ("I played in a volleyball tournament today.",)),
        Session("b", "2023/06/17 (Sat) 10:00", ("I played in a soccer tournament today.",)),
    ]
    index = HaystackIndex(Haystack("h", tuple(sessions)), RankSettings(), SessionCache())
    question = "I mentioned playing in a tournament two weeks ago. Which one?"
    assert index.rank(question) == [0, 1]  # no day asked: corpus order breaks the tie
    assert index.rank(question, ASKED) == [1, 0]
    plain = HaystackIndex(Haystack("h", tuple(sessions)), RankSettings(relative_date_weight=0.0), SessionCache())
    assert plain.rank(question, ASKED) == [0, 1]


def test_the_longmemeval_loader_keeps_the_day_asked() -> None:
    suite = load_longmemeval(FIXTURES / "longmemeval_s_sample.json.gz")
    assert [q.asked for q in suite.questions] == [
        "2023/05/30 (Tue) 21:35",
        "2023/02/10 (Fri) 18:44",
        "2023/05/30 (Tue) 23:36",
    ]


@pytest.mark.parametrize(
    ("token", "dropped"),
    [
        ("serve", "serv"),
        ("recipe", "recip"),
        ("make", "make"),
        ("coffee", "coffee"),
        ("c++e", "c++e"),
        ("café", "café"),
    ],
)
def test_a_final_silent_e_is_dropped_from_longer_words(token: str, dropped: str) -> None:
    assert drop_final_e(token) == dropped


def test_a_verbs_base_form_meets_its_ing_form() -> None:
    sessions = [
        Session("a", "", ("I love serving homemade pasta to guests.",)),
        Session("b", "", ("Guests, what a time.",)),
    ]
    question = "What should I serve my guests?"
    plain = RankSettings(collection_idf=False, burstiness=0.0, final_e=False)
    index = HaystackIndex(Haystack("h", tuple(sessions)), plain, SessionCache(final_e=False))
    assert index.rank(question) == [1, 0]
    index = HaystackIndex(Haystack("h", tuple(sessions)), dataclasses.replace(plain, final_e=True))
    assert index.rank(question) == [0, 1]


def _collection(turns: list[str], repeat: int = 1) -> list[Session]:
    return [Session(f"c{i}-{j}", "", (turn,)) for j in range(repeat) for i, turn in enumerate(turns)]


def test_words_that_keep_company_across_the_collection() -> None:
    # "commute" shares 4 turns with "podcast"; "bus" is in most turns, so it keeps company with nothing.
    turns = [f"My commute on the bus with a podcast, {n}." for n in range(4)]
    turns += [f"The bus to town, stop {n}." for n in range(120)] + [f"Weather note {n}." for n in range(76)]
    stats = CollectionStats([Haystack("c", tuple(_collection(turns)))], SessionCache(), associations=True)
    assert stats.associations is not None
    assert stats.associations.company("commut", 3) == ["podcast"]
    assert stats.associations.company("bus", 3) == []  # in 124 of 200 turns: more than 2%, too common
    assert stats.associations.company("unknown", 3) == []
    assert stats.associations.company("commut", 0) == []


def test_a_question_finds_the_session_through_the_company_its_words_keep() -> None:
    sessions = [
        Session("a", "", ("I listen to a history podcast every morning.",)),
        Session("b", "", ("What a morning.",)),
    ]
    pool = _collection([f"My commute goes by with a podcast, week {n}." for n in range(4)])
    pool += _collection([f"Note {n}." for n in range(196)])
    question = "What can I do during my commute?"
    assert _rank(sessions, question, pool, expansion_weight=0.0) == [0, 1]  # nothing matches: corpus order
    sessions.reverse()
    assert _rank(sessions, question, pool, expansion_weight=0.0) == [0, 1]
    assert _rank(sessions, question, pool) == [1, 0]
