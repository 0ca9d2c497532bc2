"""Issue 16, items 1 and 2 together: one learned gate over the word evidence and the semantic evidence.

    .venv/bin/python -m benchmarks.joint_study dump        # every case's first admissible cards, both channels
    .venv/bin/python -m benchmarks.joint_study cv          # the gate fitted leaving one dev suite out
    .venv/bin/python -m benchmarks.joint_study cv --features words   # (or semantic; aligned: both and round 19's alignment)

`dump` (2 min; needs the semantic extra) writes benchmarks/.work/joint-<suite>.json: per case its slice, expected
ids, the shipped decisions (words alone, and with the extra less the agreement pick, which `agree-cv` fits), and the first `DEPTH` admissible cards in word order
with their gate values (score, lead, coverage, margin, named) and their semantic similarity (cosine, z over the
vault's cards, rank in the semantic order), and the five semantically closest cards over the whole vault.

`cv`: a logistic model over each of the first `K` admissible cards (its word evidence: first or not, rank, lead,
coverage, margin, score over the best possible, its deficit to the first, named, the prompt's weight; its semantic
evidence: z, its z lead over the semantic first or second, semantic first or not, semantic rank, cosine), fitted
on the cases of two dev suites (each suite weighing the same), the case's decision the card with the highest
estimate, injected when it reaches the threshold: the lowest estimate at which every slice of each suite fitted
on stays at or under `--fit-fir`. Measured on the suite left out, and on the template vault and wtfpython-agent
(never fitted on); "ALL" fits on the three dev suites. Issue 16's item 1 with the semantic evidence (RESULTS.md,
"Round 7").
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from benchmarks.gate_study import suite_similarities
from benchmarks.recall_suites import HELD_OUT, LESSON_SUITES, TEMPLATE, WORK

DEV = ("stackfaq-en-dev", "tldr-zh-dev", "tldr-en-dev")
HELD = (TEMPLATE, *HELD_OUT)
DEPTH = 10
ADMISSION = {
    "retired",
    "draft",
    "unknown_status",
    "expired",
    "superseded",
    "out_of_scope",
    "not_when",
    "already_injected",
}


def dump(suites: tuple[str, ...]) -> None:
    import numpy as np

    from cairn.hot.recall import prompt_weights, recall, veto_judges
    from cairn.index import build as indexer

    for name in suites:
        vault, cases, ids, sims = suite_similarities(name)
        rows = []
        with indexer.open_index(vault) as index:
            for k, case in enumerate(cases):
                cos = sims[k]
                z_row = (cos - cos.mean()) / max(float(cos.std()), 1e-6)
                order = np.argsort(-z_row)
                closest = order[:50]
                z = {ids[i]: round(float(z_row[i]), 4) for i in closest}
                position = {ids[i]: r for r, i in enumerate(order)}
                at = {card_id: i for i, card_id in enumerate(ids)}
                lexical = recall(index, case.query)
                shipped = _without_agreement(index, case.query, z)
                every = recall(index, case.query, examine_all=True)
                adm = [c for c in every.candidates if c.reason not in ADMISSION][:DEPTH]
                weights = prompt_weights(index, case.query)
                rows.append(
                    {
                        "case": case.id,
                        "slice": case.slice,
                        "expect": list(case.expect),
                        "lex": [c.card.id for c in lexical.injected],
                        "sem": [c.card.id for c in shipped.injected],
                        "adm": [
                            {
                                "id": c.card.id,
                                "score": c.score,
                                "lead": c.lead,
                                "cover": c.coverage,
                                "margin": c.margin,
                                "named": c.named,
                                "cos": round(float(cos[at[c.card.id]]), 4) if c.card.id in at else None,
                                "z": round(float(z_row[at[c.card.id]]), 4) if c.card.id in at else None,
                                "srank": position.get(c.card.id),
                            }
                            for c in adm
                        ],
                        "refused": [c.card.id for c in every.candidates if c.reason in ADMISSION],
                        "best": weights.best,
                        "total": weights.total,
                        "one": weights.one_card,
                        "sem_top": [[ids[i], round(float(z_row[i]), 4), round(float(cos[i]), 4)] for i in order[:5]],
                        "cos_mean": round(float(cos.mean()), 4),
                        "cos_std": round(float(cos.std()), 4),
                        "n": index.n_cards,
                        "chars": len(case.query),
                        "judges": veto_judges(case.query),
                    }
                )
        (WORK / f"joint-{name}.json").write_text(json.dumps(rows))
        print(name, len(rows), file=sys.stderr)


def _without_agreement(index: Any, query: str, z: dict[str, float]) -> Any:
    """recall with the semantic evidence and every shipped rule but the agreement pick: what `agree-cv` adds it to."""
    from cairn.hot import recall as R

    saved = R.AGREE_SCORE, R.AGREE_LEAD
    R.AGREE_SCORE = R.AGREE_LEAD = float("inf")  # both forms off
    try:
        return R.recall(index, query, semantic=z)
    finally:
        R.AGREE_SCORE, R.AGREE_LEAD = saved


def load(name: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads((WORK / f"joint-{name}.json").read_text())
    return rows


K = 3  # the admissible cards a case's decision chooses among

WORD = (
    "first", "rank", "lead", "cover", "margin", "rel", "deficit", "named", "weight",
)  # fmt: skip
SEMANTIC = ("z", "zlead", "sfirst", "srank", "cos")


def candidate_features(row: dict[str, Any], which: str) -> list[tuple[list[float], bool]]:
    """Each of the first K admissible cards' features (`WORD`, `SEMANTIC` or both) and whether it is expected."""
    import math

    adm = row["adm"][:K]
    best = row["best"] or 1.0
    top = row["sem_top"]
    z1 = top[0][1] if top else 0.0
    z2 = top[1][1] if len(top) > 1 else 0.0
    out = []
    for i, c in enumerate(adm):
        word = [
            1.0 if i == 0 else 0.0,
            math.log(1 + i),
            math.log(c["lead"] + 0.01),
            math.log(c["cover"] + 0.01),
            math.log(c["margin"] + 0.01),
            math.log(c["score"] / best + 0.01),
            (adm[0]["score"] - c["score"]) / best,
            1.0 if c["named"] else 0.0,
            math.log(row["total"] / (row["one"] or 1.0) + 1),
        ]
        z = c["z"] if c["z"] is not None else 0.0
        srank = c["srank"] if c["srank"] is not None else 99
        semantic = [
            z,
            (z1 - z2) if srank == 0 else (z - z1),
            1.0 if srank == 0 else 0.0,
            math.log(1 + srank),
            c["cos"] or 0.0,
        ]
        if which == "aligned":  # round 19: the card's token alignment with the prompt (`align_study`)
            a, first = row["align"]["cards"], row["align"]["cards"][adm[0]["id"]]
            semantic += [a[c["id"]]["f1"], a[c["id"]]["prec"], a[c["id"]]["f1"] - first["f1"]]
        values = {"words": word, "semantic": semantic + word[:1] + word[3:4]}.get(which, word + semantic)
        out.append((values, c["id"] in row["expect"]))
    return out


def _fit(x: Any, y: Any, w: Any, l2: float = 1.0) -> tuple[Any, Any, Any]:
    """L2-regularised logistic regression by Newton's method on standardised features (weights per row)."""
    import numpy as np

    mu, sd = x.mean(0), x.std(0) + 1e-9
    z = np.hstack([np.ones((len(x), 1)), (x - mu) / sd])
    beta = np.zeros(z.shape[1])
    ridge = l2 * np.diag(np.r_[0.0, np.ones(len(beta) - 1)])
    for _ in range(30):
        p = 1 / (1 + np.exp(-z @ beta))
        gradient = z.T @ (w * (p - y)) + ridge @ beta
        hessian = (z * (w * p * (1 - p))[:, None]).T @ z + ridge
        beta -= np.linalg.solve(hessian, gradient)
    return beta, mu, sd


def _decide(rows: list[dict[str, Any]], which: str, model: tuple[Any, Any, Any]) -> tuple[Any, Any]:
    """Per case: the highest estimate among its candidates, and whether that card is expected."""
    import numpy as np

    beta, mu, sd = model
    chance, right = np.full(len(rows), -1.0), np.zeros(len(rows), bool)
    for j, row in enumerate(rows):
        feats = candidate_features(row, which)
        if feats:
            x = np.array([f for f, _ in feats])
            p = 1 / (1 + np.exp(-np.hstack([np.ones((len(x), 1)), (x - mu) / sd]) @ beta))
            i = int(np.argmax(p))
            chance[j], right[j] = p[i], feats[i][1]
    return chance, right


def _measure(rows: list[dict[str, Any]], chance: Any, right: Any, t: float) -> dict[str, tuple[float, float]]:
    """slice -> (Injection@1, false injection rate) at threshold t; 'all' included."""
    out = {}
    for name in ("all", "long", "short"):
        sel = [j for j, r in enumerate(rows) if name == "all" or r["slice"] == name]
        pos = [j for j in sel if rows[j]["expect"]]
        neg = [j for j in sel if not rows[j]["expect"]]
        out[name] = (
            sum(chance[j] >= t and right[j] for j in pos) / max(len(pos), 1),
            sum(chance[j] >= t for j in neg) / max(len(neg), 1),
        )
    return out


def cv(which: str, fit_fir: float) -> None:
    import numpy as np

    data = {name: load(name) for name in (*DEV, *HELD)}
    if which == "aligned":
        held = [name for name in HELD if (WORK / f"align-{name}.json").exists()]
        data = {name: data[name] for name in (*DEV, *held)}
        for name, rows in data.items():
            aligned = json.loads((WORK / f"align-{name}.json").read_text())
            for row in rows:
                row["align"] = aligned[row["case"]]
    print(f"features: {which}; threshold: every slice of each suite fitted on at FIR <= {fit_fir}")
    for left in (*DEV, "ALL"):
        fitted = [name for name in DEV if name != left]
        xs, ys, ws = [], [], []
        for name in fitted:
            feats = [f for row in data[name] for f in candidate_features(row, which)]
            xs.append(np.array([f for f, _ in feats]))
            ys.append(np.array([float(lab) for _, lab in feats]))
            ws.append(np.full(len(feats), 1.0 / len(data[name])))  # each suite weighs the same
        w = np.concatenate(ws)
        model = _fit(np.vstack(xs), np.concatenate(ys), w / w.mean())
        decided = {name: _decide(data[name], which, model) for name in data}
        levels = sorted({round(float(c), 4) for name in fitted for c in decided[name][0]}, reverse=True)
        t = 1.0
        for level in levels:
            if all(max(f for _, f in _measure(data[n], *decided[n], level).values()) <= fit_fir for n in fitted):
                t = level
            else:
                break
        cells = []
        for name in (DEV if left == "ALL" else (left,)) + tuple(n for n in HELD if n in data):
            m = _measure(data[name], *decided[name], t)
            cells.append(
                f"{name} {m['all'][0]:.3f} / {m['all'][1]:.3f} (long {m['long'][0]:.3f} / {m['long'][1]:.3f},"
                f" short {m['short'][0]:.3f} / {m['short'][1]:.3f})"
            )
        print(f"left out {left} (t {t:.3f}): " + "; ".join(cells))


# -- the agreement pick: the first card of both channels, when nothing else is injected ----------------------------

SECOND_FORM = True  # the pick's second form (`recall._agreement_pick`'s `confirmed`); `--first-form-only` drops it
AGREE_RELS = [round(0.30 + 0.01 * i, 2) for i in range(31)]  # the card's score over the best possible
AGREE_LEADS = [round(0.10 + 0.01 * i, 2) for i in range(15)]  # its lead gate's value (below min_lead 0.24)
AGREE_GAPS = [round(0.002 * i, 3) for i in range(16)]  # its cosine over the semantic second's
FITTABLE = (*DEV, *LESSON_SUITES)


def agree_values(row: dict[str, Any]) -> tuple[float, float, float, bool] | None:
    """(score / best, lead, cosine gap, confirmed) of the first admissible card when the shipped decision with the
    extra gives nothing, the vault has 30 cards or more and that card is also the semantic first over the vault; else
    None. confirmed: the second form's condition (a prompt the veto judges, the card passing the coverage and margin
    gates, its z-score at SEMANTIC_MIN_Z), which stands in for score / best."""
    from cairn.config import RecallSettings
    from cairn.hot.recall import SEMANTIC_MIN_Z

    if row["sem"] or row["n"] < 30 or not row["adm"] or len(row["sem_top"]) < 2:
        return None
    first = row["adm"][0]
    if first["id"] != row["sem_top"][0][0] or first["cos"] is None:
        return None
    gates = RecallSettings()
    confirmed = bool(
        row.get("judges")
        and first["cover"] >= gates.min_coverage
        and first["margin"] >= gates.min_margin
        and row["sem_top"][0][1] >= SEMANTIC_MIN_Z
    )
    return first["score"] / (row["best"] or 1.0), first["lead"], first["cos"] - row["sem_top"][1][2], confirmed


def agree_measure(rows: list[dict[str, Any]], point: tuple[float, float, float]) -> dict[str, tuple[float, float]]:
    """slice -> (Injection@1, FIR) of the shipped decision with the extra plus the agreement pick at `point`."""

    def injected(row: dict[str, Any]) -> list[str]:
        values = agree_values(row)
        added = values is not None and values[1] >= point[1] and values[2] >= point[2] and values[0] >= point[0]
        if values is not None and SECOND_FORM and not added:  # its own cosine gap when `point` gives one
            gap = point[3] if len(point) > 3 else point[2]
            added = values[3] and values[1] >= point[1] and values[2] >= gap
        return [row["adm"][0]["id"]] if added else list(row["sem"])

    return slice_rates(rows, injected)


def slice_rates(
    rows: list[dict[str, Any]], injected: Callable[[dict[str, Any]], list[str]]
) -> dict[str, tuple[float, float]]:
    """slice ("all", "long", "short") -> (Injection@1, false injection rate) of the cards `injected(row)` gives."""
    out = {}
    for name in ("all", "long", "short"):
        hits = false = n_pos = n_neg = 0
        for row in rows:
            if name != "all" and row["slice"] != name:
                continue
            cards = injected(row)
            if row["expect"]:
                n_pos += 1
                hits += bool(cards) and cards[0] in row["expect"]
            else:
                n_neg += 1
                false += bool(cards)
        out[name] = (hits / max(n_pos, 1), false / max(n_neg, 1))
    return out


def agree_fit(data: dict[str, list[dict[str, Any]]], fitted: list[str], fir: float) -> tuple[float, float, float]:
    """The point injecting most (each suite's Injection@1 summed) with every slice of each suite fitted on at or
    under `fir`, or at or under what the shipped decision gives there when that is higher; ties to the strictest."""
    points = list(itertools.product(AGREE_RELS, AGREE_LEADS, AGREE_GAPS))
    return _best_point(data, fitted, fir, (9.0, 9.0, 9.0), points)  # type: ignore[return-value]


def _best_point(
    data: dict[str, list[dict[str, Any]]],
    fitted: list[str],
    fir: float,
    base_point: tuple[float, ...],
    points: list[tuple[float, ...]],
) -> tuple[float, ...]:
    """`best_point` of the agreement pick's `points` (`agree_measure`)."""
    chosen = best_point(lambda name, point: agree_measure(data[name], point), fitted, fir, base_point, points)
    return base_point if chosen is None else chosen


Point = TypeVar("Point", bound=tuple[float, ...] | None)


def best_point(
    measure: Callable[[str, Point], dict[str, tuple[float, float]]],
    fitted: list[str],
    fir: float,
    base_point: Point,
    points: Iterable[Point],
) -> Point | None:
    """Of `points`, the one whose Injection@1 summed over the suites fitted on (`measure(suite, point)`: slice ->
    (Injection@1, false injection rate)) is highest with every slice of each at or under `fir` (or at or under what
    `base_point` gives there, when that is higher); ties to the strictest; None when none holds."""
    base = {name: measure(name, base_point) for name in fitted}
    best: tuple[float, ...] | None = None
    chosen = None
    for point in points:
        total = 0.0
        for name in fitted:
            m = measure(name, point)
            if any(m[s][1] > max(fir, base[name][s][1]) + 1e-9 for s in m):
                break
            total += m["all"][0]
        else:
            key = (round(total, 9), *(point or ()))
            if best is None or key > best:
                best, chosen = key, point
    return chosen


def agree_cv(fir: float) -> None:
    data = {name: load(name) for name in (*FITTABLE, *HELD)}

    def cells(name: str, point: tuple[float, float, float]) -> str:
        shipped, m = agree_measure(data[name], (9.0, 9.0, 9.0)), agree_measure(data[name], point)
        return "; ".join(
            f"{s} {shipped[s][0]:.3f} / {shipped[s][1]:.3f} -> {m[s][0]:.3f} / {m[s][1]:.3f}" for s in shipped
        )

    print(f"fit: every slice of each suite fitted on at FIR <= {fit_fir_text(fir)}; cells: shipped -> with the pick")
    for left in FITTABLE:
        point = agree_fit(data, [n for n in FITTABLE if n != left], fir)
        print(f"left out {left}, fitted {point}: {cells(left, point)}")
    for fitted in (list(DEV), list(FITTABLE)):
        point = agree_fit(data, fitted, fir)
        print(f"fitted on {' + '.join(fitted)}: {point}")
        for name in (*FITTABLE, *HELD):
            print(f"    {name}: {cells(name, point)}")


SHIPPED_POINT = (0.47, 0.20, 0.006)
SECOND_GAPS = [round(0.002 * i, 3) for i in range(16)]


def second_fit(data: dict[str, list[dict[str, Any]]], fitted: list[str], fir: float) -> tuple[float, ...]:
    """The agreement pick as shipped plus its second form, the second form's own cosine gap fitted: the one injecting
    most with every slice of each suite fitted on at or under `fir` (or what the first form alone gives there, if
    higher); ties to the strictest."""
    points = [(*SHIPPED_POINT, gap) for gap in SECOND_GAPS]
    return _best_point(data, fitted, fir, (*SHIPPED_POINT, 9.0), points)


def second_cv(fir: float) -> None:
    """`agree2-cv`: the second form's cosine gap fitted leaving one fittable suite out (the first form as shipped)."""
    data = {name: load(name) for name in (*FITTABLE, *HELD)}

    def cells(name: str, point: tuple[float, ...]) -> str:
        before, m = agree_measure(data[name], (*SHIPPED_POINT, 9.0)), agree_measure(data[name], point)
        return "; ".join(f"{s} {before[s][0]:.3f} / {before[s][1]:.3f} -> {m[s][0]:.3f} / {m[s][1]:.3f}" for s in m)

    print(f"fit: every slice of each suite fitted on at FIR <= {fit_fir_text(fir)}; cells: first form -> both forms")
    for left in FITTABLE:
        point = second_fit(data, [n for n in FITTABLE if n != left], fir)
        print(f"left out {left}, second gap {point[3]}: {cells(left, point)}")
    point = second_fit(data, list(FITTABLE), fir)
    print(f"fitted on every fittable suite: second gap {point[3]}")
    for name in (*FITTABLE, *HELD):
        print(f"    {name}: {cells(name, point)}")


def fit_fir_text(fir: float) -> str:
    return f"{fir} (or the shipped decision's own rate, if higher)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("dump", "cv", "agree-cv", "agree2-cv"))
    parser.add_argument("--features", choices=("both", "words", "semantic", "aligned"), default="both")
    parser.add_argument("--fit-fir", type=float, default=0.035)
    parser.add_argument(
        "--first-form-only", action="store_true", help="agree-cv: the agreement pick without its second form"
    )
    parser.add_argument(
        "--suite", action="append", help="suites to dump (default: the dev suites, the lesson suites and the held-out)"
    )
    args = parser.parse_args(argv)
    suites = tuple(args.suite or (*FITTABLE, *HELD))
    if args.command == "dump":
        dump(suites)
    elif args.command == "agree-cv":
        global SECOND_FORM
        SECOND_FORM = not args.first_form_only
        agree_cv(args.fit_fir)
    elif args.command == "agree2-cv":
        second_cv(args.fit_fir)
    else:
        cv(args.features, args.fit_fir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
