"""Shared fixtures: every test runs with its own HOME, cache, state and git identity, on real git vaults."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ANN = ("Ann Author", "ann@example.com")
BOB = ("Bob Builder", "bob@example.com")


def cairn_executable() -> str:
    """The installed `cairn` beside this interpreter (what a user or an agent runs)."""
    candidate = Path(sys.executable).with_name("cairn")
    found = str(candidate) if candidate.exists() else shutil.which("cairn")
    assert found, "the cairn command is not installed; run `pip install '.[test]'`"
    return found


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
    yield home


def card_text(name: str, summary: str, body: str = "", **fields: Any) -> str:
    """A card file's text; list values are written as YAML flow lists."""
    lines = ["---", f"name: {_yaml_scalar(name)}", f"summary: {_yaml_scalar(summary)}"]
    for key, value in fields.items():
        if isinstance(value, (list, tuple)):
            lines.append(f"{key}: [{', '.join(_yaml_scalar(v) for v in value)}]")
        else:
            lines.append(f"{key}: {value}")
    lines += ["---", "", textwrap.dedent(body).strip() or f"# {name}", ""]
    return "\n".join(lines)


def _yaml_scalar(value: str) -> str:
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


class VaultRepo:
    """A real git repository holding a vault, with helpers to write cards and commit as different authors."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "cards").mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, author: tuple[str, str] = ANN, check: bool = True) -> str:
        env = dict(os.environ)
        env.update(
            GIT_AUTHOR_NAME=author[0],
            GIT_AUTHOR_EMAIL=author[1],
            GIT_COMMITTER_NAME=author[0],
            GIT_COMMITTER_EMAIL=author[1],
        )
        done = subprocess.run(["git", *args], cwd=self.root, env=env, capture_output=True, text=True, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
        return done.stdout.strip()

    def write(self, card_id: str, name: str, summary: str, body: str = "", **fields: Any) -> Path:
        path = self.root / "cards" / f"{card_id}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(card_text(name, summary, body, **fields), encoding="utf-8")
        return path

    def write_raw(self, rel_path: str, data: bytes | str) -> Path:
        path = self.root / rel_path
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            data = data.encode("utf-8")
        path.write_bytes(data)
        return path

    def commit(self, message: str = "Update cards", author: tuple[str, str] = ANN) -> str:
        self.git("add", "-A", author=author)
        self.git("commit", "-q", "--no-verify", "-m", message, author=author)
        return self.git("rev-parse", "HEAD")

    def cairn(
        self, *args: str, input: str | bytes | None = None, env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run the installed `cairn` as a subprocess against this vault."""
        full_env = dict(os.environ)
        full_env.update(env or {})
        text_input = input.decode("utf-8", "replace") if isinstance(input, bytes) else input
        return subprocess.run(
            [cairn_executable(), *args],
            cwd=cwd or self.root,
            env=full_env,
            input=text_input,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )


@pytest.fixture
def vault_repo(tmp_path: Path) -> VaultRepo:
    return VaultRepo(tmp_path / "vault")


@pytest.fixture
def cairn_bin() -> str:
    return cairn_executable()
