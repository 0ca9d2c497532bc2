"""The agents' hook runs `PYTHON -I -S /path/to/cairn/__main__.py hook ...` (`cairn.install.hook_launcher`): the file
then finds its own install without `site`, the standard library first; any other command run so gets `site`. The
`cairn` command is pip's console-script launcher, which starts from a venv whose path holds a space."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

import cairn
from cairn import doctor, githooks, install
from cairn.hot import CHILD_FLAGS, CLEAN_PATH, build_name
from helpers.payloads import FITTING_PROMPT, payload_for
from helpers.vaults import REBASE_ID, VaultRepo, cache_dir, cairn_executable, make_vault

REPO = Path(__file__).resolve().parent.parent
PACKAGES = Path("lib") / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


def _prefix(root: Path, *, packages: str = "site-packages") -> Path:
    """An install's layout: `lib/pythonX.Y/site-packages` (or Debian's `dist-packages`) holding Cairn, a link to this
    checkout's package; its `cairn/__main__.py`, the file the hook runs."""
    folder = root / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / packages
    folder.mkdir(parents=True)
    (folder / "cairn").symlink_to(Path(cairn.__file__).resolve().parent, target_is_directory=True)
    return folder / "cairn" / "__main__.py"


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


def test_without_site_the_launcher_finds_cairn_after_the_standard_library(tmp_path: Path) -> None:
    script = _prefix(tmp_path / "venv")
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


def test_without_site_another_command_gets_site(tmp_path: Path) -> None:
    """Only the hook goes without `site`: `doctor` runs the launcher with `--version`, which needs click, found in
    an editable install only through `site`."""
    script = _prefix(tmp_path / "venv")
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


def _agent_runs(command: str, project: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Claude Code's hook `command` run as the agent runs it, in `project`: the fitting prompt gets its card."""
    served = _run_as_agent(command, project, env)
    assert served.returncode == 0, served.stderr
    assert REBASE_ID in json.loads(served.stdout)["hookSpecificOutput"]["additionalContext"]
    return served


def _run_as_agent(command: str, project: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Claude Code's hook `command` run as the agent runs it (`sh -c`), in `project`, on the fitting prompt."""
    return subprocess.run(
        ["sh", "-c", command],
        input=payload_for("claude-code", FITTING_PROMPT, project),
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        check=False,
    )


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
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    [handler] = settings["hooks"]["UserPromptSubmit"][0]["hooks"]
    words = shlex.split(handler["command"])
    assert words[1:4] == ["-I", "-S", str(Path(cairn.__file__).resolve().with_name("__main__.py"))]
    assert Path(words[0]).name.startswith("python")
    assert words[4:7] == ["hook", "--format", "claude-code"]
    _agent_runs(handler["command"], project)
    assert install.cairn_commands("claude-code", project / ".claude" / "settings.local.json") == [handler["command"]]


def test_the_hook_never_imports_the_agents_folder_through_pythonpath(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: `export PYTHONPATH=$PYTHONPATH:/x` with PYTHONPATH unset leaves an empty entry, the current folder;
    the hook starts in the agent's project, so a `cairn/` package there ran in Cairn's place on every prompt (an
    `encodings/` one before any of Cairn's code). The launcher runs isolated (`-I`): no PYTHON* variable counts."""
    make_vault(vault_repo)
    project = tmp_path / "project"
    for package in ("cairn", "encodings"):
        (project / package).mkdir(parents=True)
        (project / package / "__init__.py").write_text(f"raise SystemExit('the {package} of the project ran')\n")
    command = install.hook_command("claude-code", str(vault_repo.root), executable=install.hook_launcher())
    served = _agent_runs(command, project, {**os.environ, "PYTHONPATH": ":/opt/elsewhere"})
    assert served.stderr == ""


def test_the_hook_of_a_cairn_uninstalled_without_cairn_uninstall_never_blocks_the_prompt(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed: after `pip uninstall cairn-lessons` (or a removed venv) with the hook left in the agent's settings,
    Python exited 2 on every prompt ("can't open file .../cairn/__main__.py"), and 2 is what Claude Code, Codex and
    Gemini CLI read as "block this prompt": the agent refused every prompt. The command now exits 1 then, an error
    the agents show and let the prompt through; while Cairn is there it serves as before, and uninstall finds it."""
    make_vault(vault_repo)
    script = _prefix(tmp_path / "venv")
    command = install.hook_command(
        "claude-code", str(vault_repo.root), executable=[sys.executable, "-I", "-S", str(script)]
    )
    assert install.is_cairn_command(command)
    _agent_runs(command, tmp_path)
    script.parent.unlink()  # pip uninstall: the package is gone, the interpreter stays
    gone = _run_as_agent(command, tmp_path)
    assert (gone.returncode, gone.stdout) == (1, ""), gone.stderr
    assert "__main__.py" in gone.stderr  # what the agent shows says what is gone


def test_the_background_index_never_imports_the_vaults_folder_through_pythonpath(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed: the index the hook starts in the background runs in the vault's folder with the hook's environment:
    a PYTHONPATH with an empty entry (`:/x`) made its interpreter import an `encodings/` package there at start. It
    now starts with `-E` (no PYTHON* variable counts)."""
    vault_repo.write_raw("cairn.toml", "# the defaults\n")
    vault_repo.write(REBASE_ID, "Pull --rebase drops local commits", "Compare with git reflog before you pull.")
    vault_repo.commit("A card")
    marker = tmp_path / "the-vault-ran"
    (vault_repo.root / "encodings").mkdir()
    (vault_repo.root / "encodings" / "__init__.py").write_text(f"import posix\nposix.mkdir({str(marker)!r})\n")
    done = subprocess.run(  # no index yet: the hook serves nothing and starts one in the background
        [*install.hook_launcher(), "hook", "--format", "claude-code", "--vault", str(vault_repo.root)],
        input=payload_for("claude-code", FITTING_PROMPT, tmp_path),
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": ":/opt/elsewhere"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 60
    while not marker.exists() and not list(cache_dir().rglob("*.cairn")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not marker.exists()
    assert list(cache_dir().rglob("*.cairn"))  # the index was built


def test_cairns_own_processes_ignore_pythonpath_and_keep_the_users_site_packages(tmp_path: Path) -> None:
    """Bug fixed: the background index and the warm encoder were first isolated with `-I`, whose `-s` also leaves out
    the user's site-packages: for Cairn installed with `pip install --user` (the README's way without pipx) they
    could not import Cairn, so no background index ever ran. CHILD_FLAGS ignore PYTHONPATH and keep that folder."""
    base = Path(sys.base_prefix) / "bin" / "python3"  # not a venv's interpreter, which has no user site-packages
    if not base.is_file():
        pytest.skip(f"no base interpreter at {base}")
    (tmp_path / "encodings").mkdir()
    (tmp_path / "encodings" / "__init__.py").write_text("raise SystemExit('the folder ran')\n")
    done = subprocess.run(
        [str(base), *CHILD_FLAGS, "-c", CLEAN_PATH + "import site; print(site.ENABLE_USER_SITE)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": ":/opt/elsewhere", "PYTHONNOUSERSITE": "1"},
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "True\n", "")


def test_without_an_interpreter_to_name_the_hook_runs_cairn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "")  # Python could not tell (an embedded interpreter)
    assert install.hook_launcher() == [install.cairn_executable()]


def test_doctor_runs_the_launcher_as_the_hook_would(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    good = shlex.join([*install.hook_launcher(), "hook", "--format", "claude-code"])
    check = doctor._command_check("claude-code", "project", settings, good)
    assert check.ok, check.detail
    assert f"runs {shlex.join(install.hook_launcher())} (cairn " in check.detail
    gone = f"{shlex.quote(sys.executable)} -S {tmp_path / 'no-such' / 'cairn'} hook --format claude-code"
    # the user's own settings: a project's that names a file in the project is never run (the repository's own)
    check = doctor._command_check("claude-code", "user", settings, gone)
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
    # an upgrade in place is another install too: the build is named (`hot.build_name`, the version first)
    assert named[True][0].rpartition(" cairn ")[2].startswith(cairn.__version__)
    if sys.prefix != sys.base_prefix:  # in a venv, `sys.prefix` is not: the check that broke
        assert named[True][1] != named[False][1]


def test_doctor_says_an_older_hook_command_would_start_faster_installed_again(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    older = f"{shlex.quote(cairn_executable())} hook --format claude-code"  # what install wrote before the launcher
    check = doctor._command_check("claude-code", "user", settings, older)
    assert check.ok
    assert "`cairn install claude-code --user` again starts it without `site`" in check.detail
    only_s = f"{shlex.quote(sys.executable)} -S {shlex.quote(install.hook_launcher()[-1])} hook --format claude-code"
    assert "isolated (`-I`)" in doctor._command_check("claude-code", "user", settings, only_s).detail
    current = shlex.join([*install.hook_launcher(), "hook", "--format", "claude-code"])
    assert "again" not in doctor._command_check("claude-code", "user", settings, current).detail


def test_doctor_names_a_hook_that_runs_another_build_of_cairn(tmp_path: Path) -> None:
    """Bug fixed: doctor printed "runs PATH (cairn 0.0.9)" and said nothing more: a user who upgraded Cairn in a new
    venv went on being served by the old one, which doctor, run from the new, called fine. It names the build that
    runs doctor and the install that points the hook at it."""
    settings = tmp_path / "settings.json"
    python = tmp_path / "old" / "bin" / "python"  # another venv's, as `cairn install` wrote it there
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\necho cairn 0.0.9\n")
    python.chmod(0o755)
    launcher = f"{python} -I -S {tmp_path / 'old' / 'lib' / 'cairn' / '__main__.py'}"
    check = doctor._command_check("claude-code", "user", settings, f"{launcher} hook --format claude-code")
    assert check.ok
    assert f"runs {launcher} (cairn 0.0.9); not this Cairn (cairn {build_name()}" in check.detail, check.detail
    assert check.detail.endswith("): `cairn install claude-code --user` to run this one")
    older = doctor._command_check(
        "claude-code", "user", settings, f"{python} {launcher.split()[-1]} hook --format claude-code"
    )
    assert "; `cairn install claude-code --user` again starts this one without `site`" in older.detail, older.detail
    current = shlex.join([*install.hook_launcher(), "hook", "--format", "claude-code"])
    assert "not this Cairn" not in doctor._command_check("claude-code", "user", settings, current).detail


def test_doctors_note_on_an_older_hook_in_codexs_config_toml_quotes_only_the_command(tmp_path: Path) -> None:
    """Bug fixed: for an older hook in Codex's config.toml the note read "`remove Cairn's [[hooks.UserPromptSubmit]]
    entry from ... by hand, then cairn install codex --user` again starts it without `site`": a sentence in a code
    span, as if it were a command to paste. Only the command is quoted now."""
    config = tmp_path / "config.toml"
    older = f"{shlex.quote(cairn_executable())} hook --format codex"
    check = doctor._command_check("codex", "user", config, older)
    assert check.ok
    assert (
        f"; remove Cairn's [[hooks.UserPromptSubmit]] entry from {config} by hand, then `cairn install codex --user` "
        "starts it without `site`"
    ) in check.detail, check.detail


def test_without_site_the_launcher_finds_cairn_in_debians_dist_packages(tmp_path: Path) -> None:
    script = _prefix(tmp_path / "usr" / "local", packages="dist-packages")
    done = _hook_without_site(script, "{}", tmp_path)
    assert done.returncode == 0 and done.stdout == "", done.stderr
    imported = _imports(done.stderr)
    assert "cairn.hot.hook" in imported and "site" not in imported


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's wheel, built once for the tests that install Cairn (a build took 13 s under load)."""
    return _wheel(_source(tmp_path_factory.mktemp("source")), tmp_path_factory.mktemp("wheel"))


@pytest.mark.slow
def test_cairn_installed_in_a_venv_whose_path_holds_a_space_runs(
    vault_repo: VaultRepo, tmp_path: Path, wheel: Path
) -> None:
    """Bug fixed: `cairn` was a script whose first line pip writes unquoted (`#!/home/me/My Projects/venv/bin/python`),
    so it could not start at all from such a venv ("required file not found"): the README's first command failed in
    a clone under "My Projects", and the git hooks' `cairn index` failed silently. It is now a console-script entry
    point, whose launcher pip writes to start from any path; the agents' hook and the git hooks run from there too."""
    venv = tmp_path / "My Projects" / "venv"
    _venv(venv)
    _pip_install(venv, wheel)
    executable = venv / "bin" / "cairn"
    version = subprocess.run([str(executable), "--version"], capture_output=True, text=True, check=False)
    assert version.returncode == 0 and version.stdout.startswith("cairn "), version.stderr

    make_vault(vault_repo)
    hooks = vault_repo.root / ".git" / "hooks"
    for name in githooks.GIT_HOOKS:
        (hooks / name).write_text(githooks.git_hook_script(str(executable), ".", name, str(vault_repo.root.resolve())))
        (hooks / name).chmod(0o755)
    vault_repo.write("ops/new", "A new lesson after the hooks", "Committed with the hooks in place.")
    head = vault_repo.commit("one more")
    from cairn.hot.index import IndexReader
    from cairn.hot.paths import index_path

    with IndexReader(index_path(vault_repo.root.resolve())) as index:
        assert index.commit == head  # the hook's `cairn index` ran

    project = tmp_path / "project"
    project.mkdir()
    done = subprocess.run(
        [str(executable), "install", "claude-code", "--project", str(project), "--vault", str(vault_repo.root)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    [handler] = json.loads((project / ".claude" / "settings.local.json").read_text())["hooks"]["UserPromptSubmit"][0][
        "hooks"
    ]
    assert shlex.split(handler["command"])[:3] == [str(venv / "bin" / "python"), "-I", "-S"]
    _agent_runs(handler["command"], project)


@pytest.mark.slow
def test_python_m_cairn_of_an_install_whose_script_is_not_beside_its_python_writes_that_script(
    vault_repo: VaultRepo, tmp_path: Path, wheel: Path
) -> None:
    """Bug fixed: `python3 -m cairn init` (or `install git-hooks`) of a `pip install --user` Cairn looked for its
    script beside `/usr/bin/python3` only, found none, and wrote git hooks running a bare `cairn`, which a PATH
    without `~/.local/bin` does not find: every commit left the index stale, silently, and `cairn doctor` run so
    called the hooks the `cairn` command wrote outdated. The script is now the one pip recorded for the package.
    `--prefix` lays the install out as `--user` does: its `bin/` is not the interpreter's."""
    venv, prefix = tmp_path / "venv", tmp_path / "prefix"
    _venv(venv)
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--prefix", str(prefix)]
        + [str(wheel)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    make_vault(vault_repo)
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "cairn", "install", "git-hooks", "--vault", str(vault_repo.root)],
        env={**os.environ, "PYTHONPATH": str(prefix / PACKAGES)},
        cwd=tmp_path,  # `-m` imports from the current folder first: not this checkout's package
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    script = (vault_repo.root / ".git" / "hooks" / "post-commit").read_text()
    assert f"CAIRN_BIN={shlex.quote(str((prefix / 'bin' / 'cairn').resolve()))}\n" in script


def _venv(venv: Path) -> None:
    """A venv holding this one's packages but Cairn (gitpython and the rest, as a real install holds them), pip
    among them: linked, not installed again (ensurepip took 5-11 s a venv)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    packages = venv / PACKAGES
    for entry in (Path(sys.prefix) / PACKAGES).iterdir():
        if entry.name.startswith(("cairn", "__editable__")) or entry.name.endswith(".pth"):
            continue
        if not (packages / entry.name).exists():
            (packages / entry.name).symlink_to(entry)
    if not (packages / "pip").exists():  # an interpreter whose pip is installed elsewhere
        subprocess.run([str(venv / "bin" / "python"), "-m", "ensurepip", "-q"], check=True)


def _source(source: Path) -> Path:
    """A copy of this checkout's package for pip to build from, so that it writes nothing into the checkout."""
    shutil.copytree(REPO / "cairn", source / "cairn", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    return source


def _pip_install(venv: Path, source: Path) -> None:
    """A real (not editable) install of source (a folder or a wheel) into venv, in place of any Cairn there."""
    built = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-2000:]


def _wheel(source: Path, folder: Path) -> Path:
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(folder), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    [wheel] = folder.glob("*.whl")
    return wheel


def _build_name(venv: Path) -> str:
    named = subprocess.run(
        # -I: the venv's own Cairn, not one a PYTHONPATH or the current folder (`-c` imports from there) holds
        [str(venv / "bin" / "python"), "-I", "-c", "from cairn.hot import build_name; print(build_name())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return named.stdout.strip()


@pytest.mark.slow
def test_an_upgrade_in_place_that_keeps_the_version_number_is_a_new_build(
    vault_repo: VaultRepo, tmp_path: Path, wheel: Path
) -> None:
    """Bug fixed: the index, the user configuration's cached copy, the lint cache and the warm encoder were keyed on
    `cairn.__version__` alone, 0.1.0 at every commit: after `pip install` of a newer Cairn from a git branch over the
    old one, the hook went on serving the index the old code built (and a warm encoder the old code ran) until the
    vault's next commit. A wheel install's build now names its files' hashes: the hook sees an index of another
    build as stale and rebuilds it. Two installs of one source share the name; an editable install has the version."""
    first, second = tmp_path / "one", tmp_path / "two"
    for venv in (first, second):
        _venv(venv)
    with zipfile.ZipFile(wheel) as built:  # the licence its metadata names ships with it
        assert any(name.endswith(".dist-info/licenses/LICENSE") for name in built.namelist())
    _pip_install(first, wheel)
    _pip_install(second, wheel)
    old = _build_name(first)
    assert old.startswith(f"{cairn.__version__}+") and old == _build_name(second)

    make_vault(vault_repo)
    cairn_bin = str(first / "bin" / "cairn")
    own = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the venv's Cairn, as an agent runs it
    subprocess.run([cairn_bin, "index", "--vault", str(vault_repo.root)], env=own, capture_output=True, check=True)
    from cairn.hot.index import IndexReader
    from cairn.hot.paths import index_path

    with IndexReader(index_path(vault_repo.root.resolve())) as index:
        assert index.meta["cairn_version"] == old

    source = _source(tmp_path / "source")  # the same checkout, with a change
    serve = source / "cairn" / "hot" / "serve.py"
    serve.write_text(serve.read_text() + "\n# a fix that kept the version number\n")
    _pip_install(first, _wheel(source, tmp_path / "newer"))
    new = _build_name(first)
    assert new.startswith(f"{cairn.__version__}+") and new != old

    ran = subprocess.run(
        [cairn_bin, "hook", "--format", "claude-code", "--vault", str(vault_repo.root)],
        input=payload_for("claude-code", FITTING_PROMPT, vault_repo.root),
        env=own,
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    deadline = time.monotonic() + 60  # the hook rebuilds the old build's index in the background
    while True:
        with IndexReader(index_path(vault_repo.root.resolve())) as index:
            if index.meta["cairn_version"] == new:
                break
        assert time.monotonic() < deadline, "the index of the old build was never rebuilt"
        time.sleep(0.2)
    checkout = subprocess.run(  # a source tree (an editable install's): no record beside it, the version alone
        [sys.executable, "-c", "from cairn.hot import build_name; print(build_name())"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert checkout.stdout.strip() == cairn.__version__


@pytest.mark.slow
def test_git_hooks_of_a_moved_venv_are_never_written_to_run_a_cairn_that_cannot_start(
    vault_repo: VaultRepo, tmp_path: Path, wheel: Path
) -> None:
    """Bug fixed: after `mv venv venv2`, `venv2/bin/cairn` still starts with `#!/.../venv/bin/python`, which is gone.
    `venv2/bin/python -m cairn install git-hooks` wrote hooks running that script all the same, and `cairn doctor` said
    `ok git-hooks` (it looked at the script only when the hooks were out of date, and only whether it was executable):
    every commit left the index stale, silently. Install now refuses, doctor fails such hooks whether or not they look
    up to date, and its fix (Cairn installed again in place, then the hooks) works."""
    venv, moved = tmp_path / "venv", tmp_path / "venv2"
    _venv(venv)
    _pip_install(venv, wheel)
    make_vault(vault_repo)
    own = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the venv's Cairn, as a user runs it
    for args in (["vault", "add", str(vault_repo.root), "--name", "team"], ["install", "git-hooks", "--vault", "team"]):
        done = subprocess.run(
            [str(venv / "bin" / "cairn"), *args], env=own, capture_output=True, text=True, cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
    venv.rename(moved)
    hooks = vault_repo.root / ".git" / "hooks"
    before = {name: (hooks / name).read_text() for name in githooks.GIT_HOOKS}

    def moved_cairn(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(moved / "bin" / "python"), "-m", "cairn", *args], env=own, capture_output=True, text=True, cwd=tmp_path
        )

    refused = moved_cairn("install", "git-hooks", "--vault", "team")
    assert refused.returncode == 1
    assert f"{moved / 'bin' / 'cairn'}, which cannot start" in refused.stderr
    assert f"runs {venv / 'bin' / 'python'}, which is not there" in refused.stderr
    assert {name: (hooks / name).read_text() for name in githooks.GIT_HOOKS} == before  # nothing was written

    for name in githooks.GIT_HOOKS:  # as install wrote them before: up to date, running the moved script
        text = before[name].replace(f"CAIRN_BIN={venv / 'bin' / 'cairn'}\n", f"CAIRN_BIN={moved / 'bin' / 'cairn'}\n")
        assert text != before[name]
        (hooks / name).write_text(text)

    def hook_line() -> dict[str, Any]:
        report = json.loads(moved_cairn("doctor", "--json").stdout)
        return next(c for c in report["checks"] if c["area"] == "git-hooks")

    line = hook_line()
    assert line["ok"] is False and "cannot start" in line["detail"], line
    fixed = subprocess.run(["sh", "-c", line["fix"]], env=own, capture_output=True, text=True, cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    assert hook_line()["ok"] is True
    vault_repo.write("ops/after-the-move", "A lesson after the move", "Committed once the venv was moved and fixed.")
    head = vault_repo.commit("after the move")
    from cairn.hot.index import IndexReader
    from cairn.hot.paths import index_path

    with IndexReader(index_path(vault_repo.root.resolve())) as index:
        assert index.commit == head  # the hooks' `cairn index` ran
