"""How long `cairn lint` takes on one changed card in a vault of 10,000 cards, as the pre-commit hook runs it.

Run: .venv/bin/python benchmarks/bench_lint.py [--cards 10000] [--runs 7]

Builds (once, under benchmarks/.work/) a committed vault of synthetic cards with varied wording, stages a change
to one card, then runs the installed `cairn lint <that card>` with GIT_INDEX_FILE set, as git sets it for a hook
(so the staged content and the rest of the vault are read from git's index). Prints medians for:
the first run (no lint cache: every card is parsed once), warm runs (only the changed blob is parsed), the same
from the working tree, and the whole vault; each beside a bare `python -c pass` of the same interpreter.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CAIRN = str(Path(sys.executable).with_name("cairn"))
WORDS = """branch commit rebase merge conflict cache lockfile wheel package dependency container image layer volume
network index migration transaction deadlock timeout retry idempotency header cookie session token secret rotation
deploy rollback canary metric alert dashboard trace span sample buffer stream socket thread process signal memory
leak profile benchmark fixture mock flaky order parallel isolation schema column constraint query plan vacuum
replica failover backup restore snapshot checksum encoding unicode locale timezone schedule permission owner group
mount path symlink environment variable config flag default override version pin upgrade downgrade release tag
changelog build artifact registry mirror proxy certificate handshake resolver worker pool connection limit quota
throttle batch payload serializer parser compiler linter formatter hook plugin extension module import export""".split()
TOPICS = "git python ci docker postgres shell http testing kubernetes terraform react rust go java node".split()


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def build_vault(root: Path, n: int) -> None:
    if (root / ".built").exists():
        return
    shutil.rmtree(root, ignore_errors=True)
    rng = random.Random(7)
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        words = rng.sample(WORDS, 14)
        name = f"{words[0].title()} {words[1]} {words[2]} in {topic} case {i}"
        summary = f"When the {words[3]} {words[4]} the {words[5]}, {words[6]} the {words[7]} and {words[8]} it ({i})."
        body = " ".join(rng.choice(WORDS) for _ in range(80))
        path = root / "cards" / topic / f"card-{i:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"---\nname: {name}\nsummary: {summary}\nscope: [{topic}]\nverified_at: 2026-10-01\n---\n\n# {name}\n\n"
            f"{body}\n"
        )
    (root / "cairn.toml").write_text("[lint]\nmax_scope_share = 0.5\n")
    env_args = ("-c", "user.name=bench", "-c", "user.email=bench@example.com")
    _git("init", "-q", cwd=root)
    _git("add", "-A", cwd=root)
    _git(*env_args, "commit", "-q", "--no-verify", "-m", "vault", cwd=root)
    (root / ".built").write_text("ok")


def _time(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, check=False)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    root = HERE / ".work" / f"lint-{args.cards}"
    started = time.perf_counter()
    build_vault(root, args.cards)
    print(f"vault of {args.cards} cards ready ({time.perf_counter() - started:.1f}s)")
    changed = next((root / "cards" / "git").glob("*.md"))
    rel = changed.relative_to(root).as_posix()
    original = changed.read_text()
    changed.write_text(original.replace("summary: When", "summary: Whenever"))
    _git("add", rel, cwd=root)
    try:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, CAIRN_CACHE_DIR=cache, GIT_INDEX_FILE=".git/index")
            bare = [_time([sys.executable, "-c", "pass"], root, env) for _ in range(args.runs)]
            cold = _time([CAIRN, "lint", rel], root, env)
            warm = [_time([CAIRN, "lint", rel], root, env) for _ in range(args.runs)]
            env_wt = {k: v for k, v in env.items() if k != "GIT_INDEX_FILE"}
            worktree = [_time([CAIRN, "lint", rel], root, env_wt) for _ in range(args.runs)]
            whole = [_time([CAIRN, "lint"], root, env_wt) for _ in range(max(2, args.runs // 3))]
    finally:
        changed.write_text(original)
        _git("add", rel, cwd=root)
    base = statistics.median(bare)
    print(f"bare python -c pass:                         {base * 1000:7.0f} ms")
    for label, value in (
        ("one staged card, first run (no lint cache)", cold),
        ("one staged card, warm (hook, git's index)", statistics.median(warm)),
        ("one card, warm (working tree)", statistics.median(worktree)),
        (f"whole vault, warm ({args.cards} cards, all rules)", statistics.median(whole)),
    ):
        print(f"{label:<45}{value * 1000:7.0f} ms  ({value / base:5.1f}x bare)")


if __name__ == "__main__":
    main()
