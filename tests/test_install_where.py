"""Where `cairn install AGENT --project DIR` writes the hook, and who reads it there: a file the team commits gets a
command every teammate can run; a personal file gets this machine's path. `cairn doctor` and `cairn uninstall` find
Cairn's hook wherever an agent reads hooks (Claude Code's settings.local.json, Codex's config.toml)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from helpers.vaults import VaultRepo, cairn_executable, make_vault, run_cairn

SHARED = {"claude-code": ".claude/settings.json", "codex": ".codex/hooks.json", "gemini": ".gemini/settings.json"}
EVENTS = {"claude-code": "UserPromptSubmit", "codex": "UserPromptSubmit", "gemini": "BeforeAgent"}
MACHINE = str(Path(cairn_executable()).resolve().parent)  # this machine's install: no teammate has it


@pytest.fixture
def project(vault_repo: VaultRepo, tmp_path: Path) -> Path:
    """A configured vault, and a project folder under git."""
    make_vault(vault_repo)
    assert run_cairn("vault", "add", str(vault_repo.root), "--name", "team", cwd=tmp_path).returncode == 0
    folder = tmp_path / "project"
    folder.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    return folder


def _commands(path: Path, event: str) -> list[str]:
    data = json.loads(path.read_text())
    return [h["command"] for g in data["hooks"][event] for h in g["hooks"] if " hook " in h["command"]]


def _agent_checks(cwd: Path, env: dict[str, str] | None = None) -> list[dict[str, object]]:
    done = run_cairn("doctor", "--cwd", str(cwd), "--json", cwd=cwd, env=env)
    return [c for c in json.loads(done.stdout)["checks"] if c["area"] == "agent"]


@pytest.mark.parametrize("agent", sorted(SHARED))
def test_a_project_install_writes_no_path_of_this_machine_into_a_shared_file(agent: str, project: Path) -> None:
    """Bug fixed: `cairn install AGENT --project DIR` wrote this user's `PYTHON -S /path/to/venv/bin/cairn` into the
    project's .claude/settings.json, .codex/hooks.json or .gemini/settings.json, files a team commits: on every
    teammate's machine that path does not exist and the hook failed on each prompt. Claude Code now gets its
    personal .claude/settings.local.json (this machine's path, never committed); Codex and Gemini CLI, which read
    no personal project file, get `cairn hook --format AGENT`, run from each teammate's PATH."""
    done = run_cairn("install", agent, "--project", str(project), cwd=project)
    assert done.returncode == 0, done.stderr
    shared = project / SHARED[agent]
    if agent == "claude-code":
        assert not shared.exists()
        local = project / ".claude" / "settings.local.json"
        [command] = _commands(local, EVENTS[agent])
        assert MACHINE in command  # the personal file runs this machine's cairn, fast (`-S`)
        assert "settings.local.json is your personal settings for this project (not committed)" in done.stdout
        assert f"Note: git does not ignore {local}" in done.stdout
    else:
        assert _commands(shared, EVENTS[agent]) == [f"cairn hook --format {agent}"]
        assert MACHINE not in shared.read_text()
        assert "is the project's shared settings (committed, read by every teammate's" in done.stdout
    on_path = {"PATH": f"{MACHINE}{os.pathsep}{os.environ['PATH']}"}  # a teammate with cairn on PATH: passes
    assert all(c["ok"] for c in _agent_checks(project, on_path)), _agent_checks(project, on_path)


def test_a_folder_baked_into_a_shared_file_is_named_as_this_machines(project: Path, vault_repo: VaultRepo) -> None:
    """`--vault ~/team-lessons` in Codex's shared hooks.json is this machine's folder: teammates' clones are
    elsewhere. Install says so and what to do; a registered vault's name, which each machine resolves, is fine."""
    done = run_cairn("install", "codex", "--project", str(project), "--vault", str(vault_repo.root), cwd=project)
    assert done.returncode == 0, done.stderr
    assert f"Note: the hook names --vault {vault_repo.root.resolve()}, a folder of this machine" in done.stdout
    assert "install with `--vault team`" in done.stdout
    done = run_cairn("install", "codex", "--project", str(project), "--vault", "team", cwd=project)
    assert done.returncode == 0, done.stderr
    assert _commands(project / SHARED["codex"], EVENTS["codex"]) == ["cairn hook --format codex --vault team"]
    assert "a folder of this machine" not in done.stdout


def test_a_teammate_without_the_shared_files_vault_name_is_told_to_register_it(
    project: Path, vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed: the committed .codex/hooks.json ran `cairn hook --format codex --vault team`; a teammate who had
    registered the team's clone as `team-lessons` got from doctor the fix `cairn install codex --project DIR`, which
    rewrote the team's shared file without --vault, for everyone. Install now says each teammate registers the vault
    by that name, and doctor's fix is to do so."""
    done = run_cairn("install", "codex", "--project", str(project), "--vault", "team", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "each runs `cairn vault add PATH --name team` once" in done.stdout
    shared = project / SHARED["codex"]
    committed = shared.read_text()
    # The teammate's own configuration, and `cairn` on their PATH (as the shared file runs it)
    on_path = f"{Path(cairn_executable()).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    teammate = {"XDG_CONFIG_HOME": str(tmp_path / "teammate-config"), "PATH": on_path}
    added = run_cairn("vault", "add", str(vault_repo.root), "--name", "team-lessons", cwd=project, env=teammate)
    assert added.returncode == 0, added.stderr
    [codex] = [c for c in _agent_checks(project, teammate) if c["subject"] == "codex (project)"]
    assert codex["ok"] is False and "names no vault configured here" in str(codex["detail"]), codex
    assert codex["fix"] == "cairn vault add PATH --name team"
    assert "`cairn vault remove` it first" in str(codex["detail"])
    assert run_cairn("vault", "remove", "team-lessons", cwd=project, env=teammate).returncode == 0
    fixed = run_cairn(*str(codex["fix"]).replace("PATH", str(vault_repo.root)).split()[1:], cwd=project, env=teammate)
    assert fixed.returncode == 0, fixed.stderr
    [codex] = [c for c in _agent_checks(project, teammate) if c["subject"] == "codex (project)"]
    assert codex["ok"] is True, codex
    assert shared.read_text() == committed


def test_a_baked_vault_name_is_checked_as_the_hook_reads_it_not_as_a_folder_where_doctor_runs(
    project: Path, vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed: after a vault registered as `vault` was renamed `team`, the shared hook's `--vault vault` served
    nothing (the hook reads a bare word as a configured vault's name only), yet `cairn doctor` run from the vault's
    parent folder said `ok`: it read the word as the folder `./vault` there."""
    done = run_cairn("install", "codex", "--project", str(project), "--vault", "team", cwd=project)
    assert done.returncode == 0, done.stderr
    shared = project / SHARED["codex"]
    shared.write_text(shared.read_text().replace("--vault team", "--vault vault"))
    on_path = {"PATH": f"{MACHINE}{os.pathsep}{os.environ['PATH']}"}
    assert (tmp_path / vault_repo.root.name / "cairn.toml").is_file()  # doctor's folder holds `vault/`, a vault
    done = run_cairn("doctor", "--cwd", str(project), "--json", cwd=tmp_path, env=on_path)
    [codex] = [c for c in json.loads(done.stdout)["checks"] if c["subject"] == "codex (project)"]
    assert codex["ok"] is False and "--vault 'vault' names no vault configured here" in str(codex["detail"]), codex
    assert codex["fix"] == "cairn vault add PATH --name vault"


def test_a_shared_install_off_the_path_names_this_installations_cairn(project: Path) -> None:
    """It named the hook's launcher file (`.../cairn/__main__.py`), which is not what a teammate puts on PATH."""
    done = run_cairn("install", "gemini", "--project", str(project), cwd=project, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert f"Note: your PATH does not find this installation's `cairn` ({cairn_executable()}): put" in done.stdout


def test_claudes_personal_file_is_not_named_when_git_ignores_it(project: Path) -> None:
    (project / ".gitignore").write_text(".claude/settings.local.json\n")
    done = run_cairn("install", "claude-code", "--project", str(project), cwd=project)
    assert done.returncode == 0, done.stderr
    assert "does not ignore" not in done.stdout


def test_asking_git_whether_the_personal_file_is_ignored_runs_nothing_the_project_configures(
    project: Path, tmp_path: Path
) -> None:
    """`git check-ignore` in the project ran its `core.fsmonitor`: a project downloaded with its `.git` ran a
    command of its choosing when `cairn install claude-code --project` (or doctor) asked about the personal file."""
    ran = tmp_path / "fsmonitor-ran"
    subprocess.run(["git", "config", "core.fsmonitor", f"touch {ran}; false"], cwd=project, check=True)
    (project / ".gitignore").write_text(".claude/\n")
    done = run_cairn("install", "claude-code", "--project", str(project), cwd=project)
    assert done.returncode == 0, done.stderr
    assert "does not ignore" not in done.stdout  # git still answered: the file is ignored
    assert not ran.exists()


@pytest.mark.parametrize("agent", sorted(SHARED))
def test_doctor_fails_an_older_cairns_path_in_a_shared_file_and_its_fix_moves_it(agent: str, project: Path) -> None:
    """The hooks an older Cairn wrote into shared files: doctor names the machine's path (it passed them before,
    as they run here), and its fix leaves the shared file as the team had it, the hook in its right place."""
    shared = project / SHARED[agent]
    shared.parent.mkdir()
    older = f"/home/ann/.venv/bin/python3 -S {cairn_executable()} hook --format {agent}"
    handler = {"type": "command", "command": older, "timeout": 10}
    theirs: dict[str, Any] = {
        "model": "keep-me",
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send"}]}]},
    }
    shared.write_text(json.dumps({**theirs, "hooks": {**theirs["hooks"], EVENTS[agent]: [{"hooks": [handler]}]}}))

    [check] = [c for c in _agent_checks(project) if c["subject"] == f"{agent} (project)"]
    assert check["ok"] is False
    assert check["detail"] == (
        f"{shared} is the project's shared settings (committed), and its hook runs /home/ann/.venv/bin/python3, "
        "a path of this machine that teammates do not have"
    )
    assert check["fix"] == f"cairn install {agent}"  # doctor ran in the project
    fixed = run_cairn(*str(check["fix"]).split()[1:], cwd=project)
    assert fixed.returncode == 0, fixed.stderr
    if agent == "claude-code":
        assert json.loads(shared.read_text()) == theirs  # out of the shared file, every other key kept
        assert f"removed: Cairn's hook from {shared}, the project's shared settings" in fixed.stdout
        assert len(_commands(project / ".claude" / "settings.local.json", EVENTS[agent])) == 1
    else:
        assert _commands(shared, EVENTS[agent]) == [f"cairn hook --format {agent}"]
    on_path = {"PATH": f"{MACHINE}{os.pathsep}{os.environ['PATH']}"}
    assert all(c["ok"] for c in _agent_checks(project, on_path)), _agent_checks(project, on_path)


def test_uninstall_takes_cairns_hook_out_of_both_of_claudes_project_files(project: Path) -> None:
    """`cairn uninstall claude-code` took Cairn's hook only out of settings.json: one in the personal
    settings.local.json (where install now writes it, or put there by hand) kept running."""
    shared = project / ".claude" / "settings.json"
    shared.parent.mkdir()
    older = f"{cairn_executable()} hook --format claude-code"
    shared.write_text(
        json.dumps({"model": "keep-me", "hooks": {"UserPromptSubmit": [{"hooks": [{"command": older}]}]}})
    )
    local = project / ".claude" / "settings.local.json"
    local.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": older}]}]}}))

    done = run_cairn("uninstall", "claude-code", "--project", str(project), cwd=project)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (f"removed: Cairn's hook from {local}\nremoved: Cairn's hook from {shared}\n")
    assert json.loads(shared.read_text()) == {"model": "keep-me"}
    assert json.loads(local.read_text()) == {}  # written by hand, not by install: kept (install's own would go)
    again = run_cairn("uninstall", "claude-code", "--project", str(project), cwd=project)
    assert again.stdout == f"Nothing to remove: {local}, {shared} have no Cairn hook.\n"


def test_uninstall_in_a_project_names_the_users_own_hook_it_left(project: Path) -> None:
    """Bug fixed: after the README's `cairn install claude-code --user`, the help's first example, `cairn uninstall
    claude-code` run in a project, said only "Nothing to remove: ... have no Cairn hook." and the hook kept running
    in every project: it now names the user's own file and the command that takes the hook out of it."""
    assert run_cairn("install", "claude-code", "--user", cwd=project).returncode == 0
    mine = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    local, shared = project / ".claude" / "settings.local.json", project / ".claude" / "settings.json"

    done = run_cairn("uninstall", "claude-code", cwd=project)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"Nothing to remove: {local}, {shared} have no Cairn hook; your own {mine} has one: "
        "`cairn uninstall claude-code --user`.\n"
    )
    assert len(_commands(mine, EVENTS["claude-code"])) == 1  # left as it was
    assert run_cairn("uninstall", "claude-code", "--user", cwd=project).returncode == 0
    again = run_cairn("uninstall", "claude-code", cwd=project)
    assert again.stdout == f"Nothing to remove: {local}, {shared} have no Cairn hook.\n"


@pytest.mark.parametrize("local_text", ['{"a": 1,}', "read-only"])
def test_a_personal_file_install_cannot_write_leaves_the_shared_file_as_it_was(project: Path, local_text: str) -> None:
    """Bug fixed: with an older Cairn's hook in the shared settings.json, install took it out first, then failed on
    a settings.local.json it could not write, saying "nothing was written": the project had no Cairn hook left."""
    shared = project / ".claude" / "settings.json"
    shared.parent.mkdir()
    before = json.dumps(
        {
            "model": "keep-me",
            "hooks": {"UserPromptSubmit": [{"hooks": [{"command": "cairn hook --format claude-code"}]}]},
        }
    )
    shared.write_text(before)
    local = project / ".claude" / "settings.local.json"
    local.write_text("{}" if local_text == "read-only" else local_text)
    if local_text == "read-only":
        local.chmod(0o444)
    done = run_cairn("install", "claude-code", "--project", str(project), cwd=project)
    assert done.returncode == 1
    assert done.stderr.startswith(f"Error: {local}") and "nothing was written" in done.stderr, done.stderr
    assert shared.read_text() == before


@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_a_shared_file_linked_out_of_the_project_is_never_changed(command: str, project: Path, tmp_path: Path) -> None:
    """Bug fixed: a cloned project committing `.claude/settings.json` as a link to the user's own settings had
    Cairn's hook taken out of them by a project install (and uninstall): Cairn stopped serving every project."""
    user = tmp_path / "user-claude" / "settings.json"
    user.parent.mkdir()
    mine = {
        "model": "opus",
        "hooks": {"UserPromptSubmit": [{"hooks": [{"command": "cairn hook --format claude-code"}]}]},
    }
    user.write_text(json.dumps(mine))
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").symlink_to(user)
    done = run_cairn(command, "claude-code", "--project", str(project), cwd=project)
    assert done.returncode == 1
    assert f"leads out of the project, to {user} (a symlink), and holds Cairn's hook" in done.stderr
    assert json.loads(user.read_text()) == mine
    assert not (project / ".claude" / "settings.local.json").exists()


def test_the_codex_config_install_names_is_the_one_codex_reads_under_codex_home(project: Path, tmp_path: Path) -> None:
    """Bug fixed: with CODEX_HOME set, install told older Codex versions to set `codex_hooks = true` in
    ~/.codex/config.toml, a file Codex (and doctor) then never read. It names CODEX_HOME's config.toml."""
    home = tmp_path / "codex-home"
    home.mkdir()
    env = {"CODEX_HOME": str(home)}
    done = run_cairn("install", "codex", "--user", cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    named = re.search(r"`codex_hooks = true` under `\[features\]` in (\S+)\. ", done.stdout)
    assert named is not None, done.stdout
    config = Path(named.group(1)).expanduser()
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[features]\ncodex_hooks = false\n")  # what that file switches, Codex obeys
    off = [c for c in _agent_checks(project, env) if "codex_hooks = false" in str(c["detail"])]
    assert off and off[0]["ok"] is False, _agent_checks(project, env)


@pytest.mark.parametrize("where", ["user", "project"])
def test_codex_hooks_in_config_toml_are_seen_by_doctor_and_uninstall(
    where: str, project: Path, isolated_env: Path
) -> None:
    """Codex reads hooks from inline `[hooks]` tables in config.toml as from hooks.json (the user's, and a
    project's .codex/config.toml). Doctor did not look there, so a broken Cairn hook in one passed unseen (or
    "no agent's settings run `cairn hook`"), and uninstall said "Nothing to remove" while Codex kept running it.
    Cairn never rewrites TOML: uninstall names the entry to remove by hand."""
    config = (isolated_env if where == "user" else project) / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(
        'model = "gpt-5-codex"\n\n[[hooks.UserPromptSubmit]]\n\n[[hooks.UserPromptSubmit.hooks]]\n'
        'type = "command"\ncommand = "/gone/venv/bin/cairn hook --format codex"\ntimeout = 10\n'
    )
    [check] = [c for c in _agent_checks(project) if str(c["subject"]).startswith("codex")]
    assert check["subject"] == f"codex ({where})" and check["ok"] is False
    assert check["detail"] == f"{config}: '/gone/venv/bin/cairn' is not found"
    # The install alone writes hooks.json and leaves the broken entry: Codex would run both.
    assert check["note"] == f"remove Cairn's [[hooks.UserPromptSubmit]] entry from {config} by hand first"
    assert check["fix"] == "cairn install codex" + (" --user" if where == "user" else "")  # run there

    args = ["--user"] if where == "user" else ["--project", str(project)]
    done = run_cairn("uninstall", "codex", *args, cwd=project)
    assert done.returncode == 1
    assert done.stderr == (
        f"Error: {config} runs Cairn's hook in its [hooks] tables, which Cairn does not rewrite; remove that "
        "[[hooks.UserPromptSubmit]] entry by hand\n"
    )
    assert "/gone/venv/bin/cairn" in config.read_text()


def test_a_hook_in_codexs_config_toml_beside_install_names_the_toml_entry_to_remove(
    project: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug fixed: with Cairn's hook in the user's config.toml, `cairn install codex --user` added hooks.json's and
    said the hook runs twice, "keep one: `cairn install codex --user`", which changed nothing (doctor said the same):
    Cairn never rewrites TOML, so the fix is that entry, by hand."""
    monkeypatch.delenv("CODEX_HOME", raising=False)
    config = isolated_env / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(
        f'[[hooks.UserPromptSubmit]]\n[[hooks.UserPromptSubmit.hooks]]\ntype = "command"\n'
        f'command = "{cairn_executable()} hook --format codex"\n'
    )
    done = run_cairn("install", "codex", "--user", cwd=project)
    assert done.returncode == 0, done.stderr
    fix = f"remove Cairn's [[hooks.UserPromptSubmit]] entry from {config} by hand"
    assert f"which hook runs first (each comes twice when no session can be kept); keep one: {fix}" in done.stdout
    [twice] = [c for c in _agent_checks(project) if c["subject"] == "codex (twice)"]
    assert (twice["fix"], twice["note"]) == ("", fix)


def test_the_install_help_example_for_a_shared_file_runs_as_written_without_a_warning(isolated_env: Path) -> None:
    """Bug fixed: `cairn install --help` showed `cairn install codex --project ~/work/acme --vault ~/team-lessons`,
    which writes this machine's folder into the file every teammate commits: install itself then warns to register
    the vault by name and install with `--vault team`. The example now does that, after `cairn vault add`'s own."""
    [vault_add] = [line for line in _examples("vault", "add") if line.endswith("--name team")]
    [codex] = [line for line in _examples("install") if line.startswith("cairn install codex ")]
    cairn_dir = Path(cairn_executable()).parent
    script = f"cairn init ~/team-lessons --no-register --no-git-hooks\n{vault_add}\nmkdir -p ~/work/acme\n{codex}\n"
    done = subprocess.run(
        ["sh", "-e", "-c", script],
        cwd=isolated_env,
        env={**os.environ, "PATH": f"{cairn_dir}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "a folder of this machine" not in done.stdout, done.stdout
    hooks = (isolated_env / "work" / "acme" / ".codex" / "hooks.json").read_text(encoding="utf-8")
    assert "--vault team" in hooks and str(isolated_env) not in hooks


def _examples(*command: str) -> list[str]:
    done = run_cairn(*command, "--help", cwd=Path.cwd())
    return [
        line.strip() for line in done.stdout.split("Example", 1)[1].splitlines() if line.strip().startswith("cairn ")
    ]


@pytest.mark.parametrize("agent", sorted(SHARED))
def test_an_install_in_the_home_folder_writes_the_users_own_settings(agent: str, project: Path) -> None:
    """Bug fixed: `cairn install codex` (or gemini) run in the home folder took it for a project, wrote the user's own
    ~/.codex/hooks.json with the shared form (`cairn hook` from the PATH) and said it was the project's committed
    settings, read by every teammate; claude-code wrote ~/.claude/settings.local.json, read only in the home folder.
    Both now install as with --user."""
    home = Path(os.environ["HOME"])
    done = run_cairn("install", agent, cwd=home)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{home.resolve()} is your home folder, where {agent} keeps your own settings")
    assert "shared settings" not in done.stdout and f"Undo with `cairn uninstall {agent} --user`." in done.stdout
    user_file = home / SHARED[agent]
    [command] = _commands(user_file, EVENTS[agent])
    assert MACHINE in command  # this machine's launcher, as --user writes it
    assert not (home / ".claude" / "settings.local.json").exists()
    [check] = [c for c in _agent_checks(project) if c["subject"] == f"{agent} (user)"]
    assert check["ok"] is True and "again starts it" not in str(check["detail"]), check
