"""The frontier: Injection@1 against the false injection rate along one dial of strictness, per suite and slice.

Issue 16 asks, where a target is not reached, for the frontier measured: what Injection@1 each suite and slice gets
at each false injection rate, with and without the semantic extra. Here the dial scales the three word gates that
ship together (`min_lead`, `min_coverage`, `min_margin` of `cairn.config`) by one factor s; s = 1 is what ships,
s < 1 looser, s > 1 stricter. Everything else (salience, related-card groups, the name relief, the semantic rules and
their constants) stays as shipped, so each point is the decisions `cairn eval` (and so the hook) would make with
those three thresholds. The semantic rows use the similarities the hook gets (`benchmarks.recall_suites
--semantic`: the 50 closest cards' z-scores), computed once per suite.

Nothing is fitted here: a point is a measurement, and s is one dial of many (RESULTS.md has the fits: each suite's
own best thresholds are a ceiling above this line, not far above it). The table says, per suite and slice, the
most Injection@1 any point reaches with its false injection rate at or under 5% (on that slice alone), at which s.

Run from the repository root:
    .venv/bin/python -m benchmarks.frontier                       # dev suites, template, held-out suites; both ways
    .venv/bin/python -m benchmarks.frontier --lexical             # without the extra only
    .venv/bin/python -m benchmarks.frontier --suite stackfaq-en-dev --scales 0.8,1,1.2 --json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import Any

from benchmarks.recall_suites import HELD_OUT, SUITES, TEMPLATE, WORK, cases_file, prepare

SCALES = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0)
FIR_PROMISE = 0.05
GATES = ("min_lead", "min_coverage", "min_margin")


def scaled(settings: Any, s: float) -> Any:
    """`settings` with the three word gates times s (coverage at most 1)."""
    return dataclasses.replace(
        settings,
        min_lead=settings.min_lead * s,
        min_coverage=min(1.0, settings.min_coverage * s),
        min_margin=min(1.0, settings.min_margin * s),
    )


def curve(suite: str, scales: tuple[float, ...], semantic: bool) -> dict[str, Any]:
    """{"shipped": the three thresholds, "points": {s: {slice: (Inj@1, FIR, n_pos, n_neg)}}} for one suite."""
    from cairn.hot.settings import settings_of
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer
    from cairn.quality.evaluate import evaluate, load_cases

    vault = find_vault(prepare(suite))
    indexer.build_index(vault)
    cases = load_cases(cases_file(suite, vault.root))
    points: dict[float, dict[str, tuple[float, float, int, int]]] = {}
    with indexer.open_index(vault) as index:
        shipped = settings_of(index)
        sims = None
        if semantic:
            from cairn.semantic.batch import similarities_for

            prompts = [case.query for case in cases]
            sims = similarities_for(index.path, prompts, top=50, z=True, cache_dir=WORK / "semantic")
        for s in scales:
            data = evaluate(index, cases, settings=scaled(shipped, s), semantic=sims).to_dict()
            rows = {"all": data, **data["by_slice"]}
            points[s] = {
                name: (m["injection@1"], m["false_injection_rate"], m["n_pos"], m["n_neg"]) for name, m in rows.items()
            }
    return {"shipped": {g: getattr(shipped, g) for g in GATES}, "points": points}


def best_under_promise(points: dict[float, dict[str, Any]], slice_name: str) -> tuple[float, float, float] | None:
    """(s, Inj@1, FIR) of the point with the most Injection@1 on this slice at FIR <= 5% there (ties: stricter)."""
    ok = [(m[slice_name][0], s, m[slice_name][1]) for s, m in points.items() if m[slice_name][1] <= FIR_PROMISE + 1e-9]
    if not ok:
        return None
    inj, s, fir = max(ok, key=lambda t: (round(t[0], 6), t[1]))
    return s, inj, fir


def report(results: dict[str, dict[str, Any]], scales: tuple[float, ...]) -> str:
    lines = []
    for mode, by_suite in results.items():
        lines.append(f"## {mode}: Injection@1 / false injection rate at s x (min_lead, min_coverage, min_margin)")
        lines.append("")
        lines.append("| suite | slice | " + " | ".join(f"s={s:g}" for s in scales) + " | best at FIR <= 5% (s) |")
        lines.append("|---|---|" + "---|" * (len(scales) + 1))
        for suite, data in by_suite.items():
            points = data["points"]
            for slice_name in points[scales[0]]:
                cells = []
                for s in scales:
                    inj, fir, _pos, _neg = points[s][slice_name]
                    cell = f"{inj:.3f} / {fir:.3f}"
                    cells.append(f"**{cell}**" if s == 1.0 else cell)
                best = best_under_promise(points, slice_name)
                tail = f"{best[1]:.3f} / {best[2]:.3f} ({best[0]:g})" if best else "none"
                lines.append(f"| {suite} | {slice_name} | " + " | ".join(cells) + f" | {tail} |")
        shipped = next(iter(by_suite.values()))["shipped"]
        lines.append("")
        lines.append("s = 1 (bold) ships: " + ", ".join(f"{g} {v:g}" for g, v in shipped.items()) + ".")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--suite", action="append", choices=(*SUITES, *HELD_OUT, TEMPLATE), help="Only this suite (repeatable)."
    )
    parser.add_argument("--scales", help=f"Comma-separated factors (default {','.join(map(str, SCALES))}).")
    parser.add_argument("--lexical", action="store_true", help="Only without the extra.")
    parser.add_argument("--json", action="store_true", help="Print JSON.")
    args = parser.parse_args(argv)
    os.environ["CAIRN_CACHE_DIR"] = str(WORK / "cache")
    scales = tuple(float(x) for x in args.scales.split(",")) if args.scales else SCALES
    if 1.0 not in scales:
        scales = tuple(sorted((*scales, 1.0)))
    suites = list(args.suite or (*SUITES, TEMPLATE, *HELD_OUT))
    modes = {"without the extra": False}
    if not args.lexical:
        from cairn.semantic.encoder import available

        if available():
            modes["with the extra"] = True
        else:
            print("the semantic extra is not installed: measuring without it only", file=sys.stderr)
    results: dict[str, dict[str, Any]] = {}
    for mode, semantic in modes.items():
        results[mode] = {}
        for suite in suites:
            print(f"{mode}: {suite} ...", file=sys.stderr, flush=True)
            results[mode][suite] = curve(suite, scales, semantic)
    if args.json:
        print(json.dumps(results, indent=1, default=str))
    else:
        print(report(results, scales))
    return 0


if __name__ == "__main__":
    sys.exit(main())
