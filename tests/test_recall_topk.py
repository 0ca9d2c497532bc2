"""Recall ranks only as deep as it needs (`recall._top`): the same cards, scores (to the bit), ties and matched
terms as scoring every card; the index's per-term bounds hold for any BM25F parameters; the hook's stored settings
are `cairn.config`'s."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import pytest

from cairn.config import Config, parse_config
from cairn.hot import recall as R
from cairn.hot.index import IndexReader
from cairn.hot.settings import StoredSettings, stored_settings
from cairn.hot.tokens import tokenize
from cairn.index import store

WORDS = [f"w{i}" for i in range(60)] + ["git", "rebase", "cache", "build", "docker", "layer", "timeout", "retry"]


def _index(tmp_path: Path, n: int = 300, seed: int = 7) -> IndexReader:
    rng = random.Random(seed)
    weights = [1 / (k + 1) for k in range(len(WORDS))]  # a few words in most cards, most in few

    def text(k: int) -> str:
        return " ".join(rng.choices(WORDS, weights, k=k))

    cards = []
    for i in range(n):
        name, summary, body = text(rng.randint(1, 4)), text(rng.randint(3, 12)), text(rng.randint(0, 40))
        cards.append(
            store.CardTerms(
                id=f"c{i}", path=f"cards/c{i}.md", blob=f"{i:040x}", name=name, summary=summary, status="active",
                expires_on=None, scope=(), not_when=(), supersedes=(), record={},
                tokens=(tokenize(name), tokenize(summary), tokenize(body)),
            )
        )  # fmt: skip
    target = tmp_path / "index.cairn"
    meta = {"commit": "0" * 40, "config": _json(Config().to_dict())}
    store.write_index(target, meta, cards)
    return IndexReader(target)


def _json(data: object) -> str:
    import json

    return json.dumps(data)


# `_top` leaves out the fields a term is not in (they add exactly 0.0): bit-identical scores with the shipped
# parameters, and also with a field weighed 0, no length normalisation (b = 0), nearly full normalisation, other k1.
PARAMETERS: list[dict[str, Any]] = [
    {},
    {"weight_name": 0.0},
    {"weight_summary": 0.0, "b": 0.0},
    {"weight_body": 0.0, "b": 0.999},
    {"k1": 0.3, "b": 0.2, "weight_name": 5.0},
]


@pytest.mark.parametrize("changed", PARAMETERS)
def test_top_k_equals_scoring_every_card(tmp_path: Path, changed: dict[str, Any]) -> None:
    rng = random.Random(3)
    settings = dataclasses.replace(Config().recall, **changed)
    with _index(tmp_path) as index:
        for _ in range(150 if not changed else 40):
            terms = R.query_terms(" ".join(rng.choices(WORDS, k=rng.randint(1, 12))))
            postings = index.postings(terms)
            weights = R._weights(index, terms, postings, settings)
            full, full_matched, _ = R._rank_all(index, terms, postings, weights, settings)
            for depth in (1, 3, 8, 64):
                ranked, matched, complete = R._top(index, terms, postings, weights, settings, depth)
                assert ranked == full[:depth]  # rows, bit-identical scores, ties by row
                # every scored card, or the cut stopped with at least `depth` of them in hand
                assert len(full) <= depth if complete else len(full) >= depth
                for row, _ in ranked:
                    assert matched[row] == full_matched[row]


def test_kth_is_the_kth_highest_score() -> None:
    rng = random.Random(17)
    for n in (0, 1, 5, 999, 1000, 1001, 3000):
        scores = {row: float(rng.randint(0, 50)) / 7 for row in range(n)}  # many ties
        for k in (1, 3, 7, 64):
            want = sorted(scores.values(), reverse=True)[k - 1] if n >= k else 0.0
            assert R._kth(scores, k) == want


def test_recall_decides_as_with_every_card_scored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(5)
    queries = [" ".join(rng.choices(WORDS, k=rng.randint(1, 10))) for _ in range(60)]
    with _index(tmp_path) as index:
        fast = [R.recall(index, query, already_injected={"c1", "c2", "c3"}) for query in queries]
        # The same recall with the whole ranking computed (as before ranking was bounded).
        monkeypatch.setattr(R, "_top", lambda index, terms, postings, weights, settings, depth: R._rank_all(
            index, terms, postings, weights, settings
        ))  # fmt: skip
        full = [R.recall(index, query, already_injected={"c1", "c2", "c3"}) for query in queries]
    assert fast == full


def test_deciding_the_first_candidates_with_the_semantic_pick_decides_as_a_whole_recall(tmp_path: Path) -> None:
    """The hook decides only its first candidates (`decide_first`); with semantic evidence the pick may choose any
    of the first `SEMANTIC_PICK_DEPTH` admissible cards, and must choose as a whole recall does, also when the
    session's cards push the admissible ones deeper."""
    rng = random.Random(11)
    picked = 0
    with _index(tmp_path) as index:
        for _ in range(300):
            query = " ".join(rng.choices(WORDS, k=rng.randint(2, 10)))
            already = {f"c{rng.randrange(300)}" for _ in range(rng.choice([0, 5, 40]))}
            lexical = R.recall(index, query, already_injected=already)
            admissible = [c.card.id for c in lexical.candidates if c.reason != R.ALREADY_INJECTED][:12]
            if not admissible:
                continue
            chosen = rng.choice(admissible)
            semantic = {f"c{rng.randrange(300)}": rng.uniform(-1.0, 2.5) for _ in range(30)}
            semantic[chosen] = rng.uniform(2.0, 6.0)
            full = R.recall(index, query, already_injected=already, semantic=semantic)
            picked += bool(full.injected) and not lexical.injected
            for first in (1, 3, 5, 20):
                part = R.recall(index, query, already_injected=already, semantic=semantic, decide_first=first)
                assert part.injected == full.injected, (query, first)
                assert part.candidates == full.candidates[:first], (query, first)
    assert picked >= 10  # the pick was exercised


def test_term_bounds_hold_for_any_parameters(tmp_path: Path) -> None:
    rng = random.Random(11)
    with _index(tmp_path, n=120) as index:
        postings = index.postings(WORDS)
        for _ in range(30):
            b = rng.choice([0.0, 0.999, rng.random()])  # b = 1 divides by zero for an empty field, here as in recall
            weights = (rng.random() * 3, rng.random() * 3, rng.random() * 3)
            avg = (rng.uniform(1, 5), rng.uniform(1, 20), rng.uniform(1, 60))
            for found in postings.values():
                maxima = found.field_maxima(weights, b, avg)
                for _row, *counts in found:
                    for field in range(3):
                        tf, length = counts[field], counts[3 + field]
                        value = weights[field] * tf / (1 - b + b * length / avg[field])
                        assert value <= maxima[field]


def test_stored_settings_are_the_config_settings() -> None:
    for config in (Config(), parse_config("[recall]\nk1 = 0.9\nmin_margin = 0.3\nmax_cards = 2\n")):
        stored = stored_settings(config.to_dict())
        assert isinstance(stored, StoredSettings)
        for name in type(config.recall).__dataclass_fields__:
            assert getattr(stored, name) == getattr(config.recall, name)
    partial = {"recall": {"k1": 1.0}}  # an index from another version: the validating path fills the defaults
    assert stored_settings(partial) == Config().recall.__class__(k1=1.0)
