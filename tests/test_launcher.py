"""The agents' hook runs `PYTHON -S cairn hook ...` (`cairn.install.hook_launcher`): `bin/cairn` then finds its own
install without `site`, the standard library first, and falls back to `site` where Cairn is installed elsewhere."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cairn
from cairn import doctor, install
from helpers.payloads import FITTING_PROMPT, payload_for
from helpers.vaults import REBASE_ID, VaultRepo, cairn_executable, make_vault

REPO = Path(__file__).resolve().parent.parent
PACKAGES = Path("lib") / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


def _prefix(root: Path, *, with_cairn: bool) -> Path:
    """An install's layout: `bin/cairn` (the repository's script) and `lib/pythonX.Y/site-packages`, holding Cairn
    (a link to this checkout's package) or not."""
    (root / "bin").mkdir(parents=True)
    script = root / "bin" / "cairn"
    shutil.copy(REPO / "bin" / "cairn", script)
    packages = root / PACKAGES
    packages.mkdir(parents=True)
    if with_cairn:
        (packages / "cairn").symlink_to(Path(cairn.__file__).resolve().parent, target_is_directory=True)
    return script


def _imports(stderr: str) -> list[str]:
    """The modules `-X importtime` reports, in the order their imports finished."""
    return [line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")][1:]


def _hook_without_site(script: Path, stdin: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -S SCRIPT hook --format claude-code`, as the agents run it, with `-X importtime`."""
    return subprocess.run(
        [sys.executable, "-S", "-X", "importtime", str(script), "hook", "--format", "claude-code"],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
    )


def test_without_site_the_script_finds_cairn_beside_it_after_the_standard_library(tmp_path: Path) -> None:
    script = _prefix(tmp_path / "venv", with_cairn=True)
    shadow = tmp_path / "venv" / PACKAGES / "json"  # a package installed beside Cairn never shadows the stdlib's
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise SystemExit('the json beside Cairn was imported')\n")
    done = _hook_without_site(script, "not json at all", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # garbage on stdin: silence, as ever
    imported = _imports(done.stderr)
    assert "cairn.hot.hook" in imported
    assert "site" not in imported  # the start-up work the launcher exists to skip
    assert "json" in imported and "the json beside Cairn" not in done.stderr


def test_without_site_the_script_falls_back_to_site_where_cairn_is_not_beside_it(tmp_path: Path) -> None:
    script = _prefix(tmp_path / "elsewhere", with_cairn=False)  # as an editable install or another layout is
    done = subprocess.run(
        [sys.executable, "-S", "-X", "importtime", str(script), "--version"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("cairn ")
    assert "site" in _imports(done.stderr)


def test_install_writes_the_launcher_and_the_agent_runs_it(vault_repo: VaultRepo, tmp_path: Path) -> None:
    make_vault(vault_repo)
    project = tmp_path / "project"
    project.mkdir()
    executable = cairn_executable()
    done = subprocess.run(
        [executable, "install", "claude-code", "--project", str(project), "--vault", str(vault_repo.root)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    [handler] = settings["hooks"]["UserPromptSubmit"][0]["hooks"]
    words = shlex.split(handler["command"])
    assert words[1:3] == ["-S", str(Path(executable).resolve())]
    assert Path(words[0]).name.startswith("python")
    assert words[3:6] == ["hook", "--format", "claude-code"]
    served = subprocess.run(
        ["sh", "-c", handler["command"]],
        input=payload_for("claude-code", FITTING_PROMPT, project),
        capture_output=True,
        text=True,
        cwd=project,
        check=False,
    )
    assert served.returncode == 0, served.stderr
    assert REBASE_ID in json.loads(served.stdout)["hookSpecificOutput"]["additionalContext"]
    assert install.cairn_commands("claude-code", project / ".claude" / "settings.json") == [handler["command"]]


def test_a_script_without_the_launcher_lines_is_run_as_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    older = tmp_path / "bin" / "cairn"
    older.parent.mkdir()
    older.write_text("#!/usr/bin/python3\nimport sys\nfrom cairn.entry import main\nsys.exit(main())\n")
    monkeypatch.setattr(sys, "argv", [str(older), "install"])
    monkeypatch.setenv("PATH", "/nonexistent")
    assert install.hook_launcher() == [str(older.resolve())]  # another launcher may need `site`: never -S


def test_doctor_runs_the_launcher_as_the_hook_would(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    good = f"{shlex.quote(sys.executable)} -S {shlex.quote(cairn_executable())} hook --format claude-code"
    check = doctor._command_check("claude-code", "project", settings, good)
    assert check.ok, check.detail
    assert f"runs {sys.executable} -S {cairn_executable()} (cairn " in check.detail
    gone = f"{shlex.quote(sys.executable)} -S {tmp_path / 'no-such' / 'cairn'} hook --format claude-code"
    check = doctor._command_check("claude-code", "project", settings, gone)
    assert not check.ok
    assert "--version failed" in check.detail and "-S" in check.detail


def test_the_warm_encoders_install_check_agrees_with_and_without_site() -> None:
    """The hook (under -S) and the warm encoder it starts (with `site`) must name their install alike, or the
    encoder stops at every request as if another install's hook had asked (`cairn.semantic.daemon`)."""
    where = str(Path(cairn.__file__).resolve().parent.parent)
    code = (
        "import json, sys; sys.path.append({!r}); from cairn.hot import install_name; "
        "print(json.dumps([install_name(), sys.prefix]))"
    )
    named = {}
    for flags in ([], ["-S"]):
        done = subprocess.run(
            [sys.executable, *flags, "-c", code.format(where)], capture_output=True, text=True, check=True
        )
        named[bool(flags)] = json.loads(done.stdout)
    assert named[True][0] == named[False][0]
    assert named[True][0].endswith(f" cairn {cairn.__version__}")  # an upgrade in place is another install too
    if sys.prefix != sys.base_prefix:  # in a venv, `sys.prefix` is not: the check that broke
        assert named[True][1] != named[False][1]


def test_doctor_says_an_older_hook_command_would_start_faster_installed_again(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    older = f"{shlex.quote(cairn_executable())} hook --format claude-code"  # what install wrote before the launcher
    check = doctor._command_check("claude-code", "user", settings, older)
    assert check.ok
    assert "`cairn install claude-code --user` again starts it without `site`" in check.detail
    current = shlex.join([*install.hook_launcher(), "hook", "--format", "claude-code"])
    assert "again" not in doctor._command_check("claude-code", "user", settings, current).detail


def test_without_site_the_script_finds_cairn_in_debians_dist_packages(tmp_path: Path) -> None:
    root = tmp_path / "usr" / "local"
    script = _prefix(root, with_cairn=False)
    dist = root / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "dist-packages"
    dist.mkdir()
    (dist / "cairn").symlink_to(Path(cairn.__file__).resolve().parent, target_is_directory=True)
    done = _hook_without_site(script, "{}", tmp_path)
    assert done.returncode == 0 and done.stdout == "", done.stderr
    imported = _imports(done.stderr)
    assert "cairn.hot.hook" in imported and "site" not in imported


def test_git_hooks_run_cairn_from_a_venv_whose_path_holds_a_space(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """pip writes `bin/cairn`'s first line unquoted (`#!/home/me/My Projects/venv/bin/python`), so the system cannot
    start the script by itself; the git hooks ran it so, failed silently, and the index went stale after every
    commit. `cairn install git-hooks` now has them run it with its interpreter when its path holds a space."""
    venv = tmp_path / "My Projects" / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    packages = venv / PACKAGES
    for entry in (Path(sys.prefix) / PACKAGES).iterdir():  # gitpython and the rest, as a real install holds them
        if entry.name != "cairn" and not entry.name.endswith(".pth"):
            (packages / entry.name).symlink_to(entry)
    (packages / "cairn").symlink_to(Path(cairn.__file__).resolve().parent, target_is_directory=True)
    script = venv / "bin" / "cairn"
    lines = (REPO / "bin" / "cairn").read_text("utf-8").splitlines(keepends=True)
    script.write_text(f"#!{venv / 'bin' / 'python'}\n" + "".join(lines[1:]), "utf-8")  # as pip writes it
    script.chmod(0o755)
    with pytest.raises(OSError):
        subprocess.run([str(script), "--version"], capture_output=True, check=False)  # cannot start by itself

    make_vault(vault_repo)
    hooks = vault_repo.root / ".git" / "hooks"
    for name in install.GIT_HOOKS:
        text = install.git_hook_script(str(script), ".", name, str(vault_repo.root.resolve()))
        assert f"CAIRN_PYTHON={shlex.quote(str(venv / 'bin' / 'python'))}" in text
        (hooks / name).write_text(text, "utf-8")
        (hooks / name).chmod(0o755)
    vault_repo.write("ops/new", "A new lesson after the hooks", "Committed with the hooks in place.")
    head = vault_repo.commit("one more")
    from cairn.hot.index import IndexReader
    from cairn.hot.paths import index_path

    with IndexReader(index_path(vault_repo.root.resolve())) as index:
        assert index.commit == head  # the hook's `cairn index` ran
    plain = install.git_hook_script(str(REPO / "bin" / "cairn"), ".", "post-commit")
    assert 'CAIRN_PYTHON=""' in plain  # a script that starts by itself runs itself, as before
