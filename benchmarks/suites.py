"""Recall quality on the shared card suites: copy each suite into a git vault, index it, run `cairn eval`'s code.

Usage:
    .venv/bin/python benchmarks/suites.py                 # all suites, shipped thresholds, table on stdout
    .venv/bin/python benchmarks/suites.py --json          # the same figures as JSON
    .venv/bin/python benchmarks/suites.py --suite tldr-zh-dev --set min_coverage=0.5

Each suite in ../shared/bench (`cards/` + `cases.jsonl`) is copied to benchmarks/.work/<suite>, `git init`ed and
committed, and indexed into benchmarks/.work/cache. The figures come from `cairn.quality.evaluate.evaluate`, which calls
`cairn.hot.recall.recall` per case: the same decisions `cairn recall` and the hook make. `--set` overrides a
`[recall]` setting for exploration only; the table to report uses the shipped defaults.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work"
BENCH = Path(os.environ.get("CAIRN_BENCH_DIR", HERE.parent.parent / "shared" / "bench"))
SUITES = ("stackfaq-en-dev", "tldr-zh-dev", "tldr-en-dev")
COLUMNS = ("recall@1", "recall@3", "injection@1", "injection@3", "false_injection_rate")


def prepare(suite: str) -> Path:
    """benchmarks/.work/<suite>: a git vault holding the suite's cards, rebuilt when the source changed."""
    source = BENCH / suite
    if not (source / "cards").is_dir():
        raise SystemExit(f"Error: no suite at {source}; set CAIRN_BENCH_DIR")
    target = WORK / suite
    stamp = _stamp(source)
    if (target / ".bench-stamp").is_file() and (target / ".bench-stamp").read_text() == stamp:
        return target
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    shutil.copytree(source / "cards", target / "cards")
    shutil.copy2(source / "cases.jsonl", target / "cases.jsonl")
    env = dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.com")
    env.update(GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.com", GIT_CONFIG_NOSYSTEM="1")
    for args in (["init", "-q", "-b", "main"], ["add", "cards"], ["commit", "-q", "--no-verify", "-m", "suite"]):
        subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=target, env=env, check=True)
    (target / ".bench-stamp").write_text(stamp)
    return target


def _stamp(source: Path) -> str:
    files = sorted((source / "cards").iterdir())
    return f"{len(files)}:{sum(f.stat().st_size for f in files)}:{(source / 'cases.jsonl').stat().st_size}"


def run_suite(suite: str, overrides: dict[str, float], rebuild: bool = False) -> dict[str, object]:
    from cairn.hot.settings import settings_of
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer
    from cairn.quality.evaluate import evaluate, load_cases

    vault = find_vault(prepare(suite))
    report = indexer.build_index(vault, rebuild=rebuild)
    cases = load_cases(vault.root / "cases.jsonl")
    with indexer.open_index(vault) as index:
        settings = dataclasses.replace(settings_of(index), **overrides)
        started = time.perf_counter()
        result = evaluate(index, cases, settings=settings)
        seconds = time.perf_counter() - started
    data = result.to_dict()
    data.pop("cases")
    data["n_cards"] = report.n_cards
    data["ms_per_case"] = round(1000 * seconds / max(len(cases), 1), 2)
    return data


def table(results: dict[str, dict[str, object]]) -> str:
    head = f"| {'suite':<16} | {'slice':<6} | " + " | ".join(
        f"{c:>11}" for c in ("R@1", "R@3", "Inj@1", "Inj@3", "FIR")
    )
    lines = [head + " | pos | neg |", "|" + "---|" * 9]
    for suite, data in results.items():
        rows: list[tuple[str, dict[str, object]]] = [("all", data)]
        rows += sorted(data["by_slice"].items())  # type: ignore[attr-defined]
        for slice_name, m in rows:
            cells = " | ".join(f"{float(m[c]):>11.3f}" for c in COLUMNS)  # type: ignore[arg-type]
            lines.append(f"| {suite:<16} | {slice_name:<6} | {cells} | {m['n_pos']} | {m['n_neg']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", action="append", choices=SUITES, help="Only this suite (repeatable).")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="Override a [recall] setting.")
    parser.add_argument("--json", action="store_true", help="Print JSON.")
    parser.add_argument("--rebuild", action="store_true", help="Rebuild the suite indexes.")
    args = parser.parse_args(argv)
    os.environ["CAIRN_CACHE_DIR"] = str(WORK / "cache")
    sys.path.insert(0, str(HERE.parent))
    overrides: dict[str, float] = {}
    for item in args.set:
        key, _, value = item.partition("=")
        overrides[key] = float(value)
    results = {suite: run_suite(suite, overrides, args.rebuild) for suite in args.suite or SUITES}
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(table(results))
        print()
        for suite, data in results.items():
            print(f"{suite}: {data['n_cards']} cards, {data['ms_per_case']} ms per case")
    return 0


if __name__ == "__main__":
    sys.exit(main())
