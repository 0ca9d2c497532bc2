"""Issue 16 item 5: can a vault calibrate its gate thresholds from pseudo-queries made of its own cards?

    .venv/bin/python -m benchmarks.selfcal_study dump      # 70 s: real cases' and pseudo-queries' gate values
    .venv/bin/python -m benchmarks.selfcal_study report    # RESULTS.md "Self-calibration from a vault's own cards"

`dump` runs recall with every gate open on the real cases of the dev suites, the template vault and
the held-out suites (`confidence_study.gates_dump`), and on pseudo-queries made from each card of each of them:

- `name`, `summary`, `body`: the card's name, its summary's first sentence, each prose sentence of its body (not
  code, headings or tables; at most `BODY_PER_CARD` by a hash), asked with the card refused, as the issue proposes
  (`already_injected`: the rest of the vault answers): near-miss negatives;
- `body-in`, `body-out`: the body sentences as positives, with the card present, and with the card scored without
  the sentence's own words (its body's term counts and length reduced by them: a real question is asked in other
  words than the card's);
- `hybrid1`, `hybrid2`: near misses of another kind, a body sentence of card Y (refused) after the 1 or 2 rarest
  words of the name of card X (the next `PAIRS` cards in id-hash order): a prompt that names a subject the vault
  has and asks what it lacks, as the template vault's `neg-ci-paths-filter` does;
- `removed-body`, `removed-hybrid2` (a sample of `REMOVED_SAMPLE` cards by id hash): the same with the card truly
  left out of the index (its words leave the IDF too), against `sampled-body`, `sampled-hybrid2` (the same cards'
  queries with the card refused), to check that refusing a card stands for leaving it out.

Each is kept as `confidence_study.gates_dump` keeps a case (the first admissible cards' scores, coverages, name
flags, the best possible score), so `confidence_study.boxes` replays recall's decision at any thresholds.

`report` counts every case on a grid of (min_lead, min_coverage, min_margin) and prints: pseudo false injection
rates against the real worst-slice rate along min_lead; self-calibration rules fitted leaving one dev suite out
(their constant, the pseudo false injection rate aimed at, and for the blend its weight, chosen on the two other
suites: best summed Injection@1 with every slice's real rate at or under 4%); the frontier any per-vault choice of thresholds could
reach (fitted on each suite itself: a ceiling, not a result); the refused-versus-removed check. The template vault
and the held-out suites (`recall_suites.HELD_OUT`) are reported, never fitted on.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import itertools
import json
import os
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.confidence_study import ADMISSION
from benchmarks.recall_suites import HELD_OUT, SUITES, TEMPLATE, WORK, prepare

REAL_DUMP = WORK / "selfcal-real.json"
PSEUDO_DUMP = WORK / "selfcal-pseudo.json"
ALL = (*SUITES, TEMPLATE, *HELD_OUT)
SHIPPED = (0.24, 0.38, 0.275)
BODY_PER_CARD = 20
PAIRS = 8
REMOVED_SAMPLE = 80
FIT_FIR = 0.04
Row = dict[str, Any]

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_LINE = re.compile(r"^`[^`]*`$")
_BULLET = re.compile(r"^([-*+]|\d+[.)])\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])")


# -- pseudo-queries -------------------------------------------------------------------------------------------------


def body_sentences(body: str) -> list[str]:
    """The prose sentences of a card's body: paragraphs and list items joined across their wrapped lines, without
    code (fenced, indented, or a line that is one code span), headings, tables and quotes."""
    paragraphs: list[list[str]] = [[]]
    fenced = False
    for line in body.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            paragraphs.append([])
            continue
        text = line.strip()
        bullet = _BULLET.match(text)
        skip = fenced or not text or line.startswith(("    ", "\t")) or text[0] in "#|>" or _CODE_LINE.match(text)
        if skip or bullet:
            paragraphs.append([])
        if not skip:
            paragraphs[-1].append(text[bullet.end() :] if bullet else text)
    return [s for lines in paragraphs for s in _sentences(" ".join(lines).rstrip(":："))]


def _sentences(text: str) -> list[str]:
    from cairn.hot.tokens import tokenize

    parts = (p.strip() for p in _SENTENCE_END.split(" ".join(text.split())))
    return [p for p in parts if len(set(tokenize(p))) >= 3]


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _rarest_words(index: Any, text: str, n: int) -> list[str]:
    """The n words of `text` whose rarest token has the lowest document frequency in the vault, in text order."""
    from cairn.hot.tokens import tokenize

    words = [w for w in text.split() if tokenize(w)]
    df = {w: min((p.df for p in index.postings(tokenize(w)).values()), default=1) for w in words}
    picked = sorted(range(len(words)), key=lambda i: (df[words[i]], i))[:n]
    return [words[i] for i in sorted(picked)]


def _queries(index: Any, cards: list[Any]) -> list[tuple[str, str, str]]:
    """(card id, field, text) of every pseudo-query: name, summary, body (`body` also asked as positives) and the
    hybrids (field `hybrid1` / `hybrid2`, the card id the refused card Y's)."""
    out: list[tuple[str, str, str]] = []
    for at, card in enumerate(cards):
        record = index.record(card.id) or {}
        out.append((card.id, "name", card.name))
        summary = _sentences(card.summary)
        if summary:
            out.append((card.id, "summary", summary[0]))
        body = sorted(body_sentences(record.get("body") or ""), key=lambda s: _hash(card.id + s))
        out += [(card.id, "body", s) for s in body[:BODY_PER_CARD]]
        for j in range(1, min(PAIRS, len(cards) - 1) + 1) if body else ():
            subject = cards[(at + j) % len(cards)].name
            for words in (1, 2):
                text = " ".join(_rarest_words(index, subject, words)) + ": " + body[(j - 1) % len(body)]
                out.append((card.id, f"hybrid{words}", text))
    return out


def _asked(index: Any, text: str, settings: Any) -> tuple[list[Any], Any, Any]:
    """The admissible candidates of one recall with the gates open, the query's weights and postings."""
    from cairn.hot import recall as R
    from cairn.hot.tokens import prompt_terms

    result = R.recall(index, text, settings=settings)
    salience = prompt_terms(text)
    terms = list(salience)
    postings = index.postings(terms)
    weights = R._weights(index, terms, postings, settings, salience)
    return [c for c in result.candidates if c.reason not in ADMISSION], weights, postings


def _case(case_id: str, kind: str, cards: list[tuple[str, float, float, bool]], best: float, expect: str) -> Row:
    """A pseudo-query as `confidence_study.gates_dump` keeps a case: (id, score, coverage, named) per admissible
    card, best first; positive when `expect` names the card it is about."""
    return {
        "id": case_id,
        "slice": kind,
        "positive": bool(expect),
        "hits": [c[0] == expect for c in cards[:4]],
        "scores": [c[1] for c in cards[:4]],
        "covers": [c[2] for c in cards[:4]],
        "ncovers": [1.0 if c[3] else 0.0 for c in cards[:4]],
        "best": best,
    }


def _held_out(
    row: int, removed: Counter[str], weights: Any, postings: Any, settings: Any, avg: Any
) -> tuple[float, ...]:
    """(score, coverage, named) of card `row` with the tokens `removed` taken out of its body."""
    from bisect import bisect_left

    k1, b = settings.k1, settings.b
    w = (settings.weight_name, settings.weight_summary, settings.weight_body)
    shrink = sum(removed.values())
    score = hit = name_hit = 0.0
    for term, weight in weights.idf.items():
        found = postings.get(term)
        at = bisect_left(found.rows, row) if found is not None else -1
        if found is None or at >= len(found.rows) or found.rows[at] != row:
            continue
        st = list(found.stats[6 * at : 6 * at + 6])
        st[2] = max(0, st[2] - removed.get(term, 0))
        st[5] = max(0, st[5] - shrink)
        tf = sum(w[i] * st[i] / (1 - b + b * st[3 + i] / avg[i]) for i in range(3))
        if tf > 0:
            score += weight * tf / (k1 + tf)
            hit += weight
            name_hit += weight if st[0] > 0 else 0.0
    total = weights.total
    return score, min(1.0, hit / total) if total > 0 else 0.0, float(total > 0 and name_hit / total >= 0.65)


def pseudo_dump(suite: str) -> dict[str, list[Row]]:
    """Every pseudo-query kind of one suite, as cases (see the module docstring)."""
    from cairn.hot.settings import settings_of
    from cairn.hot.tokens import tokenize
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer

    vault = find_vault(prepare(suite))
    report = indexer.build_index(vault)
    out: dict[str, list[Row]] = {}
    with indexer.open_index(vault) as index:
        settings = dataclasses.replace(settings_of(index), min_lead=0.0, min_coverage=0.0, min_margin=0.0)
        cards = sorted(index.cards(range(1, index.n_cards + 1)).values(), key=lambda c: _hash(c.id))
        rows = {c.id: c.row for c in cards}
        avg = tuple(max(a, 1.0) for a in index.avg_lengths)
        queries = _queries(index, cards)
        for card_id, field, text in queries:
            adm, weights, postings = _asked(index, text, settings)
            present = [(c.card.id, c.score, c.coverage, c.named) for c in adm]
            refused = [c for c in present if c[0] != card_id]
            case_id = f"{card_id}|{_hash(text)[:8]}"
            out.setdefault(field, []).append(_case(case_id, field, refused, weights.best, ""))
            if field == "body":
                out.setdefault("body-in", []).append(_case(case_id, "body-in", present, weights.best, card_id))
                held = _held_out(rows[card_id], Counter(tokenize(text)), weights, postings, settings, avg)
                moved = sorted([*refused, (card_id, *held)], key=lambda c: -c[1])
                out.setdefault("body-out", []).append(_case(case_id, "body-out", moved, weights.best, card_id))
        sample = {c.id for c in cards[:REMOVED_SAMPLE]}
        out.update(_removed(report.index_file, index.meta, [q for q in queries if q[0] in sample]))
        for field in ("body", "hybrid2"):  # the same sample refused, to compare like with like
            out[f"sampled-{field}"] = [c for c in out.get(field, []) if c["id"].split("|")[0] in sample]
    return out


def _removed(index_file: Path, meta: dict[str, str], queries: list[tuple[str, str, str]]) -> dict[str, list[Row]]:
    """The `body` and `hybrid2` pseudo-queries of some cards asked of an index written without the card."""
    from cairn.hot.index import IndexReader
    from cairn.hot.settings import settings_of
    from cairn.index import store

    out: dict[str, list[Row]] = {"removed-body": [], "removed-hybrid2": []}
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "index.cairn"
        for card_id, group in itertools.groupby(queries, key=lambda q: q[0]):
            store.write_index(target, meta, [], removed_ids={card_id}, base=index_file)
            with IndexReader(target) as index:
                settings = dataclasses.replace(settings_of(index), min_lead=0.0, min_coverage=0.0, min_margin=0.0)
                for _, field, text in group:
                    if f"removed-{field}" in out:
                        adm, weights, _ = _asked(index, text, settings)
                        cards = [(c.card.id, c.score, c.coverage, c.named) for c in adm]
                        case = _case(f"{card_id}|{_hash(text)[:8]}", field, cards, weights.best, "")
                        out[f"removed-{field}"].append(case)
    return out


def dump() -> None:
    from benchmarks.confidence_study import gates_dump

    os.environ["CAIRN_CACHE_DIR"] = str(WORK / "cache-confidence")
    gates_dump(None, REAL_DUMP, ALL)
    pseudo = {}
    for suite in ALL:
        pseudo[suite] = pseudo_dump(suite)
        print(f"{suite}: " + ", ".join(f"{k} {len(v)}" for k, v in pseudo[suite].items()), file=sys.stderr)
    PSEUDO_DUMP.write_text(json.dumps(pseudo))


# -- report -------------------------------------------------------------------------------------------------------

LEADS = [round(0.01 * i, 2) for i in range(0, 81)]
COVERS = [round(0.02 * i, 2) for i in range(0, 46)]
MARGINS = [round(0.025 * i, 3) for i in range(0, 37)]
NEGATIVE_KINDS = ("name", "summary", "body", "hybrid1", "hybrid2")


def grid_counts(cases: list[Row], weight: Callable[[Row], float] | None = None) -> Any:
    """How many cases get their first card injected at each grid point (`LEADS` x `COVERS` x `MARGINS`), as recall
    decides with groups and the name relief (`confidence_study.boxes`): each case's union of boxes counted by
    inclusion-exclusion, then suffix sums."""
    import numpy as np

    from benchmarks.confidence_study import boxes

    grids = [np.array(LEADS), np.array(COVERS), np.array(MARGINS)]
    idx: list[list[int]] = [[], [], []]
    signs: list[float] = []
    for case in cases:
        w = 1.0 if weight is None else weight(case)
        bs = boxes(case, 0.7) if w else []
        for r in range(1, len(bs) + 1):
            for sub in itertools.combinations(bs, r):
                at = [
                    int(np.searchsorted(g, min(b[d] for b in sub) + 1e-9, side="right")) - 1
                    for d, g in enumerate(grids)
                ]
                if min(at) >= 0:
                    for d in range(3):
                        idx[d].append(at[d])
                    signs.append(w if r % 2 else -w)
    acc = np.zeros(tuple(len(g) for g in grids))
    if signs:
        np.add.at(acc, tuple(np.array(i) for i in idx), np.array(signs))
    for ax in range(3):
        acc = np.flip(np.cumsum(np.flip(acc, ax), axis=ax), ax)
    return acc


class Tables:
    """Every suite's real Injection@1 and worst-slice FIR, and each pseudo kind's rate, over the grid."""

    def __init__(self, real: dict[str, list[Row]], pseudo: dict[str, dict[str, list[Row]]]) -> None:
        import numpy as np

        self.inj: dict[str, Any] = {}
        self.worst: dict[str, Any] = {}
        self.pseudo: dict[str, dict[str, Any]] = {}
        for suite, cases in real.items():
            hits = grid_counts(cases, lambda c: 1.0 if c["positive"] and c["hits"] and c["hits"][0] else 0.0)
            self.inj[suite] = hits / max(1, sum(1 for c in cases if c["positive"]))
            rates = []
            for part in ("all", "long", "short"):
                negs = [c for c in cases if not c["positive"] and part in ("all", c["slice"])]
                if negs:
                    rates.append(grid_counts(negs) / len(negs))
            self.worst[suite] = np.maximum.reduce(rates)
        for suite, kinds in pseudo.items():
            self.pseudo[suite] = {}
            for kind, cases in kinds.items():
                positive = kind.endswith(("-in", "-out"))
                hit = (lambda c: 1.0 if c["hits"] and c["hits"][0] else 0.0) if positive else None
                self.pseudo[suite][kind] = grid_counts(cases, hit) / max(1, len(cases))

    @staticmethod
    def at(t: tuple[float, float, float]) -> tuple[int, int, int]:
        import bisect

        return tuple(bisect.bisect_right(g, v + 1e-9) - 1 for g, v in zip((LEADS, COVERS, MARGINS), t, strict=True))  # type: ignore[return-value]

    def real(self, suite: str, t: tuple[float, float, float]) -> tuple[float, float]:
        i = self.at(t)
        return float(self.inj[suite][i]), float(self.worst[suite][i])


def rule_lead(rates: Any, target: float) -> tuple[float, float, float]:
    """min_lead: the lowest whose pseudo rate is at or under the target, coverage and margin as shipped."""
    _, ci, mi = Tables.at(SHIPPED)
    for li, lead in enumerate(LEADS):
        if rates[li, ci, mi] <= target + 1e-9:
            return (lead, SHIPPED[1], SHIPPED[2])
    return (LEADS[-1], SHIPPED[1], SHIPPED[2])


def rule_scale(rates: Any, target: float) -> tuple[float, float, float]:
    """The shipped thresholds times the lowest scale (0.5-3, step 0.02) whose pseudo rate is at or under the target."""
    for step in range(0, 126):
        s = 0.5 + 0.02 * step
        t = (min(LEADS[-1], SHIPPED[0] * s), min(COVERS[-1], SHIPPED[1] * s), min(MARGINS[-1], SHIPPED[2] * s))
        if rates[Tables.at(t)] <= target + 1e-9:
            return t
    return (LEADS[-1], COVERS[-1], MARGINS[-1])


def _free(positives: Any, negatives: Any, target: float) -> tuple[float, float, float]:
    """`cairn calibrate`'s objective on pseudo cases: most pseudo positives with the pseudo rate at or under the
    target; ties to the strictest point."""
    import numpy as np

    scored = np.where(negatives <= target + 1e-9, positives, -1.0)
    i, j, k = max(map(tuple, np.argwhere(scored >= scored.max() - 1e-9)))
    return (LEADS[i], COVERS[j], MARGINS[k])


TARGETS = [round(0.0025 * step, 4) for step in range(0, 121)]


def loso(
    tables: Tables, calibrate: Callable[[str, Any], tuple[float, float, float]], constants: list[Any] | None = None
) -> dict[str, tuple[Any, dict[str, tuple[tuple[float, float, float], float, float]]] | None]:
    """Each dev suite left out: the rule's constant (by default the pseudo rate aimed at, `TARGETS`) fitted on the
    two others (best summed real Injection@1 with every slice at or under FIT_FIR; ties to the first constant
    listed), then the suite left out, the template and the held-out suites calibrated with it: per left-out suite, the
    constant and {suite: (thresholds, Injection@1, worst-slice FIR)}, or None when no constant holds."""
    out: dict[str, tuple[Any, dict[str, tuple[tuple[float, float, float], float, float]]] | None] = {}
    for held in SUITES:
        fitted = [s for s in SUITES if s != held]
        best: tuple[tuple[float, int], Any] | None = None
        for position, constant in enumerate(constants or TARGETS):
            got = [tables.real(s, calibrate(s, constant)) for s in fitted]
            if all(worst <= FIT_FIR + 1e-9 for _, worst in got):
                key = (round(sum(inj for inj, _ in got), 9), -position)
                if best is None or key > best[0]:
                    best = (key, constant)
        if best is None:
            out[held] = None
            continue
        measured = {}
        for suite in (held, TEMPLATE, *HELD_OUT):
            t = calibrate(suite, best[1])
            measured[suite] = (t, *tables.real(suite, t))
        out[held] = (best[1], measured)
    return out


def _header(constant: str) -> str:
    """The head of a table of `_loso_lines`: the suite left out, the constant fitted, then each suite measured."""
    columns = ["left out", constant, "left out", TEMPLATE, *HELD_OUT]
    return f"| {' | '.join(columns)} |\n" + "|---" * len(columns) + "|"


def _loso_lines(results: dict[str, Any]) -> list[str]:
    lines = []
    for held, got in results.items():
        if got is None:
            lines.append(f"| {held} | none holds {FIT_FIR:g} on the two others | | | |")
            continue
        cells = [f"{t[0]:.3g} / {t[1]:.3g} / {t[2]:.3g}: {inj:.3f} / {worst:.3f}" for t, inj, worst in got[1].values()]
        lines.append(f"| {held} | {got[0]} | " + " | ".join(cells) + " |")
    return lines


def _summary_line(name: str, results: dict[str, Any]) -> str:
    """One rule: each dev suite as left out (Injection@1 / worst-slice FIR, its min_lead), and the template's and
    the held-out suites' figures over the three folds."""
    cells = []
    for held in SUITES:
        got = results[held]
        cells.append("none" if got is None else "{1:.3f} / {2:.3f} ({0[0]:.2g})".format(*got[1][held]))
    for other in (TEMPLATE, *HELD_OUT):
        figures = sorted({"{1:.3f} / {2:.3f}".format(*got[1][other]) for got in results.values() if got})
        cells.append(", ".join(figures))
    return f"| {name} | " + " | ".join(cells) + " |"


def rule_blend(rates: Any, constant: tuple[float, float]) -> tuple[float, float, float]:
    """min_lead moved a share `w` of the way from the shipped value to `rule_lead`'s (constant: (w, target))."""
    w, target = constant
    lead = SHIPPED[0] + w * (rule_lead(rates, target)[0] - SHIPPED[0])
    return (round(lead, 2), SHIPPED[1], SHIPPED[2])


def report() -> None:
    import numpy as np

    tables = Tables(json.loads(REAL_DUMP.read_text()), json.loads(PSEUDO_DUMP.read_text()))
    leads = (0.16, 0.20, 0.22, 0.24, 0.26, 0.30, 0.40, 0.54)
    print(
        f"## False injection rate along min_lead (coverage {SHIPPED[1]}, margin {SHIPPED[2]}): real worst slice, pseudo kinds"
    )
    print("| suite | kind | " + " | ".join(f"{v:g}" for v in leads) + " |")
    print("|---|---|" + "---|" * len(leads))
    for suite in ALL:
        print(
            f"| {suite} | real (worst slice) | "
            + " | ".join(f"{tables.real(suite, (v, *SHIPPED[1:]))[1]:.3f}" for v in leads)
            + " |"
        )
        for kind in (*NEGATIVE_KINDS, "sampled-body", "removed-body", "sampled-hybrid2", "removed-hybrid2"):
            rates = tables.pseudo[suite][kind]
            print(
                f"| {suite} | {kind} | "
                + " | ".join(f"{rates[Tables.at((v, *SHIPPED[1:]))]:.3f}" for v in leads)
                + " |"
            )
    print()
    print("## Injection@1 at the shipped thresholds: real positives, pseudo positives")
    print("| suite | real | body-in | body-out |")
    print("|---|---|---|---|")
    for suite in ALL:
        i = Tables.at(SHIPPED)
        print(
            f"| {suite} | {tables.real(suite, SHIPPED)[0]:.3f} | {tables.pseudo[suite]['body-in'][i]:.3f} | "
            f"{tables.pseudo[suite]['body-out'][i]:.3f} |"
        )
    print()
    print(f"## Self-calibration rules, left-out dev suite (fit: every slice <= {FIT_FIR:g} on the two others)")
    print("cells: thresholds: Injection@1 / worst-slice FIR")
    rules: list[tuple[str, Callable[[str, float], tuple[float, float, float]]]] = []
    summary: list[str] = []
    for kind in NEGATIVE_KINDS:
        rules.append((f"min_lead, {kind}", lambda s, t, k=kind: rule_lead(tables.pseudo[s][k], t)))
        rules.append((f"scale, {kind}", lambda s, t, k=kind: rule_scale(tables.pseudo[s][k], t)))
    mixed = {
        suite: sum(kinds[k] for k in NEGATIVE_KINDS) / len(NEGATIVE_KINDS) for suite, kinds in tables.pseudo.items()
    }
    rules.append(("min_lead, the five kinds' mean rate", lambda s, t: rule_lead(mixed[s], t)))
    rules.append(("scale, the five kinds' mean rate", lambda s, t: rule_scale(mixed[s], t)))
    for kind in ("body", "hybrid2"):
        for positive in ("body-in", "body-out"):
            rules.append(
                (
                    f"all three (calibrate's fit), {kind} against {positive}",
                    lambda s, t, k=kind, p=positive: _free(tables.pseudo[s][p], tables.pseudo[s][k], t),
                )
            )
    for name, rule in rules:
        print(f"### {name}")
        print(_header("target"))
        results = loso(tables, rule)
        summary.append(_summary_line(name, results))
        for line in _loso_lines(results):
            print(line)
    blends = [(w, t) for w in (0.0, 0.25, 0.5, 0.75, 1.0) for t in TARGETS]
    for kind in NEGATIVE_KINDS:
        print(f"### min_lead blended with the shipped value (weight, target), {kind}")
        print(_header("weight, target"))
        results = loso(tables, lambda s, c, k=kind: rule_blend(tables.pseudo[s][k], c), blends)
        summary.append(_summary_line(f"min_lead blended, {kind}", results))
        for line in _loso_lines(results):
            print(line)
    print()
    print(
        "## Summary: each dev suite as left out (Injection@1 / worst-slice FIR (min_lead)); template, held-out suites"
    )
    folds = [f"{s} (3 folds)" for s in (TEMPLATE, *HELD_OUT)]
    print(f"| rule | {' | '.join(SUITES)} | {' | '.join(folds)} |")
    print("|---" * (1 + len(SUITES) + len(folds)) + "|")
    shipped = [f"{tables.real(s, SHIPPED)[0]:.3f} / {tables.real(s, SHIPPED)[1]:.3f} (0.24)" for s in SUITES]
    shipped += ["{:.3f} / {:.3f}".format(*tables.real(s, SHIPPED)) for s in (TEMPLATE, *HELD_OUT)]
    print("| shipped defaults (no calibration) | " + " | ".join(shipped) + " |")
    for line in summary:
        print(line)
    print()
    print("## The frontier: thresholds fitted on each suite itself (a ceiling for any per-vault choice)")
    print("| suite | shipped | min_lead alone, worst <= 0.04 | all three, worst <= 0.04 | all three, worst <= 0.05 |")
    print("|---|---|---|---|---|")
    _, ci, mi = Tables.at(SHIPPED)
    for suite in ALL:
        inj, worst = tables.inj[suite], tables.worst[suite]
        cells = ["{:.3f} / {:.3f}".format(*tables.real(suite, SHIPPED))]
        line = np.where(worst[:, ci, mi] <= 0.04 + 1e-9, inj[:, ci, mi], -1.0)
        li = int(max(np.argwhere(line >= line.max() - 1e-9))[0])
        cells.append(f"{LEADS[li]:g}: {inj[li, ci, mi]:.3f} / {worst[li, ci, mi]:.3f}")
        for cap in (0.04, 0.05):
            scored = np.where(worst <= cap + 1e-9, inj, -1.0)
            i, j, k = max(map(tuple, np.argwhere(scored >= scored.max() - 1e-9)))
            cells.append(f"{LEADS[i]:g} / {COVERS[j]:g} / {MARGINS[k]:g}: {inj[i, j, k]:.3f} / {worst[i, j, k]:.3f}")
        print(f"| {suite} | " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("dump", "report"))
    args = parser.parse_args(argv)
    if args.command == "dump":
        dump()
    else:
        report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
