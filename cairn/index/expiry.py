"""The day a served card expires, as the index believes it.

A card's `review_after` duration counts from its `verified_at`, a date its author writes. A date after the commit
that wrote this version of the card cannot be true (nobody checked the lesson then); lint refuses it
(`verified-at-future`), but a commit made with `--no-verify` still reaches the served branch, and the date would
push the card's expiry out as far as it is written. The index counts the duration from the day of that commit
instead (its author date; the commit that last changed the card's text, `text_changed`: a rename that keeps the
text, such as a `git mv`, does not move the day on), a day's grace left for time zones as lint leaves it. The date
comes from the card's provenance, which a full build and an update give alike, so the index stays the same
whichever built it, and `cairn audit` re-derives it the same way.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from cairn.cards.card import review_due
from cairn.index.store import CardTerms

_ZONES = dt.timedelta(days=1)  # as lint's verified-at-future: a date a day ahead is today somewhere


def believed(terms: CardTerms) -> CardTerms:
    """`terms` with its expiry counted from the day its version was committed when its `verified_at` is later than
    that (and `review_after` is a duration); otherwise `terms` itself."""
    record = terms.record
    review = record.get("review_after")
    if not isinstance(review, str) or _date(review) is not None:  # a fixed date: verified_at does not move it
        return terms
    day = verified_day(record.get("verified_at"), terms.provenance)
    if day is None or day == _date(record.get("verified_at")):
        return terms
    due = review_due(day, review)
    expires_on = due.isoformat() if due else None
    if expires_on == terms.expires_on:
        return terms
    return dataclasses.replace(terms, expires_on=expires_on, record={**record, "expires_on": expires_on})


def verified_day(verified_at: Any, provenance: dict[str, Any] | None) -> dt.date | None:
    """The day a card was last verified, as the index believes it: its `verified_at`, or the day its version was
    committed when `verified_at` is later than that (past a day's grace); None when it has no date."""
    verified = _date(verified_at)
    committed = _committed_day(provenance)
    if verified is None or committed is None or verified - committed <= _ZONES:
        return verified
    return committed


def _committed_day(provenance: dict[str, Any] | None) -> dt.date | None:
    last = provenance.get("text_changed") if isinstance(provenance, dict) else None
    date = last.get("date") if isinstance(last, dict) else None
    if not isinstance(date, str):
        return None
    try:
        return dt.datetime.fromisoformat(date).date()
    except ValueError:  # a crafted commit's unreadable date: nothing to bound by
        return None


def _date(value: Any) -> dt.date | None:
    if not isinstance(value, str):
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        return None
