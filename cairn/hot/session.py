"""Agent sessions: which cards a session already got, so each card is injected at most once per session.

One JSON file per session under `<state_dir>/sessions/`, named by a hash of the session id (the id itself is never
written). A per-session lock file serialises the hooks of one session: read, recall, record, release. Writes go to
a temp file and `os.replace`, so a reader sees the old file or the new one. Files unused for `ttl_days` are pruned
by a detached process (`prune`), at most every few hours.

The lock is a POSIX record lock (`os.lockf`), not `fcntl.flock`: `fcntl` is a shared library to load (about 0.2 ms,
near 2% of the interpreter's start, on every prompt), `os` is loaded already. A record lock belongs to the process,
not to the open file (a second lock taken in the same process succeeds, and closing any descriptor of the file
drops it), so one lock of the process (`_IN_PROCESS`) serialises its own threads first: the MCP server may serve two
recalls of one session at once.
"""

import os
import sys
import time
from _thread import allocate_lock

from cairn.hot import (
    dumps,
    loads,
    open_private,
    private_folder,
    read_regular,
    reap,
    sha256_hex,
    stamped_within,
    touch_private,
    utc_now,
)

SESSIONS_DIR = "sessions"
_LOCK_WAIT_SECONDS = 3.0
_PRUNE_EVERY_SECONDS = 6 * 3600
_PRUNE_STAMP = ".pruned"
MAX_SESSION_BYTES = 16 * 1024 * 1024  # thousands of prompts' cards; a bigger file reads as a new session
_IN_PROCESS = allocate_lock()  # held while this process holds any session's file lock


class SessionBusy(Exception):
    """Another hook of the same session held the lock for too long."""


def session_key(session_id: str) -> str:
    """The file name stem for a session: sha256 of its id, 32 hex characters."""
    return sha256_hex(session_id.encode("utf-8", "surrogatepass"))[:32]


class Session:
    """One session's record while its lock is held.

    injected: shown card id (`name:id` for a configured vault) -> {"commit": ..., "time": ..., "vault": folder} for
    every card the session has been given.
    """

    __slots__ = ("key", "path", "injected", "vault")

    def __init__(self, key: str, path: str, injected: dict[str, dict[str, str]], vault: str | None) -> None:
        self.key = key
        self.path = path
        self.injected = injected
        self.vault = vault

    def record(self, card_ids: list[str], vault: str, commit: str) -> None:
        """Remember the cards just injected from one vault and write the file atomically."""
        self.record_picks([(card_id, vault, commit) for card_id in card_ids])

    def record_picks(self, picks: "list[tuple[str, str, str]]") -> None:
        """Remember the cards just injected, each as (shown id, vault folder, commit), and write the file atomically.

        The shown id is `name:id` for a configured vault, so the same id in two vaults are two cards."""
        if not picks:
            return
        now = utc_now()
        for card_id, vault, commit in picks:
            self.injected[card_id] = {"commit": commit, "time": now, "vault": vault}
        vault = picks[-1][1]
        self.vault = vault
        data = {"session": self.key, "vault": vault, "injected": self.injected, "updated": now}
        write_private(self.path, dumps(data, ensure_ascii=False, sort_keys=True).encode("utf-8"))


class open_session:  # noqa: N801 - used as a function: `with open_session(state, id) as session:`
    """Lock the session, read what it was given so far, and give it to the `with` block; the lock is released on
    exit. (A class rather than `contextlib.contextmanager`: the hook does not import contextlib.)"""

    __slots__ = ("_folder", "_key", "_fd", "_held")

    def __init__(self, state_dir: str, session_id: str) -> None:
        self._folder = os.path.join(state_dir, SESSIONS_DIR)
        self._key = session_key(session_id)
        self._fd = -1
        self._held = False

    def __enter__(self) -> Session:
        private_folder(self._folder)  # made 0700 when missing
        path = os.path.join(self._folder, self._key + ".json")
        if not _IN_PROCESS.acquire(timeout=_LOCK_WAIT_SECONDS):
            raise SessionBusy("another recall of this process held a session for over 3 s")
        self._held = True
        try:
            self._fd = open_private(os.path.join(self._folder, self._key + ".lock"), os.O_RDWR | os.O_CREAT)
            _lock(self._fd)
            _touch(self._fd)
            return Session(self._key, path, *_read(path))
        except BaseException:
            self._release()
            raise

    def __exit__(self, *exc: object) -> None:
        self._release()

    def _release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # closing the descriptor releases the lock
            self._fd = -1
        if self._held:
            self._held = False
            _IN_PROCESS.release()


def prune(state_dir: str, ttl_days: int) -> bool:
    """Start deleting the session files not updated for `ttl_days`, at most every few hours; whether it started.

    The deleting (`prune_folder`) runs in a detached process: it lists and stats every session file (a second at
    100,000 sessions on a warm disk, `bench_hook --sessions`; more on a cold or a network one), and the prompt that
    finds it due must not wait for that. Doing it in the hook after its output is written would not help: the agent
    waits for the hook to exit. So that prompt pays one `posix_spawn` (as the warm encoder's start does), the others
    one `stat`."""
    if _PRUNERS:
        reap(_PRUNERS)
    folder = os.path.join(state_dir, SESSIONS_DIR)
    stamp = os.path.join(folder, _PRUNE_STAMP)
    now = time.time()
    try:
        if stamped_within(stamp, now, _PRUNE_EVERY_SECONDS):
            return False
    except OSError:
        return False
    try:
        touch_private(stamp, now)  # first: the prompts that follow start no other pruner
    except OSError:
        return False
    cutoff = repr(now - max(ttl_days, 1) * 86400)
    spawn = getattr(os, "posix_spawn", None)
    if spawn is None:  # pragma: no cover - Windows: no posix_spawn; pruned here, as before
        prune_folder(folder, float(cutoff))
        return True
    # Without `site` and isolated, as the hook runs, and this Cairn's own install after the standard library (as the
    # hook's launcher, `cairn/__main__.py`, puts it): nothing of the agent's folder (the child's working directory) is
    # imported, not even through a PYTHONPATH entry that names it (an empty one: `:/x`). No descriptor of the agent's
    # pipes is kept: the agent reads the hook's output until every writer has closed it.
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    null = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
    try:
        pid = spawn(
            sys.executable,
            [sys.executable, "-I", "-S", "-c", PRUNE_CODE, package_root, folder, cutoff],
            os.environ,
            file_actions=null,
            setsid=True,
        )
    except OSError:
        return False  # tried again after _PRUNE_EVERY_SECONDS
    _PRUNERS.append(pid)
    return True


_PRUNERS: "list[int]" = []  # pruners this process started and has not reaped yet (`reap`)


# At a low priority (`os.nice`): it shares the machine with the agent and its hooks.
PRUNE_CODE = """\
import os, sys
try:
    os.nice(10)
except OSError:
    pass
sys.path[:] = [p for p in sys.path if p != ""] + [sys.argv[1]]
from cairn.hot.session import prune_folder
prune_folder(sys.argv[2], float(sys.argv[3]))
"""


def prune_folder(folder: str, cutoff: float) -> int:
    """Delete the session files of `folder` (`.json`, `.lock`, `.tmp`) last modified before `cutoff` (a Unix time);
    how many sessions went. What `prune` starts in its detached process.

    A session's `.json` is written only when it gets a card, its `.lock` touched at every prompt (`_touch`): a
    `.json` goes only when its lock is old too, else a session still prompting every day that got no new card for
    `ttl_days` forgot every card it had, and was given them again."""
    removed = 0
    try:
        entries = os.scandir(folder)
    except OSError:
        return 0
    with entries:
        for entry in entries:
            name = entry.name
            if not (name.endswith(".json") or name.endswith(".lock") or name.endswith(".tmp")):
                continue
            try:
                if os.stat(entry.path).st_mtime < cutoff and not _lock_used_since(entry.path, cutoff):
                    os.unlink(entry.path)
                    removed += name.endswith(".json")
            except OSError:
                continue
    return removed


def _lock_used_since(path: str, cutoff: float) -> bool:
    """Whether `path` is a session's `.json` whose lock a hook took since `cutoff` (the session is in use)."""
    if not path.endswith(".json"):
        return False
    try:
        return os.stat(path[: -len(".json")] + ".lock").st_mtime >= cutoff
    except OSError:
        return False


def write_private(path: str, data: bytes) -> None:
    """Atomically replace `path` with `data` (mode 0600): temp file in the same folder, then `os.replace`."""
    tmp = f"{path}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            if os.write(fd, data) != len(data):  # a nearly full disk takes part of it: never put a cut file in place
                import errno

                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _read(path: str) -> tuple[dict[str, dict[str, str]], str | None]:
    """The injected map and vault of a session file; a missing or damaged file reads as a new session."""
    try:
        data = loads(read_regular(path, MAX_SESSION_BYTES))  # a session cut at the limit fails to parse
    except (OSError, ValueError, RecursionError):  # RecursionError: nested past the parser (`[[[...`)
        return {}, None
    if not isinstance(data, dict) or not isinstance(data.get("injected"), dict):
        return {}, None
    injected = {str(k): v for k, v in data["injected"].items() if isinstance(v, dict)}
    vault = data.get("vault")
    return injected, vault if isinstance(vault, str) else None


def _touch(fd: int) -> None:
    """Mark a session's lock file as used now: `prune_folder` judges files by when they were last modified, and a
    lock file is never written, so an active session's lock, created more than `ttl_days` ago, was deleted while held
    (a second hook of the session then locked a new file and both went on at once)."""
    try:
        os.utime(fd)
    except (OSError, NotImplementedError):  # pragma: no cover - a platform without futimens; nothing to keep
        pass


def _lock(fd: int) -> None:
    """Lock the whole lock file for this process (`os.lockf`, the module's docstring says why not `flock`)."""
    lockf = getattr(os, "lockf", None)
    if lockf is None:  # pragma: no cover - Windows: no lock; os.replace still keeps every file whole
        return
    deadline = time.monotonic() + _LOCK_WAIT_SECONDS
    while True:
        try:
            lockf(fd, os.F_TLOCK, 0)
            return
        except (BlockingIOError, PermissionError):  # EAGAIN or EACCES: another process holds it
            if time.monotonic() > deadline:
                raise SessionBusy("another hook of this session held its lock for over 3 s") from None
            time.sleep(0.005)
