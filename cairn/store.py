"""The index file: a SQLite database (standard library only) with an inverted index the hook reads per query.

Readers open it read-only and immutable; writers build a new file beside it and `os.replace` it, under a lock,
so a reader always sees one whole index and two writers leave one valid file.

Each term row holds its postings (card rows in row order, then per row the term's frequency in name, summary and
body and the card's token lengths of the three) and a score bound: per field, the Pareto frontier of (frequency,
length) pairs over its postings (the highest frequencies at the shortest lengths). With any BM25F parameters
(k1 > 0, 0 <= b <= 1, non-negative field weights) no posting of the term scores above the best frontier pair, so
recall can tell, without reading a term's postings one by one, that it cannot lift a card into the top few.

Hot path: reading imports the standard library only (no `dataclasses`: `CardTerms`, which only writers use, lives
in `cairn.cardterms` and is re-exported here on first use).
"""

from __future__ import annotations

import json
import os
from array import array
from pathlib import Path

from cairn.errors import IndexCorrupt, IndexMissing
from cairn.hotrecord import Record

try:  # the C module `sqlite3` wraps: the package adds datetime adapters no index needs (+1.3 ms on every hook)
    import _sqlite3 as sqlite3
except ImportError:  # pragma: no cover - an interpreter that only ships the package
    import sqlite3  # type: ignore[no-redef]

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hook reads through this module: it imports no more than reading needs
    import contextlib
    from collections.abc import Iterable, Iterator, Sequence
    from typing import Any

    from cairn.cardterms import CardTerms as CardTerms  # re-exported: writers build these

FORMAT_VERSION = "4"
FIELDS = ("name", "summary", "body")
_U16 = 0xFFFF

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
    provenance TEXT
);
CREATE TABLE terms (
    term TEXT PRIMARY KEY, df INTEGER NOT NULL, postings BLOB NOT NULL, bound BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE problems (path TEXT NOT NULL, line INTEGER NOT NULL, rule TEXT NOT NULL, message TEXT NOT NULL);
-- Every recall looks up the superseding cards: without this index that is a scan of the whole cards table.
CREATE INDEX cards_superseding ON cards(supersedes) WHERE supersedes != '[]';
"""


class IndexedCard(Record):
    """What the hot path knows of a card, without reading the card file or parsing YAML.

    lengths: token counts of (name with aliases, summary, body).
    superseded_by: ids of active cards whose `supersedes` names this one.
    """

    __slots__ = (
        "row",
        "id",
        "path",
        "name",
        "summary",
        "status",
        "expires_on",
        "scope",
        "not_when",
        "supersedes",
        "lengths",
        "superseded_by",
    )
    row: int
    id: str
    path: str
    name: str
    summary: str
    status: str
    expires_on: str | None
    scope: tuple[str, ...]
    not_when: tuple[str, ...]
    supersedes: tuple[str, ...]
    lengths: tuple[int, int, int]
    superseded_by: tuple[str, ...]

    def __init__(
        self,
        row: int,
        id: str,
        path: str,
        name: str,
        summary: str,
        status: str,
        expires_on: str | None,
        scope: tuple[str, ...],
        not_when: tuple[str, ...],
        supersedes: tuple[str, ...],
        lengths: tuple[int, int, int],
        superseded_by: tuple[str, ...] = (),
    ) -> None:
        self._init(
            row, id, path, name, summary, status, expires_on, scope, not_when, supersedes, lengths, superseded_by
        )


class Postings(Record):
    """One term's postings: card rows (ascending), and per row six counts: the term's frequency in name, summary
    and body, then the card's token lengths of name, summary and body (so scoring never looks a card up).

    bound: per field (name, summary, body) a count n then n (frequency, length) pairs, the field's Pareto frontier
    (see the module docstring); `max_tf_ratios` turns it into each field's highest length-normalised frequency.
    """

    __slots__ = ("df", "rows", "stats", "bound")
    df: int
    rows: array[int]
    stats: array[int]
    bound: array[int]

    def __init__(self, df: int, rows: array[int], stats: array[int], bound: array[int]) -> None:
        self._init(df, rows, stats, bound)

    def __iter__(self) -> Iterator[tuple[int, int, int, int, int, int, int]]:
        st = self.stats
        for i, row in enumerate(self.rows):
            j = 6 * i
            yield row, st[j], st[j + 1], st[j + 2], st[j + 3], st[j + 4], st[j + 5]

    def field_maxima(
        self, weights: tuple[float, float, float], b: float, avg: tuple[float, float, float]
    ) -> tuple[float, float, float]:
        """Per field, the highest `weight * tf / (1 - b + b * len / avg)` any posting of this term reaches; valid
        for 0 <= b <= 1 and non-negative weights, computed as recall computes each posting's value."""
        bound = self.bound
        out = [0.0, 0.0, 0.0]
        i = 0
        for field in range(3):
            n = bound[i]
            i += 1
            best = 0.0
            w, avg_f = weights[field], avg[field]
            for _ in range(n):
                value = w * bound[i] / (1 - b + b * bound[i + 1] / avg_f)
                if value > best:
                    best = value
                i += 2
            out[field] = best
        return out[0], out[1], out[2]


def __getattr__(name: str) -> Any:
    if name == "CardTerms":  # writers only; see the module docstring
        from cairn.cardterms import CardTerms

        return CardTerms
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class IndexReader:
    """A read-only view of one index file."""

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise IndexMissing(f"no index at {path}; run `cairn index`")
        self.path = path
        try:
            uri = Path(path).resolve().as_uri() + "?mode=ro&immutable=1"
            self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
            self.meta = dict(self._db.execute("SELECT key, value FROM meta"))
        except sqlite3.DatabaseError as exc:
            raise IndexCorrupt(f"the index at {path} is damaged ({exc}); run `cairn index --rebuild`") from None
        if self.meta.get("format") != FORMAT_VERSION:
            raise IndexCorrupt(f"the index at {path} has an old format; run `cairn index --rebuild`")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> IndexReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def commit(self) -> str:
        return str(self.meta["commit"])

    @property
    def n_cards(self) -> int:
        return int(self.meta["n_cards"])

    @property
    def avg_lengths(self) -> tuple[float, float, float]:
        a, b, c = json.loads(self.meta["avg_lengths"])
        return float(a), float(b), float(c)

    @property
    def config(self) -> dict[str, Any]:
        """The indexed commit's cairn.toml as `Config.to_dict()` (a fresh copy on every call)."""
        return json.loads(self.meta["config"])  # type: ignore[no-any-return]

    def postings(self, terms: Iterable[str]) -> dict[str, Postings]:
        wanted = sorted(set(terms))
        found: dict[str, Postings] = {}
        for chunk in _chunks(wanted, 500):
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT term, df, postings, bound FROM terms WHERE term IN ({marks})"
            for term, df, blob, bound in self._query(sql, chunk):
                found[term] = _unpack(df, blob, bound)
        return found

    def cards(self, rows: Iterable[int]) -> dict[int, IndexedCard]:
        wanted = sorted(set(rows))
        out: dict[int, IndexedCard] = {}
        for chunk in _chunks(wanted, 500):
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT {_CARD_COLUMNS} FROM cards WHERE row IN ({marks})"
            for values in self._query(sql, chunk):
                card = _indexed_card(values)
                out[card.row] = card
        if out:
            by_id = {c.id: c.row for c in out.values()}
            for sup_id, sup_status, sup_list in self._superseders():
                if sup_status != "active":
                    continue
                for target in json.loads(sup_list):
                    if target in by_id:
                        row = by_id[target]
                        card = out[row]
                        out[row] = _replace_superseded(card, card.superseded_by + (sup_id,))
        return out

    def card_by_id(self, card_id: str) -> IndexedCard | None:
        values = self._query(f"SELECT {_CARD_COLUMNS} FROM cards WHERE id = ?", (card_id,)).fetchone()
        if values is None:
            return None
        return self.cards([values[0]])[values[0]]

    def record(self, card_id: str) -> dict[str, Any] | None:
        """The full parsed card (body included) and its provenance, as stored at index time."""
        got = self._query("SELECT record, provenance FROM cards WHERE id = ?", (card_id,)).fetchone()
        if got is None:
            return None
        record: dict[str, Any] = json.loads(got[0])
        record["provenance"] = json.loads(got[1]) if got[1] else None
        return record

    def ids(self) -> list[str]:
        return [row[0] for row in self._query("SELECT id FROM cards ORDER BY id", ())]

    def entries(self) -> list[tuple[str, str, str]]:
        """(id, path, blob) of every indexed card."""
        return list(self._query("SELECT id, path, blob FROM cards ORDER BY id", ()))

    def problems(self) -> list[tuple[str, int, str, str]]:
        return list(self._query("SELECT path, line, rule, message FROM problems ORDER BY path, line", ()))

    def checksum_holds(self) -> bool:
        return self.meta.get("checksum") == entries_checksum(self.entries())

    def integrity_ok(self) -> bool:
        return bool(self._query("PRAGMA quick_check", ()).fetchone() == ("ok",))

    def _superseders(self) -> list[tuple[str, str, str]]:
        return list(self._query("SELECT id, status, supersedes FROM cards WHERE supersedes != '[]'", ()))

    def _query(self, sql: str, args: Sequence[Any]) -> sqlite3.Cursor:
        try:
            return self._db.execute(sql, args)
        except sqlite3.DatabaseError as exc:
            raise IndexCorrupt(f"the index at {self.path} is damaged ({exc}); run `cairn index --rebuild`") from None


_CARD_COLUMNS = (
    "row, id, path, name, summary, status, expires_on, scope, not_when, supersedes, len_name, len_summary, len_body"
)


def _indexed_card(values: Sequence[Any]) -> IndexedCard:
    row, card_id, path, name, summary, status, expires_on, scope, not_when, supersedes, len_n, len_s, len_b = values
    return IndexedCard(
        row,
        card_id,
        path,
        name,
        summary,
        status,
        expires_on,
        _strings(scope),
        _strings(not_when),
        _strings(supersedes),
        (len_n, len_s, len_b),
    )


def _strings(text: str) -> tuple[str, ...]:
    return () if text == "[]" else tuple(json.loads(text))  # most cards have no scope, not_when or supersedes


def _replace_superseded(card: IndexedCard, by: tuple[str, ...]) -> IndexedCard:
    return card.replace(superseded_by=by)


def _unpack(df: int, blob: bytes, bound_blob: bytes = b"") -> Postings:
    rows = array("I")
    rows.frombytes(blob[: 4 * df])
    stats = array("H")
    stats.frombytes(blob[4 * df :])
    bound = array("H")
    bound.frombytes(bound_blob)
    return Postings(df, rows, stats, bound)


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
    from bisect import bisect_left

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


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def entries_checksum(entries: Iterable[tuple[str, str, str]]) -> str:
    import hashlib

    digest = hashlib.sha256()
    for card_id, path, blob in sorted(entries):
        digest.update(f"{card_id}\0{path}\0{blob}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


# -- writing ------------------------------------------------------------------------------------------------------


def writer_lock(index_file: Path) -> contextlib.AbstractContextManager[None]:
    """Serialise writers of one index (readers never wait: they read whole files)."""
    from contextlib import contextmanager

    return contextmanager(_writer_lock)(index_file)


def _writer_lock(index_file: Path) -> Iterator[None]:
    index_file.parent.mkdir(parents=True, exist_ok=True)
    lock_path = index_file.with_name(index_file.name + ".lock")
    with open(lock_path, "a+b") as handle:
        try:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - Windows: os.replace alone keeps readers safe
            pass
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
    index_file.parent.mkdir(parents=True, exist_ok=True)
    import tempfile

    fd, tmp_name = tempfile.mkstemp(prefix=".index-", suffix=".tmp", dir=index_file.parent)
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
            _apply(db, upserts, set(removed_ids) | {c.id for c in upserts})
            db.execute("DELETE FROM problems")
            db.executemany("INSERT INTO problems VALUES (?, ?, ?, ?)", problems)
            _write_meta(db, meta)
            db.commit()
        finally:
            db.close()
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, index_file)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _apply(db: sqlite3.Connection, upserts: Sequence[CardTerms], removed: set[str]) -> None:
    # Old postings of removed or replaced cards.
    stale: dict[str, set[int]] = {}
    for chunk in _chunks(sorted(removed), 500):
        marks = ",".join("?" * len(chunk))
        for row, terms in db.execute(f"SELECT row, terms FROM cards WHERE id IN ({marks})", chunk):
            for term in terms.split("\n") if terms else ():
                stale.setdefault(term, set()).add(row)
        db.execute(f"DELETE FROM cards WHERE id IN ({marks})", chunk)

    from collections import Counter

    fresh: dict[str, list[tuple[int, ...]]] = {}
    for card in upserts:
        counts = [Counter(tokens) for tokens in card.tokens]
        lengths = [min(len(tokens), _U16) for tokens in card.tokens]
        terms = sorted(set().union(*counts))
        cursor = db.execute(
            "INSERT INTO cards (id, path, blob, name, summary, status, expires_on, scope, not_when, supersedes,"
            " len_name, len_summary, len_body, terms, record, provenance)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
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
                "\n".join(terms),
                json.dumps(card.record, ensure_ascii=False),
                json.dumps(card.provenance, ensure_ascii=False) if card.provenance is not None else None,
            ),
        )
        row = cursor.lastrowid
        assert row is not None
        for term in terms:
            fresh.setdefault(term, []).append((row, *(min(count[term], _U16) for count in counts), *lengths))

    for term in sorted(set(stale) | set(fresh)):
        got = db.execute("SELECT df, postings, bound FROM terms WHERE term = ?", (term,)).fetchone()
        rows, stats, bound = _updated_postings(got, stale.get(term, set()), fresh.get(term, ()))
        if rows:
            db.execute("INSERT OR REPLACE INTO terms VALUES (?, ?, ?, ?)", (term, len(rows), _pack(rows, stats), bound))
        else:
            db.execute("DELETE FROM terms WHERE term = ?", (term,))


def _write_meta(db: sqlite3.Connection, meta: dict[str, str]) -> None:
    n, name_len, summary_len, body_len = db.execute(
        "SELECT COUNT(*), SUM(len_name), SUM(len_summary), SUM(len_body) FROM cards"
    ).fetchone()
    avg = [round((total or 0) / n, 4) if n else 0.0 for total in (name_len, summary_len, body_len)]
    entries = db.execute("SELECT id, path, blob FROM cards").fetchall()
    values = dict(meta)
    values.update(
        format=FORMAT_VERSION,
        n_cards=str(n),
        avg_lengths=json.dumps(avg),
        checksum=entries_checksum(entries),
    )
    db.execute("DELETE FROM meta")
    db.executemany("INSERT INTO meta VALUES (?, ?)", sorted(values.items()))
