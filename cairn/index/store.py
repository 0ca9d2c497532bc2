"""Writing the index file: the schema, cards turned into term postings and score bounds, written atomically.

Writers build a new file beside the index and `os.replace` it, under a lock, so a reader
(`cairn.hot.index.IndexReader`) always sees one whole index and two writers leave one valid file. Every row is
sealed with the cache key as it is written (see `cairn.hot.index`); `verify` checks a whole file. Files are 0600
in 0700 folders.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import sqlite3
import tempfile
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cairn.hot import paths
from cairn.hot.errors import IndexCorrupt
from cairn.hot.index import (
    FORMAT_VERSION,
    SEALED_CARD_COLUMNS,
    IndexReader,
    Sealer,
    _chunks,
    _unpack,
    card_message,
    meta_message,
    record_digest,
    superseders_digest,
    term_message,
)

_U16 = 0xFFFF  # counts and lengths are stored as unsigned 16-bit values

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE cards (
    row INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL,
    blob TEXT NOT NULL,
    name TEXT NOT NULL,
    summary TEXT NOT NULL,
    status TEXT NOT NULL,
    expires_on TEXT,
    scope TEXT NOT NULL,
    not_when TEXT NOT NULL,
    supersedes TEXT NOT NULL,
    len_name INTEGER NOT NULL,
    len_summary INTEGER NOT NULL,
    len_body INTEGER NOT NULL,
    terms TEXT NOT NULL,
    record TEXT NOT NULL,
    provenance TEXT,
    record_digest TEXT NOT NULL,
    seal TEXT NOT NULL
);
CREATE TABLE terms (
    term TEXT PRIMARY KEY, df INTEGER NOT NULL, postings BLOB NOT NULL, bound BLOB NOT NULL, seal TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE problems (path TEXT NOT NULL, line INTEGER NOT NULL, rule TEXT NOT NULL, message TEXT NOT NULL);
-- Every recall looks up the superseding cards: without this index that is a scan of the whole cards table.
CREATE INDEX cards_superseding ON cards(supersedes) WHERE supersedes != '[]';
"""


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


def _pack(rows: Sequence[int], stats: Sequence[int]) -> bytes:
    if isinstance(rows, array) and isinstance(stats, array):
        return rows.tobytes() + stats.tobytes()
    return array("I", rows).tobytes() + array("H", stats).tobytes()


def _frontier(stats: Sequence[int]) -> bytes:
    """The bound column: per field, the (frequency, length) pairs no other posting beats on both (see the module
    docstring), as a count and then the pairs, highest frequency first."""
    return _frontier_blob([_field_pairs(stats, field) for field in range(3)])


def _field_pairs(stats: Sequence[int], field: int) -> set[tuple[int, int]]:
    return {(stats[j + field], stats[j + 3 + field]) for j in range(0, len(stats), 6) if stats[j + field]}


def _frontier_blob(fields: Sequence[Iterable[tuple[int, int]]]) -> bytes:
    out: list[int] = []
    for pairs in fields:
        kept: list[int] = []
        shortest = None
        for tf, length in sorted(set(pairs), key=lambda pair: (-pair[0], pair[1])):
            if shortest is None or length < shortest:
                kept += (tf, length)
                shortest = length
        out.append(len(kept) // 2)
        out += kept
    return array("H", out).tobytes()


def _frontier_pairs(bound_blob: bytes) -> list[set[tuple[int, int]]]:
    """The bound column read back: per field, its frontier's (frequency, length) pairs."""
    bound = array("H")
    bound.frombytes(bound_blob)
    fields: list[set[tuple[int, int]]] = []
    i = 0
    for _ in range(3):
        n = bound[i]
        fields.append({(bound[i + 1 + 2 * k], bound[i + 2 + 2 * k]) for k in range(n)})
        i += 1 + 2 * n
    return fields


def _updated_postings(
    old: tuple[int, bytes, bytes] | None, drop: set[int], add: Sequence[tuple[int, ...]]
) -> tuple[array[int], array[int], bytes]:
    """A term's postings with rows dropped and entries added, and its bound, without walking every posting in
    Python: rows stay ascending, so dropped rows are found by bisection and new rows (fresh row ids, higher than
    any kept one) are appended. The bound is merged from the old frontier and the new entries, and recomputed from
    every posting only when a dropped entry was on the frontier."""
    frontier: list[set[tuple[int, int]]]
    if old is None:
        rows, stats, frontier = array("I"), array("H"), [set(), set(), set()]
    else:
        postings = _unpack(old[0], old[1])
        rows, stats, frontier = postings.rows, postings.stats, _frontier_pairs(old[2])
    exact = True
    for row in sorted(drop, reverse=True):
        i = bisect_left(rows, row)
        if i < len(rows) and rows[i] == row:
            gone = stats[6 * i : 6 * i + 6]
            if any((gone[f], gone[3 + f]) in frontier[f] for f in range(3)):
                exact = False
            del rows[i]
            del stats[6 * i : 6 * i + 6]
    entries = sorted(add)
    if entries and rows and entries[0][0] <= rows[-1]:
        # Not an append (row ids reused): merge the slow, general way.
        merged = sorted([*_unpack(len(rows), _pack(rows, stats)), *entries])
        rows = array("I", [entry[0] for entry in merged])
        stats = array("H", [value for entry in merged for value in entry[1:]])
        return rows, stats, _frontier(stats)
    for entry in entries:
        rows.append(entry[0])
        stats.extend(entry[1:])
    if not exact:
        return rows, stats, _frontier(stats)
    fresh = [[(e[1 + f], e[4 + f]) for e in entries if e[1 + f]] for f in range(3)]
    return rows, stats, _frontier_blob([frontier[f] | set(fresh[f]) for f in range(3)])


@contextlib.contextmanager
def writer_lock(index_file: Path) -> Iterator[None]:
    """Serialise writers of one index (readers never wait: they read whole files)."""
    paths.private_folder(str(index_file.parent))
    lock_path = index_file.with_name(index_file.name + ".lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    with os.fdopen(fd, "r+b") as handle:
        paths.private_file(str(lock_path))
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield


def write_index(
    index_file: Path,
    meta: dict[str, str],
    upserts: Sequence[CardTerms],
    removed_ids: Iterable[str] = (),
    problems: Sequence[tuple[str, int, str, str]] = (),
    base: Path | None = None,
) -> None:
    """Write a new index file atomically: from scratch, or from `base` with cards removed and upserted.

    Call under `writer_lock`. `problems` replaces the stored list of cards left out (contract findings).
    """
    paths.private_folder(str(index_file.parent))
    sealer = Sealer(paths.make_index_key())
    fd, tmp_name = tempfile.mkstemp(prefix=".index-", suffix=".tmp", dir=index_file.parent)  # 0600
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        if base is not None:
            with sqlite3.connect(base) as src, sqlite3.connect(tmp) as dst:
                src.backup(dst)
        db = sqlite3.connect(tmp)
        try:
            db.execute("PRAGMA journal_mode=OFF")
            db.execute("PRAGMA synchronous=OFF")
            if base is None:
                db.executescript(_SCHEMA)
            _apply(db, sealer, upserts, set(removed_ids) | {c.id for c in upserts}, empty=base is None)
            db.execute("DELETE FROM problems")
            db.executemany("INSERT INTO problems VALUES (?, ?, ?, ?)", problems)
            _write_meta(db, sealer, meta)
            db.commit()
        finally:
            db.close()
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        whole = file_seal(tmp, sealer)
        os.replace(tmp, index_file)
        _write_private(seal_path(index_file), whole.encode("ascii"))
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def seal_path(index_file: Path | str) -> Path:
    """The side file holding the seal of the index file's bytes (checked by `verify`, not by the hook)."""
    return Path(f"{index_file}.seal")


def file_seal(path: Path | str, sealer: Sealer) -> str:
    """The seal of a whole file's bytes: any byte changed on disk, used or not, breaks it."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return sealer.seal(digest.digest())


def _write_private(target: Path, data: bytes) -> None:
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)  # 0600
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def card_postings(card: CardTerms) -> tuple[list[int], dict[str, tuple[int, ...]]]:
    """A card's token lengths per field, and per term its six posting values (frequency in name, summary and body,
    then the three lengths), as the index stores them (capped at 16 bits): what `cairn audit` re-derives too."""
    name, summary, body = (Counter(tokens) for tokens in card.tokens)
    lengths = [min(len(tokens), _U16) for tokens in card.tokens]
    tail = tuple(lengths)
    cap = _U16
    out: dict[str, tuple[int, ...]] = {}
    for term in name.keys() | summary.keys() | body.keys():
        n, s, b = name.get(term, 0), summary.get(term, 0), body.get(term, 0)
        out[term] = (n if n < cap else cap, s if s < cap else cap, b if b < cap else cap, *tail)
    return lengths, out


def _apply(
    db: sqlite3.Connection, sealer: Sealer, upserts: Sequence[CardTerms], removed: set[str], empty: bool = False
) -> None:
    """Remove and upsert cards with their postings; `empty`: the file was just created (no term to read back)."""
    # Old postings of removed or replaced cards.
    stale: dict[str, set[int]] = {}
    for chunk in _chunks(sorted(removed), 500):
        marks = ",".join("?" * len(chunk))
        for row, terms in db.execute(f"SELECT row, terms FROM cards WHERE id IN ({marks})", chunk):
            for term in terms.split("\n") if terms else ():
                stale.setdefault(term, set()).add(row)
        db.execute(f"DELETE FROM cards WHERE id IN ({marks})", chunk)

    fresh: dict[str, list[tuple[int, ...]]] = {}
    row = int(db.execute("SELECT COALESCE(MAX(row), 0) FROM cards").fetchone()[0])  # new rows follow (as SQLite)
    card_rows: list[tuple[Any, ...]] = []
    for card in upserts:
        row += 1
        lengths, entries = card_postings(card)
        terms = sorted(entries)
        term_text = "\n".join(terms)
        record = json.dumps(card.record, ensure_ascii=False)
        prov = json.dumps(card.provenance, ensure_ascii=False) if card.provenance is not None else None
        sealed = (
            row,
            card.id,
            card.path,
            card.blob,
            card.name,
            card.summary,
            card.status,
            card.expires_on,
            json.dumps(list(card.scope), ensure_ascii=False),
            json.dumps(list(card.not_when), ensure_ascii=False),
            json.dumps(list(card.supersedes), ensure_ascii=False),
            *lengths,
            record_digest(record, prov, term_text),
        )
        card_rows.append((*sealed, sealer.seal(card_message(sealed)), term_text, record, prov))
        for term, values in entries.items():
            posting = (row, *values)
            if term in fresh:
                fresh[term].append(posting)
            else:
                fresh[term] = [posting]
    db.executemany(
        f"INSERT INTO cards ({SEALED_CARD_COLUMNS}, seal, terms, record, provenance)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        card_rows,
    )

    # Each term is read and written once, so the writes can follow all the reads.
    written: list[tuple[str, int, bytes, bytes, str]] = []
    deleted: list[tuple[str]] = []
    for term in sorted(set(stale) | set(fresh)):
        got = None if empty else db.execute("SELECT df, postings, bound FROM terms WHERE term = ?", (term,)).fetchone()
        rows, stats, bound = _updated_postings(got, stale.get(term, set()), fresh.get(term, ()))
        if rows:
            packed = _pack(rows, stats)
            written.append((term, len(rows), packed, bound, sealer.seal(term_message(term, len(rows), packed, bound))))
        else:
            deleted.append((term,))
    db.executemany("INSERT OR REPLACE INTO terms VALUES (?, ?, ?, ?, ?)", written)
    db.executemany("DELETE FROM terms WHERE term = ?", deleted)


def _write_meta(db: sqlite3.Connection, sealer: Sealer, meta: dict[str, str]) -> None:
    n, name_len, summary_len, body_len = db.execute(
        "SELECT COUNT(*), SUM(len_name), SUM(len_summary), SUM(len_body) FROM cards"
    ).fetchone()
    avg = [round((total or 0) / n, 4) if n else 0.0 for total in (name_len, summary_len, body_len)]
    superseding = db.execute("SELECT id, status, supersedes FROM cards WHERE supersedes != '[]'").fetchall()
    values = {k: v for k, v in meta.items() if k not in ("seal", "checksum")}
    values.update(
        format=FORMAT_VERSION,
        n_cards=str(n),
        avg_lengths=json.dumps(avg),
        superseders=superseders_digest(superseding),
    )
    values["seal"] = sealer.seal(meta_message(values))
    db.execute("DELETE FROM meta")
    db.executemany("INSERT INTO meta VALUES (?, ?)", sorted(values.items()))


def verify(reader: IndexReader, row_seals: bool = True) -> list[str]:
    """Every check of a whole index file, cold (it reads everything): SQLite's quick_check, the seal of every
    card and term row and of each card's stored record, every posting naming an existing card, the card count and
    the superseding cards as meta has them, and the seal of the file's bytes (`seal_path`). An empty list: the
    file is as its writer (with this cache's key) left it. Failures are said in words, one per kind (at most the first few rows).

    row_seals=False: the row seals are not recomputed when the file's seal holds (they are under the same key and
    inside the sealed bytes); the indexer asks so before reusing a file (a second less per 10,000 cards)."""
    problems: list[str] = []
    sealer = reader.sealer
    path = os.fspath(reader.path)
    try:
        stored = seal_path(path).read_text("ascii").strip()
    except (OSError, UnicodeDecodeError):
        stored = ""
    if stored != file_seal(path, sealer):
        problems.append("the file's bytes are not the ones its writer sealed: changed on disk, or not Cairn's")
        row_seals = True
    try:
        if not reader.integrity_ok():
            problems.append("SQLite's quick_check failed")
        rows: set[int] = set()
        bad_cards: list[str] = []
        for values in reader.sealed_rows():
            rows.add(int(values[0]))
            if not row_seals:
                continue
            if values[15] != sealer.seal(card_message(values[:15])):
                bad_cards.append(f"{values[1]!r}: its fields do not match their seal")
            elif values[14] != record_digest(values[16], values[17], values[18]):
                bad_cards.append(f"{values[1]!r}: its stored record, terms or provenance do not match their seal")
        problems.extend(f"card {p}" for p in bad_cards[:10])
        if str(len(rows)) != reader.meta.get("n_cards"):
            problems.append(f"it holds {len(rows)} card row(s) where its settings say {reader.meta.get('n_cards')}")
        bad_terms: list[str] = []
        named = array("I")  # every row a posting names
        for term, df, blob, bound, seal in reader.term_rows():
            if len(blob) != 16 * df or row_seals and seal != sealer.seal(term_message(term, df, blob, bound)):
                bad_terms.append(f"term {term!r}: its postings do not match their seal")
                continue
            named.frombytes(blob[: 4 * df])  # the row ids (then the stats, see _pack)
        problems.extend(bad_terms[:10])
        dangling = 0 if rows.issuperset(named) else sum(1 for row in named if row not in rows)
        if dangling:
            problems.append(f"{dangling} posting(s) name card rows that are not there (a row was deleted)")
        reader._superseding = None  # checked afresh
        reader._superseders()
    except IndexCorrupt as exc:
        problems.append(str(exc))
    except (KeyError, ValueError, TypeError, IndexError) as exc:
        problems.append(f"a row does not have the shape of an index row ({type(exc).__name__})")
    return problems


def checksum_holds(reader: IndexReader, row_seals: bool = True) -> bool:
    """Whether the whole file passes `verify` (the name is kept for the indexer, which asks before reusing a file)."""
    return not verify(reader, row_seals)
