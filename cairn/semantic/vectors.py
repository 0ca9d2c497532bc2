"""Card vectors: computed at index time and stored in a side file next to the index (`index.cairn.vec`).

The side file belongs to one index: its header names the index's commit and key (its seal), and the warm encoder
(`cairn.semantic.daemon`) uses it only while they match what the index holds. `refresh` brings it up to date after
`cairn index`: cards whose blob is unchanged keep their vectors, the others are encoded; with `[recall] semantic =
false` (or without the extra) it removes the file, so the hook serves lexically. `CAIRN_SEMANTIC=0` switches the
channel off for the processes that have it (the hook checks it too), not for the vault: a command run with it leaves
the file as it is (the warm encoder ignores it while it names an older index), and the next index without it
encodes only the cards that changed.

Format: `MAGIC`, an 8-byte little-endian header length, the header (JSON: model, dim, commit, index_key, ids, blobs,
offsets, seal), zero padding to a multiple of 64 bytes, then the passages' vectors as little-endian float16 rows (card
i owns rows offsets[i] to offsets[i+1]). Written to a temporary file and renamed into place. `seal`: the header's
other fields and the vectors sealed under the cache key, as the index's rows are (`cairn.hot.index.Sealer`);
`load` refuses a file whose seal does not hold (the warm encoder reads each file once, so it checks every byte;
the hook never reads this file).
"""

from __future__ import annotations

import json
import os
import stat
import struct
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

from cairn.atomic import disk_fix
from cairn.hot import (
    CHILD_FLAGS,
    CLEAN_PATH,
    child_env,
    make_index_key,
    open_log,
    open_private,
    open_regular,
    private_folder,
)
from cairn.hot import index_key as hot_index_key
from cairn.hot.index import IndexReader, Sealer
from cairn.hot.semantic import LOG_NAME, MAX_LOG_BYTES, index_key
from cairn.semantic import encoder as enc

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

MAGIC = b"CAIRNVEC1\n"
SUFFIX = ".vec"
MAX_HEADER_BYTES = 256 * 1024 * 1024
_ALIGN = 64


class Outcome(NamedTuple):
    """What `refresh` (or `refresh_after_index`) did to an index's card vectors. status: `off`, `kept`,
    `unchanged`, `encoded`, `background` or `failed`; detail: for `encoded` and `background` the number of cards
    encoded (now, or by a detached process), for `failed` why, else "". Its text is `cairn index --json`'s
    "vectors" and the semantic log's: `encoded 3`, `failed: OSError: ...`."""

    status: str
    detail: str = ""

    def __str__(self) -> str:
        if self.status == "failed":
            return f"failed: {self.detail}"
        return f"{self.status} {self.detail}" if self.detail else self.status


class VectorFile:
    """A side file read whole: its header and its vectors (float32, one row per passage)."""

    def __init__(self, header: dict[str, Any], matrix: npt.NDArray[np.float32]) -> None:
        self.header = header
        self.matrix = matrix
        self.ids: list[str] = header["ids"]
        self.blobs: list[str] = header["blobs"]
        self.offsets: list[int] = header["offsets"]
        self._one_each: bool | None = None  # every card has exactly one passage (set on first use)
        self._has: Any = None
        self._starts: Any = None

    def rows_of(self, i: int) -> npt.NDArray[np.float32]:
        return self.matrix[self.offsets[i] : self.offsets[i + 1]]

    def best_of_passages(self, per_passage: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Each card's best value over its passages (-1 for a card without any), from one value per passage (the
        last axis: one prompt's values, or a prompts x passages matrix)."""
        import numpy as np

        if self._one_each is None:
            starts = np.asarray(self.offsets[:-1])
            self._has = np.asarray(self.offsets[1:]) > starts
            self._starts = starts[self._has]
            self._one_each = len(self.offsets) - 1 == self.offsets[-1] and bool(self._has.all())
        if self._one_each:
            return per_passage.astype(np.float32, copy=False)
        sims = np.full((*per_passage.shape[:-1], len(self.ids)), -1.0, dtype=np.float32)
        if len(self._starts) and per_passage.size:
            sims[..., self._has] = np.maximum.reduceat(per_passage, self._starts, axis=-1)
        return sims


class OtherModel(ValueError):
    """The side file holds another encoder's vectors (an older Cairn's, or the numpy engine's where onnxruntime was
    not installed): sound, but not comparable with this encoder's prompts."""


def vectors_path(index_file: str | os.PathLike[str]) -> Path:
    """The side file of an index file (`cairn.hot.semantic.vectors_file` gives the same path as a string)."""
    return Path(os.fspath(index_file) + SUFFIX)


def enabled(config: dict[str, Any]) -> bool:
    """`[recall] semantic` of an index's stored config (default on), unless `CAIRN_SEMANTIC=0` switches it off."""
    return not off_here() and configured(config)


def off_here(environ: Mapping[str, str] | None = None) -> bool:
    """Whether `CAIRN_SEMANTIC=0` switches the channel off in this process (and the processes it starts), or in
    `environ`."""
    from cairn.hot.semantic import switched_off

    return switched_off(os.environ if environ is None else environ)


def configured(config: dict[str, Any]) -> bool:
    """`[recall] semantic` of an index's stored config: on unless the vault says `false`."""
    section = config.get("recall")
    return not (isinstance(section, dict) and section.get("semantic") is False)


def read_header(path: Path) -> dict[str, Any] | None:
    """The header of a side file, or None when there is none or it is not one."""
    try:
        with _open_file(path) as handle:
            return _header(handle)
    except (OSError, ValueError):
        return None


def _open_file(path: Path) -> BinaryIO:
    """The side file opened for reading; OSError, at once, for a FIFO, a device or a folder in its place (a FIFO
    would keep `cairn index`, or the warm encoder, waiting for a writer forever)."""
    return os.fdopen(open_regular(path), "rb")


def _header(handle: Any) -> dict[str, Any]:
    if handle.read(len(MAGIC)) != MAGIC:
        raise ValueError("not a Cairn vector file")
    raw_size = handle.read(8)
    if len(raw_size) != 8:
        raise ValueError("vector file is truncated")
    (size,) = struct.unpack("<Q", raw_size)
    if size > MAX_HEADER_BYTES:
        raise ValueError("vector file header too large")
    try:
        header = json.loads(handle.read(size).decode("utf-8"))
    except RecursionError:  # nested past the parser: as damaged as any header that does not parse
        raise ValueError("vector file header is nested too deeply") from None
    if not isinstance(header, dict):
        raise ValueError("vector file header is not an object")
    return header


def load(path: Path, key: bytes | None = None) -> VectorFile:
    """A side file, checked: the header's lists agree with each other and with the size of the vectors, and its seal
    holds under the cache key (`key`, else this process's cache's; ValueError otherwise)."""
    import numpy as np

    header, data = _read(path, key)
    rows, dim = header["offsets"][-1], header["dim"]
    matrix = np.frombuffer(data, dtype="<f2").reshape(rows, dim).astype(np.float32)
    return VectorFile(header, matrix)


def sealed(path: Path) -> bool:
    """Whether a side file is whole and its seal holds (what `load` checks, without converting the vectors)."""
    try:
        _read(path)
    except (OSError, ValueError):
        return False
    return True


def _seal(header: dict[str, Any], body: bytes, key: bytes) -> str:
    message = json.dumps(
        {k: v for k, v in header.items() if k != "seal"}, ensure_ascii=False, sort_keys=True, separators=(",", ":")
    ).encode("utf-8", "surrogatepass")
    return Sealer(key).seal(b"cairn-vectors\0", struct.pack("<Q", len(message)), message, body)


def _read(path: Path, key: bytes | None = None) -> tuple[dict[str, Any], bytes]:
    with _open_file(path) as handle:
        header = _header(handle)
        start = _aligned(handle.tell())
        dim = header.get("dim")
        ids, blobs, offsets = header.get("ids"), header.get("blobs"), header.get("offsets")
        if header.get("model") != enc.MODEL:  # another model's vectors: not comparable with this one's prompts
            raise OtherModel(f"vector file is of another model ({str(header.get('model'))[:80]})")
        if (
            dim != enc.DIM
            or not isinstance(ids, list)
            or not isinstance(blobs, list)
            or not isinstance(offsets, list)
            or len(blobs) != len(ids)
            or len(offsets) != len(ids) + 1
            or not all(isinstance(x, str) for x in ids)
            or not all(type(x) is int for x in offsets)
            or offsets[0] != 0
            or any(b < a for a, b in zip(offsets, offsets[1:], strict=False))
        ):
            raise ValueError("vector file header is inconsistent")
        handle.seek(start)
        data = handle.read()
    rows = offsets[-1]
    if len(data) != rows * dim * 2:
        raise ValueError("vector file is truncated")
    if key is None:
        key = hot_index_key()
    if key is None or header.get("seal") != _seal(header, data, key):
        raise ValueError("vector file seal does not hold")
    return header, data


def write(path: Path, header: dict[str, Any], matrix: npt.NDArray[Any]) -> None:
    """Write a side file atomically (temporary file, fsync, rename), readable by its owner only."""
    import numpy as np

    body = np.ascontiguousarray(matrix, dtype="<f2").tobytes()
    header = {**header, "seal": _seal(header, body, make_index_key())}
    raw = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    prefix = MAGIC + struct.pack("<Q", len(raw)) + raw
    padding = b"\0" * (_aligned(len(prefix)) - len(prefix))
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=_TEMP_PREFIX, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(prefix + padding)
            handle.write(body)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_TEMP_PREFIX = ".vec-"
# A side file's temp is written and renamed within seconds; one this old was left by a writer killed mid-write.
STALE_TEMP_SECONDS = 600.0


def _remove_stale_temps(folder: Path) -> None:
    """The temp side files writers killed mid-write left in `folder` (each as big as the side file, and kept for
    good): by age, since the writers of one side file hold no lock in common (`cairn index` holds the index's, a
    detached encoder the side file's)."""
    import time

    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name.startswith(_TEMP_PREFIX) and name.endswith(".tmp"):
            path = folder / name
            try:
                # older than any write takes, or from the future (the clock set back since): no writer's now
                if not 0 <= time.time() - path.lstat().st_mtime <= STALE_TEMP_SECONDS:
                    path.unlink()
            except OSError:
                pass


def _aligned(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def current(index_file: Path) -> bool:
    """Whether the index's side file is there and matches it (commit, index key, model)."""
    header = read_header(vectors_path(index_file))
    if header is None:
        return False
    try:
        reader = IndexReader(index_file)
    except Exception:
        return False
    try:
        return _matches(header, reader)
    finally:
        reader.close()


def _matches(header: dict[str, Any], reader: IndexReader) -> bool:
    return (
        header.get("model") == enc.MODEL
        and header.get("commit") == reader.commit
        and header.get("index_key") == index_key(reader.meta)
    )


def remove(index_file: Path) -> bool:
    """Remove an index's side file; whether there was one. An empty folder in its place goes too (the next index
    writes the file), never anything in one."""
    path = vectors_path(index_file)
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    except (IsADirectoryError, PermissionError):  # unlink(2) of a folder: EISDIR on Linux, EPERM elsewhere
        if not stat.S_ISDIR(path.lstat().st_mode):
            raise
        path.rmdir()
    return True


def refresh(
    index_file: Path,
    *,
    encoder: enc.Encoder | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Outcome:
    """Bring the side file of `index_file` up to date. Returns what it did: `off` (the extra is not installed or
    `[recall] semantic = false`: no file), `kept` (`CAIRN_SEMANTIC=0` here: the file is left as it is),
    `unchanged`, or `encoded` N (N cards encoded, the others reused)."""
    target = vectors_path(index_file)
    reader = IndexReader(index_file)
    try:
        if not configured(reader.config) or (encoder is None and not enc.available()):
            remove(index_file)
            return Outcome("off")
        if off_here():
            return Outcome("kept")
        old_header = read_header(target)
        if old_header is not None and _matches(old_header, reader) and sealed(target):
            return Outcome("unchanged")
        entries = reader.entries()  # (id, path, blob), by id
        old: VectorFile | None = None
        if old_header is not None and old_header.get("model") == enc.MODEL:
            try:
                old = load(target)
            except (OSError, ValueError):
                old = None
        reusable = {} if old is None else {blob: i for i, blob in enumerate(old.blobs) if blob != "worktree"}
        todo: list[tuple[int, list[str]]] = []
        for i, (card_id, _path, blob) in enumerate(entries):
            if blob not in reusable or blob == "worktree":
                record = reader.record(card_id) or {}
                todo.append((i, card_passages_of(record)))
        header = {
            "model": enc.MODEL,
            "dim": enc.DIM,
            "commit": reader.commit,
            "index_key": index_key(reader.meta),
            "ids": [e[0] for e in entries],
            "blobs": [e[2] for e in entries],
        }
    finally:
        reader.close()
    fresh = _encode_cards(todo, encoder, progress)
    blocks: list[Any] = []
    offsets = [0]
    for i, (_card_id, _path, blob) in enumerate(entries):
        if i in fresh:
            block = fresh[i]
        else:
            assert old is not None
            block = old.rows_of(reusable[blob])
        blocks.append(block)
        offsets.append(offsets[-1] + len(block))
    import numpy as np

    matrix = np.concatenate(blocks) if blocks else np.zeros((0, enc.DIM), dtype=np.float32)
    header["offsets"] = offsets
    write(target, header, matrix)
    return Outcome("encoded", str(len(fresh)))


FOREGROUND_CARDS = 200  # `cairn index` encodes up to this many cards itself (a few seconds); more, in the background


def foreground_cards() -> int:
    """`CAIRN_SEMANTIC_FOREGROUND_CARDS` when it is a whole number of 0 or more, else FOREGROUND_CARDS (a typo in
    it once failed the refresh, which removes the side file: every card's vectors lost to a bad variable)."""
    given = foreground_cards_given(os.environ.get("CAIRN_SEMANTIC_FOREGROUND_CARDS", ""))
    return FOREGROUND_CARDS if given is None else given


def foreground_cards_given(text: str) -> int | None:
    """The cards `text` of `CAIRN_SEMANTIC_FOREGROUND_CARDS` gives: a whole number of 0 or more; None when it gives
    none."""
    value = text.strip()
    return int(value) if value.isdecimal() else None  # `²` is a digit that int() refuses


def refresh_after_index(index_file: Path) -> Outcome:
    """`refresh` as `cairn index` calls it: free without the extra (unless a side file is left to remove), and never
    raising: on any failure the side file is removed and the hook serves lexically. When more than
    `FOREGROUND_CARDS` cards need encoding (a first index of a large vault: e5 encodes about 10 cards per CPU-second
    here), a detached process does it (`python -m cairn.semantic.vectors INDEX`) and `cairn index` returns at once;
    the hook serves lexically until the vectors are written. `CAIRN_SEMANTIC_FOREGROUND=1` always waits.
    Returns what happened."""
    off = off_here() or not enc.available()
    if off and not vectors_path(index_file).exists():
        return Outcome("off")
    try:
        if not off and os.environ.get("CAIRN_SEMANTIC_FOREGROUND", "") != "1":
            todo = cards_to_encode(index_file)
            if todo > foreground_cards():
                start_background(index_file)
                return Outcome("background", str(todo))
        return refresh(index_file)
    except Exception as exc:
        if not threading.main_thread().is_alive():
            # Not a failure of the side file but the process exiting (the MCP server stopped by a signal or the end
            # of its input while a request's thread encoded), whose thread pools refuse work then. The side file
            # stays, its rows reused by the next index: removed, every card was encoded again (minutes at 2,000).
            return Outcome("failed", "the process exited while the cards were encoded")
        try:
            remove(index_file)
        except OSError:
            pass
        fix = disk_fix(exc, "") if isinstance(exc, OSError) else ""  # a full disk: `cairn index` again fails the same
        reason = f"{type(exc).__name__}: {exc}"[: 300 - len("failed: ") - len(fix)] + (f"; {fix}" if fix else "")
        return Outcome("failed", reason)


def cards_to_encode(index_file: Path) -> int:
    """How many of the index's cards have no vectors in its side file (0 when the side file is current): those
    `refresh` encodes. A side file whose seal does not hold, or cut short, has none to give, whatever its header
    says. 0 when the vault says `[recall] semantic = false` (`refresh` encodes nothing: `cairn index` said it
    would encode every card in the background)."""
    target = vectors_path(index_file)
    header = read_header(target)
    usable = header is not None and header.get("model") == enc.MODEL and sealed(target)
    with IndexReader(index_file) as reader:
        if not configured(reader.config):
            return 0
        if usable and header is not None and _matches(header, reader):
            return 0
        known = set(header.get("blobs", [])) if usable and header is not None else set()
        return sum(1 for _id, _path, blob in reader.entries() if blob not in known or blob == "worktree")


# The detached encoder's command (`CLEAN_PATH`: not `python -m`, which would import a `cairn/` from the current folder).
BACKGROUND_CODE = CLEAN_PATH + "from cairn.semantic.vectors import main; sys.exit(main(sys.argv[1:]))"


def start_background(index_file: Path, cache: str | None = None) -> None:
    """Encode the index's cards in a detached process (one per index at a time: it takes a lock). `cache`: the
    cache folder the index is in when it is not this process's (the warm encoder serves hooks of any cache): the
    vectors are sealed with that cache's key."""
    import subprocess
    import sys

    from cairn.hot.paths import state_folder

    state = state_folder()
    private_folder(state)
    try:  # never through a symlink, never waiting on a FIFO in the log's place
        log = open_log(os.path.join(state, LOG_NAME), MAX_LOG_BYTES)
    except OSError:
        log = subprocess.DEVNULL
    try:
        env = child_env()
        if cache is not None:
            env["CAIRN_CACHE_DIR"] = cache
        subprocess.Popen(
            [sys.executable, *CHILD_FLAGS, "-c", BACKGROUND_CODE, str(index_file)],  # in the vault: no PYTHONPATH
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    finally:
        if log != subprocess.DEVNULL:
            os.close(log)


def encoding_now(index_file: Path) -> bool:
    """Whether a detached encoder holds the side file's lock (it is encoding the index's cards now): the lock file is
    opened, never made, and never followed through a symlink."""
    import fcntl

    try:
        fd = os.open(str(vectors_path(index_file)) + ".lock", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing it releases a lock taken
    return False


def background_main(index_file: Path) -> int:
    """The detached encoder: under the side file's lock, refresh until the side file matches the index (which may
    have been rebuilt meanwhile); exits at once when another process holds the lock."""
    import fcntl
    import time

    lock_path = str(vectors_path(index_file)) + ".lock"
    with open(open_private(lock_path, os.O_RDWR | os.O_CREAT), "r+b") as lock:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return 0
        started = time.monotonic()
        for _ in range(5):
            outcome = refresh(index_file)
            if outcome.status in ("unchanged", "off"):
                break
            wall, cpu = time.monotonic() - started, time.process_time()
            _log(f"{index_file}: {outcome} in {wall:.1f} s ({cpu:.1f} CPU-seconds, {enc.default_workers()} threads)")
        return 0


def _log(message: str) -> None:
    import sys
    import time

    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    try:
        sys.stderr.write(f"{stamp} cairn semantic vectors: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def card_passages_of(record: dict[str, Any]) -> list[str]:
    """The passages of a card as the index stores it (`IndexReader.record`)."""
    aliases = record.get("aliases") or []
    return enc.card_passages(
        str(record.get("name") or ""),
        [str(a) for a in aliases] if isinstance(aliases, list) else [],
        str(record.get("summary") or ""),
        str(record.get("body") or ""),
    )


def _encode_cards(
    todo: Sequence[tuple[int, list[str]]],
    encoder: enc.Encoder | None,
    progress: Callable[[int, int], None] | None,
) -> dict[int, npt.NDArray[np.float32]]:
    """The vectors of the cards to encode, by their position: all their passages in one call, so the encoder sorts
    them by length (little padding) and runs its batches on every core. `progress(passages done, passages)`."""
    if not todo:
        return {}
    encoder = encoder or enc.Encoder()
    texts = [text for _, passages in todo for text in passages]
    done = 0

    def told(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(done, len(texts))

    matrix = encoder.passages(texts, progress=told)
    out: dict[int, npt.NDArray[np.float32]] = {}
    at = 0
    for i, passages in todo:
        out[i] = matrix[at : at + len(passages)]
        at += len(passages)
    return out


def main(argv: list[str]) -> int:
    """`python -m cairn.semantic.vectors INDEX_FILE` (and `BACKGROUND_CODE`): the detached encoder."""
    import sys

    if len(argv) != 1:
        sys.stderr.write("Usage: python -m cairn.semantic.vectors INDEX_FILE\n")
        return 2
    try:
        return background_main(Path(argv[0]))
    except Exception as exc:  # nothing to show it to: the log says why, the hook serves lexically
        _log(f"failed: {type(exc).__name__}: {exc}"[:300])
        return 1


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
