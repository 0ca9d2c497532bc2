"""Reading the index file: Cairn's own format, read on the hook's path with `os.pread` and builtins.

One file per index, written whole by `cairn.index.store` (a new file, then `os.replace`), so a reader sees one
whole index; it reads the parts a query needs, never the whole file, and never maps it (a file truncated under a
mapping would kill the hook with SIGBUS instead of failing open: a short read is a failed check here).

The layout (integers little-endian, except a term record's head, postings and bound: in the byte order the header
names, this machine's, so they are read in place; the messages are `cairn.index.store`'s `*_message` functions):

    header      MAGIC, format, byte order, then the fields of `HEADER_FIELDS` (file size, where each part is),
                the meta seal and the problems seal: `HEADER_SIZE` bytes
    meta        the stored settings: sorted [key, value] pairs (JSON)
    problems    the cards left out: [[path, line, rule, message], ...] (JSON)
    superseders every [id, status, supersedes] with a non-empty supersedes (JSON; its digest is in meta)
    term slots  a hash table of terms: 24-byte slots (the term's keyed 64-bit hash, `Sealer.slot`; its record's
                offset and length), open addressing with linear probing from the hash masked, no wrap-around (a
                chain may run past the table's nominal size), at most half full
    id slots    the same table for card ids (the value is the card's row)
    card slots  per row from 1 to the highest: 24 bytes (hot record offset and length, cold record offset and
                length); a row no card holds has length 0
    id order    per row from 1 to the highest: the place (from 1) of its card's id among the index's ids sorted, 0
                for a row no card holds (unsigned 32-bit; its digest is in meta): the order of cards that score
                exactly alike (`IndexReader.id_order`)
    terms       one record per term, one after another from `terms_at`, each at a multiple of 4 bytes: its seal
                (16 bytes), then df, bound length and term length (u32 each), the term, padding to 4 bytes, the
                card rows (unsigned 32-bit), per row six counts, the bound (unsigned 16-bit)
    hot records per card: its seal, then what the hot path serves, `SEALED_CARD_COLUMNS` as a JSON list
    cold records per card: its full record, provenance and terms (JSON); its digest is in the hot one

Each term's postings are the card rows in row order, then per row the term's frequency in name, summary and body
and the card's token lengths of the three, and a score bound: per field, the Pareto frontier of (frequency,
length) pairs over its postings (the highest frequencies at the shortest lengths). With any BM25F parameters
(k1 > 0, 0 <= b <= 1, non-negative field weights) no posting of the term scores above the best frontier pair, so
recall can tell, without reading a term's postings one by one, that it cannot lift a card into the top few.

The cache is checked, not trusted. Every record the hook reads carries a seal: a keyed BLAKE2b MAC (128 bits) of
its bytes under the cache's key (`paths.index_key_file`: 32 random bytes, 0600, made by the first writer; a key
another user owns, or that others may read or write, is taken as none). The
meta seal covers every stored setting; a card's covers its row number, id, path, blob and every served field (and
a digest of its cold record); a term's covers the term and its postings and bound; the problems seal the list of
cards left out. The reader checks the header (Cairn's magic, this format, this machine's byte order, and a file
whose size is the one the header gives: a truncated or foreign file fails before anything in it is parsed), the
meta seal when it opens, and the seal of each record as it reads it; a record that is not the one its slot was
looked up for (another term, another row), a posting naming a row that is not there, and a list of superseding
cards that is not the one sealed in meta, fail too. A failed check is `IndexCorrupt` (the hook fails open and
re-indexes; commands say `cairn index` rebuilds it). The hash of the slot tables is keyed too: a card's author
cannot choose terms that all fall on one chain.

What the seal protects against: any edit of the file by something that does not hold the key (a tool, a sync or
restore, a file copied from another machine or cache, flipped bytes), and a record deleted or swapped. What it
cannot: the user (or anything running as the user) can read the key and re-seal an edited index. `cairn audit`
does not trust the seal: it re-derives every served value from the committed blobs (`cairn.index.audit`).
"""

import os
import stat
import sys

from cairn.hot import Record, hook_settings, index_key, index_key_file, loads, new_sha256, stored_settings

_set = object.__setattr__  # a record sets its fields past its own `__setattr__`, which refuses
_pread = os.pread

try:
    from _blake2 import blake2b as _blake2b
except ImportError:  # pragma: no cover - an interpreter without the built-in module
    from hashlib import blake2b as _blake2b

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import Any, TypeVar

    from cairn.config import RecallSettings
    from cairn.hot.errors import IndexCorrupt, IndexMissing

    _T = TypeVar("_T")

# 8 (stop 55): the id order part (cards that score alike rank by id, not by row), and the terms of a card with
# accents typed as separate marks or with ligatures (`tokens.fold_letters`: an index of 7 holds `verrouille` where a
# prompt now gives `verrouill`, and an update copies an untouched card's terms as they are); 7: Cairn's own file
# format (6 and older were SQLite files, 6 sealed with keyed BLAKE2b)
FORMAT_VERSION = "8"
# The version of the security rules (cairn.lint.security) that refuse cards at index time, kept here so the hook can
# compare it without importing lint: an index checked by other rules may hold cards the current rules refuse.
# 16: id-text refuses a look-alike of the markup it refuses, as NFKC reads it (`＜system＞`, `｜`, `＄`, small `﹤`, the
# Greek question mark), keeping the full-width `：；（）` of Chinese and Japanese file names: an index checked by 15
# served such an id to agents as written.
# 15: hidden-text ends a word at Han, kana and Hangul, so a Greek letter in a Japanese sentence (`PNGのαチャンネル`) is
# no homoglyph: an index checked by 14 refused such a card, and is rebuilt to serve it; secret reads a password named
# in Chinese, Japanese or Korean (`密码：`, `パスワード：`, `비밀번호:`).
# 14 (stop 53): every rule reads an extra key's own name as YAML decodes it (`"\u0406gnore ...": 1`), and a card's
# status; encoded-payload and secret read the id (a file named in hex of an instruction, or after a token, was served);
# prompt-injection reads "forget your rules" said to the agent; secret finds a URL's password after an e-mail user.
# 13 (stop 52): a frontmatter holding a YAML tag is read field by field (a `!!binary` extra key hid an instruction), and
# ends where the parser ends it (after a `---x: 1` key); prompt-injection reads Markdown comments (`[//]: # (...)`);
# secret names an AWS secret access key given after a space, Slack app tokens (xapp-) and `Authorization: token`.
# 12 (stop 47): hidden-text flags U+2028, U+2029.
SECURITY_RULES_VERSION = "16"

MAGIC = b"CAIRNIDX"
_SQLITE_MAGIC = b"SQLite format 3\x00"
# The header after MAGIC, the format (u32) and the byte order (u32: 1 little-endian, 2 big-endian): these u64s,
# then the meta seal and the problems seal (16 bytes each). Meta follows the header.
HEADER_FIELDS = (
    "size",
    "meta_len",
    "problems_at",
    "problems_len",
    "superseders_at",
    "superseders_len",
    "term_slots_at",
    "term_slots",
    "term_mask",
    "id_slots_at",
    "id_slots",
    "id_mask",
    "cards_at",
    "max_row",
    "terms_at",
    "terms_len",
    "order_at",
)
_SEALS_AT = 16 + 8 * len(HEADER_FIELDS)
HEADER_SIZE = _SEALS_AT + 32
BYTE_ORDER = 1 if sys.byteorder == "little" else 2
SLOT = 24  # a hash table slot: hash, value, length (u64 each); length 0: an empty slot
CARD_SLOT = 24  # a card slot: hot offset (u64), hot length (u32), cold offset (u64), cold length (u32)
TERM_HEAD = 12  # a term record's message starts with df, bound length (in 16-bit values) and term length (u32s)
_PROBE = 4  # slots read at once while probing
_FIRST_READ = 16384  # the first read: the header and (nearly always) the whole meta

SEAL_BYTES = 16  # a seal: a 128-bit keyed BLAKE2b
_SEAL_PERSON = b"cairn index seal"  # BLAKE2b's personalisation (16 bytes): these MACs are index seals only
_SLOT_PERSON = b"cairn index slot"  # ...and these the slot tables' hashes


class Sealer:
    """Keyed BLAKE2b (its MAC mode: the key in the first block, no HMAC construction needed) under the cache key,
    cut to 128 bits by its digest size, on the interpreter's built-in `_blake2` (no `hashlib`: it loads OpenSSL).
    The same seals for the writer (`cairn.index.store`) and the reader. BLAKE2b is ~3.5x cheaper per byte than
    the built-in sha256 (callgrind: 14 vs 48 instructions a byte), and the hook hashes every postings record it
    reads: at 10,000 cards HMAC-SHA256 was a fifth of the hook's instructions. `slot` is a second keyed BLAKE2b
    (another personalisation, 64 bits): where a term or id sits in its table."""

    __slots__ = ("_mac", "_slot")

    def __init__(self, key: bytes) -> None:
        if len(key) > 64:  # BLAKE2b takes a key of up to 64 bytes (the cache key has 32)
            key = new_sha256(key).digest()
        self._mac = _blake2b(key=key, digest_size=SEAL_BYTES, person=_SEAL_PERSON)
        self._slot = _blake2b(key=key, digest_size=8, person=_SLOT_PERSON)

    def seal(self, data: bytes, *more: bytes) -> str:
        """The seal of `data` followed by each of `more` (the seal of their concatenation, without making it)."""
        mac = self._mac.copy()
        mac.update(data)
        for part in more:
            mac.update(part)
        return str(mac.hexdigest())

    def mac(self, data: "bytes | memoryview") -> bytes:
        """The seal of `data` as the file stores it (16 bytes)."""
        mac = self._mac.copy()
        mac.update(data)
        return bytes(mac.digest())

    def slot(self, data: bytes) -> int:
        """The keyed 64-bit hash placing `data` (a term or a card id, UTF-8) in its slot table."""
        mac = self._slot.copy()
        mac.update(data)
        return int.from_bytes(mac.digest(), "little")


def digest(data: bytes) -> str:
    """The sha256 (hex) of a part sealed by a digest inside another: a card's cold record (in its hot record) and
    the superseders part (in meta)."""
    return str(new_sha256(data).hexdigest())


_NO_SUPERSEDERS = digest(b"[]")  # the superseders part when no card supersedes another (`store.superseders_message`)


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _text(data: "bytes | memoryview") -> str:
    return str(data, "utf-8", "surrogatepass")


SEALED_CARD_COLUMNS = (
    "row, id, path, blob, name, summary, status, expires_on, scope, not_when, supersedes, len_name, len_summary, "
    "len_body, record_digest"
)


class IndexedCard(Record):
    """What the hot path knows of a card, without reading the card file or parsing YAML.

    lengths: token counts of (name with aliases, summary, body).
    superseded_by: ids of active cards whose `supersedes` names this one.
    blob: the git object id of the card file at the indexed commit (hex): what `serve.served_file` compares the
    working tree's copy with.
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
        "blob",
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
    blob: str

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
        blob: str = "",
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
        _set(self, "blob", blob)


class Postings(Record):
    """One term's postings: card rows (ascending), and per row six counts: the term's frequency in name, summary
    and body, then the card's token lengths of name, summary and body (so scoring never looks a card up).

    bound: per field (name, summary, body) a count n then n (frequency, length) pairs, the field's Pareto frontier
    (see the module docstring); `field_maxima` turns it into each field's highest length-normalised value.

    The reader gives `memoryview`s cast to the stored C types (no copy, and no `array` module: it imports
    `collections.abc`); `cairn.index.store.ArrayPostings` holds the same numbers in arrays, for the writer to edit.
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


class IndexReader:
    """A read-only view of one index file (its path a string or a `Path`), open until `close`."""

    def __init__(self, path: "str | os.PathLike[str]", key: bytes | None = None, *, unchecked: bool = False) -> None:
        """Open and check the header and the meta seal; `unchecked` skips the seal (for `cairn audit`, which
        compares every value itself and reports the seals as one of its findings)."""
        self.path = path
        self.on_damage: Callable[[], object] | None = None  # called once before a check fails (the hook re-indexes)
        self._superseding: list[list[str]] | None = None
        self._superseded: dict[str, tuple[str, ...]] | None = None
        self._order: Sequence[int] | None = None
        self._fd = -1
        fd, size = _open_index(os.fspath(path))
        self._fd = fd
        try:
            first = _pread(fd, _FIRST_READ, 0)
            layout = _layout(first, size)
            if isinstance(layout, str):
                if layout == "old":
                    raise _corrupt(f"the index at {path} has an old format; run `cairn index --rebuild`")
                if layout == "newer":  # a downgrade, or another install of Cairn beside this one
                    written = int.from_bytes(first[8:12], "little")
                    raise _corrupt(
                        f"the index at {path} was written by a newer Cairn (format {written}, this one reads "
                        f"{FORMAT_VERSION}); run `cairn index --rebuild`"
                    )
                raise _corrupt(f"the index at {path} is damaged ({layout}); run `cairn index` to rebuild it")
            (
                self._size,
                meta_len,
                self._problems_at,
                self._problems_len,
                self._superseders_at,
                self._superseders_len,
                self._term_slots_at,
                self._term_slots,
                self._term_mask,
                self._id_slots_at,
                self._id_slots,
                self._id_mask,
                self._cards_at,
                self._max_row,
                self._terms_at,
                self._terms_len,
                self._order_at,
            ) = layout
            self._problems_seal = first[_SEALS_AT + SEAL_BYTES : HEADER_SIZE]
            if key is None:
                key = index_key()
            if key is None:
                if os.path.isdir(index_key_file()):  # `cairn index` cannot replace a folder: say what to remove
                    raise self._damaged(f"a folder is in the place of the cache key {index_key_file()}: remove it")
                raise self._damaged(
                    f"the cache key {index_key_file()} is missing, damaged or not yours alone (another user owns it "
                    "or may read or write it), so its seals cannot be checked"
                )
            self._sealer = Sealer(key)
            self._meta_len = meta_len
            end = HEADER_SIZE + meta_len
            meta = first[HEADER_SIZE:end] if end <= len(first) else self._read(HEADER_SIZE, meta_len)
            seal = self._meta_seal = first[_SEALS_AT : _SEALS_AT + SEAL_BYTES]
            self._meta_sealed = self._sealer.mac(meta) == seal
            if not unchecked and not self._meta_sealed:
                raise self._damaged("its settings do not match their seal: altered, or written with another cache key")
            try:
                self.meta: dict[str, str] = dict(loads(_text(meta)))
            except (ValueError, TypeError):
                raise self._damaged("its settings do not parse") from None
            self.meta["seal"] = seal.hex()
            if self.meta.get("format") != FORMAT_VERSION:
                raise _corrupt(f"the index at {path} has an old format; run `cairn index --rebuild`")
        except BaseException:
            self._fd = -1
            os.close(fd)
            raise

    def meta_sealed(self) -> bool:
        return self._meta_sealed

    def _damaged(self, why: str) -> "IndexCorrupt":
        callback, self.on_damage = getattr(self, "on_damage", None), None
        if callback is not None:
            callback()
        return _corrupt(f"the index at {self.path} is damaged ({why}); run `cairn index` to rebuild it")

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        self.close()

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
    def n_cjk_cards(self) -> int:
        """The cards holding a CJK term (every card, for an index written before they were counted)."""
        n = self.n_cards
        return min(max(int(self.meta.get("n_cjk_cards", n)), 0), n)

    @property
    def avg_lengths(self) -> tuple[float, float, float]:
        try:  # sealed in meta, so only an edit re-sealed with the key makes it anything else
            a, b, c = loads(self.meta["avg_lengths"])
            return float(a), float(b), float(c)
        except (KeyError, ValueError, TypeError, RecursionError):
            raise self._damaged("its settings do not parse") from None

    @property
    def config(self) -> "dict[str, Any]":
        """The indexed commit's cairn.toml as `Config.to_dict()` (a fresh copy on every call)."""
        try:  # sealed in meta, so only an edit re-sealed with the key makes it anything else
            config = loads(self.meta["config"])
        except (KeyError, ValueError, RecursionError):
            raise self._damaged("its settings do not parse") from None
        if not isinstance(config, dict):
            raise self._damaged("its settings do not parse")
        return config

    def recall_settings(self) -> "RecallSettings":
        """The stored `[recall]` settings (`stored_settings`)."""
        return self._settings(stored_settings)

    def hook_settings(self) -> tuple[int, int]:
        """The stored `[hook]` settings (`hook_settings`): (max_context_chars, session_ttl_days)."""
        return self._settings(hook_settings)

    def _settings(self, read: "Callable[[dict[str, Any]], _T]") -> "_T":
        """What `read` makes of the stored config. `cairn index` stores the settings it validated, so settings it
        would not accept (an unknown one, a value of the wrong type: an edit re-sealed with the key) are damage."""
        try:
            return read(self.config)
        except Exception as exc:
            from cairn.hot.errors import StoredConfigInvalid  # only here: a hook whose settings hold never needs it

            if isinstance(exc, StoredConfigInvalid):
                raise self._damaged(f"its settings do not hold: {exc.why}") from None
            raise

    @property
    def sealer(self) -> Sealer:
        return self._sealer

    def postings(self, terms: "Iterable[str]") -> dict[str, Postings]:
        found: dict[str, Postings] = {}
        mac = self._sealer.mac
        for term in sorted(set(terms)):
            raw = _utf8(term)
            for at, length in self._probe(self._term_slots_at, self._term_slots, self._term_mask, raw):
                record = self._read(at, length)
                view = memoryview(record)
                head = view[SEAL_BYTES : SEAL_BYTES + TERM_HEAD].cast("I") if length >= 28 else None
                # The head's counts are in the machine's order too (`_layout` refused any other).
                if head is None or head[2] != len(raw) or record[28 : 28 + len(raw)] != raw:
                    continue  # another term with the same hash (or garbage, which a seal below would refuse)
                df, n_bound = head[0], head[1]
                start = 28 + len(raw) + (-(TERM_HEAD + len(raw)) % 4)
                if start + 16 * df + 2 * n_bound != length or mac(view[SEAL_BYTES:]) != record[:SEAL_BYTES]:
                    raise self._damaged("the postings of a term do not match their seal")
                rows_end = start + 4 * df
                stats_end = rows_end + 12 * df
                bound = view[stats_end:].cast("H")
                if not _bound_whole(bound):  # sealed, yet not the writer's: re-sealed with the key
                    raise self._damaged("the score bound of a term does not have the shape of one")
                found[term] = Postings(df, view[start:rows_end].cast("I"), view[rows_end:stats_end].cast("H"), bound)
                break
        return found

    def cards(self, rows: "Iterable[int]") -> dict[int, IndexedCard]:
        out: dict[int, IndexedCard] = {}
        missing = 0
        for row in sorted(set(rows)):
            values = self._card_values(row)
            if values is None:
                missing += 1
                continue
            try:
                out[row] = _indexed_card(values)
            except (ValueError, TypeError, RecursionError):  # sealed, yet not the writer's: re-sealed with the key
                raise self._damaged("a card's stored fields do not parse") from None
        if missing:
            raise self._damaged(f"{missing} card row(s) its postings name are missing")
        if out:
            superseded = self._superseded_by()
            if superseded:
                for row, card in out.items():
                    by = superseded.get(card.id)
                    if by:
                        out[row] = _replace_superseded(card, by)
        return out

    def _superseded_by(self) -> dict[str, tuple[str, ...]]:
        """Per card id, the active cards whose `supersedes` names it, in the superseders part's order: worked out
        once per reader. (Recall asks for cards many times a prompt, a chunk of the ranking at a time, each card of
        the phrase step alone; working it out on each call parsed every superseding card's list each time: with
        3,000 of them, 1.4 ms a call.)"""
        if self._superseded is None:
            superseded: dict[str, tuple[str, ...]] = {}
            for sup_id, sup_status, sup_list in self._superseders():
                if sup_status == "active":
                    for target in loads(sup_list):
                        superseded[target] = superseded.get(target, ()) + (sup_id,)
            self._superseded = superseded
        return self._superseded

    def superseded(self) -> dict[str, tuple[str, ...]]:
        """Per card id, the active cards whose `supersedes` names it (`cairn review` compares two commits')."""
        return dict(self._superseded_by())

    def card_by_id(self, card_id: str) -> IndexedCard | None:
        row = self._row_of(card_id)
        return None if row is None else self.cards([row])[row]

    def record(self, card_id: str) -> "dict[str, Any] | None":
        """The full parsed card (body included) and its provenance, as stored at index time (checked)."""
        row = self._row_of(card_id)
        if row is None:
            return None
        slot = self._card_slot(row)
        values = self._card_values(row, slot)
        assert slot is not None and values is not None  # `_row_of` read this row
        cold = self._read(slot[2], slot[3])
        if values[14] != digest(cold):
            raise self._damaged("the stored record of a card does not match its seal")
        try:
            record, provenance, _terms = loads(_text(cold))
        except (ValueError, TypeError):
            raise self._damaged("the stored record of a card does not parse") from None
        record["provenance"] = provenance
        return record  # type: ignore[no-any-return]

    def ids(self) -> list[str]:
        return [entry[0] for entry in self.entries()]

    def entries(self) -> list[tuple[str, str, str]]:
        """(id, path, blob) of every indexed card, by id."""
        out = []
        for values, _seal, _message, _cold in self.sealed_rows():
            if values is None:
                raise self._damaged("a card's stored fields do not parse")
            out.append((str(values[1]), str(values[2]), str(values[3])))
        return sorted(out)

    def sealed_rows(self) -> "Iterator[tuple[list[Any] | None, bytes, bytes, bytes]]":
        """Every card by row, seals not checked (for full checks): its `SEALED_CARD_COLUMNS` values (None when its
        message does not parse), its seal, its message (what the seal covers) and its cold record."""
        table = self._read(self._cards_at, CARD_SLOT * self._max_row)
        slots = [_card_slot_at(table, at) for at in range(0, len(table), CARD_SLOT)]
        hot = self._region([(s[0], s[1]) for s in slots if s[1]])
        cold = self._region([(s[2], s[3]) for s in slots if s[1]])
        for slot in slots:
            if not slot[1]:
                continue
            record = hot(slot[0], slot[1])
            message = record[SEAL_BYTES:]
            try:
                values = loads(_text(message))
            except (ValueError, TypeError, RecursionError):
                values = None
            if not isinstance(values, list) or len(values) != 15:
                values = None
            yield values, record[:SEAL_BYTES], message, cold(slot[2], slot[3])

    def term_rows(self) -> "Iterator[tuple[str, int, bytes, bytes, bytes, bytes]]":
        """Every term record in the order they are written (a full build writes them in term order; an update
        keeps that order and writes the terms it adds after the others), seals not checked (for full checks): term, df, postings, bound, seal
        and message (what the seal covers)."""
        for raw, df, data, at, start, end in self._term_records():
            try:
                term = _text(raw)
            except UnicodeDecodeError:
                raise self._damaged("a term's record does not have the shape of one") from None
            bound_at = start + 16 * df
            seal, message = data[at : at + SEAL_BYTES], data[at + SEAL_BYTES : end]
            yield term, df, data[start:bound_at], data[bound_at:end], seal, message

    def _term_records(self) -> "Iterator[tuple[bytes, int, bytes, int, int, int]]":
        """Every term record as (its term in UTF-8, df, the terms region, where the record starts in it, where its postings
        start, where it ends), nothing copied: they are written one after another, each at a multiple of 4 bytes
        (the region starts at one)."""
        data = self._read(self._terms_at, self._terms_len)
        at = 0
        while at < len(data):
            at += -at % 4
            found = _term_record_at(data, at)
            if found is None:
                raise self._damaged("a term's record does not have the shape of one")
            term, df, start, end = found
            yield term, df, data, at, start, end
            at = end

    def held_rows(self) -> set[int]:
        """The rows a card holds (from the card slots; nothing parsed, nothing checked)."""
        table = self._read(self._cards_at, CARD_SLOT * self._max_row)
        return {i // CARD_SLOT + 1 for i in range(0, len(table), CARD_SLOT) if table[i + 8 : i + 12] != b"\0\0\0\0"}

    def _region(self, places: "Sequence[tuple[int, int]]") -> "Callable[[int, int], bytes]":
        """A reader of the records at `places` (offset, length) from one read of the span they cover."""
        if not places:
            return self._read
        start = min(at for at, _ in places)
        end = max(at + length for at, length in places)
        data = self._read(start, end - start)
        return lambda at, length: data[at - start : at - start + length]

    def problems(self) -> list[tuple[str, int, str, str]]:
        data = self._read(self._problems_at, self._problems_len)
        if self._sealer.mac(data) != self._problems_seal:
            raise self._damaged("its list of cards left out does not match its seal")
        try:
            return [(str(p), int(n), str(r), str(m)) for p, n, r, m in loads(_text(data))]
        except (ValueError, TypeError):
            raise self._damaged("its list of cards left out does not parse") from None

    def stored_parts(self) -> tuple[bytes, bytes, bytes, bytes, bytes]:
        """Meta, the meta seal, the problems, the problems seal and the superseders, as the file holds them
        (nothing checked)."""
        return (
            self._read(HEADER_SIZE, self._meta_len),
            self._meta_seal,
            self._read(self._problems_at, self._problems_len),
            self._problems_seal,
            self._read(self._superseders_at, self._superseders_len),
        )

    def integrity_ok(self) -> bool:
        """Whether the file's structure holds (seals not checked): every card's records inside the file, every id
        slot naming a row there is, one for each card; every term record shaped as one and found where its term's
        hash leads, one slot for each."""
        try:
            rows = set()
            slots = self._read(self._cards_at, CARD_SLOT * self._max_row)
            for i in range(self._max_row):
                hot_at, hot_len, cold_at, cold_len = _card_slot_at(slots, CARD_SLOT * i)
                if hot_len:
                    if hot_at + hot_len > self._size or cold_at + cold_len > self._size:
                        return False
                    rows.add(i + 1)
            id_table = self._read(self._id_slots_at, SLOT * self._id_slots)  # once, not once a slot
            ids = [_slot_at(id_table, at) for at in range(0, len(id_table), SLOT)]
            named = [value for _hash, value, length in ids if length]
            if len(named) != len(rows) or not rows.issuperset(named):
                return False
            table = self._read(self._term_slots_at, SLOT * self._term_slots)
            used = [_slot_at(table, at) for at in range(0, len(table), SLOT)]
            place = {value: (i, length, h) for i, (h, value, length) in enumerate(used) if length}
            empty_before = [0]  # empty_before[i]: the empty slots among the first i
            for _hash, _value, length in used:
                empty_before.append(empty_before[-1] + (not length))
            found = 0
            for raw, _df, _data, at, _start, end in self._term_records():
                h = self._sealer.slot(raw)
                i, length, stored = place.get(self._terms_at + at, (-1, 0, 0))
                start = h & self._term_mask
                if length != end - at or stored != h or i < start or empty_before[i] != empty_before[start]:
                    return False  # not on its term's chain: a lookup would not find it
                found += 1
            return found == len(place)
        except Exception:  # a read outside the file, a record of no known shape
            return False

    def _find_term(self, term: str) -> tuple[int, int] | None:
        """Where `term`'s record is (offset, length), found through its slot as `postings` finds it; None when the
        index does not hold it (its seal is not checked)."""
        raw = _utf8(term)
        for at, length in self._probe(self._term_slots_at, self._term_slots, self._term_mask, raw):
            found = _term_record_at(self._read(at, length), 0)
            if found is not None and found[0] == raw and found[3] == length:
                return at, length
        return None

    def _probe(self, table_at: int, n_slots: int, mask: int, raw: bytes) -> "Iterator[tuple[int, int]]":
        """(value, length) of every slot on `raw`'s chain that holds `raw`'s hash, in chain order."""
        h = self._sealer.slot(raw)
        i = h & mask
        while i < n_slots:
            n = min(_PROBE, n_slots - i)
            chunk = self._read(table_at + SLOT * i, SLOT * n)
            for j in range(0, SLOT * n, SLOT):
                length = int.from_bytes(chunk[j + 16 : j + 24], "little")
                if not length:
                    return
                if int.from_bytes(chunk[j : j + 8], "little") == h:
                    yield int.from_bytes(chunk[j + 8 : j + 16], "little"), length
            i += n

    def _row_of(self, card_id: str) -> int | None:
        """The row of the card `card_id` (its sealed record checked), or None."""
        raw = _utf8(card_id)
        for row, _one in self._probe(self._id_slots_at, self._id_slots, self._id_mask, raw):
            values = self._card_values(row)
            if values is not None and values[1] == card_id:
                return row
        return None

    def _card_slot(self, row: int) -> tuple[int, int, int, int] | None:
        if not 0 < row <= self._max_row:
            return None
        slot = _card_slot_at(self._read(self._cards_at + CARD_SLOT * (row - 1), CARD_SLOT), 0)
        return slot if slot[1] else None

    def _card_values(self, row: int, slot: tuple[int, int, int, int] | None = None) -> "list[Any] | None":
        """A card's sealed values (`SEALED_CARD_COLUMNS`), its seal checked; None when no card holds the row."""
        if slot is None:
            slot = self._card_slot(row)
            if slot is None:
                return None
        hot = self._read(slot[0], slot[1])
        view = memoryview(hot)
        if self._sealer.mac(view[SEAL_BYTES:]) != hot[:SEAL_BYTES]:
            raise self._damaged("a card's stored fields do not match their seal")
        try:  # sealed, yet not what the writer writes: an edit re-sealed with the key (the hook re-indexes)
            values: list[Any] = loads(_text(view[SEAL_BYTES:]))
        except (ValueError, RecursionError):
            raise self._damaged("a card's stored fields do not parse") from None
        if type(values) is not list or len(values) != 15:
            raise self._damaged("a card's stored fields do not parse")
        if values[0] != row:
            raise self._damaged("a card's record is not the one its row names")
        return values

    def id_order(self) -> "Sequence[int]":
        """Per row from 1 (at `row - 1`), the place (from 1) of its card's id among the index's ids sorted; 0 for a
        row no card holds. Recall ranks cards that score exactly alike by it: rows follow the index's history (an
        update numbers the cards it adds after the others), ids only the commit, so every machine's index puts the
        same tied card first. Read once per reader (4 bytes a row), checked against the digest sealed in meta."""
        if self._order is None:
            data = self._read(self._order_at, 4 * self._max_row)
            if digest(data) != self.meta.get("id_order"):
                raise self._damaged("the order of its card ids is not the one it was written with")
            self._order = memoryview(data).cast("I")  # the machine's byte order, as postings (`_layout` checked it)
        return self._order

    def _superseders(self) -> list[list[str]]:
        """Every (id, status, supersedes) with a non-empty supersedes, checked against meta once per reader (the
        file is immutable while open)."""
        if self._superseding is None:
            if self.meta.get("superseders") == _NO_SUPERSEDERS:
                # Sealed in meta: no card supersedes another. A part saying otherwise is not one the writer wrote,
                # and leaving it unread serves what was sealed (one read less on every prompt).
                self._superseding = []
                return self._superseding
            data = self._read(self._superseders_at, self._superseders_len)
            if digest(data) != self.meta.get("superseders"):
                raise self._damaged("the cards that supersede others are not the ones it was written with")
            self._superseding = loads(_text(data))
        return self._superseding

    def _read(self, at: int, length: int) -> bytes:
        """`length` bytes at `at`; a part outside the file (a slot's offset or length edited: checked before
        `pread` allocates room for it) or a short read (a file cut while open) fails the check."""
        if at < 0 or length < 0 or at + length > self._size:
            raise self._damaged(f"{length} bytes at {at}, outside a file of {self._size} bytes")
        data = _pread(self._fd, length, at)
        if len(data) != length:
            raise self._damaged(f"{length} bytes at {at}, where the file holds {len(data)}: truncated")
        return data


def _open_index(path: str) -> tuple[int, int]:
    """An open descriptor of a regular file at `path` and its size; `IndexMissing` for no file (or no regular
    one)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO in its place must not block
    except (FileNotFoundError, NotADirectoryError):
        raise _missing(f"no index at {path}; run `cairn index`") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise _missing(f"no index at {path}; run `cairn index`")
    return fd, info.st_size


def _layout(first: bytes, size: int) -> "tuple[int, ...] | str":
    """The header's fields, or what is wrong with it (`old` or `newer` for an index of another format): Cairn's magic, this
    format and byte order, the size the header gives (a truncated file fails here), and every part inside it."""
    if len(first) < HEADER_SIZE or first[:8] != MAGIC:
        return "old" if first[:16] == _SQLITE_MAGIC else "not a Cairn index"
    written = int.from_bytes(first[8:12], "little")
    if written != int(FORMAT_VERSION):
        return "newer" if written > int(FORMAT_VERSION) else "old"
    if int.from_bytes(first[12:16], "little") != BYTE_ORDER:
        return "written on a machine of another byte order"
    fields = tuple(int.from_bytes(first[at : at + 8], "little") for at in range(16, _SEALS_AT, 8))
    (
        stated,
        meta_len,
        problems_at,
        problems_len,
        superseders_at,
        superseders_len,
        term_slots_at,
        term_slots,
        term_mask,
        id_slots_at,
        id_slots,
        id_mask,
        cards_at,
        max_row,
        terms_at,
        terms_len,
        order_at,
    ) = fields
    if size != stated:
        return f"{size} bytes where its header says {stated}" + (": truncated" if size < stated else "")
    parts = (
        (HEADER_SIZE, meta_len),
        (problems_at, problems_len),
        (superseders_at, superseders_len),
        (term_slots_at, SLOT * term_slots),
        (id_slots_at, SLOT * id_slots),
        (cards_at, CARD_SLOT * max_row),
        (terms_at, terms_len),
        (order_at, 4 * max_row),
    )
    if any(at < HEADER_SIZE or at + length > size for at, length in parts[1:]) or HEADER_SIZE + meta_len > size:
        return "a part of it lies outside the file"
    if (
        terms_at % 4
        or order_at % 4
        or term_mask & (term_mask + 1)
        or term_mask >= term_slots
        or id_mask & (id_mask + 1)
    ):
        return "its tables do not have the shape of one"
    if id_mask >= id_slots:
        return "its slot tables do not have the shape of one"
    return fields


def _slot_at(table: bytes, at: int) -> tuple[int, int, int]:
    """A slot's hash, value and length."""
    return (
        int.from_bytes(table[at : at + 8], "little"),
        int.from_bytes(table[at + 8 : at + 16], "little"),
        int.from_bytes(table[at + 16 : at + 24], "little"),
    )


def _card_slot_at(table: bytes, at: int) -> tuple[int, int, int, int]:
    return (
        int.from_bytes(table[at : at + 8], "little"),
        int.from_bytes(table[at + 8 : at + 12], "little"),
        int.from_bytes(table[at + 12 : at + 20], "little"),
        int.from_bytes(table[at + 20 : at + 24], "little"),
    )


def _bound_whole(bound: "Sequence[int]") -> bool:
    """Whether a term's score bound is three fields' counts, each followed by its pairs, and nothing more."""
    at = 0
    for _ in range(3):
        if at >= len(bound):
            return False
        at += 1 + 2 * bound[at]
    return at == len(bound)


def _term_record(record: bytes) -> "tuple[str, int, bytes, bytes] | None":
    """A term record's term, df, postings and bound, or None when it does not have the shape of one (its seal is
    not checked)."""
    found = _term_record_at(record, 0)
    if found is None or found[3] != len(record):
        return None
    raw, df, start, end = found
    try:
        term = _text(raw)
    except UnicodeDecodeError:
        return None
    return term, df, record[start : start + 16 * df], record[start + 16 * df : end]


def _term_record_at(data: bytes, at: int) -> "tuple[bytes, int, int, int] | None":
    """The term record at `at` in `data`: its term (UTF-8), df, where its postings start and where it ends; None
    when there is no record of that shape there."""
    head_at = at + SEAL_BYTES
    if head_at + TERM_HEAD > len(data):
        return None
    df, n_bound, term_len = memoryview(data)[head_at : head_at + TERM_HEAD].cast("I")
    start = head_at + TERM_HEAD + term_len + (-(TERM_HEAD + term_len) % 4)
    end = start + 16 * df + 2 * n_bound
    if end > len(data):
        return None
    return data[head_at + TERM_HEAD : head_at + TERM_HEAD + term_len], df, start, end


def _missing(message: str) -> "IndexMissing":
    from cairn.hot.errors import IndexMissing  # imported when raised: a hook that reads its index never needs it

    return IndexMissing(message)


def _corrupt(message: str) -> "IndexCorrupt":
    from cairn.hot.errors import IndexCorrupt

    return IndexCorrupt(message)


def _indexed_card(values: "Sequence[Any]") -> IndexedCard:
    row, card_id, path, blob, name, summary, status, expires_on, scope, not_when, supersedes, len_n, len_s, len_b = (
        values[:14]
    )
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
        blob=blob,
    )


def _strings(text: str) -> tuple[str, ...]:
    return () if text == "[]" else tuple(loads(text))  # most cards have no scope, not_when or supersedes


def _replace_superseded(card: IndexedCard, by: tuple[str, ...]) -> IndexedCard:
    return card.replace(superseded_by=by)
