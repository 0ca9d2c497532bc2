"""Editing a cached index the way a local attacker would: change records without their seals (`edit_card`,
`edit_meta`, `edit_postings`, `delete_card`: what something without the cache key can do), then, holding the key,
re-seal every record and the settings (`reseal`), so only `cairn audit`'s re-derivation can tell.

The file is decoded into its parts and laid out again (`cairn.index.store.read_parts` and `write_parts`), so an
edit may change a record's length; the seals stay as they were unless `reseal` recomputes them. The seal of the
file's bytes (`store.seal_path`) is left as it was too.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cairn.hot import paths
from cairn.hot.index import SEAL_BYTES, SEALED_CARD_COLUMNS, Sealer, _term_record, digest
from cairn.index import store
from cairn.index.store import card_message, meta_message, superseders_digest, superseders_message, term_message

COLUMNS = [name.strip() for name in SEALED_CARD_COLUMNS.split(",")]


def _sealer() -> Sealer:
    key = paths.index_key()
    assert key is not None
    return Sealer(key)


def _rewrite(index_file: Path, edit: Callable[[store.Parts], None]) -> None:
    parts = store.read_parts(index_file, unchecked=True)
    edit(parts)
    rows = 4 * (parts.cards[-1][0] if parts.cards else 0)  # the id order keeps a place for each row left
    parts.order = parts.order[:rows].ljust(rows, b"\0")
    with open(index_file, "wb") as handle:
        store.write_parts(handle, parts, _sealer())


def _values(hot: bytes | memoryview) -> list[Any]:
    values: list[Any] = json.loads(bytes(hot[SEAL_BYTES:]))
    return values


def edit_card(index_file: Path, card_id: str, **fields: Any) -> None:
    """Set sealed columns of one card (`SEALED_CARD_COLUMNS` by name), its seal unchanged."""

    def edit(parts: store.Parts) -> None:
        for i, (row, h, hot, cold) in enumerate(parts.cards):
            values = _values(hot)
            if values[1] == card_id:
                for name, value in fields.items():
                    values[COLUMNS.index(name)] = value
                parts.cards[i] = (row, h, bytes(hot[:SEAL_BYTES]) + card_message(values), cold)

    _rewrite(index_file, edit)


def seal_card_message(index_file: Path, card_id: str, message: bytes) -> None:
    """Put `message` in place of one card's sealed fields, sealed with the key (what anything running as the user
    can write: bytes that are no JSON list of the columns)."""
    sealer = _sealer()

    def edit(parts: store.Parts) -> None:
        for i, (row, h, hot, cold) in enumerate(parts.cards):
            if _values(hot)[1] == card_id:
                parts.cards[i] = (row, h, sealer.mac(message) + message, cold)

    _rewrite(index_file, edit)


def edit_meta(index_file: Path, **values: str) -> None:
    """Set stored settings, the meta seal unchanged."""

    def edit(parts: store.Parts) -> None:
        meta = dict(json.loads(parts.meta))
        meta.update(values)
        parts.meta = meta_message(meta)

    _rewrite(index_file, edit)


def edit_postings(index_file: Path, term: str, change: Callable[[list[int]], None]) -> None:
    """Change the six counts per posting of one term (`change` edits the flat list in place), its seal unchanged."""

    def edit(parts: store.Parts) -> None:
        for i, (h, record) in enumerate(parts.terms):
            parsed = _term_record(bytes(record))
            assert parsed is not None
            stored_term, df, postings, bound = parsed
            if stored_term == term:
                unpacked = store._unpack(df, postings)
                stats = list(unpacked.stats)
                change(stats)
                packed = store._pack(unpacked.rows, stats)
                parts.terms[i] = (h, bytes(record[:SEAL_BYTES]) + term_message(term, df, packed, bound))

    _rewrite(index_file, edit)


def edit_bound(index_file: Path, term: str, bound: bytes) -> None:
    """Put `bound` (16-bit values in the machine's order) in place of one term's score bound, its seal unchanged."""

    def edit(parts: store.Parts) -> None:
        for i, (h, record) in enumerate(parts.terms):
            parsed = _term_record(bytes(record))
            assert parsed is not None
            stored_term, df, postings, _bound = parsed
            if stored_term == term:
                parts.terms[i] = (h, bytes(record[:SEAL_BYTES]) + term_message(term, df, postings, bound))

    _rewrite(index_file, edit)


def edit_superseders(index_file: Path, change: Callable[[list[list[str]]], None]) -> None:
    """Change the superseders part (`change` edits its [id, status, supersedes] rows in place), meta's digest of it
    unchanged."""

    def edit(parts: store.Parts) -> None:
        rows: list[list[str]] = json.loads(parts.superseders)
        change(rows)
        parts.superseders = superseders_message(rows)

    _rewrite(index_file, edit)


def edit_order(index_file: Path, change: Callable[[list[int]], None]) -> None:
    """Change the id order part (`change` edits its places, one a row from row 1, in place), meta's digest of it
    unchanged."""

    def edit(parts: store.Parts) -> None:
        places = list(memoryview(parts.order).cast("I"))
        change(places)
        parts.order = b"".join(place.to_bytes(4, sys.byteorder) for place in places)

    _rewrite(index_file, edit)


def delete_card(index_file: Path, card_id: str) -> None:
    """Take one card's records out of the file (its postings still name its row)."""

    def edit(parts: store.Parts) -> None:
        parts.cards = [card for card in parts.cards if _values(card[2])[1] != card_id]

    _rewrite(index_file, edit)


def swap_cards(index_file: Path, first: str, second: str) -> None:
    """Give each of two cards' rows the other's records, every seal unchanged (what the card table allows: a row's
    slot names where its record lies, and the records themselves stay whole)."""

    def edit(parts: store.Parts) -> None:
        (a,) = [i for i, card in enumerate(parts.cards) if _values(card[2])[1] == first]
        (b,) = [i for i, card in enumerate(parts.cards) if _values(card[2])[1] == second]
        (row_a, h_a, hot_a, cold_a), (row_b, h_b, hot_b, cold_b) = parts.cards[a], parts.cards[b]
        parts.cards[a], parts.cards[b] = (row_a, h_a, hot_b, cold_b), (row_b, h_b, hot_a, cold_a)

    _rewrite(index_file, edit)


def _card(index_file: Path, card_id: str) -> tuple[int, int, bytes | memoryview, bytes | memoryview]:
    (card,) = [card for card in store.read_parts(index_file, unchecked=True).cards if _values(card[2])[1] == card_id]
    return card


def card_row(index_file: Path, card_id: str) -> int:
    return _card(index_file, card_id)[0]


def card_terms(index_file: Path, card_id: str) -> list[str]:
    """The terms stored with one card (in its cold record)."""
    terms: list[str] = json.loads(bytes(_card(index_file, card_id)[3]))[2]
    return terms


def reseal(index_file: Path) -> None:
    """Recompute every seal, the cold record digests, the superseders, the id order's digest (the order itself
    left as it is) and the file's seal with this cache's key."""
    sealer = _sealer()
    parts = store.read_parts(index_file, unchecked=True)
    all_values = []
    for i, (row, h, hot, cold) in enumerate(parts.cards):
        values = _values(hot)
        values[COLUMNS.index("record_digest")] = digest(bytes(cold))
        message = card_message(values)
        parts.cards[i] = (row, h, sealer.mac(message) + message, cold)
        all_values.append(values)
    parts.terms = [(h, sealer.mac(record[SEAL_BYTES:]) + bytes(record[SEAL_BYTES:])) for h, record in parts.terms]
    superseding = [(v[1], v[6], v[10]) for v in all_values if v[10] != "[]"]
    parts.superseders = superseders_message(superseding)
    meta = dict(json.loads(parts.meta))
    meta["superseders"] = superseders_digest(superseding)
    meta["id_order"] = digest(parts.order)
    parts.meta = meta_message(meta)
    parts.meta_seal = sealer.mac(parts.meta)
    parts.problems_seal = sealer.mac(parts.problems)
    with open(index_file, "wb") as handle:
        whole = store.write_parts(handle, parts, sealer)
    store.seal_path(index_file).write_text(whole, "ascii")
