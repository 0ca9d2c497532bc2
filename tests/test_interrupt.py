"""Ctrl-C: a command stopped by SIGINT says so in one line and exits 130, as a shell reports it, not click's
"Aborted!" and exit 1 (a failure of the command, to a script that checks for one)."""

from __future__ import annotations

import os
import platform
import pty
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cairn.hot import paths
from helpers.vaults import VaultRepo, cache_dir, cairn_executable, make_vault, run_cairn

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "aarch64"),
    reason="reads /proc/PID/syscall to see the read begin",
)


_READ = {"x86_64": "0", "aarch64": "63"}.get(platform.machine())  # the read system call's number


def _reading_stdin(pid: int) -> bool:
    """The process is blocked in a read of descriptor 0 (/proc/PID/syscall: the call's number, then its arguments),
    so a SIGINT now lands in that read, as a user's Ctrl-C at the question would."""
    try:
        syscall = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    return syscall[:2] == [_READ, "0x0"]


def _interrupt_once_reading(
    process: subprocess.Popen[bytes] | subprocess.Popen[str], ready: Callable[[], bool] | None = None
) -> None:
    """SIGINT once the process reads its stdin, or once `ready()` says so (polled every millisecond)."""
    deadline = time.monotonic() + 60
    while not (ready() if ready is not None else _reading_stdin(process.pid)):
        assert process.poll() is None, "cairn ended before it was ready to be interrupted"
        assert time.monotonic() < deadline, "cairn was never ready to be interrupted"
        time.sleep(0.05 if ready is None else 0.001)
    process.send_signal(signal.SIGINT)


def _kill_if_running(process: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """A cairn that never ended is killed, so the test fails on its timeout: leaving `with Popen(...)` waits for the
    process without one: a suite started as a background job (SIGINT ignored, which cairn inherits) hung 21 minutes
    in `cairn add` at its question, until it was killed by hand."""
    if process.poll() is None:
        process.kill()


def _interrupted(args: list[str], cwd: Path, ready: Callable[[], bool] | None = None) -> tuple[int, str, str]:
    """`cairn ARGS` interrupted once it reads its stdin (or once `ready()`): its exit code, stdout and stderr."""
    with subprocess.Popen(
        [cairn_executable(), *args],
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            _interrupt_once_reading(process, ready)
            out, err = process.communicate(timeout=60)
        finally:
            _kill_if_running(process)
    return process.returncode, out, err


def test_ctrl_c_is_one_line_and_exit_130(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    code, out, err = _interrupted(["recall", "-"], vault_repo.root)  # the prompt from stdin: it waits there
    assert code == 130, (out, err)
    assert out == ""
    assert err.strip() == "Interrupted."
    assert "Traceback" not in err and "Aborted" not in err


def _at_a_question(vault_repo: VaultRepo, answer: bytes | None) -> tuple[int, bytes]:
    """`cairn add` on a terminal, stopped at its first question by Ctrl-C (answer None) or by typing `answer`."""
    primary, secondary = pty.openpty()
    with subprocess.Popen(
        [cairn_executable(), "add"], cwd=vault_repo.root, stdin=secondary, stdout=secondary, stderr=secondary
    ) as process:
        os.close(secondary)
        try:
            if answer is None:
                _interrupt_once_reading(process)
            else:
                os.write(primary, answer)
            code = process.wait(timeout=60)
        finally:
            _kill_if_running(process)
        output = b""
        try:
            while chunk := os.read(primary, 65536):
                output += chunk
        except OSError:  # the terminal closed
            pass
    os.close(primary)
    return code, output


def test_ctrl_c_at_a_question_is_the_same(vault_repo: VaultRepo) -> None:
    """click turns Ctrl-C at a question (`cairn add`'s name) into its "Aborted!", exit 1; Cairn tells it from the end
    of input (Ctrl-D), which is exit 1 with one line saying what to do (it was click's bare "Aborted!")."""
    make_vault(vault_repo)
    code, output = _at_a_question(vault_repo, None)
    assert code == 130, output
    assert b"Name (the situation" in output and output.rstrip().endswith(b"Interrupted."), output
    assert b"Aborted" not in output and b"Traceback" not in output, output
    code, output = _at_a_question(vault_repo, b"\x04")  # Ctrl-D: the end of input
    assert code == 1, output
    assert output.rstrip().endswith(
        b"Error: the input ended before a question was answered; give the answers as options instead "
        b"(`cairn add --help` lists them)"
    ), output
    assert b"Aborted" not in output and b"Interrupted" not in output, output


def test_ctrl_c_in_the_hook_is_the_same(vault_repo: VaultRepo) -> None:
    """`cairn hook` runs before click, so the group's Ctrl-C handling never saw it: a traceback, ending in the read of
    its stdin."""
    make_vault(vault_repo)
    code, out, err = _interrupted(["hook", "--format", "text", "--vault", str(vault_repo.root)], vault_repo.root)
    assert (code, out, err.strip()) == (130, "", "Interrupted.")


@pytest.mark.parametrize(("signum", "line"), [(signal.SIGTERM, "Terminated."), (signal.SIGHUP, "Hangup.")])
def test_sigterm_in_init_leaves_no_half_made_vault(tmp_path: Path, signum: signal.Signals, line: str) -> None:
    """SIGTERM (`timeout`, `kill`, an IDE's stop button) or SIGHUP (the terminal closed) ended the process where it
    stood: a `cairn init` stopped before its first commit left the template's files and a `.git` with no commit, and
    running it again said only "not empty; choose a new folder". It now cleans up as Ctrl-C does: one line, exit
    128 + the signal's number, nothing left."""
    mark = tmp_path / "signing"
    signer = tmp_path / "gpg"  # git signs the first commit with this: it says it started, then waits to be stopped
    signer.write_text(f'#!/bin/sh\necho $$ > "{mark}.tmp" && mv "{mark}.tmp" "{mark}"\nexec sleep 60\n')
    signer.chmod(0o755)
    env = dict(os.environ, GIT_CONFIG_COUNT="2", GIT_CONFIG_KEY_0="commit.gpgSign", GIT_CONFIG_VALUE_0="true")
    env.update(GIT_CONFIG_KEY_1="gpg.program", GIT_CONFIG_VALUE_1=str(signer))
    target = tmp_path / "vault"
    with subprocess.Popen(
        [cairn_executable(), "init", str(target), "--no-register"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as process:
        deadline = time.monotonic() + 60
        while not mark.exists():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "git never signed the first commit"
            time.sleep(0.05)
        process.send_signal(signum)
        out, err = process.communicate(timeout=60)
    os.kill(int(mark.read_text()), signal.SIGKILL)  # the signer git still waits on
    assert process.returncode == 128 + signum, (out, err)
    assert err.strip() == line, err
    assert not target.exists(), sorted(p.name for p in target.iterdir())


def test_an_import_stopped_midway_names_the_cards_it_wrote(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: Ctrl-C during `cairn import` of many notes said only "Interrupted.", and the cards it had written
    were left in the vault unnamed (each whole: writes are atomic). It now lists them, one line each as a finished
    import does, and says no other card was written."""
    make_vault(vault_repo)
    notes = tmp_path / "notes"
    notes.mkdir()
    for n in range(400):
        (notes / f"note{n:03d}.md").write_text(
            f"# Build step {n} fails on a stale cache\n\nThe build step {n} breaks when its cache key {n} is stale.\n\n"
            f"Clear cache {n} first.\n"
        )
    imported = vault_repo.root / "cards" / "imported"
    code, out, err = _interrupted(
        ["import", str(notes), "--force"], vault_repo.root, ready=lambda: any(imported.glob("*.md"))
    )
    assert code == 130, (out, err[-2000:])
    on_disk = sorted(p.relative_to(vault_repo.root).as_posix() for p in imported.glob("*.md"))
    assert 0 < len(on_disk) < 400
    lines = err.strip().splitlines()
    named = sorted(line.split(": wrote ")[1] for line in lines if ": wrote " in line)
    assert named == on_disk
    assert lines[-3:] == [
        f"Stopped after writing {len(on_disk)} card(s), listed above; no other card was written. Review them, then "
        "commit them or remove them.",
        "",
        "Interrupted.",
    ], lines[-3:]


def test_an_init_stopped_after_its_commit_says_what_finishes_the_vault(tmp_path: Path) -> None:
    """Bug fixed: Ctrl-C while `cairn init` indexed its new vault said only "Interrupted."; the vault was made and
    committed, without its index, git hooks or registration, and `cairn init` again refused it ("already a Cairn
    vault; use it as it is"). It now names the commands that finish it, and they do."""
    target = tmp_path / "vault"
    vaults = cache_dir() / "vaults"
    code, out, err = _interrupted(
        ["init", str(target), "--register", "--name", "team"], tmp_path, ready=lambda: any(vaults.glob("vault-*"))
    )
    assert code == 130, (out, err)
    lines = err.strip().splitlines()
    assert lines[-1] == "Interrupted." and lines[-3].startswith("Stopped after the vault at "), lines
    finish, serve = re.findall(r"`([^`]+)`", lines[-3])
    assert finish == f"cairn index --vault {target} && cairn install git-hooks --vault {target}"
    assert serve == f"cairn vault add {target} --name team"
    for command in (*finish.split(" && "), serve):
        done = run_cairn(*command.split()[1:], cwd=tmp_path)
        assert done.returncode == 0, (command, done.stderr)
    assert (target / ".git" / "hooks" / "post-commit").is_file()


# On PYTHONPATH as `sitecustomize`: SIGINT to the process itself at the first audit event $CTRL_C_EVENT whose first
# argument matches $CTRL_C_AT (a module imported, a folder made), as a Ctrl-C typed at that moment lands.
_CTRL_C_AT_EVENT = """
import fnmatch
import os
import signal
import sys

_event, _pattern = os.environ["CTRL_C_EVENT"], os.environ["CTRL_C_AT"]
_sent = []

def _ctrl_c(event, args):
    if event == _event and not _sent and fnmatch.fnmatch(os.fsdecode(args[0]), _pattern):
        _sent.append(event)
        os.kill(os.getpid(), signal.SIGINT)

sys.addaudithook(_ctrl_c)
"""


def _ctrl_c_at(tmp_path: Path, event: str, pattern: str) -> dict[str, str]:
    """The environment for a `cairn` that gets Ctrl-C at the first `event` (sys.audit's) matching `pattern`."""
    folder = tmp_path / "ctrl-c"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(_CTRL_C_AT_EVENT)
    return {"PYTHONPATH": str(folder), "CTRL_C_EVENT": event, "CTRL_C_AT": pattern}


def test_ctrl_c_while_the_cli_loads_is_the_same(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: a Ctrl-C in the first tens of milliseconds, while `cairn` imports click and its commands' group,
    printed a traceback of the imports ending in KeyboardInterrupt; it is now the one line every command says."""
    make_vault(vault_repo)
    done = run_cairn("list", cwd=vault_repo.root, env=_ctrl_c_at(tmp_path, "import", "click"))
    assert (done.returncode, done.stdout, done.stderr.strip()) == (130, "", "Interrupted."), done.stderr


def test_an_install_stopped_between_vaults_says_what_is_left(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: Ctrl-C while `cairn install AGENT --user` indexed the second of the configured vaults said only
    "Interrupted.": the hook was in, the first vault indexed, the second neither indexed nor given its git hooks. It
    now names what is left and the command that finishes it, which does."""
    make_vault(vault_repo)
    second = VaultRepo(tmp_path / "second")
    make_vault(second)
    for root, name in ((vault_repo.root, "team"), (second.root, "second")):
        assert run_cairn("vault", "add", str(root), "--name", name, cwd=tmp_path).returncode == 0
    shutil.rmtree(paths.index_path(second.root).parent)  # built again by the install, where Ctrl-C lands
    done = run_cairn(
        "install", "codex", "--user", "--scope", "git", cwd=tmp_path, env=_ctrl_c_at(tmp_path, "os.mkdir", "*/second-*")
    )
    assert done.returncode == 130, (done.stdout, done.stderr)
    assert f"Index of {vault_repo.root}:" in done.stdout and f"Index of {second.root}" not in done.stdout
    settings = Path.home() / ".codex" / "hooks.json"
    lines = done.stderr.strip().splitlines()
    assert lines[-2:] == ["", "Interrupted."], lines
    assert lines[-3] == (
        f"Stopped with Cairn's hook in {settings} and 1 of 2 vault(s) indexed (not yet: second): run `cairn install "
        "codex --user --scope git` again to finish (until then the hook builds a missing index in the background on "
        "its first prompt)."
    ), lines
    again = run_cairn("install", "codex", "--user", "--scope", "git", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert f"unchanged: {settings}" in again.stdout and f"Index of {second.root}: 2 cards" in again.stdout
    assert (second.root / ".git" / "hooks" / "post-commit").is_file()


def test_a_vault_add_stopped_while_indexing_says_it_is_registered(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: Ctrl-C while `cairn vault add` built the new vault's index said only "Interrupted." after "Added
    vault"; run again, it refused the name ("already configured"). It now says the vault is registered and names the
    command that builds its index, which does."""
    make_vault(vault_repo)
    shutil.rmtree(paths.index_path(vault_repo.root).parent)
    folder = paths.index_path(vault_repo.root).parent.name
    done = run_cairn(
        "vault",
        "add",
        str(vault_repo.root),
        "--name",
        "team",
        cwd=tmp_path,
        env=_ctrl_c_at(tmp_path, "os.mkdir", f"*/{folder}"),
    )
    assert done.returncode == 130, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert lines[-3:] == [
        "Stopped after vault 'team' was registered, before its index was built: `cairn index --vault team` builds it "
        "(until then the hook builds it in the background on its first prompt).",
        "",
        "Interrupted.",
    ], lines
    indexed = run_cairn("index", "--vault", "team", cwd=tmp_path)
    assert indexed.returncode == 0, indexed.stderr
    assert paths.index_path(vault_repo.root).is_file()


def test_an_add_stopped_while_it_lints_the_vault_says_nothing_was_written(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed: Ctrl-C while `cairn add` checked the new card against the vault's cards said only "Interrupted.",
    leaving the user to look for a half-written card. It now says nothing was written, and nothing was."""
    make_vault(vault_repo)
    before = sorted((vault_repo.root / "cards").rglob("*"))
    done = run_cairn(
        "add",
        "--name",
        "Docker layer cache order matters",
        "--summary",
        "Copy the lockfile and install dependencies before copying the source, so Docker keeps the layer.",
        "--scope",
        "docker",
        "--body",
        "The image rebuilt every dependency on each commit.",
        cwd=vault_repo.root,
        env=_ctrl_c_at(tmp_path, "os.scandir", f"{vault_repo.root}/cards"),
    )
    assert done.returncode == 130, (done.stdout, done.stderr)
    assert done.stderr.strip().splitlines()[-3:] == [
        "Stopped while 'Docker layer cache order matters' was checked against the vault's cards: nothing was written.",
        "",
        "Interrupted.",
    ], done.stderr
    assert done.stdout == "" and sorted((vault_repo.root / "cards").rglob("*")) == before


def test_run_on_terminal_kills_a_command_stuck_at_a_question(vault_repo: VaultRepo) -> None:
    """Bug fixed (in the test helper): `run_on_terminal` read the terminal with no deadline, so a command stuck at a
    question (`cairn add` with nothing typed) hung the test, and the suite, for ever; its `timeout` applied only once
    the terminal had closed. It raises TimeoutExpired by then, and the command is killed."""
    from helpers.cli import run_on_terminal

    make_vault(vault_repo)
    before = _children()
    with pytest.raises(subprocess.TimeoutExpired):
        run_on_terminal(["add"], vault_repo.root, timeout=5, typed=b"")
    assert _children() - before == set()


def _children() -> set[int]:
    """This process's children that have not been collected, from /proc."""
    return {int(pid) for task in Path("/proc/self/task").iterdir() for pid in (task / "children").read_text().split()}
