"""`cairn install` / `cairn uninstall`: agent settings merged, kept, backed up, idempotent; git hooks in a vault."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cairn import install
from helpers.payloads import FITTING_PROMPT, payload_for
from helpers.vaults import REBASE_ID, VaultRepo, cairn_executable, make_vault

SETTINGS = {"claude-code": ".claude/settings.json", "codex": ".codex/hooks.json", "gemini": ".gemini/settings.json"}
EVENTS = {"claude-code": "UserPromptSubmit", "codex": "UserPromptSubmit", "gemini": "BeforeAgent"}


def cairn(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [cairn_executable(), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        check=False,
        timeout=60,
    )


def cairn_commands(settings: dict[str, object], event: str) -> list[str]:
    groups = settings["hooks"][event]  # type: ignore[index]
    return [h["command"] for g in groups for h in g["hooks"] if "cairn" in h["command"]]


@pytest.fixture
def configured(vault_repo: VaultRepo) -> VaultRepo:
    """A vault in the user configuration, so an install without --vault has something to serve."""
    make_vault(vault_repo)
    added = cairn("vault", "add", str(vault_repo.root), "--name", "team")
    assert added.returncode == 0, added.stderr
    return vault_repo


@pytest.mark.parametrize("agent", sorted(SETTINGS))
def test_install_keeps_other_hooks_and_is_idempotent(agent: str, tmp_path: Path, configured: VaultRepo) -> None:
    project = tmp_path / "project"
    target = project / SETTINGS[agent]
    target.parent.mkdir(parents=True)
    theirs: dict[str, Any] = {
        "model": "keep-me",
        "hooks": {
            EVENTS[agent]: [{"hooks": [{"type": "command", "command": "echo their-own-hook"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        },
    }
    target.write_text(json.dumps(theirs))
    first = cairn("install", agent, "--project", str(project))
    assert first.returncode == 0, first.stderr
    assert f"installed: {target}" in first.stdout
    data = json.loads(target.read_text())
    assert data["model"] == "keep-me"
    assert data["hooks"]["Stop"] == theirs["hooks"]["Stop"]
    assert data["hooks"][EVENTS[agent]][0] == theirs["hooks"][EVENTS[agent]][0]
    assert [c.split(" hook ")[1] for c in cairn_commands(data, EVENTS[agent])] == [f"--format {agent}"]
    backups = list(target.parent.glob(target.name + ".bak-*"))
    assert len(backups) == 1 and json.loads(backups[0].read_text()) == theirs

    second = cairn("install", agent, "--project", str(project))
    assert f"unchanged: {target}" in second.stdout
    assert json.loads(target.read_text()) == data
    assert len(list(target.parent.glob(target.name + ".bak-*"))) == 1

    removed = cairn("uninstall", agent, "--project", str(project))
    assert removed.returncode == 0
    assert json.loads(target.read_text()) == theirs
    again = cairn("uninstall", agent, "--project", str(project))
    assert "Nothing to remove" in again.stdout
    assert json.loads(target.read_text()) == theirs


def test_install_creates_settings_and_updates_a_changed_command(tmp_path: Path, configured: VaultRepo) -> None:
    project = tmp_path / "p"
    project.mkdir()
    assert cairn("install", "claude-code", cwd=project).returncode == 0
    target = project / ".claude" / "settings.json"
    assert not list(target.parent.glob("*.bak-*"))  # nothing to back up
    vault = tmp_path / "team vault"
    updated = cairn("install", "claude-code", "--vault", str(vault), "--scope", "git", cwd=project)
    assert "updated:" in updated.stdout
    assert not list(target.parent.glob("*.bak-*"))  # it held only Cairn's own hook
    [command] = cairn_commands(json.loads(target.read_text()), "UserPromptSubmit")
    assert command.endswith(f"hook --format claude-code --vault '{vault}' --scope git")
    named = cairn("install", "claude-code", "--vault", "team", cwd=project)
    assert named.returncode == 0, named.stderr
    [command] = cairn_commands(json.loads(target.read_text()), "UserPromptSubmit")
    assert command.endswith("hook --format claude-code --vault team")  # a configured vault's name stays a name


def test_uninstall_takes_away_the_file_it_created(tmp_path: Path, configured: VaultRepo) -> None:
    project = tmp_path / "p"
    project.mkdir()
    assert cairn("install", "claude-code", cwd=project).returncode == 0
    done = cairn("uninstall", "claude-code", cwd=project)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"removed: {project / '.claude' / 'settings.json'} (it held only Cairn's hook)\n"
    assert list(project.iterdir()) == []  # no `{}`, no backup, no empty .claude/


def test_install_refuses_with_no_vault_and_writes_nothing(tmp_path: Path, isolated_env: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    for args in (("claude-code",), ("codex", "--user")):
        done = cairn("install", *args, cwd=project)
        assert done.returncode == 1
        assert done.stderr.startswith("Error: no vault is configured for the hook to serve")
        assert "run `cairn vault add PATH` first (nothing was written)" in done.stderr
        assert done.stderr.count("\n") == 1
    assert list(project.iterdir()) == [] and not (isolated_env / ".codex").exists()
    twice = cairn("install", "claude-code", "--vault", "a", "--vault", "b", cwd=project)
    assert twice.returncode == 2 and "given 2 times" in twice.stderr


def test_install_inside_an_unregistered_vault_names_the_fix(vault_repo: VaultRepo, isolated_env: Path) -> None:
    make_vault(vault_repo)
    done = cairn("install", "claude-code", "--user", cwd=vault_repo.root / "cards")
    assert done.returncode == 1
    assert f"run `cairn vault add {vault_repo.root.resolve()}` first (nothing was written)" in done.stderr
    assert not (isolated_env / ".claude").exists()


def test_project_install_never_writes_into_the_vault(configured: VaultRepo) -> None:
    inside = configured.root / "cards"
    elsewhere = {"CAIRN_VAULT": str(configured.root)}  # names the vault; says nothing about the project folder
    for cwd in (configured.root, inside):
        done = cairn("install", "claude-code", cwd=cwd, env=elsewhere)
        assert done.returncode == 1
        assert f"is inside the vault {configured.root.resolve()}; install with --user" in done.stderr
    assert not (configured.root / ".claude").exists() and not (inside / ".claude").exists()
    project = configured.root.parent / "project"
    project.mkdir()
    assert cairn("install", "claude-code", cwd=project, env=elsewhere).returncode == 0


def test_user_install_goes_to_home(tmp_path: Path, isolated_env: Path, configured: VaultRepo) -> None:
    assert cairn("install", "gemini", "--user", cwd=tmp_path).returncode == 0
    data = json.loads((isolated_env / ".gemini" / "settings.json").read_text())
    handler = data["hooks"]["BeforeAgent"][0]["hooks"][0]
    assert handler["type"] == "command" and handler["timeout"] == 10000
    both = cairn("install", "gemini", "--user", "--project", str(tmp_path))
    assert both.returncode == 2


def test_broken_settings_are_never_overwritten(tmp_path: Path, configured: VaultRepo) -> None:
    target = tmp_path / ".codex" / "hooks.json"
    target.parent.mkdir()
    target.write_text("{ this is: not json")
    done = cairn("install", "codex", "--project", str(tmp_path))
    assert done.returncode == 1
    assert done.stderr.startswith("Error: ") and "not valid JSON" in done.stderr
    assert target.read_text() == "{ this is: not json"
    assert not list(target.parent.glob("*.bak-*"))


@pytest.mark.parametrize("agent", sorted(SETTINGS))
def test_the_installed_command_really_runs_the_hook(agent: str, vault_repo: VaultRepo, tmp_path: Path) -> None:
    make_vault(vault_repo)
    project = tmp_path / "project"
    project.mkdir()
    assert cairn("install", agent, "--project", str(project), "--vault", str(vault_repo.root)).returncode == 0
    settings = json.loads((project / SETTINGS[agent]).read_text())
    [command] = cairn_commands(settings, EVENTS[agent])
    done = subprocess.run(
        ["sh", "-c", command],
        input=payload_for(agent, FITTING_PROMPT, project),
        text=True,
        capture_output=True,
        cwd=project,
        check=False,
    )
    assert done.returncode == 0
    out = json.loads(done.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == EVENTS[agent]
    assert REBASE_ID in out["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize("agent", sorted(SETTINGS))
def test_shipped_templates_match_what_install_writes(agent: str) -> None:
    template = Path(install.__file__).parent / "templates" / "hooks" / agent / Path(SETTINGS[agent]).name
    expected = {"hooks": {EVENTS[agent]: [install.hook_entry(agent, install.hook_command(agent))]}}
    assert json.loads(template.read_text()) == expected
    repo_root = Path(__file__).resolve().parent.parent
    assert (repo_root / "hooks" / agent / template.name).read_text() == template.read_text()  # the symlink


# -- git hooks ------------------------------------------------------------------------------------------------------


def _indexed_commit(root: Path) -> str | None:
    from cairn.hot.index import IndexReader
    from cairn.hot.paths import index_path

    try:
        with IndexReader(index_path(root.resolve())) as index:
            return index.commit
    except Exception:
        return None


def test_git_hooks_keep_the_index_current(vault_repo: VaultRepo, tmp_path: Path) -> None:
    make_vault(vault_repo)
    done = cairn("install", "git-hooks", "--vault", str(vault_repo.root))
    assert done.returncode == 0, done.stderr
    hooks = vault_repo.root / ".git" / "hooks"
    for name in install.GIT_HOOKS:
        assert os.access(hooks / name, os.X_OK)
        assert install.GIT_HOOK_MARKER in (hooks / name).read_text()
    assert "unchanged" in cairn("install", "git-hooks", "--vault", str(vault_repo.root)).stdout
    vault_repo.write("python/venv", "Activate the venv", "pip install outside the venv hits the system python")
    vault_repo.git("add", "-A")
    vault_repo.git("commit", "-q", "-m", "new card")  # hooks enabled this time
    head = vault_repo.git("rev-parse", "HEAD")
    assert _indexed_commit(vault_repo.root) == head  # when git returns, not some time later: the next prompt sees it
    prompt = payload_for("json", "activate the venv before pip install, it went into the system python", tmp_path)
    served = subprocess.run(
        [cairn_executable(), "hook", "--format", "json", "--vault", str(vault_repo.root)],
        input=prompt,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    assert [c["id"] for c in json.loads(served.stdout)["cards"]] == ["python/venv"]
    removed = cairn("uninstall", "git-hooks", "--vault", str(vault_repo.root))
    assert removed.stdout.count("removed:") == len(install.GIT_HOOKS) == 4
    assert not any((hooks / n).exists() for n in install.GIT_HOOKS)


def test_git_hooks_never_clobber_a_foreign_hook(vault_repo: VaultRepo, tmp_path: Path) -> None:
    make_vault(vault_repo)
    hooks = vault_repo.root / ".git" / "hooks"
    mine = hooks / "post-merge"
    witness = tmp_path / "ran"
    mine.write_text(f"#!/bin/sh\necho merged >> '{witness}'\n")
    mine.chmod(0o755)
    refused = cairn("install", "git-hooks", "--vault", str(vault_repo.root))
    assert refused.returncode == 1
    assert "not Cairn's" in refused.stderr and "--chain" in refused.stderr
    assert not (hooks / "post-commit").exists()
    chained = cairn("install", "git-hooks", "--vault", str(vault_repo.root), "--chain")
    assert chained.returncode == 0
    assert "chained:" in chained.stdout
    assert (hooks / "post-merge.local").read_text().startswith("#!/bin/sh\necho merged")
    subprocess.run([str(hooks / "post-merge"), "0"], cwd=vault_repo.root, check=True)
    assert witness.read_text() == "merged\n"  # the chained hook still runs
    cairn("uninstall", "git-hooks", "--vault", str(vault_repo.root))
    assert mine.read_text().startswith("#!/bin/sh\necho merged")
    assert not (hooks / "post-merge.local").exists()


def test_git_hooks_respect_core_hooks_path(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    vault_repo.git("config", "core.hooksPath", ".githooks")
    assert cairn("install", "git-hooks", "--vault", str(vault_repo.root)).returncode == 0
    assert (vault_repo.root / ".githooks" / "post-commit").exists()
    assert not (vault_repo.root / ".git" / "hooks" / "post-commit").exists()


def test_install_indexes_the_vault_so_the_first_prompt_is_served(vault_repo: VaultRepo, tmp_path: Path) -> None:
    vault_repo.write("git/rebase", "Rebase drops commits", "After a force-push, compare with git reflog first.")
    vault_repo.commit()
    assert _indexed_commit(vault_repo.root) is None
    project = tmp_path / "project"
    project.mkdir()
    done = cairn("install", "claude-code", "--project", str(project), "--vault", str(vault_repo.root))
    assert done.returncode == 0, done.stderr
    assert "Index of" in done.stdout
    assert _indexed_commit(vault_repo.root) == vault_repo.git("rev-parse", "HEAD")


def test_the_undo_line_of_a_project_install_undoes_it_from_where_it_ran(tmp_path: Path, configured: VaultRepo) -> None:
    """Bug fixed: `cairn install codex --project DIR` printed "Undo with `cairn uninstall codex`", without the
    --project: run where the install was run, it removed nothing."""
    project, elsewhere = tmp_path / "acme project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    done = cairn("install", "codex", "--project", str(project), cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    [undo] = [line for line in done.stdout.splitlines() if line.startswith("Undo with `")]
    args = shlex.split(undo.removeprefix("Undo with `").removesuffix("`."))
    assert args[:2] == ["cairn", "uninstall"]
    removed = cairn(*args[1:], cwd=elsewhere)
    assert removed.returncode == 0, removed.stderr
    assert not (project / SETTINGS["codex"]).exists()


def _logged_hooks(vault_repo: VaultRepo, tmp_path: Path) -> Path:
    """Cairn's git hooks installed, each running `cairn index` through a wrapper that logs the hook's run."""
    done = cairn("install", "git-hooks", "--vault", str(vault_repo.root))
    assert done.returncode == 0, done.stderr
    log = tmp_path / "index-runs.log"
    wrapper = tmp_path / "cairn-logged"
    wrapper.write_text(f'#!/bin/sh\necho run >> "{log}"\nexec "{cairn_executable()}" "$@"\n')
    wrapper.chmod(0o755)
    for name in install.GIT_HOOKS:
        hook = vault_repo.root / ".git" / "hooks" / name
        text = hook.read_text()
        [line] = [x for x in text.splitlines() if x.startswith("CAIRN_BIN=")]
        assert line == f"CAIRN_BIN={cairn_executable()}"  # a full path: git may run hooks without cairn on PATH
        hook.write_text(text.replace(line, f"CAIRN_BIN={wrapper}"))
    return log


def _runs(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_git_hooks_index_once_per_rebase_and_not_for_a_file_checkout(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: a rebase of four commits ran `cairn index` 14 times (post-commit and post-rewrite amend for every
    commit), and `git checkout -- FILE` (HEAD unchanged) ran it too. Once, at the rebase's end, is enough."""
    make_vault(vault_repo)
    vault_repo.git("branch", "upstream")
    for n in range(4):
        vault_repo.write(f"ops/local-{n}", f"Local lesson {n}", f"Local summary number {n}.")
        vault_repo.commit(f"local {n}")
    vault_repo.git("checkout", "-q", "upstream")
    vault_repo.write("ops/upstream", "Upstream lesson", "A lesson the team merged meanwhile.")
    vault_repo.commit("upstream")
    vault_repo.git("checkout", "-q", "main")
    log = _logged_hooks(vault_repo, tmp_path)

    (vault_repo.root / "cards" / "ops" / "local-0.md").write_text("scribbled")
    vault_repo.git("checkout", "--", "cards/ops/local-0.md")
    assert _runs(log) == 0

    vault_repo.git("rebase", "-q", "upstream")
    assert _runs(log) == 1
    assert _indexed_commit(vault_repo.root) == vault_repo.git("rev-parse", "main")

    vault_repo.git("commit", "-q", "--allow-empty", "-m", "one more")
    assert _runs(log) == 2 and _indexed_commit(vault_repo.root) == vault_repo.git("rev-parse", "main")


@pytest.mark.xfail(
    strict=True,
    reason="known gap: a rebase that only fast-forwards runs no post-rewrite, and its post-checkout runs before the "
    "branch moves; the next prompt finds the index stale, serves nothing from the vault and starts `cairn index` "
    "(a reference-transaction hook would see the move)",
)
def test_git_hooks_follow_a_fast_forward_rebase(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """A rebase that only fast-forwards rewrites nothing (no post-rewrite): the index should still follow it."""
    make_vault(vault_repo)
    vault_repo.git("checkout", "-q", "-b", "upstream")
    vault_repo.write("ops/upstream", "Upstream lesson", "A lesson the team merged meanwhile.")
    vault_repo.commit("upstream")
    vault_repo.git("checkout", "-q", "main")
    _logged_hooks(vault_repo, tmp_path)
    vault_repo.git("rebase", "-q", "upstream")
    assert vault_repo.git("rev-parse", "main") == vault_repo.git("rev-parse", "upstream")
    assert _indexed_commit(vault_repo.root) == vault_repo.git("rev-parse", "main")
