"""Issue 16, round 19: do a prompt's words line up with a card's, token by token, in the encoder's own space?

    .venv/bin/python -m benchmarks.joint_study dump      # first: every case's candidates (needs the semantic extra)
    .venv/bin/python -m benchmarks.align_study dump      # each case's alignment to its candidates (about 2 min)
    .venv/bin/python -m benchmarks.align_study report    # how well it separates; the pick it would make, fitted
    .venv/bin/python -m benchmarks.joint_study cv --features aligned   # the learned gate with it

The encoder compares a prompt with a card as two mean-pooled vectors, so a card about the same product scores
high whatever is asked of it (round 17: "measure the distance between two points on google maps" against "create
a google maps link to a specific location"). Alignment keeps the tokens apart: the last hidden state of each token
of the prompt (`prompt_text`, the "query: " prefix and the special tokens left out) and of each of the card's
passages (`card_passages`), unit length; recall is the mean over the prompt's tokens of the best cosine with a
card token, precision the same from the card's side, F1 their harmonic mean (BERTScore, Zhang et al. 2020); a
card's alignment is that of its passage with the highest recall.

`dump` writes benchmarks/.work/align-<suite>.json: per case, for the first 3 admissible cards and the 3
semantically closest, {f1, prec, rec}; and the mean and spread of the prompt's F1 against 12 cards of the vault
drawn once (seed 7), a per-prompt baseline. And the vault's level, from its own cards: the median F1 of 150
pseudo-queries (seed 3; a card's name when it is a phrase, else its summary's first sentence) with the semantically
nearest other card.

`report`: (1) on the cases the agreement pick leaves (the first admissible card is also the semantic first,
nothing injected, not picked as shipped), the area under the ROC curve of each figure between the right card
(a positive case) and a negative case, per suite; (2) a third form of the agreement pick (inject that card when
its F1 reaches t, its lead l and its cosine gap g), fitted on the lesson suites, every slice of each suite fitted on
at or under 5% (or the shipped rate, if higher), measured on the others; (3) the same fitted leaving one fittable
suite out, measured on the one left out; (4) as (3), on F1 less the vault's level.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import random
import sys
from pathlib import Path
from typing import Any

from benchmarks.joint_study import FITTABLE, SHIPPED_POINT, agree_values, best_point, load, slice_rates
from benchmarks.recall_suites import WORK

SUITES = (*FITTABLE, "wtfpython-agent", "gitflight-agent", "k8sops-agent")
BASELINE_CARDS = 12
LEVEL_CARDS = 150
SECOND_GAP = 0.026  # recall.AGREE_CONFIRMED_GAP: the shipped pick's second form


def dump(suites: tuple[str, ...]) -> None:
    import re

    import frontmatter
    import numpy as np

    from cairn.quality.evaluate import load_cases
    from cairn.semantic.encoder import card_passages, prompt_text
    from cairn.semantic.quantized import QuantizedEngine

    engine = QuantizedEngine()
    skip = {True: len(engine.token_ids("", True)) - 1, False: len(engine.token_ids("", False)) - 1}

    def tokens(text: str, is_query: bool) -> Any:
        seq = engine.token_ids(text, is_query)
        h, _ = engine.embed([seq])
        (hidden,) = engine._session.run(None, {"h0": h.reshape(1, len(seq), engine.H)})
        vectors = np.asarray(hidden, dtype=np.float32)[0]
        kept = vectors[skip[is_query] : -1] if len(seq) > skip[is_query] + 1 else vectors
        return kept / np.linalg.norm(kept, axis=1, keepdims=True)

    def align(prompt: Any, passages: list[Any]) -> dict[str, float]:
        best = {"rec": -1.0, "prec": 0.0, "f1": 0.0}
        for passage in passages:
            cosines = prompt @ passage.T
            rec, prec = float(cosines.max(axis=1).mean()), float(cosines.max(axis=0).mean())
            if rec > best["rec"]:
                best = {"rec": round(rec, 4), "prec": round(prec, 4), "f1": round(2 * rec * prec / (rec + prec), 4)}
        return best

    cards: dict[Path, list[Any]] = {}
    heads: dict[Path, tuple[str, str]] = {}

    def card(path: Path) -> list[Any]:
        """The token vectors of each of the card's passages."""
        if path not in cards:
            post = frontmatter.load(path)
            meta = post.metadata
            name, summary = str(meta.get("name", "")), str(meta.get("summary", ""))
            aliases = [str(a) for a in meta.get("aliases") or []]
            texts = card_passages(name, aliases, summary, post.content)
            cards[path], heads[path] = [tokens(text, False) for text in texts], (name, texts[0])
        return cards[path]

    def level(files: list[Path]) -> float:
        """The median F1 of pseudo-queries of the vault's cards with the semantically nearest other card."""
        for path in files:
            card(path)
        vectors = engine.encode([heads[path][1] for path in files], False)
        f1s = []
        for i in random.Random(3).sample(range(len(files)), min(LEVEL_CARDS, len(files))):
            name = heads[files[i]][0]
            summary = str(frontmatter.load(files[i]).metadata.get("summary", ""))
            phrase = len(name.split()) >= 3 or not name.isascii()
            query = name if phrase else (re.split(r"(?<=[.!?。！？])\s*", summary.strip(), maxsplit=1)[0] or name)
            closeness = vectors @ engine.encode([query], True)[0]
            closeness[i] = -2.0
            f1s.append(align(tokens(query, True), card(files[int(np.argmax(closeness))]))["f1"])
        return round(float(np.median(f1s)), 4)

    for name in suites:
        folder = WORK / name
        files = {path.stem: path for path in folder.rglob("*.md") if "cards" in path.parts}
        queries = {case.id: case.query for case in load_cases(folder / "cases.jsonl")}
        reference = random.Random(7).sample(sorted(files), min(BASELINE_CARDS, len(files)))
        out_cases: dict[str, Any] = {}
        for row in load(name):
            prompt = tokens(prompt_text(queries[row["case"]]), True)
            ids = dict.fromkeys([c["id"] for c in row["adm"][:3]] + [t[0] for t in row["sem_top"][:3]])
            base = [align(prompt, card(files[card_id]))["f1"] for card_id in reference]
            out_cases[row["case"]] = {
                "cards": {card_id: align(prompt, card(files[card_id])) for card_id in ids},
                "base": [round(float(np.mean(base)), 4), round(float(np.std(base)), 4)],
            }
        out = {"cases": out_cases, "level": level(sorted(files.values()))}
        (WORK / f"align-{name}.json").write_text(json.dumps(out))
        print(name, len(out_cases), "cases, level", out["level"], file=sys.stderr)


@functools.cache
def alignment(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((WORK / f"align-{name}.json").read_text())
    return data


rows_of = functools.cache(load)


def _shipped_pick(values: tuple[float, float, float, bool]) -> bool:
    rel, lead, gap, confirmed = values
    return (rel >= SHIPPED_POINT[0] and lead >= SHIPPED_POINT[1] and gap >= SHIPPED_POINT[2]) or (
        confirmed and lead >= SHIPPED_POINT[1] and gap >= SECOND_GAP
    )


def left_cases(name: str) -> list[tuple[dict[str, float], bool]]:
    """The cases the agreement pick leaves whose first card is right (True) or which are negative (False), with
    their figures."""
    rows, aligned = rows_of(name), alignment(name)
    out = []
    for row in rows:
        values = agree_values(row)
        if values is None or _shipped_pick(values):
            continue
        first = row["adm"][0]["id"]
        positive = bool(row["expect"]) and first in row["expect"]
        if row["expect"] and not positive:
            continue
        a = aligned["cases"][row["case"]]
        mean, spread = a["base"]
        figures = {
            "F1": a["cards"][first]["f1"],
            "precision": a["cards"][first]["prec"],
            "recall": a["cards"][first]["rec"],
            "F1 over baseline": a["cards"][first]["f1"] - mean,
            "F1 z over baseline": (a["cards"][first]["f1"] - mean) / (spread + 1e-3),
            "z": row["sem_top"][0][1],
            "z gap": row["sem_top"][0][1] - row["sem_top"][1][1],
            "lead": values[1],
            "score / best": values[0],
        }
        out.append((figures, positive))
    return out


def auc(positives: list[float], negatives: list[float]) -> float:
    if not positives or not negatives:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


F1S = [round(0.80 + 0.005 * i, 3) for i in range(40)]
OVER_LEVEL = [round(-0.02 + 0.005 * i, 3) for i in range(30)]
LEADS = [0.0, 0.05, 0.10, 0.15, 0.20]
GAPS = [0.0, 0.002, 0.004, 0.006, 0.01]


def measure(
    name: str, point: tuple[float, float, float] | None, less_level: bool = False
) -> dict[str, tuple[float, float]]:
    """slice -> (Injection@1, false injection rate) with the extra as shipped, plus the third form at `point` (its
    first value a threshold on F1, or on F1 less the vault's level)."""
    aligned = alignment(name)
    less = aligned["level"] if less_level else 0.0

    def injected(row: dict[str, Any]) -> list[str]:
        values = agree_values(row)
        added = values is not None and _shipped_pick(values)
        if values is not None and not added and point is not None:
            f1 = aligned["cases"][row["case"]]["cards"][row["adm"][0]["id"]]["f1"] - less
            added = f1 >= point[0] and values[1] >= point[1] and values[2] >= point[2]
        return [row["adm"][0]["id"]] if added else list(row["sem"])

    return slice_rates(rows_of(name), injected)


def fit(fitted: list[str], fir: float, less_level: bool = False) -> tuple[float, float, float] | None:
    """The point injecting most over the suites fitted on with every slice of each at or under `fir` (or the shipped
    rate there, if higher); ties to the strictest; None when no point holds."""
    points = itertools.product(OVER_LEVEL if less_level else F1S, LEADS, GAPS)
    return best_point(lambda name, point: measure(name, point, less_level), fitted, fir, None, points)


def report(fir: float) -> None:
    print("(1) cases the agreement pick leaves: AUC, right first card against a negative case's first card")
    tables = {name: left_cases(name) for name in SUITES}
    figures = list(next(f for cases in tables.values() for f, _ in cases[:1]))
    print(
        "| figure | "
        + " | ".join(f"{n} ({sum(p for _, p in tables[n])}/{sum(not p for _, p in tables[n])})" for n in SUITES)
        + " |"
    )
    print("|---" * (len(SUITES) + 1) + "|")
    for figure in figures:
        cells = []
        for name in SUITES:
            pos = [f[figure] for f, p in tables[name] if p]
            neg = [f[figure] for f, p in tables[name] if not p]
            cells.append(f"{auc(pos, neg):.3f}")
        print(f"| {figure} | " + " | ".join(cells) + " |")
    print(f"\n(2) the third form, fitted on the lesson suites only, measured on the others (FIR <= {fir})")
    point = fit([n for n in FITTABLE if n.endswith("-agent")], fir)
    print(f"fitted (F1, lead, gap) {point}")
    for name in SUITES:
        print(f"{name}: {_cells(measure(name, None), measure(name, point))}")
    for n, less_level in ((3, False), (4, True)):
        figure = "F1 less the level" if less_level else "F1"
        print(
            f"\n({n}) the third form on {figure}, fitted leaving one fittable suite out (every slice at FIR <= {fir})"
        )
        for left in FITTABLE:
            point = fit([name for name in FITTABLE if name != left], fir, less_level)
            cells = _cells(measure(left, None), measure(left, point, less_level))
            print(f"left out {left} (level {alignment(left)['level']}), fitted ({figure}, lead, gap) {point}: {cells}")


def _cells(before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]]) -> str:
    return "; ".join(
        f"{s} {before[s][0]:.3f} / {before[s][1]:.3f} -> {after[s][0]:.3f} / {after[s][1]:.3f}" for s in before
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("dump", "report"))
    parser.add_argument("--fit-fir", type=float, default=0.05)
    parser.add_argument("--suite", action="append", help="suites to dump (default: the fittable and held-out ones)")
    args = parser.parse_args(argv)
    if args.command == "dump":
        dump(tuple(args.suite or SUITES))
    else:
        report(args.fit_fir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
