"""Freshness: the hook compares the index with HEAD (read by gitrefs, standard library only), serves a stale index
rather than wait, logs that it is stale, and updates it in the background for the next prompt."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from cairn.hot import gitrefs
from cairn.hot.index import IndexReader
from cairn.hot.paths import index_path
from helpers.payloads import log_entries, payload_for
from helpers.vaults import REBASE_ID, VaultRepo, make_vault


def _indexed_commit(root: Path) -> str | None:
    try:
        with IndexReader(index_path(root.resolve())) as index:
            return index.commit
    except Exception:
        return None


def _wait_for_index(root: Path, commit: str, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _indexed_commit(root) == commit:
            return True
        time.sleep(0.2)
    return False


def test_stale_index_is_served_logged_and_updated_in_the_background(vault_repo: VaultRepo) -> None:
    old = make_vault(vault_repo)
    vault_repo.write(
        "python/venv-activate",
        "Activate the venv before pip install",
        "pip install outside the virtualenv puts packages in the system python; activate it first.",
    )
    new = vault_repo.commit("A new card")
    prompt = "git pull --rebase dropped my local commits after a force-push"
    done = vault_repo.cairn(
        "hook", "--format", "claude-code", input=payload_for("claude-code", prompt, vault_repo.root)
    )
    assert done.returncode == 0
    assert REBASE_ID in done.stdout  # served from the cached index, no waiting
    entry = log_entries()[-1]
    assert (entry["stale"], entry["commit"]) == (True, old)
    assert _wait_for_index(vault_repo.root, new)
    again = vault_repo.cairn("hook", "--format", "text", input="activate the virtualenv before pip install")
    assert "python/venv-activate" in again.stdout
    assert log_entries()[-1]["stale"] is False


def test_no_index_is_built_in_the_background(vault_repo: VaultRepo) -> None:
    vault_repo.write("git/x", "Rebase lesson", "git pull --rebase after force-push drops local commits")
    commit = vault_repo.commit()
    assert vault_repo.cairn("hook", "--format", "text", input="rebase force-push").stdout == ""
    assert _wait_for_index(vault_repo.root, commit)


# -- gitrefs against real repositories -------------------------------------------------------------------------


def test_head_on_a_branch_with_loose_and_packed_refs(vault_repo: VaultRepo) -> None:
    vault_repo.write("a/b", "n", "s")
    first = vault_repo.commit()
    assert gitrefs.head_commit(vault_repo.root) == first
    vault_repo.git("pack-refs", "--all", "--prune")
    assert not (vault_repo.root / ".git" / "refs" / "heads" / "main").exists()
    assert gitrefs.head_commit(vault_repo.root) == first
    vault_repo.write("a/c", "n", "s")
    second = vault_repo.commit()  # a loose ref again, newer than packed-refs
    assert gitrefs.head_commit(vault_repo.root) == second


def test_detached_head_and_unborn_branch(vault_repo: VaultRepo) -> None:
    assert gitrefs.head_commit(vault_repo.root) is None  # no commit yet
    vault_repo.write("a/b", "n", "s")
    first = vault_repo.commit()
    vault_repo.write("a/c", "n", "s")
    vault_repo.commit()
    vault_repo.git("checkout", "-q", "--detach", first)
    assert gitrefs.head_commit(vault_repo.root) == first


def test_worktree_with_a_dot_git_file(vault_repo: VaultRepo, tmp_path: Path) -> None:
    vault_repo.write("a/b", "n", "s")
    vault_repo.commit()
    other = tmp_path / "wt"
    vault_repo.git("worktree", "add", "-q", "-b", "side", str(other))
    assert (other / ".git").is_file()
    (other / "cards" / "a" / "new.md").write_text("---\nname: x\nsummary: y\n---\n")
    vault_repo.git("-C", str(other), "add", "-A")
    vault_repo.git("-C", str(other), "commit", "-q", "-m", "side")
    side = vault_repo.git("-C", str(other), "rev-parse", "HEAD")
    assert gitrefs.head_commit(other) == side
    vault_repo.git("pack-refs", "--all", "--prune")
    assert gitrefs.head_commit(other) == side
    assert gitrefs.head_commit(vault_repo.root) == vault_repo.git("rev-parse", "HEAD")


@pytest.mark.parametrize("content", [b"", b"ref: refs/heads/../../../etc/passwd\n", b"garbage\n", b"\xff\xfe"])
def test_damaged_head_reads_as_unknown(vault_repo: VaultRepo, content: bytes) -> None:
    vault_repo.write("a/b", "n", "s")
    vault_repo.commit()
    (vault_repo.root / ".git" / "HEAD").write_bytes(content)
    assert gitrefs.head_commit(vault_repo.root) is None


def test_not_a_repository(tmp_path: Path) -> None:
    assert gitrefs.head_commit(tmp_path) is None
    (tmp_path / ".git").write_text("gitdir: /nonexistent/place\n")
    assert gitrefs.head_commit(tmp_path) is None
    assert os.listdir(tmp_path) == [".git"]


def test_an_index_from_another_cairn_version_is_served_and_refreshed(vault_repo: VaultRepo) -> None:
    """Defaults live in the stored config: after an upgrade the hook serves the old index and refreshes it."""
    import sqlite3

    make_vault(vault_repo)
    target = index_path(vault_repo.root.resolve())
    with sqlite3.connect(target) as db:
        db.execute("UPDATE meta SET value = '0.0.1' WHERE key = 'cairn_version'")
    db.close()
    prompt = "git pull --rebase dropped my local commits after a force-push"
    done = vault_repo.cairn(
        "hook", "--format", "claude-code", input=payload_for("claude-code", prompt, vault_repo.root)
    )
    assert done.returncode == 0 and REBASE_ID in done.stdout
    assert log_entries()[-1]["stale"] is True
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with IndexReader(target) as index:
            if index.meta.get("cairn_version") != "0.0.1":
                break
        time.sleep(0.2)
    with IndexReader(target) as index:
        assert index.meta.get("cairn_version") != "0.0.1"
