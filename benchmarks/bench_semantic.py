"""The semantic channel (`cairn[semantic]`): what it adds on the dev suites, and what it costs (index, hook).

Run from the repository root, with the extra installed in .venv (`pip install -e '.[semantic]'`):
    .venv/bin/python -m benchmarks.bench_semantic quality [--suite S ...] [--json]
    .venv/bin/python -m benchmarks.bench_semantic index [--cards 10000]
    .venv/bin/python -m benchmarks.bench_semantic hook [--cards 10000] [--runs 20]

`quality`: each dev suite (benchmarks.recall_suites: ../shared/bench copied into git vaults) is indexed with its
card vectors; every case is recalled lexically (Cairn's shipped gates, exactly what `cairn eval` does) and its
prompt's similarity to every card computed (the encoder and rule the hook's warm process uses, in batches;
prompt vectors cached in benchmarks/.work/semantic). Rules, each with one threshold on the semantic margin (the
best card's similarity minus the second's):
- `lexical`: the shipped gates alone (the reference);
- `agree`: the lexical decision, plus the lexical top card when the lexical gates refused it but the semantic
  ranking puts the same card first with a margin >= t;
- `semantic`: the semantic top card when its margin >= t (word overlap ignored);
- `either`: `agree`, plus the semantic top card when the lexical ranking has no injected card and the margin >= t2
  (t2 fitted apart from t, on the same suites).
Each threshold is fitted on the other suites (the smallest that keeps the false injection rate <= 5% overall and
on every slice of each of them) and reported on the suite left out; the self-fitted figure (the frontier: the best
Injection@1 at FIR <= 5% on the suite itself, optimistic) is printed beside it.

`index`: a full `cairn index` of a synthetic vault (benchmarks.synth) with the extra, in seconds, and the share
spent encoding. `hook`: `cairn hook` end to end with the warm encoder up, as a ratio to a bare `python -c pass`
of the same interpreter (the .venv's: the extra lives there), interleaved, medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.recall_suites import SUITES, WORK, cases_file, prepare

CACHE = WORK / "semantic"
FIR_TARGET = 0.05
RULES = ("lexical", "agree", "semantic", "either")


# -- quality --------------------------------------------------------------------------------------------------------


def suite_table(suite: str) -> dict[str, Any]:
    """Per case: slice, expected ids, lexical top-3 and injected ids, semantic top-2 ids and similarities."""
    from cairn.hot.recall import recall
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer
    from cairn.quality.evaluate import load_cases
    from cairn.semantic.batch import similarity_matrix

    vault = find_vault(prepare(suite))
    indexer.build_index(vault)
    cases = load_cases(cases_file(suite, vault.root))
    index_file = indexer.index_file_for(vault)
    ids, sims = similarity_matrix(index_file, [c.query for c in cases], cache_dir=CACHE)
    rows: list[dict[str, Any]] = []
    with indexer.open_index(vault) as index:
        for k, case in enumerate(cases):
            result = recall(index, case.query)
            order = np.argsort(-sims[k])[:2]
            lex_top = result.candidates[0].card.id if result.candidates else None
            rows.append(
                {
                    "slice": case.slice or "",
                    "expect": list(case.expect),
                    "lex_top": lex_top,
                    "lex_injected": [c.card.id for c in result.injected],
                    "sem_top": ids[order[0]],
                    "sem_sim": float(sims[k, order[0]]),
                    "sem_margin": float(sims[k, order[0]] - sims[k, order[1]]) if len(order) > 1 else 1.0,
                    "lex_top_sim": float(sims[k, ids.index(lex_top)]) if lex_top in ids else None,
                }
            )
    return {"suite": suite, "cases": rows, "n_cards": len(ids)}


def decide(row: dict[str, Any], rule: str, t: float, t2: float = 9.0) -> str | None:
    """The first card the rule injects for a case, or None."""
    lexical = row["lex_injected"][0] if row["lex_injected"] else None
    if rule == "lexical":
        return lexical
    if rule == "semantic":
        return row["sem_top"] if row["sem_margin"] >= t else None
    agreed = row["lex_top"] is not None and row["lex_top"] == row["sem_top"] and row["sem_margin"] >= t
    first = lexical or (row["lex_top"] if agreed else None)
    if rule == "agree":
        return first
    if first is None and row["sem_margin"] >= t2:  # "either"
        return str(row["sem_top"])
    return first


def measure(rows: list[dict[str, Any]], rule: str, t: float, t2: float = 9.0) -> dict[str, Any]:
    """Injection@1 and FIR overall and per slice."""
    out: dict[str, Any] = {}
    slices = sorted({r["slice"] for r in rows})
    for name in ["all", *slices]:
        part = [r for r in rows if name == "all" or r["slice"] == name]
        pos = [r for r in part if r["expect"]]
        neg = [r for r in part if not r["expect"]]
        inj = sum(1 for r in pos if decide(r, rule, t, t2) in r["expect"]) / max(len(pos), 1)
        fir = sum(1 for r in neg if decide(r, rule, t, t2) is not None) / max(len(neg), 1)
        out[name] = {"injection@1": round(inj, 3), "fir": round(fir, 3), "n_pos": len(pos), "n_neg": len(neg)}
    return out


def worst_fir(figures: dict[str, Any]) -> float:
    return max(float(f["fir"]) for f in figures.values())


_GRID = [round(x, 4) for x in np.arange(0.0, 0.2001, 0.0025)]


def fit(tables: list[dict[str, Any]], rule: str) -> tuple[float, float]:
    """The thresholds (t, t2) that keep FIR <= 5% (overall and per slice) on every given suite, with the most
    positives injected over them; the largest thresholds when none does."""
    best: tuple[float, tuple[float, float]] = (-1.0, (_GRID[-1], 9.0))
    seconds = _GRID if rule == "either" else [9.0]
    for t in _GRID:
        for t2 in seconds:
            if t2 < t:
                continue
            figures = [measure(table["cases"], rule, t, t2) for table in tables]
            if any(worst_fir(f) > FIR_TARGET for f in figures):
                continue
            gained = sum(f["all"]["injection@1"] * f["all"]["n_pos"] for f in figures)
            if gained > best[0]:
                best = (gained, (t, t2))
    return best[1]


def quality(suites: list[str], as_json: bool) -> int:
    os.environ["CAIRN_CACHE_DIR"] = str(WORK / "cache")
    os.environ.pop("CAIRN_SEMANTIC", None)
    tables = {suite: suite_table(suite) for suite in suites}
    report: dict[str, Any] = {}
    for suite in suites:
        rows = tables[suite]["cases"]
        pos = [r for r in rows if r["expect"]]
        entry: dict[str, Any] = {
            "n_cards": tables[suite]["n_cards"],
            "recall@1_lexical": round(sum(r["lex_top"] in r["expect"] for r in pos) / max(len(pos), 1), 3),
            "recall@1_semantic": round(sum(r["sem_top"] in r["expect"] for r in pos) / max(len(pos), 1), 3),
            "rules": {},
        }
        others = [tables[s] for s in suites if s != suite]
        for rule in RULES:
            if rule == "lexical":
                entry["rules"][rule] = {"held_out": measure(rows, rule, 0.0)}
                continue
            t, t2 = fit(others, rule) if others else (_GRID[-1], 9.0)
            st, st2 = fit([tables[suite]], rule)
            entry["rules"][rule] = {
                "fitted_on": [s for s in suites if s != suite],
                "t": t,
                "t2": t2 if t2 < 9 else None,
                "held_out": measure(rows, rule, t, t2),
                "self_fit": {"t": st, "t2": st2 if st2 < 9 else None, **measure(rows, rule, st, st2)["all"]},
            }
        report[suite] = entry
    if as_json:
        print(json.dumps(report, indent=2))
        return 0
    for suite, entry in report.items():
        print(
            f"{suite}: {entry['n_cards']} cards; Recall@1 lexical {entry['recall@1_lexical']}, "
            f"semantic {entry['recall@1_semantic']}"
        )
        for rule, data in entry["rules"].items():
            cells = "  ".join(
                f"{name} Inj@1 {f['injection@1']:.3f} FIR {f['fir']:.3f}" for name, f in data["held_out"].items()
            )
            fitted = "" if rule == "lexical" else f" (t={data['t']}, t2={data['t2']}, fitted on {data['fitted_on']})"
            print(f"  {rule:<9}{cells}{fitted}")
            if rule != "lexical":
                s = data["self_fit"]
                print(f"  {'':<9}self-fit frontier: Inj@1 {s['injection@1']:.3f} FIR {s['fir']:.3f} (t={s['t']})")
    return 0


# -- costs ----------------------------------------------------------------------------------------------------------


def index_cost(n_cards: int) -> int:
    from benchmarks.synth import make_vault

    vault = make_vault(WORK / f"semantic-vault-{n_cards}", n_cards)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "CAIRN_CACHE_DIR": tmp, "CAIRN_STATE_DIR": tmp}
        env.pop("CAIRN_SEMANTIC", None)
        lexical_env = {**env, "CAIRN_SEMANTIC": "0"}
        cairn = str(Path(sys.executable).with_name("cairn"))
        started = time.perf_counter()
        subprocess.run([cairn, "index", "--vault", str(vault.root)], env=lexical_env, check=True, capture_output=True)
        lexical = time.perf_counter() - started
        Path(tmp, "vaults").exists() and subprocess.run(["rm", "-rf", str(Path(tmp, "vaults"))], check=True)
        started = time.perf_counter()
        subprocess.run([cairn, "index", "--vault", str(vault.root)], env=env, check=True, capture_output=True)
        full = time.perf_counter() - started
        vec = list(Path(tmp).rglob("*.vec"))
        size = vec[0].stat().st_size if vec else 0
    print(
        f"cairn index, {n_cards} cards: {full:.1f} s with the extra (vectors {size / 1e6:.1f} MB), "
        f"{lexical:.1f} s without; budget 120 s; {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}"
    )
    return 0


def hook_cost(n_cards: int, runs: int) -> int:
    from benchmarks.synth import make_vault, synth_cards

    vault = make_vault(WORK / f"semantic-vault-{n_cards}", n_cards)
    cards = synth_cards(n_cards)
    python = sys.executable
    cairn = str(Path(python).with_name("cairn"))
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "CAIRN_CACHE_DIR": tmp + "/cache", "CAIRN_STATE_DIR": tmp + "/state"}
        env.pop("CAIRN_SEMANTIC", None)
        env["CAIRN_SEMANTIC_IDLE"] = "600"
        subprocess.run([cairn, "index", "--vault", str(vault.root)], env=env, check=True, capture_output=True)
        off = {**env, "CAIRN_SEMANTIC": "0"}

        def payload(i: int) -> bytes:
            card = cards[(i * 7919) % len(cards)]
            prompt = f"{card.name.lower()} — how do I fix this?"
            data = {"session_id": f"s{i}", "cwd": str(vault.root), "hook_event_name": "UserPromptSubmit"}
            return json.dumps({**data, "prompt": prompt}).encode()

        hook = [cairn, "hook", "--format", "claude-code", "--vault", str(vault.root)]
        subprocess.run(hook, input=payload(0), env=env, capture_output=True, check=True)  # starts the daemon
        for _ in range(100):
            if Path(tmp, "state", "semantic.sock").exists():
                break
            time.sleep(0.1)
        subprocess.run(hook, input=payload(1), env=env, capture_output=True, check=True)  # loads the vectors
        times: dict[str, list[float]] = {"bare": [], "lexical": [], "semantic": []}
        for i in range(runs):
            for name in ("bare", "lexical", "semantic"):
                started = time.perf_counter()
                if name == "bare":
                    subprocess.run([python, "-c", "pass"], check=True)
                else:
                    run_env = env if name == "semantic" else off
                    subprocess.run(hook, input=payload(i + 2), env=run_env, capture_output=True, check=True)
                times[name].append(time.perf_counter() - started)
        log = Path(tmp, "state", "semantic.log")
        served = log.read_text() if log.exists() else ""
        bare = statistics.median(times["bare"])
        print(f"cairn hook, {n_cards} cards, {runs} runs, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}:")
        for name in ("bare", "lexical", "semantic"):
            med = statistics.median(times[name])
            print(f"  {name:<9} {med * 1000:7.1f} ms  {med / bare:5.2f}x")
        print("  budget with the warm encoder up: 3x;", "daemon log:", served.strip().splitlines()[:1])
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("quality", "index", "hook"))
    parser.add_argument("--suite", action="append", choices=SUITES)
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.what == "quality":
        return quality(list(args.suite or SUITES), args.json)
    if args.what == "index":
        return index_cost(args.cards)
    return hook_cost(args.cards, args.runs)


if __name__ == "__main__":
    sys.exit(main())
