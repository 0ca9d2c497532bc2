"""`cairn install AGENT` / `cairn uninstall AGENT` on settings files as users really keep them: a symlink into a
dotfiles repository, bytes that are not UTF-8, an empty HOME. Each test names the bug it would have caught."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cairn import install
from helpers.mounts import cairn_on_read_only
from helpers.vaults import VaultRepo, cairn_executable, make_vault, run_cairn

THEIRS: dict[str, Any] = {
    "model": "opus",
    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]},
}


@pytest.fixture
def configured(vault_repo: VaultRepo, tmp_path: Path) -> VaultRepo:
    """A vault in the user configuration, so an install without --vault has something to serve."""
    make_vault(vault_repo)
    added = run_cairn("vault", "add", str(vault_repo.root), "--name", "team", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    return vault_repo


def _cairn_commands(data: dict[str, object]) -> list[str]:
    groups = data["hooks"]["UserPromptSubmit"]  # type: ignore[index]
    return [h["command"] for g in groups for h in g["hooks"] if " hook " in h["command"]]


def test_a_symlinked_settings_file_is_written_through_and_kept_a_link(
    tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """Bug fixed: install replaced ~/.claude/settings.json, a symlink into the user's dotfiles repository, with a
    regular file (os.replace on the link): the dotfiles copy never got the hook and the link was gone."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "claude-settings.json"
    real.write_text(json.dumps(THEIRS))
    real.chmod(0o600)
    link = isolated_env / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(real)

    done = run_cairn("install", "claude-code", "--user", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and os.readlink(link) == str(real)
    data = json.loads(real.read_text())
    assert data["model"] == "opus" and data["hooks"]["Stop"] == THEIRS["hooks"]["Stop"]
    assert len(_cairn_commands(data)) == 1
    assert oct(real.stat().st_mode & 0o777) == oct(0o600)
    assert not list(dotfiles.glob(".*.tmp")) and sorted(p.name for p in dotfiles.iterdir()) == [real.name]
    [backup] = link.parent.glob("settings.json.bak-*")  # beside the path the agent reads, not in the dotfiles
    assert json.loads(backup.read_text()) == THEIRS

    again = run_cairn("install", "claude-code", "--user", cwd=tmp_path)
    assert again.returncode == 0 and f"unchanged: {link}" in again.stdout

    removed = run_cairn("uninstall", "claude-code", "--user", cwd=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert json.loads(real.read_text()) == THEIRS


def test_uninstall_never_deletes_a_symlinked_file_that_held_only_the_hook(
    tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """Bug fixed: when the linked file held nothing but Cairn's hook, uninstall unlinked the symlink and left the
    hook in the dotfiles file, where the next `ln -s` brought it back."""
    real = tmp_path / "dotfiles" / "gemini.json"
    real.parent.mkdir()
    real.write_text("{}\n")
    link = isolated_env / ".gemini" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(real)
    assert run_cairn("install", "gemini", "--user", cwd=tmp_path).returncode == 0
    assert link.is_symlink() and "BeforeAgent" in real.read_text()
    removed = run_cairn("uninstall", "gemini", "--user", cwd=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert link.is_symlink()
    assert json.loads(real.read_text()) == {}


def test_a_dangling_symlink_is_refused_and_left_alone(
    tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """Bug fixed: a settings symlink whose target is missing (dotfiles not checked out yet) got
    `Error: ... already exists; nothing was written`, which names no fix."""
    link = isolated_env / ".codex" / "hooks.json"
    link.parent.mkdir()
    missing = tmp_path / "dotfiles" / "codex-hooks.json"
    link.symlink_to(missing)
    done = run_cairn("install", "codex", "--user", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert f"{link} is a symlink to {missing}, which does not exist" in done.stderr
    assert link.is_symlink() and not missing.exists()
    assert sorted(p.name for p in link.parent.iterdir()) == ["hooks.json"]


@pytest.mark.parametrize("linked", ["file", "folder"])
def test_a_project_settings_link_out_of_the_project_is_refused(
    linked: str, tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """Bug fixed: a cloned repository could commit `.claude/settings.local.json` (or `.claude/` itself) as a
    symlink to any file of the user's, and `cairn install claude-code --project` wrote Cairn's hook there."""
    project = tmp_path / "project"
    outside = tmp_path / "elsewhere"
    outside.mkdir(parents=True)
    (outside / "settings.local.json").write_text(json.dumps(THEIRS))
    (project / ".claude").parent.mkdir(parents=True)
    if linked == "file":
        (project / ".claude").mkdir()
        (project / ".claude" / "settings.local.json").symlink_to(outside / "settings.local.json")
    else:
        (project / ".claude").symlink_to(outside)
    done = run_cairn("install", "claude-code", "--project", str(project), cwd=tmp_path)
    assert done.returncode == 1, done.stdout
    assert done.stderr.count("\n") == 1 and "leads out of the project" in done.stderr
    assert json.loads((outside / "settings.local.json").read_text()) == THEIRS
    assert sorted(p.name for p in outside.iterdir()) == ["settings.local.json"]


def test_a_file_where_the_settings_folder_goes_is_named_with_what_to_do(
    tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """Bug fixed: `~/.claude` (or a project's `.claude`) a file, not a folder: install said only "File exists"."""
    (isolated_env / ".claude").write_text("notes\n")
    done = run_cairn("install", "claude-code", "--user", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert f"{isolated_env / '.claude'} is a file where the folder for" in done.stderr
    assert "move it away" in done.stderr
    assert (isolated_env / ".claude").read_text() == "notes\n"


def test_a_settings_folder_that_is_a_symlink_to_nothing_is_named_with_what_to_do(
    tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """Bug fixed: `~/.claude` a symlink into a dotfiles folder that is not there (not cloned yet, moved): install
    said only "Error: File exists (~/.claude)", and wrote nothing through the link."""
    missing = tmp_path / "dotfiles" / "claude"
    (isolated_env / ".claude").symlink_to(missing)
    done = run_cairn("install", "claude-code", "--user", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"{isolated_env / '.claude'} is a symlink to {missing}, which leads to no folder" in done.stderr
    assert "remove the link" in done.stderr
    assert not (tmp_path / "dotfiles").exists()
    assert (isolated_env / ".claude").is_symlink()


def test_a_project_settings_link_within_the_project_is_written_through(
    tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """A link inside the project (a team keeping its agent files in one folder) stays a link, written through."""
    project = tmp_path / "project"
    (project / "agent").mkdir(parents=True)
    (project / "agent" / "settings.json").write_text("{}\n")
    (project / ".codex").mkdir()
    (project / ".codex" / "hooks.json").symlink_to(project / "agent" / "settings.json")
    done = run_cairn("install", "codex", "--project", str(project), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (project / ".codex" / "hooks.json").is_symlink()
    assert "cairn hook" in (project / "agent" / "settings.json").read_text()


@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_settings_that_are_not_utf8_are_one_line_and_untouched(
    command: str, tmp_path: Path, configured: VaultRepo
) -> None:
    """Bug fixed: a settings file in another encoding (UTF-16 from a Windows editor) ended install and uninstall
    with `unexpected UnicodeDecodeError ... (a bug in Cairn)`."""
    target = tmp_path / "p" / ".claude" / "settings.local.json"
    target.parent.mkdir(parents=True)
    raw = json.dumps(THEIRS).encode("utf-16")
    target.write_bytes(raw)
    done = run_cairn(command, "claude-code", "--project", str(tmp_path / "p"), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "a bug in Cairn" not in done.stderr
    assert f"{target} is not UTF-8 text" in done.stderr
    assert target.read_bytes() == raw
    assert sorted(p.name for p in target.parent.iterdir()) == ["settings.local.json"]


@pytest.mark.parametrize(
    ("raw", "why"),
    [(json.dumps(THEIRS).encode("utf-16"), "is not UTF-8 text (byte 0)"), (b"[1, 2]", "does not hold a JSON object")],
)
def test_doctor_says_why_a_settings_file_cannot_be_read_as_install_does(
    raw: bytes, why: str, tmp_path: Path, configured: VaultRepo
) -> None:
    """Doctor called a settings file in UTF-16, or holding a JSON array, "not valid JSON"; install said which."""
    target = tmp_path / "p" / ".claude" / "settings.local.json"
    target.parent.mkdir(parents=True)
    target.write_bytes(raw)
    done = run_cairn("doctor", "--cwd", str(tmp_path / "p"), cwd=tmp_path)
    assert f"FAIL agent claude-code (project): {target} {why}  -> (fix {target})" in done.stdout, done.stdout
    installed = run_cairn("install", "claude-code", "--project", str(tmp_path / "p"), cwd=tmp_path)
    assert f"{target} {why}" in installed.stderr


def test_doctor_names_a_settings_file_whose_path_holds_a_semicolon_whole(tmp_path: Path, configured: VaultRepo) -> None:
    """Bug fixed: doctor cut install's message at its first "; " to get the problem, so a project folder named
    `a; b` was said as "FAIL agent claude-code (project): .../a" and nothing else."""
    project = tmp_path / "a; b"
    target = project / ".claude" / "settings.local.json"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"[1, 2]")
    done = run_cairn("doctor", "--cwd", str(project), cwd=tmp_path)
    said = f"FAIL agent claude-code (project): {target} does not hold a JSON object  -> (fix {target})"
    assert said in done.stdout, done.stdout


@pytest.mark.parametrize("command", ["install", "uninstall", "doctor"])
def test_settings_nested_past_the_parser_are_one_line_and_untouched(
    command: str, tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """Bug fixed (found by fuzzing): a settings file nested thousands deep (`[[[[...`) ended install and uninstall
    with "the input is nested too deeply to read", naming no file, and stopped doctor before any other check."""
    target = isolated_env / ".claude" / "settings.json"
    target.parent.mkdir()
    raw = b"[" * 100_000 + b"]" * 100_000
    target.write_bytes(raw)
    if command == "doctor":
        done = run_cairn("doctor", cwd=tmp_path)
        assert done.returncode == 1
        assert f"FAIL agent claude-code (user): {target} is not valid JSON" in done.stdout, done.stdout
        assert "semantic extra" in done.stdout  # the checks after it ran
    else:
        done = run_cairn(command, "claude-code", "--user", cwd=tmp_path)
        assert done.returncode == 1
        assert done.stderr == f"Error: {target} is not valid JSON (nested too deeply to read); fix it by hand, " + (
            "nothing was written\n"
        )
    assert target.read_bytes() == raw


@pytest.mark.parametrize("home", ["", "relative/home"])
def test_a_home_that_is_not_a_folder_path_writes_nothing(home: str, tmp_path: Path, configured: VaultRepo) -> None:
    """Bug fixed: with HOME set but empty, `cairn install claude-code --user` wrote /.claude/settings.json (HOME=""
    made `~` the file system's root, or the current folder for a relative HOME), a file no agent reads."""
    work = tmp_path / "work"
    work.mkdir()
    done = run_cairn("install", "claude-code", "--user", cwd=work, env={"HOME": home})
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert "HOME" in done.stderr and "absolute" in done.stderr
    assert list(work.iterdir()) == []


GEMINI_WITH_COMMENTS = """{
  // Gemini CLI reads its settings with comments stripped; this file is valid for it.
  "ui": {"theme": "GitHub"}, /* the user's theme */
  "general": {"url": "https://example.com/a//b"}
}
"""


def test_gemini_settings_with_comments_keep_them_through_install_and_uninstall(
    tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """Bugs fixed: a Gemini CLI settings file with comments (which Gemini CLI accepts) was called `not valid JSON`;
    then install refused it (rewriting it whole would drop the comments) and said to paste the entry by hand, and
    uninstall refused to take a pasted entry out. Install and uninstall now edit the text where Cairn's entry goes:
    the comments stay, and an install then an uninstall leave the file byte for byte."""
    target = isolated_env / ".gemini" / "settings.json"
    target.parent.mkdir()
    target.write_text(GEMINI_WITH_COMMENTS)
    done = run_cairn("install", "gemini", "--user", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = target.read_text()
    assert written.startswith(GEMINI_WITH_COMMENTS.removesuffix("\n}\n") + ',\n  "hooks": {')
    doctor = run_cairn("doctor", "--cwd", str(tmp_path), "--json", cwd=tmp_path)
    [check] = [c for c in json.loads(doctor.stdout)["checks"] if c["area"] == "agent"]
    assert check["subject"] == "gemini (user)" and check["ok"] is True, check
    assert run_cairn("install", "gemini", "--user", cwd=tmp_path).stdout.startswith("unchanged: ")
    removed = run_cairn("uninstall", "gemini", "--user", cwd=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert target.read_text() == GEMINI_WITH_COMMENTS

    # An entry the user pasted by hand, before their first key: uninstall takes it out, and only it.
    pasted = GEMINI_WITH_COMMENTS.replace(
        '"ui":',
        '"hooks": {"BeforeAgent": [{"hooks": [{"type": "command", "command": "cairn hook --format gemini"}]}]},\n  "ui":',
    )
    target.write_text(pasted)
    removed = run_cairn("uninstall", "gemini", "--user", cwd=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert target.read_text() == GEMINI_WITH_COMMENTS


def test_gemini_settings_with_comments_and_an_error_name_the_error_not_the_first_comment(
    tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """Bug fixed: a Gemini CLI settings file with comments and a real mistake (a missing comma, line 4) was refused
    with the parser's error at its first comment ("line 2 column 3"), which Gemini CLI reads past: the user was sent
    to a line that is fine. Install, uninstall and doctor now name the mistake past the comments."""
    target = isolated_env / ".gemini" / "settings.json"
    target.parent.mkdir()
    theirs = '{\n  // my settings\n  "ui": {"theme": "GitHub"}\n  "general": {}\n}\n'
    target.write_text(theirs)
    for args in (["install", "gemini", "--user"], ["uninstall", "gemini", "--user"]):
        done = run_cairn(*args, cwd=tmp_path)
        assert done.returncode == 1, done.stdout
        assert f"{target} is not valid JSON (Expecting ',' delimiter: line 4 column 3" in done.stderr, done.stderr
    doctor = run_cairn("doctor", "--cwd", str(tmp_path), cwd=tmp_path)
    assert "Expecting ',' delimiter: line 4 column 3" in doctor.stdout, doctor.stdout
    assert target.read_text() == theirs


def test_a_settings_file_of_comments_alone_keeps_them_when_cairns_hook_goes(
    tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """A Gemini CLI settings file holding only a comment: install adds the hook below it, and uninstall leaves the
    comment (it does not delete the file as one that held nothing but Cairn's hook)."""
    target = isolated_env / ".gemini" / "settings.json"
    target.parent.mkdir()
    theirs = "{\n  // set up by the team's script\n}\n"
    target.write_text(theirs)
    assert run_cairn("install", "gemini", "--user", cwd=tmp_path).returncode == 0
    assert target.read_text().startswith('{\n  // set up by the team\'s script\n  "hooks": {\n')
    assert run_cairn("uninstall", "gemini", "--user", cwd=tmp_path).returncode == 0
    assert target.read_text() == theirs


@pytest.mark.parametrize("indent", [4, "\t"], ids=["four-spaces", "tabs"])
def test_install_keeps_the_settings_files_indentation(
    tmp_path: Path, isolated_env: Path, configured: VaultRepo, indent: int | str
) -> None:
    """Bug fixed: install and uninstall rewrote a user's settings with two-space indentation whatever the file
    used, so a dotfiles repository showed every line changed."""
    settings = isolated_env / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(THEIRS, indent=indent) + "\n")

    done = run_cairn("install", "claude-code", "--user", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(settings.read_text())
    assert len(_cairn_commands(data)) == 1
    assert settings.read_text() == json.dumps(data, indent=indent, ensure_ascii=False) + "\n"

    removed = run_cairn("uninstall", "claude-code", "--user", cwd=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert settings.read_text() == json.dumps(THEIRS, indent=indent) + "\n"


# A settings file as a person writes it: one-line arrays and objects, an escape, a number in exponent form,
# another tool's hook beside where Cairn's goes, no line end after the last brace.
HAND_WRITTEN = """{
  "model": "opus",
  "permissions": {"allow": ["Bash(ls)", "Read"], "deny": []},
  "env": {"GREETING": "caf\\u00e9"},
  "cleanupPeriodDays": 1e2,
  "hooks": {
    "EVENT": [
      {"hooks": [{"type": "command", "command": "notify-send prompt"}]}
    ],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
  }
}"""


@pytest.mark.parametrize(
    ("agent", "settings", "event"),
    [
        ("claude-code", ".claude/settings.json", "UserPromptSubmit"),
        ("codex", ".codex/hooks.json", "UserPromptSubmit"),
        ("gemini", ".gemini/settings.json", "BeforeAgent"),
    ],
)
def test_install_then_uninstall_leaves_a_hand_written_file_byte_for_byte(
    agent: str, settings: str, event: str, tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """Bug fixed: install and uninstall wrote the whole file out again as `json.dumps` lays it out, so a hand-written
    settings file came back with every one-line array spread over lines, `\\u00e9` turned into `é`, `1e2` into
    `100.0` and a line end added: a dotfiles repository showed lines changed that Cairn never meant to touch. Now
    install adds its entry and uninstall takes it out, and every other byte stays."""
    path = isolated_env / settings
    path.parent.mkdir()
    theirs = HAND_WRITTEN.replace("EVENT", event)
    path.write_text(theirs)

    done = run_cairn("install", agent, "--user", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = path.read_text()
    groups = json.loads(written)["hooks"][event]
    assert [h["command"] for g in groups for h in g["hooks"]][0] == "notify-send prompt"
    assert " hook --format " in groups[1]["hooks"][0]["command"]
    at = written.index('"notify-send prompt"}]}') + len('"notify-send prompt"}]}')
    assert written[:at] == theirs[:at]
    assert written.endswith(theirs[theirs.index("\n    ],") :])

    removed = run_cairn("uninstall", agent, "--user", cwd=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert path.read_text() == theirs


@pytest.mark.parametrize(
    ("literal", "said"),
    [
        ("NaN", "holds NaN, which is not valid JSON (the agent cannot read it either)"),
        ("-Infinity", "holds -Infinity, which is not valid JSON (the agent cannot read it either)"),
        ("1e999", "holds the number 1e999, too large to write back as JSON (it would become Infinity)"),
    ],
)
@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_a_number_json_cannot_write_back_is_refused_and_the_file_untouched(
    command: str, literal: str, said: str, tmp_path: Path, configured: VaultRepo
) -> None:
    """Bug fixed: Python's json reads NaN and Infinity (and 1e999, valid JSON, as inf), so install and uninstall
    wrote `NaN` / `Infinity` back into the agent's settings: a file that is no longer JSON, which the agent then
    fails to read. They now write nothing and name the file and the value."""
    project = tmp_path / "p"
    project.mkdir()
    installed = run_cairn("install", "claude-code", "--project", str(project), cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr
    target = project / ".claude" / "settings.local.json"
    raw = target.read_text().replace("{", '{\n  "limit": ' + literal + ",", 1)
    target.write_text(raw)
    done = run_cairn(command, "claude-code", "--project", str(project), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == f"Error: {target} {said}; replace it by hand, nothing was written\n"
    assert target.read_text() == raw
    assert sorted(p.name for p in target.parent.iterdir()) == ["settings.local.json"]


def test_install_keeps_crlf_line_ends(tmp_path: Path, isolated_env: Path, configured: VaultRepo) -> None:
    """Bug fixed: a settings file with CRLF line ends (a Windows editor, `core.autocrlf` in a dotfiles repository)
    was rewritten with LF ones, so its repository showed every line changed by an install."""
    settings = isolated_env / ".claude" / "settings.json"
    settings.parent.mkdir()
    theirs = (json.dumps(THEIRS, indent=2) + "\n").replace("\n", "\r\n").encode()
    settings.write_bytes(theirs)

    done = run_cairn("install", "claude-code", "--user", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = settings.read_bytes()
    assert written.count(b"\n") == written.count(b"\r\n") > 10
    assert len(_cairn_commands(json.loads(written))) == 1

    removed = run_cairn("uninstall", "claude-code", "--user", cwd=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert settings.read_bytes() == theirs


@pytest.mark.parametrize("agent", ["claude-code", "gemini"])
def test_half_a_surrogate_pair_in_the_settings_is_kept(
    agent: str, tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """Bug fixed: a settings value holding `\\ud83d` alone (valid JSON: an emoji a tool cut in two) stopped install
    and uninstall with "unexpected UnicodeEncodeError (a bug in Cairn)"; the file is now written with that value
    as the same escape."""
    folder, event = (".claude", "UserPromptSubmit") if agent == "claude-code" else (".gemini", "BeforeAgent")
    settings = isolated_env / folder / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"statusLine": "caf\\u00e9 \\ud83d cut", "model": "opus"}\n')

    done = run_cairn("install", agent, "--user", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(settings.read_text("utf-8"))
    assert data["statusLine"] == "caf\u00e9 \ud83d cut"
    assert [h["command"] for g in data["hooks"][event] for h in g["hooks"] if " hook " in h["command"]]

    removed = run_cairn("uninstall", agent, "--user", cwd=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert json.loads(settings.read_text("utf-8")) == {"statusLine": "caf\u00e9 \ud83d cut", "model": "opus"}


def test_a_settings_file_on_a_read_only_file_system_is_not_told_to_chmod(
    tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """A settings folder mounted read-only (a managed home, a read-only bind mount): install said the file "is
    read-only (mode 644)" and to `chmod u+w` it, which cannot help. It now names the read-only file system."""
    folder = isolated_env / ".claude"
    folder.mkdir()
    settings = folder / "settings.json"
    settings.write_text(json.dumps(THEIRS))
    before = settings.read_bytes()
    done = cairn_on_read_only(folder, "install", "claude-code", "--user", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == (
        f"Error: {settings} is on a read-only file system; nothing was written: make that file system writable and "
        "run this again, or edit the file where it is managed\n"
    )
    assert settings.read_bytes() == before


@pytest.mark.parametrize("command", ["install", "uninstall"])
@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini"])
def test_a_read_only_settings_file_is_refused_and_left_as_it_is(
    agent: str, command: str, tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """Bug fixed: a settings file its owner made read-only (`chmod 444`) was silently replaced by install's atomic
    write (a rename needs only the folder's permission), its mode copied onto the new file; uninstall deleted or
    rewrote it the same way. Both now refuse with one line naming the file and the fix, and change nothing."""
    settings = isolated_env / {"claude-code": ".claude/settings.json", "codex": ".codex/hooks.json"}.get(
        agent, ".gemini/settings.json"
    )
    if command == "uninstall":  # a file install wrote (and may remove whole) that its owner then locked
        assert run_cairn("install", agent, "--user", cwd=tmp_path).returncode == 0
    else:
        settings.parent.mkdir()
        settings.write_text(json.dumps(THEIRS))
    before = settings.read_bytes()
    settings.chmod(0o444)

    done = run_cairn(command, agent, "--user", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == (
        f"Error: {settings} is read-only (mode 444); nothing was written: make it writable (`chmod u+w {settings}`) "
        "and run this again, or edit it by hand\n"
    )
    assert settings.read_bytes() == before and settings.stat().st_mode & 0o777 == 0o444
    assert sorted(p.name for p in settings.parent.iterdir()) == [settings.name]  # no backup, no temp file

    if command == "install":  # a locked file that already holds Cairn's hook is left unchanged, not refused
        settings.chmod(0o644)
        assert run_cairn("install", agent, "--user", cwd=tmp_path).returncode == 0
        settings.chmod(0o444)
        again = run_cairn("install", agent, "--user", cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert f"unchanged: {settings}" in again.stdout


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini"])
def test_install_into_a_project_folder_that_does_not_exist_is_a_usage_error(
    agent: str, tmp_path: Path, configured: VaultRepo
) -> None:
    """Bug fixed: `cairn install AGENT --project DIR` with a mistyped DIR made the folder and a settings file in it,
    said `installed`, and no agent ever read it. Now it is a usage error (exit 2) naming the folder, and nothing is
    made."""
    typo = tmp_path / "acme-typo"
    done = run_cairn("install", agent, "--project", str(typo), cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.endswith(f"Error: Invalid value for '--project': Directory '{typo}' does not exist.\n")
    assert not typo.exists()


@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_a_folder_where_the_settings_file_goes_says_to_move_it(
    command: str, tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """Bug fixed: a folder at ~/.claude/settings.json gave `Error: Is a directory (PATH)` and no next step."""
    folder = isolated_env / ".claude" / "settings.json"
    folder.mkdir(parents=True)
    done = run_cairn(command, "claude-code", "--user", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"Error: Is a directory ({folder}): a folder stands where a file should be; move it away\n"
    assert folder.is_dir() and not any(folder.iterdir())


@pytest.mark.parametrize("command", ["install", "uninstall"])
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_a_device_where_the_settings_file_goes_is_one_line_at_once(
    kind: str, command: str, tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """Bug fixed: a FIFO at ~/.claude/settings.json kept install and uninstall waiting for ever on its read, and a
    link to /dev/zero read on until memory ran out. Now each is one line naming the file and the fix, at once."""
    settings = isolated_env / ".claude" / "settings.json"
    settings.parent.mkdir()
    if kind == "fifo":
        os.mkfifo(settings)
    else:
        settings.symlink_to("/dev/zero")
    done = subprocess.run(
        [cairn_executable(), command, "claude-code", "--user"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"Error: {settings} is not a regular file (a FIFO or a device?), so it holds no settings; remove it (an "
        "agent reads its settings from a file), then run this again (nothing was written)\n"
    )
    assert sorted(p.name for p in settings.parent.iterdir()) == ["settings.json"]
    assert settings.is_fifo() if kind == "fifo" else settings.is_symlink()


def test_concurrent_installs_each_keep_a_backup_and_leave_one_hook(
    tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """Bug fixed: installs run at once on a settings file holding other settings (a dotfiles script, two
    terminals) picked the same backup name in the same second, and all but one failed with `Error:
    ...settings.json.bak-... already exists; nothing was written`. Each now writes its own backup."""
    settings = isolated_env / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(THEIRS))
    runs = [
        subprocess.Popen(
            [
                cairn_executable(),
                "install",
                "claude-code",
                "--user",
                "--vault",
                "team" if n % 2 else str(configured.root),
            ],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(10)
    ]
    results = [(run.wait(timeout=120), *run.communicate()) for run in runs]
    assert [code for code, _, _ in results] == [0] * 10, [err for _, _, err in results]
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["hooks"]["Stop"] == THEIRS["hooks"]["Stop"]
    assert len(_cairn_commands(data)) == 1
    for backup in settings.parent.glob("settings.json.bak-*"):
        assert json.loads(backup.read_text())["model"] == "opus"


@pytest.mark.parametrize(("agent", "variable"), [("codex", "CODEX_HOME"), ("claude-code", "CLAUDE_CONFIG_DIR")])
def test_a_relative_agent_folder_variable_writes_nothing(
    agent: str, variable: str, tmp_path: Path, configured: VaultRepo
) -> None:
    """Bug fixed: with CODEX_HOME (or CLAUDE_CONFIG_DIR) set to a relative path, `cairn install AGENT --user` made
    that folder under the current one and wrote the settings there, said `installed`, and doctor passed it: the
    agent, started anywhere else, never read it. It is now one line naming the variable, as a relative HOME is."""
    here = tmp_path / "somewhere"
    here.mkdir()
    message = (
        f"{variable} is 'agent-home', not an absolute folder path; set {variable} to the agent's folder by its full "
        "path, or unset it (nothing was written)"
    )
    for command in ("install", "uninstall"):
        done = run_cairn(command, agent, "--user", cwd=here, env={variable: "agent-home"})
        assert (done.returncode, done.stdout, done.stderr) == (1, "", f"Error: {message}\n")
    assert list(here.iterdir()) == []
    checks = json.loads(run_cairn("doctor", "--json", cwd=here, env={variable: "agent-home"}).stdout)["checks"]
    [check] = [c for c in checks if c["subject"] == f"{agent} (user)"]
    assert (check["ok"], check["detail"]) == (False, message)
    assert (check["fix"], check["note"]) == (f"unset {variable}", f"or export {variable}=/full/path/of/its/folder")


@pytest.mark.parametrize(
    ("env", "variable"),
    [({"CODEX_HOME": "agent-home"}, "CODEX_HOME"), ({"CODEX_HOME": "", "HOME": "relative/home"}, "HOME")],
)
def test_a_relative_home_names_its_variable_as_a_field(
    env: dict[str, str], variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Doctor told which variable to unset from the message's first words (`str(exc).startswith("CODEX_HOME is ")`);
    the exception now carries it."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(install.HomeNotAbsolute) as raised:
        install.settings_path("codex", Path("."), True)
    assert raised.value.variable == variable
    assert str(raised.value).startswith(f"{variable} is ")


def test_a_settings_folder_that_takes_no_new_file_names_the_settings_file(
    tmp_path: Path, isolated_env: Path, configured: VaultRepo
) -> None:
    """Bug fixed: a folder that takes no new file (CODEX_HOME=/proc/self) was named by the write's temp file, a
    name the user never saw: "No such file or directory (/proc/self/.hooks.json.0z13p5xc.tmp)"."""
    done = run_cairn("install", "codex", "--user", cwd=tmp_path, env={"CODEX_HOME": "/proc/self"})
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert "(/proc/self/hooks.json)" in done.stderr and ".tmp" not in done.stderr, done.stderr


def test_git_hooks_on_a_read_only_vault_name_no_cache_variable(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: `cairn install git-hooks` in a vault on a read-only file system said to "point CAIRN_CACHE_DIR /
    CAIRN_STATE_DIR at a writable folder", which moves nothing of the vault's; that advice is now given only for
    the cache and state folders (and CAIRN_CONFIG for the configuration's)."""
    make_vault(vault_repo)
    for hook in (vault_repo.root / ".git" / "hooks").glob("post-*"):
        hook.unlink()
    done = cairn_on_read_only(vault_repo.root, "install", "git-hooks", cwd=vault_repo.root)
    assert done.returncode == 1
    line = done.stderr.strip()
    assert line.startswith("Error: Read-only file system (") and "\n" not in line, done.stderr
    assert line.endswith(
        "that file system is read-only; make it writable (or work on a copy elsewhere), then run this again"
    )
