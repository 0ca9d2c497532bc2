"""Retrieval metrics over a full ranking of a haystack: Recall@k (any answer session in the top k) and NDCG@k
(binary relevance, every answer session counts)."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

KS = (1, 3, 5, 10)


def recall_at(ranking: Sequence[str], relevant: Collection[str], k: int) -> float:
    return 1.0 if any(doc in relevant for doc in ranking[:k]) else 0.0


def ndcg_at(ranking: Sequence[str], relevant: Collection[str], k: int = 10) -> float:
    # Each answer session counts once: a haystack can hold one session id twice (7 of LongMemEval_s's dev half do),
    # and counting both would score above the ideal ranking (NDCG over 1).
    dcg = sum(1 / math.log2(i + 2) for i, doc in enumerate(ranking[:k]) if doc in relevant and doc not in ranking[:i])
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / ideal if ideal else 0.0


def question_metrics(ranking: Sequence[str], relevant: Collection[str]) -> dict[str, float]:
    out = {f"recall@{k}": recall_at(ranking, relevant, k) for k in KS}
    out["ndcg@10"] = ndcg_at(ranking, relevant, 10)
    return out


def mean_metrics(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    """The mean of each metric over questions, rounded to 4 places (0.0 for no questions)."""
    keys = [f"recall@{k}" for k in KS] + ["ndcg@10"]
    return {key: round(sum(row[key] for row in rows) / len(rows), 4) if rows else 0.0 for key in keys}
