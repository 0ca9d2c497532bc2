"""The hot path: everything `cairn hook` may import, on every prompt an agent receives.

The rule: modules in `cairn.hot` import the standard library and each other, nothing else (no click, no
gitpython, no YAML, no `cairn.config`), and of the standard library only what costs little: `os`, `stat`, `sys`,
`time`, `gc`, `_thread` and a few C modules (`_json`, `_bisect`, `_heapq`, the built-in sha256 and sha1 (git's
object ids), `_blake2` for the index seals, and `_socket` for the semantic channel's client, only when an index has
card vectors). Not `re` (with the `enum`, `functools` and `collections` it brings), the `json` package, `pathlib`,
`shlex`, `dataclasses`, `datetime`, `hashlib`, SQLite, `contextlib`, `array`, `struct` or `typing`: together they
once cost the hook more than twice what the interpreter's own start costs; nor `math` or `fcntl`, each a shared
library to load (`ln` below, `cairn.hot.session`). So the tokenizer is written with `str` and `bytes` operations
(held equal to its regexes by tests), JSON goes through `_json` (`loads`, `dumps`, below), paths are strings (below,
and `cairn.hot.vault.locate_vault`; cold code gets `Path`s built from them), records are plain `__slots__` classes
(`Record`, below) and settings are read from the index as stored (below). Hot modules do not use `from __future__ import annotations` either (importing
`__future__` costs 0.25 ms): an annotation naming a type-checking-only name is quoted.

Cold code may import from here; hot code imports cold code only lazily, on a path the hook does not take (an index
from another version, a type checker, an error). `tests/test_hook_imports.py` holds the rule: a real hook run
imports `cairn.hot.*` and a short list of standard modules, nothing more.

This package's own module holds what every hot module uses, so the hook imports it once instead of four modules
(each module costs every prompt its import): records (`Record`), JSON on `_json` (`loads`, `dumps`), the cache and
state folders and path helpers, and the settings an index stores. `cairn.hot.record`, `cairn.hot.jsonc`,
`cairn.hot.paths` and `cairn.hot.settings` keep these names for the code that imports them from there.
"""

import os
import stat
import sys
import time

try:
    import _json
except ImportError:  # pragma: no cover - an interpreter without the accelerator: `json` does it all
    _json = None  # type: ignore[assignment]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path
    from typing import Any, TypeVar

    from cairn.config import RecallSettings
    from cairn.hot.index import IndexReader

    _R = TypeVar("_R", bound="Record")


# -------------------- Records --------------------
# `Record`: the base of the hot path's immutable records (plain `__slots__` classes, no `dataclasses`).
#
# `import dataclasses` costs the hook about 8 ms (it imports `inspect`, `ast`, `dis`, `tokenize`), more than its
# whole query on a small vault, so the records the hook creates are written out by hand. A subclass lists its fields
# in `__slots__` and sets them in `__init__` with `_init`; it gets equality, hashing, `repr` and immutability.

_set = object.__setattr__


class Record:
    __slots__: tuple[str, ...] = ()

    def _init(self, *values: object) -> None:
        for name, value in zip(self.__slots__, values, strict=True):
            _set(self, name, value)

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined,unused-ignore]

    def __hash__(self) -> int:
        return hash((self.__class__.__name__, self._values()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"

    def replace(self: "_R", **changes: object) -> "_R":
        """A copy with some fields changed (the hot path's `dataclasses.replace`)."""
        values = {name: getattr(self, name) for name in self.__slots__}
        values.update(changes)
        return type(self)(**values)


# -------------------- JSON --------------------
# JSON for the hot path, on the C accelerator `_json` alone.
#
# `import json` costs the hook more than reading the index: `json.decoder` and `json.scanner` import `re`, which
# imports `enum`, `functools` and `collections`. The work is done by `_json` in either case, so `loads` and `dumps`
# here drive it exactly as `json.JSONDecoder.decode` and `json.JSONEncoder.encode` (`_one_shot`, no indent) do, and
# give the same objects and the same text. Anything else goes to the `json` package itself: an error (so the error
# raised, a `json.JSONDecodeError` among them, is the one `json` raises), an object the encoder cannot take, an
# interpreter without `_json`. Tests hold both equal to `json` on random documents.

_WHITESPACE = " \t\n\r"  # json.decoder.WHITESPACE


class _DecoderContext:
    """What `_json.make_scanner` reads from a `json.JSONDecoder` built with no arguments."""

    __slots__ = ("strict", "object_hook", "object_pairs_hook", "parse_float", "parse_int", "parse_constant", "memo")

    def __init__(self) -> None:
        self.strict = True
        self.object_hook = None
        self.object_pairs_hook = None
        self.parse_float = float
        self.parse_int = int
        self.parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__
        self.memo: dict[str, str] = {}


_scan = _json.make_scanner(_DecoderContext()) if _json is not None else None  # type: ignore[arg-type]
_has_encoder = hasattr(_json, "make_encoder")


def loads(document: str | bytes) -> "Any":
    """`json.loads(document)`: the same object for every document `json.loads` accepts, its error for the rest."""
    if _scan is not None:
        try:
            text = document if isinstance(document, str) else document.decode(_encoding(document), "surrogatepass")
            value, end = _scan(text, len(text) - len(text.lstrip(_WHITESPACE)))
            if len(text.rstrip(_WHITESPACE)) <= end:  # nothing but whitespace after the value
                return value
        except Exception:  # any error: `json` raises its own below
            pass
    import json

    return json.loads(document)


def dumps(
    value: object,
    *,
    ensure_ascii: bool = True,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """`json.dumps(value, ensure_ascii=..., separators=..., sort_keys=...)`, the same text."""
    if _has_encoder:
        try:
            return _encode(value, ensure_ascii, separators, sort_keys)
        except Exception:  # an object JSON cannot hold, a cycle: `json` raises its own error below
            _ENCODERS.clear()  # an encoder stopped midway may hold stale cycle markers: make new ones
    import json

    return json.dumps(value, ensure_ascii=ensure_ascii, separators=separators, sort_keys=sort_keys)


def _encode(value: object, ensure_ascii: bool, separators: tuple[str, str] | None, sort_keys: bool) -> str:
    """`json.JSONEncoder(...).encode(value)`, with the C encoder `iterencode(_one_shot=True)` builds."""
    string = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
    if isinstance(value, str):
        return string(value)
    key = (ensure_ascii, separators, sort_keys)
    encoder = _ENCODERS.get(key)
    if encoder is None:
        item_separator, key_separator = separators if separators is not None else (", ", ": ")
        encoder = _json.make_encoder(
            {}, _unserializable, string, None, key_separator, item_separator, sort_keys, False, True
        )
        _ENCODERS[key] = encoder
    return "".join(encoder(value, 0))


# The C encoders `_encode` made, by (ensure_ascii, separators, sort_keys): one per way of writing JSON, reused (a
# successful encoding leaves its cycle markers empty, as it found them).
_ENCODERS: "dict[tuple[bool, tuple[str, str] | None, bool], Any]" = {}


def _unserializable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _encoding(data: bytes) -> str:
    """`json.detect_encoding`: the encoding of a JSON document given as bytes, by its BOM or its first zero bytes."""
    if data.startswith((b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00")):
        return "utf-32"
    if data.startswith((b"\xfe\xff", b"\xff\xfe")):
        return "utf-16"
    if data.startswith(b"\xef\xbb\xbf"):
        return "utf-8-sig"
    if len(data) >= 4:
        if not data[0]:
            return "utf-16-be" if data[1] else "utf-32-be"
        if not data[1]:
            return "utf-16-le" if data[2] or data[3] else "utf-32-le"
    elif len(data) == 2:
        if not data[0]:
            return "utf-16-be"
        if not data[1]:
            return "utf-16-le"
    return "utf-8"


# -------------------- Logarithm --------------------
# The natural logarithm of recall's IDF weights, without `math`.
#
# `math` is a shared library in most Python builds (lib-dynload), and loading one costs about 0.2 ms, near 2% of the
# interpreter's own start; recall needs nothing else from it on a prompt. `ln` is fdlibm's `__ieee754_log` (the
# algorithm of most C libraries' `log`), within one unit in the last place of `math.log` for every positive normal
# float (`tests/test_hot_ln.py`); anything else (zero, negative, subnormal, inf, nan) goes to `math.log` itself.
# Every hot module takes its logarithms from here, so the ranking and its exact rescoring agree to the bit.

_LN2_HI = 6.93147180369123816490e-01  # ln 2 in two parts: the high one has trailing zero bits, so k * it is exact
_LN2_LO = 1.90821492927058770002e-10
_LG = (  # the minimax polynomial of (ln((1 + s) / (1 - s)) - 2s) / s on |s| <= 0.1716
    6.666666666666735130e-01,
    3.999999999940941908e-01,
    2.857142874366239149e-01,
    2.222219843214978396e-01,
    1.818357216161805012e-01,
    1.531383769920937332e-01,
    1.479819860511658591e-01,
)
_NORMAL = 2.2250738585072014e-308
_LARGEST = 1.7976931348623157e308


def ln(x: float) -> float:
    """The natural logarithm of x (`math.log(x)`, to one unit in the last place)."""
    if not _NORMAL <= x <= _LARGEST:
        import math  # not a positive normal float: whatever `math.log` returns or raises

        return math.log(x)
    # x = 2**k * (1 + f), 1 + f in [sqrt(2) / 2, sqrt(2)): `float.hex` gives the exponent and the high 20 bits of
    # the fraction ("0x1.91eb851eb851fp+1"), as fdlibm reads them from the high word.
    text = x.hex()
    high = int(text[4:9], 16)
    halved = (high + 0x95F64) & 0x100000
    k = int(text[text.index("p") + 1 :]) + (halved >> 20)
    f = x * 2.0**-k - 1.0  # exact: a power of two times x, less one (Sterbenz)
    if (0xFFFFF & (2 + high)) < 3:  # |f| < 2**-20
        if f == 0.0:
            return k * _LN2_HI + k * _LN2_LO
        r = f * f * (0.5 - 0.33333333333333333 * f)
        return f - r if k == 0 else k * _LN2_HI - ((r - k * _LN2_LO) - f)
    lg1, lg2, lg3, lg4, lg5, lg6, lg7 = _LG
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    r = w * (lg2 + w * (lg4 + w * lg6)) + z * (lg1 + w * (lg3 + w * (lg5 + w * lg7)))
    if 0x6147A <= high <= 0x6B851:  # 1 + f near sqrt(2) or its half: f * f / 2 kept apart
        half_square = 0.5 * f * f
        if k == 0:
            return f - (half_square - s * (half_square + r))
        return k * _LN2_HI - ((half_square - (s * (half_square + r) + k * _LN2_LO)) - f)
    if k == 0:
        return f - s * (f - r)
    return k * _LN2_HI - ((s * (f - r) - k * _LN2_LO) - f)


# -------------------- Paths --------------------
# Where Cairn keeps what is not in the vault: the index cache and the state (hook log, sessions).
#
# Both are private: the folders Cairn makes are 0700 and its files 0600 (`private_folder`, `private_file`); a folder
# that was there before, whoever made it, keeps its mode. The cache key (`index_key_file`) seals every
# index the cache holds (see `cairn.hot.index`).
#
# The hook works with path strings (`cache_folder`, `state_folder`, `index_file`): `pathlib` imports `urllib.parse`,
# `ipaddress`, `fnmatch` and `re`, a cost every prompt would pay. Cold code gets `Path`s (`cache_dir`, `state_dir`,
# `index_path`) built from the same strings, and the strings are what `str()` of those `Path`s gives.


def sha256_hex(data: bytes) -> str:
    """sha256 of data in hex, with the interpreter's built-in hash (no OpenSSL load on the hook's path)."""
    digest: str = _SHA256(data).hexdigest()
    return digest


def _builtin_sha256() -> "Callable[[bytes], Any]":
    names = ("_sha2", "_sha256") if sys.version_info >= (3, 12) else ("_sha256", "_sha2")
    for name in names:  # Python >= 3.12 has `_sha2`, <= 3.11 `_sha256`
        try:
            found: Callable[[bytes], Any] = __import__(name).sha256
            return found
        except (ImportError, AttributeError):
            continue
    from hashlib import sha256  # pragma: no cover - a build without the built-in module

    return sha256  # pragma: no cover


_SHA256 = _builtin_sha256()


def new_sha256(data: bytes = b"") -> "Any":
    """A built-in sha256 hash object over data (`update`, `copy`, `digest`, `hexdigest`)."""
    return _SHA256(data)


def utc_now() -> str:
    """ISO-8601 UTC time to the second, e.g. `2026-05-01T12:00:00Z` (the hook log's and the sessions' times)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


KEY_BYTES = 32
VECTORS_SUFFIX = ".vec"  # an index's card vectors sit beside it (cairn.hot.semantic.vectors_file)
# How a `python -c` program that imports Cairn starts (the hook's background index, the warm encoder, the detached
# card encoder): the current folder ('') off sys.path first. `python -m` puts it first, and these run in a vault or an
# agent's project, whose files are untrusted: a `cairn/` (or `click/`, `git/`) package there would run in Cairn's place.
CLEAN_PATH = "import sys; sys.path[:] = [p for p in sys.path if p != '']; "
# And how they are started: `-E`, so no PYTHON* variable of the agent's environment counts (PYTHONPATH=":/x", an empty
# entry, would import the agent's or the vault's `encodings/` at start), but not `-I`, whose `-s` leaves out the user's
# site-packages, where `pip install --user` put Cairn and its dependencies.
CHILD_FLAGS = ("-E",)
# What names a repository, its work tree and staging area in git's environment: git sets them for its hooks (and
# `git rebase --exec`), some IDEs for their terminals, a dotfiles setup for good. They describe another repository
# than a vault's, so a process Cairn starts for a vault (`child_env`) runs without them.
REPOSITORY_VARIABLES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY")


def child_env() -> dict[str, str]:
    """This process's environment without `REPOSITORY_VARIABLES` and GIT_PREFIX: for a detached process that works
    in a vault (the background `cairn index`, card vectors). With GIT_OBJECT_DIRECTORY or GIT_COMMON_DIR kept, a
    background index read the commits of another repository, failed, and the hook served the old index for as long
    as the variable stayed set."""
    return {k: v for k, v in os.environ.items() if k not in REPOSITORY_VARIABLES and k != "GIT_PREFIX"}


def index_key_file(cache: "str | None" = None) -> str:
    """The cache key: 32 random bytes that seal every index in the cache (`cairn.hot.index.Sealer`). `cache`: of
    that cache folder instead of this process's (`cache_folder`)."""
    return path_text(cache_folder() if cache is None else cache, "index.key")


def index_key(cache: "str | None" = None) -> "bytes | None":
    """The cache key (of the folder `cache`, else this process's), or None when there is none (or not a whole one),
    or when it is not this user's alone (another user owns it, or may read or write it: a shared or world-writable
    cache folder): no index of this cache can be trusted, since whoever holds the key can seal any index."""
    try:
        fd = os.open(index_key_file(cache), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # never blocks on a FIFO
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if info.st_uid != _UID or info.st_mode & 0o077:
            return None  # `make_index_key` replaces it with one of this user's, 0600
        key = os.read(fd, KEY_BYTES + 1)
    except OSError:  # a folder in the key's place opens, but does not read
        return None
    finally:
        os.close(fd)
    return key if len(key) == KEY_BYTES else None


def make_index_key() -> bytes:
    """The cache key, made first if there is none (0600, created whole: written aside, then linked into place)."""
    key = index_key()
    if key is not None:
        return key
    target = index_key_file()
    folder = os.path.dirname(target)
    private_folder(folder)
    # its own name, made new (O_EXCL): two threads of one process (the MCP server) named by pid alone shared one file,
    # and one's O_TRUNC emptied the key the other had just linked into place
    tmp = os.path.join(folder, f".index.key.{os.getpid()}.{os.urandom(6).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            if os.write(fd, os.urandom(KEY_BYTES)) != KEY_BYTES:  # a full disk can take part of it
                raise OSError(f"cannot write the cache key at {target} (is the disk full?)")
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, target)  # never replaces a key another writer made meanwhile
        except FileExistsError:
            if index_key() is None:  # damaged (cut short) or not ours alone: replaced; its indexes fail their checks
                try:
                    os.replace(tmp, target)
                except OSError as exc:  # a folder in its place: say which file, not the temp one
                    raise OSError(exc.errno, exc.strerror, target) from None
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
    key = index_key()
    if key is None:  # pragma: no cover - a file system that keeps neither
        raise OSError(f"cannot write the cache key at {target}")
    return key


def private_folder(folder: str) -> None:
    """Make `folder` (and missing parents) with mode 0700. Only a folder made here gets a mode: one that was already
    there is left as it is, whoever made it. `$CAIRN_STATE_DIR` may name the home folder, `/` or a team's shared
    folder, which Cairn must never make 0700 under its owner; `cairn doctor` names a cache or state folder others may
    read or write. (The files Cairn keeps in them are 0600 whatever the folder's mode.)"""
    if os.path.isdir(folder):  # one stat where the folder exists, as every hook finds it
        return
    made = []
    step = os.path.abspath(folder)
    while not os.path.lexists(step) and os.path.dirname(step) != step:
        made.append(step)
        step = os.path.dirname(step)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    for path in made:  # `makedirs` gives the parents it makes the umask's mode, 0755 as a rule
        _tighten(path)


# The files of the cache, the state and a vault's `.git` that are not the index are checked too: anything else in a
# file's place (a FIFO, a device, a folder) is never waited on, never read without bound, and the files the hot path
# writes (the log, stamps, locks) are never written or made through a symlink.
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_UID = os.getuid() if hasattr(os, "getuid") else 0  # Windows: every file's st_uid is 0


class NotRegularFile(OSError):
    """A FIFO, a device or a folder where `open_regular` or `open_private` wanted a regular file (no errno: the
    open itself succeeded)."""


def open_regular(path: "str | os.PathLike[str]", own: bool = False) -> int:
    """A descriptor of the regular file at `path`, open for reading (a symlink to one is followed); OSError, at once,
    for a FIFO, a device, a folder or no file, and with `own` for a file another user owns (a copy Cairn wrote for
    this user is believed only if this user wrote it: whoever owns a state folder could write the others)."""
    fd = os.open(path, os.O_RDONLY | _NONBLOCK)  # a FIFO with no writer must not block
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise NotRegularFile(f"{os.fspath(path)} is not a regular file")
    if own and info.st_uid != _UID:
        os.close(fd)
        raise OSError(f"{os.fspath(path)} is owned by another user")
    return fd


def read_regular(path: str, limit: int, own: bool = False) -> bytes:
    """At most `limit` bytes of the regular file at `path` (`open_regular`'s checks)."""
    fd = open_regular(path, own)
    try:
        chunks, size = [], 0
        while size < limit:
            chunk = os.read(fd, limit - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def open_private(path: str, flags: int) -> int:
    """`os.open(path, flags, 0o600)` for a file of Cairn's own (the log, a stamp, a lock): never through a symlink,
    never waiting on a FIFO; OSError when anything but a regular file is in its place."""
    fd = os.open(path, flags | _NONBLOCK | _NOFOLLOW, 0o600)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotRegularFile(f"{path} is not a regular file")
    return fd


def open_log(path: str, max_bytes: int) -> int:
    """A descriptor to append lines to the log `path` (`open_private`'s checks). Past `max_bytes`, the log becomes
    `path`.1 and a new file starts, so no log of Cairn's grows without bound (`_rotated`)."""
    fd = open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        if os.fstat(fd).st_size >= max_bytes:
            fd = _rotated(path, fd, max_bytes)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _rotated(path: str, fd: int, max_bytes: int) -> int:
    """Move the full log `fd` is open on to `path`.1 (hook.jsonl.1, semantic.log.1); the descriptor to write to (`fd`
    itself, or the new file's, `fd` then closed).

    Hooks rotate at once when a burst of prompts finds the log full. Each moves only the file it opened, and only
    while holding that file's record lock (`os.lockf`, as the session lock; never waited for): a hook that finds it
    held writes its line into the file being moved, and one that gets it afterwards finds hook.jsonl is another file
    already and writes there. Moving by name alone, a second hook moved the first one's new hook.jsonl onto
    hook.jsonl.1: the whole rotated log was lost, and with it the lines written to it meanwhile."""
    lockf = getattr(os, "lockf", None)
    if lockf is not None:
        try:
            lockf(fd, os.F_TLOCK, 0)
        except (BlockingIOError, PermissionError):  # EAGAIN or EACCES: another hook is moving this very file
            return fd  # the line goes with it
        except OSError:
            pass  # a file system without record locks (ENOLCK): moved as before, or it would grow without bound
    mine = os.fstat(fd)
    try:
        named = os.lstat(path)
        moved = (named.st_ino, named.st_dev) != (mine.st_ino, mine.st_dev)
    except FileNotFoundError:
        moved = True
    if not moved:
        try:
            os.replace(path, path + ".1")
        except OSError as exc:  # hook.jsonl.1 a folder, say: the log must not grow without bound
            if mine.st_size >= 2 * max_bytes:
                name = os.path.basename(path)
                raise OSError(f"{path} is full and cannot be moved to {name}.1 ({exc.strerror})") from None
            return fd
    try:
        new = open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    except OSError:
        return fd  # the line goes into the moved file rather than nowhere
    os.close(fd)  # and with it the lock
    return new


def reap(children: "list[int]") -> None:
    """Collect those of `children` (processes this one started detached and never waits for) that have ended, and
    take them off the list: a long-lived process (the MCP server) would otherwise keep each one as a zombie until it
    ends. The hook exits long before its children do; they are then the init process's to collect."""
    for pid in list(children):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # collected elsewhere
            done = pid
        if done:
            children.remove(pid)


def stamped_within(stamp: str, now: float, seconds: float) -> bool:
    """Whether the stamp file was touched less than `seconds` before `now`. A missing stamp was not, and neither was one
    dated in the future (the clock set back since: NTP, a restored VM), which would hold its work off until the clock
    caught up."""
    try:
        age = now - os.stat(stamp).st_mtime
    except FileNotFoundError:
        return False
    return 0 <= age < seconds


def touch_private(path: str, when: float) -> None:
    """Make the stamp file `path` (0600) if needed and set its times to `when` (`open_private`'s checks)."""
    os.close(open_private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND))
    os.utime(path, (when, when))


def private_file(path: str) -> None:
    """Tighten an existing file of ours to 0600 (lock files, caches written by others' code)."""
    _tighten(path, 0o600)


def _tighten(path: str, mode: int = 0o700) -> None:
    try:
        info = os.lstat(path)
        if info.st_mode & 0o077 and info.st_uid == os.getuid() and not stat.S_ISLNK(info.st_mode):
            os.chmod(path, mode)
    except OSError:
        pass


def cache_folder() -> str:
    """`$CAIRN_CACHE_DIR`, else `$XDG_CACHE_HOME/cairn`, else `~/.cache/cairn` (as `str(cache_dir())`); a relative
    `$CAIRN_CACHE_DIR` is ignored, as a relative XDG one is (`xdg_is_set`): for the hook it would be a folder of the
    agent's project, the index and its key the project's to choose (`cairn doctor` names it)."""
    if xdg_is_set("CAIRN_CACHE_DIR"):
        return path_text(os.environ["CAIRN_CACHE_DIR"])
    if xdg_is_set("XDG_CACHE_HOME"):
        return path_text(os.environ["XDG_CACHE_HOME"], "cairn")
    return path_text(_home(), ".cache", "cairn")


def install_name() -> str:
    """Which install of Cairn this process runs from, and which build: the folder above its interpreter's (a
    venv, a conda env, a system prefix) and `build_name()`. Not `sys.prefix`: the agents' hook runs under
    `python -S` (`cairn.install.hook_launcher`), where a venv's `sys.prefix` is its base interpreter's, while the
    processes it starts run with `site`. The build: a warm encoder started before an upgrade in place runs the
    old code (`cairn.semantic.daemon` stops for a hook of another install or build)."""
    return f"{os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))} cairn {build_name()}"


DISTRIBUTION = "cairn-lessons"  # `pyproject.toml`'s name: what pip installs
_MAX_RECORD_BYTES = 1 << 20
_build: "str | None" = None


def build_name() -> str:
    """This Cairn's version and, for an install from a wheel, the first 12 hex digits of the sha256 of its record
    (its lines in the `RECORD` file of its `.dist-info`, which lists every installed file with its sha256), e.g.
    `0.1.0+3f2a9c01b7de`. What the version alone cannot tell apart: an upgrade in place to a build that kept the
    version number (an install from a git branch) runs new code under the old number, and an index, the user
    configuration's cached copy and a warm encoder keyed on the number alone would go on trusting the old code's
    output. Two installs of one wheel share the name. An editable install's record lists no source file: it has the
    version alone, as has an install whose record cannot be read."""
    global _build
    if _build is None:
        from cairn import __version__

        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        try:
            record = read_regular(
                os.path.join(
                    os.path.dirname(package), f"{DISTRIBUTION.replace('-', '_')}-{__version__}.dist-info", "RECORD"
                ),
                _MAX_RECORD_BYTES,
            )
        except OSError:
            record = b""
        # The package's own lines: the record also lists the `cairn` script, whose first line names the interpreter
        package_files = b"\n".join(line for line in record.splitlines() if line.startswith(b"cairn/"))
        _build = f"{__version__}+{sha256_hex(package_files)[:12]}" if package_files else __version__
    return _build


def state_folder() -> str:
    """`$CAIRN_STATE_DIR`, else `$XDG_STATE_HOME/cairn`, else `~/.local/state/cairn` (as `str(state_dir())`); a
    relative `$CAIRN_STATE_DIR` is ignored, as in `cache_folder`."""
    if xdg_is_set("CAIRN_STATE_DIR"):
        return path_text(os.environ["CAIRN_STATE_DIR"])
    if xdg_is_set("XDG_STATE_HOME"):
        return path_text(os.environ["XDG_STATE_HOME"], "cairn")
    return path_text(_home(), ".local", "state", "cairn")


def xdg_is_set(name: str, env: "Mapping[str, str] | None" = None) -> bool:
    """Whether the XDG base directory variable `name` (or Cairn's own `CAIRN_CACHE_DIR`, `CAIRN_STATE_DIR`) is set
    to an absolute path. The specification calls a relative
    one invalid, to be ignored; taken, it would name a folder in whatever folder Cairn runs in: for the hook, the
    agent's project, whose files would then be the user's configuration, cache or state."""
    value = (os.environ if env is None else env).get(name)
    return value is not None and os.path.isabs(value)


INDEX_NAME = "index.cairn"  # Cairn's own format (cairn.hot.index); `index.sqlite` was format 6 and before


def index_file(vault_root: "str | os.PathLike[str]", *, real: bool = False) -> str:
    """The index file of the vault at `vault_root` (as `str(index_path(vault_root))`); `real`: the caller's path is
    already the real one (`vault_key`)."""
    return path_text(cache_folder(), "vaults", vault_key(vault_root, real=real), INDEX_NAME)


def cache_dir() -> "Path":
    from pathlib import Path

    return Path(cache_folder())


def state_dir() -> "Path":
    from pathlib import Path

    return Path(state_folder())


def index_path(vault_root: "str | os.PathLike[str]") -> "Path":
    from pathlib import Path

    return Path(index_file(vault_root))


_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def vault_key(vault_root: "str | os.PathLike[str]", *, real: bool = False) -> str:
    """A readable, collision-free folder name for one vault: its base name and a hash of its real path (`real`: the
    caller's path is already the real one, as the hook's vaults are: no second walk of lstat calls)."""
    real_path = os.fspath(vault_root) if real else os.path.realpath(vault_root)
    digest = sha256_hex(real_path.encode("utf-8", "surrogateescape"))[:16]
    base = _key_text(os.path.basename(real_path))[:40] or "vault"
    return f"{base}-{digest}"


def _key_text(name: str) -> str:
    """`re.sub(r"[^A-Za-z0-9._-]+", "-", name)`: each run of other characters becomes one `-`."""
    out: list[str] = []
    replaced = False
    for char in name:
        if char in _KEY_CHARS:
            out.append(char)
            replaced = False
        elif not replaced:
            out.append("-")
            replaced = True
    return "".join(out)


def _home() -> str:
    """The home folder as `Path.home()` finds it."""
    folder = os.path.expanduser("~")
    if folder[:1] == "~":
        raise RuntimeError("Could not determine home directory.")
    return folder


def path_text(first: str, *names: str) -> str:
    """`str(Path(first, *names))` for plain names: on POSIX, the joined path with repeated slashes and `.` parts
    dropped and no trailing slash (`..` stays: only the file system knows what it means)."""
    if os.name != "posix":  # pragma: no cover - Windows paths have drives and two separators: pathlib knows them
        from pathlib import Path

        return str(Path(first, *names))
    joined = os.path.join(first, *names) if names else first
    # POSIX leaves the meaning of exactly two leading slashes to the system, and pathlib keeps them.
    two = joined[:2] == "//" and joined[2:3] != "/"
    root = "//" if two else "/" if joined[:1] == "/" else ""
    return root + "/".join(part for part in joined.split("/") if part and part != ".") or "."


# pathlib's file tests on path strings, with pathlib's errors: False for a missing path, a file where a folder
# was expected, a bad descriptor, a symlink loop or a path the system cannot take (ValueError); other errors (no
# permission) raise.
_IGNORED_WINERRORS = (21, 123, 1921)  # not ready, invalid name, symlink to itself


def _mode(path: str) -> int:
    """`os.stat(path).st_mode`, or 0 where pathlib's `exists()` says False."""
    try:
        return os.stat(path or ".").st_mode  # Path("") is "."
    except (FileNotFoundError, NotADirectoryError, ValueError):
        return 0
    except OSError as exc:
        import errno

        if exc.errno in (errno.EBADF, errno.ELOOP) or getattr(exc, "winerror", None) in _IGNORED_WINERRORS:
            return 0
        raise


def exists(path: str) -> bool:
    """`Path(path).exists()`."""
    return _mode(path) != 0


def is_dir(path: str) -> bool:
    """`Path(path).is_dir()`."""
    return stat.S_ISDIR(_mode(path))


def is_file(path: str) -> bool:
    """`Path(path).is_file()`."""
    return stat.S_ISREG(_mode(path))


def file_in_the_way(path: str) -> "str | None":
    """The file (anything but a folder) standing at `path` or at a folder above it: what ENOTDIR is about."""
    step = os.path.abspath(path)
    while True:
        if os.path.lexists(step) and not os.path.isdir(step):
            return step
        parent = os.path.dirname(step)
        if parent == step:
            return None
        step = parent


def resolve(path: str) -> str:
    """`str(Path(path).resolve())`: the real path; a symlink loop raises RuntimeError before Python 3.13."""
    real = os.path.realpath(path)
    if sys.version_info < (3, 13):
        try:
            os.stat(real)
        except OSError as exc:
            import errno

            if exc.errno == errno.ELOOP or getattr(exc, "winerror", None) == 1921:
                raise RuntimeError(f"Symlink loop from {exc.filename!r}") from None
    return real


# -------------------- Settings --------------------
# The settings an index stores (its commit's cairn.toml), read the hook's way: without `cairn.config`.
#
# `cairn.config` validates cairn.toml into dataclasses (and `import dataclasses` alone costs the hook ~8 ms), so the
# hook reads the values the index stored as plain records; when a stored section is incomplete or oddly typed (an
# index from another version), the validating path decides. Tests hold both readings equal.


def settings_of(index: "IndexReader") -> "RecallSettings":
    """The `[recall]` settings the index was built with, validated into `config.RecallSettings` (cold path)."""
    from cairn.config import config_from_dict

    return config_from_dict(index.config).recall


# The [recall] settings the ranking and gates read (see `stored_settings`).
SETTING_NAMES = (
    "max_cards",
    "k1",
    "b",
    "weight_name",
    "weight_summary",
    "weight_body",
    "instruction_weight",
    "unknown_weight",
    "min_lead",
    "min_coverage",
    "min_margin",
    "min_evidence",
    "min_confidence",
    "semantic",
)
# The type each stored setting must have for the fast path (bool is checked exactly: `type(True) is not int`).
_TYPES = (int,) + (float,) * (len(SETTING_NAMES) - 2) + (bool,)


class StoredSettings(Record):
    """The `[recall]` settings as stored in an index, read without `cairn.config` (the hook's path): the same
    attributes as `config.RecallSettings`, for recall and the gates."""

    __slots__ = SETTING_NAMES
    max_cards: int
    k1: float
    b: float
    weight_name: float
    weight_summary: float
    weight_body: float
    instruction_weight: float
    unknown_weight: float
    min_lead: float
    min_coverage: float
    min_margin: float
    min_evidence: float
    min_confidence: float
    semantic: bool

    def __init__(self, *values: "Any") -> None:
        self._init(*values)

    def replace(self, **changes: object) -> "StoredSettings":
        """A copy with some settings changed (its `__init__` takes them in order, not by name)."""
        return StoredSettings(*[changes.get(name, getattr(self, name)) for name in SETTING_NAMES])


def stored_settings(config: "dict[str, Any]") -> "RecallSettings":
    """The `[recall]` settings from an index's stored config (`IndexReader.config`), the same values
    `settings_of` gives; when the stored section lacks a setting or has an odd type (an index from another
    version), `settings_of`'s validating path decides."""
    section = config.get("recall")
    if isinstance(section, dict):
        values = [section.get(name) for name in SETTING_NAMES]
        if all(type(v) is t for v, t in zip(values, _TYPES, strict=True)) and set(section) == set(SETTING_NAMES):
            return StoredSettings(*values)  # type: ignore[return-value]
    from cairn.config import config_from_dict

    return config_from_dict(config).recall


def hook_settings(config: dict[str, object]) -> tuple[int, int]:
    """(max_context_chars, session_ttl_days) of the index's stored config, read without `cairn.config`
    (dataclasses); an index from another version with the section incomplete goes through the validating path."""
    section = config.get("hook")
    if isinstance(section, dict):
        chars, ttl = section.get("max_context_chars"), section.get("session_ttl_days")
        if type(chars) is int and type(ttl) is int:
            return chars, ttl
    from cairn.config import config_from_dict

    hook = config_from_dict(config).hook
    return hook.max_context_chars, hook.session_ttl_days
