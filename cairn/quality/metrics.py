"""Recall@k, Injection@k and the false injection rate, overall and per slice: what eval, calibrate and review measure.

One case counts as an `Outcome`: whether each of the top-ranked cards (before the gates) and each injected card is
one the case expects. Positives (cases that expect a card) give Recall@k (an expected card among the first k ranked)
and Injection@k (one among the first k injected); negatives (cases that expect nothing) give the false injection
rate (the share that got any card). Every figure is a share rounded to 4 places, 0.0 when there is no case to
share over. `cairn eval` and `cairn review` score the outcomes of real recall runs; `cairn calibrate` scores
outcomes it replays at other thresholds, without a ranking, so its Recall@k is not measured (None).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple


class Outcome(NamedTuple):
    """One case as the metrics see it.

    ranked: for each card of the ranking's top (before the gates), whether the case expects it; None when not known.
    injected: the same for each injected card, in injection order.
    """

    slice: str
    positive: bool
    ranked: tuple[bool, ...] | None
    injected: tuple[bool, ...]


@dataclass(frozen=True, slots=True)
class Metrics:
    """The figures of a set of cases; by_slice holds each named slice's (cases with no slice count only overall)."""

    n_pos: int
    n_neg: int
    injection_at_1: float
    injection_at_3: float
    false_injection_rate: float
    recall_at_1: float | None = None
    recall_at_3: float | None = None
    by_slice: dict[str, Metrics] = field(default_factory=dict)

    @property
    def worst_fir(self) -> float:
        """The highest false injection rate overall or on any slice (the figure calibrate's target bounds)."""
        return max([self.false_injection_rate, *(m.false_injection_rate for m in self.by_slice.values())])

    def figures(self) -> dict[str, Any]:
        """The figures without the slices' (Recall@k only when measured)."""
        data: dict[str, Any] = {}
        if self.recall_at_1 is not None and self.recall_at_3 is not None:
            data["recall@1"] = self.recall_at_1
            data["recall@3"] = self.recall_at_3
        data.update(
            {
                "injection@1": self.injection_at_1,
                "injection@3": self.injection_at_3,
                "false_injection_rate": self.false_injection_rate,
                "n_pos": self.n_pos,
                "n_neg": self.n_neg,
            }
        )
        return data

    def slices_dict(self) -> dict[str, dict[str, Any]]:
        """Each slice's figures, by slice name."""
        return {name: m.figures() for name, m in sorted(self.by_slice.items())}

    def to_dict(self) -> dict[str, Any]:
        """The figures; with slices, also the worst false injection rate among them and each slice's figures."""
        data = self.figures()
        if self.by_slice:
            data["worst_false_injection_rate"] = self.worst_fir
            data["by_slice"] = self.slices_dict()
        return data

    def eval_dict(self) -> dict[str, Any]:
        """As `cairn eval --json` prints them (and `cairn review` its routing): the figures, then every slice's,
        `by_slice` present even when empty."""
        return {**self.figures(), "by_slice": self.slices_dict()}


def metrics_of(outcomes: Iterable[Outcome]) -> Metrics:
    """The figures of some outcomes, overall and for each slice, in one pass."""
    overall = _Tally()
    slices: dict[str, _Tally] = {}
    for outcome in outcomes:
        overall.add(outcome)
        if outcome.slice:
            tally = slices.get(outcome.slice)
            if tally is None:
                tally = slices[outcome.slice] = _Tally()
            tally.add(outcome)
    by_slice = {name: tally.metrics() for name, tally in slices.items()}
    return overall.metrics(by_slice)


class _Tally:
    """Counts toward the figures of one group of cases."""

    __slots__ = ("n_pos", "n_neg", "recall_1", "recall_3", "injection_1", "injection_3", "false", "ranked")

    def __init__(self) -> None:
        self.n_pos = self.n_neg = self.recall_1 = self.recall_3 = 0
        self.injection_1 = self.injection_3 = self.false = 0
        self.ranked = True  # every outcome so far came with its ranking

    def add(self, o: Outcome) -> None:
        if o.ranked is None:
            self.ranked = False
        if not o.positive:
            self.n_neg += 1
            self.false += bool(o.injected)
            return
        self.n_pos += 1
        self.injection_1 += any(o.injected[:1])
        self.injection_3 += any(o.injected[:3])
        if o.ranked is not None:
            self.recall_1 += any(o.ranked[:1])
            self.recall_3 += any(o.ranked[:3])

    def metrics(self, by_slice: dict[str, Metrics] | None = None) -> Metrics:
        ranked = self.ranked
        return Metrics(
            n_pos=self.n_pos,
            n_neg=self.n_neg,
            injection_at_1=_share(self.injection_1, self.n_pos),
            injection_at_3=_share(self.injection_3, self.n_pos),
            false_injection_rate=_share(self.false, self.n_neg),
            recall_at_1=_share(self.recall_1, self.n_pos) if ranked else None,
            recall_at_3=_share(self.recall_3, self.n_pos) if ranked else None,
            by_slice=by_slice or {},
        )


def _share(hits: int, n: int) -> float:
    return round(hits / n, 4) if n else 0.0
