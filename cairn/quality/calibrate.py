"""`cairn calibrate`: fit the three gate thresholds (min_lead, min_coverage, min_margin) on eval cases.

The objective: the best Injection@1 while the false injection rate stays at or under a target overall AND on every
slice that has negatives. The figure to trust is the cross-validated one: the cases are split into k folds by a
hash of their id (cases asking the same question go to one fold), thresholds are fitted on k-1 folds and measured
on the fold left out, and the held-out outcomes of all folds are pooled.

Fast because the gate values do not depend on the thresholds. Recall runs once per case with every threshold at 0:
then it injects exactly the first `max_cards` admissible cards, each with its gate values (lead, coverage,
margin over the next admissible card). With real thresholds, recall injects the longest run of those cards, from
the top, that passes all three gates (`cairn.hot.recall`: a card below one the gates refused is never injected), or
a group of cards that fit about as well and stand clear of the next together (`recall._group`), so every decision
can be replayed in memory. Injection@1 and the false injection rate depend on whether the top admissible card is
injected, which happens at every grid point inside a union of at most `max_cards` boxes [0, lead] x [0, coverage]
x [0, margin] (the card alone, and each group); the grid sweep counts cases in a 3-D histogram (the union by
inclusion-exclusion: each box +1, each pair's intersection -1, the three's +1) and reads every grid point off
suffix sums. The own words relief (`gates.said_lead`) depends on no threshold either: a case's first card has it or
not (`CasePoint.said`), and its box then reaches NAMED_LEAD times its lead.

Ties (grid points with the same Injection@1 and false injection rates on the fitting cases) go to the strictest
thresholds: on cases nobody fitted on, stricter gates inject less, and the false injection rate is the constraint.
"""

from __future__ import annotations

import bisect
import dataclasses
import datetime as dt
import hashlib
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cairn.config import RecallSettings, write_recall_settings
from cairn.hot import gates
from cairn.hot.errors import CairnError
from cairn.hot.index import IndexReader
from cairn.hot.recall import (
    GATE_REASONS,
    GROUP_SPREAD,
    PHRASE_SCALE,
    Candidate,
    Result,
    fragment_gates,
    rare_phrases,
    recall,
    said_shares,
)
from cairn.quality.evaluate import Case
from cairn.quality.metrics import Metrics, Outcome, metrics_of

Progress = Callable[[int, int], None]
DEFAULT_TARGETS = (0.01, 0.02, 0.05, 0.1, 0.2)
_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class Thresholds:
    min_lead: float
    min_coverage: float
    min_margin: float

    def to_dict(self) -> dict[str, float]:
        return {"min_lead": self.min_lead, "min_coverage": self.min_coverage, "min_margin": self.min_margin}

    def passes(self, gate: tuple[float, float, float]) -> bool:
        return gate[0] >= self.min_lead and gate[1] >= self.min_coverage and gate[2] >= self.min_margin


@dataclass(frozen=True, slots=True)
class CasePoint:
    """One case reduced to what the thresholds act on.

    top: gate values (lead, coverage, margin) of the first `max_cards` admissible cards, best first.
    hits: for each of them, whether it is one of the case's expected cards.
    alike: for each of them, whether it scores at least `recall.GROUP_SPREAD` of the first (may join its group);
    empty: no groups.
    asked: the first card's gate values in each fragment the fragment pick asks alone (`recall.fragment_gates`):
    when nothing else is injected, the first card goes in alone at thresholds one of them passes.
    phrased: the first card holds a rare phrase of the prompt (`recall.rare_phrases`): when nothing is injected,
    recall decides again with the lead and margin thresholds at `recall.PHRASE_SCALE` of theirs (`recall._phrase_step`),
    which the replay does with those gate values over PHRASE_SCALE (so the grid and the replay agree).
    said: the first card has the own words relief (`gates.said_lead`: the prompt says `gates.SAID_GAP` more of its
    name and summary than of the next admissible card's, and it is not named), which no threshold changes: in the
    main decision its lead counts `gates.NAMED_LEAD` times (`_main`), at the phrase step's looser gates it does not.
    reach: how many of `top` recall injects at most, at any thresholds (None: all): a card under the evidence floor
    (`min_evidence`, which no threshold changes) is never injected, nor any below it, yet it still makes a group
    with the first card (`recall._group` asks only the three gates).
    """

    id: str
    slice: str
    positive: bool
    top: tuple[tuple[float, float, float], ...]
    hits: tuple[bool, ...]
    fold: int = 0
    alike: tuple[bool, ...] = ()
    asked: tuple[tuple[float, float, float], ...] = ()
    phrased: bool = False
    said: bool = False
    reach: int | None = None

    def _main(self) -> tuple[tuple[float, float, float], ...]:
        """The gate values the main decision compares with the thresholds: the first card's lead relieved when
        `said` (below the threshold and within NAMED_LEAD of it, recall counts it NAMED_LEAD times; above, it passes
        either way)."""
        if not self.said or not self.top:
            return self.top
        lead, cover, margin = self.top[0]
        return ((min(1.0, lead * gates.NAMED_LEAD), cover, margin), *self.top[1:])

    def _loosened(self) -> CasePoint:
        """This case with its lead and margin values over PHRASE_SCALE, not phrased: passing thresholds t is
        passing PHRASE_SCALE x t's lead and margin as recall's phrase step does."""

        def up(gate: tuple[float, float, float]) -> tuple[float, float, float]:
            return (gate[0] / PHRASE_SCALE, gate[1], gate[2] / PHRASE_SCALE)  # coverage is not scaled

        top = tuple(up(g) for g in self.top)
        asked = tuple(up(g) for g in self.asked)
        return dataclasses.replace(self, top=top, asked=asked, phrased=False, said=False)

    def group(self, t: Thresholds) -> int:
        """How many cards inject together as a group at these thresholds (`recall._group`), or 0."""
        if not self.top or self.top[0][1] < t.min_coverage:
            return 0
        for k in range(2, len(self.top) + 1):
            lead, cover, margin = self.top[k - 1]
            if k > len(self.alike) or not self.alike[k - 1] or cover < t.min_coverage:
                return 0
            if lead >= t.min_lead and margin >= t.min_margin:
                return k
        return 0

    def injected(self, t: Thresholds) -> int:
        """How many cards recall injects at these thresholds: a group, then the run of passing cards."""
        group = self.group(t)
        n = 0
        for i, gate in enumerate(self._main()):
            if i == self.reach or i >= group and not t.passes(gate):
                break
            n += 1
        if not n and any(t.passes(gate) for gate in self.asked):
            return 1  # the fragment pick
        if not n and self.phrased:
            return self._loosened().injected(t)  # the phrase step
        return n

    def boxes(self) -> list[tuple[float, float, float]]:
        """The gate values at or under which the first card is injected: itself, each group it can lead, and each
        fragment asked alone; a box inside another is left out."""
        if not self.top:
            return []
        out = [self._main()[0]]
        low = self.top[0][1]
        for k in range(2, len(self.top) + 1):
            if k > len(self.alike) or not self.alike[k - 1]:
                break
            lead, cover, margin = self.top[k - 1]
            low = min(low, cover)
            out.append((lead, low, margin))
        out += self.asked
        if self.phrased:  # each holds the box it scales up, but not the first card's relieved by its own words
            out += self._loosened().boxes()
        return [
            box
            for i, box in enumerate(out)
            if not any(
                other != box and all(o >= b for o, b in zip(other, box, strict=True)) or other == box and j < i
                for j, other in enumerate(out)
            )
        ]

    def outcome(self, t: Thresholds) -> Outcome:
        """The case as the metrics count it, replayed at these thresholds (no ranking: Recall@k is not measured)."""
        return Outcome(self.slice, self.positive, None, self.hits[: self.injected(t)])


@dataclass(frozen=True, slots=True)
class OperatingPoint:
    """Thresholds fitted at one target: measured on the cases fitted on, and cross-validated.

    held_out: whether `cross_validated` was measured on cases its thresholds were not fitted on; with one fold it
    was not (it is then the fitted figures), and `to_dict` gives None for it."""

    target_fir: float
    thresholds: Thresholds
    fitted: Metrics
    cross_validated: Metrics
    fold_thresholds: tuple[Thresholds, ...]
    held_out: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "target_fir": self.target_fir,
            "thresholds": self.thresholds.to_dict(),
            "fitted": self.fitted.to_dict(),
            "cross_validated": self.cross_validated.to_dict() if self.held_out else None,
            "fold_thresholds": [t.to_dict() for t in self.fold_thresholds],
        }


@dataclass(frozen=True, slots=True)
class Calibration:
    """What `cairn calibrate` found: the fit at the target, the trade-off curve and the current thresholds."""

    n_cases: int
    folds: int
    step: float
    current: Thresholds
    current_measure: Metrics
    best: OperatingPoint
    tradeoff: tuple[OperatingPoint, ...]

    def holding_target(self) -> float | None:
        """The highest target of the trade-off under the fit's own whose fit holds, held out and on the cases
        themselves: what `--target-fir` to ask for when the fit at the target misses held out (`--write` then writes
        it). None when none does, or with one fold (nothing held out)."""
        held = [
            p.target_fir
            for p in self.tradeoff
            if p.held_out
            and p.target_fir < self.best.target_fir
            and max(p.fitted.worst_fir, p.cross_validated.worst_fir) <= p.target_fir
        ]
        return max(held, default=None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_cases": self.n_cases,
            "folds": self.folds,
            "step": self.step,
            "target_fir": self.best.target_fir,
            "current": {"thresholds": self.current.to_dict(), **self.current_measure.to_dict()},
            "best": self.best.to_dict(),
            "tradeoff": [p.to_dict() for p in self.tradeoff],
        }


def fold_of(case_id: str, folds: int) -> int:
    """A case's fold: a hash of its id, so the split never depends on the order of the file (an id JSON gave a lone
    surrogate, which UTF-8 cannot encode, is hashed with it as it stands)."""
    return int(hashlib.sha256(case_id.encode("utf-8", "surrogatepass")).hexdigest()[:12], 16) % folds


def gather(
    index: IndexReader,
    cases: Sequence[Case],
    *,
    settings: RecallSettings,
    folds: int = 5,
    today: dt.date | None = None,
    progress: Progress | None = None,
) -> list[CasePoint]:
    """Run recall once per case with the gates open and keep each case's top admissible cards' gate values."""
    open_gates = dataclasses.replace(settings, min_lead=0.0, min_coverage=0.0, min_margin=0.0)
    points: list[CasePoint] = []
    total = len(cases)
    # Cases that ask the same question share the fold of the first of them: a fit on one must not be measured on
    # its twin as if held out.
    fold_by_query: dict[str, int] = {}
    for done, case in enumerate(cases, 1):
        fold = fold_by_query.setdefault(" ".join(case.query.split()).casefold(), fold_of(case.id, folds))
        result = recall(index, case.query, today=today, settings=open_gates)
        cards, reach = _replayed(result, settings.max_cards)
        top = tuple((c.lead, c.coverage, c.margin) for c in cards)
        hits = tuple(c.card.id in case.expect for c in cards)
        first = cards[0].score if cards else 0.0
        alike = tuple(c.score >= GROUP_SPREAD * first for c in cards)
        asked = tuple(
            (c.lead, c.coverage, c.margin)
            for _, c in (fragment_gates(index, case.query, result.injected[0], open_gates, today=today) if top else ())
        )
        phrased = bool(top) and bool(rare_phrases(index, case.query, result.injected[0]))
        point = CasePoint(
            case.id, case.slice, case.positive, top, hits, fold, alike, asked, phrased, _said(result), reach
        )
        points.append(point)
        if progress and (done % 25 == 0 or done == total):
            progress(done, total)
    return points


def _replayed(result: Result, max_cards: int) -> tuple[tuple[Candidate, ...], int | None]:
    """The cards a case's replay weighs, from recall at open gates, and how many of them it may inject (`reach`).
    When the gates injected the first admissible card, the first `max_cards` admissible cards: the injected run,
    then cards under the evidence floor (and those below them), which never go in but whose gate values decide
    whether the first card goes in with them as a group. Otherwise (nothing injected, or a pick), the injected."""
    injected = result.injected
    admissible = [c for c in result.candidates if c.reason in GATE_REASONS]
    if not injected or injected[0].picked or not admissible or admissible[0].card.id != injected[0].card.id:
        return injected, None
    return tuple(admissible[:max_cards]), len(injected)


def _said(result: Result) -> bool:
    """Whether recall's first admissible card (at open gates) has the own words relief, whatever the thresholds."""
    admissible = [c for c in result.candidates if c.reason in GATE_REASONS]
    if not admissible or admissible[0].named or result.weights is None:
        return False
    following = admissible[1].card if len(admissible) > 1 else None
    return gates.says_own_words(*said_shares(admissible[0].card, following, result.weights.terms))


def measure(points: Sequence[CasePoint], t: Thresholds) -> Metrics:
    """Replay recall's decisions at thresholds `t`: Injection@k and the false injection rate, overall and per slice."""
    return metrics_of(p.outcome(t) for p in points)


class _Grid:
    """Counts of cases whose top card passes each grid point, per group (all cases and each slice) and fold.

    A case's top card passes the thresholds (G[a], G[b], G[c]) iff its gate values' grid cells (i, j, k) have
    a <= i, b <= j, c <= k: the count at a point is a 3-D suffix sum of a histogram of those cells.
    """

    def __init__(self, points: Sequence[CasePoint], step: float, folds: int) -> None:
        n = round(1 / step)
        if n < 1 or abs(n * step - 1) > 1e-6:
            raise CairnError(f"the grid step {step:g} must divide 1 (e.g. 0.05, 0.025, 0.1)")
        self.values = [round(k * step, 6) for k in range(n + 1)]
        self.size = n + 1
        self.folds = folds
        self.groups = ["", *sorted({p.slice for p in points if p.slice})]
        cells = self.size**3
        # [fold][group] -> (hits, negatives) arrays of suffix sums; n_pos/n_neg per fold and group
        self.hits = [[[0] * cells for _ in self.groups] for _ in range(folds)]
        self.negs = [[[0] * cells for _ in self.groups] for _ in range(folds)]
        self.n_pos = [[0] * len(self.groups) for _ in range(folds)]
        self.n_neg = [[0] * len(self.groups) for _ in range(folds)]
        where = {name: g for g, name in enumerate(self.groups)}
        for p in points:
            groups = [0] + ([where[p.slice]] if p.slice else [])
            for g in groups:
                if p.positive:
                    self.n_pos[p.fold][g] += 1
                else:
                    self.n_neg[p.fold][g] += 1
            if not p.top or (p.positive and not p.hits[0]):
                continue  # never a hit nor a false injection, whatever the thresholds
            target = self.hits if p.positive else self.negs
            for cell, sign in _union(p.boxes(), self._cell):
                for g in groups:
                    target[p.fold][g][cell] += sign
        for per_fold in (self.hits, self.negs):
            for arrays in per_fold:
                for array in arrays:
                    self._suffix(array)

    def _cell(self, gate: tuple[float, float, float]) -> int:
        i, j, k = (bisect.bisect_right(self.values, v + 0.0) - 1 for v in gate)
        return (i * self.size + j) * self.size + k

    def _suffix(self, a: list[int]) -> None:
        s = self.size
        for i in range(s - 1, -1, -1):  # along the margin axis (stride 1)
            for j in range(s):
                row = (i * s + j) * s
                for k in range(s - 2, -1, -1):
                    a[row + k] += a[row + k + 1]
        for i in range(s):  # coverage axis (stride s)
            for j in range(s - 2, -1, -1):
                row, below = (i * s + j) * s, (i * s + j + 1) * s
                for k in range(s):
                    a[row + k] += a[below + k]
        plane = s * s
        for i in range(s - 2, -1, -1):  # score axis (stride s*s)
            for x in range(plane):
                a[i * plane + x] += a[(i + 1) * plane + x]

    def thresholds(self, cell: int) -> Thresholds:
        s = self.size
        return Thresholds(self.values[cell // (s * s)], self.values[(cell // s) % s], self.values[cell % s])

    def fit(self, target: float, leave_out: int | None = None) -> Thresholds:
        """The grid point with the most Injection@1 hits whose false injection rate is <= target on every group."""
        use = [f for f in range(self.folds) if f != leave_out]
        n_groups = len(self.groups)
        hits = _summed([self.hits[f][0] for f in use])
        negs = [_summed([self.negs[f][g] for f in use]) for g in range(n_groups)]
        n_neg = [sum(self.n_neg[f][g] for f in use) for g in range(n_groups)]
        allowed = [target * n + _EPS for n in n_neg]
        best_key: tuple[float, ...] | None = None
        # The strictest point is the fallback; when even it breaks the target (a negative whose gate values are all
        # at the top of the grid), it is returned anyway and its measured false injection rate shows it.
        best_cell = len(hits) - 1
        for cell in range(len(hits)):
            rates = [negs[g][cell] / n_neg[g] if n_neg[g] else 0.0 for g in range(n_groups)]
            if any(negs[g][cell] > allowed[g] for g in range(n_groups)):
                continue
            # most hits, then the lowest worst-group and overall FIR, then the strictest thresholds
            key = (hits[cell], -max(rates), -rates[0], cell % self.size, (cell // self.size) % self.size, cell)
            if best_key is None or key > best_key:
                best_key, best_cell = key, cell
        return self.thresholds(best_cell)


def _union(
    boxes: list[tuple[float, float, float]], cell: Callable[[tuple[float, float, float]], int]
) -> list[tuple[int, int]]:
    """Signed histogram cells whose suffix sums count 1 inside the union of the boxes and 0 outside
    (inclusion-exclusion over the boxes' intersections, each the componentwise minimum)."""
    out: list[tuple[int, int]] = []
    for size in range(1, len(boxes) + 1):
        sign = 1 if size % 2 else -1
        for chosen in itertools.combinations(boxes, size):
            corner = (min(b[0] for b in chosen), min(b[1] for b in chosen), min(b[2] for b in chosen))
            out.append((cell(corner), sign))
    return out


def _summed(arrays: list[list[int]]) -> list[int]:
    if len(arrays) == 1:
        return arrays[0]
    return [sum(values) for values in zip(*arrays, strict=True)]


def operating_point(
    grid: _Grid, points: Sequence[CasePoint], target: float, fitted_one: Callable[[], None] = lambda: None
) -> OperatingPoint:
    """Fit at `target` on all cases, and cross-validate: each fold measured at thresholds fitted on the others.
    fitted_one: called after each fit (1 + one per fold)."""
    fitted = grid.fit(target)
    fitted_one()
    each_fold: list[Thresholds] = []
    for f in range(grid.folds if grid.folds > 1 else 0):
        each_fold.append(grid.fit(target, leave_out=f))
        fitted_one()
    fold_fits = tuple(each_fold) or (fitted,)
    held_out = [(p, fold_fits[p.fold] if grid.folds > 1 else fitted) for p in points]
    cv = metrics_of(p.outcome(t) for p, t in held_out)  # each case at its own fold's fit
    return OperatingPoint(target, fitted, measure(points, fitted), cv, fold_fits, held_out=grid.folds > 1)


def calibrate(
    points: Sequence[CasePoint],
    current: RecallSettings,
    *,
    target_fir: float = 0.05,
    folds: int = 5,
    step: float = 0.05,
    targets: Sequence[float] = DEFAULT_TARGETS,
    progress: Progress | None = None,
) -> Calibration:
    """Fit at `target_fir` and at each of `targets` (the trade-off), all cross-validated over `folds` folds.
    progress(done, total): the fits made (one per target, and one per fold and target), from 0 before the grid is
    built (with many slices and a fine step, the grid and the fits take a minute)."""
    if not points:
        raise CairnError("no cases to calibrate on")
    if not 0 <= target_fir <= 1:
        raise CairnError(f"--target-fir must be between 0 and 1, not {target_fir:g}")
    if folds < 1:
        raise CairnError("--folds must be at least 1")
    if not any(p.positive for p in points) or all(p.positive for p in points):
        raise CairnError("calibration needs positive cases (expect: [ids]) and negative ones (expect: [])")
    points = [p if p.fold < folds else dataclasses.replace(p, fold=p.fold % folds) for p in points]
    wanted = sorted({*targets, target_fir})
    total = len(wanted) * (1 + (folds if folds > 1 else 0))
    done = 0

    def fitted_one() -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, total)

    if progress:
        progress(0, total)
    grid = _Grid(points, step, folds)
    now = Thresholds(current.min_lead, current.min_coverage, current.min_margin)
    curve = tuple(operating_point(grid, points, t, fitted_one) for t in wanted)
    best = next(p for p in curve if p.target_fir == target_fir)
    return Calibration(len(points), folds, step, now, measure(points, now), best, curve)


# -- cairn.toml ---------------------------------------------------------------------------------------------------


def write_thresholds(vault_root: Path, thresholds: Thresholds) -> Path:
    """Set min_lead, min_coverage and min_margin in cairn.toml's [recall] table, leaving every other line as it is
    (`cairn.config.write_recall_settings`)."""
    return write_recall_settings(vault_root, thresholds.to_dict())
