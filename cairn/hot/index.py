"""Reading the index file: a SQLite database with an inverted index the hook reads per query.

Readers open it read-only and immutable; `cairn.index.store` writes it (a new file, then `os.replace`), so a reader
always sees one whole index.

Each term row holds its postings (card rows in row order, then per row the term's frequency in name, summary and
body and the card's token lengths of the three) and a score bound: per field, the Pareto frontier of (frequency,
length) pairs over its postings (the highest frequencies at the shortest lengths). With any BM25F parameters
(k1 > 0, 0 <= b <= 1, non-negative field weights) no posting of the term scores above the best frontier pair, so
recall can tell, without reading a term's postings one by one, that it cannot lift a card into the top few.

The cache is checked, not trusted. Every row the hook reads carries a seal: a keyed BLAKE2b MAC (128 bits) of its
values under the cache's key (`paths.index_key_file`: 32 random bytes, 0600, made by the first writer). The meta
table's seal covers every stored setting; a card row's covers its row number, id, path, blob and every served field
(and a digest of its stored record, terms and provenance); a term row's covers the term and its postings and bound.
The reader checks the header (an SQLite file whose size is what its header says: a truncated or foreign file fails
before SQLite reads it), the meta seal when it opens, and the seal of each row as it reads it; a posting naming a
row that is not there, and a list of superseding cards that is not the one sealed in meta, fail too. A failed check
is `IndexCorrupt` (the hook fails open and re-indexes; commands say `cairn index` rebuilds it).

What the seal protects against: any edit of the file by something that does not hold the key (a tool, a sync or
restore, a file copied from another machine or cache, flipped bytes), and a row deleted or swapped. What it cannot:
the user (or anything running as the user) can read the key and re-seal an edited index. `cairn audit` does not
trust the seal: it re-derives every served value from the committed blobs (`cairn.index.audit`).
"""

import os
import stat
import sys

from cairn.hot import Record, dumps, file_uri, index_key, loads, new_sha256

_set = object.__setattr__  # a record sets its fields past its own `__setattr__`, which refuses

try:
    from _blake2 import blake2b as _blake2b
except ImportError:  # pragma: no cover - an interpreter without the built-in module
    from hashlib import blake2b as _blake2b

TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3
    from array import array
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import Any

    from cairn.hot.errors import IndexCorrupt, IndexMissing


def _no_statement_cache(maxsize: int) -> "Any":
    return lambda connection: connection  # `cache(sql)` is then `connection(sql)`: a new statement each time


def _import_sqlite() -> "Any":
    """The C module `sqlite3` wraps (the package adds datetime adapters no index needs: +1.3 ms on every hook).

    From Python 3.11 on, `_sqlite3` takes `functools.lru_cache` for its statement cache when it is first imported,
    and `functools` brings `collections` along: about 2 ms of imports on every prompt, for a cache of the few
    statements the hook runs once each. When nothing has imported `functools` yet (the hook), a stand-in module
    gives it an `lru_cache` that caches nothing, and is taken out of `sys.modules` again at once; a process that has
    `functools` (every cold command) gets the real cache.
    """
    if "functools" in sys.modules:
        import _sqlite3

        return _sqlite3
    stand_in = type(sys)("functools")
    stand_in.lru_cache = _no_statement_cache  # type: ignore[attr-defined]
    sys.modules["functools"] = stand_in
    try:
        import _sqlite3

        return _sqlite3
    finally:
        if sys.modules.get("functools") is stand_in:
            del sys.modules["functools"]


if not TYPE_CHECKING:
    try:
        sqlite3 = _import_sqlite()
    except ImportError:  # pragma: no cover - an interpreter that only ships the package
        import sqlite3

FORMAT_VERSION = "6"  # 6: seals are keyed BLAKE2b (5 had HMAC-SHA256)

_MAGIC = b"SQLite format 3\x00"
SEAL_CHARS = 32  # a seal: a 128-bit keyed BLAKE2b, in hex
_SEAL_PERSON = b"cairn index seal"  # BLAKE2b's personalisation (16 bytes): these MACs are index seals only


class Sealer:
    """Keyed BLAKE2b (its MAC mode: the key in the first block, no HMAC construction needed) under the cache key,
    cut to 128 bits by its digest size, on the interpreter's built-in `_blake2` (no `hashlib`: it loads OpenSSL).
    The same seals for the writer (`cairn.index.store`) and the reader. BLAKE2b is ~3.5x cheaper per byte than
    the built-in sha256 (callgrind: 14 vs 48 instructions a byte), and the hook hashes every postings blob it
    reads: at 10,000 cards HMAC-SHA256 was a fifth of the hook's instructions."""

    __slots__ = ("_mac",)

    def __init__(self, key: bytes) -> None:
        if len(key) > 64:  # BLAKE2b takes a key of up to 64 bytes (the cache key has 32)
            key = new_sha256(key).digest()
        self._mac = _blake2b(key=key, digest_size=SEAL_CHARS // 2, person=_SEAL_PERSON)

    def seal(self, data: bytes, *more: bytes) -> str:
        """The seal of `data` followed by each of `more` (the seal of their concatenation, without making it)."""
        mac = self._mac.copy()
        mac.update(data)
        for part in more:
            mac.update(part)
        return str(mac.hexdigest())


def meta_message(meta: "dict[str, str]") -> bytes:
    """What the meta seal covers: every key and value but the seal itself."""
    return _utf8(dumps(sorted([k, v] for k, v in meta.items() if k != "seal"), ensure_ascii=False))


def card_message(values: "Sequence[Any]") -> bytes:
    """What a card row's seal covers: `SEALED_CARD_COLUMNS`' values, in that order."""
    return _utf8(dumps(list(values), ensure_ascii=False))


def term_message(term: str, df: int, postings: bytes, bound: bytes) -> bytes:
    """What a term row's seal covers: the term, its document frequency, postings and bound."""
    return _term_head(term, df, postings, bound) + postings + bound


def _term_head(term: str, df: int, postings: bytes, bound: bytes) -> bytes:
    """`term_message` up to its postings (the reader seals the rest as it is, without copying the blob)."""
    raw = _utf8(term)
    return b"%d:%d:%d:%d:" % (len(raw), df, len(postings), len(bound)) + raw


def record_digest(record: str, provenance: "str | None", terms: str) -> str:
    """The digest of a card row's cold columns (full record, provenance, term list), sealed with the row."""
    data = _utf8(dumps([record, provenance, terms], ensure_ascii=False))
    return str(new_sha256(data).hexdigest())


def superseders_digest(rows: "Iterable[Sequence[Any]]") -> str:
    """The digest of every (id, status, supersedes) with a non-empty supersedes, kept in meta (and so sealed)."""
    data = _utf8(dumps(sorted([str(v) for v in r] for r in rows), ensure_ascii=False))
    return str(new_sha256(data).hexdigest())


_NO_SUPERSEDERS: list[str] = []


def _no_superseders() -> str:
    """`superseders_digest` of no rows (computed once)."""
    if not _NO_SUPERSEDERS:
        _NO_SUPERSEDERS.append(superseders_digest(()))
    return _NO_SUPERSEDERS[0]


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


SEALED_CARD_COLUMNS = (
    "row, id, path, blob, name, summary, status, expires_on, scope, not_when, supersedes, len_name, len_summary, "
    "len_body, record_digest"
)


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
        # Field by field rather than `_init`'s loop: the hook makes one per card it reads, the loop costs twice this.
        _set(self, "row", row)
        _set(self, "id", id)
        _set(self, "path", path)
        _set(self, "name", name)
        _set(self, "summary", summary)
        _set(self, "status", status)
        _set(self, "expires_on", expires_on)
        _set(self, "scope", scope)
        _set(self, "not_when", not_when)
        _set(self, "supersedes", supersedes)
        _set(self, "lengths", lengths)
        _set(self, "superseded_by", superseded_by)


class Postings(Record):
    """One term's postings: card rows (ascending), and per row six counts: the term's frequency in name, summary
    and body, then the card's token lengths of name, summary and body (so scoring never looks a card up).

    bound: per field (name, summary, body) a count n then n (frequency, length) pairs, the field's Pareto frontier
    (see the module docstring); `field_maxima` turns it into each field's highest length-normalised value.

    The reader gives `memoryview`s cast to the stored C types (no copy, and no `array` module: it imports
    `collections.abc`); `ArrayPostings` holds the same numbers in arrays, for the writer to edit.
    """

    __slots__ = ("df", "rows", "stats", "bound")
    df: int
    rows: "Sequence[int]"
    stats: "Sequence[int]"
    bound: "Sequence[int]"

    def __init__(self, df: int, rows: "Sequence[int]", stats: "Sequence[int]", bound: "Sequence[int]") -> None:
        _set(self, "df", df)  # field by field, as `IndexedCard`: one per term the hook reads
        _set(self, "rows", rows)
        _set(self, "stats", stats)
        _set(self, "bound", bound)

    def __iter__(self) -> "Iterator[tuple[int, int, int, int, int, int, int]]":
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


class ArrayPostings(Postings):
    """Postings in arrays (`_unpack`): what `cairn.index.store` edits when it updates a term. (No `__slots__` of its
    own: `Record` takes the fields from the `__slots__` it inherits.)"""

    rows: "array[int]"
    stats: "array[int]"
    bound: "array[int]"


class IndexReader:
    """A read-only view of one index file (its path a string or a `Path`)."""

    def __init__(self, path: "str | os.PathLike[str]", key: bytes | None = None, *, unchecked: bool = False) -> None:
        """Open and check the header and the meta seal; `unchecked` skips the seal (for `cairn audit`, which
        compares every value itself and reports the seals as one of its findings)."""
        self.path = path
        self.on_damage: Callable[[], object] | None = None  # called once before a check fails (the hook re-indexes)
        self._superseding: list[tuple[str, str, str]] | None = None
        _check_header(os.fspath(path))
        if key is None:
            key = index_key()
        if key is None:
            raise self._damaged("no cache key to check it with")
        self._sealer = Sealer(key)
        try:
            uri = file_uri(os.path.abspath(os.fspath(path))) + "?mode=ro&immutable=1"
            self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        except sqlite3.DatabaseError as exc:
            raise self._damaged(str(exc)) from None
        try:
            self.meta = dict(self._query("SELECT key, value FROM meta", ()))
            if self.meta.get("format") != FORMAT_VERSION:
                raise _corrupt(f"the index at {path} has an old format; run `cairn index --rebuild`")
            if not unchecked and not self.meta_sealed():
                raise self._damaged("its settings do not match their seal: altered, or written with another cache key")
        except BaseException:
            self._db.close()
            raise

    def meta_sealed(self) -> bool:
        return bool(self.meta.get("seal") == self._sealer.seal(meta_message(self.meta)))

    def _damaged(self, why: str) -> "IndexCorrupt":
        callback, self.on_damage = getattr(self, "on_damage", None), None
        if callback is not None:
            callback()
        return _corrupt(f"the index at {self.path} is damaged ({why}); run `cairn index` to rebuild it")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "IndexReader":
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
        a, b, c = loads(self.meta["avg_lengths"])
        return float(a), float(b), float(c)

    @property
    def config(self) -> "dict[str, Any]":
        """The indexed commit's cairn.toml as `Config.to_dict()` (a fresh copy on every call)."""
        return loads(self.meta["config"])  # type: ignore[no-any-return]

    def postings(self, terms: "Iterable[str]") -> dict[str, Postings]:
        wanted = sorted(set(terms))
        found: dict[str, Postings] = {}
        for chunk in _chunks(wanted, 500):
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT term, df, postings, bound, seal FROM terms WHERE term IN ({marks})"
            for term, df, blob, bound, seal in self._query(sql, chunk):
                if seal != self._sealer.seal(_term_head(term, df, blob, bound), blob, bound) or len(blob) != 16 * df:
                    raise self._damaged("the postings of a term do not match their seal")
                found[term] = _view(df, blob, bound)
        return found

    def cards(self, rows: "Iterable[int]") -> dict[int, IndexedCard]:
        wanted = sorted(set(rows))
        out: dict[int, IndexedCard] = {}
        for chunk in _chunks(wanted, 500):
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT {SEALED_CARD_COLUMNS}, seal FROM cards WHERE row IN ({marks})"
            for values in self._query(sql, chunk):
                card = _indexed_card(self._checked(values))
                out[card.row] = card
        if len(out) != len(wanted):
            raise self._damaged(f"{len(wanted) - len(out)} card row(s) its postings name are missing")
        if out:
            by_id = {c.id: c.row for c in out.values()}
            for sup_id, sup_status, sup_list in self._superseders():
                if sup_status != "active":
                    continue
                for target in loads(sup_list):
                    if target in by_id:
                        row = by_id[target]
                        card = out[row]
                        out[row] = _replace_superseded(card, card.superseded_by + (sup_id,))
        return out

    def card_by_id(self, card_id: str) -> IndexedCard | None:
        values = self._query("SELECT row FROM cards WHERE id = ?", (card_id,)).fetchone()
        if values is None:
            return None
        return self.cards([values[0]])[values[0]]

    def record(self, card_id: str) -> "dict[str, Any] | None":
        """The full parsed card (body included) and its provenance, as stored at index time (checked)."""
        sql = f"SELECT {SEALED_CARD_COLUMNS}, seal, record, provenance, terms FROM cards WHERE id = ?"
        got = self._query(sql, (card_id,)).fetchone()
        if got is None:
            return None
        self._checked(got[:16])
        if got[14] != record_digest(got[16], got[17], got[18]):
            raise self._damaged("the stored record of a card does not match its seal")
        record: dict[str, Any] = loads(got[16])
        record["provenance"] = loads(got[17]) if got[17] else None
        return record

    def ids(self) -> list[str]:
        return [row[0] for row in self._query("SELECT id FROM cards ORDER BY id", ())]

    def entries(self) -> list[tuple[str, str, str]]:
        """(id, path, blob) of every indexed card."""
        return list(self._query("SELECT id, path, blob FROM cards ORDER BY id", ()))

    def sealed_rows(self) -> "Iterator[Sequence[Any]]":
        """Every card row as `SEALED_CARD_COLUMNS`, then seal, record, provenance and terms (for full checks)."""
        sql = f"SELECT {SEALED_CARD_COLUMNS}, seal, record, provenance, terms FROM cards ORDER BY row"
        return iter(self._query(sql, ()))

    def term_rows(self) -> "Iterator[Sequence[Any]]":
        """Every term row: term, df, postings, bound, seal (for full checks)."""
        return iter(self._query("SELECT term, df, postings, bound, seal FROM terms ORDER BY term", ()))

    @property
    def sealer(self) -> Sealer:
        return self._sealer

    def _checked(self, values: "Sequence[Any]") -> "Sequence[Any]":
        """A card row (`SEALED_CARD_COLUMNS` then seal) whose seal holds, as `_CARD_COLUMNS` values."""
        if values[15] != self._sealer.seal(card_message(values[:15])):
            raise self._damaged("a card's stored fields do not match their seal")
        return (*values[:3], *values[4:14])

    def problems(self) -> list[tuple[str, int, str, str]]:
        return list(self._query("SELECT path, line, rule, message FROM problems ORDER BY path, line", ()))

    def integrity_ok(self) -> bool:
        return bool(self._query("PRAGMA quick_check", ()).fetchone() == ("ok",))

    def _superseders(self) -> list[tuple[str, str, str]]:
        """Every (id, status, supersedes) with a non-empty supersedes, checked against meta once per reader (the
        file is immutable while open)."""
        if self._superseding is None:
            if self.meta.get("superseders") == _no_superseders():
                # Sealed in meta: no card supersedes another. A row saying otherwise is not one the writer wrote,
                # and leaving it unread serves what was sealed (one statement less on every prompt).
                self._superseding = []
                return self._superseding
            rows = list(self._query("SELECT id, status, supersedes FROM cards WHERE supersedes != '[]'", ()))
            if superseders_digest(rows) != self.meta.get("superseders"):
                raise self._damaged("the cards that supersede others are not the ones it was written with")
            self._superseding = rows
        return self._superseding

    def _query(self, sql: str, args: "Sequence[Any]") -> "sqlite3.Cursor":
        try:
            return self._db.execute(sql, args)
        except sqlite3.DatabaseError as exc:
            raise self._damaged(str(exc)) from None


def _check_header(path: str) -> None:
    """An SQLite file whose size is the one its header gives (page size times page count, when the header's count
    is valid): a missing file (or no regular file) is `IndexMissing`, a foreign or truncated one `IndexCorrupt`.
    One open, one fstat and one read of 100 bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO in its place must not block
    except (FileNotFoundError, NotADirectoryError):
        raise _missing(f"no index at {path}; run `cairn index`") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _missing(f"no index at {path}; run `cairn index`")
        header = os.read(fd, 100)
    finally:
        os.close(fd)
    why = ""
    if len(header) < 100 or header[:16] != _MAGIC:
        why = "not an SQLite file"
    else:
        page = int.from_bytes(header[16:18], "big")
        page = 65536 if page == 1 else page
        pages = int.from_bytes(header[28:32], "big")
        if page < 512 or page & (page - 1) or info.st_size % page:
            why = "its size is not a whole number of pages"
        elif header[24:28] == header[92:96] and pages and info.st_size != page * pages:
            why = f"{info.st_size} bytes where its header says {page * pages}: truncated"
    if why:
        raise _corrupt(f"the index at {path} is damaged ({why}); run `cairn index` to rebuild it")


def _missing(message: str) -> "IndexMissing":
    from cairn.hot.errors import IndexMissing  # imported when raised: a hook that reads its index never needs it

    return IndexMissing(message)


def _corrupt(message: str) -> "IndexCorrupt":
    from cairn.hot.errors import IndexCorrupt

    return IndexCorrupt(message)


_CARD_COLUMNS = (
    "row, id, path, name, summary, status, expires_on, scope, not_when, supersedes, len_name, len_summary, len_body"
)


def _indexed_card(values: "Sequence[Any]") -> IndexedCard:
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
    return () if text == "[]" else tuple(loads(text))  # most cards have no scope, not_when or supersedes


def _replace_superseded(card: IndexedCard, by: tuple[str, ...]) -> IndexedCard:
    return card.replace(superseded_by=by)


def _view(df: int, blob: bytes, bound_blob: bytes) -> Postings:
    """A term's postings as stored: `df` card rows (unsigned 32-bit), then their counts and the bound (unsigned
    16-bit), all in the machine's byte order, read in place."""
    data = memoryview(blob)
    return Postings(df, data[: 4 * df].cast("I"), data[4 * df :].cast("H"), memoryview(bound_blob).cast("H"))


def _unpack(df: int, blob: bytes, bound_blob: bytes = b"") -> ArrayPostings:
    """`_view` in arrays, for the writer (cold: `array` is no import of the hook's)."""
    from array import array

    rows = array("I")
    rows.frombytes(blob[: 4 * df])
    stats = array("H")
    stats.frombytes(blob[4 * df :])
    bound = array("H")
    bound.frombytes(bound_blob)
    return ArrayPostings(df, rows, stats, bound)


def _chunks(items: "Sequence[Any]", size: int) -> "Iterator[Sequence[Any]]":
    for start in range(0, len(items), size):
        yield items[start : start + size]
