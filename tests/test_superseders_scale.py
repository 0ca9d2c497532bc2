"""Superseding cards at scale: recall asks the index for cards many times a prompt (a chunk of the ranking at a
time, each card of the phrase step alone), and which active cards supersede each one is worked out once per open
index, not on every call (it parsed every superseding card's list each time: with 3,000 of them, 1.4 ms a call)."""

from __future__ import annotations

import cProfile
import pstats
from pathlib import Path

import cairn.hot
from cairn.hot.index import IndexReader
from cairn.index import store
from cairn.index.store import CardTerms

CARDS = 2_000
SUPERSEDING = 1_000  # card n + 1,000 supersedes card n


def _card(n: int) -> CardTerms:
    supersedes = (f"topic/card-{n - SUPERSEDING}",) if n >= SUPERSEDING else ()
    return CardTerms(
        id=f"topic/card-{n}",
        path=f"cards/topic/card-{n}.md",
        blob=f"{n:040x}",
        name=f"card {n}",
        summary="a lesson",
        status="retired" if n == CARDS - 1 else "active",  # a retired card supersedes nothing
        expires_on=None,
        scope=(),
        not_when=(),
        supersedes=supersedes,
        record={"name": f"card {n}", "summary": "a lesson", "body": ""},
        tokens=(["card", str(n)], ["lesson"], []),
    )


def _loads_calls(profile: cProfile.Profile) -> int:
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    code = cairn.hot.loads.__code__
    return sum(
        s[1]
        for (file, line, name), s in stats.items()
        if (file, line, name) == (code.co_filename, code.co_firstlineno, "loads")
    )


def test_the_cards_an_index_gives_know_their_superseders_worked_out_once(tmp_path: Path) -> None:
    target = tmp_path / "index.cairn"
    with store.writer_lock(target):
        store.write_index(target, {"commit": "c" * 40}, [_card(n) for n in range(CARDS)])
    with IndexReader(target) as index:
        rows = {index.card_by_id(f"topic/card-{n}").row: n for n in [*range(0, CARDS, 40), 999]}  # type: ignore[union-attr]
        profile = cProfile.Profile()
        profile.enable()
        for row in rows:  # one card at a time, as the phrase step reads them
            given = index.cards([row])
        profile.disable()
        assert _loads_calls(profile) < 2 * SUPERSEDING  # was 50 times SUPERSEDING: every list parsed on every call
        for row, n in rows.items():
            card = index.cards([row])[row]
            by = n + SUPERSEDING
            assert card.superseded_by == ((f"topic/card-{by}",) if by < CARDS - 1 else ()), n
        assert given
