"""The background index the hook starts for a stale vault: one at a time per vault. A burst of prompts during a long
`cairn index` must not queue `cairn index` processes behind it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from cairn.hot.index import IndexReader
from cairn.hot.paths import index_path
from cairn.index import store
from helpers.payloads import FITTING_PROMPT, log_entries, payload_for
from helpers.vaults import VaultRepo, cairn_executable, make_vault

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds the started processes in /proc")


def _index_processes(root: Path) -> list[int]:
    """The running `cairn index --vault ROOT` processes (the hook's `spawn_index`), by their command lines."""
    wanted = b"\0index\0--vault\0" + str(root).encode() + b"\0"
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                command = Path(f"/proc/{name}/cmdline").read_bytes()
            except OSError:
                continue
            if wanted in command:
                found.append(int(name))
    return found


def _hooks(root: Path, n: int) -> None:
    """`n` hooks of the vault started at once, as an agent's burst of prompts; each must end by itself."""
    payload = payload_for("claude-code", FITTING_PROMPT, root).encode()
    env = dict(os.environ, CAIRN_VAULT=str(root))
    procs = [
        subprocess.Popen(
            [cairn_executable(), "hook", "--format", "claude-code"],
            cwd=root,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for _ in range(n)
    ]
    for proc in procs:
        _, err = proc.communicate(payload, timeout=120)
        assert proc.returncode == 0 and b"Traceback" not in err, err


def _indexed_commit(root: Path) -> str | None:
    try:
        with IndexReader(index_path(root)) as index:
            return index.commit
    except Exception:
        return None


def test_no_index_is_queued_behind_one_that_runs_and_the_next_prompt_starts_it(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    root = vault_repo.root.resolve()
    vault_repo.write("misc/new", "A new lesson", "about shell quoting in make recipes")
    new = vault_repo.commit()  # the index is stale now
    index_file = index_path(root)
    started: list[int] = []
    try:
        with store.writer_lock(index_file):  # another `cairn index` of the vault runs (a long full build, say)
            _hooks(root, 20)
            started = _index_processes(root)
            assert started == []  # was: one more `cairn index` per 30 s, each waiting for this lock
        entries = log_entries()
        assert len(entries) == 20 and all(e["stale"] and e["injected"] == [] for e in entries)
        _hooks(root, 1)  # the writer is gone: this prompt starts the index
        deadline = time.monotonic() + 120
        while _indexed_commit(root) != new and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _indexed_commit(root) == new
    finally:
        for pid in started:  # without the fix, the processes that queued behind the lock
            os.kill(pid, signal.SIGTERM)


def test_the_background_index_reads_the_vault_whatever_repository_gits_environment_names(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed: the hook's background index left out GIT_DIR, GIT_WORK_TREE and GIT_INDEX_FILE but kept
    GIT_OBJECT_DIRECTORY and GIT_COMMON_DIR, so in an agent started where they name another repository (a git hook's
    or a dotfiles setup's environment) it read that repository's objects, found no vault commit, and failed: the hook
    served the old index for as long as the variables stayed set. The started index now runs without them."""
    make_vault(vault_repo)
    other = tmp_path / "other"
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    vault_repo.write("docker/prune", "Prune dangling images", "docker image prune removes dangling layers.")
    commit = vault_repo.commit("a card the index has not seen")
    payload = payload_for("claude-code", FITTING_PROMPT, vault_repo.root).encode()
    env = dict(
        os.environ,
        CAIRN_VAULT=str(vault_repo.root),
        GIT_OBJECT_DIRECTORY=str(other / ".git" / "objects"),
        GIT_COMMON_DIR=str(other / ".git"),
    )
    done = subprocess.run(
        [cairn_executable(), "hook", "--format", "claude-code"], cwd=vault_repo.root, env=env, input=payload,
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and not done.stderr, done.stderr
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and (
        _indexed_commit(vault_repo.root) != commit or _index_processes(vault_repo.root)
    ):
        time.sleep(0.3)
    assert _indexed_commit(vault_repo.root) == commit
