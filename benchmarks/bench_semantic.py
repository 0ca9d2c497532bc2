"""The semantic channel (`cairn[semantic]`): what it adds on the dev suites, and what it costs (index, hook).

Run from the repository root, with the extra installed in .venv (`pip install -e '.[semantic]'`):
    .venv/bin/python -m benchmarks.bench_semantic quality [--suite S ...] [--json]
    .venv/bin/python -m benchmarks.bench_semantic index [--cards 10000]
    .venv/bin/python -m benchmarks.bench_semantic hook [--cards 10000] [--runs 20]
    .venv/bin/python -m benchmarks.bench_semantic compare --old OLD_VENV/bin [--new NEW_VENV/bin] [--cards N] [--runs N]
        [--old-work OLD_CHECKOUT/benchmarks/.work]

`quality`: each dev suite (benchmarks.recall_suites: ../shared/bench copied into git vaults) is indexed with its
card vectors; every case is recalled lexically (Cairn's shipped gates, exactly what `cairn eval` does) and its
prompt's similarity to every card computed (the encoder and rule the hook's warm process uses, in batches;
prompt vectors cached in benchmarks/.work/semantic). Similarities are read as z-scores over the vault's cards.
Rules:
- `lexical`: recall's gates alone (the reference: whatever recall ships at the time);
- `shipped`: recall given the semantic evidence exactly as the hook gives it (the 50 closest cards' z-scores):
  what Cairn does with the extra, end to end (nothing fitted here);
- `agree`: the lexical decision, plus the lexical top card when the gates refused it but the semantic ranking puts
  the same card first by a margin >= t (in z-units);
- `semantic`: the semantic top card when its margin >= t (word overlap ignored);
- `veto`: a lexical injection stands only when the semantic z-score of its card is >= w; plus `agree`'s cards.
Each rule's thresholds are fitted on the other suites (the ones injecting most while keeping the false injection
rate <= 5% overall and on every slice of each of them) and reported on the suite left out; the self-fitted figure
(the frontier: the best Injection@1 at FIR <= 5% on the suite itself, optimistic) is printed beside it.

`index`: a full `cairn index` of a synthetic vault (benchmarks.synth) with the extra, in seconds, and the share
spent encoding. `hook`: `cairn hook` end to end with the warm encoder up, as a ratio to a bare `python -c pass`
of the same interpreter (the .venv's: the extra lives there), interleaved, medians. `compare`: the hook of two
installs (say plain installs of an older commit and of this one, each with the extra), interleaved on the vault
`index` left, with a bare interpreter and the lexical hook; when the two encode apart (another engine: the side
file's model name differs, so neither reads the other's vectors), run `index` in each checkout with its own
install's interpreter and pass the old one's work folder as --old-work.
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

try:
    import numpy as np
except ImportError:  # its --help still runs without the extra; main() says what to install
    np = None  # type: ignore[assignment]

from benchmarks.recall_suites import HELD_OUT, SUITES, WORK, cases_file, prepare

CACHE = WORK / "semantic"
FIR_TARGET = 0.05
RULES = ("lexical", "shipped", "agree", "semantic", "veto")


# -- quality --------------------------------------------------------------------------------------------------------


def suite_table(suite: str) -> dict[str, Any]:
    """Per case: slice, expected ids, lexical top and injected ids, semantic top id, similarity and margin (cached
    in benchmarks/.work/semantic, keyed by the suite, recall's and the encoder's sources, and the engine's vectors'
    name: with and without onnxruntime the same sources encode apart)."""
    import hashlib

    import cairn
    from cairn.semantic import encoder

    digest = hashlib.sha256(suite.encode() + b"\0" + encoder.MODEL.encode())
    package = Path(cairn.__file__).resolve().parent
    for source in sorted([*package.glob("hot/*.py"), *package.glob("semantic/*.py"), package / "config.py"]):
        digest.update(source.read_bytes())
    source_dir = prepare(suite)
    digest.update(cases_file(suite, source_dir).read_bytes())
    for card in sorted((source_dir / "cards").rglob("*.md")):
        digest.update(card.read_bytes())
    cached = CACHE / f"table-{suite}-{digest.hexdigest()[:16]}.json"
    if cached.is_file():
        table: dict[str, Any] = json.loads(cached.read_text())
        return table
    table = _suite_table(suite)
    CACHE.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(table))
    return table


def _suite_table(suite: str) -> dict[str, Any]:
    from cairn.hot.recall import recall
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer
    from cairn.quality.evaluate import load_cases
    from cairn.semantic.batch import similarities_for, similarity_matrix

    vault = find_vault(prepare(suite))
    indexer.build_index(vault)
    cases = load_cases(cases_file(suite, vault.root))
    index_file = indexer.index_file_for(vault)
    prompts = [c.query for c in cases]
    ids, sims = similarity_matrix(index_file, prompts, cache_dir=CACHE)
    # what the hook gets, exactly (`cairn eval` with the extra, `recall_suites --semantic`): the 50 closest cards'
    # z-scores and their unit in cosine (`Similarities.scale`, which the agreement pick reads)
    evidence = similarities_for(index_file, prompts, top=50, z=True, cache_dir=CACHE)
    rows: list[dict[str, Any]] = []
    position = {card_id: i for i, card_id in enumerate(ids)}
    with indexer.open_index(vault) as index:
        for k, case in enumerate(cases):
            result = recall(index, case.query)
            shipped = recall(index, case.query, semantic=evidence[k])
            order = np.argsort(-sims[k])[:2]
            lex_top = result.candidates[0].card.id if result.candidates else None
            rows.append(
                {
                    "slice": case.slice or "",
                    "expect": list(case.expect),
                    "lex_top": lex_top,
                    "lex_injected": [c.card.id for c in result.injected],
                    "shipped_injected": [c.card.id for c in shipped.injected],
                    "sem_top": ids[order[0]],
                    "sem_sim": float(sims[k, order[0]]),
                    "sem_margin": float(sims[k, order[0]] - sims[k, order[1]]) if len(order) > 1 else 1.0,
                    "lex_top_sim": float(sims[k, position[lex_top]]) if lex_top in position else None,
                    "lex_top_rank": int((sims[k] > sims[k, position[lex_top]]).sum()) if lex_top in position else None,
                    "sem_mean": float(sims[k].mean()),
                    "sem_std": float(sims[k].std()),
                }
            )
    return {"suite": suite, "cases": rows, "n_cards": len(ids)}


def arrays(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The per-case facts the rules read, as numpy arrays. Similarities are read as z-scores over the vault's
    cards (the prompt's similarity to a card, less its mean over all cards, over their spread): e5's cosines sit in a
    narrow band whose level moves with the language and the vault, z-scores carry across suites."""
    expect = [set(r["expect"]) for r in rows]
    lex_first = [r["lex_injected"][0] if r["lex_injected"] else None for r in rows]
    std = np.array([max(r["sem_std"], 1e-6) for r in rows])
    lex_sim = np.array([r["lex_top_sim"] if r["lex_top_sim"] is not None else -1.0 for r in rows])
    return {
        "slice": np.array([r["slice"] for r in rows]),
        "pos": np.array([bool(e) for e in expect]),
        "lex_any": np.array([f is not None for f in lex_first]),
        "lex_ok": np.array([f in e for f, e in zip(lex_first, expect, strict=True)]),
        "lex_top_ok": np.array([r["lex_top"] in e for r, e in zip(rows, expect, strict=True)]),
        "ship_any": np.array([bool(r["shipped_injected"]) for r in rows]),
        "ship_ok": np.array(
            [bool(r["shipped_injected"]) and r["shipped_injected"][0] in e for r, e in zip(rows, expect, strict=True)]
        ),
        "agree": np.array([r["lex_top"] is not None and r["lex_top"] == r["sem_top"] for r in rows]),
        "sem_ok": np.array([r["sem_top"] in e for r, e in zip(rows, expect, strict=True)]),
        "zgap": np.array([r["sem_margin"] for r in rows]) / std,
        "zlex": (lex_sim - np.array([r["sem_mean"] for r in rows])) / std,
    }


def decide(a: dict[str, Any], rule: str, t: float, w: float = 0.0) -> tuple[Any, Any]:
    """(injected anything, the first injected card is right) per case.

    t: the semantic margin, in z-units, for the semantic top card. w (`veto` only): the z-score the lexical top card
    needs for a lexical injection to stand."""
    if rule == "lexical":
        return a["lex_any"], a["lex_ok"]
    if rule == "shipped":
        return a["ship_any"], a["ship_ok"]
    if rule == "semantic":
        on = a["zgap"] >= t
        return on, on & a["sem_ok"]
    keep = a["lex_any"] & (a["zlex"] >= w) if rule == "veto" else a["lex_any"]
    agreed = ~keep & a["agree"] & (a["zgap"] >= t)
    return keep | agreed, (keep & a["lex_ok"]) | (agreed & a["lex_top_ok"])


def measure(a: dict[str, Any], rule: str, t: float, w: float = 0.0) -> dict[str, Any]:
    """Injection@1 and FIR overall and per slice."""
    any_, ok = decide(a, rule, t, w)
    out: dict[str, Any] = {}
    for name in ["all", *sorted(set(a["slice"].tolist()))]:
        part = np.ones(len(ok), bool) if name == "all" else a["slice"] == name
        pos, neg = part & a["pos"], part & ~a["pos"]
        out[name] = {
            "injection@1": round(float(ok[pos].mean()) if pos.any() else 0.0, 3),
            "fir": round(float(any_[neg].mean()) if neg.any() else 0.0, 3),
            "n_pos": int(pos.sum()),
            "n_neg": int(neg.sum()),
        }
    return out


def worst_fir(figures: dict[str, Any]) -> float:
    return max(float(f["fir"]) for f in figures.values())


_T = [round(x * 0.1, 2) for x in range(41)]  # 0.0 to 4.0 by 0.1
_W = [round(-1.0 + x * 0.25, 2) for x in range(29)]  # -1.0 to 6.0 by 0.25


def fit(tables: list[dict[str, Any]], rule: str) -> tuple[float, float] | None:
    """The thresholds (t, w) that keep FIR <= 5% (overall and per slice) on every given suite with the most
    positives injected over them; None when no threshold does."""
    best: tuple[float, tuple[float, float] | None] = (-1.0, None)
    for t in _T:
        for w in _W if rule == "veto" else [0.0]:
            figures = [measure(table["arrays"], rule, t, w) for table in tables]
            if any(worst_fir(f) > FIR_TARGET for f in figures):
                continue
            gained = sum(f["all"]["injection@1"] * f["all"]["n_pos"] for f in figures)
            if gained > best[0]:
                best = (gained, (t, w))
    return best[1]


def quality(suites: list[str], as_json: bool) -> int:
    os.environ["CAIRN_CACHE_DIR"] = str(WORK / "cache")
    os.environ.pop("CAIRN_SEMANTIC", None)
    tables = {suite: suite_table(suite) for suite in suites}
    for table in tables.values():
        table["arrays"] = arrays(table["cases"])
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
        others = [tables[s] for s in suites if s != suite and s not in HELD_OUT]  # never fit on a held-out suite
        for rule in RULES:
            if rule in ("lexical", "shipped"):
                entry["rules"][rule] = {"held_out": measure(tables[suite]["arrays"], rule, 0.0)}
                continue
            fitted = fit(others, rule) if others else None
            own = fit([tables[suite]], rule)
            entry["rules"][rule] = {
                "fitted_on": [s for s in suites if s != suite and s not in HELD_OUT],
                "t": fitted,
                "held_out": measure(tables[suite]["arrays"], rule, *fitted) if fitted else None,
                "self_fit": {"t": own, **measure(tables[suite]["arrays"], rule, *own)["all"]} if own else None,
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
            held = data["held_out"]
            cells = "  ".join(
                f"{name} Inj@1 {f['injection@1']:.3f} FIR {f['fir']:.3f}" for name, f in (held or {}).items()
            )
            if rule in ("lexical", "shipped"):
                print(f"  {rule:<9}{cells}")
                continue
            print(f"  {rule:<9}{cells or 'no threshold keeps FIR <= 5% on the other suites'} (t, w = {data['t']})")
            own = data["self_fit"]
            if own:
                print(
                    f"  {'':<9}self-fitted frontier: Inj@1 {own['injection@1']:.3f} FIR {own['fir']:.3f} (t, w = {own['t']})"
                )
    return 0


# -- costs ----------------------------------------------------------------------------------------------------------

_CORENAME = """
import ctypes, glob, os, numpy
names = ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename64_", "openblas_get_corename")
for path in glob.glob(os.path.join(os.path.dirname(numpy.__file__) + ".libs", "*openblas*.so*")):
    for name in names:
        function = getattr(ctypes.CDLL(path), name, None)
        if function is not None:
            function.restype = ctypes.c_char_p
            print(function().decode())
            raise SystemExit(0)
print("unknown")
"""


def blas_kernels(python: str, env: dict[str, str]) -> str:
    """Which OpenBLAS kernels numpy runs in `python` under `env`, as the encoder's processes will (for the figures'
    record: `OPENBLAS_CORETYPE` forces them, and this machine's environment sets it to Haswell, AVX2, on an AVX-512
    CPU whose own choice, SkylakeX, encodes cards in about 0.65x the CPU)."""
    done = subprocess.run([python, "-c", _CORENAME], env=env, capture_output=True, text=True)
    core = done.stdout.strip() or "unknown"
    forced = env.get("OPENBLAS_CORETYPE")
    return f"OpenBLAS kernels {core} ({f'OPENBLAS_CORETYPE={forced}' if forced else 'its own choice'})"


def index_cost(n_cards: int) -> int:
    """A full `cairn index` of a synthetic vault without and with the extra; the cache it leaves (index and vectors)
    is the one `hook` serves from."""
    import shutil

    from benchmarks.synth import make_vault

    vault = make_vault(WORK / f"semantic-vault-{n_cards}", n_cards)
    cache = WORK / f"semantic-cache-{n_cards}"
    shutil.rmtree(cache, ignore_errors=True)
    env = {**os.environ, "CAIRN_CACHE_DIR": str(cache), "CAIRN_STATE_DIR": str(cache / "state")}
    env.pop("CAIRN_SEMANTIC", None)
    cairn = str(Path(sys.executable).with_name("cairn"))
    started = time.perf_counter()
    subprocess.run(
        [cairn, "index", "--vault", str(vault.root)],
        env={**env, "CAIRN_SEMANTIC": "0"},
        check=True,
        capture_output=True,
    )
    lexical = time.perf_counter() - started
    shutil.rmtree(cache / "vaults", ignore_errors=True)
    started = time.perf_counter()
    subprocess.run([cairn, "index", "--vault", str(vault.root)], env=env, check=True, capture_output=True)
    full = time.perf_counter() - started
    from cairn.semantic import vectors

    os.environ["CAIRN_CACHE_DIR"] = str(cache)  # the index's seal key lives there
    index_file = next(cache.rglob("index.cairn"))
    while not vectors.current(index_file):  # the detached encoder (more than FOREGROUND_CARDS cards)
        time.sleep(2)
    ready = time.perf_counter() - started
    log = cache / "state" / "semantic.log"
    vec = vectors.vectors_path(index_file)
    print(
        f"cairn index, {n_cards} cards: returns after {full:.1f} s with the extra ({lexical:.1f} s without); "
        f"vectors ready after {ready:.0f} s ({vec.stat().st_size / 1e6:.1f} MB); budget 120 s; "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {blas_kernels(sys.executable, env)}"
    )
    print("  encoder log:", log.read_text().strip().splitlines()[-1:] if log.exists() else "none")
    return 0


def _served(root: Path) -> None:
    """Commit Cairn's marker file in the synthetic vault `index` made, if it lacks it: the hook serves only a folder
    that has it. (The index then moves to that commit: the card vectors are reused by blob, nothing is encoded.)"""
    from benchmarks.synth import git

    if not (root / "cairn.toml").is_file():
        (root / "cairn.toml").write_text("# Cairn's settings: the defaults.\n")
        git(root, "add", "cairn.toml")
        git(root, "commit", "-q", "-m", "cairn.toml")


def hook_cost(n_cards: int, runs: int) -> int:
    from benchmarks.synth import make_vault, synth_cards

    vault = make_vault(WORK / f"semantic-vault-{n_cards}", n_cards)
    _served(vault.root)
    cards = synth_cards(n_cards)
    python = sys.executable
    cairn = str(Path(python).with_name("cairn"))
    cache = WORK / f"semantic-cache-{n_cards}"  # left by `index` (else built here: encoding takes minutes)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "CAIRN_CACHE_DIR": str(cache), "CAIRN_STATE_DIR": tmp + "/state"}
        env.pop("CAIRN_SEMANTIC", None)
        env["CAIRN_SEMANTIC_IDLE"] = "600"
        subprocess.run([cairn, "index", "--vault", str(vault.root)], env=env, check=True, capture_output=True)
        from cairn.semantic import vectors

        os.environ["CAIRN_CACHE_DIR"] = str(cache)  # the index's seal key lives there
        index_file = next(cache.rglob("index.cairn"))
        while not vectors.current(index_file):  # encoded in the background: wait for it
            time.sleep(2)
        off = {**env, "CAIRN_SEMANTIC": "0"}

        def payload(i: int) -> bytes:
            card = cards[(i * 7919) % len(cards)]
            prompt = f"{card.name.lower()} — how do I fix this?"
            data = {"session_id": f"s{i}", "cwd": str(vault.root), "hook_event_name": "UserPromptSubmit"}
            return json.dumps({**data, "prompt": prompt}).encode()

        hook = [*_launcher(Path(python).parent), "hook", "--format", "claude-code", "--vault", str(vault.root)]
        subprocess.run(hook, input=payload(0), env=env, capture_output=True, check=True)  # starts the daemon
        for _ in range(100):
            if Path(tmp, "state", "semantic.sock").exists():
                break
            time.sleep(0.1)
        subprocess.run(hook, input=payload(1), env=env, capture_output=True, check=True)  # loads the vectors

        def unfit(i: int) -> bytes:  # a prompt no card fits: with one vault, recall does not wait for the answer
            data = {"session_id": f"u{i}", "cwd": str(vault.root), "hook_event_name": "UserPromptSubmit"}
            return json.dumps({**data, "prompt": NO_FIT[i % len(NO_FIT)]}).encode()

        times: dict[str, list[float]] = {"bare": [], "lexical": [], "semantic": [], "no card fits": []}
        for i in range(runs):
            for name in times:
                started = time.perf_counter()
                if name == "bare":
                    subprocess.run([python, "-c", "pass"], check=True)
                else:
                    run_env = off if name == "lexical" else env
                    stdin = unfit(i) if name == "no card fits" else payload(i + 2)
                    subprocess.run(hook, input=stdin, env=run_env, capture_output=True, check=True)
                times[name].append(time.perf_counter() - started)
        from cairn.hot.index import IndexReader
        from cairn.hot.semantic import similarities

        os.environ["CAIRN_STATE_DIR"] = tmp + "/state"
        os.environ.pop("CAIRN_SEMANTIC", None)
        trips: list[float] = []
        answered = 0
        with IndexReader(index_file) as index:
            for i in range(runs):
                prompt = json.loads(payload(i + 2))["prompt"]
                started = time.perf_counter()
                answered += similarities(index, prompt, top=50, z=True) is not None
                trips.append(time.perf_counter() - started)
            # The hook hands the prompt over as soon as it has read it (prefetch), ranks by words meanwhile (about
            # 10 ms: slept here), then asks: what it still waits for.
            from cairn.hot.semantic import prefetch

            waits: list[float] = []
            for i in range(runs):
                prompt = json.loads(payload(runs + i + 2))["prompt"]
                prefetch(prompt, [str(index_file)])
                time.sleep(0.010)
                started = time.perf_counter()
                similarities(index, prompt, top=50, z=True)
                waits.append(time.perf_counter() - started)
        log = Path(tmp, "state", "semantic.log")
        served = log.read_text() if log.exists() else ""
        pid_file = Path(tmp, "state", "semantic.pid")
        if pid_file.exists():  # stop the warm encoder this benchmark started
            import signal

            os.kill(int(pid_file.read_text()), signal.SIGTERM)
        bare = statistics.median(times["bare"])
        print(
            f"cairn hook, {n_cards} cards, {runs} runs, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, "
            f"{blas_kernels(python, env)}:"
        )
        for name in times:
            med = statistics.median(times[name])
            print(f"  {name:<12} {med * 1000:7.1f} ms  {med / bare:5.2f}x")
        added = statistics.median(times["semantic"]) - statistics.median(times["lexical"])
        print(f"  the channel adds {added * 1000:.1f} ms a prompt (median of the difference of medians)")
        print(
            f"  the client's round trip (encode the prompt, 50 closest of {n_cards}): median "
            f"{statistics.median(trips) * 1000:.1f} ms, max {max(trips) * 1000:.1f} ms; answered {answered}/{runs}"
        )
        print(
            f"  handed over early (prefetch), 10 ms of word ranking, then asked: the wait left median "
            f"{statistics.median(waits) * 1000:.1f} ms, max {max(waits) * 1000:.1f} ms"
        )
        print("  budget with the warm encoder up: 3x;", "daemon log:", served.strip().splitlines()[:1])
    return 0


def _launcher(bin_dir: Path) -> list[str]:
    """What `cairn install` has the agents run for the install in `bin_dir` (`bench_hook.hook_launcher`)."""
    from benchmarks.bench_hook import hook_launcher

    python = str(bin_dir / "python")
    found = subprocess.run(
        [python, "-c", "import cairn; print(cairn.__file__)"], capture_output=True, text=True, check=True
    ).stdout.strip()
    return hook_launcher(python, str(bin_dir / "cairn"), Path(found).parent)


# Prompts an agent gets that fit no card of the synthetic vault (`hook`'s fourth series): with one vault served, recall
# reads the warm encoder's answer only when it could change the decision (`recall(only_if_decisive=True)`).
NO_FIT = (
    "please refactor this function to be more readable and add docstrings",
    "rename the variable in the loop and update the tests",
    "write a short summary of the changes for the pull request description",
)


def compare_hooks(n_cards: int, runs: int, old_bin: Path, new_bin: Path, old_work: Path | None = None) -> int:
    """`cairn hook` of two installs (each a venv's bin folder, e.g. a plain install of an older commit and of this
    one), warm encoders up, on the vault and cache `index` left, interleaved with a bare `python -c pass` and the
    lexical hook, medians. Each install starts its own warm encoder (its own state folder). `old_work`: the old
    install's own benchmarks/.work, where its `index` left a vault and cache (needed when the two encode apart)."""
    import signal

    from benchmarks.synth import synth_cards

    works = {"old": old_work or WORK, "new": WORK}
    for work in works.values():
        vault, cache = work / f"semantic-vault-{n_cards}", work / f"semantic-cache-{n_cards}"
        if not (vault / "cards").is_dir() or not any(cache.rglob("index.cairn.vec")):
            raise SystemExit(f"Error: run `bench_semantic index --cards {n_cards}` in {work.parent.parent} first")
        _served(vault)  # `index` leaves the vault without the marker (`hook` commits it; so does this)
    cards = synth_cards(n_cards)
    bins = {"old": old_bin, "new": new_bin}
    launchers = {name: _launcher(folder) for name, folder in bins.items()}
    with tempfile.TemporaryDirectory() as tmp:

        def env(name: str, lexical: bool = False) -> dict[str, str]:
            cache = works[name] / f"semantic-cache-{n_cards}"
            out = {**os.environ, "CAIRN_CACHE_DIR": str(cache), "CAIRN_STATE_DIR": f"{tmp}/{name}"}
            out.pop("CAIRN_SEMANTIC", None)
            out["CAIRN_SEMANTIC_IDLE"] = "600"
            if lexical:
                out["CAIRN_SEMANTIC"] = "0"
            return out

        def hook(name: str, i: int, lexical: bool = False) -> None:
            card = cards[(i * 7919) % len(cards)]
            vault = works["new" if lexical else name] / f"semantic-vault-{n_cards}"
            data = {
                "session_id": f"s{i}{'-lexical' if lexical else ''}",
                "cwd": str(vault),
                "hook_event_name": "UserPromptSubmit",
                "prompt": f"{card.name.lower()} — how do I fix this?",
            }
            subprocess.run(
                [*launchers[name], "hook", "--format", "claude-code", "--vault", str(vault)],
                input=json.dumps(data).encode(),
                env=env(name, lexical),
                capture_output=True,
                check=True,
                cwd=tmp,
            )

        for name in bins:
            vault = works[name] / f"semantic-vault-{n_cards}"
            index = [
                str(bins[name] / "cairn"),
                "index",
                "--vault",
                str(vault),
            ]  # at the marker's commit (vectors reused)
            subprocess.run(index, env=env(name), capture_output=True, check=True, cwd=tmp)
            hook(name, 0)  # starts its warm encoder
            for _ in range(300):
                if Path(tmp, name, "semantic.sock").exists():
                    break
                time.sleep(0.1)
            hook(name, 1)  # loads the vectors
        times: dict[str, list[float]] = {"bare": [], "lexical": [], "old": [], "new": []}
        for i in range(runs):
            for name in times:
                started = time.perf_counter()
                if name == "bare":
                    subprocess.run([str(old_bin / "python"), "-c", "pass"], check=True)
                else:
                    hook("new" if name == "lexical" else name, i + 2, lexical=name == "lexical")
                times[name].append(time.perf_counter() - started)
        for name in bins:
            pid = Path(tmp, name, "semantic.pid")
            if pid.exists():
                os.kill(int(pid.read_text()), signal.SIGTERM)
        kernels = blas_kernels(str(new_bin / "python"), env("new"))
    bare = statistics.median(times["bare"])
    print(
        f"cairn hook, {n_cards} cards, {runs} interleaved runs, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, "
        f"{kernels}:"
    )
    for name, med in ((k, statistics.median(v)) for k, v in times.items()):
        print(f"  {name:<8} {med * 1000:7.1f} ms  {med / bare:5.2f}x")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("quality", "index", "hook", "compare"))
    parser.add_argument("--suite", action="append", choices=(*SUITES, *HELD_OUT))
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--old", type=Path, help="compare: a venv's bin folder (the install to compare against)")
    parser.add_argument("--new", type=Path, help="compare: a venv's bin folder (default: this interpreter's)")
    parser.add_argument(
        "--old-work",
        type=Path,
        help="compare: the old install's benchmarks/.work, where `index` run from its checkout left its vectors "
        "(when the two installs encode apart: another engine's vectors are not read)",
    )
    args = parser.parse_args(argv)
    if np is None:
        parser.error("the semantic extra is not installed: pip install '.[semantic]', then run this again")
    if args.what == "quality":
        return quality(list(args.suite or SUITES), args.json)
    if args.what == "index":
        return index_cost(args.cards)
    if args.what == "compare":
        if args.old is None:
            parser.error("compare needs --old BIN (a venv's bin folder)")
        return compare_hooks(args.cards, args.runs, args.old, args.new or Path(sys.executable).parent, args.old_work)
    return hook_cost(args.cards, args.runs)


if __name__ == "__main__":
    sys.exit(main())
