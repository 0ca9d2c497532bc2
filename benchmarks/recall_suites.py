"""Recall quality on the shared card suites: copy each suite into a git vault, index it, run `cairn eval`'s code.

Run from the repository root:
    .venv/bin/python -m benchmarks.recall_suites                  # all suites, shipped thresholds, a table
    .venv/bin/python -m benchmarks.recall_suites --json           # the same figures as JSON
    .venv/bin/python -m benchmarks.recall_suites --suite tldr-zh-dev --set min_coverage=0.5
    .venv/bin/python -m benchmarks.recall_suites --decisions decisions.json   # + every case's decisions

Each suite in ../shared/bench (`cards/` + `cases.jsonl`; CAIRN_BENCH_DIR elsewhere) is copied to
benchmarks/.work/<suite>, `git init`ed and committed, and indexed into benchmarks/.work/cache. `--suite template`
is the vault template Cairn ships (`cairn/templates/vault`, its `evals/cases.yaml`; 14 cards, a sanity check only).
`--suite wtfpython-agent` is a held-out suite kept in benchmarks/suites (57 Python-gotcha cards, agent-style prompts;
never fitted on: benchmarks/suites/wtfpython-agent/SOURCE.md); it is not run by default. `--suite gitflight-agent`
is another (60 git lessons from git-flight-rules, 40 cards in English and 20 in Chinese, agent-style prompts in both
languages and across them; never fitted on: its SOURCE.md); not run by default either. `--suite agent-lessons` is
the two in one 117-card vault, the shape of issue 16's own held-out agent-prompt suite (git en+zh and wtfpython).
`--suite k8sops-agent` is a fourth held-out suite (60 Kubernetes lessons from kubernetes/website, 40 cards in English
and 20 in Chinese, agent-style prompts in both languages; written blind and measured once: its SOURCE.md).
`--suite wtfjs-agent` is a lesson suite kept there too (58 JavaScript-gotcha cards, agent-style prompts; fittable,
a dev suite: benchmarks/suites/wtfjs-agent/SOURCE.md); it is not run by default either.
`--suite gostyle-agent` is another fittable one (60 Go lessons from the Uber Go Style Guide, 40 cards in English and
20 in Chinese, agent-style prompts in both languages and across them: benchmarks/suites/gostyle-agent/SOURCE.md).
`--suite dockerops-agent` is a third (60 container lessons from Docker's documentation, 40 cards in English and 20 in
Chinese, Dockerfile/run/Compose pitfalls, prompts in both languages: benchmarks/suites/dockerops-agent/SOURCE.md).
The figures come from `cairn.quality.evaluate.evaluate`, which calls `cairn.hot.recall.recall` per case: the same
decisions `cairn recall` and the hook make. `--set` overrides a `[recall]` setting for exploration only; the table
to report uses the shipped defaults.

`--decisions FILE` writes, for every suite run and for the template vault, every case's id, expected ids, ranked
ids (the top 3 before the gates) and injected ids as JSON (sorted keys, so equal decisions give equal bytes): a
fingerprint to prove a refactor changed no decision. Write one before the change and one after, then `cmp` them.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.synth import git
from cairn.cards.authoring import verified_today

if TYPE_CHECKING:
    from collections.abc import Sequence

    from cairn.quality.evaluate import CaseOutcome

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work"
BENCH = Path(os.environ.get("CAIRN_BENCH_DIR", HERE.parent.parent / "shared" / "bench"))
SUITES = ("stackfaq-en-dev", "tldr-zh-dev", "tldr-en-dev")
# benchmarks/suites/<name>: never fitted on, run only with --suite; "agent-lessons" is the two in one vault
HELD_OUT = ("wtfpython-agent", "gitflight-agent", "agent-lessons", "k8sops-agent")
COMBINED = {"agent-lessons": ("gitflight-agent", "wtfpython-agent")}  # one vault holding these suites' cards and cases
LESSON_SUITES = (
    "wtfjs-agent",
    "gostyle-agent",
    "dockerops-agent",
)  # benchmarks/suites/<name>: fittable dev suites, run only with --suite
TEMPLATE = "template"
# Prompts an agent gets between questions ("continue", "run the tests", "fix it", "再试一次"): nothing in any vault is
# about them, so every card injected for one is a false injection. Written once, by hand, before any measurement,
# and split in two halves by position: "fit" (what a rule may be set on) and "report" (what it is judged on).
FOLLOWUPS = HERE / "suites" / "followups" / "cases.jsonl"
COLUMNS = ("recall@1", "recall@3", "injection@1", "injection@3", "false_injection_rate", "wrong@1")


def prepare(suite: str) -> Path:
    """benchmarks/.work/<suite>: a git vault holding the suite's cards (or the template vault), rebuilt when the
    source changed."""
    if suite == TEMPLATE:
        source = template_source()
        return _vault_from(source, WORK / "template", tuple(sorted(p.name for p in source.iterdir())), ("-A",))
    if suite in COMBINED:
        return _vault_from(_combined_source(suite), WORK / suite, ("cards", "cases.jsonl"), ("cards",))
    source = BENCH / suite
    if suite in (*HELD_OUT, *LESSON_SUITES) and not (source / "cards").is_dir():
        source = HERE / "suites" / suite
    if not (source / "cards").is_dir():
        raise SystemExit(f"Error: no suite at {source}; set CAIRN_BENCH_DIR")
    return _vault_from(source, WORK / suite, ("cards", "cases.jsonl"), ("cards",))


def _combined_source(suite: str) -> Path:
    """benchmarks/.work/<suite>.source: the cards and cases of COMBINED[suite]'s suites side by side (their card
    names are disjoint; a clash stops the run rather than drop a card)."""
    source = WORK / f"{suite}.source"
    shutil.rmtree(source, ignore_errors=True)
    (source / "cards").mkdir(parents=True)
    cases: list[str] = []
    for part in COMBINED[suite]:
        origin = HERE / "suites" / part
        for card in sorted((origin / "cards").rglob("*")):
            if card.is_file():
                target = source / "cards" / card.relative_to(origin / "cards")
                if target.exists():
                    raise SystemExit(f"Error: {suite}: {card.name} is in two of {COMBINED[suite]}")
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(card, target)
        cases += (origin / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    (source / "cases.jsonl").write_text("\n".join(cases) + "\n", encoding="utf-8")
    return source


def cases_file(suite: str, root: Path) -> Path:
    return root / ("evals/cases.yaml" if suite == TEMPLATE else "cases.jsonl")


def template_source() -> Path:
    import cairn

    return Path(cairn.__file__).resolve().parent / "templates" / "vault"


def _vault_from(source: Path, target: Path, names: tuple[str, ...], commit: tuple[str, ...]) -> Path:
    """Copy `names` from `source` to `target`, `git init`, commit `commit` (paths to `git add`). Built beside the
    target and renamed into place, so two runs preparing the same suite never commit a half-copied vault."""
    stamp = _stamp(source, names)
    if (target / ".bench-stamp").is_file() and (target / ".bench-stamp").read_text() == stamp:
        return target
    building = target.with_name(f"{target.name}.building-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    for name in names:
        if (source / name).is_dir():
            shutil.copytree(source / name, building / name)
        elif (source / name).is_file():
            shutil.copy2(source / name, building / name)
    if source == template_source():  # as `cairn init` lays it down: its cards verified today, not expired
        for card in (building / "cards").rglob("*.md"):
            card.write_bytes(verified_today(card.read_bytes()))
    git(building, "init", "-q", "-b", "main")
    (building / ".git" / "info" / "exclude").write_text(".bench-stamp\n")
    git(building, "add", *commit)
    git(building, "commit", "-q", "--no-verify", "-m", "suite")
    copied = sum(1 for p in (source / "cards").rglob("*") if p.is_file())
    committed = len(git(building, "ls-files", "cards").splitlines())
    if committed != copied:
        raise SystemExit(f"Error: {building}: {committed} card files committed, {copied} in {source / 'cards'}")
    (building / ".bench-stamp").write_text(stamp)
    shutil.rmtree(target, ignore_errors=True)
    building.rename(target)
    return target


def _stamp(source: Path, names: tuple[str, ...]) -> str:
    """A hash of the files copied (paths and contents)."""
    digest = hashlib.sha256()
    for name in names:
        path = source / name
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            if file.is_file():
                digest.update(file.relative_to(source).as_posix().encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()


def run_suite(
    suite: str, overrides: dict[str, Any], rebuild: bool = False, semantic: bool = False, followups: bool = False
) -> dict[str, Any]:
    """The suite's metrics (overall and by slice), its cases' decisions under "cases", card count, ms per case;
    with `followups`, the false injection rate of FOLLOWUPS' prompts asked of the suite's vault (by half)."""
    from cairn.hot.settings import settings_of
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer
    from cairn.quality.evaluate import evaluate, load_cases

    vault = find_vault(prepare(suite))
    report = indexer.build_index(vault, rebuild=rebuild)
    cases = load_cases(FOLLOWUPS if followups else cases_file(suite, vault.root))
    with indexer.open_index(vault) as index:
        settings = dataclasses.replace(settings_of(index), **overrides)
        sims = None
        if semantic:  # the z-scores the hook gets from the semantic channel (its 50 most similar cards; serve.py)
            from cairn.semantic.batch import similarities_for

            prompts = [case.query for case in cases]
            sims = similarities_for(index.path, prompts, top=50, z=True, cache_dir=WORK / "semantic")
        started = time.perf_counter()
        result = evaluate(index, cases, settings=settings, semantic=sims)
        seconds = time.perf_counter() - started
    data = result.to_dict()
    add_wrong_at_1(data, result.outcomes)
    data["n_cards"] = report.n_cards
    data["ms_per_case"] = round(1000 * seconds / max(len(cases), 1), 2)
    return data


def add_wrong_at_1(data: dict[str, Any], outcomes: Sequence[CaseOutcome]) -> None:
    """Wrong@1, overall and per slice: the share of positives whose first injected card is not one they expect. The
    false injection rate counts negatives only; a card injected for a real question that is not its answer misleads
    the agent as much, and a rule that lifts Injection@1 can raise it (RESULTS "Round 26")."""
    tallies: dict[str, list[int]] = {}
    for o in outcomes:
        if o.case.positive:
            wrong = int(bool(o.injected) and o.injected[0] not in o.case.expect)
            for key in ("", o.case.slice) if o.case.slice else ("",):
                tally = tallies.setdefault(key, [0, 0])
                tally[0] += wrong
                tally[1] += 1
    for key, (wrong, positives) in tallies.items():
        target = data if not key else data["by_slice"][key]
        target["wrong@1"] = round(wrong / positives, 4)
    for target in (data, *data.get("by_slice", {}).values()):
        target.setdefault("wrong@1", 0.0)


def table(results: dict[str, dict[str, Any]]) -> str:
    head = f"| {'suite':<16} | {'slice':<6} | " + " | ".join(
        f"{c:>11}" for c in ("R@1", "R@3", "Inj@1", "Inj@3", "FIR", "Wrong@1")
    )
    lines = [head + " | pos | neg |", "|" + "---|" * 10]
    for suite, data in results.items():
        rows: list[tuple[str, dict[str, Any]]] = [("all", data), *sorted(data["by_slice"].items())]
        for slice_name, m in rows:
            cells = " | ".join(f"{float(m[c]):>11.3f}" for c in COLUMNS)
            lines.append(f"| {suite:<16} | {slice_name:<6} | {cells} | {m['n_pos']} | {m['n_neg']} |")
    return "\n".join(lines)


def decisions(results: dict[str, dict[str, Any]]) -> str:
    """Every case's id, expect, ranked and injected ids per suite, as JSON with sorted keys."""
    return json.dumps({suite: data["cases"] for suite, data in results.items()}, indent=0, sort_keys=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--suite",
        action="append",
        choices=(*SUITES, *HELD_OUT, *LESSON_SUITES, TEMPLATE),
        help="Only this suite (repeatable).",
    )
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="Override a [recall] setting.")
    parser.add_argument("--json", action="store_true", help="Print JSON.")
    parser.add_argument("--rebuild", action="store_true", help="Rebuild the suite indexes.")
    parser.add_argument(
        "--decisions", type=Path, metavar="FILE", help="Write every case's decisions (suites run + template) as JSON."
    )
    parser.add_argument(
        "--semantic", action="store_true", help="With the semantic extra's similarities (pip install the extra)."
    )
    parser.add_argument(
        "--followups",
        action="store_true",
        help="Ask each suite's vault the follow-up prompts (benchmarks/suites/followups) instead of its own cases.",
    )
    args = parser.parse_args(argv)
    os.environ["CAIRN_CACHE_DIR"] = str(WORK / "cache")
    overrides: dict[str, Any] = {}
    for item in args.set:
        key, _, value = item.partition("=")
        overrides[key] = float(value)
    suites = list(args.suite or SUITES)
    if args.decisions and TEMPLATE not in suites:
        suites.append(TEMPLATE)
    results = {suite: run_suite(suite, overrides, args.rebuild, args.semantic, args.followups) for suite in suites}
    if args.decisions:
        args.decisions.write_text(decisions(results))
    if args.json:
        figures = {suite: {k: v for k, v in data.items() if k != "cases"} for suite, data in results.items()}
        print(json.dumps(figures, indent=2))
    else:
        print(table(results))
        print()
        for suite, data in results.items():
            print(f"{suite}: {data['n_cards']} cards, {data['ms_per_case']} ms per case")
    if args.decisions:
        counts = ", ".join(f"{suite} {len(data['cases'])}" for suite, data in results.items())
        print(f"decisions: {args.decisions} ({counts} cases)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
