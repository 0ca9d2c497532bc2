"""`cairn install` / `cairn uninstall`: agent settings merged, kept, backed up, idempotent; git hooks in a vault."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cairn import doctor, githooks, install
from cairn.hot import hook
from cairn.review.policy import file_blocks
from helpers.cli import run_on_terminal
from helpers.hostile import assert_clean_exit
from helpers.payloads import FITTING_PROMPT, payload_for
from helpers.vaults import BOB, REBASE_ID, VaultRepo, cairn_executable, card_text, make_vault, state_dir

# Where a project install writes: Claude Code's personal file; the shared file for the agents that read no other.
SETTINGS = {
    "claude-code": ".claude/settings.local.json",
    "codex": ".codex/hooks.json",
    "gemini": ".gemini/settings.json",
}
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


@pytest.mark.parametrize("agent", sorted(install.AGENTS))
def test_every_agent_is_known_to_the_hook_doctor_and_review(agent: str) -> None:
    # An agent added to AGENTS alone installs a hook that cannot run, crashes doctor and passes review unchecked.
    assert agent in hook.FORMATS, f"cairn hook has no --format {agent}: add it to FORMATS in cairn/hot/hook.py"
    assert agent in doctor._READS, (
        f"doctor cannot judge {agent}'s hook: add the formats it reads to _READS in cairn/doctor.py"
    )
    settings = install.AGENTS[agent].settings
    assert file_blocks([settings], ""), (
        f"cairn review lets a pull request change {settings}: add its folder to _RUNS_FOLDERS in cairn/review/policy.py"
    )
    assert (Path(install.__file__).parent / "templates" / "hooks" / agent).is_dir(), (
        f"no hook to copy by hand: add cairn/templates/hooks/{agent}/ and its line in its README.md"
    )


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
    commands = cairn_commands(data, EVENTS[agent])  # this machine's full path: ends `|| exit 1` (never blocks)
    assert [c.split(" hook ")[1].removesuffix(" || exit 1") for c in commands] == [f"--format {agent}"]
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


@pytest.mark.parametrize(
    "theirs",
    [
        '/usr/local/bin/redact-prompt && echo "cairn hook next" >> ~/hooks.log',
        "redact-prompt | cairn hook --format claude-code",
        "env CAIRN_VAULT=~/v cairn hook --format claude-code",
        "~/bin/notcairn hook",
    ],
)
def test_a_users_hook_that_mentions_or_wraps_cairn_hook_is_kept(
    theirs: str, tmp_path: Path, configured: VaultRepo
) -> None:
    """A user's own command with `cairn hook` in its text was taken for Cairn's: install replaced it, and wrote no
    backup (the file looked like Cairn's alone); uninstall deleted it."""
    project = tmp_path / "project"
    target = project / SETTINGS["claude-code"]
    target.parent.mkdir(parents=True)
    mine = {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": theirs}]}]}}
    target.write_text(json.dumps(mine))
    done = cairn("install", "claude-code", "--project", str(project))
    assert done.returncode == 0, done.stderr
    groups = json.loads(target.read_text())["hooks"]["UserPromptSubmit"]
    commands = [h["command"] for g in groups for h in g["hooks"]]
    assert commands[0] == theirs and len(commands) == 2 and install.is_cairn_command(commands[1])
    [backup] = target.parent.glob(target.name + ".bak-*")
    assert json.loads(backup.read_text()) == mine
    assert cairn("uninstall", "claude-code", "--project", str(project)).returncode == 0
    assert json.loads(target.read_text()) == mine


@pytest.mark.parametrize(
    "command",
    [
        "cairn hook --format claude-code",
        "cairn.exe hook --format codex",
        "'/home/me/my tools/cairn' hook --format gemini --vault 'team vault' --scope git",
        "/usr/bin/python3 -I -S /venv/lib/python3.11/site-packages/cairn/__main__.py hook --format claude-code",
        "/usr/bin/python3 -S /venv/lib/python3.11/site-packages/cairn/__main__.py hook --format codex",
        "/home/ann/.venv/bin/python3 -S /home/ann/.venv/bin/cairn hook --format gemini",
    ],
)
def test_every_command_cairn_writes_or_wrote_is_its_own(command: str) -> None:
    assert install.is_cairn_command(command)
    assert install.is_cairn_command(install.hook_command("codex", "team vault", "git", install.hook_launcher()))


@pytest.mark.parametrize("blank", ["", "\n  \n"])
def test_install_into_a_blank_settings_file_keeps_no_empty_backup(
    blank: str, tmp_path: Path, configured: VaultRepo
) -> None:
    """An empty settings file (`touch .claude/settings.local.json`) got a backup of 0 bytes: nothing to keep."""
    target = tmp_path / "p" / SETTINGS["claude-code"]
    target.parent.mkdir(parents=True)
    target.write_text(blank)
    done = cairn("install", "claude-code", "--project", str(tmp_path / "p"))
    assert done.returncode == 0, done.stderr
    assert cairn_commands(json.loads(target.read_text()), "UserPromptSubmit")
    assert not list(target.parent.glob("*.bak-*")) and "backup" not in done.stdout


def test_install_creates_settings_and_updates_a_changed_command(tmp_path: Path, configured: VaultRepo) -> None:
    project = tmp_path / "p"
    project.mkdir()
    assert cairn("install", "claude-code", cwd=project).returncode == 0
    target = project / ".claude" / "settings.local.json"
    assert not list(target.parent.glob("*.bak-*"))  # nothing to back up
    vault = tmp_path / "team vault"
    (vault / "cards").mkdir(parents=True)
    (vault / "cairn.toml").write_text("")
    updated = cairn("install", "claude-code", "--vault", str(vault), "--scope", "git", cwd=project)
    assert "updated:" in updated.stdout
    assert not list(target.parent.glob("*.bak-*"))  # it held only Cairn's own hook
    [command] = cairn_commands(json.loads(target.read_text()), "UserPromptSubmit")
    assert command.endswith(f"hook --format claude-code --vault '{vault}' --scope git || exit 1")
    named = cairn("install", "claude-code", "--vault", "team", cwd=project)
    assert named.returncode == 0, named.stderr
    [command] = cairn_commands(json.loads(target.read_text()), "UserPromptSubmit")
    assert command.endswith(
        "hook --format claude-code --vault team || exit 1"
    )  # a configured vault's name stays a name


def test_uninstall_takes_away_the_file_it_created(tmp_path: Path, configured: VaultRepo) -> None:
    project = tmp_path / "p"
    project.mkdir()
    assert cairn("install", "claude-code", cwd=project).returncode == 0
    done = cairn("uninstall", "claude-code", cwd=project)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"removed: {project / '.claude' / 'settings.local.json'} (it held only Cairn's hook)\n"
    assert list(project.iterdir()) == []  # no `{}`, no backup, no empty .claude/


@pytest.mark.parametrize("theirs", ["{}", "{}\n", ""])
def test_uninstall_keeps_a_settings_file_the_user_made(
    theirs: str, tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """Bug fixed: a user's own settings file holding `{}` (or nothing) was deleted by uninstall, which could not tell
    it from one install created (the bytes are the same once the hook is in). Install now records the files it
    creates; any other file keeps existing, holding what it held. Nor is a file recreated by the user since
    install made it (the record names the bytes install wrote) taken for Cairn's."""
    mine = isolated_env / ".claude" / "settings.json"
    mine.parent.mkdir()
    mine.write_text(theirs)
    assert cairn("install", "claude-code", "--user").returncode == 0
    done = cairn("uninstall", "claude-code", "--user")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"removed: Cairn's hook from {mine}\n"
    assert json.loads(mine.read_text() or "{}") == {}

    mine.unlink()  # now install makes it, the user replaces it with their own, and installs again
    assert cairn("install", "claude-code", "--user").returncode == 0
    mine.write_text("{}\n")
    assert cairn("install", "claude-code", "--user").returncode == 0
    assert cairn("uninstall", "claude-code", "--user").returncode == 0
    assert json.loads(mine.read_text()) == {}


def test_a_record_of_made_files_nested_too_deep_is_one_that_cannot_be_read(
    tmp_path: Path, configured: VaultRepo
) -> None:
    """Bug fixed: install's record of the settings files it created (in the state folder), nested thousands deep,
    ended install and uninstall with an unnamed "nested too deeply" error; it now reads as no record (uninstall then
    keeps a file it cannot tell install made, and removes only Cairn's hook from it)."""
    project = tmp_path / "p"
    project.mkdir()
    assert cairn("install", "claude-code", cwd=project).returncode == 0
    (state_dir() / install.MADE_RECORD).write_text("[" * 100_000 + "]" * 100_000)
    done = cairn("uninstall", "claude-code", cwd=project)
    assert_clean_exit(done, 0)
    settings = project / ".claude" / "settings.local.json"
    assert done.stdout == f"removed: Cairn's hook from {settings}\n"
    assert json.loads(settings.read_text()) == {}
    done = cairn("install", "claude-code", cwd=project)
    assert_clean_exit(done, 0)


def test_installs_at_once_keep_each_others_record_of_made_files(tmp_path: Path, configured: VaultRepo) -> None:
    """Bug fixed: `cairn install claude-code`, `codex` and `gemini` run at once each read install's record of the
    settings files it created and wrote it back whole, so one's entry was lost, and `cairn uninstall` of that agent
    later left its file behind holding `{}`. The record is now read and written under a lock: here another install
    holds it, having read the record, while this one writes its settings file."""
    import fcntl

    made = state_dir() / install.MADE_RECORD
    made.parent.mkdir(parents=True, exist_ok=True)
    other = str(tmp_path / "other" / ".claude" / "settings.local.json")
    project = tmp_path / "p"
    project.mkdir()
    with open(made.with_name(install.MADE_RECORD + ".lock"), "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        seen = install._made_files()  # the other install's read, before this one records its file
        running = subprocess.Popen(
            [cairn_executable(), "install", "claude-code"], cwd=project, stdout=subprocess.DEVNULL
        )
        try:
            running.wait(timeout=3)  # returns at once when nothing waits for the lock
        except subprocess.TimeoutExpired:
            pass
        made.write_text(json.dumps({**seen, other: "0" * 64}))  # the other install's write
    assert running.wait(timeout=60) == 0
    assert sorted(install._made_files()) == sorted([other, str(project / SETTINGS["claude-code"])])
    done = cairn("uninstall", "claude-code", cwd=project)
    assert done.stdout == f"removed: {project / SETTINGS['claude-code']} (it held only Cairn's hook)\n"


def test_install_does_not_promise_an_index_a_broken_cairn_toml_prevents(tmp_path: Path, configured: VaultRepo) -> None:
    """Bug fixed: with the served vault's committed cairn.toml broken, install said "the hook builds the index in
    the background on its first prompt", which fails the same way; it now says nothing is served until it is fixed."""
    configured.write_raw("cairn.toml", "[recall\n")
    configured.commit("a broken setting")
    project = tmp_path / "p"
    project.mkdir()
    done = cairn("install", "claude-code", cwd=project)
    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stdout.splitlines() if "Not indexed" in line]
    assert line.startswith("  Not indexed (cairn.toml:1: not valid TOML")
    assert line.endswith("the hook serves none of its cards until that is fixed.") and "background" not in line


def test_install_goes_on_past_a_configured_vault_the_system_refuses_to_open(
    tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """Bug fixed: with a configured vault the system refuses to open (no permission; here a name too long, which
    root meets as well), install wrote the settings, then stopped at that vault's index with `Error: ...` and exit 1:
    the vaults after it went unindexed and the undo line unsaid. That vault is one "Not indexed" line now."""
    config = isolated_env / "xdg-config" / "cairn" / "config.toml"
    far = tmp_path / ("x" * 300)
    config.write_text(f'[[vaults]]\nname = "far"\npath = "{far}"\n\n' + config.read_text())  # listed first
    project = tmp_path / "p"
    project.mkdir()
    done = cairn("install", "claude-code", cwd=project)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    [line] = [line for line in done.stdout.splitlines() if "Not indexed" in line]
    assert line.startswith("  Not indexed (File name too long (") and line.endswith("until that is fixed."), line
    assert f"  Index of {configured.root}: " in done.stdout
    assert done.stdout.endswith("Undo with `cairn uninstall claude-code`.\n"), done.stdout


def test_install_tells_how_to_fix_a_configured_vault_moved_away(
    tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """Bug fixed: with a configured vault's folder moved away, install's line for it said "create one with `cairn
    init PATH`", which makes an empty vault where the team's was; it now names the vault and says to register its
    new folder (`cairn vault add NEW_PATH --name NAME --replace`) or remove it, as every other command does."""
    config = isolated_env / "xdg-config" / "cairn" / "config.toml"
    gone = tmp_path / "moved-away"
    config.write_text(config.read_text() + f'\n[[vaults]]\nname = "gone"\npath = "{gone}"\n')
    project = tmp_path / "p"
    project.mkdir()
    done = cairn("install", "claude-code", cwd=project)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    [line] = [line for line in done.stdout.splitlines() if "Not indexed" in line]
    assert "configured vault 'gone'" in line and "`cairn vault add NEW_PATH --name gone --replace`" in line, line
    assert "cairn init" not in line
    assert f"  Index of {configured.root}: " in done.stdout


def test_install_refuses_a_scope_with_no_tag_and_bakes_in_the_tags_as_read(
    tmp_path: Path, configured: VaultRepo
) -> None:
    """Bug fixed: `--scope "$SCOPE"` with SCOPE unset installed a hook that serves every scope without a word, and a
    tag holding a line break was baked into the agent's command; `cairn recall --scope` refuses both."""
    project = tmp_path / "p"
    project.mkdir()
    for given in ("", " , ", "git\nci"):
        done = cairn("install", "claude-code", "--scope", given, cwd=project)
        assert done.returncode == 2 and "Invalid value for '--scope'" in done.stderr, done.stderr
        assert not (project / ".claude").exists()
    done = cairn("install", "claude-code", "--scope", " git, ,ci", cwd=project)
    assert done.returncode == 0, done.stderr
    [command] = cairn_commands(json.loads((project / SETTINGS["claude-code"]).read_text()), "UserPromptSubmit")
    assert command.endswith("hook --format claude-code --scope git,ci || exit 1")


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


def test_install_refuses_a_vault_that_is_neither_configured_nor_a_folder(tmp_path: Path, configured: VaultRepo) -> None:
    """Bug fixed: `cairn install claude-code --vault tema` (team mistyped) baked `--vault $PWD/tema` into the hook,
    exit 0, saying the hook would build the index on its first prompt: it served nothing, ever. Now it is one line
    naming the configured vaults, and nothing is written."""
    project = tmp_path / "p"
    project.mkdir()
    typo = cairn("install", "claude-code", "--vault", "tema", cwd=project)
    assert (typo.returncode, typo.stdout) == (1, "")
    assert typo.stderr == (
        "Error: --vault 'tema' is neither a configured vault (configured: team) nor a folder; see `cairn vault "
        "list`, or register one with `cairn vault add PATH --name NAME`\n"
    )
    gone = tmp_path / "moved-away"
    missing = cairn("install", "codex", "--user", "--vault", str(gone), cwd=project)
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr == f"Error: vault '{gone}' is not a folder; create one with `cairn init {gone}`\n"
    assert list(project.iterdir()) == [] and not (Path(os.environ["HOME"]) / ".codex").exists()


def test_install_inside_an_unregistered_vault_names_the_fix(vault_repo: VaultRepo, isolated_env: Path) -> None:
    make_vault(vault_repo)
    done = cairn("install", "claude-code", "--user", cwd=vault_repo.root / "cards")
    assert done.returncode == 1
    assert f"run `cairn vault add {vault_repo.root.resolve()}` first (nothing was written)" in done.stderr
    assert not (isolated_env / ".claude").exists()


def test_the_vault_add_an_unregistered_vault_is_told_to_run_works_for_a_path_with_a_space(tmp_path: Path) -> None:
    """Bug fixed: in a vault at `team lessons/`, install said to run `cairn vault add /x/team lessons` first,
    unquoted: the shell split it, and vault add refused the extra argument."""
    vault = VaultRepo(tmp_path / "team lessons")
    make_vault(vault)
    done = cairn("install", "claude-code", "--user", cwd=vault.root / "cards")
    assert done.returncode == 1
    told = re.search(r"run `(cairn vault add [^`]+)` first", done.stderr)
    assert told is not None, done.stderr
    shell = {**os.environ, "PATH": f"{Path(cairn_executable()).parent}{os.pathsep}{os.environ['PATH']}"}
    ran = subprocess.run(["sh", "-c", told.group(1)], cwd=vault.root, env=shell, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert cairn("install", "claude-code", "--user", cwd=vault.root / "cards").returncode == 0


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


def test_project_install_refuses_git_own_folder(configured: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: `cairn install` run in a project's `.git` (or with --project naming a bare repository) said
    `installed` and wrote settings there, where no agent works: the hook never ran."""
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    bare = tmp_path / "mirror.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    done = cairn("install", "claude-code", cwd=project / ".git" / "refs")
    assert done.returncode == 1
    assert f"install into the project: --project {project.resolve()} (nothing was written)" in done.stderr
    done = cairn("install", "codex", "--project", str(bare))
    assert done.returncode == 1
    assert "bare git repository" in done.stderr and len(done.stderr.splitlines()) == 1
    assert not list(project.rglob(".claude")) and not (bare / ".codex").exists()
    assert cairn("install", "claude-code", "--project", str(project)).returncode == 0


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
    """The agent runs the command with its own PATH: a shared file's `cairn hook` finds `cairn` there."""
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
        env={**os.environ, "PATH": f"{Path(cairn_executable()).parent}{os.pathsep}{os.environ['PATH']}"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == EVENTS[agent]
    assert REBASE_ID in out["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize("agent", sorted(SETTINGS))
def test_shipped_templates_match_what_install_writes(agent: str) -> None:
    template = Path(install.__file__).parent / "templates" / "hooks" / agent / Path(install.AGENTS[agent].settings).name
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
    for name in githooks.GIT_HOOKS:
        assert os.access(hooks / name, os.X_OK)
        assert githooks.GIT_HOOK_MARKER in (hooks / name).read_text()
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
    assert removed.stdout.count("removed:") == len(githooks.GIT_HOOKS) == 5
    assert not any((hooks / n).exists() for n in githooks.GIT_HOOKS)


def test_a_commit_never_waits_on_another_index_of_the_vault(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Another `cairn index` holding the vault's index lock (a long full index, a stuck one) kept `git commit` waiting
    in the post-commit hook for up to 10 minutes (the lock's wait). The hook now waits 5 s at most, git returns, and
    the update goes on in the background once the lock is free."""
    import fcntl
    import time

    from cairn.hot.paths import index_path

    make_vault(vault_repo)
    assert cairn("install", "git-hooks", "--vault", str(vault_repo.root)).returncode == 0
    vault_repo.write("python/venv", "Activate the venv", "pip install outside the venv hits the system python")
    vault_repo.git("add", "-A")
    vault_repo.git("commit", "-q", "-m", "first card")
    assert _indexed_commit(vault_repo.root) == vault_repo.git("rev-parse", "HEAD")
    lock = index_path(vault_repo.root.resolve()).with_name("index.cairn.lock")
    with lock.open("r+b") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        vault_repo.write("python/pipx", "Use pipx for tools", "pip install --user mixes tool dependencies together")
        vault_repo.git("add", "-A")
        started = time.monotonic()
        subprocess.run(["git", "commit", "-q", "-m", "second card"], cwd=vault_repo.root, check=True, timeout=60)
        assert time.monotonic() - started < 30
        head = vault_repo.git("rev-parse", "HEAD")
        assert _indexed_commit(vault_repo.root) != head  # not yet: the other index still holds the lock
    deadline = time.monotonic() + 30
    while _indexed_commit(vault_repo.root) != head and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _indexed_commit(vault_repo.root) == head  # the background update indexed it once the lock was free


def test_the_line_to_add_to_a_foreign_hook_by_hand_indexes_a_vault_in_a_folder_with_a_space(tmp_path: Path) -> None:
    """Bug fixed: for a vault in `my lessons/` of a repository, the refusal said to add `cairn index --vault my
    lessons` to the user's own hook, which the shell splits in two: the hook then failed and indexed nothing."""
    repo = VaultRepo(tmp_path / "mono")
    repo.write_raw("my lessons/cairn.toml", "")
    repo.write_raw("my lessons/cards/git/rebase.md", card_text("Pull --rebase drops commits", "Check the reflog."))
    repo.commit("a vault in a folder")
    hook = repo.root / ".git" / "hooks" / "post-commit"
    hook.write_text(f"#!/bin/sh\nPATH={shlex.quote(str(Path(cairn_executable()).parent))}:$PATH\n")
    hook.chmod(0o755)
    refused = cairn("install", "git-hooks", "--vault", str(repo.root / "my lessons"))
    assert refused.returncode == 1
    told = re.search(r"add `(cairn index [^`]*)` to it by hand", refused.stderr)
    assert told is not None, refused.stderr
    with hook.open("a") as script:
        script.write(told.group(1) + "\n")
    repo.write_raw("my lessons/cards/git/rebase.md", card_text("Pull --rebase drops commits", "Check git reflog."))
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "a card changed")
    assert _indexed_commit(repo.root / "my lessons") == repo.git("rev-parse", "HEAD")


def test_git_hooks_never_clobber_a_foreign_hook(vault_repo: VaultRepo, tmp_path: Path) -> None:
    make_vault(vault_repo)
    hooks = vault_repo.root / ".git" / "hooks"
    mine = hooks / "post-merge"
    witness = tmp_path / "ran"
    mine.write_text(f"#!/bin/sh\necho merged >> '{witness}'\n")
    mine.chmod(0o755)
    refused = cairn("install", "git-hooks", "--vault", str(vault_repo.root))
    assert refused.returncode == 1
    assert f"{mine} already exists and is not Cairn's" in refused.stderr and "--chain" in refused.stderr
    assert "Keep it with `" in refused.stderr and "(it moves to <name>.local and runs first)" in refused.stderr
    assert refused.stderr.rstrip().endswith("to it by hand")  # one hook: not "them"
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


def test_git_hooks_refuse_to_chain_huskys_hooks_which_would_then_run_nothing(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed: `install git-hooks --chain` (doctor's fix) moved husky 9's hooks to `<name>.local`, where husky's
    `h` looks for `.husky/<name>.local` by the hook's own name, finds none and exits 0: the team's husky post-commit
    stopped running without a word. Install now refuses them, --chain too, and says what to add to husky's scripts."""
    make_vault(vault_repo)
    root = vault_repo.root
    husky = root / ".husky" / "_"
    husky.mkdir(parents=True)
    # husky 9's `h` and its stub for each hook, as `husky` writes them
    (husky / "h").write_text(
        '#!/usr/bin/env sh\nn=$(basename "$0")\ns=$(dirname "$(dirname "$0")")/$n\n[ ! -f "$s" ] && exit 0\n'
        'sh -e "$s" "$@"\n'
    )
    for name in ("post-commit", "post-merge", "post-checkout", "post-rewrite"):
        (husky / name).write_text('#!/usr/bin/env sh\n. "${0%/*}/h"')
        (husky / name).chmod(0o755)
    witness = tmp_path / "ran"
    (root / ".husky" / "post-commit").write_text(f"echo husky >> '{witness}'\n")
    vault_repo.git("config", "core.hooksPath", ".husky/_")
    before = {f.name: f.read_bytes() for f in husky.iterdir()}
    assert cairn("vault", "add", str(root), "--name", "team").returncode == 0

    for chain in ((), ("--chain",)):
        refused = cairn("install", "git-hooks", "--vault", str(root), *chain)
        assert refused.returncode == 1
        assert "are husky's; nothing was written" in refused.stderr, refused.stderr
        assert "add `cairn index --wait 5 --vault .` to .husky/post-commit, .husky/post-merge" in refused.stderr
    assert {f.name: f.read_bytes() for f in husky.iterdir()} == before
    vault_repo.git("commit", "-q", "--allow-empty", "-m", "husky still runs")
    assert witness.read_text() == "husky\n"
    report = json.loads(cairn("doctor", "--json", cwd=tmp_path).stdout)
    line = next(c for c in report["checks"] if c["area"] == "git-hooks")
    assert line["ok"] is False and "husky's" in line["detail"] and "--chain" not in line["fix"], line


def test_lines_added_to_cairns_git_hooks_are_kept_when_cairn_replaces_or_removes_them(
    vault_repo: VaultRepo, configured: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed: any hook holding Cairn's marker counted as Cairn's own, so a line a user added to it was lost
    without a word: `cairn install AGENT` rewrote the hook, `cairn uninstall git-hooks` deleted it."""
    hooks = vault_repo.root / ".git" / "hooks"
    assert cairn("install", "git-hooks", "--vault", str(vault_repo.root)).returncode == 0
    for name in ("post-commit", "post-merge"):
        with (hooks / name).open("a") as file:
            file.write(f'echo "my own {name} step"\n')
    project = tmp_path / "project"
    project.mkdir()
    done = cairn("install", "claude-code", "--project", str(project), "--vault", str(vault_repo.root))
    assert done.returncode == 0, done.stderr
    copies = sorted(hooks.glob("*.bak-*"))
    assert [c.name.split(".bak-")[0] for c in copies] == ["post-commit", "post-merge"]
    assert all(f'echo "my own {c.name.split(".")[0]} step"' in c.read_text() for c in copies)
    assert "kept in post-commit.bak-" in done.stdout
    assert "my own" not in (hooks / "post-commit").read_text()  # Cairn's script as this version writes it
    assert cairn("install", "git-hooks", "--vault", str(vault_repo.root)).stdout.count("unchanged:") == 5

    with (hooks / "post-merge").open("a") as file:
        file.write('echo "added again"\n')
    for copy in copies:
        copy.unlink()
    removed = cairn("uninstall", "git-hooks", "--vault", str(vault_repo.root))
    assert removed.returncode == 0, removed.stderr
    assert "removed: " in removed.stdout and "(what it held before is kept in post-merge.bak-" in removed.stdout
    [kept] = hooks.glob("post-merge.bak-*")
    assert kept.read_text().endswith('echo "added again"\n') and not os.access(kept, os.X_OK)
    assert not (hooks / "post-merge").exists() and not list(hooks.glob("post-commit.bak-*"))


def test_uninstall_git_hooks_restores_a_chained_hook_an_interrupted_install_left_aside(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed: `install git-hooks --chain` killed after moving a foreign hook to `<name>.local` and before writing
    Cairn's left no hook under the name; `uninstall git-hooks` then said "absent" and the user's hook stayed orphaned
    as `.local`, which git never runs. Uninstall now puts it back."""
    make_vault(vault_repo)
    hooks = vault_repo.root / ".git" / "hooks"
    assert cairn("install", "git-hooks", "--vault", str(vault_repo.root)).returncode == 0
    (hooks / "post-merge").unlink()  # the state a kill between the move and the write leaves:
    aside = hooks / "post-merge.local"  # Cairn's other hooks in place, the user's moved aside, none under its name
    aside.write_text("#!/bin/sh\necho merged\n")
    aside.chmod(0o755)
    done = cairn("uninstall", "git-hooks", "--vault", str(vault_repo.root))
    assert done.returncode == 0, done.stderr
    assert f"restored: {hooks / 'post-merge'}" in done.stdout.splitlines()
    assert (hooks / "post-merge").read_text() == "#!/bin/sh\necho merged\n" and not aside.exists()
    assert not (hooks / "post-commit").exists()


def test_uninstall_git_hooks_names_its_vault_by_vault_only(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: `install git-hooks --project DIR` is refused (use --vault), but `uninstall git-hooks --project
    ~/my-notes` run in another vault took the hooks out of that other vault, the one around the current folder."""
    make_vault(vault_repo)
    other = VaultRepo(tmp_path / "my-notes")
    make_vault(other)
    for vault in (vault_repo, other):
        assert cairn("install", "git-hooks", "--vault", str(vault.root)).returncode == 0
    for where in (["--project", str(other.root)], ["--user"]):
        done = cairn("uninstall", "git-hooks", *where, cwd=vault_repo.root)
        assert done.returncode == 2, done.stdout
        assert "Error: git-hooks are in a vault: use --vault, not --project or --user" in done.stderr
    for vault in (vault_repo, other):
        assert githooks.missing_git_hooks(vault.root / ".git" / "hooks") == []


def test_install_git_hooks_refuses_before_moving_any_hook(vault_repo: VaultRepo) -> None:
    """Bug fixed: `install git-hooks --chain` with a `<name>.local` already there for one hook refused only on
    reaching it, after chaining the hooks before it, and said to run it again; a file where the hooks folder goes
    said only "File exists". Both are refused before anything changes, naming what to move."""
    make_vault(vault_repo)
    hooks = vault_repo.root / ".git" / "hooks"
    for name in ("post-commit", "post-merge"):
        (hooks / name).write_text(f"#!/bin/sh\necho {name}\n")
    (hooks / "post-merge.local").write_text("#!/bin/sh\n")
    done = cairn("install", "git-hooks", "--vault", str(vault_repo.root), "--chain")
    assert done.returncode == 1
    assert done.stderr == (
        f"Error: {hooks / 'post-merge.local'} already exists; nothing was written: move it away, then run this again\n"
    )
    assert (hooks / "post-commit").read_text() == "#!/bin/sh\necho post-commit\n"
    assert not (hooks / "post-commit.local").exists() and not (hooks / "post-checkout").exists()
    vault_repo.git("config", "core.hooksPath", "hooks-file")
    (vault_repo.root / "hooks-file").write_text("not a folder\n")
    blocked = cairn("install", "git-hooks", "--vault", str(vault_repo.root))
    assert blocked.returncode == 1
    assert blocked.stderr.startswith(f"Error: {vault_repo.root / 'hooks-file'} is a file where git's hooks folder")


def test_git_hooks_respect_core_hooks_path(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    vault_repo.git("config", "core.hooksPath", ".githooks")
    assert cairn("install", "git-hooks", "--vault", str(vault_repo.root)).returncode == 0
    assert (vault_repo.root / ".githooks" / "post-commit").exists()
    assert not (vault_repo.root / ".git" / "hooks" / "post-commit").exists()


def test_git_hooks_of_a_clone_with_core_bare_go_where_git_runs_them(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: in a clone with `core.bare=true` (gitpython then sees no work tree), `cairn install git-hooks`
    wrote its hooks to a `hooks/` folder in the vault's work tree, where git never runs them, and doctor looked
    there too. They go in `.git/hooks`, and a fetch that moves the served branch re-indexes."""
    make_vault(vault_repo)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(vault_repo.root), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "config", "core.bare", "true"], check=True)
    done = cairn("install", "git-hooks", "--vault", str(clone))
    assert done.returncode == 0, done.stderr
    assert not (clone / "hooks").exists()
    assert all((clone / ".git" / "hooks" / name).is_file() for name in githooks.GIT_HOOKS)
    vault_repo.write("git/bisect", "Bisect finds it", "git bisect run finds the commit that broke the build.")
    moved = vault_repo.commit("A bisect card")
    subprocess.run(["git", "-C", str(clone), "fetch", "-q"], check=True)
    assert _indexed_commit(clone) == moved


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
    for name in githooks.GIT_HOOKS:
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


def test_git_hooks_follow_a_fast_forward_rebase(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Gap closed: a rebase that only fast-forwards rewrites nothing (no post-rewrite), and its post-checkout runs
    before the branch moves; the reference-transaction hook sees the branch move at the rebase's end."""
    make_vault(vault_repo)
    vault_repo.git("checkout", "-q", "-b", "upstream")
    vault_repo.write("ops/upstream", "Upstream lesson", "A lesson the team merged meanwhile.")
    vault_repo.commit("upstream")
    vault_repo.git("checkout", "-q", "main")
    log = _logged_hooks(vault_repo, tmp_path)
    vault_repo.git("rebase", "-q", "upstream")
    assert vault_repo.git("rev-parse", "main") == vault_repo.git("rev-parse", "upstream")
    assert _indexed_commit(vault_repo.root) == vault_repo.git("rev-parse", "main")
    assert _runs(log) == 1


def test_git_hooks_follow_a_rebase_whose_commits_were_all_upstream(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """A rebase that drops every commit (each is upstream already) rewrites nothing either: the branch just moves."""
    make_vault(vault_repo)
    vault_repo.git("branch", "upstream")
    vault_repo.write("ops/both", "A lesson on both branches", "The same change, committed twice.")
    vault_repo.commit("mine")
    vault_repo.git("checkout", "-q", "upstream")
    vault_repo.git("cherry-pick", "main")
    vault_repo.write("ops/upstream", "Upstream lesson", "A lesson the team merged meanwhile.")
    vault_repo.commit("upstream")
    vault_repo.git("checkout", "-q", "main")
    log = _logged_hooks(vault_repo, tmp_path)
    vault_repo.git("rebase", "-q", "upstream")
    assert vault_repo.git("rev-parse", "main") == vault_repo.git("rev-parse", "upstream")
    assert _indexed_commit(vault_repo.root) == vault_repo.git("rev-parse", "main")
    assert _runs(log) == 1


def test_git_hooks_follow_a_rebase_of_the_apply_backend(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """`git rebase --apply` runs its post-rewrite before it moves the branch (that index was of the old commit): the
    end of the rebase is indexed, fast-forward or not."""
    make_vault(vault_repo)
    vault_repo.git("branch", "upstream")
    vault_repo.write("ops/local", "Local lesson", "A lesson of mine.")
    vault_repo.commit("local")
    vault_repo.git("checkout", "-q", "upstream")
    vault_repo.write("ops/upstream", "Upstream lesson", "A lesson the team merged meanwhile.")
    vault_repo.commit("upstream")
    vault_repo.git("checkout", "-q", "main")
    log = _logged_hooks(vault_repo, tmp_path)
    vault_repo.git("rebase", "-q", "--apply", "upstream")
    assert _indexed_commit(vault_repo.root) == vault_repo.git("rev-parse", "main")
    assert _runs(log) == 2  # its post-checkout at the start indexes too (nothing has moved yet)
    vault_repo.git("checkout", "-q", "upstream")
    vault_repo.write("ops/upstream-2", "Second upstream lesson", "Another lesson the team merged meanwhile.")
    vault_repo.commit("upstream 2")
    vault_repo.git("checkout", "-q", "main")
    vault_repo.git("reset", "-q", "--hard", "upstream~1")
    before = _runs(log)
    vault_repo.git("rebase", "-q", "--apply", "upstream")
    assert vault_repo.git("rev-parse", "main") == vault_repo.git("rev-parse", "upstream")
    assert _indexed_commit(vault_repo.root) == vault_repo.git("rev-parse", "main")
    assert _runs(log) - before == 2


def test_git_hooks_follow_a_reset_of_the_served_branch(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """`git reset` moves the branch and runs no post-* hook: the index follows it, once; a reset that moves nothing
    (`git reset --hard` to drop edits) runs no index."""
    first = make_vault(vault_repo)
    vault_repo.write("ops/later", "A later lesson", "Written after the first two.")
    second = vault_repo.commit("later")
    log = _logged_hooks(vault_repo, tmp_path)
    vault_repo.git("reset", "-q", "--hard", first)
    assert _indexed_commit(vault_repo.root) == first and _runs(log) == 1
    vault_repo.git("reset", "-q", "--soft", second)
    assert _indexed_commit(vault_repo.root) == second and _runs(log) == 2
    (vault_repo.root / "cards" / f"{REBASE_ID}.md").write_text("scribbled")
    vault_repo.git("reset", "-q", "--hard")
    assert _runs(log) == 2 and vault_repo.git("status", "--porcelain") == ""
    vault_repo.git("checkout", "-q", "-B", "main", first)  # its post-checkout indexes, and only it
    assert _indexed_commit(vault_repo.root) == first and _runs(log) == 3


def test_git_hooks_index_nothing_for_tags_other_branches_and_stashes(vault_repo: VaultRepo, tmp_path: Path) -> None:
    make_vault(vault_repo)
    before = vault_repo.git("rev-parse", "HEAD")
    vault_repo.write("ops/later", "A later lesson", "Written after the first two.")
    vault_repo.commit("later")
    log = _logged_hooks(vault_repo, tmp_path)
    vault_repo.git("tag", "v1")
    vault_repo.git("tag", "-a", "-m", "annotated", "v2")
    vault_repo.git("tag", "-d", "v1")
    vault_repo.git("branch", "feature")
    vault_repo.git("branch", "-f", "feature", before)
    vault_repo.git("update-ref", "refs/heads/other", before)
    vault_repo.git("branch", "-D", "other")
    (vault_repo.root / "cards" / "ops" / "later.md").write_text("scribbled")
    vault_repo.git("stash", "-q")
    vault_repo.git("stash", "drop", "-q")
    vault_repo.git("pack-refs", "--all")
    assert _runs(log) == 0
    assert vault_repo.git("status", "--porcelain") == ""


def test_git_hooks_index_once_per_commit_and_merge(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """The branch moves inside `git commit` and `git merge` too, before their own hooks run: indexed once each."""
    make_vault(vault_repo)
    log = _logged_hooks(vault_repo, tmp_path)
    vault_repo.write("ops/one", "Lesson one", "The first lesson of the branch.")
    vault_repo.git("add", "-A")
    vault_repo.git("commit", "-q", "-m", "one")
    assert _runs(log) == 1
    vault_repo.git("branch", "feature", "HEAD~1")
    vault_repo.git("checkout", "-q", "feature")  # post-checkout: HEAD moved
    assert _runs(log) == 2
    vault_repo.write("ops/two", "Lesson two", "The second lesson, on a branch.")
    vault_repo.git("add", "-A")
    vault_repo.git("commit", "-q", "-m", "two")
    assert _runs(log) == 3
    vault_repo.git("checkout", "-q", "main")
    assert _runs(log) == 4
    vault_repo.git("merge", "-q", "--no-edit", "feature")
    assert _runs(log) == 5
    assert _indexed_commit(vault_repo.root) == vault_repo.git("rev-parse", "main")


def _team_remote(vault_repo: VaultRepo, tmp_path: Path) -> Path:
    """A bare `origin` of the vault; the vault itself becomes the teammate who pushes to it."""
    make_vault(vault_repo)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(vault_repo.root), str(remote)], check=True)
    vault_repo.git("remote", "add", "origin", str(remote))
    vault_repo.git("fetch", "-q", "origin")
    vault_repo.git("branch", "-q", "--set-upstream-to", "origin/main")
    return remote


def _push_a_lesson(author: VaultRepo, n: int) -> str:
    author.write(f"ops/team-{n}", f"Team lesson {n}", f"A lesson a teammate pushed, number {n}.")
    commit = author.commit(f"team {n}")
    author.git("push", "-q", "origin", "main")
    return commit


def _clone(remote: Path, target: Path) -> VaultRepo:
    subprocess.run(["git", "clone", "-q", str(remote), str(target)], check=True)
    clone = VaultRepo(target)
    assert clone.cairn("index").returncode == 0
    return clone


def test_git_hooks_follow_fetch_and_push_of_a_served_remote_branch(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """In a clone the served ref is `refs/remotes/origin/main`: a plain `git fetch` moves it (and `git push` does,
    once the remote took the commits), and the index follows, once each; `git pull` indexes once."""
    remote = _team_remote(vault_repo, tmp_path)
    mine = _clone(remote, tmp_path / "mine")
    log = _logged_hooks(mine, tmp_path)
    pushed = _push_a_lesson(vault_repo, 1)
    mine.git("fetch", "-q")
    assert _indexed_commit(mine.root) == pushed and _runs(log) == 1
    mine.git("fetch", "-q")  # nothing new
    assert _runs(log) == 1
    mine.git("merge", "-q", "--ff-only", "origin/main")  # post-merge (the served ref stays)
    assert _runs(log) == 2
    pushed = _push_a_lesson(vault_repo, 2)
    mine.git("pull", "-q", "--ff-only")  # its fetch moves the served ref, its post-merge indexes
    assert _indexed_commit(mine.root) == pushed and _runs(log) == 3
    mine.write("ops/mine", "My lesson", "A lesson of my own, pushed from the clone.")
    mine.git("add", "-A")
    mine.git("commit", "-q", "-m", "mine")  # post-commit: main moved, the served origin/main did not
    assert _indexed_commit(mine.root) == pushed and _runs(log) == 4
    mine.git("push", "-q", "origin", "main")
    assert _indexed_commit(mine.root) == mine.git("rev-parse", "HEAD") and _runs(log) == 5


def test_git_hooks_leave_a_fetched_branch_that_is_not_served(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Where the served ref is the local main (no origin/HEAD), a fetch moves nothing served: no index."""
    _team_remote(vault_repo, tmp_path)
    other = _clone(tmp_path / "remote.git", tmp_path / "teammate")
    log = _logged_hooks(vault_repo, tmp_path)
    other.write("ops/theirs", "Their lesson", "A lesson the teammate pushed.")
    theirs = other.commit("theirs")
    other.git("push", "-q", "origin", "main")
    vault_repo.git("fetch", "-q", "origin")
    assert _runs(log) == 0
    vault_repo.git("pull", "-q", "--rebase")  # a fast-forward: its post-merge indexes
    assert _indexed_commit(vault_repo.root) == theirs and _runs(log) == 1


def test_git_hooks_follow_a_pull_rebase(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """`git pull --rebase` over local commits: the rebase's post-rewrite indexes once, nothing else does."""
    _team_remote(vault_repo, tmp_path)
    other = _clone(tmp_path / "remote.git", tmp_path / "teammate")
    other.write("ops/theirs", "Their lesson", "A lesson the teammate pushed.")
    other.commit("theirs")
    other.git("push", "-q", "origin", "main")
    for n in range(2):
        vault_repo.write(f"ops/local-{n}", f"Local lesson {n}", f"Local summary number {n}.")
        vault_repo.commit(f"local {n}")
    log = _logged_hooks(vault_repo, tmp_path)
    vault_repo.git("pull", "-q", "--rebase")
    assert _indexed_commit(vault_repo.root) == vault_repo.git("rev-parse", "main") and _runs(log) == 1


def test_cairn_sync_indexes_what_it_fetched_itself(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """`cairn sync` fetches into the served ref and indexes it: the vault's hooks leave that fetch to it."""
    remote = _team_remote(vault_repo, tmp_path)
    mine = _clone(remote, tmp_path / "mine")
    assert cairn("vault", "add", str(mine.root), "--name", "team").returncode == 0
    log = _logged_hooks(mine, tmp_path)
    pushed = _push_a_lesson(vault_repo, 1)
    done = json.loads(cairn("sync", "team", "--json").stdout)["vaults"][0]
    assert (done["status"], done["after"]) == ("updated", pushed)
    assert _indexed_commit(mine.root) == pushed and _runs(log) == 0


def test_a_chained_reference_transaction_hook_gets_its_input_and_keeps_its_veto(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    make_vault(vault_repo)
    hooks = vault_repo.root / ".git" / "hooks"
    mine = hooks / "reference-transaction"
    seen = tmp_path / "seen"
    mine.write_text(
        f'#!/bin/sh\nwhile read -r old new ref; do echo "$1 $ref" >> "{seen}"; done\n'
        'case "$1" in prepared) git rev-parse -q --verify refs/tags/blocked >/dev/null || exit 0; exit 1 ;; esac\n'
    )
    mine.chmod(0o755)
    refused = cairn("install", "git-hooks", "--vault", str(vault_repo.root))
    assert refused.returncode == 1 and "reference-transaction" in refused.stderr
    assert cairn("install", "git-hooks", "--vault", str(vault_repo.root), "--chain").returncode == 0
    log = _logged_hooks(vault_repo, tmp_path)
    vault_repo.git("tag", "v1")
    assert seen.read_text() == "prepared refs/tags/v1\ncommitted refs/tags/v1\n"
    vault_repo.git("tag", "blocked")  # its prepared state rejects nothing it has not seen yet
    head = vault_repo.git("rev-parse", "HEAD")
    vault_repo.write("ops/later", "A later lesson", "Written after the first two.")
    vault_repo.git("add", "-A")
    failed = vault_repo.git("commit", "-q", "-m", "later", check=False)
    assert vault_repo.git("rev-parse", "HEAD") == head, failed  # the chained hook's veto still holds
    assert _runs(log) == 0
    cairn("uninstall", "git-hooks", "--vault", str(vault_repo.root))
    assert mine.read_text().startswith("#!/bin/sh\nwhile read")


def test_doctor_says_when_git_hooks_were_written_by_another_cairn(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Hooks written before `cairn index --wait` let a commit wait 10 minutes on another index; doctor said they
    were fine, since it only looked for them. It now says when they differ from what install writes today."""
    make_vault(vault_repo)
    assert cairn("vault", "add", str(vault_repo.root), "--name", "team").returncode == 0
    assert cairn("install", "git-hooks", "--vault", "team").returncode == 0

    def hook_lines() -> list[dict[str, Any]]:
        report = json.loads(cairn("doctor", "--json", cwd=tmp_path).stdout)
        return [c for c in report["checks"] if c["area"] == "git-hooks"]

    assert [c["ok"] for c in hook_lines()] == [True]
    post_commit = vault_repo.root / ".git" / "hooks" / "post-commit"
    post_commit.write_text(post_commit.read_text().replace("index --wait 5 --vault", "index --vault"))  # an older one
    lines = hook_lines()
    assert [c["ok"] for c in lines] == [True, None]
    assert "post-commit in" in lines[1]["detail"] and "cairn install git-hooks --vault team" in lines[1]["detail"]
    assert "updated" in cairn("install", "git-hooks", "--vault", "team").stdout
    assert [c["ok"] for c in hook_lines()] == [True]


def test_an_agents_install_says_how_to_chain_a_git_hook_in_the_way(configured: VaultRepo, tmp_path: Path) -> None:
    """`cairn install claude-code` installs the vault's git hooks too; with another hook in the place of one it said
    "Run again with --chain", and `cairn install claude-code --chain` changes nothing. It now prints the command."""
    mine = configured.root / ".git" / "hooks" / "post-merge"
    mine.write_text("#!/bin/sh\nexit 0\n")
    mine.chmod(0o755)
    done = cairn("install", "claude-code", "--user", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if "Git hooks not installed" in line)
    printed = next(part for part in line.split("`") if part.startswith("cairn install git-hooks"))
    assert cairn(*shlex.split(printed)[1:], cwd=tmp_path).returncode == 0
    assert (mine.parent / "post-merge.local").read_text() == "#!/bin/sh\nexit 0\n"
    assert githooks.missing_git_hooks(mine.parent) == []


def test_doctors_fix_for_a_git_hook_another_hook_holds_runs_as_printed(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """The user's own reference-transaction hook where Cairn's goes (an older Cairn installed four hooks, this one
    five): doctor said the hook was missing and printed `cairn install git-hooks --vault team`, which refuses to
    write over a hook that is not Cairn's. Its fix now adds --chain, which keeps that hook and runs it first."""
    make_vault(vault_repo)
    assert cairn("vault", "add", str(vault_repo.root), "--name", "team").returncode == 0
    mine = vault_repo.root / ".git" / "hooks" / "reference-transaction"
    mine.write_text("#!/bin/sh\nexit 0\n")
    mine.chmod(0o755)

    def hook_line() -> dict[str, Any]:
        report = json.loads(cairn("doctor", "--json", cwd=tmp_path).stdout)
        return next(c for c in report["checks"] if c["area"] == "git-hooks")

    line = hook_line()
    assert line["ok"] is False and "not Cairn's" in line["detail"]
    fixed = cairn(*shlex.split(line["fix"])[1:], cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    assert hook_line()["ok"] is True
    assert (mine.parent / "reference-transaction.local").read_text() == "#!/bin/sh\nexit 0\n"


def test_doctor_fails_git_hooks_whose_python_s_launcher_no_longer_starts(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """An older Cairn's hooks, in a venv whose path held a space, ran `"$CAIRN_PYTHON" -S "$CAIRN_BIN" index`. Upgraded
    in place, `cairn` is pip's console-script launcher, which finds no Cairn without `site`: every commit left the
    index stale, and doctor said the hooks were installed (written by another Cairn, for information)."""
    make_vault(vault_repo)
    assert cairn("vault", "add", str(vault_repo.root), "--name", "team").returncode == 0
    assert cairn("install", "git-hooks", "--vault", "team").returncode == 0
    for name in githooks.GIT_HOOKS:
        hook = vault_repo.root / ".git" / "hooks" / name
        old = hook.read_text().replace(
            "\nCAIRN_VAULT_DIR=", f"\nCAIRN_PYTHON={shlex.quote(sys.executable)}\nCAIRN_VAULT_DIR="
        )
        hook.write_text(old)

    def hook_line() -> dict[str, Any]:
        report = json.loads(cairn("doctor", "--json", cwd=tmp_path).stdout)
        return next(c for c in report["checks"] if c["area"] == "git-hooks")

    line = hook_line()
    assert line["ok"] is False and "no longer starts Cairn" in line["detail"]
    assert cairn(*shlex.split(line["fix"])[1:], cwd=tmp_path).returncode == 0
    assert hook_line()["ok"] is True


def test_git_hooks_under_pre_commits_migration_mode_run_and_doctor_says_so(vault_repo: VaultRepo) -> None:
    """`pre-commit install --hook-type post-commit` over Cairn's hook moves it to `post-commit.legacy` and runs it
    first. Doctor said `missing: post-commit` and offered `cairn install git-hooks`, which refused the hook as not
    Cairn's. The hooks run (each as itself: post-rewrite indexes a rebase), doctor says so, and install updates
    Cairn's script where pre-commit put it."""
    make_vault(vault_repo)
    hooks = vault_repo.root / ".git" / "hooks"
    assert cairn("vault", "add", str(vault_repo.root), "--name", "team").returncode == 0
    assert cairn("install", "git-hooks", "--vault", "team").returncode == 0
    (vault_repo.root / ".pre-commit-config.yaml").write_text("repos: []\n")
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install", "-t", "post-commit", "-t", "post-rewrite"],
        cwd=vault_repo.root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and "migration mode" in done.stdout, done.stdout + done.stderr
    assert "cairn-index-hook" in (hooks / "post-commit.legacy").read_text()

    report = json.loads(cairn("doctor", "--json", cwd=vault_repo.root).stdout)
    assert [c["ok"] for c in report["checks"] if c["area"] == "git-hooks"] == [True]
    vault_repo.write("python/venv", "Activate the venv", "pip install outside the venv hits the system python")
    vault_repo.git("add", "-A")
    vault_repo.git("commit", "-q", "-m", "a card")
    assert _indexed_commit(vault_repo.root) == vault_repo.git("rev-parse", "HEAD")
    # A rebase of the served branch: Cairn's post-rewrite, run as `post-rewrite.legacy`, took itself for another
    # hook inside a rebase and indexed nothing.
    vault_repo.git("switch", "-q", "-c", "upstream", "HEAD~1")
    vault_repo.write("python/pipx", "Use pipx for tools", "pip install --user mixes tool dependencies together")
    vault_repo.commit("another card")
    vault_repo.git("switch", "-q", "main")
    vault_repo.git("rebase", "-q", "upstream")
    assert _indexed_commit(vault_repo.root) == vault_repo.git("rev-parse", "HEAD")

    installed = cairn("install", "git-hooks", "--vault", "team")
    assert installed.returncode == 0, installed.stderr
    assert f"unchanged: {hooks / 'post-commit.legacy'}" in installed.stdout
    assert "File generated by pre-commit" in (hooks / "post-commit").read_text()  # pre-commit's hook left alone


def test_git_hooks_beside_pre_commits_hook_survive_pre_commit_install_and_keep_the_users_hook(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed: the user's own post-commit, kept by `pre-commit install -t post-commit` as post-commit.legacy;
    `cairn install git-hooks --chain` then moved pre-commit's hook to post-commit.local, and the next `pre-commit
    install` (a teammate's setup script) took Cairn's hook for a stranger's and moved it to post-commit.legacy, over
    the user's hook: lost. Cairn's hook now goes where pre-commit runs it, post-commit.legacy, the user's chained
    behind it; pre-commit's own hook stays where it is."""
    make_vault(vault_repo)
    root, hooks = vault_repo.root, vault_repo.root / ".git" / "hooks"
    witness = tmp_path / "ran"
    mine = f"#!/bin/sh\necho mine >> '{witness}'\n"
    (hooks / "post-commit").write_text(mine)
    (hooks / "post-commit").chmod(0o755)
    (root / ".pre-commit-config.yaml").write_text("repos: []\n")
    pre_commit = [sys.executable, "-m", "pre_commit", "install", "-t", "post-commit"]
    assert subprocess.run(pre_commit, cwd=root, capture_output=True, check=False).returncode == 0

    chained = cairn("install", "git-hooks", "--vault", str(root), "--chain")
    assert chained.returncode == 0, chained.stderr
    assert subprocess.run(pre_commit, cwd=root, capture_output=True, check=False).returncode == 0
    vault_repo.write("python/venv", "Activate the venv", "pip install outside the venv hits the system python")
    vault_repo.git("add", "-A")
    vault_repo.git("commit", "-q", "-m", "a card")
    assert witness.exists() and witness.read_text() == "mine\n"  # the user's hook still runs
    assert f"chained: {hooks / 'post-commit.legacy'}" in chained.stdout
    assert _indexed_commit(root) == vault_repo.git("rev-parse", "HEAD")

    assert cairn("uninstall", "git-hooks", "--vault", str(root)).returncode == 0
    assert (hooks / "post-commit.legacy").read_text() == mine
    assert "File generated by pre-commit" in (hooks / "post-commit").read_text()


def test_a_hook_chained_before_pre_commit_install_still_runs_and_uninstall_puts_it_back(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed: the user's post-commit, chained by `cairn install git-hooks --chain` as post-commit.local; then
    `pre-commit install -t post-commit` moved Cairn's hook to post-commit.legacy, which runs `$0.local`,
    post-commit.legacy.local: the user's hook ran no more, and `uninstall git-hooks` removed Cairn's and left the
    user's as post-commit.local, which nothing runs. Install again chains it where Cairn's hook looks, and uninstall
    puts it where pre-commit's hook runs it."""
    make_vault(vault_repo)
    root, hooks = vault_repo.root, vault_repo.root / ".git" / "hooks"
    witness = tmp_path / "ran"
    mine = f"#!/bin/sh\necho mine >> '{witness}'\n"
    (hooks / "post-commit").write_text(mine)
    (hooks / "post-commit").chmod(0o755)
    assert cairn("install", "git-hooks", "--vault", str(root), "--chain").returncode == 0
    (root / ".pre-commit-config.yaml").write_text("repos: []\n")
    pre_commit = [sys.executable, "-m", "pre_commit", "install", "-t", "post-commit"]
    assert subprocess.run(pre_commit, cwd=root, capture_output=True, check=False).returncode == 0
    assert (hooks / "post-commit.local").read_text() == mine

    again = cairn("install", "git-hooks", "--vault", str(root))
    assert again.returncode == 0, again.stderr
    assert f"chained: {hooks / 'post-commit.legacy'}" in again.stdout.splitlines()
    vault_repo.git("add", "-A")
    vault_repo.git("commit", "-q", "-m", "pre-commit's config")
    assert witness.read_text() == "mine\n"  # the user's hook runs again, and so does Cairn's
    assert _indexed_commit(root) == vault_repo.git("rev-parse", "HEAD")

    # The state `pre-commit install` leaves, uninstalled as it is: the user's hook goes where pre-commit runs it.
    os.replace(hooks / "post-commit.legacy.local", hooks / "post-commit.local")
    done = cairn("uninstall", "git-hooks", "--vault", str(root))
    assert done.returncode == 0, done.stderr
    assert f"restored: {hooks / 'post-commit.legacy'}" in done.stdout.splitlines()
    assert (hooks / "post-commit.legacy").read_text() == mine and not (hooks / "post-commit.local").exists()
    vault_repo.git("commit", "-q", "--allow-empty", "-m", "after Cairn")
    assert witness.read_text() == "mine\nmine\n"


def test_git_hooks_in_a_shared_hooks_folder_index_only_their_own_vault(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """A hooks folder other repositories share (a global core.hooksPath): Cairn's hooks, written for one vault, ran
    `cairn index --vault .` in every repository that committed and had a `cards/` folder, another vault included.
    They now index their own work tree only, and still follow their vault's commits."""
    shared = tmp_path / "shared-hooks"
    make_vault(vault_repo)
    vault_repo.git("config", "core.hooksPath", str(shared))
    assert cairn("install", "git-hooks", "--vault", str(vault_repo.root)).returncode == 0
    assert (shared / "post-commit").exists()
    other = VaultRepo(tmp_path / "other")  # another vault that only shares the hooks folder
    make_vault(other)
    other.git("config", "core.hooksPath", str(shared))
    other.write("python/venv", "Activate the venv", "pip install outside the venv hits the system python")
    other.git("add", "-A")
    before = _indexed_commit(other.root)
    other.git("commit", "-q", "-m", "a card")  # its hooks enabled (VaultRepo.commit runs them off)
    assert _indexed_commit(other.root) == before != other.git("rev-parse", "HEAD")
    vault_repo.write("python/venv", "Activate the venv", "pip install outside the venv hits the system python")
    vault_repo.git("add", "-A")
    vault_repo.git("commit", "-q", "-m", "a card")
    assert _indexed_commit(vault_repo.root) == vault_repo.git("rev-parse", "HEAD")


def test_git_hooks_are_not_taken_from_another_vault_sharing_the_hooks_folder(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """A second vault under the same global core.hooksPath: `cairn install git-hooks` rewrote the shared hooks for
    itself ("updated"), and `cairn uninstall git-hooks` removed them, and the first vault's index then fell behind
    every commit, unsaid. Both now refuse and name the vault whose hooks they are; install's fix, run as printed,
    gives the second its own hooks folder, and both vaults follow their commits."""
    shared = tmp_path / "shared-hooks"
    make_vault(vault_repo)
    vault_repo.git("config", "core.hooksPath", str(shared))
    assert cairn("install", "git-hooks", "--vault", str(vault_repo.root)).returncode == 0
    written = (shared / "post-commit").read_text()
    other = VaultRepo(tmp_path / "other")
    make_vault(other)
    other.git("config", "core.hooksPath", str(shared))

    kept = cairn("uninstall", "git-hooks", "--vault", str(other.root))  # nor removed from there
    assert kept.returncode == 1 and (shared / "post-commit").read_text() == written, kept.stdout + kept.stderr
    assert f"cairn uninstall git-hooks --vault {vault_repo.root.resolve()}`" in kept.stderr
    refused = cairn("install", "git-hooks", "--vault", str(other.root))
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert (shared / "post-commit").read_text() == written
    assert f"for {vault_repo.root.resolve()}, another repository" in refused.stderr
    fix = re.search(r"`(git -C .+?)`", refused.stderr)
    assert fix is not None, refused.stderr
    subprocess.run(fix.group(1), shell=True, check=True, cwd=tmp_path)
    assert cairn("install", "git-hooks", "--vault", str(other.root)).returncode == 0
    for repo in (vault_repo, other):
        repo.write("python/venv", "Activate the venv", "pip install outside the venv hits the system python")
        repo.git("add", "-A")
        repo.git("commit", "-q", "-m", "a card")
        assert _indexed_commit(repo.root) == repo.git("rev-parse", "HEAD")


def test_git_hooks_of_a_copied_vault_are_its_own_to_replace(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: a vault copied whole (`cp -a`, a backup restored beside the original) has the original's git hooks
    in its own `.git/hooks`. `cairn install git-hooks`, doctor's fix, refused them as "another repository sharing
    that folder (core.hooksPath)" and said to run it "from a repository whose hooks folder is its own", which it
    was; `cairn uninstall git-hooks` said to uninstall the original's. Both now replace the copy's, and leave the
    original's."""
    make_vault(vault_repo)
    assert cairn("install", "git-hooks", "--vault", str(vault_repo.root)).returncode == 0
    kept = (vault_repo.root / ".git" / "hooks" / "post-commit").read_text()
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(vault_repo.root), str(copy)], check=True)
    installed = cairn("install", "git-hooks", "--vault", str(copy))
    assert installed.returncode == 0, installed.stderr
    assert str(copy.resolve()) in (copy / ".git" / "hooks" / "post-commit").read_text()
    removed = cairn("uninstall", "git-hooks", "--vault", str(copy))
    assert removed.returncode == 0, removed.stderr
    assert not (copy / ".git" / "hooks" / "post-commit").exists()
    assert (vault_repo.root / ".git" / "hooks" / "post-commit").read_text() == kept


def test_git_hooks_follow_the_served_branch_moved_in_a_linked_worktree(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """A vault whose `main` is checked out in a linked worktree (`git worktree add`) while its own work tree is on a
    feature branch: the hooks index only the work tree they were installed for, so a commit, merge or rename on
    `main` made there left the index stale, and the next prompt got nothing from the vault. The
    reference-transaction hook now indexes the vault for every move of a branch it may serve from another work tree
    of its repository, and for nothing else."""
    make_vault(vault_repo)
    vault_repo.git("switch", "-q", "-c", "feature")
    linked = tmp_path / "linked"
    vault_repo.git("worktree", "add", "-q", str(linked), "main")
    log = _logged_hooks(vault_repo, tmp_path)
    served = VaultRepo(linked)  # the same repository, seen from the linked worktree

    served.write("python/venv", "Activate the venv", "pip install outside the venv hits the system python.")
    served.git("add", "-A")
    served.git("commit", "-q", "-m", "a card from the linked worktree")
    assert _indexed_commit(vault_repo.root) == served.git("rev-parse", "main")
    served.git("switch", "-q", "-c", "topic")
    served.git("mv", "cards/python/venv.md", "cards/python/virtualenv.md")
    served.git("commit", "-q", "-m", "rename on a topic branch", author=BOB)
    runs = _runs(log)
    assert _indexed_commit(vault_repo.root) != served.git("rev-parse", "topic")  # not served: nothing indexed
    served.git("switch", "-q", "main")
    served.git("merge", "-q", "--no-ff", "-m", "merge topic", "topic", author=BOB)
    assert _indexed_commit(vault_repo.root) == served.git("rev-parse", "main")
    assert _runs(log) == runs + 1
    listed = cairn("list", "--vault", str(vault_repo.root)).stdout
    assert "python/virtualenv" in listed and "python/venv " not in listed

    vault_repo.git("commit", "-q", "--allow-empty", "-m", "on feature")  # its own work tree: as before
    assert _runs(log) == runs + 2


def test_git_hooks_need_nothing_on_path_but_git(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """A GUI client may run git with a PATH of its own that holds its git and little else: the hooks called
    `basename`, so each printed "basename: not found" into the client's output and indexed after a checkout of files
    too (HEAD unchanged), which they mean to skip."""
    import shutil

    make_vault(vault_repo)
    log = _logged_hooks(vault_repo, tmp_path)
    only_git = tmp_path / "client-bin"
    only_git.mkdir()
    git = shutil.which("git")
    assert git is not None
    (only_git / "git").symlink_to(git)
    env = {**os.environ, "PATH": str(only_git)}

    def client_git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(only_git / "git"), *args], cwd=vault_repo.root, env=env, capture_output=True, text=True, check=True
        )

    (vault_repo.root / "cards" / "git" / "force-push-rebase.md").write_text("scribbled")
    checkout = client_git("checkout", "--", "cards/git/force-push-rebase.md")
    assert (checkout.stderr, _runs(log)) == ("", 0)
    vault_repo.write("python/venv", "Activate the venv", "pip install outside the venv hits the system python.")
    client_git("add", "-A")
    committed = client_git("commit", "-q", "-m", "a card from a GUI client")
    assert committed.stderr == ""
    assert _runs(log) == 1 and _indexed_commit(vault_repo.root) == vault_repo.git("rev-parse", "HEAD")


def test_install_and_sync_show_their_index_build_on_a_terminal(tmp_path: Path, configured: VaultRepo) -> None:
    """Bug fixed: `cairn install AGENT --user` and `cairn sync` build each vault's index (12 s for a teammate's
    10,000-card vault) and showed nothing on a terminal while they did; both draw a bar now, as `cairn index` does."""
    import shutil

    from cairn.hot.paths import index_file

    shutil.rmtree(Path(index_file(str(configured.root))).parent)
    wide = {"COLUMNS": "400"}  # room for the whole label: the temp folder's path is long
    code, drawn = run_on_terminal(["install", "claude-code", "--user"], tmp_path, env=wide)
    assert code == 0, drawn
    assert f"Indexing {configured.root}".encode() in drawn and re.search(rb"  (\d+)/\1\b", drawn), drawn
    assert b"Index of" in drawn
    shutil.rmtree(Path(index_file(str(configured.root))).parent)
    code, drawn = run_on_terminal(["sync"], tmp_path)
    assert code == 0, drawn
    assert b"team: indexing  [" in drawn, drawn
    piped = cairn("sync", cwd=tmp_path)  # no terminal: no bar
    assert piped.returncode == 0 and "[" not in piped.stderr, piped
