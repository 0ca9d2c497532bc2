"""`cairn index` with provenance on a 10,000-card vault with a long history: edits, summary changes and renames by
two authors over several hundred commits. Prints full and incremental seconds.

Run: .venv/bin/python benchmarks/bench_provenance.py [--cards 10000] [--history 300]
Set CAIRN_BENCH_CMD to time another version of the code (a command that runs that version's cairn).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from synth import make_vault  # noqa: E402

HERE = Path(__file__).parent
# CAIRN_BENCH_CMD="python /tmp/run-other-cairn.py" times another version of the code.
CAIRN = os.environ.get("CAIRN_BENCH_CMD", str(Path(sys.executable).with_name("cairn"))).split()
AUTHORS = [("Ann Author", "ann@example.com"), ("Bob Builder", "bob@example.com")]


def git(root: Path, *args: str, author: tuple[str, str] = AUTHORS[0]) -> str:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME=author[0],
        GIT_AUTHOR_EMAIL=author[1],
        GIT_COMMITTER_NAME=author[0],
        GIT_COMMITTER_EMAIL=author[1],
    )
    return subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True).stdout


def add_history(root: Path, commits: int, seed: int = 11) -> None:
    """Commits that each edit a few cards (sometimes the summary) or rename one, alternating authors."""
    marker = root / ".bench-history"
    if marker.exists() and marker.read_text() == str(commits):
        return
    rng = random.Random(seed)
    files = sorted((root / "cards").rglob("*.md"))
    for n in range(commits):
        author = AUTHORS[n % 2]
        if n % 10 == 9:
            src = files.pop(rng.randrange(len(files)))
            dst = src.with_name(f"renamed-{n}-{src.name}")
            git(root, "mv", str(src), str(dst))
            files.append(dst)
        else:
            for path in rng.sample(files, 3):
                text = path.read_text()
                if n % 3 == 0:
                    text = text.replace('summary: "', f'summary: "Revised {n}: ', 1)
                path.write_text(text + f"\nEdit {n}.\n")
        git(root, "commit", "-q", "-a", "--no-verify", "-m", f"History {n}", author=author)
    marker.write_text(str(commits))
    (root / ".git" / "info" / "exclude").write_text(".bench-size\n.bench-history\n")


def timed(args: list[str], env: dict[str, str], expect: str) -> float:
    started = time.perf_counter()
    done = subprocess.run([*args, "--json"], env=env, check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    mode = json.loads(done.stdout)["mode"]
    if mode != expect:
        print(f"  note: expected a {expect} build, got {mode}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--history", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    root = make_vault(HERE / ".work" / f"prov-{args.cards}", args.cards, commits=20)
    add_history(root, args.history)
    n_commits = git(root, "rev-list", "--count", "HEAD").strip()
    full: list[float] = []
    incremental: list[float] = []
    target = next((root / "cards").rglob("*.md"))
    for run in range(args.runs):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, CAIRN_CACHE_DIR=cache)
            full.append(timed([*CAIRN, "index", "--vault", str(root)], env, "full"))
            target.write_text(target.read_text() + f"\nBench edit {run}.\n")
            git(root, "commit", "-q", "-am", f"Bench edit {run}")
            incremental.append(timed([*CAIRN, "index", "--vault", str(root)], env, "incremental"))
    print(f"vault: {args.cards} cards, {n_commits} commits")
    print(
        f"full index:        median {statistics.median(full):6.2f} s  (budget 15 s)  runs {[round(x, 2) for x in full]}"
    )
    print(
        f"incremental index: median {statistics.median(incremental):6.2f} s  (budget 1 s)   "
        f"runs {[round(x, 2) for x in incremental]}"
    )


if __name__ == "__main__":
    main()
