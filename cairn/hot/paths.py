"""Where Cairn keeps what is not in the vault: the index cache and the state (hook log, sessions).

Both are private: folders 0700 and files 0600 (`private_folder` makes them so, and tightens a looser folder that
is Cairn's own: the cache or state folder and anything under them). The cache key (`index_key_file`) seals every
index the cache holds (see `cairn.hot.index`).

The hook works with path strings (`cache_folder`, `state_folder`, `index_file`): `pathlib` imports `urllib.parse`,
`ipaddress`, `fnmatch` and `re`, a cost every prompt would pay. Cold code gets `Path`s (`cache_dir`, `state_dir`,
`index_path`) built from the same strings, and the strings are what `str()` of those `Path`s gives.
"""

import os
import stat
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any


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


def index_key_file() -> str:
    """The cache key: 32 random bytes that seal every index in the cache (`cairn.hot.index.Sealer`)."""
    return path_text(cache_folder(), "index.key")


def index_key() -> "bytes | None":
    """The cache key, or None when there is none (or not a whole one): no index of this cache can be trusted."""
    try:
        fd = os.open(index_key_file(), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # never blocks on a FIFO
    except OSError:
        return None
    try:
        key = os.read(fd, KEY_BYTES + 1)
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
    tmp = os.path.join(folder, f".index.key.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, os.urandom(KEY_BYTES))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        try:
            os.link(tmp, target)  # never replaces a key another writer made meanwhile
        except FileExistsError:
            if index_key() is None:  # a damaged key (cut short): replaced; its indexes fail their checks
                os.replace(tmp, target)
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
    """Make `folder` (and missing parents) with mode 0700; when it is the cache or state folder or under one,
    tighten that root and every folder from it down to `folder` that is looser and ours (never a folder above)."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    real = os.path.realpath(folder)
    for root in (cache_folder(), state_folder()):
        top = os.path.realpath(root)
        if real != top and not real.startswith(top.rstrip("/") + "/"):
            continue
        step = top
        _tighten(step)
        for part in real[len(top) :].split("/"):
            if part:
                step = os.path.join(step, part)
                _tighten(step)
        return


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
    """`$CAIRN_CACHE_DIR`, else `$XDG_CACHE_HOME/cairn`, else `~/.cache/cairn` (as `str(cache_dir())`)."""
    if os.environ.get("CAIRN_CACHE_DIR"):
        return path_text(os.environ["CAIRN_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return path_text(os.environ["XDG_CACHE_HOME"], "cairn")
    return path_text(_home(), ".cache", "cairn")


def state_folder() -> str:
    """`$CAIRN_STATE_DIR`, else `$XDG_STATE_HOME/cairn`, else `~/.local/state/cairn` (as `str(state_dir())`)."""
    if os.environ.get("CAIRN_STATE_DIR"):
        return path_text(os.environ["CAIRN_STATE_DIR"])
    if os.environ.get("XDG_STATE_HOME"):
        return path_text(os.environ["XDG_STATE_HOME"], "cairn")
    return path_text(_home(), ".local", "state", "cairn")


def index_file(vault_root: "str | os.PathLike[str]") -> str:
    """The index file of the vault at `vault_root` (as `str(index_path(vault_root))`)."""
    return path_text(cache_folder(), "vaults", vault_key(vault_root), "index.sqlite")


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


def vault_key(vault_root: "str | os.PathLike[str]") -> str:
    """A readable, collision-free folder name for one vault: its base name and a hash of its real path."""
    real = os.path.realpath(vault_root)
    digest = sha256_hex(real.encode("utf-8", "surrogateescape"))[:16]
    base = _key_text(os.path.basename(real))[:40] or "vault"
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


_URI_SAFE = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~/"


def file_uri(path: str) -> str:
    """`Path(path).as_uri()` of an absolute path: `file://` and the path's bytes, percent-encoded but for
    `urllib.parse.quote`'s safe characters and `/`."""
    if os.name != "posix":  # pragma: no cover - drives and UNC hosts: pathlib knows them
        from pathlib import Path

        return Path(path).as_uri()
    if not os.path.isabs(path):
        raise ValueError("relative path can't be expressed as a file URI")
    raw = os.fsencode(path_text(path))
    if not raw.translate(None, _URI_SAFE):
        return "file://" + raw.decode("ascii")
    return "file://" + "".join(chr(b) if b in _URI_SAFE else f"%{b:02X}" for b in raw)
