"""Editing a cached index the way a local attacker who holds the cache key would: change rows with SQL, then
re-seal every row and the settings (`reseal`), so only `cairn audit`'s re-derivation can tell."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from cairn.hot import paths
from cairn.hot.index import (
    SEALED_CARD_COLUMNS,
    Sealer,
    card_message,
    meta_message,
    record_digest,
    superseders_digest,
    term_message,
)
from cairn.index import store


def edit(index_file: Path, sql: str, *args: Any) -> None:
    """One SQL statement on the index file (no re-sealing: the reader must notice)."""
    db = sqlite3.connect(index_file)
    try:
        db.execute(sql, args)
        db.commit()
    finally:
        db.close()


def reseal(index_file: Path) -> None:
    """Recompute every seal, the record digests, the superseders digest and the file's seal with this cache's key."""
    key = paths.index_key()
    assert key is not None
    sealer = Sealer(key)
    db = sqlite3.connect(index_file)
    try:
        rows = db.execute(f"SELECT {SEALED_CARD_COLUMNS}, record, provenance, terms FROM cards").fetchall()
        for values in rows:
            sealed = (*values[:14], record_digest(values[15], values[16], values[17]))
            db.execute(
                "UPDATE cards SET record_digest = ?, seal = ? WHERE row = ?",
                (sealed[14], sealer.seal(card_message(sealed)), values[0]),
            )
        for term, df, blob, bound in db.execute("SELECT term, df, postings, bound FROM terms").fetchall():
            seal = sealer.seal(term_message(term, df, blob, bound))
            db.execute("UPDATE terms SET seal = ? WHERE term = ?", (seal, term))
        superseding = db.execute("SELECT id, status, supersedes FROM cards WHERE supersedes != '[]'").fetchall()
        db.execute("UPDATE meta SET value = ? WHERE key = 'superseders'", (superseders_digest(superseding),))
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        db.execute("UPDATE meta SET value = ? WHERE key = 'seal'", (sealer.seal(meta_message(meta)),))
        db.commit()
    finally:
        db.close()
    store.seal_path(index_file).write_text(store.file_seal(index_file, sealer), "ascii")
