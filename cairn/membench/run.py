"""A whole benchmark run: every question's haystack ranked, metrics overall and per question type."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cairn.membench.collection import CollectionStats
from cairn.membench.metrics import mean_metrics, question_metrics
from cairn.membench.ranker import HaystackIndex, RankSettings
from cairn.membench.sessionbags import SessionCache
from cairn.membench.suites import Suite, session_day

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class BenchReport:
    """metrics: recall@1/3/5/10 and ndcg@10 over all questions; by_type: the same per question type, with counts."""

    suite: str
    questions: int
    metrics: dict[str, float]
    by_type: dict[str, dict[str, float]]
    excluded: dict[str, int]
    per_question: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.suite,
            "questions": self.questions,
            **self.metrics,
            "by_type": self.by_type,
            "excluded": self.excluded,
        }


def run_bench(
    suite: Suite,
    settings: RankSettings | None = None,
    progress: Progress | None = None,
    haystacks: set[str] | None = None,
) -> BenchReport:
    """Rank each question's haystack and score it; `haystacks` limits the run to some of them (for tuning).

    progress(done, total) is called after each haystack read for the collection's statistics (every haystack of
    the file, when the settings use them), then after each haystack ranked."""
    settings = settings or RankSettings()
    by_haystack: dict[str, list[int]] = {}
    for i, question in enumerate(suite.questions):
        if haystacks is None or question.haystack in haystacks:
            by_haystack.setdefault(question.haystack, []).append(i)
    rows: dict[int, dict[str, float]] = {}
    cache = SessionCache(settings.final_e)
    stats: CollectionStats | None = None
    total = len(by_haystack)
    done = 0
    if settings.collection_idf or settings.burstiness:
        # Term statistics of the whole file (every haystack, whichever are ranked): documents only, no labels.
        stats = CollectionStats((), cache, associations=settings.expansion_weight > 0)
        total += len(suite.haystacks)
        for haystack in suite.haystacks.values():
            stats.add(haystack)
            done += 1
            if progress:
                progress(done, total)
    for key, indices in by_haystack.items():
        haystack = suite.haystacks[key]
        index = HaystackIndex(haystack, settings, cache, stats=stats)
        ids = [session.id for session in haystack.sessions]
        for i in indices:
            question = suite.questions[i]
            ranking = [ids[p] for p in index.rank(question.text, session_day(question.asked))]
            rows[i] = question_metrics(ranking, question.relevant)
        done += 1
        if progress:
            progress(done, total)
    ordered = sorted(rows)
    types: dict[str, list[dict[str, float]]] = {}
    for i in ordered:
        types.setdefault(suite.questions[i].type, []).append(rows[i])
    by_type = {name: {"questions": len(group), **mean_metrics(group)} for name, group in sorted(types.items())}
    return BenchReport(
        suite=suite.name,
        questions=len(ordered),
        metrics=mean_metrics([rows[i] for i in ordered]),
        by_type=by_type,
        excluded=dict(suite.excluded),
        per_question={suite.questions[i].id: rows[i] for i in ordered},
    )
