"""The round-2 gate study: candidate gate features of each case's top admissible card, fitted and compared.

RESULTS.md ("Round 2") cites it: the 17 feature sets compared by cross-validation inside the fitting half, and the
table of the 10 variants seen on the held-out sets. Run from the repository root:

    .venv/bin/python -m benchmarks.gate_study dump                       # ~1 min: features of every case
    .venv/bin/python -m benchmarks.gate_study fit cov_cjk,margin,lead_t  # fit on the fitting set, every suite
    .venv/bin/python -m benchmarks.gate_study cv cov_cjk,margin,lead_t   # 5-fold CV inside the fitting set
    .venv/bin/python -m benchmarks.gate_study baseline                   # round 1's features at 0 / 0.4 / 0.55
    .venv/bin/python -m benchmarks.gate_study sem-dump                   # round 4 (the extra installed): see below
    .venv/bin/python -m benchmarks.gate_study sem-fit [--fit-fir 0.03]   # the semantic pick, leaving a suite out
    .venv/bin/python -m benchmarks.gate_study sem-margin [--target 0.025]  # round 6: rule families at FIR targets

`dump` prepares each suite (`benchmarks.recall_suites`) and the template vault, runs recall with the gates open
and writes each case's features to benchmarks/.work/gates-<suite>.json; the other commands read those files (run
`dump` again after a change to recall). `fit` and `cv` take one or more comma-separated feature sets; the features
are the keys `features` computes (`cov`, `cov_cjk`, `cov_n300`, `lead`, `lead_t`, `margin`, `norm`, `z10`, ...).

Protocol (fixed before any figure was looked at): thresholds are fitted ONLY on the odd-numbered cases of
tldr-zh-dev (as round 1 did): best Injection@1 with the false injection rate <= 2.5% on each slice of that half,
ties to the strictest thresholds. Every other suite, tldr-zh-dev's even half and the template vault are held out.

Injection@1 and FIR depend on the top admissible card only (injection is a prefix of the admissible ranking), so
each case is reduced to that card's features and whether it is expected. The features are recomputed here from
the index, not read from recall's gates: `fit cov_cjk,margin,lead_t` reproduces the shipped thresholds'
fit (0.322 / 0.3467 / 0.2057), and the real decisions are `benchmarks.recall_suites`'s.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import itertools
import json
import math
import os
import statistics
import sys
from typing import TYPE_CHECKING, Any

from benchmarks.recall_suites import SUITES, TEMPLATE, WORK, cases_file, prepare

if TYPE_CHECKING:
    from cairn.config import RecallSettings
    from cairn.hot.index import IndexReader

ADMISSION = {
    "out_of_scope",
    "expired",
    "retired",
    "draft",
    "unknown_status",
    "superseded",
    "not_when",
    "already_injected",
}
Row = dict[str, Any]


def features(index: IndexReader, query: str, settings: RecallSettings) -> dict[str, Any] | None:
    from cairn.hot.recall import query_terms, recall
    from cairn.hot.tokens import INSTRUCTION_WORDS, is_cjk, tokenize

    open_ = dataclasses.replace(settings, min_lead=0.0, min_coverage=0.0, min_margin=0.0)
    result = recall(index, query, settings=open_)
    adm = [c for c in result.candidates if c.reason not in ADMISSION]
    if not adm:
        return None
    terms = query_terms(query)
    post = index.postings(terms)
    n = max(index.n_cards, 1)
    scores = [c.score for c in adm[:10]]
    s1 = scores[0]
    s2 = scores[1] if len(scores) > 1 else 0.0
    top = adm[0]
    row = top.card.row
    out: dict[str, Any] = {"id": top.card.id, "s1": s1, "n": n}
    # field hits of the top card
    in_ns: set[str] = set()
    for t in top.matched:
        p = post[t]
        for r, tn, ts, *_ in p:
            if r == row:
                if tn or ts:
                    in_ns.add(t)
                break

    def weigh(
        n_eff: float, cjk_unknown: float, disc: float = settings.instruction_weight
    ) -> tuple[dict[str, float], float]:
        unk_idf = math.log(1 + (n_eff - 0.5) / 1.5)
        idf: dict[str, float] = {}
        unknown = 0.0
        for t in terms:
            d = disc if t in INSTRUCTION_WORDS else 1.0
            p = post.get(t)
            if p is None:
                unknown += d * settings.unknown_weight * unk_idf * (cjk_unknown if is_cjk(t) else 1.0)
            else:
                idf[t] = d * math.log(1 + (n_eff - p.df + 0.5) / (p.df + 0.5))
        return idf, unknown

    for label, n_eff, cjk in (
        ("cov", n, 0.0),
        ("cov_n100", max(n, 100), 0.0),
        ("cov_n300", max(n, 300), 0.0),
        ("cov_n1000", max(n, 1000), 0.0),
        ("cov_cjk", n, 0.5),
        ("cov_n300_cjk", max(n, 300), 0.5),
    ):
        idf, unknown = weigh(n_eff, cjk)
        total = sum(idf.values()) + unknown
        out[label] = sum(idf[t] for t in top.matched) / total if total else 0.0
        out[label + "_ns"] = sum(idf[t] for t in in_ns) / total if total else 0.0
    idf, unknown = weigh(n, 0.0)
    mass = sum(idf.values())
    out["norm"] = s1 / mass if mass else 0.0
    out["margin"] = 1 - s2 / s1 if s1 > 0 else 0.0
    out["lead"] = (s1 - s2) / mass if mass else 0.0
    total = mass + unknown  # the best possible score had the words no card uses been matched (one-card rarity)
    out["lead_t"] = (s1 - s2) / total if total else 0.0
    out["norm_t"] = s1 / total if total else 0.0
    idf3, _ = weigh(max(n, 300), 0.0)
    # a lead over the query's best possible score computed with the floored idf: sum of per-term contributions
    # rescaled by idf3/idf
    out["lead_n300"] = (s1 - s2) / sum(idf3.values()) if idf3 else 0.0
    padded = (scores + [0.0] * 10)[:10]
    mu = statistics.fmean(padded)
    sd = statistics.pstdev(padded)
    out["z10"] = (s1 - mu) / sd if sd > 0 else 0.0
    mu5 = statistics.fmean(padded[1:6])
    out["m5"] = 1 - mu5 / s1 if s1 > 0 else 0.0  # lead over the mean of the next five
    out["k5"] = 1 - padded[4] / s1 if s1 > 0 else 0.0
    # card side: share of the card's name+summary distinct tokens the query holds (unweighted)
    ctoks = set(tokenize(top.card.name)) | set(tokenize(top.card.summary))
    qset = set(terms)
    out["ccov"] = len(ctoks & qset) / len(ctoks) if ctoks else 0.0
    out["nmatch"] = len(top.matched)
    return out


def dump() -> None:
    from cairn.hot.settings import settings_of
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer
    from cairn.quality.evaluate import load_cases

    for name in (*SUITES, TEMPLATE):
        vault = find_vault(prepare(name))
        indexer.build_index(vault)
        cases = load_cases(cases_file(name, vault.root))
        rows = []
        with indexer.open_index(vault) as index:
            settings = settings_of(index)
            for case in cases:
                f = features(index, case.query, settings)
                rows.append({"case": case.id, "slice": case.slice, "expect": list(case.expect), "f": f})
        (WORK / f"gates-{name}.json").write_text(json.dumps(rows))
        print(name, len(rows), file=sys.stderr)


def load(name: str, kind: str = "gates", command: str = "dump") -> list[Row]:
    """The rows `command` stored for suite `name` (`gates-*.json` by `dump`, `semcand-*.json` by `sem-dump`)."""
    path = WORK / f"{kind}-{name}.json"
    if not path.is_file():
        raise SystemExit(f"Error: no {path}; run `python -m benchmarks.gate_study {command}` first")
    rows: list[Row] = json.loads(path.read_text())
    return rows


def parts() -> dict[str, list[Row]]:
    zh = load("tldr-zh-dev")
    odd = [r for r in zh if int(r["case"].lstrip("q")) % 2 == 1]
    even = [r for r in zh if int(r["case"].lstrip("q")) % 2 == 0]
    return {
        "FIT tldr-zh odd": odd,
        "tldr-zh even": even,
        "stackfaq-en": load("stackfaq-en-dev"),
        "tldr-en": load("tldr-en-dev"),
        "template": load(TEMPLATE),
    }


def measure(rows: list[Row], feats: tuple[str, ...], th: tuple[float, ...]) -> dict[str, tuple[float, float, int, int]]:
    """slice -> (Inj@1, FIR, n_pos, n_neg); slice 'all' included."""
    acc: dict[str, list[int]] = {}
    for r in rows:
        f = r["f"]
        inj = f is not None and all(f[k] >= t for k, t in zip(feats, th, strict=True))
        for s in ("all", r["slice"]):
            a = acc.setdefault(s, [0, 0, 0, 0])
            if r["expect"]:
                a[2] += 1
                a[0] += inj and f["id"] in r["expect"]
            else:
                a[3] += 1
                a[1] += inj
    return {s: (a[0] / max(a[2], 1), a[1] / max(a[3], 1), a[2], a[3]) for s, a in acc.items()}


def fit(rows: list[Row], feats: tuple[str, ...], target: float = 0.025, levels: int = 21) -> tuple[float, ...]:
    """Grid over each feature's quantiles on `rows`; best Inj@1 with FIR <= target on every slice; ties strictest."""
    grids = []
    for k in feats:
        vals = sorted(r["f"][k] for r in rows if r["f"] is not None)
        qs = sorted({round(vals[min(len(vals) - 1, int(i * len(vals) / (levels - 1)))], 4) for i in range(levels)})
        grids.append([0.0] + qs)
    best: tuple[float, tuple[float, ...]] = (-1.0, ())
    for th in itertools.product(*grids):
        m = measure(rows, feats, th)
        if any(v[1] > target + 1e-9 for v in m.values()):
            continue
        score = m["all"][0]
        if score > best[0] + 1e-12 or (abs(score - best[0]) <= 1e-12 and sum(th) > sum(best[1])):
            best = (score, th)
    return best[1]


def report(feats: tuple[str, ...]) -> None:
    p = parts()
    th = fit(p["FIT tldr-zh odd"], feats)
    print(f"features {feats} thresholds {th}")
    for name, rows in p.items():
        m = measure(rows, feats, th)
        cells = "  ".join(f"{s}: {v[0]:.3f}/{v[1]:.3f}" for s, v in sorted(m.items()))
        print(f"  {name:<18} {cells}")


def cv(feats: tuple[str, ...], k: int = 5) -> tuple[float, float, float]:
    """5-fold CV inside the fitting half only: pooled held-out Inj@1, FIR, worst slice FIR."""
    rows = parts()["FIT tldr-zh odd"]
    folds = [int(hashlib.sha256(r["case"].encode()).hexdigest(), 16) % k for r in rows]
    held: list[Row] = []
    for i in range(k):
        train = [r for r, f in zip(rows, folds, strict=True) if f != i]
        test = [r for r, f in zip(rows, folds, strict=True) if f == i]
        th = fit(train, feats, levels=21)
        for r in test:
            f = r["f"]
            inj = f is not None and all(f[kk] >= t for kk, t in zip(feats, th, strict=True))
            held.append({**r, "f": {**(f or {}), "_inj": 1.0 if inj else 0.0, "id": (f or {}).get("id")}})
    m = measure(held, ("_inj",), (0.5,))
    return m["all"][0], m["all"][1], max(v[1] for v in m.values())


def baseline() -> None:
    feats, th = ("norm", "cov", "margin"), (0.0, 0.4, 0.55)
    print(f"shipped {feats} thresholds {th}")
    for name, rows in parts().items():
        m = measure(rows, feats, th)
        cells = "  ".join(f"{s}: {v[0]:.3f}/{v[1]:.3f}" for s, v in sorted(m.items()))
        print(f"  {name:<18} {cells}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("dump", "fit", "cv", "baseline", "sem-dump", "sem-fit", "sem-margin"))
    parser.add_argument(
        "--target", type=float, action="append", help="sem-margin: a FIR target to fit at (repeatable; 0.03 0.025 0.02)"
    )
    parser.add_argument("--family", action="append", choices=tuple(SEM_FAMILIES), help="sem-margin: a rule family")
    parser.add_argument(
        "--held", action="append", help="sem-margin: a never-fitted suite measured with the all-three fits (once!)"
    )
    parser.add_argument("--fit-fir", type=float, default=0.03, help="sem-fit: the FIR every slice fitted on holds")
    parser.add_argument(
        "--suite", action="append", help="sem-dump: only this suite (repeatable; a held-out suite only to look at)"
    )
    parser.add_argument("features", nargs="*", metavar="F1,F2,...", help="feature sets (fit, cv)")
    args = parser.parse_args(argv)
    os.environ["CAIRN_CACHE_DIR"] = str(WORK / "cache")
    if args.command in ("fit", "cv") and not args.features:
        parser.error(f"{args.command} needs at least one feature set, e.g. cov_cjk,margin,lead_t")
    if args.command == "sem-dump":
        sem_dump(tuple(args.suite) if args.suite else SEM_SUITES)
    elif args.command == "sem-margin":
        sem_margin(
            tuple(args.target or (0.03, 0.025, 0.02)), tuple(args.family or SEM_FAMILIES), tuple(args.held or ())
        )
    elif args.command == "sem-fit":
        sem_fit(args.fit_fir)
    elif args.command == "dump":
        dump()
    elif args.command == "baseline":
        baseline()
    elif args.command == "cv":
        for spec in args.features:
            print(spec, "cv Inj@1 {:.3f} FIR {:.3f} worst {:.3f}".format(*cv(tuple(spec.split(",")))))
    else:
        for spec in args.features:
            report(tuple(spec.split(",")))
    return 0


# -- round 4: semantic candidates (issue 16, recall3) ------------------------------------------------------------
#
#     .venv/bin/python -m benchmarks.gate_study sem-dump           # every case: admissible cards, z-scores, decisions
#     .venv/bin/python -m benchmarks.gate_study sem-fit            # the rules below, fitted leaving one suite out
#
# `sem-dump` writes benchmarks/.work/semcand-<suite>.json: per case its slice, expected ids, the shipped decisions
# without and with the semantic evidence (the hook's: the 50 closest cards' z-scores), the first 10 admissible cards
# in lexical order (id, score, coverage) and those z-scores. `sem-fit` replays rules on them (see `sem_decide`).

SEM_SUITES = (*SUITES, TEMPLATE)


# The veto's z-score floors tried (recall.SEMANTIC_MIN_Z; -99: no veto), each dumped with the pick off.
SEM_VETOES = (3.0, 2.5, 2.0, -99.0)


def _without_pick(index: IndexReader, query: str, z: dict[str, float], veto: float, rescue: bool = True) -> Any:
    """recall with the semantic evidence, the veto at `veto` and the semantic pick off (and the rescue, unless
    `rescue`): what the pick adds to."""
    from cairn.hot import recall as R

    saved = R.SEMANTIC_MIN_Z, R.SEMANTIC_PICK, getattr(R, "SEMANTIC_RESCUE_GAP", None)
    R.SEMANTIC_MIN_Z, R.SEMANTIC_PICK = veto, math.inf
    if not rescue and saved[2] is not None:  # round 3's rescue; gone from recall since round 6
        R.SEMANTIC_RESCUE_GAP = math.inf  # type: ignore[attr-defined]
    try:
        return R.recall(index, query, semantic=z)
    finally:
        R.SEMANTIC_MIN_Z, R.SEMANTIC_PICK = saved[:2]
        if saved[2] is not None:
            R.SEMANTIC_RESCUE_GAP = saved[2]  # type: ignore[attr-defined]


def suite_similarities(name: str) -> tuple[Any, list[Any], list[str], Any]:
    """A suite's vault (indexed), its cases, and the cosine of every case's prompt to every card (card ids, a
    prompts x cards matrix, as the hook's warm encoder computes them; prompt vectors cached in .work/semantic)."""
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer
    from cairn.quality.evaluate import load_cases
    from cairn.semantic.batch import similarity_matrix

    vault = find_vault(prepare(name))
    indexer.build_index(vault)
    cases = load_cases(cases_file(name, vault.root))
    ids, sims = similarity_matrix(indexer.index_file_for(vault), [c.query for c in cases], cache_dir=WORK / "semantic")
    return vault, cases, ids, sims


def sem_dump(suites: tuple[str, ...] = SEM_SUITES) -> None:
    import numpy as np

    from cairn.hot.recall import prompt_weights, recall
    from cairn.index import build as indexer

    for name in suites:
        vault, cases, ids, sims = suite_similarities(name)
        rows = []
        with indexer.open_index(vault) as index:
            for k, case in enumerate(cases):
                row_z = (sims[k] - sims[k].mean()) / max(float(sims[k].std()), 1e-6)
                closest = np.argsort(-row_z)[:50]
                z = {ids[i]: round(float(row_z[i]), 4) for i in closest}
                lexical = recall(index, case.query)
                shipped = {
                    str(w): [c.card.id for c in _without_pick(index, case.query, z, w).injected] for w in SEM_VETOES
                }
                no_rescue = {
                    str(w): [c.card.id for c in _without_pick(index, case.query, z, w, rescue=False).injected]
                    for w in SEM_VETOES
                }
                every = recall(index, case.query, examine_all=True)
                adm = [c for c in every.candidates if c.reason not in ADMISSION][:10]
                rows.append(
                    {
                        "case": case.id,
                        "slice": case.slice,
                        "expect": list(case.expect),
                        "lex": [c.card.id for c in lexical.injected],
                        "ship": shipped,
                        "ship_nr": no_rescue,
                        "adm": [[c.card.id, c.score, c.coverage] for c in adm],
                        "refused": [c.card.id for c in every.candidates if c.reason in ADMISSION],
                        "best": prompt_weights(index, case.query).best,
                        "z": z,
                        "cos": {ids[i]: round(float(sims[k][i]), 4) for i in closest[:3]},
                        "n": index.n_cards,
                    }
                )
        (WORK / f"semcand-{name}.json").write_text(json.dumps(rows))
        print(name, len(rows), file=sys.stderr)


def _sem_arrays(rows: list[Row], veto: float = 3.0) -> dict[str, Any]:
    """Per case: the shipped decision with the extra (`ship`), and the semantic first choice among the first 10
    admissible cards: its z-gap over the semantic second, its word lead (`recall._semantic_pick`), whether it is
    expected."""
    import numpy as np

    gap, lead, found, right = [], [], [], []
    for r in rows:
        z: dict[str, float] = r["z"]
        ranked = sorted(z.values(), reverse=True)
        first = max(z, key=lambda k: z[k]) if z else None
        g = ranked[0] - ranked[1] if len(ranked) > 1 else 0.0
        at = next((i for i, a in enumerate(r["adm"]) if a[0] == first), None)
        w = 0.0
        if at is not None and r["best"] > 0:
            scores = [a[1] for a in r["adm"]]
            if at == 0:
                w = (scores[0] - (scores[1] if len(scores) > 1 else 0.0)) / r["best"]
            else:
                w = (scores[at] - scores[at - 1]) / r["best"]
        gap.append(g)
        lead.append(w)
        found.append(at is not None and r["n"] >= 30 and first not in r["refused"])
        right.append(first in r["expect"])
    return {
        "slice": np.array([r["slice"] or "" for r in rows]),
        "pos": np.array([bool(r["expect"]) for r in rows]),
        "ship_any": np.array([bool(r["ship"][str(veto)]) for r in rows]),
        "ship_ok": np.array([bool(r["ship"][str(veto)]) and r["ship"][str(veto)][0] in r["expect"] for r in rows]),
        "gap": np.array(gap),
        "lead": np.array(lead),
        "found": np.array(found),
        "right": np.array(right),
    }


def _sem_measure(a: dict[str, Any], weight: float | None, t: float) -> dict[str, tuple[float, float, int]]:
    """slice -> (Injection@1, FIR, n_pos) of the shipped decisions plus the semantic pick (`weight` None: none)."""
    import numpy as np

    add = np.zeros(len(a["pos"]), bool)
    if weight is not None:
        add = a["found"] & ~a["ship_any"] & (a["gap"] + weight * a["lead"] >= t)
    any_ = a["ship_any"] | add
    ok = a["ship_ok"] | (add & a["right"])
    return _by_slice(a, ok, any_)


def _by_slice(a: dict[str, Any], ok: Any, any_: Any) -> dict[str, tuple[float, float, int]]:
    """Injection@1, false injection rate and positives, overall and per slice, of per-case decisions: `ok` (a right
    card injected) and `any_` (any card injected)."""
    import numpy as np

    out = {}
    for name in ["all", *sorted(set(a["slice"].tolist()) - {""})]:
        part = np.ones(len(ok), bool) if name == "all" else a["slice"] == name
        p, n = part & a["pos"], part & ~a["pos"]
        out[name] = (float(ok[p].mean()) if p.any() else 0.0, float(any_[n].mean()) if n.any() else 0.0, int(p.sum()))
    return out


SEM_WEIGHTS = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
SEM_THRESHOLDS = tuple(round(0.5 + 0.05 * i, 2) for i in range(71))


def _sem_fit(suites: list[dict[float, dict[str, Any]]], fir: float) -> tuple[float, float, float] | None:
    """(veto, weight, threshold) injecting most positives over the given suites (each: veto -> arrays) with every
    slice's FIR at most `fir`, or at most what round 3's rule (veto 3.0, no pick) gives there already."""
    best: tuple[float, tuple[float, float, float] | None] = (-1.0, None)
    refs = [_sem_measure(by_veto[3.0], None, 0.0) for by_veto in suites]
    for veto in SEM_VETOES:
        for weight in SEM_WEIGHTS:
            for t in SEM_THRESHOLDS:
                gained = 0.0
                for by_veto, ref in zip(suites, refs, strict=True):
                    m = _sem_measure(by_veto[veto], weight, t)
                    if any(v[1] > max(fir, ref[k][1]) + 1e-9 for k, v in m.items()):
                        break
                    gained += m["all"][0] * m["all"][2]
                else:
                    if gained > best[0]:
                        best = (gained, (veto, weight, t))
    return best[1]


def sem_fit(fir: float) -> None:
    arrays = {name: {veto: _sem_arrays(load_sem(name), veto) for veto in SEM_VETOES} for name in SUITES}

    def cells(m: dict[str, tuple[float, float, int]]) -> str:
        return "  ".join(f"{k} {v[0]:.3f}/{v[1]:.3f}" for k, v in m.items())

    def at(name: str, fitted: tuple[float, float, float]) -> dict[str, tuple[float, float, int]]:
        veto, weight, t = fitted
        return _sem_measure(arrays[name][veto], weight, t)

    for name in SUITES:
        print(f"{name:<16} round 3 (veto 3.0, no pick): {cells(_sem_measure(arrays[name][3.0], None, 0.0))}")
    for held in SUITES:
        fitted = _sem_fit([arrays[s] for s in SUITES if s != held], fir)
        if fitted is None:
            print(f"{held:<16} held out: nothing holds {fir} on the others")
            continue
        print(f"{held:<16} held out, fitted on the others (veto, weight, t) {fitted}: {cells(at(held, fitted))}")
    fitted = _sem_fit(list(arrays.values()), fir)
    print(f"fitted on all three (veto, weight, t): {fitted}")
    if fitted:
        for name in SUITES:
            print(f"  {name:<16} {cells(at(name, fitted))}")


# -- issue 16, helper semfir: the semantic rules with margin -------------------------------------------------------
#
#     .venv/bin/python -m benchmarks.gate_study sem-dump            # (now also each case's decisions without the rescue)
#     .venv/bin/python -m benchmarks.gate_study sem-margin          # the families below, leaving one suite out
#
# Every family injects the decision it adds to (the word gates under the veto at `veto`, with or without round 3's
# rescue) plus the semantic pick: when nothing is injected, the semantic first choice among the first 10 admissible
# cards when (z1 - z2) + weight x its word lead >= t and its word coverage >= `cov` (0: no floor). Fitted at each
# FIR target on two suites (every slice at most the target, or at most what the word gates alone, without the
# extra, give there already: the extra adds no false injection to a slice words put over the target), measured on
# the third; the last fit uses all three.

SEM_COVERS = (0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4)


def _sem_arrays2(rows: list[Row], veto: float, rescue: bool) -> dict[str, Any]:
    import numpy as np

    a = _sem_arrays(rows, veto)
    key = "ship" if rescue else "ship_nr"
    a["ship_any"] = np.array([bool(r[key][str(veto)]) for r in rows])
    a["ship_ok"] = np.array([bool(r[key][str(veto)]) and r[key][str(veto)][0] in r["expect"] for r in rows])
    cover = []
    for r in rows:
        z: dict[str, float] = r["z"]
        first = max(z, key=lambda k: z[k]) if z else None
        cover.append(next((c[2] for c in r["adm"] if c[0] == first), 0.0))
    a["cover"] = np.array(cover)
    a["floor_on"] = "cover"
    a["lex_any"] = np.array([bool(r["lex"]) for r in rows])
    a["lex_ok"] = np.array([bool(r["lex"]) and r["lex"][0] in r["expect"] for r in rows])
    return a


def _sem_measure2(
    a: dict[str, Any], rule: tuple[float, float, float, float, bool]
) -> dict[str, tuple[float, float, int]]:
    import numpy as np

    _veto, weight, t, floor, _rescue = rule
    if weight == -2.0:  # the lexical decision alone: the reference a slice's FIR is held to
        any_, ok = a["lex_any"], a["lex_ok"]
        add = None
    elif weight < 0 or t == math.inf:  # no pick
        add = np.zeros(len(a["pos"]), bool)
    else:
        add = a["found"] & ~a["ship_any"] & (a["gap"] + weight * a["lead"] >= t) & (a[a["floor_on"]] >= floor)
    if add is not None:
        any_ = a["ship_any"] | add
        ok = a["ship_ok"] | (add & a["right"])
    return _by_slice(a, ok, any_)


def _sem_fit2(
    suites: list[dict[tuple[float, bool], dict[str, Any]]],
    fir: float,
    rescues: tuple[bool, ...],
    covers: tuple[float, ...],
    floor_on: str = "cover",
) -> tuple[float, float, float, float, bool] | None:
    best: tuple[float, tuple[float, float, float, float, bool] | None] = (-1.0, None)
    for s in suites:
        for a in s.values():
            a["floor_on"] = floor_on
    for rescue in rescues:
        for veto in SEM_VETOES:
            refs = [_sem_measure2(s[(veto, rescue)], (veto, -2.0, 0.0, 0.0, rescue)) for s in suites]
            for cov in covers:
                for weight in SEM_WEIGHTS:
                    for t in (*SEM_THRESHOLDS, math.inf):
                        rule = (veto, weight, t, cov, rescue)
                        gained = 0.0
                        for s, ref in zip(suites, refs, strict=True):
                            m = _sem_measure2(s[(veto, rescue)], rule)
                            if any(v[1] > max(fir, ref[k][1]) + 1e-9 for k, v in m.items()):
                                break
                            gained += m["all"][0] * m["all"][2]
                        else:
                            if gained > best[0] + 1e-9:
                                best = (gained, rule)
    return best[1]


SEM_LEADS = (-1.0, 0.0, 0.02, 0.05, 0.08, 0.1, 0.15)
SEM_FAMILIES: dict[str, tuple[tuple[bool, ...], tuple[float, ...], str]] = {
    "rescue+pick (round 4)": ((True,), (0.0,), "cover"),
    "pick only": ((False,), (0.0,), "cover"),
    "pick only, coverage floor": ((False,), SEM_COVERS, "cover"),
    "rescue+pick, coverage floor": ((True,), SEM_COVERS, "cover"),
    "pick only, word-lead floor": ((False,), SEM_LEADS, "lead"),
}


def sem_margin(targets: tuple[float, ...], families: tuple[str, ...], held: tuple[str, ...] = ()) -> None:
    """Each family fitted leaving one dev suite out at each FIR target; `held`: suites measured with the all-three fit
    (never fitted on)."""
    arrays = {
        name: {(v, r): _sem_arrays2(load_sem(name), v, r) for v in SEM_VETOES for r in (True, False)}
        for name in (*SUITES, *held)
    }

    def cells(m: dict[str, tuple[float, float, int]]) -> str:
        return "  ".join(f"{k} {v[0]:.3f}/{v[1]:.3f}" for k, v in m.items())

    for name in (*SUITES, *held):
        print(
            f"{name:<16} round 4's pick 1.5/2.3 on the dumped decision (with the rescue if dumped before round 6): {cells(_sem_measure2(arrays[name][(3.0, True)], (3.0, 1.5, 2.3, 0.0, True)))}"
        )
    for family in families:
        rescues, covers, floor_on = SEM_FAMILIES[family]
        for by_rule in arrays.values():
            for a in by_rule.values():
                a["floor_on"] = floor_on
        for fir in targets:
            print(f"== {family}, fitted at FIR <= {fir}")
            for out in SUITES:
                fitted = _sem_fit2([arrays[s] for s in SUITES if s != out], fir, rescues, covers, floor_on)
                if fitted is None:
                    print(f"  {out:<16} held out: nothing holds")
                    continue
                m = _sem_measure2(arrays[out][(fitted[0], fitted[4])], fitted)
                print(f"  {out:<16} held out {fitted}: {cells(m)}")
            fitted = _sem_fit2([arrays[s] for s in SUITES], fir, rescues, covers, floor_on)
            print(f"  all three {fitted}")
            if fitted:
                for name in (*SUITES, *held):
                    m = _sem_measure2(arrays[name][(fitted[0], fitted[4])], fitted)
                    print(f"    {name:<16} {cells(m)}")


def load_sem(name: str) -> list[Row]:
    return load(name, "semcand", "sem-dump")


if __name__ == "__main__":
    sys.exit(main())
