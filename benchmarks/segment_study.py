"""Issue 16, round 23: Chinese text as dictionary words instead of character 2-grams, measured.

    .venv/bin/pip install jieba        # the study's dictionary; not a dependency of Cairn
    .venv/bin/python -m benchmarks.segment_study [--semantic] [--mode M ...]     # 1-3 minutes a mode

Recall reads a run of Chinese as its character 2-grams (`cairn.hot.tokens._cjk_run`): "创建最近7天提交的打包文件" is
创建 建最 最近 ... 交的 的打 打包 包文 文件, and the 2-grams across a word boundary (建最, 交的, 的打, 包文) are terms too.
Those the vault holds add to the prompt's best possible score and those it lacks count as missing words, so the
gates see a Chinese prompt through noise an English one does not have. This study swaps `_cjk_run` for a word
segmenter (jieba's dictionary and its DP, no HMM; single characters and `CJK_STOPWORDS` left out, as the 2-grams
leave a lone character only when it is the whole run) and measures recall's decisions as shipped otherwise:

- `bigrams`: Cairn as shipped (no patch).
- `dictionary`: cards and prompts segmented with the whole dictionary (the upper bound: the hook could not load it).
- `vault-words`: what the hook could do with the standard library: cards segmented with the whole dictionary at index
  time, prompts (and any text recall tokenizes) with the vault's own Chinese words only, in the fewest pieces, a run
  of characters no vault word covers read as its 2-grams (they are words the vault does not know).
- `vault-words-padded`: `vault-words`, each run's length counted as its 2-grams counted it (a filler token for the
  difference), so BM25's length norms are as shipped.
- `per-script-lengths`: `vault-words`, with BM25's length norms per script: a card's English terms (and the averages)
  measured by its length as 2-grams counted it, its Chinese words by its length in words.
- `straddles-dropped`: the index as shipped (2-grams); a prompt's 2-grams that the vault's cards hold only across two
  words (by the dictionary's segmentation of each card) are left out.

Each mode's vaults and indexes are built under /tmp (never the benchmark's own cache); 1 minute a mode, 2-3 with `--semantic`. Printed per mode: the suites'
table (`recall_suites`), then each suite's positives injected and negatives given a card, split by the prompt's
language (a prompt holding a Chinese character is `zh`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks import recall_suites
from cairn.hot import tokens

SUITES = (
    "tldr-zh-dev",
    "gitflight-agent",
    "k8sops-agent",
    "gostyle-agent",
    "dockerops-agent",
    "agent-lessons",
    "template",
)
MODES = ("bigrams", "dictionary", "vault-words", "vault-words-padded", "straddles-dropped", "per-script-lengths")
_LONGEST = 8  # characters of the longest vault word a prompt's run is matched against
_FILLER = "\uffff"  # a token no prompt holds: a length without a term
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


class Segmenter:
    """`_cjk_run`'s replacement: index time (`indexing`) segments with the dictionary and collects the vault's
    words; query time with the dictionary too (`dictionary`) or with the vault's words only."""

    def __init__(self, mode: str, cut: Callable[[str], list[str]]) -> None:
        self.mode = mode
        self.cut = cut
        self.indexing = True
        self.vocabulary: set[str] = set()
        self.inside: set[str] = set()  # 2-grams found inside a word of some card
        self.across: set[str] = set()  # 2-grams found across two words of some card

    def run(self, text: str, mask: bytes, start: int, out: list[str]) -> int:
        stop = mask.find(0, start)
        if stop < 0:
            stop = len(text)
        if stop - start == 1:
            out.append(text[start])
        elif self.mode == "straddles-dropped":
            out.extend(self._grams(text[start:stop]))
        elif self.indexing or self.mode == "dictionary":
            out.extend(self._index_tokens(text[start:stop]))
        else:
            out.extend(self._vault_words(text[start:stop]))
        return mask.find(1, stop)

    def _grams(self, run: str) -> list[str]:
        """The run's 2-grams as shipped; at index time it notes which are inside a word and which across two; at query
        time it leaves out those the vault's cards only ever have across two words."""
        grams = [run[i : i + 2] for i in range(len(run) - 1)]
        if self.indexing:
            at = 0
            for word in self.cut(run):
                for i in range(at, at + len(word) - 1):
                    self.inside.add(run[i : i + 2])
                if at > 0:
                    self.across.add(run[at - 1 : at + 1])
                at += len(word)
        else:
            grams = [g for g in grams if g in self.inside or g not in self.across]
        return [g for g in grams if g not in tokens.CJK_STOPWORDS]

    def _index_tokens(self, run: str) -> list[str]:
        words = self.cut(run)
        self.vocabulary.update(w for w in words if len(w) > 1)
        kept = [w for w in words if len(w) > 1 and w not in tokens.CJK_STOPWORDS]
        if self.indexing and self.mode in ("vault-words-padded", "per-script-lengths"):
            grams = sum(1 for i in range(len(run) - 1) if run[i : i + 2] not in tokens.CJK_STOPWORDS)
            kept += [_FILLER] * max(0, grams - len(kept))
        return kept

    def _vault_words(self, run: str) -> list[str]:
        """The run in the fewest pieces, each a vault word or one character; characters left between words are read
        as their 2-grams."""
        n = len(run)
        fewest = [0] + [n + 1] * n
        back = [0] * (n + 1)
        for end in range(1, n + 1):
            fewest[end], back[end] = fewest[end - 1] + 1, end - 1
            for length in range(2, min(_LONGEST, end) + 1):
                if run[end - length : end] in self.vocabulary and fewest[end - length] + 1 < fewest[end]:
                    fewest[end], back[end] = fewest[end - length] + 1, end - length
        pieces: list[str] = []
        end = n
        while end > 0:
            pieces.append(run[back[end] : end])
            end = back[end]
        out: list[str] = []
        loose = ""
        for piece in reversed(pieces):
            if len(piece) == 1:
                loose += piece
                continue
            out.extend(loose[i : i + 2] for i in range(len(loose) - 1))
            loose = ""
            out.append(piece)
        out.extend(loose[i : i + 2] for i in range(len(loose) - 1))
        return [w for w in out if w not in tokens.CJK_STOPWORDS]


def _jieba_cut() -> Callable[[str], list[str]]:
    try:
        import jieba  # type: ignore
    except ImportError:
        raise SystemExit("Error: the study segments with jieba's dictionary: .venv/bin/pip install jieba") from None
    jieba.setLogLevel(60)
    jieba.initialize()
    return lambda run: list(jieba.cut(run, HMM=False))


@contextlib.contextmanager
def patched(mode: str, work: Path) -> Iterator[None]:
    """Recall's tokenizer (and, for `per-script-lengths`, the index's postings) as `mode` reads Chinese, the suites'
    vaults and indexes in `work`; as shipped again on the way out."""
    from cairn.index import build as indexer
    from cairn.index import store

    recall_suites.WORK = work
    os.environ["CAIRN_CACHE_DIR"] = str(work / "cache")
    original_run, original_build, original_postings = tokens._cjk_run, indexer.build_index, store.card_postings
    segmenter = Segmenter(mode, _jieba_cut()) if mode != "bigrams" else None

    def build_index(*args: Any, **kwargs: Any) -> Any:
        assert segmenter is not None
        segmenter.indexing, segmenter.vocabulary, segmenter.inside, segmenter.across = True, set(), set(), set()
        try:
            return original_build(*args, **{**kwargs, "rebuild": True})
        finally:
            segmenter.indexing = False

    def per_script_postings(card: Any) -> tuple[list[int], dict[str, tuple[int, ...]]]:
        """`store.card_postings` of the padded tokens; a Chinese term's lengths are the card's without the filler."""
        lengths, out = original_postings(card)
        fillers = [sum(1 for t in field if t == _FILLER) for field in card.tokens]
        words = tuple(max(1, n - f) for n, f in zip(lengths, fillers, strict=True))
        out.pop(_FILLER, None)
        return lengths, {t: (v[:3] + words if tokens.is_cjk(t) else v) for t, v in out.items()}

    if mode == "per-script-lengths":
        store.card_postings = per_script_postings
    if segmenter is not None:
        tokens._cjk_run = segmenter.run
        indexer.build_index = build_index
    try:
        yield
    finally:
        tokens._cjk_run, indexer.build_index, store.card_postings = original_run, original_build, original_postings


def run_mode(mode: str, suites: tuple[str, ...], semantic: bool, work: Path) -> dict[str, dict[str, Any]]:
    """`recall_suites.run_suite` for each suite under `mode`, its vaults and index in `work`."""
    with patched(mode, work):
        return {suite: recall_suites.run_suite(suite, {}, rebuild=True, semantic=semantic) for suite in suites}


# Outcome of one case: (language, slice, positive, right first card injected, anything injected).
Outcome = tuple[str, str, bool, bool, bool]


def scale_sweep(
    mode: str, suites: tuple[str, ...], scales: tuple[float, ...], semantic: bool, work: Path
) -> dict[str, dict[float, list[Outcome]]]:
    """Each suite's cases decided with the three word gates (`min_lead`, `min_coverage`, `min_margin`) scaled by s
    for prompts holding Chinese, as shipped for the others: per s, every case's outcome."""
    from benchmarks.frontier import scaled
    from cairn.hot.settings import settings_of
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer
    from cairn.quality.evaluate import evaluate, load_cases

    out: dict[str, dict[float, list[Outcome]]] = {}
    with patched(mode, work):
        for suite in suites:
            vault = find_vault(recall_suites.prepare(suite))
            indexer.build_index(vault, rebuild=True)
            cases = load_cases(recall_suites.cases_file(suite, vault.root))
            chinese = [bool(_CJK.search(case.query)) for case in cases]
            with indexer.open_index(vault) as index:
                sims = None
                if semantic:
                    from cairn.semantic.batch import similarities_for

                    prompts = [case.query for case in cases]
                    sims = similarities_for(index.path, prompts, top=50, z=True, cache_dir=work / "semantic")
                shipped = settings_of(index)
                runs = {s: evaluate(index, cases, settings=scaled(shipped, s), semantic=sims) for s in {1.0, *scales}}
            out[suite] = {}
            for s in scales:
                outcomes: list[Outcome] = []
                for at, case in enumerate(cases):
                    got = runs[s if chinese[at] else 1.0].outcomes[at]
                    first_right = bool(got.injected) and got.injected[0] in case.expect
                    lang = "zh" if chinese[at] else "en"
                    outcomes.append((lang, case.slice, case.positive, first_right, bool(got.injected)))
                out[suite][s] = outcomes
    return out


def figures(outcomes: list[Outcome]) -> str:
    """Injection@1 / false injection rate (the worst slice's)."""

    def rates(rows: list[Outcome]) -> tuple[float, float]:
        pos = [o for o in rows if o[2]]
        neg = [o for o in rows if not o[2]]
        return sum(o[3] for o in pos) / max(len(pos), 1), sum(o[4] for o in neg) / max(len(neg), 1)

    inj, fir = rates(outcomes)
    worst = max(rates([o for o in outcomes if o[1] == name])[1] for name in {o[1] for o in outcomes})
    return f"{inj:.3f} / {fir:.3f} ({worst:.3f})"


def by_language(suite: str, data: dict[str, Any]) -> dict[str, tuple[int, int, int, int]]:
    """zh / en: (positives with a right first injected card, positives, negatives given a card, negatives)."""
    queries = {}
    for line in recall_suites.cases_file(suite, recall_suites.WORK / suite).read_text(encoding="utf-8").splitlines():
        if line.strip():
            case = json.loads(line)
            queries[case["id"]] = case["query"]
    out: dict[str, list[int]] = {"zh": [0, 0, 0, 0], "en": [0, 0, 0, 0]}
    for case in data["cases"]:
        counts = out["zh" if _CJK.search(queries.get(case["id"], "")) else "en"]
        if case["expect"]:
            counts[1] += 1
            counts[0] += bool(case["injected"]) and case["injected"][0] in case["expect"]
        else:
            counts[3] += 1
            counts[2] += bool(case["injected"])
    return {lang: (c[0], c[1], c[2], c[3]) for lang, c in out.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", action="append", choices=MODES, help="Only this mode (repeatable).")
    parser.add_argument("--suite", action="append", choices=SUITES, help="Only this suite (repeatable).")
    parser.add_argument("--semantic", action="store_true", help="With the semantic extra's similarities.")
    parser.add_argument(
        "--scales",
        help="Comma-separated factors s: the word gates scaled by s for Chinese prompts only (as `frontier`), a table.",
    )
    args = parser.parse_args(argv)
    suites = tuple(args.suite or SUITES)
    with tempfile.TemporaryDirectory(prefix="cairn-segment-") as folder:
        if args.scales:
            scales = tuple(float(s) for s in args.scales.split(","))
            for mode in args.mode or MODES:
                swept = scale_sweep(mode, suites, scales, args.semantic, Path(folder) / mode)
                print(
                    f"## {mode}{' (with the extra)' if args.semantic else ''}: the word gates x s for Chinese prompts\n"
                )
                print("| suite | " + " | ".join(f"s={s:g}" for s in scales) + " |")
                print("|---|" + "---|" * len(scales))
                for suite, by_scale in swept.items():
                    print(f"| {suite} | " + " | ".join(figures(by_scale[s]) for s in scales) + " |")
                print(flush=True)
            return 0
        for mode in args.mode or MODES:
            results = run_mode(mode, suites, args.semantic, Path(folder) / mode)
            print(f"## {mode}{' (with the extra)' if args.semantic else ''}\n")
            print(recall_suites.table(results))
            print()
            for suite, data in results.items():
                split = by_language(suite, data)
                cells = [f"{lang} {i}/{p} injected, {f}/{n} false" for lang, (i, p, f, n) in split.items() if p + n]
                print(f"{suite}: " + "; ".join(cells))
            print(flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
