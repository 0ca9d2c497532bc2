"""The cards a vault serves, with when each is due for review (`cairn list`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cairn.hot.index import IndexReader
from cairn.hot.vault import Vault
from cairn.index import build as indexer
from cairn.index.expiry import verified_day


@dataclass(frozen=True, slots=True)
class ListedCard:
    """One card of the served ref. due_on: its review_after date, else verified_at (the commit's day when it is
    later, as the index believes it: `expiry.verified_day`) plus the vault's `[lint] max_age_days`; None when it
    was never verified (then it is due now). status: the card's, `expired` for an active card past its review date
    (not served until it is verified again: due), or `superseded` for an active card another active card supersedes
    (never served, so never due); superseded_by: those cards."""

    id: str
    name: str
    status: str
    scope: tuple[str, ...]
    verified_at: str | None
    due_on: str | None
    due: bool
    superseded_by: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "status": self.status,
            "scope": list(self.scope),
            "verified_at": self.verified_at,
            "due_on": self.due_on,
            "due": self.due,
            "superseded_by": list(self.superseded_by),
        }


def list_cards(
    vault: Vault,
    today: dt.date | None = None,
    warn: Callable[[str], None] | None = None,
    progress: indexer.Progress | None = None,
) -> tuple[str, str, list[ListedCard], int]:
    """(served ref, commit, the cards in id order, how many card files the index left out: a contract or a security
    rule refused them) from the index of the served ref, brought up to date first (`warn`, `progress`: as
    `open_index` takes them)."""
    today = today or dt.date.today()
    with indexer.open_index(vault, warn=warn, progress=progress) as reader:
        return str(reader.meta.get("ref") or "HEAD"), reader.commit, _cards(reader, today), len(reader.problems())


def _cards(reader: IndexReader, today: dt.date) -> list[ListedCard]:
    lint = reader.config.get("lint") if isinstance(reader.config, dict) else None
    max_age = int(lint.get("max_age_days", 365)) if isinstance(lint, dict) else 365
    out: list[ListedCard] = []
    superseded = reader.superseded()
    for card_id in sorted(reader.ids()):
        record = reader.record(card_id) or {}
        verified = record.get("verified_at")
        due_on = record.get("expires_on")
        believed = verified_day(verified, record.get("provenance"))
        if due_on is None and believed:  # a verified_at after its commit counts from the commit, as expiry does
            due_on = _plus_days(believed, max_age).isoformat()
        status = str(record.get("status", "active"))  # as recall reads it: an empty status is no active one
        by = superseded.get(card_id, ()) if status == "active" else ()
        expires_on = record.get("expires_on")
        if status == "active" and expires_on and str(expires_on) < today.isoformat():
            status = "expired"  # as recall's admission says it, before supersedes
        elif by:
            status = "superseded"
        due = status != "retired" and not by and (due_on is None or dt.date.fromisoformat(str(due_on)) <= today)
        out.append(
            ListedCard(
                card_id,
                str(record.get("name") or ""),
                status,
                tuple(str(s) for s in record.get("scope") or ()),
                str(verified) if verified else None,
                str(due_on) if due_on else None,
                due,
                by,
            )
        )
    return out


def _plus_days(day: dt.date, days: int) -> dt.date:
    """`day` plus `days`, the calendar's last day when that is past it (a card verified at 9999-12-31)."""
    try:
        return day + dt.timedelta(days=days)
    except OverflowError:
        return dt.date.max
