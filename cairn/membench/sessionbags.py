"""A session's tokens as bags (`cairn.membench.memindex.Bag`): its date in words, each turn, each turn's word pairs.

In LongMemEval every question has its own haystack, but the haystacks draw on one pool of sessions: each distinct
date and each distinct sequence of turns is tokenized once per run (`SessionCache`), and every haystack that holds
it shares its bags. Text is tokenized a whitespace-separated chunk at a time, each distinct chunk once per run
(`ChunkTokenizer`): no token of `cairn.hot.tokens.tokenize` spans whitespace, so the tokens of a text are its
chunks' tokens in order (`tests/test_membench_sessionbags.py` holds the two equal).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from cairn.hot.tokens import tokenize
from cairn.membench.memindex import Bag
from cairn.membench.suites import Session, date_text

_PAIR_TOKEN = re.compile(r"[a-z0-9]+")


def pair_terms(tokens: list[str]) -> list[str]:
    """Each pair of words at most two apart, in alphabetical order ("support_group"): proximity as terms."""
    words = [t for t in tokens if _PAIR_TOKEN.fullmatch(t)]
    out = []
    for i, word in enumerate(words):
        for other in words[i + 1 : i + 3]:
            if other != word:
                out.append(f"{word}_{other}" if word < other else f"{other}_{word}")
    return out


def drop_final_e(token: str) -> str:
    """A plain word of 5 letters or more without its final silent e (`serve` -> `serv`, as `cairn.hot.tokens.stem`
    makes `serving` and `served`): the light stemmer keeps a verb's base form apart from its -ing and -ed forms."""
    if len(token) > 4 and token[-1] == "e" and token[-2] != "e" and token.isascii() and token.isalpha():
        return token[:-1]
    return token


class ChunkTokenizer:
    """`cairn.hot.tokens.tokenize`, remembering the tokens of each whitespace-separated chunk of text it has seen;
    with `final_e`, each token then goes through `drop_final_e`."""

    def __init__(self, final_e: bool = False) -> None:
        self._chunks: dict[str, list[str]] = {}
        self.final_e = final_e

    def __call__(self, text: str) -> list[str]:
        out: list[str] = []
        known = self._chunks
        for chunk in text.split():
            tokens = known.get(chunk)
            if tokens is None:
                tokens = tokenize(chunk)
                if self.final_e:
                    tokens = [drop_final_e(token) for token in tokens]
                known[chunk] = tokens
            out += tokens
        return out


class TurnBags:
    """A session's turns as bags: each turn's tokens (`turns`) and each turn's word pairs (`pairs`)."""

    __slots__ = ("turns", "pairs")

    def __init__(self, turns: tuple[str, ...], tokens_of: Callable[[str], list[str]] = tokenize) -> None:
        tokens = [tokens_of(turn) for turn in turns]
        self.turns = tuple(Bag(t) for t in tokens)
        self.pairs = tuple(Bag(pair_terms(t)) for t in tokens)


class SessionCache:
    """The bags of each distinct session date and each distinct sequence of turns, made once per run (with
    `final_e`, of tokens through `drop_final_e`)."""

    def __init__(self, final_e: bool = True) -> None:
        self.tokenize = ChunkTokenizer(final_e)
        self._dates: dict[str, Bag] = {}
        self._turns: dict[tuple[str, ...], TurnBags] = {}

    def date(self, session: Session) -> Bag:
        """The session's date in words, as a bag."""
        found = self._dates.get(session.date)
        if found is None:
            found = self._dates[session.date] = Bag(self.tokenize(date_text(session.date)))
        return found

    def turns(self, session: Session) -> TurnBags:
        found = self._turns.get(session.turns)
        if found is None:
            found = self._turns[session.turns] = TurnBags(session.turns, self.tokenize)
        return found
