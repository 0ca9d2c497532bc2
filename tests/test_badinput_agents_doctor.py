"""`cairn doctor` on broken agent setups: each broken state must FAIL with the command that fixes it, and a working
one must pass. Real settings files, a real vault and index, the installed `cairn` as a subprocess."""

from __future__ import annotations

import errno
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from cairn import doctor
from cairn.hot.index import SECURITY_RULES_VERSION
from cairn.hot.userconfig import VaultEntry
from helpers.cachefiles import edit_meta, reseal
from helpers.mounts import cairn_on_read_only
from helpers.payloads import FITTING_PROMPT, payload_for
from helpers.vaults import REBASE_ID, VaultRepo, cache_dir, cairn_executable, make_vault, run_cairn


@pytest.fixture
def setup(vault_repo: VaultRepo, tmp_path: Path, isolated_env: Path) -> Path:
    """A configured vault, its git hooks, and Claude Code's hook in the user's settings; returns the project."""
    make_vault(vault_repo)
    assert run_cairn("vault", "add", str(vault_repo.root), "--name", "team", cwd=tmp_path).returncode == 0
    project = tmp_path / "project"
    project.mkdir()
    done = run_cairn("install", "claude-code", "--user", cwd=project)
    assert done.returncode == 0, done.stderr
    return project


def _agent_checks(project: Path) -> list[dict[str, Any]]:
    done = run_cairn("doctor", "--cwd", str(project), "--json", cwd=project)
    return [c for c in json.loads(done.stdout)["checks"] if c["area"] == "agent"]


def _set_command(path: Path, event: str, command: str) -> None:
    data = json.loads(path.read_text())
    data["hooks"][event][0]["hooks"][0]["command"] = command
    path.write_text(json.dumps(data))


def _user_command(home: Path) -> str:
    data = json.loads((home / ".claude" / "settings.json").read_text())
    return str(data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"])


@pytest.mark.parametrize(
    ("tail", "why"),
    [
        ("hook", "--format is required"),
        ("hook --format gemini", "gemini"),
        ("hook --format claude-code --format claude-code", "more than once"),
        ("hook --format claude-code --verbose", "unknown option"),
    ],
)
def test_a_hook_command_that_cannot_serve_this_agent_fails(
    tail: str, why: str, setup: Path, isolated_env: Path
) -> None:
    """Bug fixed: doctor said `ok` for a hook command that exits 1 on every prompt (no --format, an unknown or
    repeated option) or prints another agent's output (`--format gemini` under Claude Code: hookEventName
    BeforeAgent, which Claude Code rejects); it checked only that the executable runs."""
    settings = isolated_env / ".claude" / "settings.json"
    executable = _user_command(isolated_env).split(" hook ")[0]
    _set_command(settings, "UserPromptSubmit", f"{executable} {tail}")
    [check] = _agent_checks(setup)
    assert check["ok"] is False, check
    assert why in check["detail"]
    assert check["fix"] == "cairn install claude-code --user"


def test_a_matching_format_passes_and_codex_reads_the_claude_code_format(setup: Path, isolated_env: Path) -> None:
    executable = _user_command(isolated_env).split(" hook ")[0]
    settings = isolated_env / ".claude" / "settings.json"
    _set_command(settings, "UserPromptSubmit", f"{executable} hook --format=codex")  # the same bytes out
    [check] = _agent_checks(setup)
    assert check["ok"] is True, check


def test_a_baked_vault_given_with_equals_is_checked(setup: Path, isolated_env: Path, tmp_path: Path) -> None:
    """Bug fixed: `--vault=/gone` (the hook accepts it) was not checked, only `--vault /gone`."""
    executable = _user_command(isolated_env).split(" hook ")[0]
    gone = tmp_path / "gone"
    _set_command(
        isolated_env / ".claude" / "settings.json",
        "UserPromptSubmit",
        f"{executable} hook --format claude-code --vault={gone}",
    )
    [check] = _agent_checks(setup)
    assert check["ok"] is False and f"the hook's --vault '{gone}' is no vault" in check["detail"]


def test_a_hook_that_bakes_in_a_vault_says_it_serves_that_vault_only(
    setup: Path, isolated_env: Path, vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug fixed: after `cairn install codex --project P --vault V` (the help's example), `cairn doctor --cwd P` said
    every configured vault is "served in P" and the agent ok, with no word that this agent's hook serves V alone."""
    assert run_cairn("uninstall", "claude-code", "--user", cwd=setup).returncode == 0
    monkeypatch.setenv("PATH", f"{Path(cairn_executable()).parent}{os.pathsep}{os.environ['PATH']}")  # as pipx has it
    done = run_cairn("install", "codex", "--project", str(setup), "--vault", str(vault_repo.root), cwd=setup)
    assert done.returncode == 0, done.stderr
    [check] = _agent_checks(setup)
    assert check["ok"] is True, check
    assert check["detail"].endswith(f"; it serves --vault {vault_repo.root} only, not the configured vaults")
    assert run_cairn("install", "claude-code", "--user", cwd=setup).returncode == 0
    user = next(c for c in _agent_checks(setup) if c["subject"] == "claude-code (user)")
    assert "only" not in user["detail"]  # no --vault: the configured vaults


def test_an_install_from_a_subfolder_is_found(setup: Path, isolated_env: Path) -> None:
    """Bug fixed: `cairn install claude-code` in a subfolder of a git work tree writes `sub/.claude/settings.json`
    (where Claude Code, started there, reads it), but doctor looked only at the work tree's root and said no agent
    runs `cairn hook`."""
    assert run_cairn("uninstall", "claude-code", "--user", cwd=setup).returncode == 0
    subprocess.run(["git", "init", "-q"], cwd=setup, check=True)
    sub = setup / "services" / "api"
    sub.mkdir(parents=True)
    done = run_cairn("install", "claude-code", cwd=sub)
    assert done.returncode == 0, done.stderr
    [check] = _agent_checks(sub)
    assert check["ok"] is True, check
    assert check["subject"] == "claude-code (project)"
    assert str(sub / ".claude" / "settings.local.json") in check["detail"]


def test_the_fix_for_a_project_hook_above_the_current_folder_rewrites_that_hook(
    setup: Path, isolated_env: Path
) -> None:
    """Bug fixed: doctor run in a subfolder of a project (or with --cwd) found the project's broken hook in the
    folder above, but its fix was a bare `cairn install claude-code`, which wrote a second settings file into the
    current folder and left the broken one failing; and it dropped the hook's --vault and --scope."""
    assert run_cairn("uninstall", "claude-code", "--user", cwd=setup).returncode == 0  # one hook serves `team`
    subprocess.run(["git", "init", "-q"], cwd=setup, check=True)
    done = run_cairn("install", "claude-code", "--vault", "team", "--scope", "git", cwd=setup)
    assert done.returncode == 0, done.stderr
    settings = setup / ".claude" / "settings.local.json"
    command = json.loads(settings.read_text())["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    _set_command(
        settings,
        "UserPromptSubmit",
        "/gone/venv/bin/python3 -S /gone/venv/bin/cairn" + command[command.index(" hook ") :],
    )
    sub = setup / "services" / "api"
    sub.mkdir(parents=True)

    [check] = [c for c in _agent_checks(sub) if c["subject"] == "claude-code (project)"]
    assert check["ok"] is False, check
    assert (
        check["fix"]
        == shlex.join(["cairn", "install", "claude-code", "--project", str(setup)]) + " --vault team --scope git"
    )
    fixed = run_cairn(*shlex.split(check["fix"])[1:], cwd=sub)
    assert fixed.returncode == 0, fixed.stderr
    assert not (sub / ".claude").exists()
    assert all(c["ok"] for c in _agent_checks(sub)), _agent_checks(sub)
    assert json.loads(settings.read_text())["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"] == command


def test_two_hooks_that_serve_one_vault_fail(setup: Path, isolated_env: Path, tmp_path: Path) -> None:
    """Bug fixed: a project install beside the user's (each agent merges its user and project settings, and runs
    each hook) injected every card of the configured vault twice per prompt, and doctor said `ok` for both hooks.
    The same command in both files runs once (Claude Code runs identical commands once), and hooks that bake in
    different vaults are a deliberate split: both pass."""
    subprocess.run(["git", "init", "-q"], cwd=setup, check=True)
    done = run_cairn("install", "claude-code", "--vault", "team", cwd=setup)
    assert done.returncode == 0, done.stderr
    assert "  Note: Cairn's hook runs twice on each prompt (user: " in done.stdout  # said at once, with its fix
    assert f"keep one: `cairn uninstall claude-code --project {setup}`" in done.stdout

    [twice] = [c for c in _agent_checks(setup) if c["ok"] is False]
    assert twice["subject"] == "claude-code (twice)"
    assert twice["detail"] == (
        f"Cairn's hook runs twice on each prompt (user: {isolated_env / '.claude' / 'settings.json'}; project: "
        f"{setup / '.claude' / 'settings.local.json'}) and both serve the same vault: the two race for the agent's "
        "session, which gives each card once, so the cards a prompt gets depend on which hook runs first (each "
        "comes twice when no session can be kept); keep one"
    )
    # Bug fixed: doctor said "its cards are injected twice", which the session the two hooks share never lets happen
    payload = payload_for("claude-code", FITTING_PROMPT, setup, session="both-hooks")
    hooks = ((), ("--vault", "team"))  # the user's hook, then the project's
    both = [run_cairn("hook", "--format", "claude-code", *vault, cwd=setup, input=payload) for vault in hooks]
    assert [REBASE_ID in done.stdout for done in both] == [True, False], both
    assert twice["fix"] == shlex.join(["cairn", "uninstall", "claude-code", "--project", str(setup)])
    assert run_cairn(*shlex.split(twice["fix"])[1:], cwd=setup).returncode == 0
    assert all(c["ok"] for c in _agent_checks(setup)), _agent_checks(setup)

    done = run_cairn("install", "claude-code", cwd=setup)  # the user's own command: runs once
    assert done.returncode == 0 and "twice" not in done.stdout, done.stdout
    assert all(c["ok"] for c in _agent_checks(setup)), _agent_checks(setup)
    other = VaultRepo(tmp_path / "other")  # a vault of its own, baked into the project's hook: no card twice
    make_vault(other)
    assert run_cairn("install", "claude-code", "--vault", str(other.root), cwd=setup).returncode == 0
    assert all(c["ok"] for c in _agent_checks(setup)), _agent_checks(setup)


@pytest.mark.parametrize("where", ["user", "project-local"])
def test_claude_codes_switch_that_turns_every_hook_off_fails(where: str, setup: Path, isolated_env: Path) -> None:
    """Bug fixed: with `"disableAllHooks": true` in a settings file Claude Code reads (the switch of its `/hooks`
    menu; in the user's settings or a project's settings.local.json), Claude Code runs no hook, yet doctor said
    `ok` for Cairn's and every prompt went without cards."""
    if where == "user":
        settings = isolated_env / ".claude" / "settings.json"
        data = json.loads(settings.read_text())
    else:
        settings = setup / ".claude" / "settings.local.json"
        settings.parent.mkdir()
        data = {}
    settings.write_text(json.dumps({**data, "disableAllHooks": True}))

    checks = _agent_checks(setup)
    [off] = [c for c in checks if c["ok"] is False]
    assert off["detail"] == f'{settings} sets "disableAllHooks": true, so Claude Code runs no hook, Cairn\'s included'
    assert off["fix"] == "" and off["note"] == f'remove "disableAllHooks" from {settings}'
    settings.write_text(json.dumps({**data, "disableAllHooks": False}))
    assert all(c["ok"] for c in _agent_checks(setup))


@pytest.mark.parametrize(
    ("features", "key"),
    [
        ("hooks = false", "hooks"),
        ("codex_hooks = false", "codex_hooks"),
        ("hooks = false\ncodex_hooks = true", "hooks"),
    ],
)
def test_codex_with_hooks_switched_off_fails(features: str, key: str, setup: Path, isolated_env: Path) -> None:
    """Bug fixed: with hooks switched off in Codex's config.toml (`[features] hooks = false`, or the older
    `codex_hooks = false`), Codex runs no hook, yet doctor said `ok` for Cairn's and every prompt went without
    cards."""
    done = run_cairn("install", "codex", "--user", cwd=setup)
    assert done.returncode == 0, done.stderr
    config = isolated_env / ".codex" / "config.toml"
    config.write_text(f'model = "gpt-5-codex"\n\n[features]\n{features}\n')

    [off] = [c for c in _agent_checks(setup) if c["ok"] is False]
    assert off["subject"] == "codex (user)"
    assert off["detail"] == f"{config} sets `{key} = false` under [features], so Codex runs no hook, Cairn's included"
    assert off["fix"] == "" and off["note"] == f"set `{key} = true` under [features] in {config}"
    config.write_text(config.read_text().replace(f"{key} = false", f"{key} = true"))
    assert all(c["ok"] for c in _agent_checks(setup))


@pytest.mark.parametrize(
    ("layers", "off_in"),
    [
        ({"user": {"enabled": False}}, "user"),
        ({"user": {"enabled": False}, "project": {"enabled": True}}, None),  # the project's file wins over the user's
        ({"project": {"enabled": False}, "system": {"enabled": True}}, None),  # the system settings win over all
        ({"user": {"enabled": True}, "system": {"enabled": False}}, "system"),
        ({"defaults": {"enabled": False}}, "defaults"),
        ({"defaults": {"enabled": False}, "user": {"enabled": True}}, None),
        ({"project": {"disabled": ["cairn"]}}, "project"),  # Cairn's hook by its name
        ({"user": {"disabled": ["other-hook"]}}, None),
    ],
)
def test_gemini_with_hooks_switched_off_fails(
    layers: dict[str, dict[str, Any]], off_in: str | None, setup: Path, isolated_env: Path, tmp_path: Path
) -> None:
    """Bug fixed: with Gemini CLI's hooks switched off (`hooksConfig.enabled: false`, "the canonical toggle for the
    hooks system", or Cairn's hook named in `hooksConfig.disabled`), Gemini CLI runs no hook or skips Cairn's, yet
    doctor said `ok` for it and every prompt went without cards, as it already failed Claude Code's and Codex's
    switches. The file of highest precedence that sets `enabled` decides; Gemini reads its settings past comments."""
    done = run_cairn("install", "gemini", "--user", cwd=setup)
    assert done.returncode == 0, done.stderr
    files = {
        "user": isolated_env / ".gemini" / "settings.json",
        "project": setup / ".gemini" / "settings.json",
        "system": tmp_path / "etc" / "gemini-settings.json",
        "defaults": tmp_path / "etc" / "gemini-system-defaults.json",
    }
    env = {
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(files["system"]),
        "GEMINI_CLI_SYSTEM_DEFAULTS_PATH": str(files["defaults"]),
    }
    for layer, config in layers.items():
        path = files[layer]
        path.parent.mkdir(parents=True, exist_ok=True)
        data = json.loads(path.read_text()) if path.exists() else {}
        path.write_text("// switched by hand\n" + json.dumps({**data, "hooksConfig": config}, indent=2))

    done = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup, env=env)
    checks = [c for c in json.loads(done.stdout)["checks"] if c["area"] == "agent"]
    failed = [c for c in checks if c["ok"] is False]
    if off_in is None:
        assert failed == [], failed
        return
    [off] = failed
    path = files[off_in]
    assert off["subject"] == f"gemini ({'system' if off_in == 'defaults' else off_in})"
    if "disabled" in layers[off_in]:
        assert off["detail"] == f"{path} lists 'cairn' in hooksConfig.disabled, so Gemini CLI skips Cairn's hook"
        assert off["note"] == f"remove it from hooksConfig.disabled in {path}"
    else:
        assert (
            off["detail"] == f'{path} sets hooksConfig "enabled": false, so Gemini CLI runs no hook, Cairn\'s included'
        )
        assert off["note"] == f'remove "enabled": false from hooksConfig in {path}'
    assert done.returncode == 1


def test_a_damaged_index_fails_and_its_fix_works(setup: Path, isolated_env: Path) -> None:
    """Bug fixed: an index whose bytes changed after it was written (a flipped byte among its records) passed
    doctor (`ok index`), while `cairn audit` and the hook's seal checks reject it."""
    [index] = cache_dir().glob("vaults/*/index.cairn")
    data = bytearray(index.read_bytes())
    data[len(data) // 2] ^= 0xFF
    index.write_bytes(bytes(data))
    done = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup)
    [check] = [c for c in json.loads(done.stdout)["checks"] if c["area"] == "index"]
    assert check["ok"] is False and check["detail"].startswith("damaged:"), check
    assert check["fix"] == "cairn index --vault team"
    assert run_cairn(*check["fix"].split()[1:], cwd=setup).returncode == 0
    again = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup)
    [check] = [c for c in json.loads(again.stdout)["checks"] if c["area"] == "index"]
    assert check["ok"] is True, check
    served = subprocess.run(
        ["sh", "-c", _user_command(isolated_env)],
        input=payload_for("claude-code", FITTING_PROMPT, setup),
        capture_output=True,
        text=True,
        cwd=setup,
        check=False,
    )
    assert REBASE_ID in json.loads(served.stdout)["hookSpecificOutput"]["additionalContext"]


def test_an_index_of_a_newer_format_is_not_called_old(setup: Path) -> None:
    """Bug fixed: an index a newer Cairn wrote (another install beside this one, or before a downgrade) was said to
    have "an old format". It is said to be a newer Cairn's now, with both formats; the fix rebuilds it."""
    from cairn.hot.index import FORMAT_VERSION

    [index] = cache_dir().glob("vaults/*/index.cairn")
    data = bytearray(index.read_bytes())
    newer = int(FORMAT_VERSION) + 1
    data[8:12] = newer.to_bytes(4, "little")
    index.write_bytes(bytes(data))
    done = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup)
    [check] = [c for c in json.loads(done.stdout)["checks"] if c["area"] == "index"]
    assert check["ok"] is False and "old format" not in check["detail"], check
    assert f"was written by a newer Cairn (format {newer}, this one reads {FORMAT_VERSION})" in check["detail"]
    assert run_cairn(*check["fix"].split()[1:], cwd=setup).returncode == 0
    again = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup)
    [check] = [c for c in json.loads(again.stdout)["checks"] if c["area"] == "index"]
    assert check["ok"] is True, check


def test_an_index_an_older_cairns_security_rules_checked_fails_and_its_fix_works(setup: Path) -> None:
    """Bug fixed: after an upgrade that adds a security rule, the hook serves nothing from an index the older rules
    checked (and `cairn audit` fails it), while doctor said `ok index team: N cards`. It now fails the index,
    naming both rule versions, with `cairn index` as the fix."""
    [index] = cache_dir().glob("vaults/*/index.cairn")
    edit_meta(index, security_rules="10")  # what Cairn wrote before hidden-text's latest rules
    reseal(index)
    done = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup)
    [check] = [c for c in json.loads(done.stdout)["checks"] if c["area"] == "index"]
    assert check["ok"] is False, check
    assert f"older Cairn's security rules ('10', this Cairn's are {SECURITY_RULES_VERSION!r})" in check["detail"]
    assert check["fix"] == "cairn index --vault team"
    assert run_cairn(*check["fix"].split()[1:], cwd=setup).returncode == 0
    again = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup)
    [check] = [c for c in json.loads(again.stdout)["checks"] if c["area"] == "index"]
    assert check["ok"] is True, check


def test_an_index_built_under_a_withdrawn_security_leave_fails_and_its_fix_works(
    setup: Path, vault_repo: VaultRepo, isolated_env: Path
) -> None:
    """Bug fixed: once the user's `[security] allow_disabled_rules` no longer lets the vault switch a rule off, the
    hook serves nothing from the index built under it (and `cairn audit` fails it), while doctor said `ok index
    team: N cards`. It now fails the index, naming the leave, with `cairn index` as the fix."""
    config = isolated_env / "xdg-config" / "cairn" / "config.toml"
    configured = config.read_text()
    config.write_text(configured + '\n[security]\nallow_disabled_rules = ["secret"]\n')
    vault_repo.write_raw("cairn.toml", '[lint]\ndisable = ["secret"]\n')
    vault_repo.commit("switch the secret rule off, with the user's leave")
    assert run_cairn("index", "--vault", "team", cwd=setup).returncode == 0
    config.write_text(configured)  # the leave withdrawn
    done = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup)
    [check] = [c for c in json.loads(done.stdout)["checks"] if c["area"] == "index"]
    assert done.returncode == 1 and check["ok"] is False, check
    assert 'allow_disabled_rules: ["secret"]), and it no longer does' in check["detail"]
    assert check["fix"] == "cairn index --vault team"
    assert run_cairn(*check["fix"].split()[1:], cwd=setup).returncode == 0
    again = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup)
    [check] = [c for c in json.loads(again.stdout)["checks"] if c["area"] == "index"]
    assert check["ok"] is True, check


def test_a_cairn_vault_naming_no_vault_fails_as_the_hook_serves_nothing(setup: Path, tmp_path: Path) -> None:
    """Bug fixed: with `CAIRN_VAULT` naming no vault (a folder since removed, a name no longer configured), the hook
    of an agent started from that shell serves nothing, while doctor gave it one info line and said "Everything
    checks out". It now fails it, saying why, with `unset CAIRN_VAULT` as the fix; a vault it does name stays an
    information line, saying the hook serves that vault alone."""
    gone = {"CAIRN_VAULT": str(tmp_path / "removed-vault")}
    hooked = run_cairn(
        "hook", "--format", "claude-code", cwd=setup, env=gone, input=payload_for("claude-code", FITTING_PROMPT, setup)
    )
    assert hooked.returncode == 0 and hooked.stdout == ""
    done = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup, env=gone)
    assert done.returncode == 1
    [check] = [c for c in json.loads(done.stdout)["checks"] if c["detail"].startswith("CAIRN_VAULT=")]
    assert check["ok"] is False and "serves nothing: vault " in check["detail"], check
    assert check["fix"] == "unset CAIRN_VAULT"
    named = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup, env={"CAIRN_VAULT": "team"})
    assert named.returncode == 0
    [check] = [c for c in json.loads(named.stdout)["checks"] if c["detail"].startswith("CAIRN_VAULT=")]
    assert check["ok"] is None and check["detail"].endswith("serves that vault alone"), check


def test_a_newline_in_a_path_doctor_prints_does_not_make_a_check_two_lines(setup: Path, tmp_path: Path) -> None:
    """Each check is one line: a path holding a newline (here `CAIRN_VAULT`'s, which doctor names) was printed raw,
    so one failing check read as two lines, the second an `ok` line of the path's choosing."""
    fake = "ok   config all good: nothing to do"
    done = run_cairn("doctor", "--cwd", str(setup), cwd=setup, env={"CAIRN_VAULT": f"{tmp_path}/gone\n{fake}"})
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert fake not in lines
    assert all(line.startswith(("ok   ", "FAIL ", "info ")) for line in lines[:-1]), lines
    [line] = [line for line in lines if "CAIRN_VAULT=" in line]
    assert line.startswith("FAIL ") and f"gone?{fake}" in line


@pytest.mark.parametrize("given", ["team", "PATH"])
def test_a_cairn_vault_under_a_configuration_that_cannot_be_read_is_not_told_to_unset_it(
    setup: Path, vault_repo: VaultRepo, isolated_env: Path, given: str
) -> None:
    """Bug fixed: with the user configuration broken, doctor's line for `CAIRN_VAULT` (a name, or a path since the
    hook given a path serves nothing then too) said `unset CAIRN_VAULT` was the fix, after which the hook still
    served nothing: the file is the fix, as the config check says."""
    config = isolated_env / "xdg-config" / "cairn" / "config.toml"
    config.write_text(config.read_text() + "garbage = [\n")
    env = {"CAIRN_VAULT": str(vault_repo.root) if given == "PATH" else given}
    done = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup, env=env)
    assert done.returncode == 1
    [check] = [c for c in json.loads(done.stdout)["checks"] if c["detail"].startswith("CAIRN_VAULT=")]
    assert check["ok"] is False and "serves nothing: " + str(config) in check["detail"], check
    told = "fix the user configuration as its check says; without CAIRN_VAULT the hook serves nothing too"
    assert (check["fix"], check["note"]) == ("", told)


def _team_vault_limited_to_acme(vault_repo: VaultRepo, tmp_path: Path) -> tuple[Path, Path]:
    """The vault configured as `team`, served only to agents working under `acme/`: (acme, a folder beside it)."""
    make_vault(vault_repo)
    acme, elsewhere = tmp_path / "acme", tmp_path / "elsewhere"
    acme.mkdir()
    elsewhere.mkdir()
    added = run_cairn("vault", "add", str(vault_repo.root), "--name", "team", "--project", str(acme), cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    return acme, elsewhere


def test_a_cairn_vault_naming_a_vault_limited_to_other_projects_says_the_hook_serves_nothing_here(
    vault_repo: VaultRepo, tmp_path: Path, isolated_env: Path
) -> None:
    """Bug fixed: with `CAIRN_VAULT` naming a configured vault limited by `--project` to other folders, doctor said an
    agent's hook started with it "serves that vault alone", while that hook, which keeps the vault's project limit,
    served nothing there. It now says so, with the folders the vault is limited to."""
    acme, elsewhere = _team_vault_limited_to_acme(vault_repo, tmp_path)
    for given in ("team", str(vault_repo.root)):
        env = {"CAIRN_VAULT": given}
        hooked = run_cairn(
            "hook",
            "--format",
            "claude-code",
            cwd=elsewhere,
            env=env,
            input=payload_for("claude-code", FITTING_PROMPT, elsewhere),
        )
        assert hooked.returncode == 0 and hooked.stdout == ""
        done = run_cairn("doctor", "--cwd", str(elsewhere), "--json", cwd=elsewhere, env=env)
        [check] = [c for c in json.loads(done.stdout)["checks"] if c["detail"].startswith("CAIRN_VAULT=")]
        assert check["detail"] == (
            f"CAIRN_VAULT={given} (this shell only): an agent's hook started with it serves nothing in {elsewhere}: "
            f"vault 'team' serves only agents working under {acme}"
        ), check
        inside = run_cairn("doctor", "--cwd", str(acme), "--json", cwd=acme, env=env)
        [check] = [c for c in json.loads(inside.stdout)["checks"] if c["detail"].startswith("CAIRN_VAULT=")]
        assert check["detail"].endswith("serves that vault alone"), check


def test_the_fix_for_a_folder_no_configured_vault_serves_runs_as_printed(
    vault_repo: VaultRepo, tmp_path: Path, isolated_env: Path
) -> None:
    """Bug fixed: with every configured vault limited by `--project` to other folders, doctor's fix was `cairn vault
    add PATH --project DIR`, which fails as printed (PATH is a placeholder) and, with the configured vault's own
    folder as PATH, fails again: that vault is already configured. The fix now registers the first vault again in
    its place with this folder added to its projects; run as printed, the hook serves its cards in both folders."""
    acme, elsewhere = _team_vault_limited_to_acme(vault_repo, tmp_path)
    done = run_cairn("doctor", "--cwd", str(elsewhere), "--json", cwd=elsewhere)
    assert done.returncode == 1
    [check] = [c for c in json.loads(done.stdout)["checks"] if c["detail"] == "no configured vault applies here"]
    assert check["fix"] == shlex.join(
        ["cairn", "vault", "add", str(vault_repo.root), "--name", "team"]
        + ["--project", str(acme), "--project", str(elsewhere), "--replace"]
    )
    words = shlex.split(check["fix"])
    assert words[0] == "cairn"
    fixed = run_cairn(*words[1:], cwd=elsewhere)
    assert fixed.returncode == 0, fixed.stderr
    for folder in (elsewhere, acme):
        hooked = run_cairn(
            "hook",
            "--format",
            "claude-code",
            cwd=folder,
            input=payload_for("claude-code", FITTING_PROMPT, folder, session=folder.name),
        )
        assert hooked.returncode == 0 and REBASE_ID in hooked.stdout, (folder, hooked.stderr)
    again = run_cairn("doctor", "--cwd", str(elsewhere), "--json", cwd=elsewhere)
    assert not [c for c in json.loads(again.stdout)["checks"] if c["detail"] == "no configured vault applies here"]


def test_a_configured_vault_with_no_cards_folder_yet_gets_a_fix_that_runs(
    vault_repo: VaultRepo, tmp_path: Path, isolated_env: Path
) -> None:
    """Bug fixed: a configured vault whose folder holds cairn.toml and no cards/ (a clone of a vault with no card yet:
    git records no empty folder) got the fix `cairn vault add PATH --name team --replace`, which refuses that
    folder and says to make cards/. The fix is the `mkdir`; run as printed, the vault check passes."""
    make_vault(vault_repo)
    assert run_cairn("vault", "add", str(vault_repo.root), "--name", "team", cwd=tmp_path).returncode == 0
    shutil.rmtree(vault_repo.root / "cards")
    done = run_cairn("doctor", "--json", cwd=tmp_path)
    [check] = [c for c in json.loads(done.stdout)["checks"] if c["area"] == "vault" and c["subject"] == "team"]
    assert check["ok"] is False and check["detail"] == f"{vault_repo.root} has cairn.toml but no cards/ folder"
    assert check["fix"] == f"mkdir {vault_repo.root / 'cards'}"
    (vault_repo.root / "cards").write_text("a file where the folder was\n")  # `mkdir` alone: "File exists"
    done = run_cairn("doctor", "--json", cwd=tmp_path)
    [check] = [c for c in json.loads(done.stdout)["checks"] if c["area"] == "vault" and c["subject"] == "team"]
    assert subprocess.run(["bash", "-c", check["fix"]]).returncode == 0  # as printed
    again = {
        (c["area"], c["subject"]): c for c in json.loads(run_cairn("doctor", "--json", cwd=tmp_path).stdout)["checks"]
    }
    assert ("vault", "team") not in again  # the vault's own checks pass: none is listed
    assert again[("ref", "team")]["ok"] is True and again[("index", "team")]["ok"] is True


def test_a_configured_vault_that_cannot_be_read_is_one_failing_check(
    setup: Path, isolated_env: Path, tmp_path: Path
) -> None:
    """Bug fixed: a configured vault whose folder the system refuses to look into (no permission; here a name too
    long, which root meets as well) made `cairn doctor` print one `Error: ...` line and no check at all, while the
    hook skips that vault and serves the others. It is now one failing check, and every other check still runs."""
    config = isolated_env / "xdg-config" / "cairn" / "config.toml"
    far = tmp_path / ("x" * 300)
    config.write_text(config.read_text() + f'\n[[vaults]]\nname = "far"\npath = "{far}"\n')
    hooked = run_cairn(
        "hook", "--format", "claude-code", cwd=setup, input=payload_for("claude-code", FITTING_PROMPT, setup)
    )
    assert hooked.returncode == 0 and REBASE_ID in hooked.stdout, hooked.stderr
    done = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup)
    assert done.returncode == 1 and not done.stderr, done.stderr
    checks = json.loads(done.stdout)["checks"]
    [check] = [c for c in checks if c["subject"] == "far" and c["area"] == "vault"]
    assert check["ok"] is False
    assert check["detail"] == f"{far} cannot be read (File name too long): the hook serves nothing from this vault"
    assert check["fix"] == "cairn vault add PATH --name far --replace"
    assert [c["ok"] for c in checks if c["subject"] == "team" and c["area"] in ("ref", "index")] == [True, True]
    assert any(c["area"] == "agent" and c["ok"] for c in checks)


def test_an_unreadable_file_of_a_vault_is_named_not_the_vault_folder(tmp_path: Path) -> None:
    """Bug fixed: the failing check of a vault whose index the system refused to read (no permission, as another
    user meets it) said the vault's folder "cannot be read", and told to check that folder's mode: the file refused
    is named now, with its own fix."""
    index = tmp_path / "cache" / "vaults" / "team-0123" / "index.cairn"
    entry = VaultEntry("team", str(tmp_path / "team"), None, (), ())
    check = doctor._unreadable_vault(entry, PermissionError(errno.EACCES, "Permission denied", str(index)))
    assert check.detail == f"{index} cannot be read (Permission denied): the hook serves nothing from this vault"
    assert check.fix == "" and check.note == f"check the owner and mode of {index}"


def test_a_read_only_cache_gets_a_fix_that_can_work(setup: Path, tmp_path: Path) -> None:
    """Bug fixed: with the cache on a read-only file system and no index, doctor said to run `cairn index`, which
    then failed with the read-only message. It now says the cache folder is read-only and to point CAIRN_CACHE_DIR
    at a writable folder; doing so, `cairn index` works."""
    import shutil

    shutil.rmtree(cache_dir() / "vaults")
    done = cairn_on_read_only(cache_dir(), "doctor", "--cwd", str(setup), "--json", cwd=setup)
    [check] = [c for c in json.loads(done.stdout)["checks"] if c["area"] == "index"]
    assert check["ok"] is False
    assert f"the cache folder {cache_dir()} is on a read-only file system" in check["detail"], check
    assert "run `cairn index`" not in check["detail"]
    assert (
        check["fix"] == ""
        and check["note"] == "point CAIRN_CACHE_DIR at a writable folder, then `cairn index --vault team`"
    )
    writable = {"CAIRN_CACHE_DIR": str(tmp_path / "writable-cache")}
    assert run_cairn("index", "--vault", "team", cwd=setup, env=writable).returncode == 0
    again = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup, env=writable)
    [check] = [c for c in json.loads(again.stdout)["checks"] if c["area"] == "index"]
    assert check["ok"] is True, check


def test_a_file_in_place_of_the_vaults_cache_folder_gets_a_fix_that_can_work(setup: Path) -> None:
    """Bug fixed: with a file in place of the vault's cache folder, doctor said to run `cairn index --vault team`,
    which then failed with `File exists`. It now names the file and moves it away first; doing so, the index is
    built and the check passes."""
    folder = cache_dir() / "vaults"
    [vault_folder] = folder.iterdir()
    shutil.rmtree(vault_folder)
    vault_folder.write_text("not a folder")
    done = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup)
    [check] = [c for c in json.loads(done.stdout)["checks"] if c["area"] == "index"]
    assert check["ok"] is False
    assert f"a file stands where Cairn keeps its cache folder {vault_folder}, so `cairn index" in check["detail"]
    assert check["fix"] == f"mv {vault_folder} {vault_folder}.old && cairn index --vault team"
    assert subprocess.run(["mv", str(vault_folder), f"{vault_folder}.old"], check=False).returncode == 0
    assert run_cairn("index", "--vault", "team", cwd=setup).returncode == 0
    again = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup)
    [check] = [c for c in json.loads(again.stdout)["checks"] if c["area"] == "index"]
    assert check["ok"] is True, check


def test_an_index_built_before_a_security_leave_was_given_fails_and_its_fix_works(
    setup: Path, vault_repo: VaultRepo, isolated_env: Path
) -> None:
    """Bug fixed: a vault switches the secret rule off, the index leaves its card with a password out, and then the
    user's `[security] allow_disabled_rules` allows it: doctor went on saying "1 card file(s) left out" with `cairn
    lint` as the fix, which now passes and changes nothing (the hook starts no rebuild for it). It now says the
    index is stale, as `cairn index` sees it (every card read again), with that as the fix."""
    vault_repo.write_raw("cairn.toml", '[lint]\ndisable = ["secret"]\n')
    url = "postgres://app:S3cr3tPassw0rd@db.internal:5432/prod"
    vault_repo.write("databases/pool", "Database pool timeouts", f"Raise the pool timeout; the prod URL is {url}")
    vault_repo.commit("a card with a password, the secret rule switched off by the vault")
    assert run_cairn("index", "--vault", "team", cwd=setup).returncode == 0

    def index_check() -> dict[str, Any]:
        done = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup)
        [check] = [c for c in json.loads(done.stdout)["checks"] if c["area"] == "index"]
        return dict(check)

    assert index_check()["fix"] == "cairn lint --vault team"  # left out: no leave
    config = isolated_env / "xdg-config" / "cairn" / "config.toml"
    config.write_text(config.read_text() + '\n[security]\nallow_disabled_rules = ["secret"]\n')
    check = index_check()
    assert check["ok"] is False and check["detail"].startswith("stale: built when the vault's cairn.toml could"), check
    assert (
        "could switch off no security rule, and your [security] allow_disabled_rules now lets it switch off secret"
        in check["detail"]
    )
    assert check["fix"] == "cairn index --vault team"
    assert run_cairn(*check["fix"].split()[1:], cwd=setup).returncode == 0
    assert index_check()["ok"] is True


def test_a_read_only_state_folder_fails_and_its_fix_works(setup: Path, tmp_path: Path) -> None:
    """Bug fixed: with the state folder on a read-only file system, the hook wrote "cannot write the hook log" on
    every prompt, kept no log and no session (each card came again on every prompt), while doctor said "Everything
    checks out". It now fails the state folder, with a fix that works."""
    state = Path(os.environ["CAIRN_STATE_DIR"])
    state.mkdir(exist_ok=True)
    done = cairn_on_read_only(state, "doctor", "--cwd", str(setup), "--json", cwd=setup)
    assert done.returncode == 1
    [check] = [c for c in json.loads(done.stdout)["checks"] if c["area"] == "folders"]
    assert check["ok"] is False and check["subject"] == "state", check
    assert check["detail"].startswith(f"the state folder {state} is on a read-only file system: the hook keeps no log")
    assert check["fix"] == "" and check["note"] == "point CAIRN_STATE_DIR at a writable folder"
    writable = {"CAIRN_STATE_DIR": str(tmp_path / "writable-state")}
    again = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup, env=writable)
    assert [c for c in json.loads(again.stdout)["checks"] if c["area"] == "folders"] == []


def test_a_state_folder_not_made_yet_is_named_with_the_read_only_folder_above_it(setup: Path, tmp_path: Path) -> None:
    """Bug fixed: in a CI job whose HOME is read-only and holds no `.local/state/cairn` yet, doctor called HOME itself
    "the state folder" (`the state folder /home/ci is on a read-only file system`). It now names the state folder
    Cairn would make and the folder above it that the read-only file system stops it from making."""
    home = tmp_path / "read-only home"
    home.mkdir()
    state = home / ".local" / "state" / "cairn"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CAIRN_STATE_DIR", str(state))
        done = cairn_on_read_only(home, "doctor", "--cwd", str(setup), "--json", cwd=setup)
    assert done.returncode == 1
    [check] = [c for c in json.loads(done.stdout)["checks"] if c["area"] == "folders"]
    assert check["detail"].startswith(
        f"the state folder {state} cannot be made: {home} is on a read-only file system: the hook keeps no log"
    ), check
    assert check["note"] == "point CAIRN_STATE_DIR at a writable folder"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to run as another user")
def test_a_cache_or_state_folder_another_user_owns_gets_no_chmod_that_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bug fixed: for a state folder another user owns and this user cannot write (root's 0700), doctor said to run
    `chmod u+wx` on it, and for a cache folder of another user's that others may read, `chmod go-rwx`: both fail
    for anyone but its owner ("Operation not permitted"). It now says to point the variable at a folder of one's own."""
    root = Path(tempfile.mkdtemp())  # not under pytest's folder for root, which no other user may enter
    try:
        root.chmod(0o755)
        (root / "state").mkdir(mode=0o700)
        (root / "cache").mkdir(mode=0o755)
        monkeypatch.setenv("CAIRN_STATE_DIR", str(root / "state"))
        monkeypatch.setenv("CAIRN_CACHE_DIR", str(root / "cache"))
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # doctor's checks as `nobody`
            try:
                os.close(read)
                os.setgid(65534)
                os.setuid(65534)
                found = [c.to_dict() for c in (*doctor._shared_folders(), *doctor._state_check())]
                os.write(write, json.dumps(found).encode())
            finally:
                os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as answer:
            checks = {c["subject"]: c for c in json.loads(answer.read() or b"[]")}
        os.waitpid(pid, 0)
    finally:
        shutil.rmtree(root)
    assert checks["state"]["ok"] is False and checks["state"]["detail"].startswith(
        f"the state folder {root / 'state'} is another user's and not writable: the hook keeps no log there"
    ), checks
    assert (checks["state"]["fix"], checks["state"]["note"]) == ("", "point CAIRN_STATE_DIR at a folder of your own")
    assert checks["cache"]["detail"].startswith(f"{root / 'cache'} (mode 755) may be read by other users"), checks
    assert checks["cache"]["fix"] == "" and checks["cache"]["note"].endswith(
        "set CAIRN_CACHE_DIR to a folder of your own"
    )


def test_a_folder_in_place_of_the_hook_log_fails_and_its_fix_works(setup: Path) -> None:
    """Bug fixed: with a folder in place of hook.jsonl, the hook served every prompt but logged none (a line on the
    agent's stderr each time), while doctor said "Everything checks out". It now fails it, with a fix that works."""
    hooked = run_cairn("hook", "--format", "claude-code", cwd=setup, input=payload_for("claude-code", "x", setup))
    assert hooked.returncode == 0 and hooked.stderr == ""
    log = Path(os.environ["CAIRN_STATE_DIR"]) / "hook.jsonl"
    log.unlink()
    log.mkdir()
    done = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup)
    assert done.returncode == 1
    [check] = [c for c in json.loads(done.stdout)["checks"] if c["area"] == "folders"]
    assert check["ok"] is False and check["subject"] == "state", check
    assert check["detail"] == (
        f"the hook log {log} is not a file the hook can write: no prompt is logged (each says so on stderr)"
    )
    assert check["fix"] == f"mv {log} {log}.old"
    assert subprocess.run(shlex.split(check["fix"]), check=False).returncode == 0
    again = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup)
    assert [c for c in json.loads(again.stdout)["checks"] if c["area"] == "folders"] == []
    hooked = run_cairn("hook", "--format", "claude-code", cwd=setup, input=payload_for("claude-code", "x", setup))
    assert hooked.returncode == 0 and hooked.stderr == "" and log.is_file()


def test_a_hook_whose_cairn_is_not_on_path_gets_a_fix_that_finds_it(setup: Path, isolated_env: Path) -> None:
    """Bug fixed: for a hook running a bare `cairn` that the PATH does not find, doctor said to put Cairn's package
    folder (`.../site-packages/cairn`, where `__main__.py` is) on PATH, where no `cairn` command is. A shared project
    file gets the folder of this installation's `cairn` command; the user's own file is fixed by installing again
    (its hook then runs this machine's full path)."""
    shared = setup / ".codex" / "hooks.json"
    shared.parent.mkdir()
    shared.write_text(
        json.dumps(
            {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "cairn hook --format codex"}]}]}}
        )
    )
    _set_command(isolated_env / ".claude" / "settings.json", "UserPromptSubmit", "cairn hook --format claude-code")
    no_cairn = {"PATH": "/usr/bin:/bin"}
    done = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup, env=no_cairn)
    checks = {c["subject"]: c for c in json.loads(done.stdout)["checks"] if c["area"] == "agent"}
    folder = str(Path(cairn_executable()).parent)
    assert checks["codex (project)"]["fix"] == f"export PATH={folder}:$PATH"
    assert checks["codex (project)"]["note"] == "in your shell's profile, where the agent starts"
    assert checks["claude-code (user)"]["fix"] == "cairn install claude-code --user"
    assert (Path(folder) / "cairn").is_file()


def test_an_empty_home_is_a_failing_check_not_a_crash(setup: Path) -> None:
    """Bug fixed with install's: HOME="" made `~` the file system's root; doctor names it rather than looking
    there (or stopping)."""
    done = run_cairn("doctor", "--cwd", str(setup), cwd=setup, env={"HOME": ""})
    assert done.returncode == 1
    assert "HOME is ''" in done.stdout and "Traceback" not in done.stderr
    assert "ok   config" in done.stdout  # the other checks still run


@pytest.mark.parametrize(
    "command",
    [
        "./evil cairn hook --format claude-code",  # a file of the folder doctor runs in
        "{project}/cairn hook --format claude-code",  # the repository's own `cairn`, by its full path
        "cairn hook --format claude-code",  # the repository's own `cairn`, found through a PATH holding `.`
    ],
)
def test_doctor_never_runs_a_command_from_a_projects_settings_that_is_not_cairns_launcher(
    command: str, setup: Path, isolated_env: Path, tmp_path: Path
) -> None:
    """Bug fixed: `cairn doctor` ran each Cairn-looking hook command's launcher with `--version`, from any project
    settings file it read: a cloned repository committing `.claude/settings.local.json` with `sh -c '...' cairn hook` (or
    `./evil cairn hook`) had its command run by `cairn doctor` run in it. Now a project's hook whose launcher is not
    Cairn's (`cairn`, or a Python with Cairn's script, from outside the project) fails, and nothing of it runs."""
    repo = tmp_path / "cloned"
    (repo / ".claude").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    marker = tmp_path / "ran"
    for name in ("evil", "cairn"):
        (repo / name).write_text(f"#!/bin/sh\ntouch {marker}\necho cairn 0.1.0\n")
        (repo / name).chmod(0o755)
    hooks = repo / ".claude" / "settings.local.json"  # a project's personal file, committed all the same
    written = command.format(marker=marker, project=repo)
    hooks.write_text(
        json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": written}]}]}})
    )

    path = f".:{os.environ['PATH']}" if command.startswith("cairn ") else os.environ["PATH"]
    done = subprocess.run(
        [cairn_executable(), "doctor", "--json"],
        cwd=repo,
        env={**os.environ, "PATH": path},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert not marker.exists()
    [check] = [c for c in json.loads(done.stdout)["checks"] if c["subject"] == "claude-code (project)"]
    assert check["ok"] is False and check["fix"] == "cairn install claude-code"
    assert check["detail"].startswith(f"{hooks}: the hook command {written!r} runs ")
    assert check["detail"].endswith(
        "a project's settings may be anyone's (a cloned repository's), so doctor does not run it"
    )


@pytest.mark.parametrize(
    "command",
    [
        "sh -c 'touch {marker}' cairn hook --format claude-code",  # a shell around the words `cairn hook`
        "touch {marker}; cairn hook --format claude-code",
        "touch {marker} && echo 'cairn hook --format claude-code'",
    ],
)
def test_doctor_never_runs_a_hook_that_only_mentions_cairn_hook(
    command: str, setup: Path, isolated_env: Path, tmp_path: Path
) -> None:
    """A command that is not Cairn's (a shell script around, or beside, the words `cairn hook`) is the project's own
    hook: doctor neither runs it nor counts it as Cairn's (install and uninstall leave it too)."""
    repo = tmp_path / "cloned"
    (repo / ".claude").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    marker = tmp_path / "ran"
    hooks = repo / ".claude" / "settings.local.json"
    hooks.write_text(
        json.dumps(
            {
                "hooks": {
                    "UserPromptSubmit": [{"hooks": [{"type": "command", "command": command.format(marker=marker)}]}]
                }
            }
        )
    )
    done = run_cairn("doctor", "--json", cwd=repo)
    assert not marker.exists()
    assert "Traceback" not in done.stderr
    subjects = [c["subject"] for c in json.loads(done.stdout)["checks"]]
    assert "claude-code (project)" not in subjects


def test_a_file_where_the_state_folder_goes_fails_and_its_fix_works(setup: Path) -> None:
    """Bug fixed: with a file at $CAIRN_STATE_DIR, the hook wrote "cannot write the hook log" on every prompt and
    kept no session (each card came again on every prompt), while doctor only said the "folder" had mode 644 and
    might be read by others (`chmod go-rwx` it): it looked for the nearest folder above, which it could write."""
    state = Path(os.environ["CAIRN_STATE_DIR"])
    shutil.rmtree(state, ignore_errors=True)
    state.write_text("not a folder")
    done = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup)
    assert done.returncode == 1
    [check] = [c for c in json.loads(done.stdout)["checks"] if c["area"] == "folders"]  # no "chmod go-rwx" of it
    assert check["subject"] == "state" and check["ok"] is False, check
    assert check["detail"].startswith(f"a file stands where Cairn keeps its state folder {state}"), check
    assert check["fix"] == f"mv {state} {state}.old"
    subprocess.run(check["fix"], shell=True, check=True)
    again = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup)
    assert [c for c in json.loads(again.stdout)["checks"] if c["area"] == "folders"] == []


def test_a_nearly_full_disk_under_the_cache_or_state_folder_is_warned(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bug fixed: doctor said nothing of free space, while on a full disk the index could not be rebuilt (the vault
    served nothing) and no session was kept (every card came again on every prompt), and its own fixes failed the
    same way. Under LOW_SPACE_BYTES free, the cache and state folders are each warned of, with what to do."""
    from cairn import doctor

    monkeypatch.setattr(doctor, "LOW_SPACE_BYTES", 2**62)  # more than any disk holds: this one is "nearly full"
    warned = doctor._low_space()
    assert [(c.area, c.subject, c.ok) for c in warned] == [("folders", "cache", None), ("folders", "state", None)]
    assert " MB free on the disk of " in warned[0].detail and "keeps no session" in warned[0].detail
    assert warned[1].note == "free some space there, or set CAIRN_STATE_DIR to another disk"
    monkeypatch.setattr(doctor, "LOW_SPACE_BYTES", 0)
    assert doctor._low_space() == []


def test_a_disk_out_of_inodes_under_the_cache_or_state_folder_is_warned(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bug fixed: a disk with bytes free but no inode left (a small tmpfs, a disk of many small files) refuses every
    new file, index and session alike, and doctor passed it: it counted bytes only."""
    from cairn import doctor
    from cairn.hot import cache_folder

    monkeypatch.setattr(doctor, "LOW_SPACE_BYTES", 0)
    if not os.statvfs(os.path.dirname(os.path.dirname(cache_folder()))).f_files:  # the test's temp folder
        pytest.skip("this file system sets no limit on files")
    monkeypatch.setattr(doctor, "LOW_SPACE_FILES", 2**62)  # more than any disk holds: this one is "nearly out"
    warned = doctor._low_space()
    assert [(c.area, c.subject, c.ok) for c in warned] == [("folders", "cache", None), ("folders", "state", None)]
    assert " more files on the disk of " in warned[0].detail and "its inodes are used" in warned[0].detail
    assert warned[1].note == "remove files there, or set CAIRN_STATE_DIR to another disk"


# A fix is one shell command: no word of a sentence, no bracket, no code span (the note holds those). A placeholder
# is there only where doctor cannot know the value, and its note names it.
_PROSE_WORDS = frozenset({"if", "else", "then", "or", "by", "hand", "first", "the", "to", "of", "its", "in"})
_PLACEHOLDERS = ("PATH", "BRANCH", "/path/to/your/home")


def _break(case: str, setup: Path, home: Path, tmp_path: Path) -> dict[str, str]:
    """Break the working `setup` as `case` says; returns the environment doctor is then run with."""
    from cairn.hot import index_key_file

    config = home / "xdg-config" / "cairn" / "config.toml"
    state = Path(os.environ["CAIRN_STATE_DIR"])
    vault = tmp_path / "vault"
    if case == "no-config":
        config.unlink()
    elif case == "config-folder":
        config.unlink()
        config.mkdir()
    elif case == "relative-cache":
        return {"CAIRN_CACHE_DIR": "rel-cache"}
    elif case == "relative-claude-home":
        return {"CLAUDE_CONFIG_DIR": "rel-claude"}
    elif case == "empty-home":
        return {"HOME": ""}
    elif case == "shared-state":
        state.mkdir(exist_ok=True)
        state.chmod(0o777)
    elif case == "allowed-typo":
        config.write_text(config.read_text() + '\n[security]\nallow_disabled_rules = ["secrets"]\n')
    elif case == "vault-gone-env":
        return {"CAIRN_VAULT": str(tmp_path / "removed-vault")}
    elif case == "no-marker":
        subprocess.run(["git", "-C", str(vault), "rm", "-q", "cairn.toml"], check=True)
        subprocess.run(["git", "-C", str(vault), "commit", "-q", "--no-verify", "-m", "no marker"], check=True)
    elif case == "no-index":
        shutil.rmtree(cache_dir() / "vaults")
    elif case == "key-folder":
        Path(index_key_file()).unlink()
        Path(index_key_file()).mkdir()
    elif case == "log-folder":
        (state / "hook.jsonl").unlink(missing_ok=True)
        (state / "hook.jsonl").mkdir(parents=True)
    elif case == "vault-moved":
        vault.rename(tmp_path / "moved")
    elif case == "detached":
        subprocess.run(["git", "-C", str(vault), "checkout", "-q", "--detach"], check=True)
        subprocess.run(["git", "-C", str(vault), "branch", "-q", "-D", "main"], check=True)
    elif case == "settings-not-json":
        (setup / ".claude").mkdir()
        (setup / ".claude" / "settings.local.json").write_text("{")
    elif case == "hook-gone":
        _set_command(
            home / ".claude" / "settings.json", "UserPromptSubmit", "/gone/bin/cairn hook --format claude-code"
        )
    elif case == "switched-off":
        settings = home / ".claude" / "settings.json"
        settings.write_text(json.dumps({**json.loads(settings.read_text()), "disableAllHooks": True}))
    return {}


# The cases whose fix is run as printed (a placeholder filled as its note says), after which the check passes.
_RUN = {
    "config-folder": ("config", "PATH"),
    "relative-cache": ("folders", ""),
    "relative-claude-home": ("agent", ""),
    "shared-state": ("folders", ""),
    "vault-gone-env": ("resolve", ""),
    "no-marker": ("vault", ""),
    "no-index": ("index", ""),
    "key-folder": ("index", ""),
    "log-folder": ("folders", ""),
    "hook-gone": ("agent", ""),
}


@pytest.mark.parametrize(
    "case",
    [
        "no-config",
        "config-folder",
        "relative-cache",
        "relative-claude-home",
        "empty-home",
        "shared-state",
        "allowed-typo",
        "vault-gone-env",
        "no-marker",
        "no-index",
        "key-folder",
        "log-folder",
        "vault-moved",
        "detached",
        "settings-not-json",
        "hook-gone",
        "switched-off",
    ],
)
def test_every_fix_doctor_prints_is_a_command_that_runs_as_printed(
    case: str, setup: Path, isolated_env: Path, tmp_path: Path
) -> None:
    """Bug fixed: `doctor --help` says each failing line ends with the command that fixes it (`fix` in --json), which
    an agent may run; yet many were prose or a command with a note in brackets (`chmod go-rwx X if it is Cairn's
    alone, else ...`, `export PATH=... (in your shell's profile, ...)`, `fix FILE: name a security rule`), which a
    shell rejects. Each fix is now a command bash and zsh parse, with any words in `note`; a handful run as printed
    and their check then passes."""
    env = _break(case, setup, isolated_env, tmp_path)
    done = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup, env=env)
    checks = json.loads(done.stdout)["checks"]
    failed = [c for c in checks if c["ok"] is False]
    assert done.returncode == 1 and failed, done.stdout
    shells = [shell for shell in ("bash", "zsh") if shutil.which(shell)]
    for check in checks:
        fix, note = check["fix"], check["note"]
        assert fix or note or check["ok"] is not False, check  # a failing check says what to do, one way or both
        if not fix:
            continue
        for shell in shells:
            parsed = subprocess.run([shell, "-n", "-c", fix], capture_output=True, text=True, check=False)
            assert parsed.returncode == 0, (shell, check, parsed.stderr)
        words = shlex.split(fix)
        assert not _PROSE_WORDS & set(words), check
        assert not [w for w in words if w[:1] in "(`" or w[-1:] in "),:`"], check
        for placeholder in _PLACEHOLDERS:
            if placeholder in words or any(w.endswith(f"={placeholder}") for w in words):
                assert placeholder in note, check
    text = run_cairn("doctor", "--cwd", str(setup), cwd=setup, env=env).stdout
    for check in failed:
        said = " ".join([check["fix"]] * bool(check["fix"]) + [f"({check['note']})"] * bool(check["note"]))
        assert f"{check['detail']}  -> {said}\n" in text, (said, text)
    if case not in _RUN:
        return
    area, placeholder = _RUN[case]
    check = next(c for c in failed if c["area"] == area and c["fix"])
    fix = (
        check["fix"].replace(f" {placeholder}", f" {shlex.quote(str(tmp_path / 'vault'))}")
        if placeholder
        else check["fix"]
    )
    bin_folder = str(Path(cairn_executable()).parent)
    script = f"{{ {fix}\n}} >&2\nexec cairn doctor --cwd {shlex.quote(str(setup))} --json"
    shell_env = {**os.environ, **env, "PATH": f"{bin_folder}:{os.environ['PATH']}"}
    fixed = subprocess.run(["bash", "-ec", script], cwd=setup, env=shell_env, capture_output=True, text=True)
    assert fixed.stdout, fixed.stderr  # the fix ran, and doctor after it
    after = [c for c in json.loads(fixed.stdout)["checks"] if (c["area"], c["subject"]) == (area, check["subject"])]
    assert all(c["ok"] is not False for c in after), (fix, after)


def test_a_file_above_the_state_folder_is_named_apart_from_the_folder(setup: Path, tmp_path: Path) -> None:
    """Bug fixed: with $CAIRN_STATE_DIR not there yet and a file in place of a folder above it, doctor said the file
    was the state folder ("a file stands where Cairn keeps its state folder /x/file"). It names both now; the fix
    (moving the file away) works as before."""
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    state = blocker / "cairn" / "state"
    done = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup, env={"CAIRN_STATE_DIR": str(state)})
    [check] = [c for c in json.loads(done.stdout)["checks"] if c["area"] == "folders"]
    assert check["subject"] == "state" and check["ok"] is False, check
    assert check["detail"].startswith(f"a file stands at {blocker}, in the way of Cairn's state folder {state}: ")
    assert check["fix"] == f"mv {blocker} {blocker}.old"
    subprocess.run(check["fix"], shell=True, check=True)
    again = run_cairn("doctor", "--cwd", str(setup), "--json", cwd=setup, env={"CAIRN_STATE_DIR": str(state)})
    assert [c for c in json.loads(again.stdout)["checks"] if c["area"] == "folders"] == []
