"""Sessions as bags: the chunk-remembering tokenizer gives `tokenize`'s tokens, and each distinct session is
tokenized once."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.hot.tokens import tokenize
from cairn.membench.sessionbags import ChunkTokenizer, SessionCache, TurnBags, pair_terms
from cairn.membench.suites import Session

FIXTURES = Path(__file__).parent / "fixtures" / "membench"
# Characters around every rule of the tokenizer: word runs, identifier separators, contractions, CJK, and
# whitespace of every kind (ASCII, no-break, ideographic, line and paragraph separators).
ALPHABET = "aZ9_.-/+#'’ \t\n\r\x0b\x0c\x1c\xa0\u2028\u3000éß漢字かなカナ한국\U0001f600sdtlrevm,;:!?()\"" + "the "


@given(st.text(alphabet=ALPHABET, max_size=80))
@settings(max_examples=400, deadline=None)
def test_chunk_tokenizer_gives_the_tokens_of_the_whole_text(text: str) -> None:
    chunked = ChunkTokenizer()
    assert chunked(text) == tokenize(text)
    assert chunked(text + " " + text) == tokenize(text + " " + text)  # now from the remembered chunks


def test_chunk_tokenizer_on_conversation_text() -> None:
    records = json.loads((FIXTURES / "longmemeval_tiny.json").read_text())
    texts = [turn["content"] for record in records for session in record["haystack_sessions"] for turn in session]
    locomo = json.loads((FIXTURES / "locomo_tiny.json").read_text())
    texts += [
        str(turn.get("text", ""))
        for conversation in locomo
        for key, turns in conversation["conversation"].items()
        if isinstance(turns, list)
        for turn in turns
    ]
    rng = random.Random(7)
    texts += ["".join(rng.choices(ALPHABET, k=200)) for _ in range(200)]
    chunked = ChunkTokenizer()
    for text in texts:
        assert chunked(text) == tokenize(text)


def test_turn_bags_count_tokens_and_nearby_word_pairs() -> None:
    bags = TurnBags(("Our support group meets at the library.", "Ok, sure!"), ChunkTokenizer())
    assert bags.turns[0].counts == Counter(tokenize("Our support group meets at the library."))
    assert bags.turns[0].length == 4
    assert bags.pairs[0].counts == Counter(pair_terms(["support", "group", "meet", "library"]))
    assert bags.turns[1].length == 0 and bags.pairs[1].length == 0


def test_each_distinct_date_and_turn_sequence_is_tokenized_once() -> None:
    cache = SessionCache()
    a = Session("a", "2023/05/20 (Sat) 02:21", ("I bought a kayak.",))
    b = Session("b", "2023/05/21 (Sun) 09:00", ("I bought a kayak.",))
    assert cache.turns(a) is cache.turns(b)
    assert cache.date(a) is not cache.date(b)
    assert cache.date(a) is cache.date(Session("c", "2023/05/20 (Sat) 02:21", ()))
    assert cache.date(a).counts == Counter(tokenize("Saturday 20 May 2023"))


@pytest.mark.parametrize("tokens", [[], ["a"], ["x", "x", "y"], ["support", "group", "c++", "meet", "group"]])
def test_pairs_skip_tokens_that_are_not_plain_words(tokens: list[str]) -> None:
    words = [t for t in tokens if t.isalnum()]
    assert all(a < b for a, b in (p.split("_") for p in pair_terms(tokens)))
    assert len(pair_terms(tokens)) <= 2 * len(words)
