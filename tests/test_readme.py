"""The README cannot go stale: its test command is what CI runs, and its first command's `cairn demo` works."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from helpers.vaults import cairn_executable

ROOT = Path(__file__).resolve().parent.parent


def _commands(readme: str) -> list[str]:
    return re.findall(r"```sh\n(.+?)\n```", readme)


def test_readme_starts_with_two_commands_and_ci_runs_the_second() -> None:
    for name in ("README.md", "README.zh-CN.md"):
        commands = _commands((ROOT / name).read_text(encoding="utf-8"))
        install_and_demo, tests = commands[0], commands[1]
        assert install_and_demo.endswith("cairn demo"), name
        assert "pytest" in tests, name
        ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
        assert tests in ci.splitlines(), f"{name}'s test command is not what .ci/run runs"


def test_demo_runs_on_the_bundled_vault(tmp_path: Path) -> None:
    done = subprocess.run([cairn_executable(), "demo"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Indexed" in done.stdout


@pytest.mark.parametrize("terminal", [False, True], ids=["no-terminal", "terminal-answers-yes"])
def test_the_demos_next_steps_work_as_written(isolated_env: Path, terminal: bool) -> None:
    """The commands `cairn demo` names as next steps, run in order in a new HOME, all succeed: its old last line
    sent a new user to `cairn install claude-code` before any vault was registered, which install refuses. And at a
    terminal, where `cairn init` asks to register the vault and the user answers yes: the line after that named
    `cairn vault add my-vault`, which then failed ("already configured ... `cairn vault remove` first")."""
    done = subprocess.run([cairn_executable(), "demo"], cwd=isolated_env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    [next_line] = [line for line in done.stdout.splitlines() if line.startswith("Next: ")]
    steps = re.findall(r"`(cairn [^`]+)`", next_line)
    assert steps[0].startswith("cairn init ") and steps[-1].startswith("cairn install "), next_line
    for step in steps:
        ran = _run_as_typed(step, isolated_env, answer="y\n" if terminal else None)
        assert ran.returncode == 0, f"{step}: {ran.stdout}{ran.stderr}"
    assert (isolated_env / ".claude" / "settings.json").is_file()
    vaults = subprocess.run([cairn_executable(), "vault", "list"], cwd=isolated_env, capture_output=True, text=True)
    assert [line.split()[0] for line in vaults.stdout.splitlines()] == ["my-vault"], vaults.stdout + vaults.stderr


def _run_as_typed(step: str, cwd: Path, answer: str | None) -> subprocess.CompletedProcess[str]:
    """`cairn ...` as a user runs it: with `answer` (the keys typed for any question it asks) on a terminal as its
    standard input, else with no terminal (a script)."""
    if answer is None:
        return subprocess.run(
            [cairn_executable(), *step.split()[1:]], cwd=cwd, capture_output=True, text=True, timeout=120
        )
    import pty

    primary, secondary = pty.openpty()
    try:
        os.write(primary, answer.encode())  # typed ahead: the terminal holds it until the command reads
        return subprocess.run(
            [cairn_executable(), *step.split()[1:]],
            cwd=cwd,
            stdin=secondary,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        os.close(secondary)
        os.close(primary)


def test_cairn_init_run_again_says_the_vault_is_there(isolated_env: Path) -> None:
    """A README block pasted twice (its `git commit` failed on a machine with no git identity, then the whole block
    again) runs `cairn init ~/team-lessons` on the vault it made: "is not empty; choose a new folder" sent the user
    to make a second vault elsewhere. It says the vault is there and nothing was written."""
    vault = isolated_env / "team-lessons"
    first = subprocess.run([cairn_executable(), "init", str(vault), "--no-register"], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    before = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*") if ".git" not in p.parts)
    again = subprocess.run([cairn_executable(), "init", str(vault)], capture_output=True, text=True)
    assert (again.returncode, again.stdout) == (1, "")
    assert again.stderr == (
        f"Error: {vault} is already a Cairn vault; use it as it is (`cairn vault list` shows whether the prompt hook "
        "serves it), or choose a new folder for another (nothing was written)\n"
    )
    assert sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*") if ".git" not in p.parts) == before


def _use_it_blocks(readme: str) -> tuple[str, str]:
    """The "Use it" section's two shell blocks: the path a new user follows, and the layered vaults'."""
    section = re.split(r"\n## ", readme.split("\n## Use it\n" if "\n## Use it\n" in readme else "\n## 使用\n")[1])[0]
    first, layered = re.findall(r"```sh\n(.+?)\n```", section, re.DOTALL)[:2]
    return first, layered


@pytest.mark.slow
@pytest.mark.parametrize("name", ["README.md", "README.zh-CN.md"])
def test_use_it_is_the_path_a_new_user_follows(
    name: str, isolated_env: Path, monkeypatch: pytest.MonkeyPatch, cairn_bin: str
) -> None:
    """Every command of "Use it", as written, in order, in a new HOME with the installed `cairn` (and its
    pre-commit) first on PATH; then the layered vaults' block; then, in a third project, the hook that
    `cairn install claude-code --user` wrote, run as Claude Code runs it, serves the lesson just committed."""
    first, layered = _use_it_blocks((ROOT / name).read_text(encoding="utf-8"))
    install, *steps = first.split("\n")
    assert install.startswith("pipx install . && pipx install pre-commit"), install  # the test runs an installed cairn
    [init] = [i for i, line in enumerate(steps) if line.startswith("cairn init ~/team-lessons ")]
    assert "--register" in steps[init]  # "answer yes to register it (--register in scripts)"
    steps[init] = steps[init].replace("cairn init ~/team-lessons", "cairn init ~/team-lessons --register", 1)
    monkeypatch.setenv("PATH", f"{Path(cairn_bin).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)

    def run(script: str, cwd: Path) -> str:
        done = subprocess.run(["sh", "-e", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{name}: {done.stdout}\n{done.stderr}"
        return done.stdout

    out = run("\n".join(steps), isolated_env)
    card = re.search(r'cairn add --name "([^"]+)"', first)
    prompt = re.search(r'cairn recall "([^"]+)"', first)
    assert card and prompt
    recalled = out.split("Wrote cards/", 1)[1]
    assert re.search(rf"^1\. {re.escape(card[1])}  \[", recalled, re.MULTILINE), out  # recall gives it
    assert "\nInjected: " in recalled and out.endswith("Everything checks out.\n"), out  # explain, doctor
    listed = run(layered, isolated_env).splitlines()
    assert [line.split()[0] for line in listed[-2:]] == ["team-lessons", "me"], listed
    project = isolated_env / "work" / "acme"
    project.mkdir(parents=True)
    settings = json.loads((isolated_env / ".claude" / "settings.json").read_text())
    [command] = [h["command"] for g in settings["hooks"]["UserPromptSubmit"] for h in g["hooks"]]
    payload = json.dumps(
        {
            "session_id": "s-1",
            "transcript_path": str(project / "transcript.jsonl"),
            "cwd": str(project),
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt[1],
        }
    )
    hooked = subprocess.run(["sh", "-c", command], input=payload, cwd=project, capture_output=True, text=True)
    assert (hooked.returncode, hooked.stderr) == (0, "")
    context = json.loads(hooked.stdout)["hookSpecificOutput"]["additionalContext"]
    assert f"1. name: {json.dumps(card[1], ensure_ascii=False)}\n" in context
    assert '   id: "team-lessons:' in context
    doctor = subprocess.run(["cairn", "doctor", "--cwd", str(project)], capture_output=True, text=True)
    assert (doctor.returncode, doctor.stdout.splitlines()[-1]) == (0, "Everything checks out."), doctor.stdout
