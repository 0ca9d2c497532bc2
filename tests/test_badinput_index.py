"""The index's writes under bad conditions: a writer killed mid-write, a full disk, something else in the place of
the index or its seal. The previous index keeps serving (or nothing is served and `cairn index` repairs it), no
temp file stays behind, and every command ends in one clean line."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from cairn.hot.errors import CairnError
from cairn.hot.index import IndexReader
from cairn.hot.vault import find_vault
from cairn.index import build, store
from helpers.hostile import assert_clean_exit
from helpers.payloads import FITTING_PROMPT
from helpers.vaults import REBASE_ID, VaultRepo, cache_dir, make_vault


def _index_file() -> Path:
    (found,) = cache_dir().rglob("index.cairn")
    return found


def _hook(vault_repo: VaultRepo, session: str) -> subprocess.CompletedProcess[str]:
    payload = {
        "session_id": session,
        "cwd": str(vault_repo.root),
        "hook_event_name": "UserPromptSubmit",
        "prompt": FITTING_PROMPT,
    }
    return vault_repo.cairn(
        "hook", "--format", "claude-code", "--vault", str(vault_repo.root), input=json.dumps(payload)
    )


def _temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def _whole(index_file: Path) -> tuple[str, int]:
    """The commit of the index at `index_file`, and its card count, once every check of it (`verify`) passes."""
    with IndexReader(index_file) as reader:
        assert store.verify(reader) == []
        return reader.commit, reader.n_cards


# A `cairn index` that is killed (SIGKILL: no clean-up runs) as it is about to rename a file it wrote into place.
_KILLED_AT_RENAME = """
import os, signal, sys
sys.argv = ["cairn", "index", "--rebuild"]
real = os.replace
def replace(src, dst, *args, **kwargs):
    if os.fspath(dst).endswith(sys.argv_target):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(src, dst, *args, **kwargs)
os.replace = replace
from cairn.cli import main
main()
"""


@pytest.mark.parametrize("at", ["index.cairn", "index.cairn.seal"])
def test_a_writer_killed_mid_write_leaves_the_index_serving_and_no_temp_file_for_good(
    vault_repo: VaultRepo, at: str
) -> None:
    commit = make_vault(vault_repo)
    index_file = _index_file()
    code = _KILLED_AT_RENAME.replace("sys.argv_target", repr(at))
    killed = subprocess.run([sys.executable, "-c", code], cwd=vault_repo.root, capture_output=True, check=False)
    assert killed.returncode == -9
    if at == "index.cairn":  # killed before the new file took the old one's place: the old one is whole
        assert _whole(index_file) == (commit, 2)
        assert REBASE_ID in _hook(vault_repo, "after-kill").stdout
    indexed = vault_repo.cairn("index")
    assert_clean_exit(indexed, 0)
    assert _whole(index_file) == (commit, 2)
    assert _temps(index_file.parent) == []  # what the killed writer left is gone once the next one holds the lock


def test_temp_files_of_another_index_in_the_folder_are_left_to_their_writer(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    folder = _index_file().parent
    other = folder / ".worktree.cairn.abc123.tmp"  # `cairn index --worktree` writing, under its own lock
    other.write_bytes(b"partial")
    assert_clean_exit(vault_repo.cairn("index", "--rebuild"), 0)
    assert other.exists()


def test_a_legacy_temp_file_from_the_future_is_removed(vault_repo: VaultRepo) -> None:
    """A temp file of the old naming whose time is ahead of the clock (the clock set back since it was written) was
    kept until the clock caught up with it; no writer of now leaves one dated in the future."""
    make_vault(vault_repo)
    folder = _index_file().parent
    future, recent = folder / ".index-abc123.tmp", folder / ".index-def456.tmp"
    future.write_bytes(b"partial")
    recent.write_bytes(b"another index's writer, now")
    ahead = time.time() + 86400
    os.utime(future, (ahead, ahead))
    assert_clean_exit(vault_repo.cairn("index", "--rebuild"), 0)
    assert not future.exists() and recent.exists()


def test_a_full_disk_while_sealing_keeps_the_previous_index_and_its_seal(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The seal of the file's bytes was written after the new file was in place: a disk that filled up between
    the two left a new index under the old seal (every check of it failing) and an error saying nothing was
    written."""
    commit = make_vault(vault_repo)
    index_file = _index_file()
    vault_repo.write("misc/third", "A third card", "Something else entirely.")
    vault_repo.commit("Third")
    real = tempfile.mkstemp

    def full_disk_for_the_seal(*args: Any, **kwargs: Any) -> tuple[int, str]:
        if "seal" in str(kwargs.get("prefix", "")):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(*args, **kwargs)

    with monkeypatch.context() as patched, pytest.raises(CairnError, match="No space left on device"):
        patched.setattr(tempfile, "mkstemp", full_disk_for_the_seal)
        build.build_index(find_vault(vault_repo.root))
    assert _whole(index_file) == (commit, 2)
    assert _temps(index_file.parent) == []
    assert build.build_index(find_vault(vault_repo.root)).n_cards == 3
    assert _whole(index_file)[1] == 3


def test_a_fifo_in_place_of_the_seal_never_blocks_audit_or_index(vault_repo: VaultRepo) -> None:
    commit = make_vault(vault_repo)
    index_file = _index_file()
    seal = store.seal_path(index_file)
    seal.unlink()
    os.mkfifo(seal)
    audited = vault_repo.cairn("audit")  # timeout: it waited for a writer of the FIFO for good
    assert_clean_exit(audited, 1)
    assert "not the ones its writer sealed" in audited.stdout
    assert_clean_exit(vault_repo.cairn("index"), 0)
    assert seal.is_file() and _whole(index_file) == (commit, 2)
    assert_clean_exit(vault_repo.cairn("audit"), 0)


def test_a_fifo_in_place_of_the_lint_cache_never_blocks_lint(vault_repo: VaultRepo) -> None:
    """Bug fixed: the card facts the vault-wide lint rules cache beside the index were read with `read_bytes`, so a
    FIFO in their place left `cairn lint` (and the pre-commit hook) waiting for a writer for good."""
    make_vault(vault_repo)
    facts = _index_file().with_name("lint-facts.json")
    facts.unlink(missing_ok=True)
    os.mkfifo(facts)
    assert_clean_exit(vault_repo.cairn("lint"), 0)  # timeout: it waited on the FIFO
    assert facts.is_file()  # the cache written anew in its place


def test_a_fifo_card_in_the_working_tree_never_blocks_the_worktree_index(vault_repo: VaultRepo) -> None:
    """Bug fixed: the working tree's index (`--worktree`, for authors) read every file under cards/ with
    `read_bytes`, so a FIFO named like a card left `cairn index --worktree` and `cairn recall --worktree` waiting
    for a writer for good. It is left out with a finding, as a symlink is."""
    make_vault(vault_repo)
    os.mkfifo(vault_repo.root / "cards" / "git" / "pipe.md")
    indexed = vault_repo.cairn("index", "--worktree")  # timeout: it waited on the FIFO
    assert_clean_exit(indexed, 0)
    assert (
        "cards/git/pipe.md:0: file-unreadable a card must be a regular file, not a FIFO or a device" in indexed.stderr
    )
    recalled = vault_repo.cairn("recall", "--worktree", FITTING_PROMPT)
    assert_clean_exit(recalled, 0)
    assert REBASE_ID in recalled.stdout


@pytest.mark.parametrize("which", ["index.cairn", "index.cairn.seal"])
def test_a_folder_in_place_of_the_index_or_its_seal_is_replaced_by_cairn_index(
    vault_repo: VaultRepo, which: str
) -> None:
    commit = make_vault(vault_repo)
    index_file = _index_file()
    target = index_file.with_name(which)
    target.unlink()
    (target / "inner").mkdir(parents=True)
    (target / "inner" / "file").write_text("x")
    assert_clean_exit(vault_repo.cairn("audit"), 1)
    hooked = _hook(vault_repo, "folder")  # (it starts `cairn index` in the background, which may repair it first)
    assert (hooked.returncode, hooked.stderr) == (0, "")
    if which == "index.cairn":
        assert hooked.stdout == ""  # nothing to serve from
    indexed = vault_repo.cairn("index")
    assert_clean_exit(indexed, 0)  # was: "cannot write the index ... (Is a directory)" on every run
    assert target.is_file() and _whole(index_file) == (commit, 2)
    assert REBASE_ID in _hook(vault_repo, "repaired").stdout


def test_a_lock_file_that_cannot_take_the_pid_does_not_stop_the_index(vault_repo: VaultRepo) -> None:
    """The holder's pid is a courtesy for the busy message: a file size limit (or a full disk) that refuses those
    few bytes failed the whole index with `Error: File too large`, naming no file."""

    make_vault(vault_repo)
    index_file = _index_file()
    lock = index_file.with_name("index.cairn.lock")
    lock.unlink()

    done = _index_within(vault_repo, 0, "--rebuild")
    assert_clean_exit(done, 1)
    assert f"cannot write the index at {index_file}" in done.stderr  # the file and what to do, in one line
    assert len(done.stderr.strip().splitlines()) == 1
    assert _temps(index_file.parent) == []


@pytest.mark.parametrize("limit_bytes", [0, 16], ids=["nothing", "half-a-key"])
def test_a_cache_key_that_cannot_be_written_leaves_no_temp_file(vault_repo: VaultRepo, limit_bytes: int) -> None:
    """Bug fixed: when the disk was full (or a file size limit hit) while the cache key was written, its temp file
    `.index.key.<pid>.tmp` stayed in the cache folder. Half a key written is refused the same way, and the next
    `cairn index` with room makes a whole one."""

    make_vault(vault_repo)
    for found in cache_dir().iterdir():  # no key, no index: the next `cairn index` makes the key first
        if found.is_dir():
            for child in found.rglob("*"):
                if child.is_file():
                    child.unlink()
        else:
            found.unlink()

    done = _index_within(vault_repo, limit_bytes)
    assert_clean_exit(done, 1)
    assert not list(cache_dir().glob(".index.key.*")), sorted(p.name for p in cache_dir().iterdir())
    again = _index_within(vault_repo, None)
    assert again.returncode == 0, again.stderr


def test_a_cache_key_that_cannot_be_read_is_named_in_the_error(vault_repo: VaultRepo) -> None:
    """Bug fixed: with the cache's key unreadable (here a folder in its place), `cairn index` said "cannot write the
    index at .../index.cairn (Is a directory)", naming a file that is no folder; it now names the one refused. So
    does `cairn review`, whose own index files are in a temp folder but sealed with that key."""
    make_vault(vault_repo)
    key = cache_dir() / "index.key"
    key.unlink()
    key.mkdir()
    done = vault_repo.cairn("index", "--rebuild")
    assert_clean_exit(done, 1)
    assert f": {key} is a folder, where Cairn keeps a file of its own; remove that folder" in done.stderr, done.stderr
    review = vault_repo.cairn("review", "HEAD..HEAD", "--json")
    assert f"{key} is a folder" in json.loads(review.stdout)["routing"]["note"]


def _index_within(vault_repo: VaultRepo, limit_bytes: int | None, *args: str) -> subprocess.CompletedProcess[str]:
    """`cairn index ARGS` in a process whose files may grow to `limit_bytes` (a full disk), or without a limit."""
    import resource

    def limit() -> None:
        if limit_bytes is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    return subprocess.run(
        [sys.executable, "-c", "from cairn.cli import main; main()", "index", *args],
        cwd=vault_repo.root,
        capture_output=True,
        text=True,
        preexec_fn=limit,
        check=False,
    )


def _keys_made_at_once(threads: int) -> tuple[list[bytes], list[BaseException]]:
    """`make_index_key` in `threads` threads started together: the keys they returned, and what they raised."""
    import threading

    from cairn.hot import make_index_key

    start = threading.Barrier(threads)
    keys: list[bytes] = []
    errors: list[BaseException] = []

    def make() -> None:
        start.wait()
        try:
            keys.append(make_index_key())
        except BaseException as exc:  # any failure is the bug
            errors.append(exc)

    running = [threading.Thread(target=make) for _ in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join()
    return keys, errors


def test_threads_of_one_process_making_the_cache_key_at_once_agree_on_one_whole_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug fixed: the key's temp file was named by the process id alone and opened with O_TRUNC, so two threads of
    one process (the MCP server's) making the key at once wrote one file: one's truncation emptied the key the other
    had just linked into place, and it failed ("cannot write the cache key") or sealed indexes with a key that then
    changed under them."""
    from cairn.hot import KEY_BYTES, index_key_file

    for round_ in range(30):
        monkeypatch.setenv("CAIRN_CACHE_DIR", str(tmp_path / f"cache-{round_}"))
        keys, errors = _keys_made_at_once(8)
        assert errors == []
        key_file = Path(index_key_file())
        assert len(key_file.read_bytes()) == KEY_BYTES and set(keys) == {key_file.read_bytes()}, round_
        assert [p.name for p in key_file.parent.iterdir()] == [key_file.name]  # no temp file left


def test_an_index_past_a_file_size_limit_says_to_raise_it(vault_repo: VaultRepo) -> None:
    """Bug fixed: under a file size limit (`ulimit -f`) the index said "make sure that disk has space and the folder
    is writable", which neither was the matter; it names the limit, and once it is raised the index is built."""
    make_vault(vault_repo)
    index_file = _index_file()
    done = _index_within(vault_repo, 4096, "--rebuild")
    assert_clean_exit(done, 1)
    assert f"cannot write the index at {index_file} (File too large" in done.stderr, done.stderr
    assert "`ulimit -f`" in done.stderr and "disk has space" not in done.stderr, done.stderr
    assert _temps(index_file.parent) == []
    again = _index_within(vault_repo, None, "--rebuild")
    assert again.returncode == 0, again.stderr


def test_an_index_under_a_low_memory_limit_says_to_raise_it(vault_repo: VaultRepo) -> None:
    """Bug fixed: under a memory limit (`ulimit -v`, here 60 MiB) the index of a two-card vault said "out of memory;
    the input is too large", which it is not; the line names the limit, nothing is left half-written, and once the
    limit is raised the index is built."""
    import resource

    make_vault(vault_repo)
    index_file = _index_file()

    def little_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (60 << 20, 60 << 20))

    done = subprocess.run(
        [sys.executable, "-c", "from cairn.cli import main; main()", "index", "--rebuild"],
        cwd=vault_repo.root,
        capture_output=True,
        text=True,
        preexec_fn=little_memory,
        check=False,
    )
    assert_clean_exit(done, 1)
    assert done.stderr.startswith("Error: out of memory") and "memory limit (`ulimit -v`)" in done.stderr, done.stderr
    assert _temps(index_file.parent) == []
    again = _index_within(vault_repo, None, "--rebuild")
    assert again.returncode == 0, again.stderr
