"""Layered vaults, measured: the three dev suites configured together, every suite's cases asked of all three.

Run from the repository root:
    .venv/bin/python -m benchmarks.layered            # a table: each suite alone vs the three layered
    .venv/bin/python -m benchmarks.layered --json

Each suite of ../shared/bench (stackfaq-en-dev, tldr-zh-dev, tldr-en-dev; see `benchmarks.recall_suites`) is its own
git vault with its own index and stored thresholds. A case is served twice through `cairn.hot.serve.serve_layers`,
the function the hook calls: from its own suite's vault alone, and from the three vaults at once, in the order
above (the precedence a user configuration would give; the figures are printed for the other orders with
`--orders`). Injection@1 counts a positive whose first given card is an expected card of its own suite; the false
injection rate counts negatives (of all three suites) given any card, from any vault. "same lesson" also counts a
first card of another vault holding the same lesson as an expected card (the same folded name or summary:
tldr-zh and tldr-en hold the same tldr pages, and the merge gives a lesson once, from the vault listed first).
"foreign" counts positives whose first card came from another suite's vault. What the issue asks (issue 14): FIR <= 5% on the negatives of all
three, and Injection@1 no lower than each suite alone.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from typing import Any

from benchmarks.recall_suites import SUITES, WORK, cases_file, prepare


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--orders", action="store_true", help="also every other precedence order of the three")
    args = parser.parse_args(argv)
    os.environ["CAIRN_CACHE_DIR"] = str(WORK / "cache")

    from cairn.hot.index import IndexReader
    from cairn.hot.paths import index_path
    from cairn.hot.serve import Layer, lesson_keys, serve_layers
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer
    from cairn.quality.evaluate import load_cases
    from cairn.quality.metrics import Outcome, metrics_of

    roots = {}
    cases = {}
    for suite in SUITES:
        vault = find_vault(prepare(suite))
        indexer.build_index(vault)
        roots[suite] = str(vault.root)
        cases[suite] = load_cases(cases_file(suite, vault.root))
    readers = {suite: IndexReader(index_path(roots[suite])) for suite in SUITES}

    def given(layers: list[Layer], query: str) -> list[tuple[str, tuple[str, str]]]:
        return [(p.qid, lesson_keys(p.candidate.card)) for p in serve_layers(layers, query).given]

    def measure(order: tuple[str, ...]) -> dict[str, Any]:
        layered = [Layer(name, roots[name], readers[name]) for name in order]
        out: dict[str, Any] = {"order": list(order), "suites": {}}
        all_neg_alone: list[Outcome] = []
        all_neg_layered: list[Outcome] = []
        started = time.perf_counter()
        n_asked = 0
        for suite in SUITES:
            alone = [Layer(None, roots[suite], readers[suite])]
            outcomes_alone: list[Outcome] = []
            outcomes_layered: list[Outcome] = []
            outcomes_lesson: list[Outcome] = []
            foreign = 0
            for case in cases[suite]:
                expect = set(case.expect)
                mine = [qid for qid, _ in given(alone, case.query)]
                both = given(layered, case.query)
                n_asked += 1
                qualified = {f"{suite}:{e}" for e in expect}
                keys = [lesson_keys(card) for card in map(readers[suite].card_by_id, expect) if card is not None]
                names = {k[0] for k in keys}
                summaries = {k[1] for k in keys}
                outcomes_alone.append(Outcome(case.slice, case.positive, None, tuple(i in expect for i in mine)))
                outcomes_layered.append(
                    Outcome(case.slice, case.positive, None, tuple(i in qualified for i, _ in both))
                )
                same = tuple(i in qualified or k[0] in names or k[1] in summaries for i, k in both)
                outcomes_lesson.append(Outcome(case.slice, case.positive, None, same))
                if case.positive and both and not both[0][0].startswith(f"{suite}:"):
                    foreign += 1
            m_alone = metrics_of(outcomes_alone)
            m_layered = metrics_of(outcomes_layered)
            m_lesson = metrics_of(outcomes_lesson)
            all_neg_alone += [o for o in outcomes_alone if not o.positive]
            all_neg_layered += [o for o in outcomes_layered if not o.positive]
            out["suites"][suite] = {
                "n_pos": m_alone.n_pos,
                "n_neg": m_alone.n_neg,
                "alone": {"injection@1": m_alone.injection_at_1, "fir": m_alone.false_injection_rate},
                "layered": {
                    "injection@1": m_layered.injection_at_1,
                    "injection@1_same_lesson": m_lesson.injection_at_1,
                    "fir": m_layered.false_injection_rate,
                },
                "worst_slice_fir": {"alone": m_alone.worst_fir, "layered": m_layered.worst_fir},
                "foreign_first": round(foreign / max(m_alone.n_pos, 1), 4),
            }
        neg_alone = metrics_of(all_neg_alone)
        neg_layered = metrics_of(all_neg_layered)
        out["all_negatives"] = {
            "n": neg_alone.n_neg,
            "fir_alone": neg_alone.false_injection_rate,
            "fir_layered": neg_layered.false_injection_rate,
        }
        out["ms_per_case"] = round(1000 * (time.perf_counter() - started) / max(n_asked, 1), 2)
        return out

    orders = list(itertools.permutations(SUITES)) if args.orders else [SUITES]
    results = [measure(tuple(order)) for order in orders]
    for reader in readers.values():
        reader.close()
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for result in results:
        print(f"order: {' > '.join(result['order'])}  ({result['ms_per_case']} ms per case, alone + layered)")
        print(
            f"| {'suite':<16} | pos | neg | Inj@1 alone | Inj@1 layered | same lesson | FIR alone | FIR layered "
            f"| worst slice FIR alone / layered | foreign first |"
        )
        print("|" + "---|" * 10)
        for suite, s in result["suites"].items():
            print(
                f"| {suite:<16} | {s['n_pos']} | {s['n_neg']} | {s['alone']['injection@1']:.3f} | "
                f"{s['layered']['injection@1']:.3f} | {s['layered']['injection@1_same_lesson']:.3f} | "
                f"{s['alone']['fir']:.3f} | {s['layered']['fir']:.3f} | "
                f"{s['worst_slice_fir']['alone']:.3f} / {s['worst_slice_fir']['layered']:.3f} | "
                f"{s['foreign_first']:.3f} |"
            )
        n = result["all_negatives"]
        print(
            f"all {n['n']} negatives of the three suites: FIR alone {n['fir_alone']:.3f}, "
            f"layered {n['fir_layered']:.3f} (budget 0.050)"
        )
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
