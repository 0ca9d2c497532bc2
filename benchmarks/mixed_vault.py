"""One vault in two languages: tldr-en-dev's cards and tldr-zh-dev's side by side, each suite's cases asked of it.

Issue 16's held-out agent-prompt suite holds git-flight-rules in English and Chinese: lessons and their translations
in one vault, prompts in either language. No dev suite is such a vault, so this one is made of two: the English
tldr cards at `cards/<command>.md` and the Chinese ones at `cards/zh/<command>.md` (every Chinese page has its English
page; the two share the command as their name), less a third of the translated commands in both languages (every
third by name: `HELD_ASIDE`), so that a prompt about one of those is a negative in either language. Positives whose
command is in the vault expect it in the prompt's language first, then in the other (both are right). tldr-zh-dev's
own negatives are left out: they are commands the Chinese vault lacks, which the English cards may hold; tldr-en-dev's
stay (the Chinese pages are a subset of the English ones). The same cases are asked of each language's cards alone
(less the same commands), the reference. Nothing is fitted here.

Run from the repository root:
    .venv/bin/python -m benchmarks.mixed_vault            # Recall@1 / Injection@1 / FIR: alone, then mixed
    .venv/bin/python -m benchmarks.mixed_vault --json
    .venv/bin/python -m benchmarks.mixed_vault --semantic  # with the extra's similarities, as the hook gets them
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from benchmarks.recall_suites import BENCH, WORK, prepare
from benchmarks.synth import git

HELD_ASIDE_EVERY = 3  # every third translated command (by name) is left out in both languages


def held_aside() -> set[str]:
    """The translated commands left out of every vault here (their prompts are negatives)."""
    names = sorted(p.stem for p in (prepare("tldr-zh-dev") / "cards").glob("*.md"))
    return {name for i, name in enumerate(names) if i % HELD_ASIDE_EVERY == 0}


def build(name: str, english: bool, chinese: bool) -> Path:
    """benchmarks/.work/<name>: a git vault of the English and/or Chinese cards, less the held-aside commands."""
    en, zh = prepare("tldr-en-dev"), prepare("tldr-zh-dev")
    target = WORK / name
    stamp = (en / ".bench-stamp").read_text() + (zh / ".bench-stamp").read_text() + f"{english}{chinese}v2"
    if (target / ".bench-stamp").is_file() and (target / ".bench-stamp").read_text() == stamp:
        return target
    aside = held_aside()
    shutil.rmtree(target, ignore_errors=True)
    (target / "cards" / "zh").mkdir(parents=True)
    for source, into, wanted in ((en, target / "cards", english), (zh, target / "cards" / "zh", chinese)):
        for card in (source / "cards").glob("*.md") if wanted else ():
            if card.stem not in aside:
                shutil.copy2(card, into / card.name)
    git(target, "init", "-q", "-b", "main")
    (target / ".git" / "info" / "exclude").write_text(".bench-stamp\n")
    git(target, "add", "cards")
    git(target, "commit", "-q", "--no-verify", "-m", name)
    (target / ".bench-stamp").write_text(stamp)
    return target


def cases(suite: str, vault_has: set[str]) -> list[Any]:
    """The suite's cases for a vault holding the ids `vault_has`: a positive expects its command's cards there (the
    prompt's language first); one whose command is held aside is a negative."""
    from cairn.quality.evaluate import load_cases

    chinese = suite == "tldr-zh-dev"
    aside = held_aside()
    out = []
    for case in load_cases(BENCH / suite / "cases.jsonl"):
        if not case.expect:
            if not chinese:
                out.append(case)
            continue
        if any(x in aside for x in case.expect):
            out.append(dataclasses.replace(case, expect=()))
            continue
        own = [f"zh/{x}" for x in case.expect] if chinese else list(case.expect)
        other = list(case.expect) if chinese else [f"zh/{x}" for x in case.expect]
        expect = tuple(x for x in own + other if x in vault_has)
        if expect:  # (an English positive whose command only the other vault holds is not asked of it)
            out.append(dataclasses.replace(case, expect=expect))
    return out


def measure(semantic: bool = False) -> dict[str, dict[str, Any]]:
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer
    from cairn.quality.evaluate import evaluate

    vaults = {
        "english": build("mixed-tldr-en", True, False),
        "chinese": build("mixed-tldr-zh", False, True),
        "mixed": build("mixed-tldr", True, True),
    }
    report: dict[str, dict[str, Any]] = {}
    for suite, alone in (("tldr-zh-dev", "chinese"), ("tldr-en-dev", "english")):
        report[suite] = {}
        for name in (alone, "mixed"):
            vault = find_vault(vaults[name])
            indexer.build_index(vault)
            ids = {p.relative_to(vaults[name] / "cards").with_suffix("").as_posix() for p in vaults[name].rglob("*.md")}
            asked = cases(suite, ids)
            with indexer.open_index(vault) as index:
                sims = None
                if semantic:  # the z-scores the hook gets (its 50 most similar cards), as recall_suites --semantic
                    from cairn.semantic.batch import similarities_for

                    prompts = [case.query for case in asked]
                    sims = similarities_for(index.path, prompts, top=50, z=True, cache_dir=WORK / "semantic")
                data = evaluate(index, asked, semantic=sims).to_dict()
            report[suite]["alone" if name == alone else "mixed"] = {
                key: data[key] for key in ("recall@1", "injection@1", "false_injection_rate", "n_pos", "n_neg")
            } | {
                "by_slice": {
                    s: {k: m[k] for k in ("recall@1", "injection@1", "false_injection_rate")}
                    for s, m in data["by_slice"].items()
                }
            }
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="Print JSON.")
    parser.add_argument("--semantic", action="store_true", help="With the semantic extra's similarities.")
    args = parser.parse_args(argv)
    os.environ["CAIRN_CACHE_DIR"] = str(WORK / "cache")
    if not args.semantic:
        os.environ["CAIRN_SEMANTIC"] = "0"  # and no card vectors encoded in the background
    report = measure(args.semantic)
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print("Recall@1 / Injection@1 / false injection rate, all (long, short)")
    for suite, rows in report.items():
        for name, m in rows.items():
            cells = ", ".join(
                f"{s} {v['recall@1']:.3f} / {v['injection@1']:.3f} / {v['false_injection_rate']:.3f}"
                for s, v in sorted(m["by_slice"].items())
            )
            head = f"{m['recall@1']:.3f} / {m['injection@1']:.3f} / {m['false_injection_rate']:.3f}"
            print(f"{suite:<12} {name:<6} {head} ({cells}); {m['n_pos']} positives, {m['n_neg']} negatives")
    return 0


if __name__ == "__main__":
    sys.exit(main())
