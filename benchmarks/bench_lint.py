"""How long `cairn lint` takes on one changed card in a vault of 10,000 cards, as the pre-commit hook runs it.

Run from the repository root:
    .venv/bin/python -m benchmarks.bench_lint [--cards 10000] [--runs 20] [--cold-runs 5] [--whole-runs 5]
        [--venv DIR]

The vault (`benchmarks.synth`, the same generator as the hook's) is built once and reused; each invocation clones
it into a temporary folder, stages a change to one card's summary there, and runs `cairn lint <that card>` with
GIT_INDEX_FILE set, as git sets it for a hook (so the staged content and the rest of the vault are read from git's
index). What runs is the `cairn` of a plain venv with a regular `pip install` of the current sources
(`benchmarks.userenv`; `--venv DIR` times another venv's). Dates are checked as of CAIRN_TODAY=2026-12-01, so the
findings do not change with the calendar.

Prints medians (and the range) for: the first run (no lint cache: every card is parsed once; `--cold-runs`, each
with an empty cache), warm runs (only the changed blob is parsed; `--runs`, interleaved with a bare
`python -c pass` of the same interpreter and with the same check from the working tree), and the whole vault
(`--whole-runs`), each as a multiple of the bare interpreter; then lint's own summary line of each kind of run.
`--hostile-runs N` also times, N times each, one staged card of 1 MiB (the most a card may be) whose body is a shape
markdown-it-py or a security rule's expression is slow on (`HOSTILE`): a card a writer can commit to stall every
teammate's pre-commit hook and CI (and the index update after each commit).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.synth import edit_summary, git, make_vault
from benchmarks.userenv import WORK, describe, machine, timing_env, user_venv

TODAY = "2026-12-01"
# The pre-commit hook lints each staged card: at 10,000 cards it should cost a commit under a second (it took 1.7 s
# while a set of every card id was built once per card, fixed at stop 40).
WARM_BUDGET_MS = 1000
# Bodies markdown-it-py reads at 2-30 s per MiB (RESULTS.md "Lint"): one paragraph of `[`, a line of `[` each, a list
# of a quarter of a million items.
HOSTILE = {
    "a paragraph of [": "[",
    "lines of [": "[\n",
    "a list of 250,000 items": "- a\n",
    # shapes the security rules' expressions read quadratically until stop 46 (a scan from each start to the end)
    "curl curl curl ... (secret)": "curl ",
    "<!-- <!-- ... (prompt-injection)": "<!-- ",
    "** ** ... (prompt-injection)": "**",
    "_ then one long word (prompt-injection)": "_ " + "a" * 1_048_000,
}


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """Wall-clock seconds one command takes, its CPU seconds (user + system: less sensitive to a busy machine), and
    the last line it wrote to stderr (lint's summary)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):  # 1: lint found errors
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr[-500:]}")
    lines = done.stderr.strip().splitlines()
    return seconds, usage.ru_utime + usage.ru_stime - cpu, lines[-1] if lines else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=20, help="warm runs (and bare and working-tree runs)")
    parser.add_argument("--cold-runs", type=int, default=5, help="first runs, each with an empty lint cache")
    parser.add_argument("--whole-runs", type=int, default=5, help="warm runs over the whole vault")
    parser.add_argument("--hostile-runs", type=int, default=0, help="runs over each 1 MiB hostile card (HOSTILE)")
    parser.add_argument("--venv", type=Path, help="time this venv's cairn (default: a plain install)")
    parser.add_argument("--rev", help="install Cairn as of this commit (default: the working tree)")
    args = parser.parse_args(argv)
    venv = args.venv.resolve() if args.venv else user_venv(deps=True, rev=args.rev)
    python, cairn = str(venv / "bin" / "python"), str(venv / "bin" / "cairn")
    started = time.perf_counter()
    base = make_vault(WORK / f"lint-{args.cards}", args.cards)
    print(machine())
    print(f"cairn: {cairn} (sources: {f'--venv {args.venv}' if args.venv else describe(args.rev)})")
    print(f"vault of {args.cards} cards ready ({time.perf_counter() - started:.1f} s)")
    results: dict[str, list[float]] = {"bare": [], "cold": [], "warm": [], "worktree": [], "whole": []}
    cpu: dict[str, list[float]] = {name: [] for name in results}
    summaries: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="bench-lint-") as tmp:
        root = Path(tmp) / "vault"
        git(Path(tmp), "clone", "-q", str(base.root), str(root))
        rel = base.cards[0].path
        edit_summary(root / rel, "Revised:")
        git(root, "add", rel)
        staged = timing_env(GIT_INDEX_FILE=".git/index", CAIRN_TODAY=TODAY)
        for run in range(args.cold_runs):
            env = dict(staged, CAIRN_CACHE_DIR=str(Path(tmp) / f"cache-cold-{run}"))
            seconds, cpu_s, summaries["cold"] = timed([cairn, "lint", rel], root, env)
            results["cold"].append(seconds)
            cpu["cold"].append(cpu_s)
        cache = str(Path(tmp) / "cache")
        commands = {
            "bare": ([python, "-c", "pass"], staged),
            "warm": ([cairn, "lint", rel], dict(staged, CAIRN_CACHE_DIR=cache)),
            "worktree": ([cairn, "lint", rel], timing_env(CAIRN_CACHE_DIR=cache, CAIRN_TODAY=TODAY)),
        }
        timed(commands["warm"][0], root, commands["warm"][1])  # fills the lint cache
        order = list(commands)
        for run in range(args.runs):
            for name in order[run % 3 :] + order[: run % 3]:
                command, env = commands[name]
                seconds, cpu_s, summary = timed(command, root, env)
                results[name].append(seconds)
                cpu[name].append(cpu_s)
                summaries[name] = summary
        whole_env = timing_env(CAIRN_CACHE_DIR=cache, CAIRN_TODAY=TODAY)
        for _ in range(args.whole_runs):
            seconds, cpu_s, summaries["whole"] = timed([cairn, "lint"], root, whole_env)
            results["whole"].append(seconds)
            cpu["whole"].append(cpu_s)
        hostile = _hostile(root, args.hostile_runs, cairn, dict(staged, CAIRN_CACHE_DIR=cache))
    base_ms = statistics.median(results["bare"]) * 1000
    base_cpu = statistics.median(cpu["bare"]) * 1000
    print(f"{'bare python -c pass':<46}{base_ms:7.0f} ms  (CPU {base_cpu:.0f} ms)")
    for label, key in (
        ("one staged card, first run (no lint cache)", "cold"),
        ("one staged card, warm (hook, git's index)", "warm"),
        ("one card, warm (working tree)", "worktree"),
        (f"whole vault, warm ({args.cards} cards, all rules)", "whole"),
    ):
        values = results[key]
        if not values:  # `--whole-runs 0`, `--cold-runs 0`: a row not measured
            continue
        ms = statistics.median(values) * 1000
        cpu_ms = statistics.median(cpu[key]) * 1000
        budget = ""
        if key == "warm":  # what every commit costs through the pre-commit hook
            budget = f"  budget {WARM_BUDGET_MS} ms {'ok' if ms <= WARM_BUDGET_MS else 'OVER'}"
        print(
            f"{label:<46}{ms:7.0f} ms  ({ms / base_ms:5.1f}x bare; min {min(values) * 1000:.0f}, "
            f"max {max(values) * 1000:.0f}, n={len(values)}; CPU {cpu_ms:.0f} ms = {cpu_ms / base_cpu:.1f}x){budget}"
        )
    for label, (values, summary) in hostile.items():
        ms = statistics.median(values) * 1000
        print(f"{'1 MiB staged card, ' + label:<46}{ms:7.0f} ms  ({ms / base_ms:5.1f}x bare; n={len(values)})")
        print(f"  {summary}")
    for key in ("cold", "warm", "worktree", "whole"):
        print(f"  {key}: {summaries.get(key, '')}")
    print(machine().replace("machine:", "after:  "))
    return 0


def _hostile(root: Path, runs: int, cairn: str, env: dict[str, str]) -> dict[str, tuple[list[float], str]]:
    """Each `HOSTILE` shape as one staged card of 1 MiB: its lint's seconds per run and lint's summary."""
    timings: dict[str, tuple[list[float], str]] = {}
    if runs <= 0:
        return timings
    head = "---\nname: A hostile body\nsummary: A body markdown-it-py is slow on.\n---\n\n"
    for label, shape in HOSTILE.items():
        rel = "cards/hostile/body.md"
        body = (shape * (1024 * 1024 // len(shape)))[: 1024 * 1024 - len(head) - 1]
        (root / "cards" / "hostile").mkdir(exist_ok=True)
        (root / rel).write_text(head + body + "\n")
        git(root, "add", rel)
        values, summary = [], ""
        for _ in range(runs):
            seconds, _cpu, summary = timed([cairn, "lint", rel], root, env)
            values.append(seconds)
        timings[label] = (values, summary)
    git(root, "rm", "-q", "-f", "cards/hostile/body.md")
    return timings


if __name__ == "__main__":
    sys.exit(main())
