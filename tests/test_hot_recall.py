"""Recall's own small pieces give what the library functions they replace gave."""

from __future__ import annotations

import heapq
import random

from cairn.hot import recall


def test_kth_is_heapq_nlargest_on_both_sides_of_the_sort_limit() -> None:
    rng = random.Random(3)
    for size in (0, 1, 5, 63, 64, 65, 500, recall._SORT_UP_TO, recall._SORT_UP_TO + 1, 4000):
        for k in (1, 3, 64):
            scores = {row: rng.choice([rng.random() * 9, 1.5, 0.0]) for row in range(size)}
            expected = heapq.nlargest(k, scores.values())[-1] if len(scores) >= k else 0.0
            assert recall._kth(scores, k) == expected, (size, k)
