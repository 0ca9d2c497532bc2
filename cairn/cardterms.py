"""`CardTerms`: a card ready to index (cold path: the indexer and provenance build these, `store.write_index` writes
them). Kept out of `cairn.store` so the hook, which only reads the index, never imports `dataclasses`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class CardTerms:
    """A card ready to index: its hot-path fields, its full record (JSON-ready) and its tokens per field."""

    id: str
    path: str
    blob: str
    name: str
    summary: str
    status: str
    expires_on: str | None
    scope: tuple[str, ...]
    not_when: tuple[str, ...]
    supersedes: tuple[str, ...]
    record: dict[str, Any]
    tokens: tuple[Sequence[str], Sequence[str], Sequence[str]]
    provenance: dict[str, Any] | None = None
