"""A haystack's sessions ranked for a question with Cairn's recall core (`cairn.recall.rank`, BM25F over
`cairn.tokens`), on two small indexes built in a temporary folder with `cairn.store.write_index`:

- sessions: one document per session; name = the session's date in words, body = its turns;
- turns: one document per turn; name = the session's date, summary = the turn, body = the turns around it.

A session's score is a weighted sum of its own score and its best turn's score, each divided by the best score in
its index: long sessions are found by the one turn that answers, yet the whole session still counts. Sessions
neither index returns follow the returned ones, in corpus order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from cairn import store
from cairn.config import RecallSettings
from cairn.membench.suites import Haystack, date_text
from cairn.recall import rank
from cairn.tokens import tokenize

# The words that make a sentence a question about a conversation ("what did she mention ..."), not its topic.
# cairn.tokens already drops English function words; these are the question's own verbs and fillers.
QUESTION_WORDS = frozenset(
    """kind type sort mention mentioned mentions say said says tell told talk talked talking discuss discussed
    share shared recall remember remind recently likely""".split()
)
_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")


@dataclass(frozen=True, slots=True)
class RankSettings:
    """How sessions are ranked. session, turn: the BM25F settings of the two indexes (field weights: name = the
    date, summary = a turn, body = a session's turns, or a turn's neighbours). session_weight: the session score's
    share in the sum. The defaults were tuned on the first 5 LoCoMo conversations only (benchmarks/RESULTS.md);
    a low k1 and b suit long conversational documents, where a term said once already shows the topic."""

    session: RecallSettings = field(
        default_factory=lambda: RecallSettings(k1=0.6, b=0.4, weight_name=2.0, weight_summary=0.0, weight_body=1.0)
    )
    turn: RecallSettings = field(
        default_factory=lambda: RecallSettings(k1=0.6, b=0.4, weight_name=0.5, weight_summary=1.0, weight_body=0.4)
    )
    session_weight: float = 0.4
    drop_question_words: bool = True


def question_query(text: str, settings: RankSettings) -> str:
    """The question as a query: without the words that only make it a question."""
    if not settings.drop_question_words:
        return text
    return _WORD.sub(lambda m: "" if m.group(0).lower() in QUESTION_WORDS else m.group(0), text)


class HaystackIndex:
    """The two indexes of one haystack, open for ranking; use as a context manager."""

    def __init__(self, haystack: Haystack, folder: Path, settings: RankSettings) -> None:
        self.haystack = haystack
        self.settings = settings
        sessions: list[store.CardTerms] = []
        turns: list[store.CardTerms] = []
        self._turn_owner: dict[int, int] = {}
        for position, session in enumerate(haystack.sessions):
            date = tokenize(date_text(session.date))
            tokens = [tokenize(turn) for turn in session.turns]
            for j, turn_tokens in enumerate(tokens):
                context = [t for k in (j - 1, j + 1) if 0 <= k < len(tokens) for t in tokens[k]]
                turns.append(_document(f"t{len(turns)}", date, turn_tokens, context))
                self._turn_owner[len(turns)] = position  # index rows count from 1 in insertion order
            sessions.append(_document(f"s{position}", date, (), [t for turn_tokens in tokens for t in turn_tokens]))
        folder.mkdir(parents=True, exist_ok=True)
        self._sessions = _write(folder / "sessions.sqlite", sessions)
        self._turns = _write(folder / "turns.sqlite", turns)

    def close(self) -> None:
        self._sessions.close()
        self._turns.close()

    def __enter__(self) -> HaystackIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def rank(self, question: str) -> list[int]:
        """Every session's position in the haystack, best first."""
        query = question_query(question, self.settings)
        by_session = {row - 1: score for row, score in rank(self._sessions, query, settings=self.settings.session)}
        by_turn: dict[int, float] = {}
        for row, score in rank(self._turns, query, settings=self.settings.turn):
            owner = self._turn_owner[row]
            by_turn[owner] = max(by_turn.get(owner, 0.0), score)
        top_session = max(by_session.values(), default=0.0) or 1.0
        top_turn = max(by_turn.values(), default=0.0) or 1.0
        weight = self.settings.session_weight
        combined = {
            position: weight * by_session.get(position, 0.0) / top_session
            + (1 - weight) * by_turn.get(position, 0.0) / top_turn
            for position in by_session.keys() | by_turn.keys()
        }
        returned = sorted(combined, key=lambda position: (-combined[position], position))
        seen = set(returned)
        return returned + [p for p in range(len(self.haystack.sessions)) if p not in seen]


def _document(
    doc_id: str, name: list[str], summary: tuple[str, ...] | list[str], body: tuple[str, ...] | list[str]
) -> store.CardTerms:
    return store.CardTerms(
        id=doc_id,
        path=doc_id,
        blob="",
        name="",
        summary="",
        status="active",
        expires_on=None,
        scope=(),
        not_when=(),
        supersedes=(),
        record={},
        tokens=(name, summary, body),
    )


def _write(path: Path, documents: list[store.CardTerms]) -> store.IndexReader:
    store.write_index(path, {"commit": "benchmark", "source": "benchmark", "config": "{}"}, documents)
    return store.IndexReader(path)
