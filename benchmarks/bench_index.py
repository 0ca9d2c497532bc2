"""How long `cairn index` takes on a 10,000-card vault: a full build, then an update after a one-card commit.

With `--history N` the vault first gets N more commits by two authors (edits, summary changes, renames), so
provenance has a long history to walk.

Run: .venv/bin/python benchmarks/bench_index.py [--cards 10000] [--commits 50] [--history 300]
Prints seconds, and the ratio to a bare `python -c pass` measured in the same run. Budgets (DESIGN.md): full
<= 15 s, incremental <= 1 s. CAIRN_BENCH_CMD times another version of the code (a command that runs its cairn).
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

sys.path.insert(0, str(Path(__file__).parent))
from synth import add_history, git, make_vault  # noqa: E402

HERE = Path(__file__).parent
CAIRN = os.environ.get("CAIRN_BENCH_CMD", str(Path(sys.executable).with_name("cairn"))).split()


def timed(args: list[str], env: dict[str, str], expect: str | None = None) -> float:
    """Seconds one command takes; with `expect`, says so when `cairn index --json` did another kind of build."""
    started = time.perf_counter()
    done = subprocess.run(args, env=env, check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if expect is not None and (mode := json.loads(done.stdout)["mode"]) != expect:
        print(f"  note: expected a {expect} build, got {mode}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--commits", type=int, default=50)
    parser.add_argument("--history", type=int, default=0, help="Extra commits by two authors (provenance).")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    root = make_vault(HERE / ".work" / f"synth-{args.cards}-{args.commits}", args.cards, commits=args.commits)
    if args.history:
        add_history(root, args.history)
    n_commits = git(root, "rev-list", "--count", "HEAD").strip()
    bare = statistics.median(timed([sys.executable, "-c", "pass"], dict(os.environ)) for _ in range(10))
    full: list[float] = []
    incremental: list[float] = []
    target = next((root / "cards").rglob("*.md"))
    index = [*CAIRN, "index", "--vault", str(root), "--json"]
    for run in range(args.runs):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, CAIRN_CACHE_DIR=cache)
            full.append(timed(index, env, "full"))
            target.write_text(target.read_text() + f"\nEdit {run}.\n")
            git(root, "commit", "-q", "-am", f"Edit one card ({run})")
            incremental.append(timed(index, env, "incremental"))
    print(f"vault: {args.cards} cards in {n_commits} commits; python -c pass: {bare * 1000:.1f} ms")
    print(
        f"full index:        median {statistics.median(full):6.2f} s  (budget 15 s)   runs {[round(x, 2) for x in full]}"
    )
    print(
        f"incremental index: median {statistics.median(incremental):6.2f} s  (budget 1 s)    "
        f"runs {[round(x, 2) for x in incremental]}  = {statistics.median(incremental) / bare:.0f}x bare python"
    )


if __name__ == "__main__":
    main()
