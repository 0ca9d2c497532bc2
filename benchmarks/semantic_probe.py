"""Issue 16, round 21: two levers of the semantic channel for agent prompts, measured (neither taken).

    .venv/bin/python -m benchmarks.semantic_probe pick [--at 2.35,2.0,1.75,1.5]   # about 4 minutes
    .venv/bin/python -m benchmarks.semantic_probe ask                             # about 1 minute
    .venv/bin/python -m benchmarks.semantic_probe refused                         # about 20 seconds

With the extra, the never-fitted agent suites inject little more than the words alone (agent-lessons 0.256 words,
0.262 with the extra), under issue 16's 0.30 for its own agent suite. Two places where the channel could give more:

- `pick`: the semantic pick's threshold (`recall.SEMANTIC_PICK`, a z-gap plus the word lead, fitted on the three dev
  suites at 2.5% FIR per slice in round 6, before the lesson and agent suites existed), run lower on every suite:
  Injection@1 / FIR (worst slice) per suite at each value.
- `ask`: the prompt's vector from what it asks alone (its asking sentences, `tokens._asks`, and exception lines)
  instead of `encoder.question` (the prose less boilerplate, context kept), on the long slice's positives that say
  more than one thing (`tokens.prose_fragments`, the prompts the veto does not judge): how often the right card is
  the semantic first, and the median z-gap of those first cards over the second.
- `refused`: on the fittable agent suites' positives, with the extra, whether the right card is first by words (W)
  and by meaning (S), and injected (+) or not; and the gate that refused the right first cards by words.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from typing import Any

from benchmarks.recall_suites import HELD_OUT, LESSON_SUITES, SUITES, TEMPLATE, WORK, cases_file, prepare, run_suite

FITTABLE = (*SUITES, *LESSON_SUITES)


def pick(values: list[float]) -> None:
    from cairn.hot import recall

    shipped = recall.SEMANTIC_PICK
    suites = (*FITTABLE, *HELD_OUT, TEMPLATE)
    print("| SEMANTIC_PICK | " + " | ".join(suites) + " |")
    print("|---" * (len(suites) + 1) + "|")
    try:
        for value in values:
            recall.SEMANTIC_PICK = value
            cells = []
            for suite in suites:
                data = run_suite(suite, {}, semantic=True)
                worst = max(float(m["false_injection_rate"]) for m in data["by_slice"].values())
                cells.append(
                    f"{float(data['injection@1']):.3f} / {float(data['false_injection_rate']):.3f} ({worst:.3f})"
                )
            mark = " (shipped)" if value == shipped else ""
            print(f"| {value}{mark} | " + " | ".join(cells) + " |", flush=True)
    finally:
        recall.SEMANTIC_PICK = shipped


def ask_text(prompt: str) -> str:
    """What a prompt asks: its asking sentences (not boilerplate) and exception lines; `encoder.question` when no
    sentence asks."""
    from cairn.hot.tokens import (
        EXCEPTION,
        PROSE,
        _ask_label,
        _asks,
        _boilerplate,
        _sentence_ends,
        prompt_lines,
        tokenize,
    )
    from cairn.semantic.encoder import question

    kept: list[str] = []
    asked = False
    for kind, stripped in prompt_lines(prompt):
        if kind == EXCEPTION:
            kept.append(stripped)
        elif kind == PROSE:
            for sentence, end in _sentence_ends(stripped):
                tokens = tokenize(sentence)
                asking = _asks(sentence, end) or (end in ":：" and end != "" and _ask_label(sentence))
                if asking and tokens and not _boilerplate(sentence, tokens):
                    kept.append(sentence.strip())
                    asked = True
    return " ".join(kept) if asked else question(prompt)


def ask(suites: tuple[str, ...]) -> None:
    from cairn.hot.tokens import prose_fragments
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer
    from cairn.quality.evaluate import load_cases
    from cairn.semantic.batch import similarity_matrix

    print("| suite | long positives saying more than one thing | semantic first right: question | : ask alone |")
    print("|---|---|---|---|")
    for suite in suites:
        vault = find_vault(prepare(suite))
        indexer.build_index(vault)
        cases = [
            c
            for c in load_cases(cases_file(suite, vault.root))
            if c.slice == "long" and c.expect and len(prose_fragments(c.query)) >= 2
        ]
        if not cases:
            print(f"| {suite} | 0 | - | - |")
            continue
        with indexer.open_index(vault) as index:
            ids, whole = similarity_matrix(index.path, [c.query for c in cases], cache_dir=WORK / "semantic")
            _, asked = similarity_matrix(index.path, [ask_text(c.query) for c in cases], cache_dir=WORK / "semantic")

        print(f"| {suite} | {len(cases)} | {right_firsts(cases, ids, whole)} | {right_firsts(cases, ids, asked)} |")


def refused(suites: tuple[str, ...]) -> None:
    from collections import Counter

    from cairn.hot.recall import GATE_REASONS, recall
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer
    from cairn.quality.evaluate import load_cases
    from cairn.semantic.batch import similarities_for

    kinds = ("WS+", "WS-", "Ws+", "Ws-", "wS+", "wS-", "ws+", "ws-")
    print("| suite | " + " | ".join(kinds) + " | right first by words, refused: by reason |")
    print("|---" * (len(kinds) + 2) + "|")
    for suite in suites:
        vault = find_vault(prepare(suite))
        indexer.build_index(vault)
        cases = [c for c in load_cases(cases_file(suite, vault.root)) if c.expect]
        counts: Counter[str] = Counter()
        reasons: Counter[str] = Counter()
        with indexer.open_index(vault) as index:
            sims = similarities_for(index.path, [c.query for c in cases], top=50, z=True, cache_dir=WORK / "semantic")
            for case, similarity in zip(cases, sims, strict=True):
                result = recall(index, case.query, semantic=similarity)
                admitted = [c for c in result.candidates if c.reason in GATE_REASONS]
                by_words = bool(admitted) and admitted[0].card.id in case.expect
                by_meaning = bool(similarity) and max(similarity, key=similarity.__getitem__) in case.expect
                injected = bool(result.injected) and result.injected[0].card.id in case.expect
                counts[("W" if by_words else "w") + ("S" if by_meaning else "s") + ("+" if injected else "-")] += 1
                if by_words and not injected:
                    reasons[str(admitted[0].reason)] += 1
        told = ", ".join(f"{reason} {n}" for reason, n in reasons.most_common())
        print(f"| {suite} | " + " | ".join(str(counts[k]) for k in kinds) + f" | {told} |")


def right_firsts(cases: list[Any], ids: list[str], matrix: Any) -> str:
    """How many cases have an expected card first in `matrix` (cases x cards), and those first cards' median z-gap
    over the second."""
    import numpy as np

    gaps = []
    for case, row in zip(cases, matrix, strict=True):
        z = (row - row.mean()) / (row.std() + 1e-9)
        first, second = np.argsort(-row)[:2]
        if ids[first] in case.expect:
            gaps.append(float(z[first] - z[second]))
    median = statistics.median(gaps) if gaps else 0.0
    return f"{len(gaps)} (median z-gap {median:.2f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    at = sub.add_parser("pick", help="the semantic pick's threshold on every suite")
    at.add_argument("--at", default="2.35,2.0,1.75,1.5", help="comma-separated values of recall.SEMANTIC_PICK")
    sub.add_parser("ask", help="encoding what a long prompt asks alone")
    sub.add_parser("refused", help="where the fittable agent suites' right first cards are refused")
    args = parser.parse_args(argv)
    if args.mode == "pick":
        pick([float(v) for v in args.at.split(",")])
    elif args.mode == "ask":
        ask((*LESSON_SUITES, *HELD_OUT))
    else:
        refused(LESSON_SUITES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
