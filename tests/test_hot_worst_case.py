"""What one prompt may cost the hook is bounded: the terms recall looks up and weighs (`recall.MAX_QUERY_TERMS`,
`recall.MAX_KNOWN_TERMS`, the postings budget), and how often ranking works out its cut (`recall._top`). An ordinary
prompt is never cut, and ranking stays exact."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from cairn.config import Config
from cairn.hot import recall as R
from cairn.hot.index import IndexReader
from cairn.hot.tokens import tokenize
from cairn.index import store

# w0 is on every card, w1 on every second, ... (df of wK: about n / (K + 1)): common and rare words alike.
WORDS = [f"w{k}" for k in range(100)]


def _index(tmp_path: Path, n: int = 400, seed: int = 5) -> IndexReader:
    rng = random.Random(seed)
    cards = []
    for i in range(n):
        words = [w for k, w in enumerate(WORDS) if i % (k + 1) == 0]
        rng.shuffle(words)
        name, summary, body = " ".join(words[:2]), " ".join(words[2:6]), " ".join(words[6:])
        cards.append(
            store.CardTerms(
                id=f"c{i}", path=f"cards/c{i}.md", blob=f"{i:040x}", name=name, summary=summary, status="active",
                expires_on=None, scope=(), not_when=(), supersedes=(), record={},
                tokens=(tokenize(name), tokenize(summary), tokenize(body)),
            )
        )  # fmt: skip
    target = tmp_path / "index.cairn"
    store.write_index(target, {"commit": "0" * 40, "config": json.dumps(Config().to_dict())}, cards)
    return IndexReader(target)


def test_a_prompt_of_thousands_of_words_looks_up_at_most_max_query_terms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked_up: list[int] = []
    lookup = IndexReader.postings

    def counted(self: IndexReader, terms: list[str]) -> object:
        looked_up.append(len(set(terms)))
        return lookup(self, terms)

    prompt = " ".join(f"zq{i}x" for i in range(3 * R.MAX_QUERY_TERMS))  # words no card uses
    with _index(tmp_path) as index:
        monkeypatch.setattr(IndexReader, "postings", counted)
        terms, postings, weights = R._query(index, prompt, Config().recall)
    assert looked_up == [R.MAX_QUERY_TERMS]
    assert terms == [f"zq{i}x" for i in range(R.MAX_QUERY_TERMS)]  # the first said
    assert not postings and len(weights.unknown_terms) == R.MAX_QUERY_TERMS


def test_at_most_max_known_terms_are_weighed_the_rarest(tmp_path: Path) -> None:
    prompt = " ".join(WORDS)  # 100 words the vault knows
    with _index(tmp_path) as index:
        terms, postings, weights = R._query(index, prompt, Config().recall)
        every = index.postings(WORDS)
    assert len(every) == len(WORDS) > R.MAX_KNOWN_TERMS
    assert len(postings) == R.MAX_KNOWN_TERMS
    assert set(terms) == set(postings) == set(weights.idf)
    rarest_left_out = min(every[t].df for t in WORDS if t not in postings)
    assert max(p.df for p in postings.values()) <= rarest_left_out


def test_a_word_cut_from_a_long_prompt_is_no_foreign_term(tmp_path: Path) -> None:
    """A sentence of more known words than MAX_KNOWN_TERMS, then one of words no card uses around a common word the
    cut left out (`_bounded` keeps the rarest): the second sentence is foreign (`_foreign`), and its cut word is not
    weighed at all. It raised KeyError (the hook served nothing for the prompt, and logged the word)."""
    prompt = " ".join(WORDS[1:]) + ". Zorblax quuxified the frobnicator w0 yesterday."
    with _index(tmp_path) as index:
        terms, postings, weights = R._query(index, prompt, Config().recall)
        assert "w0" not in terms and len(postings) == R.MAX_KNOWN_TERMS  # the common word was cut
        assert {"zorblax", "frobnicator"} <= set(weights.foreign)  # the sentence the vault does not know
        assert "w0" not in weights.foreign
        assert R.recall(index, prompt).candidates  # ranked and gated, no KeyError


def test_the_postings_weighed_stay_within_the_budget_question_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(R, "MIN_QUERY_POSTINGS", 0)
    monkeypatch.setattr(R, "QUERY_POSTINGS_PER_CARD", 2)
    # The question names the commonest words; a pasted line (weighed less) names rare ones.
    prompt = "Why do w0 w1 w2 w3 break?\n    w40 w41 w42 w43 w44"
    with _index(tmp_path) as index:
        terms, postings, _ = R._query(index, prompt, Config().recall)
        budget = 2 * index.n_cards
        every = index.postings(tokenize(prompt))
    assert sum(p.df for p in every.values()) > budget
    assert sum(p.df for p in postings.values()) <= budget
    # The question's words first, rarest first (w3, w2, w1), until the commonest no longer fits; the pasted line's
    # rare words (less salient, looked at after) still do.
    assert {"w3", "w2", "w1"} <= set(postings) and "w0" not in postings
    assert {"w40", "w41", "w42", "w43", "w44"} <= set(postings)
    assert terms == [t for t in tokenize(prompt) if t in postings or t not in every]


def test_an_ordinary_prompt_is_weighed_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prompt = "Why does w0 w3 w7 w12 w50 break when w2 runs? Before you touch any files, read the README first."
    with _index(tmp_path) as index:
        bounded = R._query(index, prompt, Config().recall)
        monkeypatch.setattr(R, "MAX_QUERY_TERMS", 10**9)
        monkeypatch.setattr(R, "MAX_KNOWN_TERMS", 10**9)
        monkeypatch.setattr(R, "MIN_QUERY_POSTINGS", 10**9)
        whole = R._query(index, prompt, Config().recall)
    assert bounded[0] == whole[0] and bounded[1].keys() == whole[1].keys() and bounded[2] == whole[2]


def test_ranking_a_long_prompt_works_out_its_cut_rarely_and_stays_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Terms about as heavy as each other, read whole one after another: the depth-th best partial score is worked
    out again only when it could have overtaken the bounds left (it grows by at most the bounds read since)."""
    settings = Config().recall
    calls: list[int] = []
    kth = R._kth

    def counted(scores: dict[int, float], k: int) -> float:
        calls.append(k)
        return kth(scores, k)

    with _index(tmp_path, n=600) as index:
        terms = WORDS[:60]
        postings = index.postings(terms)
        weights = R._weights(index, terms, postings, settings)
        full, full_matched, _ = R._rank_all(index, terms, postings, weights, settings)
        for depth in (3, 7, 64):
            calls.clear()
            monkeypatch.setattr(R, "_kth", counted)
            ranked, matched, _ = R._top(index, terms, postings, weights, settings, depth)
            monkeypatch.setattr(R, "_kth", kth)
            assert ranked == full[:depth]
            assert all(matched[row] == full_matched[row] for row, _ in ranked)
            read_whole = len(calls)  # each call before the break: once per term read whole without the ceiling
            assert read_whole <= len(terms) // 4, (depth, read_whole)


def test_a_one_word_sentence_is_not_read_again_for_a_tail(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sentence without a space has no boilerplate tail to cut: `_cut_tail` keeps it whole without tokenizing it
    (a paste of thousands of one-word lines was tokenized twice a line)."""
    from cairn.hot import tokens

    words: list[str] = []
    tokenize_words = tokens.tokenize

    def counted(text: str) -> list[str]:
        words.append(text)
        return tokenize_words(text)

    monkeypatch.setattr(tokens, "tokenize", counted)
    for sentence in ("x", "README", "Don't", "a.b/c", "\u4f60\u597d"):
        out: list[str] = []
        tokens._cut_tail(sentence, out)
        assert out == [sentence]
    assert words == []
    out = []
    tokens._cut_tail("why does the build break Don't change anything yet", out)  # two or more words: as before
    assert out == ["why does the build break", "Don't change anything yet"] and words
