"""Cairn's session ranking on LoCoMo (conversation memory): Recall@1/3/5/10 and NDCG@10, overall, per question
type, and on the two halves of the conversations (the ranking's parameters were tuned on the first half only).

Run from the repository root:
    .venv/bin/python -m benchmarks.bench_memory [--file FILE]

The file defaults to `locomo/locomo10.json` of the shared suites (../shared/bench beside the checkout, or
CAIRN_BENCH_DIR; `benchmarks.recall_suites.BENCH`).

Also times the whole `cairn bench locomo FILE --json` run of the installed command (target: under 60 s), and
prints plain BM25 (one body field, no turn scores, no date, no question-word dropping) for reference.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.recall_suites import BENCH
from cairn.config import RecallSettings
from cairn.membench import load_locomo, run_bench
from cairn.membench.ranker import RankSettings

DEFAULT_FILE = BENCH / "locomo" / "locomo10.json"
CAIRN = str(Path(sys.executable).with_name("cairn"))
KEYS = ("recall@1", "recall@3", "recall@5", "recall@10", "ndcg@10")
# Plain BM25 on whole sessions (no word discounted, no turns, no pairs, no dates, no speakers, per-haystack IDF, no
# burstiness, no expansion, no stemming beyond the tokenizer's): what the README's reference figures measure.
PLAIN = RankSettings(
    session=RecallSettings(
        k1=1.2, b=0.75, weight_name=0.0, weight_summary=0.0, weight_body=1.0, instruction_weight=1.0
    ),
    session_weight=1.0,
    pair_weight=0.0,
    date_weight=0.0,
    speaker_boost=0.0,
    drop_question_words=False,
    collection_idf=False,
    burstiness=0.0,
    relative_date_weight=0.0,
    final_e=False,
    expansion_weight=0.0,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    args = parser.parse_args()
    if not args.file.is_file():
        sys.exit(f"Error: no LoCoMo file at {args.file}; give --file or set CAIRN_BENCH_DIR")
    suite = load_locomo(args.file)
    keys = list(suite.haystacks)
    halves = {"tuning half": set(keys[: len(keys) // 2]), "held-out half": set(keys[len(keys) // 2 :])}

    started = time.perf_counter()
    done = subprocess.run([CAIRN, "bench", "locomo", str(args.file), "--json"], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(done.stderr.strip())
    report = json.loads(done.stdout)

    print(f"LoCoMo, session level: {report['questions']} questions with evidence ({seconds:.1f} s, target < 60 s)")
    print(f"{'':<28}" + "".join(f"{k:>11}" for k in KEYS))
    print(_row("cairn bench (all)", report))
    for name, haystacks in halves.items():
        print(_row(f"cairn, {name} ({len(haystacks)} conv.)", run_bench(suite, haystacks=haystacks).metrics))
    print(_row("plain BM25 (all)", run_bench(suite, PLAIN).metrics))
    print("by type:")
    for name, row in report["by_type"].items():
        print(_row(f"  {name} (n={row['questions']})", row))


def _row(label: str, metrics: dict[str, float]) -> str:
    return f"{label:<28}" + "".join(f"{metrics[k]:>11.3f}" for k in KEYS)


if __name__ == "__main__":
    main()
