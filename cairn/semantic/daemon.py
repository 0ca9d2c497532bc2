"""The warm encoder: a local process that keeps the model loaded and answers the hook over a Unix socket.

`python -m cairn.semantic.daemon` (the hook starts it on demand, see `cairn.hot.semantic`) loads the encoder, then
listens on `$CAIRN_STATE_DIR/semantic.sock` (mode 0600, in a folder only its owner can enter), one request per
connection, and exits after `CAIRN_SEMANTIC_IDLE` seconds (default 900) without one. One process per state folder:
a second one finds the lock taken and exits.

A request takes milliseconds (a prompt's encoding; a large side file's first read, a second or two). One that holds
the process for `WATCHDOG_SECONDS` means it is stuck (an engine that never returns), and a stuck process would go
on holding the lock and the socket, so no other could start: an alarm, left to SIGALRM's default action, ends it
then, whatever it is stuck in (a Python handler would wait for the call to return). The clients meanwhile serve by
words without connecting (`cairn.hot.semantic.STALL_STAMP`, written by a client that waited in vain). A process
removes that stamp when it starts, and after a request whose cost does not recur (its first, the engine's first run;
one that read a side file for the first time: a large vault's vectors, read again after each `cairn index`), so a
client that gave up during it asks again at the next prompt; a request slow for any other reason leaves the clients
their rest.

A request is one JSON object. `{"v": 1, "prefetch": true, "prompt": TEXT}`: encode the prompt now, keep its vector
for the request that follows (the hook sends it as soon as it knows its vaults, and does not read the answer,
`{"ok": true}`). `{"v": 1, "vectors": PATH, "commit": C, "index_key": K, "cache": FOLDER, "prompt": TEXT, "top": N,
"want": [ID, ...], "z": BOOL}`; the answer `{"ok": true, "sims": {ID: cosine, or z-score with "z"}}` (the `top` most similar cards and every card
in `want`; with "z" also `"scale"`, the cosines' standard deviation over the vault's cards), or `{"ok": false, "error": WHY}` (a side file that is missing, damaged, or of another commit).

One process serves every hook of its install and state folder, whatever cache folder each hook uses
(`CAIRN_CACHE_DIR`, `XDG_CACHE_HOME`): each cache has its own key, and the request names the hook's cache
(`"cache"`; a hook that does not say is taken to use this process's). The key of that cache must then check three
things that agree: the side file's seal, the seal of the index beside it (`PATH` without `.vec`), and the side
file's header naming that index (its commit and its seal), which must also be the index the request names (`C`,
`K`). So a request chooses which of the user's caches is read, never what is believed: a side file is used only
when the key of the cache that holds its index sealed both. Only the user reaches the socket (0600, in a 0700
folder), and the cache folder it names is one that user's hook reads and trusts itself.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import select
import signal
import socket
import sys
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from cairn.hot import index_key, install_name, open_private
from cairn.hot.errors import CairnError
from cairn.hot.index import IndexReader
from cairn.hot.paths import private_folder, state_folder
from cairn.hot.semantic import MAX_SOCKET_PATH, STALL_STAMP, Similarities, socket_blocked, socket_fits
from cairn.hot.semantic import index_key as index_seal
from cairn.semantic import encoder as enc
from cairn.semantic import vectors

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

SOCKET_NAME = "semantic.sock"
LOCK_NAME = "semantic.lock"
PID_NAME = "semantic.pid"
IDLE_SECONDS = 900.0
MAX_IDLE_SECONDS = 365 * 24 * 3600.0
MAX_REQUEST_BYTES = 1024 * 1024
MAX_TOP = 1000
CONNECTION_TIMEOUT = 5.0
WATCHDOG_SECONDS = 60  # a request still being handled after this long ends the process (module docstring)
_CACHED_FILES = 8
_CACHED_QUERIES = 4


def idle_seconds() -> float:
    """`CAIRN_SEMANTIC_IDLE` (default IDLE_SECONDS, also for a value `idle_given` refuses)."""
    given = idle_given(os.environ.get("CAIRN_SEMANTIC_IDLE", ""))
    return IDLE_SECONDS if given is None else given


def idle_given(text: str) -> float | None:
    """The seconds `text` of `CAIRN_SEMANTIC_IDLE` gives: a number above 0, at most MAX_IDLE_SECONDS, which `select`
    can wait (`inf` and 1e20 failed it, after the model had loaded); None when it gives none."""
    try:
        value = float(text)
    except ValueError:
        return None
    return min(value, MAX_IDLE_SECONDS) if value > 0 else None


def similarities(
    vf: vectors.VectorFile,
    query: npt.NDArray[np.float32],
    top: int | None,
    want: Sequence[str] = (),
    z: bool = False,
) -> Similarities:
    """Card id -> cosine of the card's best passage to `query`: the `top` best cards (all when None) and `want`.

    z: z-scores instead (the cosine less its mean over all the vault's cards, over their standard deviation, which
    is the result's `scale`): e5's cosines sit in a narrow band whose level moves with language and vault; z-scores
    carry across them."""
    import numpy as np

    n = len(vf.ids)
    if n == 0:
        return Similarities()
    sims = vf.best_of_passages(vf.matrix @ query)
    scale = None
    if z:
        scale = max(float(sims.std()), 1e-6)
        sims = (sims - sims.mean()) / scale
    chosen: list[int]
    if top is None or top >= n:
        chosen = list(range(n))
    elif top > 0:
        chosen = sorted(int(i) for i in np.argpartition(-sims, top - 1)[:top])
    else:
        chosen = []
    out = Similarities((vf.ids[i], round(float(sims[i]), 4)) for i in chosen)
    out.scale = None if scale is None else round(scale, 6)
    if want:
        position = {card_id: i for i, card_id in enumerate(vf.ids)}
        for card_id in want:
            i = position.get(card_id)
            if i is not None:
                out[card_id] = round(float(sims[i]), 4)
    return out


class Server:
    """The loaded model and the side files it has read (a few, reloaded when a file changes)."""

    def __init__(self, encoder: enc.Encoder) -> None:
        self.encoder = encoder
        # path -> (what it was read at, the side file or why it was refused)
        self._files: OrderedDict[str, tuple[tuple[object, ...], vectors.VectorFile | Exception]] = OrderedDict()
        self._queries: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._reencoding: set[str] = set()
        self.reads = 0  # side files read from disk (`_file`): a slow request that read one was slow once
        # Why `serve` stops, for the next hook to start a warm encoder of its own (`answer`): a hook of another
        # install asked, or this install's engine is no longer this process's.
        self.retired: str | None = None

    def answer(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, dict) or request.get("v") != 1:
            return {"ok": False, "error": "bad request"}
        install = request.get("install")
        if isinstance(install, str) and install != install_name():
            # A hook of another install (Cairn upgraded in another venv, the extra installed elsewhere, a second
            # agent's Cairn): its encoder may differ, and so would the side files it and this process each expect
            # (one asked for the other's vectors forever, each side re-encoding). This process stops; the hook
            # starts its own install's on a later prompt and is served by words meanwhile.
            self.retired = f"a hook of another install asked ({install[:200]})"
            return {"ok": False, "error": "another install"}
        if request.get("prefetch") is True:
            if not isinstance(request.get("prompt"), str):
                return {"ok": False, "error": "bad request"}
            self._query(request["prompt"])
            return {"ok": True}
        path, prompt = request.get("vectors"), request.get("prompt")
        top, want = request.get("top", 20), request.get("want", [])
        if not isinstance(path, str) or not path.endswith(vectors.SUFFIX) or not isinstance(prompt, str):
            return {"ok": False, "error": "bad request"}
        if type(top) is not int or not 0 <= top <= MAX_TOP or not isinstance(want, list):
            return {"ok": False, "error": "bad request"}
        cache = request.get("cache")  # the hook's cache folder (module docstring); none said: this process's
        if cache is not None and (not isinstance(cache, str) or not os.path.isabs(cache) or "\0" in cache):
            return {"ok": False, "error": "bad request"}
        key = index_key(cache)
        if key is None:
            return {"ok": False, "error": "no cache key"}
        try:
            vf = self._file(path, key)
        except vectors.OtherModel as exc:
            installed = enc.installed_model()
            if installed != enc.MODEL:
                # onnxruntime installed or removed since this process started: every index is encoded for the new
                # engine now, whose vectors this process cannot compare with its prompts (nor would a re-encoding
                # help). It stops, and the next hook starts one with the install's engine: else the channel stayed
                # off while any prompt came within its idle time, and `cairn doctor` said all was well.
                self.retired = f"the install encodes as {installed} now, this process as {enc.MODEL}"
            else:
                self._reencode(path, cache)
            return {"ok": False, "error": f"no usable vectors: {type(exc).__name__}"}
        except (OSError, ValueError, CairnError) as exc:
            return {"ok": False, "error": f"no usable vectors: {type(exc).__name__}"}
        if vf.header.get("commit") != request.get("commit") or vf.header.get("index_key") != request.get("index_key"):
            return {"ok": False, "error": "stale vectors"}
        query = self._query(prompt)
        wanted = [w for w in want if isinstance(w, str)]
        sims = similarities(vf, query, top, wanted, request.get("z") is True)
        if sims.scale is None:
            return {"ok": True, "sims": sims}
        return {"ok": True, "sims": sims, "scale": sims.scale}

    def _query(self, prompt: str) -> npt.NDArray[np.float32]:
        """The prompt's vector; the last few are kept (by the sha256 of what the encoder reads of the prompt), so a
        prefetched prompt and the vaults of one layered prompt are encoded once (in this process's memory only,
        never written)."""
        text = enc.prompt_text(prompt)
        key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        found = self._queries.get(key)
        if found is None:
            found = self.encoder.query_texts([text])[0]
            self._queries[key] = found
            while len(self._queries) > _CACHED_QUERIES:
                self._queries.popitem(last=False)
        return found

    def _reencode(self, path: str, cache: str | None) -> None:
        """Another encoder's side file (Cairn upgraded, or onnxruntime installed or removed since the vault was
        indexed): encode the index's cards again in a detached process, once per file while this process lives, so
        the channel comes back without waiting for the next `cairn index`; the prompt is served by words meanwhile."""
        if path in self._reencoding:
            return
        self._reencoding.add(path)
        index_file = Path(path[: -len(vectors.SUFFIX)])
        if index_file.is_file():
            with contextlib.suppress(OSError):
                vectors.start_background(index_file, cache)  # sealed with that cache's key, not this process's

    def _file(self, path: str, key: bytes) -> vectors.VectorFile:
        """The side file at `path`, its seal checked under `key` and its header naming the index beside it, whose
        seal holds under `key` too (module docstring); kept while neither file nor the key changes. A file refused for
        what it holds is refused again from memory until it changes: read again at every prompt, a damaged side file
        of a large vault cost each prompt the whole read and seal, and counted as a first read, which lifts the
        clients' rest."""
        index_file = path[: -len(vectors.SUFFIX)]
        st, ist = os.stat(path), os.stat(index_file)
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns, ist.st_ino, ist.st_size, ist.st_mtime_ns, key)
        cached = self._files.get(path)
        if cached is not None and cached[0] == stamp:
            self._files.move_to_end(path)
            if isinstance(cached[1], Exception):
                raise cached[1].with_traceback(None)
            return cached[1]
        self.reads += 1
        try:
            vf = vectors.load(Path(path), key)
            with IndexReader(index_file, key) as reader:
                if vf.header.get("commit") != reader.commit or vf.header.get("index_key") != index_seal(reader.meta):
                    raise ValueError("the vectors are not of the index beside them")
        except (ValueError, CairnError) as exc:  # what the files hold, not a read that may succeed next time
            self._keep(path, stamp, exc)
            raise
        self._keep(path, stamp, vf)
        return vf

    def _keep(self, path: str, stamp: tuple[object, ...], found: vectors.VectorFile | Exception) -> None:
        self._files[path] = (stamp, found)
        self._files.move_to_end(path)
        while len(self._files) > _CACHED_FILES:
            self._files.popitem(last=False)


def take_lock(state: str) -> BinaryIO | None:
    """The state folder's warm-encoder lock, held until the file returned is closed; None when another process
    holds it. OSError when anything but a regular file is in its place (never followed through a symlink)."""
    private_folder(state)  # 0700: only its owner reaches the socket
    lock = open(open_private(os.path.join(state, LOCK_NAME), os.O_RDWR | os.O_CREAT), "r+b")  # noqa: SIM115
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        lock.close()
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return None
        raise
    return lock


def serve(
    state: str,
    idle: float,
    server: Server | None = None,
    lock: BinaryIO | None = None,
    watchdog: int = WATCHDOG_SECONDS,
) -> int:
    """Listen in `state` until idle; 0 when it ran and stopped, 3 when another process already serves. `lock`: the
    lock already taken (`take_lock`), else it is taken here. `watchdog`: the seconds one request may take before the
    process is ended by SIGALRM (0: never)."""
    if lock is None:
        lock = take_lock(state)
        if lock is None:
            return 3
    server = server or Server(enc.Encoder())
    path = os.path.join(state, SOCKET_NAME)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a socket left by a process that died: we hold the lock, so it is no one's
        _log("removed the socket of a process that ended without cleaning up (killed, or stopped by its watchdog)")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(old_umask)
    os.chmod(path, 0o600)
    listener.listen(16)
    ours = os.stat(path).st_ino
    pid_file = os.path.join(state, PID_NAME)
    with contextlib.suppress(OSError):  # made anew, never written through a symlink in its place
        with contextlib.suppress(FileNotFoundError):
            os.unlink(pid_file)
        with open(open_private(pid_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL), "w") as handle:
            handle.write(f"{os.getpid()}\n")
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)  # the watchdog: the kernel ends the process, stuck or not
    stall_stamp = os.path.join(state, STALL_STAMP)
    _unstall(stall_stamp)  # a process just started is not stuck: clients may connect again
    _log(f"listening on {path} (pid {os.getpid()}, idle {idle:g}s)")
    last = time.monotonic()
    handled = 0
    try:
        while True:
            remaining = idle - (time.monotonic() - last)
            if remaining <= 0:
                _log("idle: stopping")
                return 0
            ready, _, _ = select.select([listener], [], [], remaining)
            if not ready:
                continue
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            reads = server.reads
            with conn:
                signal.alarm(watchdog)
                try:
                    _handle(conn, server)
                finally:
                    signal.alarm(0)
            if handled == 0 or server.reads != reads:  # slow once at most: a client that gave up may ask again
                _unstall(stall_stamp)
            handled += 1
            if server.retired is not None:
                _log(f"{server.retired}: stopping, for the next hook to start its own")
                return 0
            last = time.monotonic()
            try:
                if os.stat(path).st_ino != ours:
                    _log("socket replaced: stopping")
                    return 0
            except FileNotFoundError:
                _log("socket removed: stopping")
                return 0
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == ours:
                os.unlink(path)
        with contextlib.suppress(OSError):
            os.unlink(pid_file)
        lock.close()


def _unstall(stamp: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(stamp)


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(0)  # the `finally` above removes the socket


def _handle(conn: socket.socket, server: Server) -> None:
    # The request must arrive within CONNECTION_TIMEOUT in all, not per read: a client that sent a byte every few
    # seconds held the process until its watchdog ended it, and every other client waited meanwhile.
    deadline = time.monotonic() + CONNECTION_TIMEOUT
    try:
        data = b""
        while len(data) <= MAX_REQUEST_BYTES:
            left = deadline - time.monotonic()
            if left <= 0:
                return  # no whole request in time: the client gave up long ago (the hook waits half a second)
            conn.settimeout(left)
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
            if data.endswith(b"\n"):
                break
        if len(data) > MAX_REQUEST_BYTES:
            reply: dict[str, Any] = {"ok": False, "error": "request too large"}
        else:
            try:
                # as the clients encode it: a path's undecodable bytes (a cache folder in Latin-1) and a prompt's
                # lone surrogate (half an emoji an agent's cut left) are lone surrogates, not a bad request
                request = json.loads(data.decode("utf-8", "surrogatepass"))
            except (UnicodeDecodeError, ValueError):
                reply = {"ok": False, "error": "bad request"}
            else:
                reply = server.answer(request)
        conn.settimeout(CONNECTION_TIMEOUT)
        conn.sendall(json.dumps(reply, ensure_ascii=False).encode("utf-8") + b"\n")
    except OSError:
        return
    except Exception as exc:  # one bad request never stops the process
        _log(f"error: {type(exc).__name__}: {exc}"[:300])
        with contextlib.suppress(OSError):
            conn.sendall(b'{"ok": false, "error": "internal error"}\n')


def _log(message: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"{stamp} cairn semantic: {message}\n")
        sys.stderr.flush()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-h", "--help"):
        sys.stdout.write(
            "Usage: python -m cairn.semantic.daemon\n\n  The warm encoder the hook asks (started by it).\n"
        )
        return 0
    # Started in the folder the hook ran in, the agent's project: a process that lives for minutes or hours must not
    # hold it as its working directory (a mount it is on could not be unmounted meanwhile). Every path it reads is
    # absolute: the state folder's, and each request's.
    with contextlib.suppress(OSError):
        os.chdir("/")
    state = state_folder()
    if not socket_fits(state):
        _log(
            f"cannot start: the socket path in {state} is longer than {MAX_SOCKET_PATH} bytes; set CAIRN_STATE_DIR shorter"
        )
        return 1
    if socket_blocked(state):  # else found only after the model loaded, as a traceback, at every start
        _log(f"cannot start: a folder stands at {os.path.join(state, SOCKET_NAME)}, where its socket goes; remove it")
        return 1
    try:  # before the model loads (a second or two of CPU): a process started beside a running one exits at once
        lock = take_lock(state)
    except OSError as exc:
        _log(f"cannot start: {exc}")
        return 1
    if lock is None:
        return 3
    try:
        server = Server(enc.Encoder())
    except enc.SemanticUnavailable as exc:
        lock.close()
        _log(f"cannot start: {exc}")
        return 1
    return serve(state, idle_seconds(), server, lock)


if __name__ == "__main__":
    sys.exit(main())
