"""Card facts for the vault-wide rules, cached by git blob id so a one-card change re-reads one card."""

from __future__ import annotations

import json
from typing import Any

from cairn.atomic import write_atomic
from cairn.cards.card import Card, card_id_from_path, parse_card, plain_file_name
from cairn.cards.similarity import terms
from cairn.hot import build_name, paths, read_regular
from cairn.lint.model import CardFacts
from cairn.lint.snapshot import FILE, Snapshot

_VERSION = 4  # 3: summary terms are recall's; 4: whether the card is active
_MAX_CACHE_BYTES = 1 << 30  # far above the facts of 100,000 cards; a longer file is not this cache's, and reads as none


def _version() -> str:
    """The cache's format and the build that filled it (a card's terms are whatever that build's recall made them)."""
    return f"{_VERSION} {build_name()}"


def facts_of(rel_path: str, card: Card | None) -> CardFacts:
    card_id = card_id_from_path(rel_path) or rel_path
    if card is None:
        return CardFacts(rel_path, card_id)
    return CardFacts(
        path=rel_path,
        id=card_id,
        name=card.name,
        scope=card.scope,
        supersedes=card.supersedes,
        words=terms(card.summary),
        active=card.status == "active",
    )


def vault_facts(snapshot: Snapshot) -> dict[str, CardFacts]:
    """Facts of every `.md` file under `cards/` (id -> facts); unchanged blobs come from the cache."""
    # A folder outside git (review's copy of a commit, in a temporary folder) keeps no cache: its cache folder
    # would outlive it (`cache/vaults/head-*`).
    in_git = snapshot.vault.git_root is not None
    cache_file = paths.index_path(snapshot.vault.root).with_name("lint-facts.json")
    cached = {blob: packed for blob, packed in _load(cache_file).items() if _valid(packed)} if in_git else {}
    cards = {rel: f for rel, f in snapshot.files.items() if card_id_from_path(rel) is not None}
    # The facts are the blob's, except under a file name that is no card's (control characters): they are not cached,
    # so the same bytes under a card's name are read again (cached as "no card", they hid a duplicate name).
    plain = {rel for rel in cards if plain_file_name(card_id_from_path(rel) or rel)}
    misses = [f.blob for rel, f in cards.items() if f.kind == FILE and (f.blob not in cached or rel not in plain)]
    contents = snapshot.read_blobs(misses)
    kept: dict[str, Any] = {}
    out: dict[str, CardFacts] = {}
    for rel, file in cards.items():
        if file.kind != FILE:
            out[card_id_from_path(rel) or rel] = CardFacts(rel, card_id_from_path(rel) or rel)
            continue
        if file.blob in cached and rel in plain:
            packed = cached[file.blob]
        else:
            card, _ = parse_card(rel, contents.get(file.blob, b""))
            packed = _pack(facts_of(rel, card))
        if rel in plain:
            kept[file.blob] = packed
        facts = _unpack(rel, packed)
        out[facts.id] = facts
    if in_git and (misses or len(kept) != len(cached)):
        _save(cache_file, kept)
    return out


def _pack(facts: CardFacts) -> Any:
    if facts.name is None:
        return None
    return [facts.name, list(facts.scope), list(facts.supersedes), sorted(facts.words), facts.active]


def _valid(packed: Any) -> bool:
    if packed is None:
        return True
    return (
        isinstance(packed, list)
        and len(packed) == 5
        and isinstance(packed[0], str)
        and all(isinstance(part, list) and all(isinstance(v, str) for v in part) for part in packed[1:4])
        and isinstance(packed[4], bool)
    )


def _unpack(rel_path: str, packed: Any) -> CardFacts:
    card_id = card_id_from_path(rel_path) or rel_path
    if packed is None:
        return CardFacts(rel_path, card_id)
    name, scope, supersedes, words, active = packed
    return CardFacts(rel_path, card_id, name, tuple(scope), tuple(supersedes), frozenset(words), active)


def _load(cache_file: Any) -> dict[str, Any]:
    try:  # never waits on a FIFO in its place, never reads a device without end
        data = json.loads(read_regular(str(cache_file), _MAX_CACHE_BYTES))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != _version() or not isinstance(data.get("facts"), dict):
        return {}
    return data["facts"]  # type: ignore[no-any-return]


def _save(cache_file: Any, facts: dict[str, Any]) -> None:
    """Best effort: the cache only saves time, so a read-only cache folder is not an error."""
    try:
        paths.private_folder(str(cache_file.parent))  # the cache: 0700, the file 0600
        write_atomic(cache_file, json.dumps({"version": _version(), "facts": facts}).encode("utf-8"), mode=0o600)
    except OSError:
        pass
