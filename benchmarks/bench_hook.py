"""How long `cairn hook --format claude-code` takes end to end on vaults of 1,000, 10,000 and 100,000 cards.

Run: .venv/bin/python benchmarks/bench_hook.py [--sizes 1000,10000,100000] [--runs 30]

For each size it builds (once, then reuses) a committed synthetic vault with varied text: a Zipf-distributed mix
of real technical words and made-up project and identifier names, so term frequencies look like a real vault's
rather than every card sharing a small vocabulary. The index is written with `indexer.card_terms` and
`store.write_index` (the cards are generated as records, so YAML parsing of 100,000 files is not what is timed).

Then it runs the installed `cairn` executable with a real Claude Code UserPromptSubmit payload on stdin, alternating
with a bare `python -c pass` of the same interpreter, and prints medians and the ratio. Budgets (DESIGN.md):
1,000 cards <= 1.5x, 10,000 <= 2x, 100,000 <= 4x. Each hook run uses a new session id, so each does the full work
(rank, gate, render, record the session, log).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synth import git  # noqa: E402  (one git helper for every benchmark)

HERE = Path(__file__).resolve().parent
CAIRN = str(Path(sys.executable).with_name("cairn"))
BUDGETS = {1_000: 1.5, 10_000: 2.0, 100_000: 4.0}

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


def zipf_picker(rng: random.Random, items: list[str], s: float = 1.1) -> list[str]:
    """A population list in which item k appears about 1/k^s as often as the first: sample with rng.choice."""
    out: list[str] = []
    for k, item in enumerate(items, 1):
        out.extend([item] * max(1, int(400 / k**s)))
    rng.shuffle(out)
    return out


def made_up_words(rng: random.Random, n: int) -> list[str]:
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class Generator:
    def __init__(self, seed: int = 11) -> None:
        self.rng = random.Random(seed)
        self.common = zipf_picker(self.rng, WORDS)
        names = made_up_words(self.rng, 30_000)
        self.rng.shuffle(names)
        self.rare = zipf_picker(self.rng, names, s=0.9)

    def word(self) -> str:
        return self.rng.choice(self.common) if self.rng.random() < 0.7 else self.rng.choice(self.rare)

    def phrase(self, n: int) -> str:
        return " ".join(self.word() for _ in range(n))

    def card(self, i: int) -> dict[str, object]:
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
        return {"id": f"{topic}/{slug}", "name": name, "summary": summary, "body": body, "scope": [topic]}


def card_file(fields: dict[str, object]) -> str:
    return (
        f"---\nname: {json.dumps(fields['name'])}\nsummary: {json.dumps(fields['summary'])}\n"
        f"scope: [{fields['scope'][0]}]\nverified_at: 2026-06-01\n---\n\n{fields['body']}\n"  # type: ignore[index]
    )


def build_vault(root: Path, n_cards: int, cache: Path) -> tuple[list[dict[str, object]], dict[str, float]]:
    """Write and commit a vault of n_cards cards, then index it; each step is reused while it still holds (the
    vault while its size matches, the index while the store's schema is the one it was built with)."""
    from cairn.hot import paths
    from cairn.index import store

    gen = Generator()
    cards = [gen.card(i) for i in range(n_cards)]
    os.environ["CAIRN_CACHE_DIR"] = str(cache)
    schema = hashlib.sha256((store.FORMAT_VERSION + store._SCHEMA).encode()).hexdigest()[:12]
    record = root.parent / f"build-{n_cards}.json"
    timings: dict[str, float] = json.loads(record.read_text()) if record.exists() else {}
    marker = root / ".bench-hook"
    if not (marker.exists() and marker.read_text() == str(n_cards)):
        timings = _write_and_commit(root, cards)
        marker.write_text(str(n_cards))
    if timings.get("schema") != schema or not paths.index_path(root.resolve()).is_file():
        timings.update(_index(root, cards))
        timings["schema"] = schema  # type: ignore[assignment]
    record.write_text(json.dumps(timings))
    return cards, {k: v for k, v in timings.items() if isinstance(v, float)}


def _write_and_commit(root: Path, cards: list[dict[str, object]]) -> dict[str, float]:
    if root.exists():
        shutil.rmtree(root)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    (root / "cards").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / ".git" / "info" / "exclude").write_text(".bench-hook\n")
    for fields in cards:
        path = root / "cards" / f"{fields['id']}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(card_file(fields).encode("utf-8"))
    timings["write_files_s"] = time.perf_counter() - started
    started = time.perf_counter()
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", f"{len(cards)} synthetic cards")
    timings["git_commit_s"] = time.perf_counter() - started
    return timings


def _index(root: Path, cards: list[dict[str, object]]) -> dict[str, float]:
    """Index the committed cards with `indexer.card_terms` and `store.write_index`, as `cairn index` stores them."""
    from cairn.cards.card import Card
    from cairn.config import Config
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer
    from cairn.index import store

    timings: dict[str, float] = {}
    started = time.perf_counter()
    vault = find_vault(root)
    commit = git(root, "rev-parse", "HEAD").strip()
    upserts = []
    for fields in cards:
        data = card_file(fields).encode("utf-8")
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # the id git gave the file
        card = Card(
            id=str(fields["id"]),
            path=f"cards/{fields['id']}.md",
            name=str(fields["name"]),
            summary=str(fields["summary"]),
            body=str(fields["body"]),
            scope=tuple(fields["scope"]),  # type: ignore[arg-type]
            verified_at=dt.date(2026, 6, 1),
        )
        upserts.append(indexer.card_terms(card, blob))
    timings["tokenize_s"] = time.perf_counter() - started
    started = time.perf_counter()
    target = indexer.index_file_for(vault)
    meta = indexer._meta(vault, commit, "commit", Config())  # the same meta `cairn index` writes
    with store.writer_lock(target):
        target.unlink(missing_ok=True)
        store.write_index(target, meta, upserts)
    timings["write_index_s"] = time.perf_counter() - started
    timings["index_mb"] = target.stat().st_size / 1e6
    return timings


def prompts_for(cards: list[dict[str, object]], n: int) -> list[str]:
    """Prompts a user might type: most reword one card's situation; a few fit nothing."""
    rng = random.Random(5)
    out = []
    for i in range(n):
        if i % 4 == 3:
            out.append("please refactor this function to be more readable and add docstrings")
            continue
        card = rng.choice(cards)
        words = str(card["summary"]).replace(",", "").replace(";", "").split()
        out.append("I think " + " ".join(words[1:12]) + " - what should I do?")
    return out


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_run(args: list[str], stdin: bytes | None, env: dict[str, str]) -> tuple[float, float, bytes]:
    """Wall-clock seconds, CPU seconds (user + system, less sensitive to a busy machine) and stdout."""
    cpu = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(args, input=stdin, capture_output=True, env=env, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{args[0]} failed ({done.returncode}): {done.stderr.decode()[:500]}")
    return elapsed, _children_cpu() - cpu, done.stdout


def bench_size(n_cards: int, runs: int, work: Path) -> dict[str, object]:
    cache, state = work / "cache", work / f"state-{n_cards}"
    root = work / f"vault-{n_cards}"
    cards, build = build_vault(root, n_cards, cache)
    env = dict(os.environ, CAIRN_CACHE_DIR=str(cache), CAIRN_STATE_DIR=str(state))
    env.pop("CAIRN_VAULT", None)
    # An installed package has its bytecode compiled (pip does it); a sandbox that forbids writing .pyc files
    # would make every run compile Cairn's modules from source, which no user pays.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    shebang = Path(CAIRN).read_text().splitlines()[0]
    python = shebang[2:].strip() if shebang.startswith("#!") else sys.executable
    prompts = prompts_for(cards, runs + 2)
    hook_times: list[float] = []
    bare_times: list[float] = []
    hook_cpu: list[float] = []
    bare_cpu: list[float] = []
    injected = 0
    for i, prompt in enumerate(prompts):
        payload = {
            "session_id": f"bench-{n_cards}-{time.time_ns()}-{i}",
            "transcript_path": str(work / "transcript.jsonl"),
            "cwd": str(root.resolve()),
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
        hook_s, hook_c, out = timed_run([CAIRN, "hook", "--format", "claude-code"], json.dumps(payload).encode(), env)
        bare_s, bare_c, _ = timed_run([python, "-c", "pass"], None, env)
        if i < 2:  # warm-up: file cache, first pyc writes
            continue
        hook_times.append(hook_s)
        bare_times.append(bare_s)
        hook_cpu.append(hook_c)
        bare_cpu.append(bare_c)
        injected += bool(out.strip())
    log_lines = (state / "hook.jsonl").read_text().splitlines()[-runs:]
    stale = sum(json.loads(line)["stale"] for line in log_lines)
    errors = [json.loads(line)["error"] for line in log_lines if json.loads(line)["error"]]
    hook_ms, bare_ms = statistics.median(hook_times) * 1000, statistics.median(bare_times) * 1000
    return {
        "cards": n_cards,
        "runs": len(hook_times),
        "hook_ms": round(hook_ms, 1),
        "bare_ms": round(bare_ms, 1),
        "ratio": round(hook_ms / bare_ms, 2),
        "cpu_ratio": round(statistics.median(hook_cpu) / statistics.median(bare_cpu), 2),
        "budget": BUDGETS.get(n_cards),
        "injected_runs": injected,
        "stale_runs": stale,
        "errors": errors[:3],
        "build": {k: round(v, 2) for k, v in build.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated vault sizes")
    parser.add_argument("--runs", type=int, default=30, help="timed runs per size (>= 20)")
    parser.add_argument("--work", type=Path, default=HERE / ".work" / "hook", help="where vaults and caches live")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    results = []
    print(f"python: {sys.version.split()[0]}  cairn: {CAIRN}")
    print(
        f"{'cards':>8} {'hook ms':>8} {'bare ms':>8} {'ratio':>6} {'budget':>6} {'cpu ratio':>9}  injected  build (s)"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        r = bench_size(size, max(args.runs, 20), args.work)
        results.append(r)
        build = r["build"]
        assert isinstance(build, dict)
        verdict = "ok" if r["budget"] and r["ratio"] <= r["budget"] else "OVER"  # type: ignore[operator]
        print(
            f"{r['cards']:>8} {r['hook_ms']:>8} {r['bare_ms']:>8} {r['ratio']:>6} {r['budget']:>5}x {verdict:4}"
            f" {r['cpu_ratio']:>5}"
            f" {r['injected_runs']}/{r['runs']}   files {build.get('write_files_s')} commit {build.get('git_commit_s')}"
            f" tokenize {build.get('tokenize_s')} index {build.get('write_index_s')} ({build.get('index_mb'):.0f} MB)"
            f"  stale {r['stale_runs']} errors {r['errors']}"
        )
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
