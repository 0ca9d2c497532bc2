"""One vault in two languages: tldr-en-dev's cards and tldr-zh-dev's side by side, each suite's cases asked of it.

Issue 16's held-out agent-prompt suite holds git-flight-rules in English and Chinese: lessons and their translations
in one vault, prompts in either language. No dev suite is such a vault, so this one is made of two: the 1,043 English
tldr cards at `cards/<command>.md` and the 176 Chinese ones at `cards/zh/<command>.md` (every Chinese page has its
English page; the two share the command as their name). A case is right when it gets its command in either language
(the Chinese page first for a Chinese prompt is what `expect` lists first). tldr-zh-dev's negatives are left out: they
are commands the Chinese vault lacks, which the English cards may hold. tldr-en-dev's negatives stay negatives (the
Chinese cards are a subset of the English commands). Nothing is fitted here; it measures, and `--same-name` shows
what treating two cards of one name as one lesson (as the layered merge does across vaults) would give.

Run from the repository root:
    .venv/bin/python -m benchmarks.mixed_vault                # each suite alone, then in the mixed vault
    .venv/bin/python -m benchmarks.mixed_vault --same-name    # + a card named as an admitted card above it left out
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from benchmarks.recall_suites import BENCH, WORK, prepare, run_suite
from benchmarks.synth import git

MIXED = WORK / "mixed-tldr"


def build() -> Path:
    """benchmarks/.work/mixed-tldr: a git vault of both suites' cards (rebuilt from the prepared suite vaults)."""
    english, chinese = prepare("tldr-en-dev"), prepare("tldr-zh-dev")
    stamp = (english / ".bench-stamp").read_text() + (chinese / ".bench-stamp").read_text()
    if (MIXED / ".bench-stamp").is_file() and (MIXED / ".bench-stamp").read_text() == stamp:
        return MIXED
    shutil.rmtree(MIXED, ignore_errors=True)
    shutil.copytree(english / "cards", MIXED / "cards")
    shutil.copytree(chinese / "cards", MIXED / "cards" / "zh")
    git(MIXED, "init", "-q", "-b", "main")
    (MIXED / ".git" / "info" / "exclude").write_text(".bench-stamp\n")
    git(MIXED, "add", "cards")
    git(MIXED, "commit", "-q", "--no-verify", "-m", "mixed")
    (MIXED / ".bench-stamp").write_text(stamp)
    return MIXED


def mixed_cases(suite: str) -> list[Any]:
    """The suite's cases for the mixed vault: a positive expects its command in its own language, then the other."""
    from cairn.quality.evaluate import load_cases

    chinese = suite == "tldr-zh-dev"
    out = []
    for case in load_cases(BENCH / suite / "cases.jsonl"):
        if not case.expect:
            if not chinese:
                out.append(case)
            continue
        own = [f"zh/{x}" for x in case.expect] if chinese else list(case.expect)
        other = list(case.expect) if chinese else [f"zh/{x}" for x in case.expect]
        out.append(dataclasses.replace(case, expect=tuple(own + other)))
    return out


def same_name_gate() -> None:
    """recall's gates without the admitted cards named as one ranked above them (a translation, by tldr's names)."""
    from cairn.hot import recall as recall_module
    from cairn.hot.serve import lesson_keys

    gate = recall_module._gate

    def deduplicated(admitted: Any, *args: Any, **kwargs: Any) -> Any:
        seen: set[str] = set()
        kept = []
        for card, score in admitted:
            name = lesson_keys(card)[0]
            if name not in seen:
                seen.add(name)
                kept.append((card, score))
        return gate(kept, *args, **kwargs)

    recall_module._gate = deduplicated  # type: ignore[assignment]


def figures(data: dict[str, Any]) -> str:
    cells = [f"all {data['recall@1']:.3f} / {data['injection@1']:.3f} / {data['false_injection_rate']:.3f}"]
    for name, m in sorted(data["by_slice"].items()):
        cells.append(f"{name} {m['recall@1']:.3f} / {m['injection@1']:.3f} / {m['false_injection_rate']:.3f}")
    return "  ".join(cells)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--same-name", action="store_true", help="Leave out a card named as one ranked above it.")
    args = parser.parse_args(argv)
    os.environ["CAIRN_CACHE_DIR"] = str(WORK / "cache")
    os.environ["CAIRN_SEMANTIC"] = "0"
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer
    from cairn.quality.evaluate import evaluate

    if args.same_name:
        same_name_gate()
    print("Recall@1 / Injection@1 / false injection rate (tldr-zh-dev: positives only in both rows)")
    vault = find_vault(build())
    indexer.build_index(vault)
    for suite in ("tldr-zh-dev", "tldr-en-dev"):
        alone = run_suite(suite, {})
        if suite == "tldr-zh-dev":  # positives only, as in the mixed vault
            from cairn.quality.evaluate import load_cases

            own = find_vault(prepare(suite))
            cases = [c for c in load_cases(BENCH / suite / "cases.jsonl") if c.expect]
            with indexer.open_index(own) as index:
                alone = evaluate(index, cases).to_dict()
        with indexer.open_index(vault) as index:
            mixed = evaluate(index, mixed_cases(suite)).to_dict()
        print(f"{suite:<12} alone  {figures(alone)}")
        print(f"{'':<12} mixed  {figures(mixed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
