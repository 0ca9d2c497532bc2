"""The semantic channel's client on the hook's path (standard library only): ask the warm encoder, never wait long.

`prefetch` hands the prompt to the warm encoder as soon as the hook knows which vaults it serves, when one of them
has card vectors (none: the prompt goes nowhere), without waiting for an answer: the encoder works on it while the
hook opens their indexes and ranks by words, and `similarities` then finds the prompt's vector ready (the warm
process keeps the last few, in memory only).

`similarities` returns card id -> cosine similarity of the prompt to the card, from the warm encoder process
(`cairn.semantic.daemon`) over its Unix socket in the state folder. It returns None, and the prompt is served
lexically, when the channel is off (`[recall] semantic = false`, or `CAIRN_SEMANTIC=0`), when the index has no
vectors (the extra was not installed when it was built), or when the warm process is not up: then it starts it in
the background, for the next prompt. It never raises. `ask` is the same in two steps, the request sent now and its
answer read later: the hook asks before it ranks by words and reads when recall's gates need the similarities, so
the warm encoder finishes the prompt while the hook ranks.

A warm encoder that takes the request and never answers (stuck in its engine, stopped, starved of memory) would
cost every prompt the whole TIMEOUT: the kernel accepts connections for it until its backlog is full. So a client
whose answer did not come in time (or whose connection the backlog refused) records it, `STALL_STAMP` in the state
folder, and for `STALL_SECONDS` after that no client connects: the prompt is served by words at once, for one
stat of the stamp (read at most once a second in a process: one stat a prompt, however many vaults). The warm
encoder removes the stamp when it starts, and after a request that was slow once for a reason that does not recur
(a large side file read for the first time), so the next prompt asks it again; and it ends itself when one request
holds it longer than its watchdog (`cairn.semantic.daemon.WATCHDOG_SECONDS`: a SIGALRM left to its default action
ends the process whatever it is stuck in), so the first client after the rest finds no one listening and starts a
new one. A stuck encoder costs a prompt the TIMEOUT at most once a minute, and only until its watchdog ends it (it
cost every prompt the TIMEOUT until its backlog was full, about 8 prompts, then started a new encoder every
START_EVERY_SECONDS that found the lock taken, for as long as it stayed stuck).

Only `_socket` (the C module; `socket` imports `enum` and `selectors`) is imported, and only when an index has
vectors: without the extra, the hook imports nothing more than before.
"""

import os
import sys
import time

from cairn.hot import (
    CHILD_FLAGS,
    CLEAN_PATH,
    VECTORS_SUFFIX,
    cache_folder,
    dumps,
    exists,
    install_name,
    loads,
    open_log,
    private_folder,
    reap,
    stamped_within,
    state_folder,
    touch_private,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import _socket
    from collections.abc import Callable, Iterable, Mapping

    from cairn.hot.index import IndexReader

SOCKET_NAME = "semantic.sock"
# The longest socket path every system binds (sun_path: 104 bytes on macOS and the BSDs, 108 on Linux, with its NUL).
MAX_SOCKET_PATH = 103
LOG_NAME = "semantic.log"
# Then semantic.log becomes semantic.log.1 and a new file starts (`open_log`): the warm encoder, the background
# encoders and the stall notes write to it for as long as Cairn is installed.
MAX_LOG_BYTES = 4 * 1024 * 1024
START_STAMP = "semantic.start"
START_EVERY_SECONDS = 10.0
TIMEOUT = 0.5
PREFETCH_TIMEOUT = 0.05
# A client whose answer timed out stamps this file; for STALL_SECONDS after it, no client connects (module docstring).
STALL_STAMP = "semantic.stalled"
STALL_SECONDS = 60.0
STALL_REREAD_SECONDS = 1.0
# How the warm encoder is started (`CLEAN_PATH`: it starts in the agent's project, any checkout).
DAEMON_CODE = CLEAN_PATH + "from cairn.semantic.daemon import main; sys.exit(main())"
_OFF = ("0", "false", "off", "no")  # `CAIRN_SEMANTIC`'s values that switch the channel off, in any case
_ON = ("", "1", "true", "on", "yes")  # and those that leave it on (any other value does too: `cairn doctor` names it)
MAX_REPLY_BYTES = 4 * 1024 * 1024


class _Rest:
    """What this process last read of STALL_STAMP (`resting`): in which state folder, when (`time.monotonic()`),
    and until when the channel rests (monotonic; 0: it does not)."""

    __slots__ = ("state", "read_at", "until")

    def __init__(self) -> None:
        self.state = ""
        self.read_at = float("-inf")
        self.until = 0.0


_rest = _Rest()


class Similarities(dict[str, float]):
    """Card id -> similarity to a prompt (a cosine, or with `z` a z-score over the vault's cards). `scale`: for
    z-scores, the standard deviation of the cosines over the vault's cards, so that a z-score difference times
    `scale` is a difference of cosines (`recall._agreement_pick`); None when not known (an older warm encoder)."""

    scale: "float | None" = None


def socket_fits(state: str) -> bool:
    """Whether the warm encoder's socket path in `state` is short enough to bind (a long CAIRN_STATE_DIR is not)."""
    return len(os.fsencode(os.path.join(state, SOCKET_NAME))) <= MAX_SOCKET_PATH


def socket_blocked(state: str) -> bool:
    """Whether a folder stands where the warm encoder's socket goes in `state`: it replaces a file, a symlink or an
    old socket there, never a folder, so it could never listen."""
    path = os.path.join(state, SOCKET_NAME)
    return os.path.isdir(path) and not os.path.islink(path)


def vectors_file(index_path: str) -> str:
    """The side file holding an index's card vectors (`cairn.semantic.vectors.vectors_path` as a string)."""
    return index_path + VECTORS_SUFFIX


def index_key(meta: "dict[str, str]") -> str:
    """What names one written index beyond its commit (its seal, or the checksum of older formats): the side file
    is used only while it names the same."""
    return meta.get("seal") or meta.get("checksum") or ""


def enabled(config: "dict[str, object]") -> bool:
    """`[recall] semantic` of an index's stored config (default on), and not switched off by `CAIRN_SEMANTIC=0`."""
    if switched_off(os.environ):
        return False
    section = config.get("recall")
    return not (isinstance(section, dict) and section.get("semantic") is False)


def switched_off(environ: "Mapping[str, str]") -> bool:
    """Whether `CAIRN_SEMANTIC` in `environ` switches the channel off: `0`, `false`, `off` or `no`, in any case
    (`False` and `OFF` left it on)."""
    return environ.get("CAIRN_SEMANTIC", "").strip().lower() in _OFF


def switch_known(value: str) -> bool:
    """Whether `value` of `CAIRN_SEMANTIC` is one it reads (`_OFF` or `_ON`): `nope` leaves the channel on unsaid."""
    return value.strip().lower() in _OFF + _ON


def resting(state: str) -> bool:
    """Whether a client recently waited for the warm encoder in vain (`STALL_STAMP` younger than STALL_SECONDS):
    then nothing is sent, and the prompt is served by words. The stamp is read at most once every
    STALL_REREAD_SECONDS in a process (one stat a prompt, whatever the number of vaults)."""
    now = time.monotonic()
    if _rest.state != state or now - _rest.read_at >= STALL_REREAD_SECONDS:
        age = stall_age(state)
        _rest.state, _rest.read_at = state, now
        _rest.until = 0.0 if age is None else now + STALL_SECONDS - age
    return now < _rest.until


def stall_age(state: str) -> "float | None":
    """How long ago a client stamped `STALL_STAMP` in `state`, when less than STALL_SECONDS ago; else None (a stamp
    from the future, a clock set back, is not believed)."""
    try:
        age = time.time() - os.stat(os.path.join(state, STALL_STAMP)).st_mtime
    except OSError:
        return None
    return age if 0 <= age < STALL_SECONDS else None


def _stalled(state: str, why: str) -> None:
    """Record that the warm encoder did not answer in time (`resting` is then true for STALL_SECONDS), in this
    process and for every other client; the encoder's log says why once a rest. Never raises."""
    now = time.monotonic()
    _rest.state, _rest.read_at, _rest.until = state, now, now + STALL_SECONDS
    try:
        first = stall_age(state) is None
        wall = time.time()
        touch_private(os.path.join(state, STALL_STAMP), wall)
        if first:
            fd = open_log(os.path.join(state, LOG_NAME), MAX_LOG_BYTES)
            try:
                stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(wall))
                os.write(fd, f"{stamp} cairn semantic client: {why}; words alone for {STALL_SECONDS:g} s\n".encode())
            finally:
                os.close(fd)
    except OSError:
        pass


def prefetch(prompt: str, index_files: "Iterable[str]") -> bool:
    """Send `prompt` to the warm encoder to encode now (the hook calls it once it knows the vaults it serves, before
    it opens their indexes); whether it was sent. Nothing when `CAIRN_SEMANTIC=0`, when the warm encoder is not up
    (its socket is not there: one stat, no import), or when none of `index_files` has card vectors beside it: the
    prompt goes to the warm encoder only when a vault could ask for its similarities (a side file is there only
    while the vault's `[recall] semantic` is on: `cairn index` removes it otherwise). Never waits for an answer,
    never raises."""
    try:
        if switched_off(os.environ):
            return False
        state = state_folder()
        path = os.path.join(state, SOCKET_NAME)
        try:
            os.stat(path)
        except OSError:
            return False
        if not any(exists(vectors_file(index_file)) for index_file in index_files):
            return False
        if resting(state):
            return False
        import _socket

        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(PREFETCH_TIMEOUT)
            try:
                sock.connect(path)
            except (BlockingIOError, TimeoutError):  # it listens, but its backlog is full: it takes no connection
                _stalled(state, "the warm encoder takes no connection")
                return False
            if not _ours(sock, path):
                return False
            request = {"v": 1, "prefetch": True, "prompt": prompt, "install": install_name()}
            sock.sendall(dumps(request, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n")
        finally:
            sock.close()  # the request stays readable by the warm encoder after this end is closed
        return True
    except Exception:  # fail open: similarities() encodes the prompt itself
        return False


def similarities(
    index: "IndexReader",
    prompt: str,
    *,
    want: "Iterable[str]" = (),
    top: int = 20,
    timeout: float = TIMEOUT,
    z: bool = False,
) -> "dict[str, float] | None":
    """Cosine similarity of `prompt` to the `top` most similar cards and to every card in `want`, by card id; None
    when the channel is off, the index has no vectors, or the warm encoder is not up (then started).

    z: z-scores over the vault's cards instead of cosines (`cairn.semantic.daemon.similarities`)."""
    answer = ask(index, prompt, want=want, top=top, timeout=timeout, z=z)
    return None if answer is None else answer()


def ask(
    index: "IndexReader",
    prompt: str,
    *,
    want: "Iterable[str]" = (),
    top: int = 20,
    timeout: float = TIMEOUT,
    z: bool = False,
) -> "Callable[[], dict[str, float] | None] | None":
    """`similarities`, asked now and read later: the request is sent at once and the function returned reads the
    answer (within `timeout` seconds in all; None when there is no answer, or none a cosine or z-score can be). The
    hook asks before it ranks by words and reads the answer when recall's gates need it, so the warm encoder
    finishes the prompt meanwhile. None at once, nothing sent, when the channel is off, the index has no vectors,
    the warm encoder is not up (then started), or what listens is not the user's own process. Neither raises."""
    try:
        if not enabled(index.config):
            return None
        vectors = vectors_file(os.fspath(index.path))
        try:
            os.stat(vectors)
        except OSError:
            return None
        return _send(index, vectors, prompt, list(want), top, timeout, z)
    except Exception:  # fail open: the prompt is served lexically
        return None


def _send(
    index: "IndexReader", vectors: str, prompt: str, want: list[str], top: int, timeout: float, z: bool
) -> "Callable[[], dict[str, float] | None] | None":
    import _socket

    state = state_folder()
    if resting(state):  # a warm encoder kept a prompt waiting lately: words alone, no connection (module docstring)
        return None
    path = os.path.join(state, SOCKET_NAME)
    request = {
        "v": 1,
        "vectors": os.path.abspath(vectors),  # the warm encoder runs in another folder: a relative cache is ours
        "commit": index.meta.get("commit"),
        "index_key": index_key(index.meta),
        "prompt": prompt,
        "top": top,
        "want": want,
        "z": z,
        "cache": os.path.abspath(cache_folder()),  # whose key seals the index and its vectors (`daemon`'s docstring)
        "install": install_name(),  # the warm encoder serves its own install's hooks only (`daemon.Server.answer`)
    }
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        try:
            sock.connect(path)
        except (BlockingIOError, TimeoutError):  # it listens, but its backlog is full: it takes no connection
            sock.close()
            _stalled(state, "the warm encoder takes no connection")
            return None
        except OSError:
            sock.close()
            start_daemon(state)
            return None
        if not _ours(sock, path):  # another user's process: never hand it the prompt (nor start ours in its folder)
            sock.close()
            return None
        try:
            sock.sendall(dumps(request, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n")
        except TimeoutError:
            _stalled(state, "the warm encoder does not read its requests")
            raise
    except BaseException:
        sock.close()
        raise
    # The answer is due `timeout` after the request, however late it is read: with several vaults the hook reads
    # their answers one after another, and a deadline counted from each read made a silent encoder cost each vault
    # the whole timeout in turn (3 vaults, 1.5 s a prompt).
    deadline = time.monotonic() + timeout

    # z-scores over n cards lie within sqrt(n - 1) of 0, cosines within 1: anything else is not an answer
    limit = (max(index.n_cards, 1) ** 0.5 if z else 1.0) + 0.01

    def read() -> "dict[str, float] | None":
        try:
            return _reply(sock, limit=limit, deadline=deadline)
        except (TimeoutError, BlockingIOError):  # nothing, or not all of it, by the deadline (BlockingIOError: read
            # after the deadline, with nothing there yet)
            _stalled(state, f"the warm encoder did not answer within {timeout:g} s")
            return None
        except Exception:  # fail open: the prompt is served lexically
            return None
        finally:
            sock.close()

    return read


def _ours(sock: "_socket.socket", path: str) -> bool:
    """Whether the process listening on the connected `sock` is the user's own (its credentials, where the system
    gives them; else the socket file's owner): a state folder another user can write to must not get the prompt."""
    import _socket

    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:  # pragma: no cover - not Linux
        return os.stat(path).st_uid == os.getuid()
    credentials = sock.getsockopt(_socket.SOL_SOCKET, option, 12)  # struct ucred: pid, uid, gid
    return int.from_bytes(credentials[4:8], sys.byteorder) == os.getuid()


def _reply(
    sock: "_socket.socket",
    timeout: "float | None" = None,
    limit: float = float("inf"),
    deadline: "float | None" = None,
) -> "dict[str, float] | None":
    """The warm encoder's answer, read within `timeout` seconds in all, or by `deadline` (`time.monotonic()`; what
    has arrived by then is still read), TimeoutError after: a process that answers a byte at a time must not hold
    the prompt; None when it is not a usable one, any value past `limit` (or not a finite number) among them."""
    if deadline is None and timeout is not None:
        deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_REPLY_BYTES:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 and chunks:
                raise TimeoutError("the warm encoder did not answer in time")
            sock.settimeout(max(left, 0.0))  # 0: only what is already there (else BlockingIOError)
        chunk = sock.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if chunk.endswith(b"\n"):
            break
    reply = loads(b"".join(chunks).decode("utf-8"))
    if not isinstance(reply, dict) or reply.get("ok") is not True:
        return None
    sims = reply.get("sims")
    if not isinstance(sims, dict):
        return None
    out = Similarities((str(k), float(v)) for k, v in sims.items() if type(v) is float or type(v) is int)
    if not all(-limit <= v <= limit for v in out.values()):  # NaN fails both: garbage, so the words alone decide
        return None
    scale = reply.get("scale")
    if (type(scale) is float or type(scale) is int) and 0 < scale <= 1:  # cosines' spread: never more than 1
        out.scale = float(scale)
    return out


def start_daemon(state: str) -> bool:
    """Start the warm encoder detached (at most once per START_EVERY_SECONDS); whether it was started.

    The process itself exits at once when another one holds the lock, and when the extra is not installed.
    """
    if _STARTED:  # a long-lived process (the MCP server) collects those that have ended since
        reap(_STARTED)
    if not socket_fits(state) or socket_blocked(state):  # it could never listen: no model load every
        return False  # START_EVERY_SECONDS (`cairn doctor` says)
    private_folder(state)
    stamp = os.path.join(state, START_STAMP)
    now = time.time()
    if stamped_within(stamp, now, START_EVERY_SECONDS):
        return False
    touch_private(stamp, now)
    # The log is opened here with `open_private`'s checks: the spawned child would follow a symlink in its place, and
    # wait on a FIFO with the hook waiting for it (posix_spawn returns once the child has run its file actions).
    try:
        log: int | None = open_log(os.path.join(state, LOG_NAME), MAX_LOG_BYTES)
    except OSError:
        log = None
    actions: list[tuple[object, ...]] = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0) if log is None else (os.POSIX_SPAWN_DUP2, log, 2),
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE")}
    env["CAIRN_STATE_DIR"] = state
    try:
        pid = os.posix_spawn(
            sys.executable,
            [sys.executable, *CHILD_FLAGS, "-c", DAEMON_CODE],
            env,
            file_actions=actions,
            setsid=True,
        )
    finally:
        if log is not None:
            os.close(log)
    _STARTED.append(pid)
    return True


_STARTED: "list[int]" = []  # warm encoders this process started and has not reaped yet (`reap`)
