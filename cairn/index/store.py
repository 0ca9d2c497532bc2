"""Writing the index file: cards turned into term postings and score bounds, laid out in Cairn's index format
(`cairn.hot.index` describes it), written atomically.

Writers build a new file beside the index and `os.replace` it, under a lock, so a reader
(`cairn.hot.index.IndexReader`) always sees one whole index and two writers leave one valid file. Every record is
sealed with the cache key as it is written (see `cairn.hot.index`); an update from a base file copies the records
it does not change as they are (sealed bytes), re-encodes the terms the changed cards touch, and lays the file out
anew. `verify` checks a whole file. Files are 0600 in 0700 folders.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import itertools
import json
import os
import shutil
import stat
import struct
import sys
import tempfile
import time
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from cairn.hot import NotRegularFile, dumps, open_private, paths, read_regular
from cairn.hot.errors import CairnError, IndexCorrupt
from cairn.hot.index import (
    BYTE_ORDER,
    CARD_SLOT,
    FORMAT_VERSION,
    HEADER_FIELDS,
    HEADER_SIZE,
    MAGIC,
    SEAL_BYTES,
    SLOT,
    TERM_HEAD,
    IndexReader,
    Postings,
    Sealer,
    _term_record,
    digest,
)
from cairn.hot.tokens import is_cjk

_U16 = 0xFFFF  # counts and lengths are stored as unsigned 16-bit values


# -- what the seals cover: the records as the file holds them (the reader checks seals over the bytes as stored) --


def meta_message(meta: dict[str, str]) -> bytes:
    """What the meta seal covers, and the meta part of the file: every key and value but the seal itself."""
    return _utf8(dumps(sorted([k, v] for k, v in meta.items() if k != "seal"), ensure_ascii=False))


def card_message(values: Sequence[Any]) -> bytes:
    """What a card's seal covers, as its hot record holds it: `SEALED_CARD_COLUMNS`' values, in that order."""
    return _utf8(dumps(list(values), ensure_ascii=False))


def term_message(term: str, df: int, postings: bytes, bound: bytes) -> bytes:
    """What a term's seal covers, as its record holds it after the seal: df, the bound's length in 16-bit values
    and the term's length in bytes (u32 each, in the machine's order: the reader casts them as it casts the
    postings), the term, zero bytes to a multiple of 4, then postings and bound."""
    raw = _utf8(term)
    order = sys.byteorder
    head = df.to_bytes(4, order) + (len(bound) // 2).to_bytes(4, order) + len(raw).to_bytes(4, order)
    return head + raw + b"\0" * (-(TERM_HEAD + len(raw)) % 4) + postings + bound


def cold_message(record: dict[str, Any], provenance: dict[str, Any] | None, terms: Sequence[str]) -> bytes:
    """A card's cold record: its full parsed record, its provenance and its terms, as one JSON list; its `digest`
    is sealed in the card's hot record."""
    return _utf8(dumps([record, provenance, list(terms)], ensure_ascii=False))


def superseders_message(rows: Iterable[Sequence[Any]]) -> bytes:
    """Every (id, status, supersedes) with a non-empty supersedes, sorted: the file's superseders part."""
    return _utf8(dumps(sorted([str(v) for v in r] for r in rows), ensure_ascii=False))


def superseders_digest(rows: Iterable[Sequence[Any]]) -> str:
    """The `digest` of `superseders_message(rows)`, kept in meta (and so sealed)."""
    return digest(superseders_message(rows))


class ArrayPostings(Postings):
    """Postings in arrays (`_unpack`): what the writer edits when it updates a term. (No `__slots__` of its own:
    `Record` takes the fields from the `__slots__` it inherits.)"""

    rows: array[int]
    stats: array[int]
    bound: array[int]


def _unpack(df: int, blob: bytes, bound_blob: bytes = b"") -> ArrayPostings:
    """A term's postings (`df` card rows, then their counts) and bound in arrays."""
    rows = array("I")
    rows.frombytes(blob[: 4 * df])
    stats = array("H")
    stats.frombytes(blob[4 * df :])
    bound = array("H")
    bound.frombytes(bound_blob)
    return ArrayPostings(df, rows, stats, bound)


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


LOCK_WAIT_SECONDS = 600.0  # a full index of 100,000 cards takes minutes; a holder past this is stuck, not busy
LOCK_NOTICE_SECONDS = (
    2.0  # a wait longer than this says what it waits for (a short one, two writers at once, is silent)
)
# A command that only reads an index behind its branch waits this long for another writer (an update after a commit
# ends within it), then reads the older index (`build._lock_or_behind`): a `cairn index --rebuild` of thousands of
# cards is not waited out. No longer than the notice: it reads rather than says it waits.
READ_WAIT_SECONDS = LOCK_NOTICE_SECONDS


class IndexBusy(CairnError):
    """Another process has held an index's lock for longer than any index takes."""


@contextlib.contextmanager
def writer_lock(index_file: Path, wait: float | None = None) -> Iterator[None]:
    """Serialise writers of one index (readers never wait: they read whole files). wait: see `file_lock`.

    `cairn index` holds it while it checks the index is current (`build._build_index`; a command that only reads
    takes it when the index is not: `build._current_unlocked`), so a holder may only be checking: the wait says
    so, not that it writes."""
    paths.private_folder(str(index_file.parent))
    doing = f"checking or updating the index at {index_file}"
    with file_lock(index_file.with_name(index_file.name + ".lock"), doing, wait):
        _remove_stale_temps(index_file)
        yield


def _temp_prefix(target: Path) -> str:
    """How the temp files of `target` start (`.index.cairn.`, `.index.cairn.seal.`): each index file in a folder
    has its own, so a writer holding one index's lock knows which temp files are its own."""
    return f".{target.name}."


_LEGACY_TEMP = ".index-"  # the temp files of any index in the folder, as Cairn named them before


def _remove_stale_temps(index_file: Path) -> None:
    """The temp files a writer of `index_file` killed mid-write left (under the writer lock, no other writer of it
    runs): without this each stayed for good, as big as the index."""
    prefix = _temp_prefix(index_file)
    try:
        names = os.listdir(index_file.parent)
    except OSError:
        return
    for name in names:
        if not name.endswith(".tmp"):
            continue
        path = index_file.parent / name
        try:
            if name.startswith(prefix):
                path.unlink()
            elif name.startswith(_LEGACY_TEMP) and not 0 <= time.time() - path.lstat().st_mtime <= LOCK_WAIT_SECONDS:
                path.unlink()  # another index's writer may hold it, but not for this long (nor from the future)
        except OSError:
            pass


@contextlib.contextmanager
def file_lock(lock_path: Path, doing: str, wait: float | None = None, *, mark: bool = True) -> Iterator[None]:
    """An exclusive `flock` on the lock file `lock_path` (0600; made if missing; never through a symlink, never a
    FIFO or folder in its place), with the holder's pid written in it (unless not `mark`: the file's time then
    still says when it was last taken). A lock whose holder ended is free at once (the kernel lets go of it); a
    holder that keeps it over `wait` seconds (default `LOCK_WAIT_SECONDS`) is named in an `IndexBusy`. A lock file
    removed by its holder (`index.refcache`) while this waited is opened again: its lock no longer serialises."""
    started = time.monotonic()
    deadline = started + (LOCK_WAIT_SECONDS if wait is None else wait)
    told = False
    while True:
        try:
            fd = open_private(str(lock_path), os.O_RDWR | os.O_CREAT)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO) or isinstance(exc, NotRegularFile):
                raise CairnError(
                    f"{lock_path} is not a regular file (a lock file of Cairn's); remove it, then run again"
                ) from None
            raise
        with os.fdopen(fd, "r+b") as handle:
            paths.private_file(str(lock_path))
            while True:
                try:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    now = time.monotonic()
                    if now > deadline:
                        raise IndexBusy(_busy_message(handle, doing, wait)) from None
                    if not told and now - started > LOCK_NOTICE_SECONDS:
                        told = True  # else a holder stopped with Ctrl-Z kept this one silent for up to 10 minutes
                        _tell_waiting(handle, doing)
                    time.sleep(0.05)
            if not _is_file_at(handle.fileno(), lock_path):
                continue  # removed (or replaced) while this waited: lock the file at that path now
            if mark:
                try:  # the holder's pid, for `_busy_message` only: a full disk or a size limit does not stop the lock
                    # In one write of a fixed width over the last holder's: emptied first, a waiter that read the
                    # file in between named no pid ("find it with `ps`").
                    pid = str(os.getpid()).ljust(_PID_WIDTH).encode("ascii")
                    os.pwrite(handle.fileno(), pid, 0)  # unbuffered: nothing to flush
                    os.ftruncate(handle.fileno(), _PID_WIDTH)
                except OSError:
                    pass
            yield
            return


def _is_file_at(fd: int, path: Path) -> bool:
    """Whether the open file `fd` is still the one at `path`."""
    try:
        held, named = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino)


_PID_WIDTH = 16  # a lock file holds its holder's pid, padded with spaces to this width


def _holder(handle: IO[bytes]) -> tuple[str, str]:
    """Who holds the lock (` (pid N)`, or nothing when it wrote no pid) and how to stop it."""
    handle.seek(0)
    pid = handle.read(_PID_WIDTH).decode("ascii", "replace").strip()
    return (f" (pid {pid})", f"`kill {pid}`") if pid.isdigit() else ("", "find it with `ps`")


def _tell_waiting(handle: IO[bytes], doing: str) -> None:
    who, stop = _holder(handle)
    own = who == f" (pid {os.getpid()})"  # another thread of this process (the MCP server's requests): not to kill
    try:
        sys.stderr.write(
            f"Waiting for another request of this process, which is {doing}.\n"
            if own
            else f"Waiting for another Cairn process{who}, which is {doing}; stop it if it is stuck ({stop}), or "
            "press Ctrl-C to stop this one.\n"
        )
        sys.stderr.flush()
    except (OSError, ValueError):  # no stderr to tell (a closed one): wait all the same
        pass


def _busy_message(handle: IO[bytes], doing: str, waited: float | None) -> str:
    who, stop = _holder(handle)
    wait = f"{LOCK_WAIT_SECONDS if waited is None else waited:g} s"
    return (
        f"another Cairn process{who} is {doing} and has held its lock for over {wait}; wait for it, or stop it if it "
        f"is stuck ({stop}), then run again"
    )


# A card's record as `Parts` holds it: made by this writer (bytes), or a view into the base file's (`_stored_parts`).
Record = bytes | memoryview


@dataclass(slots=True)
class Parts:
    """Everything an index file holds, each record as the file stores it (sealed): what `write_parts` lays out.

    meta: `meta_message` of the settings; problems: the cards left out (JSON); superseders:
    `superseders_message`; terms: (the term's keyed hash (`Sealer.slot`), its record (seal + `term_message`)) in
    the order they are written; cards: (row, the id's keyed hash, hot record (seal + `card_message`), cold record
    (`cold_message`)) by row; order: the id order part (`id_order`; its digest is in meta).
    """

    meta: bytes = b"[]"
    meta_seal: bytes = b"\0" * SEAL_BYTES
    problems: bytes = b"[]"
    problems_seal: bytes = b"\0" * SEAL_BYTES
    superseders: bytes = b"[]"
    terms: list[tuple[int, bytes]] = field(default_factory=list)
    cards: list[tuple[int, int, Record, Record]] = field(default_factory=list)
    order: bytes = b""


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
    removed = set(removed_ids) | {c.id for c in upserts}
    if base is None:
        parts, stored = Parts(), _Totals(0, [0, 0, 0], [])
        parts.order = id_order(parts.cards, _apply(parts, stored, sealer, upserts))
    else:
        with IndexReader(base) as reader:
            parts, where = _stored_parts(reader)
            stored = _remove(parts, reader, removed)
            added = _apply(parts, stored, sealer, upserts, reader, where)
            parts.order = id_order(parts.cards, added, reader.id_order())
    stored.order = digest(parts.order)
    ordered = sorted(problems, key=lambda p: (p[0], p[1]))
    parts.problems = _json_bytes([list(p) for p in ordered])
    parts.problems_seal = sealer.mac(parts.problems)
    parts.meta = meta_message(stored.meta(meta))
    parts.meta_seal = sealer.mac(parts.meta)
    replace_file(index_file, parts, sealer)


def replace_file(index_file: Path, parts: Parts, sealer: Sealer) -> None:
    """Lay `parts` out in a new file beside `index_file` and the seal of its bytes in another (`seal_path`), make
    both durable, then `os.replace` them in, the index first."""
    seal_file = seal_path(index_file)
    for target in (index_file, seal_file):
        _clear_place(target)
    temps: list[str] = []
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=_temp_prefix(index_file), suffix=".tmp", dir=index_file.parent)  # 0600
        temps.append(tmp_name)
        with os.fdopen(fd, "wb") as handle:
            whole = write_parts(handle, parts, sealer)
            handle.flush()
            os.fsync(handle.fileno())
        # The seal is written before either file is renamed into place: a disk that fills up (or a file size
        # limit) then leaves the previous index and its seal as they were, not a new index under the old seal.
        temps.append(_write_temp(seal_file, whole.encode("ascii")))
        os.replace(temps[0], index_file)
        os.replace(temps[1], seal_file)
    except BaseException:
        for tmp in temps:
            Path(tmp).unlink(missing_ok=True)
        raise


def _clear_place(target: Path) -> None:
    """Remove a folder in the place of an index file or its seal (in the cache's own folder, under the writer
    lock): `os.replace` cannot put a file there, so every `cairn index` failed on it. A symlink, a FIFO or any
    other file there is replaced as it is (never followed)."""
    try:
        if stat.S_ISDIR(os.lstat(target).st_mode):
            shutil.rmtree(target)
    except FileNotFoundError:
        pass


def write_parts(handle: IO[bytes], parts: Parts, sealer: Sealer) -> str:
    """Write the file `parts` make to `handle` (see `cairn.hot.index` for the layout); the seal of its bytes
    (`file_seal`)."""
    term_places, term_slots, term_mask = _place([h for h, _ in parts.terms])
    id_places, id_slots, id_mask = _place([card[1] for card in parts.cards])
    max_row = parts.cards[-1][0] if parts.cards else 0
    problems_at = HEADER_SIZE + len(parts.meta)
    superseders_at = problems_at + len(parts.problems)
    term_slots_at = _aligned(superseders_at + len(parts.superseders), 8)
    id_slots_at = term_slots_at + SLOT * term_slots
    cards_at = id_slots_at + SLOT * id_slots
    order_at = cards_at + CARD_SLOT * max_row  # a multiple of 8, as `cards_at`
    tables_end = order_at + len(parts.order)
    if len(parts.order) != 4 * max_row:
        raise ValueError(f"an id order of {len(parts.order)} bytes for {max_row} rows")

    chunks: list[Record] = []
    term_table = bytearray(SLOT * term_slots)
    at = terms_at = _aligned(tables_end, 4)
    for (h, record), place in zip(parts.terms, term_places, strict=True):
        pad = -at % 4  # postings are read in place as 32- and 16-bit values
        if pad:
            chunks.append(b"\0" * pad)
            at += pad
        struct.pack_into("<QQQ", term_table, SLOT * place, h, at, len(record))
        chunks.append(record)
        at += len(record)
    terms_len = at - terms_at
    id_table = bytearray(SLOT * id_slots)
    card_table = bytearray(CARD_SLOT * max_row)
    for (row, h, hot, _), place in zip(parts.cards, id_places, strict=True):
        struct.pack_into("<QQQ", id_table, SLOT * place, h, row, 1)
        struct.pack_into("<QI", card_table, CARD_SLOT * (row - 1), at, len(hot))
        chunks.append(hot)
        at += len(hot)
    for row, _, _, cold in parts.cards:
        struct.pack_into("<QI", card_table, CARD_SLOT * (row - 1) + 12, at, len(cold))
        chunks.append(cold)
        at += len(cold)

    fields = {
        "size": at,
        "meta_len": len(parts.meta),
        "problems_at": problems_at,
        "problems_len": len(parts.problems),
        "superseders_at": superseders_at,
        "superseders_len": len(parts.superseders),
        "term_slots_at": term_slots_at,
        "term_slots": term_slots,
        "term_mask": term_mask,
        "id_slots_at": id_slots_at,
        "id_slots": id_slots,
        "id_mask": id_mask,
        "cards_at": cards_at,
        "max_row": max_row,
        "terms_at": terms_at,
        "terms_len": terms_len,
        "order_at": order_at,
    }
    header = (
        MAGIC
        + struct.pack("<II", int(FORMAT_VERSION), BYTE_ORDER)
        + struct.pack(f"<{len(HEADER_FIELDS)}Q", *(fields[name] for name in HEADER_FIELDS))
        + parts.meta_seal
        + parts.problems_seal
    )
    assert len(header) == HEADER_SIZE
    gap = b"\0" * (term_slots_at - superseders_at - len(parts.superseders))
    start: list[bytes | bytearray] = [header, parts.meta, parts.problems, parts.superseders, gap]
    start += [term_table, id_table, card_table, parts.order, b"\0" * (terms_at - tables_end)]
    whole = hashlib.sha256()
    # One block at a time: `(first, *_blocks(chunks))` made every block before writing the first, a second copy
    # of the whole file in memory (243 MB more at 50,000 cards).
    for block in itertools.chain((b"".join(start),), _blocks(chunks)):
        handle.write(block)
        whole.update(block)
    return sealer.seal(whole.digest())


def _blocks(chunks: Sequence[Record], size: int = 1 << 22) -> Iterator[bytes]:
    """`chunks` joined into blocks of about `size` bytes (fewer writes and hash updates than one per record)."""
    block: list[Record] = []
    held = 0
    for chunk in chunks:
        block.append(chunk)
        held += len(chunk)
        if held >= size:
            yield b"".join(block)
            block, held = [], 0
    if block:
        yield b"".join(block)


def _place(hashes: Sequence[int]) -> tuple[list[int], int, int]:
    """Where each hash goes in a slot table at most half full (linear probing, no wrap-around: a chain may run
    past the nominal size, which the table then grows to hold); the table's size and mask."""
    nominal = 8
    while nominal < 2 * len(hashes):
        nominal *= 2
    mask = nominal - 1
    taken = bytearray(nominal)
    out = []
    for h in hashes:
        i = h & mask
        while i < len(taken) and taken[i]:
            i += 1
        if i == len(taken):
            taken.append(0)
        taken[i] = 1
        out.append(i)
    return out, len(taken), mask


def _aligned(n: int, to: int) -> int:
    return n + (-n % to)


def _json_bytes(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def read_parts(path: Path, *, unchecked: bool = False) -> Parts:
    """The parts of an index file as it holds them (its meta seal checked, unless `unchecked`)."""
    with IndexReader(path, unchecked=unchecked) as reader:
        return _stored_parts(reader)[0]


def _stored_parts(reader: IndexReader) -> tuple[Parts, dict[int, int]]:
    """The parts of an open index file as it holds them, records as they are: nothing parsed, so an update copies
    what it does not change without reading it; and where each term record is (file offset -> its place in
    `Parts.terms`).

    The cards' records are views into one read of the span they lie in, not copies of it: with a copy of each, an
    update held the base file's cards twice over (at 10,000 cards, a 52 MB file, it peaked at 144 MB, now 126 MB).
    A term's record is short (a view of it costs as much as a copy), so those are copied, and the region they
    were cut from let go before the cards are read."""
    parts = Parts(*reader.stored_parts())
    table = reader._read(reader._term_slots_at, SLOT * reader._term_slots)
    records = [slot for slot in struct.iter_unpack("<QQQ", table) if slot[2]]  # in slot order: any order will do
    region = reader._read(reader._terms_at, reader._terms_len)
    start = reader._terms_at
    parts.terms = [(h, region[at - start : at - start + length]) for h, at, length in records]
    del region
    where = {slot[1]: i for i, slot in enumerate(records)}
    ids = reader._read(reader._id_slots_at, SLOT * reader._id_slots)
    id_hash = {row: h for h, row, length in struct.iter_unpack("<QQQ", ids) if length}
    table = reader._read(reader._cards_at, CARD_SLOT * reader._max_row)
    slots = [(row, slot) for row, slot in enumerate(struct.iter_unpack("<QIQI", table), 1) if slot[1]]
    hot = _span(reader, [(slot[0], slot[1]) for _, slot in slots])
    cold = _span(reader, [(slot[2], slot[3]) for _, slot in slots])
    try:
        parts.cards = [(row, id_hash[row], hot(slot[0], slot[1]), cold(slot[2], slot[3])) for row, slot in slots]
    except KeyError:
        raise IndexCorrupt(f"the index at {reader.path} is damaged (a card has no id slot)") from None
    parts.order = reader._read(reader._order_at, 4 * reader._max_row)
    return parts, where


def _span(reader: IndexReader, places: Sequence[tuple[int, int]]) -> Callable[[int, int], memoryview]:
    """The records at `places` (offset, length), views into one read of the span they cover."""
    first = min((at for at, _ in places), default=0)
    data = memoryview(reader._read(first, max((at + n for at, n in places), default=first) - first))
    return lambda at, length: data[at - first : at - first + length]


def seal_path(index_file: Path | str) -> Path:
    """The side file holding the seal of the index file's bytes (checked by `verify`, not by the hook)."""
    return Path(f"{index_file}.seal")


def file_seal(path: Path | str, sealer: Sealer) -> str:
    """The seal of a whole file's bytes (`write_parts` gives it for the file it writes): any byte changed on
    disk, used or not, breaks it. The seal of their sha256 (OpenSSL's: twice BLAKE2b's speed here)."""
    whole = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 22), b""):
            whole.update(chunk)
    return sealer.seal(whole.digest())


def _write_temp(target: Path, data: bytes) -> str:
    """`data` in a new temp file (0600, durable) beside `target`, to be renamed into its place; its path."""
    fd, tmp_name = tempfile.mkstemp(prefix=_temp_prefix(target), suffix=".tmp", dir=target.parent)  # 0600
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return tmp_name


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


@dataclass(slots=True)
class _Totals:
    """What the stored settings say of every card (`meta`), kept up to date as cards are removed and added, so
    an update never reads the cards it keeps: their count, their token lengths summed per field, and every
    (id, status, supersedes) with a non-empty supersedes."""

    n: int
    lengths: list[int]
    superseders: list[list[str]]
    n_cjk: int = 0  # the cards holding a CJK term: what a CJK term's rarity is measured against
    order: str = ""  # the digest of the id order part
    stale: dict[str, set[int]] = field(default_factory=dict)  # the terms of removed cards: their rows

    def add(self, values: Sequence[Any], terms: Iterable[str]) -> None:
        self.n += 1
        self.n_cjk += has_cjk(terms)
        self.lengths = [total + int(values[11 + f]) for f, total in enumerate(self.lengths)]
        if values[10] != "[]":
            self.superseders.append([values[1], values[6], values[10]])

    def remove(self, values: Sequence[Any], terms: Sequence[str]) -> None:
        self.n -= 1
        self.n_cjk -= has_cjk(terms)
        self.lengths = [total - int(values[11 + f]) for f, total in enumerate(self.lengths)]
        self.superseders = [s for s in self.superseders if s[0] != values[1]]
        for term in terms:
            self.stale.setdefault(term, set()).add(int(values[0]))

    def meta(self, meta: dict[str, str]) -> dict[str, str]:
        """The settings as stored: `meta`, with the format, the card count and the count of cards holding CJK terms,
        the average and total token lengths and the digest of the superseding cards."""
        avg = [round(total / self.n, 4) if self.n else 0.0 for total in self.lengths]
        out = {k: v for k, v in meta.items() if k not in ("seal", "checksum")}
        out.update(
            format=FORMAT_VERSION,
            n_cards=str(self.n),
            n_cjk_cards=str(self.n_cjk),
            avg_lengths=json.dumps(avg),
            length_totals=json.dumps(self.lengths),
            superseders=superseders_digest(self.superseders),
            id_order=self.order,
        )
        return out


def has_cjk(terms: Iterable[str]) -> bool:
    """Whether a card's terms hold a CJK one (`cairn.hot.tokens.is_cjk`). A CJK term starts at U+3040 or above, so
    the greatest term (one comparison per term, in C) settles an English card; scanning every term with `is_cjk`
    added 2 s to a full index of 10,000 cards."""
    terms = list(terms)
    top = max(terms, default="")
    return top >= "\u3040" and (is_cjk(top) or any(is_cjk(term) for term in terms))


def _remove(parts: Parts, reader: IndexReader, removed: Iterable[str]) -> _Totals:
    """Take the cards `removed` names out of `parts` (the others are not read); the totals of the cards left."""
    try:
        lengths = [int(n) for n in json.loads(reader.meta["length_totals"])]
        totals = _Totals(int(reader.meta["n_cards"]), lengths, [list(s) for s in reader._superseders()])
        stored_cjk = reader.meta.get("n_cjk_cards")
        totals.n_cjk = (
            int(stored_cjk)
            if stored_cjk is not None
            else sum(has_cjk(json.loads(bytes(card[3]))[2]) for card in parts.cards)  # a base from before the count
        )
    except (KeyError, ValueError, TypeError):
        raise IndexCorrupt(f"the index at {reader.path} is damaged (its totals do not parse)") from None
    rows = {row for row in map(reader._row_of, removed) if row is not None}
    if rows:
        kept = []
        for card in parts.cards:
            if card[0] in rows:
                totals.remove(json.loads(bytes(card[2][SEAL_BYTES:])), json.loads(bytes(card[3]))[2])
            else:
                kept.append(card)
        parts.cards = kept
    return totals


def _apply(
    parts: Parts,
    totals: _Totals,
    sealer: Sealer,
    upserts: Sequence[CardTerms],
    reader: IndexReader | None = None,
    where: dict[int, int] | None = None,
) -> dict[int, str]:
    """Add the `upserts` to `parts` with their postings, and take the removed cards' postings (`totals.stale`)
    out of their terms; the records of the terms neither touches stay as they are. `reader` and `where`: the
    base file the parts come from (to find a touched term's record). The ids of the cards added, by row."""
    # The new postings per term, as the file stores them: rows (u32) and six counts a row (u16), 16 bytes a posting
    # where a tuple of seven ints took about 120 (a full index of 50,000 cards peaked at 1.26 GB with tuples).
    fresh: dict[str, tuple[array[int], array[int]]] = {}
    row = parts.cards[-1][0] if parts.cards else 0  # new rows follow the highest kept one
    new_ids: dict[int, str] = {}
    for card in upserts:
        row += 1
        new_ids[row] = card.id
        lengths, entries = card_postings(card)
        cold = cold_message(card.record, card.provenance, sorted(entries))
        sealed = [
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
            digest(cold),
        ]
        message = card_message(sealed)
        parts.cards.append((row, sealer.slot(_utf8(card.id)), sealer.mac(message) + message, cold))
        totals.add(sealed, entries)
        for term, counts in entries.items():
            held = fresh.get(term)
            if held is None:
                held = fresh[term] = (array("I"), array("H"))
            held[0].append(row)
            held[1].extend(counts)

    gone: set[int] = set()
    for term in sorted(set(totals.stale) | set(fresh)):
        found = reader._find_term(term) if reader is not None else None
        old, place = None, None
        if found is not None and where is not None:
            place = where[found[0]]
            parsed = _term_record(parts.terms[place][1])
            assert parsed is not None  # `_find_term` read it
            old = (parsed[1], parsed[2], parsed[3])
        drop, added = totals.stale.get(term, set()), fresh.pop(term, None)
        if old is None and not drop and added is not None:  # a new term (every term of a full build): as it is
            rows, stats = added
            bound = _frontier(stats)
        else:
            rows, stats, bound = _updated_postings(old, drop, _postings_of(added))
        if rows:
            message = term_message(term, len(rows), _pack(rows, stats), bound)
            entry = (sealer.slot(_utf8(term)), sealer.mac(message) + message)
            if place is None:
                parts.terms.append(entry)
            else:
                parts.terms[place] = entry
        elif place is not None:
            gone.add(place)
    if gone:
        parts.terms = [entry for i, entry in enumerate(parts.terms) if i not in gone]
    parts.superseders = superseders_message(totals.superseders)
    return new_ids


def id_order(
    cards: Sequence[tuple[int, int, Record, Record]], added: dict[int, str], kept_order: Sequence[int] = ()
) -> bytes:
    """The id order part of an index holding `cards` (`Parts.cards`): per row from 1 to the highest, the place (from
    1) of its card's id among all the ids sorted, 0 for a row no card holds (`IndexReader.id_order`).

    added: the ids of the cards this write adds, by row. kept_order: the base file's id order, in which the cards
    kept from it stay among themselves; each added card is placed among them by bisection, so an update reads the
    ids of a few kept cards (their hot records), not of every one."""
    max_row = cards[-1][0] if cards else 0
    hot = {row: record for row, _, record, _ in cards if row not in added}
    kept = sorted(hot, key=lambda row: kept_order[row - 1])
    ids: dict[int, str] = {}

    def id_of(row: int) -> str:
        found = ids.get(row)
        if found is None:
            found = ids[row] = str(json.loads(bytes(hot[row][SEAL_BYTES:]))[1])
        return found

    ordered: list[int] = []
    lo = 0
    for row, card_id in sorted(added.items(), key=lambda item: item[1]):
        at = bisect_left(kept, card_id, lo, key=id_of)
        ordered += kept[lo:at]
        ordered.append(row)
        lo = at
    ordered += kept[lo:]
    order = array("I", bytes(4 * max_row))
    for place, row in enumerate(ordered, 1):
        order[row - 1] = place
    return order.tobytes()


def _postings_of(held: tuple[array[int], array[int]] | None) -> list[tuple[int, ...]]:
    """The postings `_apply` holds for a term in arrays, as (row, six counts) tuples."""
    if held is None:
        return []
    rows, stats = held
    return [(row, *stats[6 * i : 6 * i + 6]) for i, row in enumerate(rows)]


def verify(reader: IndexReader, row_seals: bool = True) -> list[str]:
    """Every check of a whole index file, cold (it reads everything): its structure (`integrity_ok`), the seal
    of every card and term record and the digest of each card's cold record, the list of cards left out, every
    posting naming an existing card, the card count and the superseding cards as meta has them, the id order
    (sealed in meta; with `row_seals`, re-derived from the cards' ids), and the seal of
    the file's bytes (`seal_path`). An empty list: the file is as its writer (with this cache's key) left it.
    Failures are said in words, one per kind (at most the first few records).

    row_seals=False: when the file's seal holds, the structure and the record seals are not checked again (the
    bytes are the ones the writer wrote, under the same key), the counts and rows are (they also catch what
    anything holding the key re-sealed); the indexer asks so before reusing a file."""
    problems: list[str] = []
    sealer = reader.sealer
    path = os.fspath(reader.path)
    try:  # never waits on a FIFO in its place, never reads more than a seal
        stored = read_regular(os.fspath(seal_path(path)), 256).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        stored = ""
    if stored != file_seal(path, sealer):
        problems.append("the file's bytes are not the ones its writer sealed: changed on disk, or not Cairn's")
        row_seals = True
    try:
        if row_seals and not reader.integrity_ok():
            problems.append("its structure does not hold: a record lies outside the file or off its slot")
        rows = reader.held_rows()
        bad_cards: list[str] = []
        ids: dict[int, str] = {}
        for values, seal, message, cold in reader.sealed_rows() if row_seals else ():
            if values is not None:
                ids[int(values[0])] = str(values[1])
            if values is None:
                bad_cards.append("a card's stored fields do not parse")
            elif seal != sealer.mac(message):
                bad_cards.append(f"{values[1]!r}: its fields do not match their seal")
            elif values[14] != digest(cold):
                bad_cards.append(f"{values[1]!r}: its stored record, terms or provenance do not match their seal")
        problems.extend(f"card {p}" for p in bad_cards[:10])
        if str(len(rows)) != reader.meta.get("n_cards"):
            problems.append(f"it holds {len(rows)} card row(s) where its settings say {reader.meta.get('n_cards')}")
        bad_terms: list[str] = []
        named = array("I")  # every row a posting names
        for raw, df, data, at, start, end in reader._term_records():
            if row_seals and data[at : at + SEAL_BYTES] != sealer.mac(memoryview(data)[at + SEAL_BYTES : end]):
                bad_terms.append(f"term {raw.decode('utf-8', 'replace')!r}: its postings do not match their seal")
                continue
            named.frombytes(memoryview(data)[start : start + 4 * df])  # the row ids (then the stats, see _pack)
        problems.extend(bad_terms[:10])
        dangling = 0 if rows.issuperset(named) else sum(1 for row in named if row not in rows)
        if dangling:
            problems.append(f"{dangling} posting(s) name card rows that are not there (a row was deleted)")
        reader.problems()
        reader._superseding = None  # checked afresh
        reader._superseders()
        reader._order = None
        order = reader.id_order()
        places = sorted(order[row - 1] for row in rows)
        if places != list(range(1, len(rows) + 1)) or sum(1 for place in order if place) != len(rows):
            problems.append("its id order does not place each card once")
        elif (
            ids
            and len(ids) == len(rows)
            and sorted(rows, key=ids.__getitem__) != sorted(rows, key=lambda r: order[r - 1])
        ):
            problems.append("its id order is not the order of its cards' ids")
    except IndexCorrupt as exc:
        problems.append(str(exc))
    except (KeyError, ValueError, TypeError, IndexError) as exc:
        problems.append(f"a record does not have the shape of an index record ({type(exc).__name__})")
    return problems


def checksum_holds(reader: IndexReader, row_seals: bool = True) -> bool:
    """Whether the whole file passes `verify` (the name is kept for the indexer, which asks before reusing a file)."""
    return not verify(reader, row_seals)
