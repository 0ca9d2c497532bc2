"""Cairn's commands stop the git processes they start (gitpython keeps `git cat-file` running per repository).

A command run in a long-lived process (the MCP server, a test run, a library caller) must not leave them behind:
left to the garbage collector they outlive the call, and pytest, collecting them in an unrelated test, failed CI
with "subprocess ... is still running" (stop 29). Each command here runs in this process and is checked for
children left alive.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cairn.cards.catalog import card_record
from cairn.hot.vault import find_vault
from cairn.index.build import build_commit_index, build_index, config_of, served_commit
from helpers.vaults import BOB, REBASE_ID, VaultRepo, make_vault

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads children from /proc")


def _git_children() -> list[str]:
    """The command lines of this process's live children that run git."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        state, parent = fields[0], int(fields[1])
        if parent == os.getpid() and state != "Z" and "git" in cmdline:
            found.append(cmdline.strip())
    return found


@pytest.fixture
def vault(vault_repo: VaultRepo) -> VaultRepo:
    make_vault(vault_repo)
    vault_repo.write(REBASE_ID, "Pull --rebase after a force-push", "Compare with git reflog before you pull.")
    vault_repo.commit("Reword the git card", author=BOB)
    vault_repo.git("mv", "cards/docker/layer-cache-order.md", "cards/docker/cache-order.md")
    vault_repo.commit("Rename the docker card")
    assert _git_children() == []
    return vault_repo


def test_library_calls_leave_no_git_process(vault: VaultRepo) -> None:
    loaded = find_vault(vault.root)
    build_index(loaded, rebuild=True)
    assert _git_children() == []
    served_commit(loaded)
    config_of(loaded)
    assert _git_children() == []
    build_commit_index(loaded, "HEAD~1", vault.root / "old.cairn")
    assert _git_children() == []
    card_record(loaded, REBASE_ID)
    assert _git_children() == []


@pytest.mark.parametrize(
    "args",
    [
        ("index", "--rebuild"),
        ("review", "HEAD~2..HEAD"),
        ("audit",),
        ("show", REBASE_ID),
        ("lint", "--staged"),
        ("sanitize", "--out", "{tmp}/copy"),
        ("doctor",),
    ],
    ids=lambda args: args[0],
)
def test_commands_leave_no_git_process(vault: VaultRepo, tmp_path: Path, args: tuple[str, ...]) -> None:
    done = vault.invoke(*(arg.format(tmp=tmp_path) for arg in args))
    assert "Traceback" not in done.stderr, done.stderr
    assert _git_children() == [], f"cairn {args[0]} left git running"
