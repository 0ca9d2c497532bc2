"""The word gates refitted with a dev suite of lesson cards and agent prompts (`wtfjs-agent`) among those fitted on.

    .venv/bin/python -m benchmarks.lesson_fit dump       # 50 s: every case's admissible cards (confidence_study's dump)
    .venv/bin/python -m benchmarks.lesson_fit cv         # leave one fittable suite out; the held-out suites once

Until now the thresholds (min_lead, min_coverage, min_margin) were fitted on the three dev suites of ../shared/bench,
whose cards are a StackExchange thread and two kinds of command page; none is a team's lesson with an agent's
prompt, the kind issue 16's held-out suite is. `benchmarks/suites/wtfjs-agent` (written for this: its SOURCE.md) is
such a suite, and fittable. `cv` fits the three thresholds on a grid (the round-3 protocol: the most Injection@1,
each suite's share summed, with the false injection rate at or under `--fit-fir` on every suite and slice fitted
on; ties to the strictest point), leaving each fittable suite out in turn, and reports the suite left out; then
the fit on all of them, measured on the template vault and wtfpython-agent (never fitted on). Decisions are
replayed from the dump exactly as recall makes them (`confidence_study.boxes`: groups and the name relief).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from benchmarks.confidence_study import boxes, gates_dump
from benchmarks.recall_suites import SUITES, TEMPLATE, WORK

LESSON = "wtfjs-agent"
HELD = (TEMPLATE, "wtfpython-agent")
FITTABLE = (*SUITES, LESSON)
DUMP = WORK / "gates-lesson.json"
LEADS = [round(0.01 * i, 2) for i in range(0, 46)]
COVERS = [round(0.02 * i, 2) for i in range(0, 36)]
MARGINS = [round(0.025 * i, 3) for i in range(0, 29)]
SHIPPED = (0.24, 0.38, 0.275)


def _grid_hits(cases: list[dict[str, Any]]) -> Any:
    """cases x grid booleans: whether a case injects (a positive: its right first card) at each grid point."""
    import numpy as np

    lead, cover, margin = np.array(LEADS), np.array(COVERS), np.array(MARGINS)
    out = np.zeros((len(cases), len(LEADS), len(COVERS), len(MARGINS)), bool)
    for i, case in enumerate(cases):
        for a, b, c in boxes(case, 0.7):
            out[i] |= (a >= lead)[:, None, None] & (b >= cover)[None, :, None] & (c >= margin)[None, None, :]
    return out


class Suite:
    """One suite's cases as grids: injected right first cards (positives), and injections per slice (negatives)."""

    def __init__(self, cases: list[dict[str, Any]]) -> None:
        import numpy as np

        self.n_pos = sum(1 for c in cases if c["positive"])
        pos = [c for c in cases if c["positive"] and c["hits"] and c["hits"][0]]
        self.hits = _grid_hits(pos).sum(0, dtype=np.int32)
        self.false: dict[str, tuple[Any, int]] = {}
        negatives = [c for c in cases if not c["positive"]]
        for name in ("all", *sorted({c["slice"] for c in negatives if c["slice"]})):
            group = [c for c in negatives if name == "all" or c["slice"] == name]
            self.false[name] = (_grid_hits(group).sum(0, dtype=np.int32), len(group))
        self.pos_by_slice = {
            name: sum(1 for c in cases if c["positive"] and (name == "all" or c["slice"] == name))
            for name in self.false
        }
        self._pos_cases = pos

    def ok(self, fir: float) -> Any:
        import numpy as np

        good = np.ones(self.hits.shape, bool)
        for count, n in self.false.values():
            good &= count <= fir * n + 1e-9
        return good

    def at(self, point: tuple[float, float, float]) -> dict[str, tuple[float, float]]:
        """slice -> (Injection@1, FIR) at a grid point."""
        i, j, k = LEADS.index(point[0]), COVERS.index(point[1]), MARGINS.index(point[2])
        out = {}
        for name, (count, n) in self.false.items():
            pos = self._pos_cases if name == "all" else [c for c in self._pos_cases if c["slice"] == name]
            hits = sum(
                any(a >= point[0] and b >= point[1] and c >= point[2] for a, b, c in boxes(case, 0.7)) for case in pos
            )
            out[name] = (hits / max(self.pos_by_slice[name], 1), float(count[i, j, k]) / max(n, 1))
        return out


def fit(suites: list[Suite], fir: float) -> tuple[float, float, float]:
    import numpy as np

    ok = np.ones(suites[0].hits.shape, bool)
    share = np.zeros(suites[0].hits.shape)
    for s in suites:
        ok &= s.ok(fir)
        share += s.hits / max(s.n_pos, 1)
    share = np.where(ok, np.round(share, 9), -1.0)
    best = share.max()
    # ties to the strictest point: the highest lead, then coverage, then margin
    idx = np.argwhere(share == best)
    i, j, k = max(map(tuple, idx))
    return LEADS[i], COVERS[j], MARGINS[k]


def _cells(suite: Suite, point: tuple[float, float, float]) -> str:
    return "; ".join(f"{name} {inj:.3f} / {fir:.3f}" for name, (inj, fir) in suite.at(point).items())


def cv(fir: float) -> None:
    data = json.loads(DUMP.read_text())
    suites = {name: Suite(data[name]) for name in (*FITTABLE, *HELD)}
    print(f"fit target FIR {fir} on every suite and slice fitted on; cells: slice Injection@1 / FIR")
    print("| fitted on | thresholds | measured on | shipped (0.24 / 0.38 / 0.275) | fitted |")
    print("|---|---|---|---|---|")

    def row(fitted: str, point: tuple[float, float, float], name: str) -> None:
        shipped, fitted_cells = _cells(suites[name], SHIPPED), _cells(suites[name], point)
        print(f"| {fitted} | {point[0]:g} / {point[1]:g} / {point[2]:g} | {name} | {shipped} | {fitted_cells} |")

    for left in FITTABLE:
        point = fit([suites[n] for n in FITTABLE if n != left], fir)
        row("the others", point, left)
    point = fit([suites[n] for n in FITTABLE], fir)
    for name in (*FITTABLE, *HELD):
        row("all four", point, name)
    point = fit([suites[n] for n in SUITES], fir)
    row("the three dev suites", point, LESSON)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("dump", "cv"))
    parser.add_argument("--fit-fir", type=float, default=0.04)
    args = parser.parse_args(argv)
    if args.command == "dump":
        gates_dump(None, DUMP, (*FITTABLE, *HELD))
    else:
        cv(args.fit_fir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
