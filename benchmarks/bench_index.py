"""How long `cairn index` takes on a 10,000-card vault: a full build, and an update after a one-card commit.

Run from the repository root:
    .venv/bin/python -m benchmarks.bench_index [--cards 10000] [--commits 50] [--history 300] [--full-runs 5]
        [--runs 20] [--venv DIR] [--jobs N]

The vault (`benchmarks.synth`, the same generator as the hook's) is committed in `--commits` commits, built once
and reused; `--history N` adds N commits by two authors (edits, summary changes, renames), so provenance has a
long history to walk. Each invocation clones it into a temporary folder, so the commits the benchmark makes never
reach the cached vault and every run starts from the same history.

What runs is the `cairn` of a plain venv with a regular `pip install` of the current sources
(`benchmarks.userenv`; `--venv DIR` times another venv's). Full builds: `--full-runs` times, each into an empty
cache. Incremental: `--runs` times, each after a commit that edits one card's summary, into the cache of the last
full build (`cairn index --json` must report the mode expected; a note is printed otherwise). Prints medians (and
the range), and the incremental median as a multiple of a bare `python -c pass` of the same interpreter, with each
build's median peak memory (its largest resident set, from `wait4`). Budgets
(ARCHITECTURE.md, "Budgets"): full <= 15 s, incremental <= 1 s.

`cairn index` reads cards in worker processes from 1,000 cards (`--jobs N` passes its `--jobs`; the default is
cairn's, one worker a usable core). Its workers are forked by multiprocessing's fork server, which `cairn` does not
wait for: on Linux the benchmark makes itself their subreaper and waits for them, so CPU counts every process the
build ran, and "others" is the largest resident set among them (the workers'), beside cairn's own.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.synth import add_history, edit_summary, git, make_vault
from benchmarks.userenv import WORK, describe, machine, timing_env, user_venv


def timed(
    args: list[str], env: dict[str, str], cwd: Path, expect: str | None = None
) -> tuple[float, float, dict[str, object], float, float]:
    """Wall-clock seconds one command takes, its CPU seconds (user + system: less sensitive to a busy machine; the
    processes it left counted, `subreaper`), its JSON output when `expect` names the build mode `cairn index` must
    report, and its peak memory and the largest of the others' (the largest resident set, MB; what the kernel
    reports for a process when it is reaped)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=errors, text=True)
        assert proc.stdout is not None
        out = proc.stdout.read()
        proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)  # reaped here, with its resource usage
        seconds = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            errors.seek(0)
            raise SystemExit(f"Error: {' '.join(args[:2])} failed:\n{errors.read().decode(errors='replace')[-2000:]}")
    others = _reap_others()
    cpu = usage.ru_utime + usage.ru_stime + sum(u.ru_utime + u.ru_stime for u in others)
    peak_mb = usage.ru_maxrss / 1024  # kilobytes on Linux
    worker_mb = max((u.ru_maxrss / 1024 for u in others), default=0.0)
    report: dict[str, object] = {}
    if expect is not None:
        report = json.loads(out)
        if report.get("mode") != expect:
            print(f"  note: expected a {expect} build, got {report.get('mode')}")
    return seconds, cpu, report, peak_mb, worker_mb


def subreaper() -> bool:
    """Make this process the subreaper of what it starts (Linux): the processes a command leaves (multiprocessing's
    fork server, which reaps the workers) are re-parented here, to be waited for and counted."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(36, 1, 0, 0, 0) == 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def _reap_others(wait: float = 10.0) -> list[resource.struct_rusage]:
    """The resource usage of every other child this process has left to wait for (as `subreaper` made them ours),
    each waited for until `wait` seconds have gone."""
    usages = []
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            pid, _, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.01)
            continue
        usages.append(usage)
    return usages


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):6.2f} s  (min {min(values):.2f}, max {max(values):.2f}, n={len(values)})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--commits", type=int, default=50, help="commits the vault's cards are added in")
    parser.add_argument("--history", type=int, default=0, help="extra commits by two authors (provenance)")
    parser.add_argument("--full-runs", type=int, default=5, help="full builds, each into an empty cache")
    parser.add_argument("--runs", type=int, default=20, help="incremental builds, each after a one-card commit")
    parser.add_argument("--venv", type=Path, help="time this venv's cairn (default: a plain install)")
    parser.add_argument("--rev", help="install Cairn as of this commit (default: the working tree)")
    parser.add_argument("--jobs", type=int, help="cairn index --jobs N (default: cairn's own, one a usable core)")
    args = parser.parse_args(argv)
    venv = args.venv.resolve() if args.venv else user_venv(deps=True, rev=args.rev)
    python, cairn = str(venv / "bin" / "python"), str(venv / "bin" / "cairn")
    started = time.perf_counter()
    base = make_vault(WORK / f"index-{args.cards}-{args.commits}-h{args.history}", args.cards, commits=args.commits)
    if args.history:
        add_history(base.root, args.history)
    print(machine())
    print(f"cairn: {cairn} (sources: {f'--venv {args.venv}' if args.venv else describe(args.rev)})")
    with tempfile.TemporaryDirectory(prefix="bench-index-") as tmp:
        root = Path(tmp) / "vault"
        git(Path(tmp), "clone", "-q", str(base.root), str(root))
        # A clone serves origin's default branch (what a team reviewed), so the local commits below would never be
        # indexed: without the remote, the vault serves its local main, as a personal vault does.
        git(root, "remote", "remove", "origin")
        n_commits = git(root, "rev-list", "--count", "HEAD").strip()
        print(f"vault: {args.cards} cards in {n_commits} commits (ready in {time.perf_counter() - started:.1f} s)")
        env = timing_env()
        bare = [timed([python, "-c", "pass"], env, root)[0] for _ in range(20)]
        cpu: dict[str, list[float]] = {"full": [], "incremental": []}
        peak: dict[str, list[float]] = {"full": [], "incremental": []}
        worker_peak: dict[str, list[float]] = {"full": [], "incremental": []}
        index = [cairn, "index", "--vault", str(root), "--json", *(["--jobs", str(args.jobs)] if args.jobs else [])]
        counted = subreaper()
        full: list[float] = []
        incremental: list[float] = []
        inside: dict[str, list[float]] = {"full": [], "incremental": []}  # `seconds` as cairn reports it
        report: dict[str, object] = {}
        for run in range(args.full_runs):
            env = timing_env(CAIRN_CACHE_DIR=str(Path(tmp) / f"cache-{run}"))
            seconds, cpu_s, report, peak_mb, worker_mb = timed(index, env, root, "full")
            full.append(seconds)
            cpu["full"].append(cpu_s)
            peak["full"].append(peak_mb)
            worker_peak["full"].append(worker_mb)
            inside["full"].append(float(report["seconds"]))  # type: ignore[arg-type]
        cards, problems = report.get("cards"), len(report.get("problems") or [])  # type: ignore[arg-type]
        target = root / base.cards[0].path
        for run in range(args.runs):
            edit_summary(target, f"Revised {run}:")
            git(root, "commit", "-q", "-a", "--no-verify", "-m", f"Edit one card ({run})")
            seconds, cpu_s, report, peak_mb, worker_mb = timed(index, env, root, "incremental")
            incremental.append(seconds)
            cpu["incremental"].append(cpu_s)
            peak["incremental"].append(peak_mb)
            worker_peak["incremental"].append(worker_mb)
            inside["incremental"].append(float(report["seconds"]))  # type: ignore[arg-type]
    bare_ms = statistics.median(bare) * 1000
    print(f"full build: {cards} cards indexed, {problems} problems")
    print(f"python -c pass:    median {bare_ms:6.1f} ms")
    for kind, values, budget in (("full", full, 15), ("incremental", incremental, 1)):
        print(
            f"{kind + ' index:':<19}{spread(values)}  budget {budget} s;  CPU {statistics.median(cpu[kind]):.2f} s,"
            f" in process {statistics.median(inside[kind]):.2f} s; peak memory {statistics.median(peak[kind]):.0f} MB"
            + (f" (others: {statistics.median(worker_peak[kind]):.0f} MB each)" if max(worker_peak[kind]) else "")
        )
    if not counted:
        print("note: not on Linux; CPU and memory are cairn's own process, its workers' not counted")
    print(f"incremental = {statistics.median(incremental) * 1000 / bare_ms:.0f}x bare python")
    print(machine().replace("machine:", "after:  "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
