"""Fixtures: every test runs with its own HOME, cache, state and git identity, on real git vaults. The helpers the
tests share live in the `helpers` package."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.vaults import ANN, VaultRepo, cairn_executable


def pytest_configure(config: pytest.Config) -> None:
    """A suite started as a background job (`pytest &` in a script, `nohup`) inherits SIGINT, or SIGHUP, ignored, and
    every `cairn` a test starts would too (an ignored signal stays ignored across exec): the tests that stop one
    with Ctrl-C or a hang-up then failed, or waited for ever. An ignored signal is caught by a handler that does
    nothing instead: this process still ignores it, and a child starts with its default (exec resets handlers), as
    from a terminal."""
    for signum in (signal.SIGINT, signal.SIGHUP):
        if signal.getsignal(signum) is signal.SIG_IGN:
            signal.signal(signum, _still_ignored)


def _still_ignored(signum: int, frame: object) -> None:
    """A handler that does nothing (`pytest_configure`)."""


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CAIRN_CACHE_DIR", str(home / "cache"))
    monkeypatch.setenv("CAIRN_STATE_DIR", str(home / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "xdg-cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "xdg-state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg-config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    (home / ".gitconfig").write_text(
        f"[user]\n\tname = {ANN[0]}\n\temail = {ANN[1]}\n[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n"
    )
    for var in ("CAIRN_VAULT", "CAIRN_SCOPE", "GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "PRE_COMMIT_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PRE_COMMIT_HOME", str(tmp_path_factory.getbasetemp() / "pre-commit-cache"))
    # The semantic extra, when installed, stays off (no card vectors, no warm encoder) but in its own tests.
    monkeypatch.setenv("CAIRN_SEMANTIC", "0")
    yield home


@pytest.fixture
def vault_repo(tmp_path: Path) -> VaultRepo:
    return VaultRepo(tmp_path / "vault")


@pytest.fixture
def cairn_bin() -> str:
    return cairn_executable()
