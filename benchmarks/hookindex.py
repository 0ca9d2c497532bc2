"""Index a synthetic vault for bench_hook with `card_terms` and `write_index`, in the interpreter of the Cairn timed.

bench_hook runs this file by its path with the `python` of a venv where the Cairn being timed is installed with its
dependencies (never with `-m`: the current folder would come first on `sys.path` and put the checkout's `cairn`
before the installed one). So the index is written by the same code the hook reads it with, and the benchmark
itself never imports the checkout, which may be half-edited while it runs.

    python benchmarks/hookindex.py VAULT ORDER RECORD

VAULT is a committed vault of `benchmarks.synth` cards; ORDER lists its card paths, one a line, in the order the
index rows get (the generator's); RECORD is a JSON file remembering what was built. The index goes where `cairn`
looks for it (CAIRN_CACHE_DIR). It is rebuilt when the vault's commit, the index format and layout, Cairn's version
or the default config differ from the record, else kept (Cairn's build, not its version: `_build`). Prints the seconds each step took when it was built, as
JSON. The card files are read back in the generator's fixed format (JSON-quoted name and summary, one scope), so
YAML parsing of 100,000 files is not what is timed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def _build() -> str:
    """The Cairn timed: its build (`cairn.hot.build_name`, the version and its files' digest, which the index's meta
    holds and the hook checks), or its version for a Cairn from before build names (`--rev` of an older commit). A
    key on the version alone kept an index another build wrote, which the hook then called stale at every prompt."""
    try:
        from cairn.hot import build_name
    except ImportError:
        from cairn import __version__

        return __version__
    return build_name()


def index_key() -> str:
    """What the stored index depends on besides the cards."""
    from cairn.config import Config
    from cairn.hot import index as reader
    from cairn.index import store

    # The reader's and the writer's sources stand for the format and its layout (which may change before the
    # format's number does).
    layout = hashlib.sha256(Path(reader.__file__).read_bytes() + Path(store.__file__).read_bytes()).hexdigest()
    parts = (reader.FORMAT_VERSION, layout, _build(), json.dumps(Config().to_dict(), sort_keys=True))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]


def read_card(root: Path, rel: str) -> tuple[Any, str]:
    """The card at `rel` (a `cairn.cards.card.Card`) and its git blob id."""
    from cairn.cards.card import Card

    data = (root / rel).read_bytes()
    head, _, body = data.decode("utf-8").partition("\n---\n\n")
    fields = dict(line.split(": ", 1) for line in head.splitlines()[1:])
    card = Card(
        id=rel.removeprefix("cards/").removesuffix(".md"),
        path=rel,
        name=json.loads(fields["name"]),
        summary=json.loads(fields["summary"]),
        body=body.removesuffix("\n"),
        scope=tuple(s.strip() for s in fields["scope"].strip("[]").split(",")),
        verified_at=dt.date.fromisoformat(fields["verified_at"]),
    )
    return card, hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def main(argv: list[str]) -> int:
    from cairn.config import Config
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer
    from cairn.index import store

    root, order, record = Path(argv[0]).resolve(), Path(argv[1]), Path(argv[2])
    vault = find_vault(root)
    target = indexer.index_file_for(vault)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
    want = {"key": index_key(), "commit": commit.stdout.strip(), "index": str(target)}
    recorded = json.loads(record.read_text()) if record.is_file() else {}
    if target.is_file() and all(recorded.get(k) == v for k, v in want.items()):
        print(json.dumps(recorded["timings"]))
        return 0
    started = time.perf_counter()
    upserts = [indexer.card_terms(*read_card(root, rel)) for rel in order.read_text().splitlines()]
    timings = {"tokenize_s": time.perf_counter() - started}
    started = time.perf_counter()
    meta = indexer._meta(vault, want["commit"], "commit", Config())  # the same meta `cairn index` writes
    with store.writer_lock(target):
        target.unlink(missing_ok=True)
        store.write_index(target, meta, upserts)
    timings["write_index_s"] = time.perf_counter() - started
    timings["index_mb"] = target.stat().st_size / 1e6
    record.write_text(json.dumps({**want, "timings": timings}))
    print(json.dumps(timings))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
