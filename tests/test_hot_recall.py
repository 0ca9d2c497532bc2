"""Recall's own small pieces give what the library functions they replace gave."""

from __future__ import annotations

import dataclasses
import heapq
import json
import random
from pathlib import Path
from typing import Any

import pytest

from cairn.config import Config
from cairn.hot import recall
from cairn.hot.index import IndexReader
from cairn.hot.tokens import tokenize
from cairn.index import store


def test_kth_is_heapq_nlargest_on_both_sides_of_the_sort_limit() -> None:
    rng = random.Random(3)
    for size in (0, 1, 5, 63, 64, 65, 500, recall._SORT_UP_TO, recall._SORT_UP_TO + 1, 4000):
        for k in (1, 3, 64):
            scores = {row: rng.choice([rng.random() * 9, 1.5, 0.0]) for row in range(size)}
            expected = heapq.nlargest(k, scores.values())[-1] if len(scores) >= k else 0.0
            assert recall._kth(scores, k) == expected, (size, k)


WORDS = [f"w{i}" for i in range(40)] + ["git", "rebase", "cache", "build", "docker", "layer", "timeout", "retry"]


def _varied_index(tmp_path: Path, n: int, seed: int) -> IndexReader:
    """Cards that admission refuses for every reason: drafts, retired, expired, superseded, scoped, not_when."""
    rng = random.Random(seed)
    weights = [1 / (k + 1) for k in range(len(WORDS))]

    def text(k: int) -> str:
        return " ".join(rng.choices(WORDS, weights, k=k))

    cards = []
    for i in range(n):
        name, summary, body = text(rng.randint(1, 4)), text(rng.randint(3, 12)), text(rng.randint(0, 30))
        status = rng.choices(["active", "draft", "retired"], [8, 1, 1])[0]
        cards.append(
            store.CardTerms(
                id=f"c{i}", path=f"cards/c{i}.md", blob=f"{i:040x}", name=name, summary=summary, status=status,
                expires_on=rng.choice([None, None, None, "2001-01-01", "2999-01-01"]),
                scope=tuple(rng.sample(["git", "docker", "ci"], rng.choice([0, 0, 1, 2]))),
                not_when=tuple(rng.sample(WORDS, 1)) if rng.random() < 0.1 else (),
                supersedes=(f"c{rng.randrange(n)}",) if rng.random() < 0.1 else (), record={},
                tokens=(tokenize(name), tokenize(summary), tokenize(body)),
            )
        )  # fmt: skip
    target = tmp_path / f"index-{seed}.cairn"
    meta = {"commit": "0" * 40, "config": json.dumps(Config().to_dict())}
    store.write_index(target, meta, cards)
    return IndexReader(target)


@pytest.mark.parametrize(("n", "seed"), [(40, 1), (300, 2), (1500, 3), (3000, 4)])
def test_deciding_the_first_candidates_decides_them_as_a_whole_recall(
    tmp_path: Path, n: int, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    settings = [Config().recall, dataclasses.replace(Config().recall, min_lead=0.0, min_coverage=0.0, min_margin=0.0)]
    short: list[bool] = []
    decide = recall._first_decisions

    def counted(*args: Any) -> recall.Result | None:
        result = decide(*args)
        short.append(result is not None)
        return result

    monkeypatch.setattr(recall, "_first_decisions", counted)
    with _varied_index(tmp_path, n, seed) as index:
        for _ in range(150):
            query = " ".join(rng.choices(WORDS, k=rng.randint(1, 12)))
            already = {f"c{rng.randrange(n)}" for _ in range(rng.choice([0, 3, 30]))}
            scope = rng.choice([None, ["git"], ["docker", "ci"]])
            chosen = rng.choice(settings)
            full = recall.recall(index, query, scope=scope, already_injected=already, settings=chosen)
            for first in (0, 1, 2, 5, 19, 20, 21, 40, 70):
                part = recall.recall(
                    index, query, scope=scope, already_injected=already, settings=chosen, decide_first=first
                )
                assert part.injected == full.injected, (query, first)
                assert part.candidates == full.candidates[:first], (query, first)
    assert any(short) and not all(short)  # both ways were taken: settled early, and the whole way
