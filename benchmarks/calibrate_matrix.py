"""Thresholds calibrated on each card suite and measured on the others: the 3x3 table of RESULTS.md.

Run from the repository root:
    .venv/bin/python -m benchmarks.calibrate_matrix                    # target FIR 0.05, markdown tables
    .venv/bin/python -m benchmarks.calibrate_matrix --target 0.05 --target 0.025 --verify
    .venv/bin/python -m benchmarks.calibrate_matrix --json

For each suite (`benchmarks.recall_suites` builds them as git vaults in benchmarks/.work/), `cairn.quality.calibrate.gather`
runs recall once per case with the gates open; `cairn.quality.calibrate.calibrate` fits (min_lead, min_coverage,
min_margin) on that suite (Injection@1 at FIR <= target overall and per slice, 5-fold cross-validated), and the
fitted thresholds are replayed on the other suites. Each cell: Injection@1 / FIR / the worst slice's FIR. The
diagonal cell is the cross-validated figure (held-out folds of the suite fitted on).

Then leave-one-suite-out: thresholds fitted on two suites pooled (FIR <= target on each suite's slices) and
measured on the third; and the shipped defaults on every suite. `--verify` re-runs `cairn.quality.evaluate.evaluate`
(the code of `cairn eval`) with every fitted setting and checks the replayed figures agree exactly.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from typing import TYPE_CHECKING, Protocol

from benchmarks.recall_suites import SUITES, WORK, prepare

if TYPE_CHECKING:
    from cairn.config import RecallSettings
    from cairn.hot.vault import Vault
    from cairn.quality.calibrate import CasePoint, Thresholds

    Gathered = tuple[list[CasePoint], RecallSettings, Vault]


class Measure(Protocol):
    """What a cell shows of `cairn.quality.calibrate.measure`'s result."""

    @property
    def injection_at_1(self) -> float: ...
    @property
    def false_injection_rate(self) -> float: ...
    @property
    def worst_fir(self) -> float: ...


SHORT = {"stackfaq-en-dev": "stackfaq-en", "tldr-zh-dev": "tldr-zh", "tldr-en-dev": "tldr-en"}


def gather_all(suites: list[str]) -> dict[str, Gathered]:
    from cairn.hot.settings import settings_of
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer
    from cairn.quality import calibrate
    from cairn.quality.evaluate import load_cases

    out: dict[str, Gathered] = {}
    for suite in suites:
        vault = find_vault(prepare(suite))
        indexer.build_index(vault)
        cases = load_cases(vault.root / "cases.jsonl")
        started = time.perf_counter()
        with indexer.open_index(vault) as index:
            settings = settings_of(index)
            points = calibrate.gather(index, cases, settings=settings)
        seconds = time.perf_counter() - started
        print(f"# {suite}: {len(cases)} cases gathered in {seconds:.1f} s", file=sys.stderr)
        out[suite] = (points, settings, vault)
    return out


def cell(m: Measure) -> str:
    return f"{m.injection_at_1:.3f} / {m.false_injection_rate:.3f} / {m.worst_fir:.3f}"


def verify(vault: Vault, settings: RecallSettings, thresholds: Thresholds, replayed: Measure) -> str:
    """Run the real eval at these thresholds; return '' when it agrees with the replay, else what differs."""
    from cairn.index import build as indexer
    from cairn.quality.evaluate import evaluate, load_cases

    t = thresholds
    s = dataclasses.replace(settings, min_lead=t.min_lead, min_coverage=t.min_coverage, min_margin=t.min_margin)
    cases = load_cases(vault.root / "cases.jsonl")
    with indexer.open_index(vault) as index:
        report = evaluate(index, cases, settings=s)
    got = (report.overall.injection_at_1, report.overall.false_injection_rate)
    want = (replayed.injection_at_1, replayed.false_injection_rate)
    return "" if got == want else f"eval {got} vs replay {want}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", action="append", type=float, help="Target FIR (repeatable; default 0.05).")
    parser.add_argument("--step", type=float, default=0.05)
    parser.add_argument("--verify", action="store_true", help="Check every replayed figure with cairn eval's code.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("CAIRN_CACHE_DIR", str(WORK / "cache-calibrate"))
    from cairn.quality import calibrate

    data = gather_all(list(SUITES))
    results: dict[str, object] = {}
    problems: list[str] = []
    for target in args.target or [0.05]:
        print(f"\n## Target FIR <= {target:g}\n")
        header = "| fitted on | thresholds (score / coverage / margin) | " + " | ".join(SHORT[s] for s in SUITES) + " |"
        print("Each cell: Injection@1 / FIR / worst slice FIR. Diagonal: cross-validated on the suite itself.\n")
        print(header)
        print("|---|---|" + "---|" * len(SUITES))
        rows: dict[str, object] = {}
        for fit_suite in SUITES:
            points, settings, vault = data[fit_suite]
            result = calibrate.calibrate(points, settings, target_fir=target, step=args.step, targets=())
            t = result.best.thresholds
            cells = {}
            for other in SUITES:
                if other == fit_suite:
                    m = result.best.cross_validated
                else:
                    m = calibrate.measure(data[other][0], t)
                    if args.verify:
                        diff = verify(data[other][2], data[other][1], t, m)
                        if diff:
                            problems.append(f"{fit_suite} -> {other}: {diff}")
                cells[other] = m
            print(
                f"| {SHORT[fit_suite]} | {t.min_lead:g} / {t.min_coverage:g} / {t.min_margin:g} | "
                + " | ".join(("**" + cell(cells[s]) + "** (cv)") if s == fit_suite else cell(cells[s]) for s in SUITES)
                + " |"
            )
            rows[fit_suite] = {"thresholds": t.to_dict(), "cells": {s: m.to_dict() for s, m in cells.items()}}
        # leave one suite out: fit on the other two pooled, each suite's slices constrained separately
        for held in SUITES:
            pooled = [
                dataclasses.replace(p, slice=f"{SHORT[s]}/{p.slice or 'all'}", id=f"{s}/{p.id}")
                for s in SUITES
                if s != held
                for p in data[s][0]
            ]
            result = calibrate.calibrate(pooled, data[held][1], target_fir=target, step=args.step, targets=())
            t = result.best.thresholds
            cells = {s: calibrate.measure(data[s][0], t) for s in SUITES}
            label = "+".join(SHORT[s] for s in SUITES if s != held)
            print(
                f"| {label} | {t.min_lead:g} / {t.min_coverage:g} / {t.min_margin:g} | "
                + " | ".join(cell(cells[s]) if s == held else f"({cell(cells[s])})" for s in SUITES)
                + " |"
            )
            rows[f"without {held}"] = {"thresholds": t.to_dict(), "cells": {s: m.to_dict() for s, m in cells.items()}}
        results[str(target)] = rows
    shipped = data[SUITES[0]][1]
    t = calibrate.Thresholds(shipped.min_lead, shipped.min_coverage, shipped.min_margin)
    print(f"\nShipped defaults ({t.min_lead:g} / {t.min_coverage:g} / {t.min_margin:g}):")
    for s in SUITES:
        m = calibrate.measure(data[s][0], t)
        print(f"- {SHORT[s]}: {cell(m)}")
        results.setdefault("shipped", {})[s] = m.to_dict()  # type: ignore[index]
    if args.json:
        print(json.dumps(results, indent=2))
    if problems:
        print("\nREPLAY DISAGREES WITH EVAL:\n" + "\n".join(problems))
        return 1
    if args.verify:
        print("\nEvery replayed cross-suite figure agrees with cairn eval's code.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
