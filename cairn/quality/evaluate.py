"""`cairn eval`: run recall over positive and negative cases and measure Recall@k, Injection@k and false injections.

Every case goes through `recall.recall` itself, so eval makes exactly the decisions the hook and `cairn recall` make;
`cairn.quality.metrics` turns the decisions into figures.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cairn.config import RecallSettings
from cairn.hot.errors import InvalidCases
from cairn.hot.hook import MAX_QUERY_CHARS
from cairn.hot.index import IndexReader
from cairn.hot.recall import recall
from cairn.quality.metrics import Metrics, Outcome, metrics_of
from cairn.terminal import clean_line

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class Case:
    """One query. expect: the card ids that fit (empty = a negative: nothing should be injected)."""

    id: str
    query: str
    expect: tuple[str, ...]
    slice: str = ""

    @property
    def positive(self) -> bool:
        return bool(self.expect)


@dataclass(frozen=True, slots=True)
class CaseOutcome:
    """What recall did for one case: the top 3 ids of the ranking (before the gates) and the injected ids."""

    case: Case
    ranked: tuple[str, ...]
    injected: tuple[str, ...]

    @property
    def scored(self) -> Outcome:
        """The case as the metrics count it."""
        expect = self.case.expect
        return Outcome(
            self.case.slice,
            self.case.positive,
            tuple(card_id in expect for card_id in self.ranked),
            tuple(card_id in expect for card_id in self.injected),
        )


@dataclass(frozen=True, slots=True)
class EvalReport:
    """overall: the figures of every case, each slice's under `overall.by_slice`."""

    overall: Metrics
    outcomes: tuple[CaseOutcome, ...]

    def to_dict(self) -> dict[str, Any]:
        data = self.overall.eval_dict()
        data["cases"] = [
            {"id": o.case.id, "expect": list(o.case.expect), "ranked": list(o.ranked), "injected": list(o.injected)}
            for o in self.outcomes
        ]
        return data


# A cases file is bigger than a card's frontmatter (thousands of cases) but still bounded, in .jsonl and .yaml alike.
MAX_CASES_BYTES = 32 * 1024 * 1024
MAX_CASES_VALUES = 2_000_000  # YAML values after aliases are expanded


def load_cases(path: Path) -> list[Case]:
    """Cases from a `.jsonl` file (one object a line) or a `.yaml`/`.yml` file (a list of objects)."""
    if not path.is_file():
        if path.exists():  # a pipe or a device (`--cases /dev/stdin`): its suffix cannot say its format
            raise InvalidCases(f"{path}: not a regular file; save the cases to a .jsonl or .yaml file and name that")
        raise InvalidCases(f"{path}: no such cases file; check the path (a vault's own are in its evals/ folder)")
    if path.stat().st_size > MAX_CASES_BYTES:
        raise InvalidCases(
            f"{path}: the cases file is larger than {MAX_CASES_BYTES // (1024 * 1024)} MiB; split it into smaller files"
        )
    try:
        text = path.read_text("utf-8-sig")  # a byte order mark (some Windows editors write one) is no text
    except UnicodeDecodeError:
        raise InvalidCases(f"{path}: not UTF-8 text; save it as UTF-8") from None
    suffix = path.suffix.lower()
    items: list[tuple[int, Any]]
    if suffix == ".jsonl":
        items = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                items.append((number, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise InvalidCases(f"{path}:{number}: not JSON ({exc.msg})") from None
            except ValueError:  # an int of more digits than Python reads (4,300)
                raise InvalidCases(f"{path}:{number}: a number too long to read; quote it to keep it as text") from None
            except RecursionError:
                raise InvalidCases(f"{path}:{number}: JSON nested too deeply to be a case") from None
    elif suffix in (".yaml", ".yml"):
        from cairn.cards import safeyaml  # PyYAML: not for `recall` and `explain`, which import this module

        try:
            data = safeyaml.load(text, max_bytes=MAX_CASES_BYTES, max_nodes=MAX_CASES_VALUES, what="the cases file")
        except Exception as exc:  # the YAML loader raises several types; each is a bad file
            raise InvalidCases(_yaml_error(path, exc)) from None
        if data is None:
            data = []
        if not isinstance(data, list):
            raise InvalidCases(f"{path}: a YAML cases file is a list of cases")
        items = [(0, item) for item in data]
    elif suffix == ".json" and text.lstrip().startswith("["):  # a JSON list of cases: neither, but YAML reads it
        raise InvalidCases(
            f"{path}: cases files are .jsonl (one case a line) or .yaml (a list of cases); a JSON list of cases is "
            "YAML too: rename it to .yaml"
        )
    else:
        raise InvalidCases(
            f"{path}: cases files are .jsonl (one case a line) or .yaml (a list of cases); rename it to the one it is"
        )
    cases = [_case(path, number, position, item) for position, (number, item) in enumerate(items, 1)]
    seen: dict[str, int] = {}
    for position, (case, (number, _)) in enumerate(zip(cases, items, strict=True), 1):
        if case.id in seen:
            where = f"{path}:{number}" if number else f"{path}: case {position}"
            first = f"line {items[seen[case.id] - 1][0]}" if number else f"case {seen[case.id]}"
            raise InvalidCases(
                f"{where}: case id '{shown(case.id)}' appears twice (first at {first}); give each case its own id"
            )
        seen[case.id] = position
    return cases


def shown(text: str, width: int = 80) -> str:
    """A case's id, key or slice as one line for a message or a table: no line break, no escape, cut to `width`."""
    one_line = clean_line(text)
    return one_line if len(one_line) <= width else one_line[: width - 1] + "…"


def _yaml_error(path: Path, exc: Exception) -> str:
    """One line for a YAML cases file that does not parse: the line YAML stopped at and its complaint."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is not None and problem:
        return f"{path}:{mark.line + 1}: not valid YAML ({shown(str(problem))}); fix that line or the one before it"
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    from cairn.cards.safeyaml import YamlRejected

    if isinstance(exc, YamlRejected) and exc.line:  # a duplicate key, a merge key: found at their line
        return f"{path}:{exc.line + 1}: not valid YAML ({shown(first, 200)})"
    return f"{path}: not valid YAML ({shown(first, 200)})"


def unknown_expected(index: IndexReader, cases: Sequence[Case]) -> list[tuple[Case, str]]:
    """Each (case, card id) where a case expects a card the index does not hold: such a positive can never pass."""
    known: dict[str, bool] = {}
    out = []
    for case in cases:
        for card_id in case.expect:
            if card_id not in known:
                known[card_id] = index.card_by_id(card_id) is not None
            if not known[card_id]:
                out.append((case, card_id))
    return out


def check_expected(
    index: IndexReader,
    cases: Sequence[Case],
    path: Path,
    fix: str | None = None,
    vault_arg: str = "",
) -> None:
    """Refuse cases that expect a card the index does not hold (a typo, or a card removed or left out): the figures
    would count them as misses of the ranking, when the case itself is wrong. fix: what the error says to do (by
    default, fix the id: the commands it names end in `vault_arg`, the ` --vault X` the user gave, so that they ask
    this vault from another folder)."""
    unknown = unknown_expected(index, cases)
    if not unknown:
        return
    fix = fix or f"fix the id (`cairn list{vault_arg}` shows the cards, `cairn lint{vault_arg}` those left out)"
    case, card_id = unknown[0]
    more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
    raise InvalidCases(
        f"{path}: case '{shown(case.id)}' expects card '{shown(card_id)}', which the index does not hold{more}; {fix}"
    )


# A case's keys. Other keys are left alone (a suite may note a case's language or source), but one spelt like a
# case key is a mistake that would change the case silently: `expected:` for `expect:` makes a positive a negative.
_CASE_KEYS = ("id", "query", "expect", "slice")


def _case(path: Path, number: int, position: int, item: Any) -> Case:
    where = f"{path}:{number}" if number else f"{path}: case {position}"
    if not isinstance(item, dict):
        raise InvalidCases(f"{where}: a case is a mapping with id, query and expect")
    for key in item:
        meant = (
            difflib.get_close_matches(str(key).lower(), _CASE_KEYS, n=1, cutoff=0.75) if key not in _CASE_KEYS else []
        )
        if not meant and "expect" not in item and "expect" in str(key).lower():  # `expected_cards:`, `expects:`
            meant = ["expect"]
        if meant:
            raise InvalidCases(f"{where}: unknown key '{shown(str(key))}' in a case; did you mean '{meant[0]}'?")
    query = item.get("query")
    if not isinstance(query, str) or not query.strip():
        raise InvalidCases(f"{where}: 'query' must be non-empty text")
    expect = item.get("expect", [])
    if isinstance(expect, str):
        expect = [expect]
    if not isinstance(expect, list) or not all(isinstance(e, str) for e in expect):
        raise InvalidCases(f"{where}: 'expect' must be a list of card ids ([] for a negative)")
    case_id = item.get("id", f"case-{position}")
    if isinstance(case_id, bool) or not isinstance(case_id, (str, int)) or not str(case_id).strip():
        raise InvalidCases(f"{where}: 'id' must be text (or leave it out: the case is then case-{position})")
    slice_name = item.get("slice") or ""
    if not isinstance(slice_name, str):
        raise InvalidCases(f"{where}: 'slice' must be text")
    if slice_name.strip().lower() == "all":  # the tables' row of every case
        raise InvalidCases(f"{where}: the slice {slice_name!r} names every case in the tables; pick another name")
    # The hook reads a prompt's first MAX_QUERY_CHARS characters (`cairn recall` and MCP too): a case is that prompt
    query = query[:MAX_QUERY_CHARS]
    return Case(id=str(case_id), query=query, expect=tuple(expect), slice=slice_name)


# Cards recall ranks but never serves, whatever the prompt: Recall@k is measured over the ranking without them (a
# retired card ranked first made Recall@1 miss a case whose right card was injected).
NEVER_SERVED = frozenset({"retired", "draft", "unknown_status", "superseded", "expired"})


def evaluate(
    index: IndexReader,
    cases: Sequence[Case],
    *,
    scope: Sequence[str] | None = None,
    settings: RecallSettings | None = None,
    today: dt.date | None = None,
    progress: Progress | None = None,
    semantic: Sequence[Mapping[str, float] | None] | None = None,
) -> EvalReport:
    """Run recall on every case (no session: each case is a fresh prompt) and measure. semantic: each case's
    semantic similarities (z-scores, as the hook's semantic channel gives them), or None for the lexical judgement."""
    outcomes: list[CaseOutcome] = []
    total = len(cases)
    for done, case in enumerate(cases, 1):
        sims = semantic[done - 1] if semantic is not None else None
        result = recall(index, case.query, scope=scope, today=today, settings=settings, semantic=sims)
        ranked = tuple(c.card.id for c in result.candidates if c.reason not in NEVER_SERVED)[:3]
        injected = tuple(c.card.id for c in result.injected)
        outcomes.append(CaseOutcome(case, ranked, injected))
        if progress and (done % 25 == 0 or done == total):
            progress(done, total)
    return EvalReport(overall=metrics_of(o.scored for o in outcomes), outcomes=tuple(outcomes))
