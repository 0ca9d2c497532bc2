"""Issue 16, round 20: the own words relief (`gates.said_lead`), its gap fitted leaving one fittable suite out.

    .venv/bin/python -m benchmarks.said_study [--semantic]     # about 5 minutes (10 with the extra)
    .venv/bin/python -m benchmarks.said_study --separation     # how well the share tells right first cards apart
    .venv/bin/python -m benchmarks.said_study --floor          # the share as a floor under injected cards (round 21)

A card's lead is counted `gates.NAMED_LEAD` times when the prompt says a larger share of the card's own words (its
name and summary) than of the next admissible card's, by at least `gates.SAID_GAP`. This runs every suite at each
gap of `GAPS` (and with the relief off), then fits the gap on the fittable suites (the dev suites and the lesson
suites, `recall_suites.LESSON_SUITES`) leaving one out: the gap injecting most (Injection@1 summed) with every slice
of each suite fitted on at or under `FIR`, reported on the suite left out. The never-fitted suites (agent suites,
the template vault) and the follow-up prompts are shown at every gap and at the shipped one.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from benchmarks.recall_suites import HELD_OUT, LESSON_SUITES, SUITES, TEMPLATE, cases_file, prepare, run_suite

FITTABLE = (*SUITES, *LESSON_SUITES)
NEVER_FITTED = (*HELD_OUT, TEMPLATE)
GAPS = (math.inf, 0.0, 0.05, 0.075, 0.1, 0.125, 0.15, 0.2, 0.3)  # inf: the relief off
FIR = 0.05

Rates = dict[str, tuple[float, float]]  # slice ("all", "long", "short") -> (Injection@1, false injection rate)


def rates(data: dict[str, Any]) -> Rates:
    out = {"all": (float(data["injection@1"]), float(data["false_injection_rate"]))}
    for name, m in data["by_slice"].items():
        out[name] = (float(m["injection@1"]), float(m["false_injection_rate"]))
    return out


def measure(semantic: bool) -> tuple[dict[float, dict[str, Rates]], dict[float, dict[str, float]]]:
    """Every suite's rates at every gap, and the follow-up prompts' false injection rate in each suite's vault."""
    from cairn.hot import gates

    shipped = gates.SAID_GAP
    table: dict[float, dict[str, Rates]] = {}
    followups: dict[float, dict[str, float]] = {}
    try:
        for gap in GAPS:
            gates.SAID_GAP = gap
            table[gap] = {}
            followups[gap] = {}
            for suite in (*FITTABLE, *NEVER_FITTED):
                table[gap][suite] = rates(run_suite(suite, {}, semantic=semantic))
                if suite in SUITES or suite == TEMPLATE:
                    data = run_suite(suite, {}, semantic=semantic, followups=True)
                    followups[gap][suite] = float(data["false_injection_rate"])
            print(f"  gap {gap}: done", file=sys.stderr)
    finally:
        gates.SAID_GAP = shipped
    return table, followups


def fit(table: dict[float, dict[str, Rates]], suites: tuple[str, ...]) -> float:
    """The gap injecting most over `suites` with every slice of each at or under FIR (the relief off if none)."""
    best, best_total = math.inf, -1.0
    for gap, by_suite in table.items():
        if any(fir > FIR for suite in suites for _, fir in by_suite[suite].values()):
            continue
        total = sum(by_suite[suite]["all"][0] for suite in suites)
        if total > best_total + 1e-9:
            best, best_total = gap, total
    return best


def cell(r: Rates) -> str:
    slices = ", ".join(f"{name} {fir:.3f}" for name, (_, fir) in sorted(r.items()) if name != "all")
    return f"{r['all'][0]:.3f} / {r['all'][1]:.3f} ({slices})"


def auc(right: list[float], wrong: list[float]) -> float:
    """The chance a right case's value is above a wrong case's (ties count half): the area under the ROC curve."""
    if not right or not wrong:
        return math.nan
    ordered = sorted([(v, 1) for v in right] + [(v, 0) for v in wrong])
    rank_sum, at = 0.0, 0
    while at < len(ordered):  # mean ranks over runs of equal values
        end = at
        while end < len(ordered) and ordered[end][0] == ordered[at][0]:
            end += 1
        mean_rank = (at + 1 + end) / 2
        rank_sum += mean_rank * sum(label for _, label in ordered[at:end])
        at = end
    return (rank_sum - len(right) * (len(right) + 1) / 2) / (len(right) * len(wrong))


def separation(suites: tuple[str, ...]) -> None:
    """On the cases the gates refuse with the relief off (nothing injected), how well the first admissible card's
    own words share, and its lead, tell a right first card (an expected one) from a wrong one (AUC)."""
    from cairn.hot import gates
    from cairn.hot.recall import GATE_REASONS, recall, said_share
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer
    from cairn.quality.evaluate import load_cases

    shipped = gates.SAID_GAP
    gates.SAID_GAP = math.inf
    print("| suite | refused cases: right first / wrong first | AUC: own words share | AUC: lead |")
    print("|---|---|---|---|")
    try:
        for suite in suites:
            vault = find_vault(prepare(suite))
            indexer.build_index(vault)
            values: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
            with indexer.open_index(vault) as index:
                for case in load_cases(cases_file(suite, vault.root)):
                    result = recall(index, case.query, examine_all=True)
                    first = next((c for c in result.candidates if c.reason in GATE_REASONS), None)
                    if result.injected or first is None or result.weights is None:
                        continue
                    share = said_share(first.card, frozenset(result.weights.terms))
                    values[first.card.id in case.expect].append((share, first.lead))
            right, wrong = values[True], values[False]
            print(
                f"| {suite} | {len(right)} / {len(wrong)} | {auc([v[0] for v in right], [v[0] for v in wrong]):.2f} "
                f"| {auc([v[1] for v in right], [v[1] for v in wrong]):.2f} |"
            )
    finally:
        gates.SAID_GAP = shipped


FLOORS = (0.05, 0.08, 0.1, 0.12, 0.15, 0.2)


def floor(suites: tuple[str, ...]) -> None:
    """On the cases where a card is injected (words only, as shipped), the first injected card's own words share:
    how many right and wrong first injections a floor on it would refuse (round 21)."""
    from cairn.hot.recall import recall, said_share
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer
    from cairn.quality.evaluate import load_cases

    print(
        "| suite | injected first: right / wrong | "
        + " | ".join(f"floor {f}: right lost / wrong cut" for f in FLOORS)
        + " |"
    )
    print("|---" * (len(FLOORS) + 2) + "|")
    for suite in suites:
        vault = find_vault(prepare(suite))
        indexer.build_index(vault)
        shares: dict[bool, list[float]] = {True: [], False: []}
        with indexer.open_index(vault) as index:
            for case in load_cases(cases_file(suite, vault.root)):
                result = recall(index, case.query)
                if not result.injected or result.weights is None:
                    continue
                first = result.injected[0]
                shares[first.card.id in case.expect].append(said_share(first.card, frozenset(result.weights.terms)))
        right, wrong = shares[True], shares[False]
        cells = [f"{sum(v < f for v in right)} / {sum(v < f for v in wrong)}" for f in FLOORS]
        print(f"| {suite} | {len(right)} / {len(wrong)} | " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--semantic", action="store_true", help="with the optional extra's evidence")
    parser.add_argument(
        "--separation", action="store_true", help="only the AUC of the own words share and of the lead (a minute)"
    )
    parser.add_argument(
        "--floor", action="store_true", help="only the share as a floor under injected cards (round 21; a minute)"
    )
    args = parser.parse_args(argv)
    from cairn.hot import gates

    if args.floor:
        floor((*FITTABLE, *NEVER_FITTED))
        return 0
    if args.separation:
        separation((*FITTABLE, *NEVER_FITTED))
        return 0

    table, followups = measure(args.semantic)
    off = table[math.inf]
    print(
        f"Injection@1 / FIR (slices' FIR), the relief off -> at each gap{' (with the extra)' if args.semantic else ''}"
    )
    print("| suite | off | " + " | ".join(f"gap {g}" for g in GAPS if g != math.inf) + " |")
    print("|---" * (len(GAPS) + 1) + "|")
    for suite in (*FITTABLE, *NEVER_FITTED):
        cells = [f"{table[g][suite]['all'][0]:.3f} / {table[g][suite]['all'][1]:.3f}" for g in GAPS]
        print(f"| {suite} | " + " | ".join(cells) + " |")
    print("\nLeave one fittable suite out (fitted at FIR <= 5% on every slice of the others):")
    print("| suite left out | gap fitted | relief off | held out |")
    print("|---|---|---|---|")
    for suite in FITTABLE:
        gap = fit(table, tuple(s for s in FITTABLE if s != suite))
        print(f"| {suite} | {gap} | {cell(off[suite])} | {cell(table[gap][suite])} |")
    gap = fit(table, FITTABLE)
    print(f"\nFitted on all six: gap {gap} (shipped: {gates.SAID_GAP}). Never fitted, off -> shipped gap:")
    for suite in NEVER_FITTED:
        print(f"| {suite} | {cell(off[suite])} | {cell(table[gates.SAID_GAP][suite])} |")
    print("\nFollow-up prompts' false injection rate, off -> shipped gap:")
    for suite, fir in followups[math.inf].items():
        print(f"| {suite} | {fir:.3f} | {followups[gates.SAID_GAP][suite]:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
