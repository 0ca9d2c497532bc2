"""The benchmark files read into records: haystacks of sessions, and questions that name their answer sessions.

LongMemEval (Wu et al. 2024): a JSON list of questions, each with its own haystack of ~50 sessions; the published
retrieval protocol indexes the user's turns only, and leaves out abstention questions (ids ending in `_abs`).
LoCoMo (Maharana et al. 2024): 10 long conversations, each its own haystack; a question's evidence `D3:11` names
session 3, turn 11; both speakers' turns are indexed (questions ask about either speaker).
"""

from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cairn.hot.errors import CairnError
from cairn.terminal import clean_line

LONGMEMEVAL = "longmemeval"
LOCOMO = "locomo"


class InvalidBenchmark(CairnError):
    """The benchmark file is not in the expected format."""


@dataclass(frozen=True, slots=True)
class Session:
    """One conversation session: its id, its date as written in the file, the text of its indexed turns, and who
    said each of them (empty when the file names no speakers, as in LongMemEval, where every indexed turn is the
    user's)."""

    id: str
    date: str
    turns: tuple[str, ...]
    speakers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Haystack:
    """The sessions one question is asked against, in corpus order."""

    key: str
    sessions: tuple[Session, ...]


@dataclass(frozen=True, slots=True)
class Question:
    """A question, its type, the haystack it is asked against and the ids of the sessions that hold its answer;
    asked: when it was asked, as written in the file ("" when the file does not say: LoCoMo)."""

    id: str
    type: str
    text: str
    haystack: str
    relevant: frozenset[str]
    asked: str = ""


@dataclass(frozen=True, slots=True)
class Suite:
    """A benchmark read from its file. excluded: questions left out of the metrics, by reason, with a count."""

    name: str
    haystacks: dict[str, Haystack]
    questions: tuple[Question, ...]
    excluded: dict[str, int] = field(default_factory=dict)


_HAYSTACK_FIELDS = ("haystack_session_ids", "haystack_dates", "haystack_sessions")


def load_longmemeval(path: Path) -> Suite:
    """A LongMemEval file (`longmemeval_s_cleaned.json` or a file in its format)."""
    records = _read_json(path)
    if not isinstance(records, list):
        raise InvalidBenchmark(f"{path}: a LongMemEval file is a JSON list of questions")
    haystacks: dict[str, Haystack] = {}
    questions: list[Question] = []
    abstention = no_answer = 0
    seen: set[str] = set()
    for n, record in enumerate(records):
        try:
            qid = str(record["question_id"])
            if qid in seen:  # each question has its own haystack, by its id: a second would take the first's place
                raise InvalidBenchmark(
                    f"{path}: question #{n + 1}: question_id '{clean_line(qid)[:80]}' appears twice; "
                    "each question needs its own id"
                )
            seen.add(qid)
            if qid.endswith("_abs"):
                abstention += 1
                continue
            fields = {k: record[k] for k in _HAYSTACK_FIELDS}
            if len({len(items) for items in fields.values()}) > 1:  # zip(strict=True) said only "argument 2"
                counts = ", ".join(f"{len(items)} {k}" for k, items in fields.items())
                raise InvalidBenchmark(
                    f"{path}: question #{n + 1} is not in the LongMemEval format "
                    f"({counts}; each session needs its id, its date and its turns)"
                )
            sessions = tuple(
                Session(
                    id=str(sid),
                    date=str(date),
                    turns=tuple(str(t.get("content", "")) for t in turns if t.get("role") == "user"),
                )
                for sid, date, turns in zip(*fields.values(), strict=True)
            )
            # an answer session its haystack does not hold (a typo in a converted file) could never be found either
            relevant = frozenset(_listed(record["answer_session_ids"])) & {s.id for s in sessions}
            if not relevant:  # nothing to find: it could only score 0
                no_answer += 1
                continue
            haystacks[qid] = Haystack(qid, sessions)
            questions.append(
                Question(
                    id=qid,
                    type=str(record["question_type"]),
                    text=str(record["question"]),
                    haystack=qid,
                    relevant=relevant,
                    asked=str(record.get("question_date", "")),
                )
            )
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            hint = "; it looks like LoCoMo: cairn bench locomo" if _has(record, "conversation") else ""
            raise InvalidBenchmark(
                f"{path}: question #{n + 1} is not in the LongMemEval format ({_why(exc)}){hint}"
            ) from None
    _require_text(path, haystacks, '{"role": "user", "content": ...}')
    excluded = {"abstention": abstention, "no_answer_session": no_answer}
    return Suite(LONGMEMEVAL, haystacks, tuple(questions), {k: v for k, v in excluded.items() if v})


_EVIDENCE = re.compile(r"D:?(\d+):\d+")
_SESSION_KEY = re.compile(r"session_(\d+)")


def load_locomo(path: Path) -> Suite:
    """The LoCoMo file (`locomo10.json`): every question with evidence, against its own conversation."""
    records = _read_json(path)
    if not isinstance(records, list):
        raise InvalidBenchmark(f"{path}: a LoCoMo file is a JSON list of conversations")
    haystacks: dict[str, Haystack] = {}
    questions: list[Question] = []
    no_evidence = unreadable = 0
    for n, record in enumerate(records):
        try:
            key = str(record.get("sample_id", f"conv-{n + 1}"))
            if key in haystacks:  # its questions would be asked against another conversation's sessions
                raise InvalidBenchmark(
                    f"{path}: conversation #{n + 1}: sample_id '{clean_line(key)[:80]}' appears twice; "
                    "each conversation needs its own id"
                )
            conversation: dict[str, Any] = record["conversation"]
            numbers = sorted(int(m.group(1)) for k in conversation if (m := _SESSION_KEY.fullmatch(k)))
            haystacks[key] = Haystack(
                key,
                tuple(
                    Session(
                        id=f"{key}/{i}",
                        date=str(conversation.get(f"session_{i}_date_time", "")),
                        turns=tuple(_locomo_turn(t) for t in conversation[f"session_{i}"]),
                        speakers=tuple(str(t.get("speaker", "")) for t in conversation[f"session_{i}"]),
                    )
                    for i in numbers
                ),
            )
            for j, qa in enumerate(record["qa"]):
                evidence = _listed(qa.get("evidence") or ())
                if not evidence:
                    no_evidence += 1
                    continue
                sessions = {int(m.group(1)) for e in evidence for m in _EVIDENCE.finditer(e)} & set(numbers)
                if not sessions:  # no `D3:11` of a session it holds: no session to find, it could only score 0
                    unreadable += 1
                    continue
                questions.append(
                    Question(
                        id=f"{key}/q{j + 1}",
                        type=f"category-{qa.get('category', '?')}",
                        text=str(qa["question"]),
                        haystack=key,
                        relevant=frozenset(f"{key}/{s}" for s in sessions),
                    )
                )
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            hint = "; it looks like LongMemEval: cairn bench longmemeval" if _has(record, "question_id") else ""
            raise InvalidBenchmark(
                f"{path}: conversation #{n + 1} is not in the LoCoMo format ({_why(exc)}){hint}"
            ) from None
    _require_text(path, haystacks, '{"speaker": ..., "text": ...}')
    excluded = {"no_evidence": no_evidence, "unreadable_evidence": unreadable}
    return Suite(LOCOMO, haystacks, tuple(questions), {k: v for k, v in excluded.items() if v})


def _require_text(path: Path, haystacks: dict[str, Haystack], turns: str) -> None:
    """Refuse a file whose sessions hold no text to rank (turns under other keys, as a converted file may have):
    every question would be ranked in corpus order, and its figures read as a measurement."""
    if haystacks and not any(turn.strip() for h in haystacks.values() for s in h.sessions for turn in s.turns):
        raise InvalidBenchmark(f"{path}: no session holds a turn with text; each turn must be {turns}")


def _listed(ids: Any) -> list[str]:
    """A field that lists ids, as strings; one id written as a string, not a list of one, is that id (iterated,
    its characters were the ids, none matched, and the question was left out as if it had no answer)."""
    return [ids] if isinstance(ids, str) else [str(i) for i in ids]


def _has(record: Any, key: str) -> bool:
    return isinstance(record, dict) and key in record


def _why(exc: Exception) -> str:
    """What a record lacks or holds wrong, in one line."""
    if isinstance(exc, KeyError):
        return f"no {clean_line(str(exc.args[0]))[:80]!r}" if exc.args else "a key is missing"
    return clean_line(f"{type(exc).__name__}: {exc}")[:200]


def _locomo_turn(turn: dict[str, Any]) -> str:
    # A shared photo is part of what was said: its caption is the only text of it the file has.
    text = str(turn.get("text", ""))
    caption = turn.get("blip_caption")
    return f"{text} {caption}" if caption else text


_GZIP_MAGIC = b"\x1f\x8b"


def _read_json(path: Path) -> Any:
    """The file's JSON; a file ending in `.gz` or starting as gzip does (a download saved as `.json`, a pipe of
    `<(cat file.gz)`) is read through gzip. A byte order mark (some Windows editors and PowerShell's `Out-File`
    write one) is no text, as in a cases file."""
    try:
        with open(path, "rb") as raw:
            if path.suffix == ".gz" or raw.peek(2)[:2] == _GZIP_MAGIC:  # peek: a pipe cannot be read twice
                with io.TextIOWrapper(gzip.GzipFile(fileobj=raw), encoding="utf-8-sig") as handle:
                    return json.load(handle)
            with io.TextIOWrapper(raw, encoding="utf-8-sig") as handle:
                return json.load(handle)
    except json.JSONDecodeError as exc:
        # json's "Unterminated string starting at" ends in "at"; the column: LongMemEval's file is one line
        where = f"line {exc.lineno}, column {exc.colno}"
        raise InvalidBenchmark(f"{path}: not JSON ({exc.msg.removesuffix(' at')} at {where})") from None
    except UnicodeDecodeError:
        raise InvalidBenchmark(f"{path}: not UTF-8 text; a benchmark file is UTF-8 JSON") from None
    except RecursionError:
        raise InvalidBenchmark(f"{path}: JSON nested too deeply to be a benchmark file") from None
    except (gzip.BadGzipFile, EOFError, zlib.error):  # truncated, not gzip, or its compressed data damaged
        raise InvalidBenchmark(f"{path}: not a whole gzip file") from None
    except ValueError as exc:  # past the decoding errors (ValueErrors too): a number of thousands of digits
        why = clean_line(str(exc))[:100]
        raise InvalidBenchmark(
            f"{path}: holds a value JSON cannot give Python ({why}); is it a benchmark file?"
        ) from None


_LOCOMO_DATE = re.compile(r"(\d{1,2}) ([A-Za-z]+),? (\d{4})")
_LME_DATE = re.compile(r"(\d{4})/(\d{1,2})/(\d{1,2})")
# English names whatever the locale, so the documents (and the figures) are the same everywhere.
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_MONTH_NUMBERS = {name[:3].lower(): number for number, name in enumerate(_MONTHS, 1)}


def session_day(raw: str) -> dt.date | None:
    """The day a session date names, whatever the file's own format ("1:56 pm on 8 May, 2023" for LoCoMo,
    "2023/05/20 (Sat) 02:21" for LongMemEval); None if unknown."""
    if m := _LME_DATE.search(raw):
        return _date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    if m := _LOCOMO_DATE.search(raw):
        month = _MONTH_NUMBERS.get(m.group(2)[:3].lower(), 0)
        return _date(int(m.group(3)), month, int(m.group(1)))
    return None


def date_text(raw: str) -> str:
    """A session date as words ("Monday 8 May 2023"), whatever the file's own format; the raw text if unknown.

    Questions name dates in words ("in May 2023", "on 8 May"), so the document carries the same words.
    """
    day = session_day(raw)
    if day is None:
        return raw
    return f"{_WEEKDAYS[day.weekday()]} {day.day} {_MONTHS[day.month - 1]} {day.year}"


def _date(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None
