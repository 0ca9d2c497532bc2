"""Synthetic vaults for benchmarks: varied, realistic-looking cards committed to a real git repository.

The text is drawn from a fixed vocabulary with a seeded generator, so every run builds the same vault.
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

TOPICS = [
    "git",
    "python",
    "ci",
    "docker",
    "postgres",
    "shell",
    "http",
    "testing",
    "kubernetes",
    "terraform",
    "react",
    "rust",
    "go",
    "java",
    "node",
    "security",
    "logging",
    "caching",
    "queues",
    "dns",
]
WORDS = """
branch commit rebase merge conflict cache lockfile wheel package dependency container image layer volume network
index migration transaction deadlock timeout retry idempotency header cookie session token secret rotation
deploy rollback canary metric alert dashboard trace span sample buffer stream socket thread process signal
memory leak profile benchmark fixture mock flaky order parallel isolation schema column constraint query plan
vacuum replica failover backup restore snapshot checksum encoding unicode locale timezone cron schedule
permission owner group mount path symlink environment variable config flag default override version pin
upgrade downgrade release tag changelog build artifact registry mirror proxy certificate handshake resolver
""".split()
VERBS = "breaks drops hides leaks blocks corrupts skips duplicates delays invalidates".split()


def card_text(rng: random.Random, i: int) -> tuple[str, str]:
    topic = TOPICS[i % len(TOPICS)]
    words = rng.sample(WORDS, 9)
    name = f"{words[0].capitalize()} {rng.choice(VERBS)} {words[1]} in {topic} ({i})"
    summary = (
        f"When the {words[2]} {rng.choice(VERBS)} the {words[3]}, check the {words[4]} before you change the "
        f"{words[5]}; pin the {words[6]} and rerun."
    )
    body = "\n\n".join(
        [
            f"# {name}",
            " ".join(rng.choice(WORDS) for _ in range(60)),
            "```sh\n" + f"{topic} {words[7]} --{words[8]}\n```",
        ]
    )
    card = f'---\nname: "{name}"\nsummary: "{summary}"\nscope: [{topic}]\nverified_at: 2026-06-01\n---\n\n{body}\n'
    return f"{topic}/{words[0]}-{words[1]}-{i}", card


AUTHORS = [("Ann Author", "ann@example.com"), ("Bob Builder", "bob@example.com")]


def git(root: Path, *args: str, author: tuple[str, str] = ("Bench", "bench@example.com")) -> str:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME=author[0],
        GIT_AUTHOR_EMAIL=author[1],
        GIT_COMMITTER_NAME=author[0],
        GIT_COMMITTER_EMAIL=author[1],
    )
    return subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True).stdout


def make_vault(root: Path, n_cards: int, seed: int = 7, commits: int = 1) -> Path:
    """A committed vault of n_cards cards in `commits` commits; reused when it already exists with that size."""
    marker = root / ".bench-size"
    if marker.exists() and marker.read_text() == f"{n_cards}:{seed}:{commits}":
        return root
    if root.exists():
        subprocess.run(["rm", "-rf", str(root)], check=True)
    (root / "cards").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    rng = random.Random(seed)
    per_commit = max(1, n_cards // commits)
    for i in range(n_cards):
        card_id, text = card_text(rng, i)
        path = root / "cards" / f"{card_id}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if (i + 1) % per_commit == 0 or i == n_cards - 1:
            git(root, "add", "-A")
            git(root, "commit", "-q", "--no-verify", "-m", f"Cards up to {i}")
    marker.write_text(f"{n_cards}:{seed}:{commits}")
    (root / ".git" / "info" / "exclude").write_text(".bench-size\n")
    return root


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
