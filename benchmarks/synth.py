"""Synthetic vaults for the benchmarks: one card generator, one vocabulary, committed to real git repositories.

`Generator` draws each card from a Zipf-distributed mix of ~300 real technical words and 30,000 made-up project and
identifier names, so a few words are on many cards and most are rare, as in a real vault (a small shared vocabulary
would put every word on every card and make postings, near-duplicate checks and ranking unrealistically dense).
Everything comes from one seeded `random.Random`, drawn in card order: the same seed gives the same cards, and the
first 1,000 cards of a 10,000-card vault are the 1,000-card vault.

`make_vault` writes and commits a vault once and reuses it while its parameters hold; `add_history` adds edit and
rename commits by two authors (provenance); `git` is the one git helper every benchmark uses.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SEED = 11  # the seed every benchmark's vault uses (bench_hook's figures since the first round were measured on it)
GENERATOR_VERSION = "1"  # bump when the generator's output changes, so cached vaults are rebuilt
VERIFIED_AT = "2026-06-01"

TOPICS = """git python ci docker postgres shell http testing kubernetes terraform react rust go java node security
logging caching queues dns nginx redis kafka grpc aws gcp azure npm pip webpack linux macos windows ssh ssl cron
""".split()
WORDS = """branch commit rebase merge conflict cache lockfile wheel package dependency container image layer volume
network index migration transaction deadlock timeout retry idempotency header cookie session token secret rotation
deploy rollback canary metric alert dashboard trace span sample buffer stream socket thread process signal memory
leak profile benchmark fixture mock flaky order parallel isolation schema column constraint query plan vacuum
replica failover backup restore snapshot checksum encoding unicode locale timezone schedule permission owner group
mount path symlink environment variable config flag default override version pin upgrade downgrade release tag
changelog build artifact registry mirror proxy certificate handshake resolver worker pool connection limit quota
throttle batch payload serializer parser compiler linter formatter hook plugin extension module import export
cursor pagination offset sort filter join aggregate partition shard key value lease election heartbeat probe
readiness liveness sidecar ingress egress firewall route gateway balancer upstream downstream webhook callback
queue topic consumer producer offset commit ack nack dead letter poison message retry backoff jitter circuit
breaker fallback bulkhead saga outbox event sourcing projection snapshot compaction retention ttl eviction lru
warmup coldstart latency throughput p99 budget slo incident postmortem runbook oncall pager escalation""".split()
VERBS = """breaks drops hides leaks blocks corrupts skips duplicates delays invalidates truncates reorders
overwrites ignores resets locks starves floods stalls misroutes""".split()
FIXES = """pin the version|set an explicit timeout|add a retry with backoff|clear the cache first|run it in a
transaction|check the lockfile into git|use a read replica|rotate the token|raise the limit|split the batch|
add a health check|quote the variable|set the timezone to UTC|use --force-with-lease|vacuum the table|
mount it read-only|drain the node first|bump the schema version""".replace("\n", " ").split("|")
SYLLABLES = "ka ri to mu ne sa vo li pe dra qui zen mor tal bex fin gor hu lan pax ros tev ul wy xo".split()
AUTHORS = [("Ann Author", "ann@example.com"), ("Bob Builder", "bob@example.com")]


@dataclass(frozen=True)
class SynthCard:
    id: str
    name: str
    summary: str
    body: str
    scope: tuple[str, ...]

    @property
    def path(self) -> str:
        """The card's path in the vault."""
        return f"cards/{self.id}.md"

    def text(self) -> str:
        """The card file: YAML frontmatter (name and summary JSON-quoted, which YAML reads) and the body."""
        return (
            f"---\nname: {json.dumps(self.name)}\nsummary: {json.dumps(self.summary)}\n"
            f"scope: [{', '.join(self.scope)}]\nverified_at: {VERIFIED_AT}\n---\n\n{self.body}\n"
        )


def zipf_picker(rng: random.Random, items: list[str], s: float = 1.1) -> list[str]:
    """A population list in which item k appears about 1/k^s as often as the first: sample with rng.choice."""
    out: list[str] = []
    for k, item in enumerate(items, 1):
        out.extend([item] * max(1, int(400 / k**s)))
    rng.shuffle(out)
    return out


def made_up_words(rng: random.Random, n: int) -> list[str]:
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class Generator:
    """Cards drawn in order from one seeded random stream (see the module docstring)."""

    def __init__(self, seed: int = SEED) -> None:
        self.rng = random.Random(seed)
        self.common = zipf_picker(self.rng, WORDS)
        names = made_up_words(self.rng, 30_000)
        self.rng.shuffle(names)
        self.rare = zipf_picker(self.rng, names, s=0.9)

    def word(self) -> str:
        return self.rng.choice(self.common) if self.rng.random() < 0.7 else self.rng.choice(self.rare)

    def phrase(self, n: int) -> str:
        return " ".join(self.word() for _ in range(n))

    def card(self, i: int) -> SynthCard:
        rng = self.rng
        topic = rng.choice(TOPICS)
        project = rng.choice(self.rare)
        a, b, c = self.word(), self.word(), self.word()
        name = f"{a.capitalize()} {rng.choice(VERBS)} the {b} in {project} {topic}"
        ident = f"{project}_{c}" if rng.random() < 0.5 else f"{project}{c.capitalize()}"
        summary = (
            f"When the {self.word()} {rng.choice(VERBS)} {ident} during {self.phrase(2)}, {rng.choice(FIXES)} "
            f"before you touch the {self.word()} {self.word()}; the {b} otherwise {rng.choice(VERBS)} {self.phrase(3)}."
        )
        body = "\n\n".join(
            [
                self.phrase(rng.randint(30, 70)) + ".",
                f"```sh\n{topic} {c} --{self.word()} {project}\n```",
                self.phrase(rng.randint(20, 50)) + ".",
            ]
        )
        slug = f"{a}-{b}-{project}-{i}".lower()
        return SynthCard(id=f"{topic}/{slug}", name=name, summary=summary, body=body, scope=(topic,))


def synth_cards(n_cards: int, seed: int = SEED) -> list[SynthCard]:
    gen = Generator(seed)
    return [gen.card(i) for i in range(n_cards)]


def git(root: Path, *args: str, author: tuple[str, str] = ("Bench", "bench@example.com")) -> str:
    """Run git in `root` as `author` (no system config, no signing); its stdout."""
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME=author[0],
        GIT_AUTHOR_EMAIL=author[1],
        GIT_COMMITTER_NAME=author[0],
        GIT_COMMITTER_EMAIL=author[1],
        GIT_CONFIG_NOSYSTEM="1",
    )
    command = ["git", "-c", "commit.gpgsign=false", *args]
    return subprocess.run(command, cwd=root, env=env, check=True, capture_output=True, text=True).stdout


@dataclass(frozen=True)
class SynthVault:
    root: Path
    cards: list[SynthCard]
    build: dict[str, float]  # seconds to write the files and to commit them (recorded when the vault was made)


MARKER = ".bench-vault"


def make_vault(root: Path, n_cards: int, *, seed: int = SEED, commits: int = 1) -> SynthVault:
    """A vault of `n_cards` generated cards committed in `commits` commits at `root`; reused while the marker file
    says it was made with these parameters by this generator version, else rebuilt from scratch."""
    cards = synth_cards(n_cards, seed)
    key = f"{GENERATOR_VERSION}:{n_cards}:{seed}:{commits}"
    marker = root / MARKER
    if marker.is_file():
        recorded = json.loads(marker.read_text())
        if recorded.get("key") == key:
            return SynthVault(root, cards, recorded["build"])
    if root.exists():
        shutil.rmtree(root)
    (root / "cards").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / ".git" / "info" / "exclude").write_text(f"{MARKER}\n.bench-history\n")
    per_commit = max(1, -(-n_cards // commits))
    write_s = commit_s = 0.0
    for start in range(0, n_cards, per_commit):
        started = time.perf_counter()
        for card in cards[start : start + per_commit]:
            path = root / card.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(card.text().encode("utf-8"))
        write_s += time.perf_counter() - started
        started = time.perf_counter()
        git(root, "add", "-A")
        end = min(start + per_commit, n_cards)
        git(root, "commit", "-q", "--no-verify", "-m", f"Synthetic cards {start + 1}-{end} of {n_cards}")
        commit_s += time.perf_counter() - started
    build = {"write_files_s": write_s, "git_commit_s": commit_s}
    marker.write_text(json.dumps({"key": key, "build": build}))
    return SynthVault(root, cards, build)


def edit_summary(path: Path, note: str) -> None:
    """Put `note` at the start of a generated card's summary (a change every check and the index see)."""
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('summary: "', f'summary: "{note} ', 1), encoding="utf-8")


def add_history(root: Path, commits: int, seed: int = SEED) -> None:
    """`commits` more commits, alternating two authors: each edits three cards (every third also their summaries),
    every tenth renames one card instead. Made once per vault and count."""
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
                if n % 3 == 0:
                    edit_summary(path, f"Revised {n}:")
                with path.open("a", encoding="utf-8") as handle:
                    handle.write(f"\nEdit {n}.\n")
        git(root, "commit", "-q", "-a", "--no-verify", "-m", f"History {n}", author=author)
    marker.write_text(str(commits))
