"""Bad input for the vault registry, `cairn sync` and the index's writer lock: a symlinked or concurrently edited user
configuration, a served branch with local commits, an unreachable remote, two syncs at once, a lock file that is not
a file or is held. Real git repositories and bare remotes under tmp_path, the installed `cairn` as a subprocess."""

from __future__ import annotations

import json
import os
import select
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

from cairn.index import store
from helpers.mounts import cairn_on_read_only
from helpers.vaults import VaultRepo, cairn_executable, run_cairn


def config_path() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "cairn" / "config.toml"


def bare_vault(tmp_path: Path) -> tuple[VaultRepo, Path]:
    """An author's vault with one card, pushed to a bare remote `remote.git` (its `origin`)."""
    author = VaultRepo(tmp_path / "author")
    author.write_raw("cairn.toml", "# Cairn's settings: the defaults.\n")
    author.write("git/rebase", "Pull rebase drops commits after a force-push", "Check git reflog before pulling.")
    author.commit("First card")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    author.git("remote", "add", "origin", str(remote))
    author.git("push", "-q", "-u", "origin", "main")
    return author, remote


def clone(remote: Path, target: Path) -> VaultRepo:
    subprocess.run(["git", "clone", "-q", str(remote), str(target)], check=True, capture_output=True)
    repo = VaultRepo.__new__(VaultRepo)
    repo.root = target
    return repo


def push_card(author: VaultRepo, card_id: str, name: str) -> str:
    author.write(card_id, name, f"{name}: what to do about it.")
    commit = author.commit(name)
    author.git("push", "-q", "origin", "main")
    return commit


# -- the user configuration ---------------------------------------------------------------------------------------


def test_vault_add_and_remove_write_through_a_symlinked_configuration(tmp_path: Path) -> None:
    """A config kept in a dotfiles repository and linked into place stays a link; the edit lands in its target."""
    author, _ = bare_vault(tmp_path)
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "cairn.toml"
    target.write_text("# my dotfiles: keep this comment\n", encoding="utf-8")
    config_path().parent.mkdir(parents=True)
    config_path().symlink_to(target)
    added = run_cairn("vault", "add", str(author.root), "--name", "team", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    assert config_path().is_symlink() and config_path().resolve() == target.resolve()
    text = target.read_text("utf-8")
    assert text.startswith("# my dotfiles: keep this comment\n") and 'name = "team"' in text
    assert [v["name"] for v in json.loads(run_cairn("vault", "list", "--json", cwd=tmp_path).stdout)["vaults"]] == [
        "team"
    ]
    removed = run_cairn("vault", "remove", "team", cwd=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert config_path().is_symlink() and "team" not in target.read_text("utf-8")
    assert target.read_text("utf-8").startswith("# my dotfiles: keep this comment\n")
    assert [p.name for p in dotfiles.iterdir()] == ["cairn.toml"]  # no lock or temp file left in the dotfiles


def test_vault_adds_at_once_keep_every_entry(tmp_path: Path) -> None:
    """Several `cairn vault add` at the same time (a setup script run twice, two terminals): none loses another's
    entry, none fails with a traceback-like message."""
    folders = []
    for n in range(6):
        folder = tmp_path / f"vault{n}"
        (folder / "cards").mkdir(parents=True)
        (folder / "cairn.toml").write_text("", encoding="utf-8")
        folders.append(folder)
    config_path().parent.mkdir(parents=True)
    config_path().write_text("# keep me\n", encoding="utf-8")
    with ThreadPoolExecutor(len(folders)) as pool:
        done = list(pool.map(lambda f: run_cairn("vault", "add", str(f), cwd=tmp_path), folders))
    assert [d.returncode for d in done] == [0] * len(folders)
    # each says only that its folder is no git repository yet (the notes of `vault add` go to stderr)
    notes = [f"Note: {f} is not a git repository yet" for f in folders]
    assert [d.stderr.splitlines()[0][: len(n)] for d, n in zip(done, notes, strict=True)] == notes
    assert all(len(d.stderr.splitlines()) == 1 for d in done), [d.stderr for d in done]
    listed = json.loads(run_cairn("vault", "list", "--json", cwd=tmp_path).stdout)["vaults"]
    assert sorted(v["name"] for v in listed) == [f"vault{n}" for n in range(6)]
    assert config_path().read_text("utf-8").startswith("# keep me\n")


def test_vault_add_past_a_file_size_limit_names_the_file_and_the_fix(tmp_path: Path) -> None:
    """A full disk or a file size limit (`ulimit -f`) stopped the write of the configuration with "Error: File too
    large" alone: no file, nothing to do. The configuration stays as it was and no temp file is left beside it."""
    import resource
    import sys

    folder = tmp_path / "vault"
    (folder / "cards").mkdir(parents=True)
    (folder / "cairn.toml").write_text("", encoding="utf-8")
    config_path().parent.mkdir(parents=True)
    config_path().write_text("# keep me\n", encoding="utf-8")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4, 4))

    done = subprocess.run(
        [sys.executable, "-c", "from cairn.cli import main; main()", "vault", "add", str(folder)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        preexec_fn=limit,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"Error: File too large ({config_path()}): "), done.stderr
    assert "ulimit -f" in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert config_path().read_text("utf-8") == "# keep me\n"
    assert [p.name for p in config_path().parent.iterdir()] == ["config.toml"]


def test_vault_remove_on_a_read_only_file_system_is_not_told_to_chmod(tmp_path: Path) -> None:
    """A configuration folder mounted read-only: the error said the file "is read-only (mode 600)" and to `chmod
    u+w` it, which cannot help. It now names the read-only file system."""
    author, _ = bare_vault(tmp_path)
    assert run_cairn("vault", "add", str(author.root), "--name", "team", cwd=tmp_path).returncode == 0
    folder = config_path().parent
    before = config_path().read_bytes()
    done = cairn_on_read_only(folder, "vault", "remove", "team", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == (
        f"Error: {os.path.realpath(config_path())} is on a read-only file system; nothing was written: make that file "
        "system writable and run this again, or edit the file where it is managed\n"
    )
    assert config_path().read_bytes() == before


HAND_WRITTEN = """\
# my vaults
[[vaults]]  # the team's lessons
name = "team"
path = "{team}"

[[ "vaults" ]]
name = "mine"
path = "{mine}"
"""


def _two_vaults(tmp_path: Path) -> tuple[Path, Path]:
    for name in ("team", "mine", "third"):
        (tmp_path / name / "cards").mkdir(parents=True)
        (tmp_path / name / "cairn.toml").write_text("", encoding="utf-8")
    config_path().parent.mkdir(parents=True)
    config_path().write_text(HAND_WRITTEN.format(team=tmp_path / "team", mine=tmp_path / "mine"), encoding="utf-8")
    return tmp_path / "team", tmp_path / "mine"


def _names(tmp_path: Path) -> list[str]:
    return [v["name"] for v in json.loads(run_cairn("vault", "list", "--json", cwd=tmp_path).stdout)["vaults"]]


@pytest.mark.parametrize("removed", ["team", "mine"])
def test_vault_remove_takes_out_the_vault_named_in_a_hand_written_file(tmp_path: Path, removed: str) -> None:
    """Table headers as TOML allows them (a comment after one, spaces, a quoted key): `remove team` removes team,
    never another vault."""
    _two_vaults(tmp_path)
    done = run_cairn("vault", "remove", removed, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _names(tmp_path) == [n for n in ("team", "mine") if n != removed]
    assert config_path().read_text("utf-8").startswith("# my vaults\n")


def test_vaults_written_as_an_inline_array_are_listed_and_never_edited(tmp_path: Path) -> None:
    """Bug fixed: `vaults = [ { name = ..., path = ... }, ... ]` (valid TOML, read as [[vaults]] tables are) made
    `vault remove` say "the configuration file changed while it was read; run the command again" on every run, and
    `vault add` report invalid TOML at a line past the file's end."""
    _two_vaults(tmp_path)
    inline = (
        f'vaults = [\n  {{ name = "team", path = "{tmp_path / "team"}" }},\n'
        f'  {{ name = "mine", path = "{tmp_path / "mine"}" }},\n]\n'
    )
    config_path().write_text(inline, encoding="utf-8")
    assert _names(tmp_path) == ["team", "mine"]
    for args in (("remove", "team"), ("add", str(tmp_path / "third"))):
        done = run_cairn("vault", *args, cwd=tmp_path)
        assert done.returncode == 1
        assert done.stderr == (
            f"Error: {config_path()} lists its vaults in a form Cairn does not edit (an inline array, `vaults = "
            "[...]`?): write each as a [[vaults]] table (name = ..., path = ...), or edit the file by hand; nothing "
            "was written\n"
        )
        assert config_path().read_text("utf-8") == inline


def test_vault_remove_brings_a_hand_written_file_over_the_limit_under_it(tmp_path: Path) -> None:
    """Bug fixed: a configuration listing more vaults than the limit (written by hand) made every command, the prompt
    hook too, fail with "34 vaults; at most 32", and `cairn vault remove`, the one command that shortens the list,
    failed with that same line: the user had to find and cut tables by hand. Remove now works on such a file, and
    the line says to use it."""
    from cairn.hot.userconfig import MAX_VAULTS

    tables = []
    for n in range(MAX_VAULTS + 2):
        (tmp_path / f"v{n}" / "cards").mkdir(parents=True)
        tables.append(f'[[vaults]]\nname = "v{n}"\npath = "{tmp_path / f"v{n}"}"\n')
    config_path().parent.mkdir(parents=True)
    config_path().write_text("\n".join(tables), encoding="utf-8")
    listed = run_cairn("vault", "list", cwd=tmp_path)
    assert listed.returncode == 1
    assert listed.stderr == (
        f"Error: {config_path()}: {MAX_VAULTS + 2} vaults; at most {MAX_VAULTS}: take one out with "
        "`cairn vault remove NAME`\n"
    )
    for name in ("v0", "v1"):
        done = run_cairn("vault", "remove", name, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    assert _names(tmp_path) == [f"v{n}" for n in range(2, MAX_VAULTS + 2)]


def test_vault_add_first_goes_first_in_a_hand_written_file(tmp_path: Path) -> None:
    _two_vaults(tmp_path)
    done = run_cairn("vault", "add", str(tmp_path / "third"), "--first", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _names(tmp_path) == ["third", "team", "mine"]


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_vault_add_then_remove_leaves_the_file_byte_for_byte(tmp_path: Path, newline: str) -> None:
    """Bugs fixed: `cairn vault add` read the file with Python's newline translation, so a configuration with CRLF
    line ends (a Windows editor, a dotfiles repository with `core.autocrlf`) was written back with LF ones, every
    line changed; and `vault add --first` then `vault remove` left a blank line at the top of the file."""
    _two_vaults(tmp_path)
    theirs = config_path().read_bytes().replace(b"\n", newline.encode())
    config_path().write_bytes(theirs)
    for args in (("--first",), ()):
        done = run_cairn("vault", "add", str(tmp_path / "third"), *args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        written = config_path().read_bytes()
        assert written.count(b"\n") == written.count(newline.encode())
        assert run_cairn("vault", "remove", "third", cwd=tmp_path).returncode == 0
        assert config_path().read_bytes() == theirs


# -- cairn sync -----------------------------------------------------------------------------------------------------


def test_a_configured_vault_that_moved_says_to_fix_the_configuration_not_to_init_a_new_vault(tmp_path: Path) -> None:
    """Bug fixed: `cairn sync`, `--vault NAME` and `cairn list` (the one configured vault) on a registered vault whose
    folder was moved said `create one with `cairn init OLD_PATH``: a new, empty vault where the old one was, while
    the configuration still named the wrong folder. Now one line says to remove the entry and add the new path."""
    author, _ = bare_vault(tmp_path)
    assert run_cairn("vault", "add", str(author.root), "--name", "team", cwd=tmp_path).returncode == 0
    author.root.rename(tmp_path / "moved")
    said = (
        f"configured vault 'team' at {author.root} is not a folder (moved or deleted?); if it moved: `cairn vault "
        "add NEW_PATH --name team --replace`; if it is gone: `cairn vault remove team`"
    )
    synced = run_cairn("sync", cwd=tmp_path)
    assert (synced.returncode, synced.stdout) == (1, f"team: error: {said}\n")
    for args in (("index", "--vault", "team"), ("list",)):
        done = run_cairn(*args, cwd=tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (1, "", f"Error: {said}\n")
    assert not author.root.exists()
    assert run_cairn("vault", "remove", "team", cwd=tmp_path).returncode == 0
    added = run_cairn("vault", "add", str(tmp_path / "moved"), "--name", "team", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    assert run_cairn("sync", cwd=tmp_path).returncode == 0


def test_the_fix_for_a_moved_vault_keeps_its_projects_scopes_and_ref(tmp_path: Path) -> None:
    """Bug fixed: the fix `cairn sync` (and the hook's log, `--vault NAME`, `cairn list`, `recall`) gave for a
    configured vault whose folder moved was `cairn vault add NEW_PATH --name me`: run as printed, a personal vault
    limited to one project's agents and one scope came back served in every project, every scope, at another ref.
    Now it adds the vault again as it was configured, as `cairn doctor`'s fix does."""
    author, _ = bare_vault(tmp_path)
    project = tmp_path / "acme"
    project.mkdir()
    limits = ("--ref", "main", "--scope", "git", "--project", str(project))
    added = run_cairn("vault", "add", str(author.root), "--name", "me", *limits, cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    before = config_path().read_text()
    moved = tmp_path / "moved"
    author.root.rename(moved)
    synced = run_cairn("sync", cwd=tmp_path)
    assert synced.returncode == 1
    fix = synced.stdout.split("if it moved: `")[1].split("`")[0]
    assert fix == (f"cairn vault add NEW_PATH --name me --ref main --scope git --project {project} --replace")
    done = subprocess.run(
        fix.replace("NEW_PATH", shlex.quote(str(moved))).replace(
            "cairn vault", f"{shlex.quote(cairn_executable())} vault"
        ),
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert config_path().read_text() == before.replace(str(author.root), str(moved))


def test_sync_goes_on_past_a_configured_vault_the_system_refuses_to_open(tmp_path: Path) -> None:
    """Bug fixed: a configured vault whose folder the system refuses to open (no permission; here a name too long,
    which root meets as well) stopped `cairn sync` with one `Error:` line: the vaults after it were neither fetched
    nor indexed. It is that vault's error line now, as a moved vault's is, and the others are synced."""
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "cairn" / "config.toml"
    far = tmp_path / ("x" * 300)
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[[vaults]]\nname = "far"\npath = "{far}"\n')  # listed first
    author, _ = bare_vault(tmp_path)
    assert run_cairn("vault", "add", str(author.root), "--name", "team", cwd=tmp_path).returncode == 0
    synced = run_cairn("sync", cwd=tmp_path)
    assert synced.returncode == 1 and synced.stderr == "", synced.stderr
    far_line, team_line = synced.stdout.splitlines()
    assert far_line.startswith("far: error: File name too long ("), far_line
    assert team_line.startswith("team: "), team_line
    assert run_cairn("list", "--vault", "team", cwd=tmp_path).returncode == 0


def test_sync_of_a_served_branch_ahead_of_its_remote_is_no_rewrite(tmp_path: Path) -> None:
    """The served branch (local main, not checked out: a detached HEAD) holds a commit not pushed yet: the remote
    was not rewritten, so sync indexes main as it is, exit 0, and moves nothing."""
    author, _ = bare_vault(tmp_path)
    assert run_cairn("vault", "add", str(author.root), "--name", "team", cwd=tmp_path).returncode == 0
    assert run_cairn("sync", cwd=tmp_path).returncode == 0
    author.write("git/bisect", "Bisect finds the breaking commit", "Run git bisect run with the test.")
    local = author.commit("Not pushed yet")
    author.git("checkout", "-q", "--detach", "HEAD~1")
    done = run_cairn("sync", "team", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["vaults"][0]["status"] == "updated"
    assert author.git("rev-parse", "main") == local
    listed = json.loads(run_cairn("list", "--vault", "team", "--json", cwd=tmp_path).stdout)
    assert listed["commit"] == local


def test_sync_of_a_diverged_served_branch_never_advises_dropping_local_commits(tmp_path: Path) -> None:
    """Local main (not checked out) has a commit of its own, and the remote has another: sync refuses, exit 1, and
    its advice is not the forced fetch that would throw the local commit away."""
    author, remote = bare_vault(tmp_path)
    assert run_cairn("vault", "add", str(author.root), "--name", "team", cwd=tmp_path).returncode == 0
    assert run_cairn("sync", cwd=tmp_path).returncode == 0
    teammate = clone(remote, tmp_path / "teammate")
    push_card(teammate, "git/stash", "Stash before switching branches")
    author.write("git/mine", "My own unpushed lesson", "Mine: what to do.")
    mine = author.commit("Mine")
    author.git("checkout", "-q", "--detach")
    done = run_cairn("sync", "team", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.count("\n") == 1 and done.stdout.startswith("team: diverged: ")
    assert "--force" not in done.stdout and "1 commit" in done.stdout
    assert author.git("rev-parse", "main") == mine


def test_sync_of_an_unreachable_remote_says_why(tmp_path: Path) -> None:
    """The remote's folder was removed: one line naming the remote's problem (not git's closing advice)."""
    _, remote = bare_vault(tmp_path)
    mine = clone(remote, tmp_path / "mine")
    assert run_cairn("vault", "add", str(mine.root), "--name", "team", cwd=tmp_path).returncode == 0
    assert run_cairn("sync", cwd=tmp_path).returncode == 0
    subprocess.run(["rm", "-rf", str(remote)], check=True)
    done = run_cairn("sync", cwd=tmp_path)
    assert done.returncode == 1 and done.stderr == ""
    assert done.stdout.count("\n") == 1
    assert "does not appear to be a git repository" in done.stdout, done.stdout
    assert "still serving" in done.stdout


def _served_from(tmp_path: Path, url: str) -> None:
    """A registered, indexed vault whose `origin` is now `url` (its served ref `origin/main` as last fetched)."""
    _, remote = bare_vault(tmp_path)
    mine = clone(remote, tmp_path / "mine")
    assert run_cairn("vault", "add", str(mine.root), "--name", "team", cwd=tmp_path).returncode == 0
    assert run_cairn("sync", cwd=tmp_path).returncode == 0
    mine.git("remote", "set-url", "origin", url)


def test_sync_of_a_remote_that_never_answers_stops_at_its_timeout(tmp_path: Path) -> None:
    """A remote that takes the connection and never answers (a hung server, a dead VPN) held `cairn sync` for ever: a
    cron job or an agent's command never ended. The fetch now stops after --timeout, with git's helpers, and the
    vault fails like any unreachable one (exit 1, one line, still serving what it served)."""
    import socket
    import time

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)  # the kernel completes the connection; nothing ever reads or answers it
        _served_from(tmp_path, f"http://127.0.0.1:{server.getsockname()[1]}/team.git")
        started = time.monotonic()
        done = run_cairn("sync", "--timeout", "2", cwd=tmp_path)
        took = time.monotonic() - started
    assert done.returncode == 1 and done.stderr == "", done.stderr
    assert done.stdout.startswith("team: error: ") and "no answer from the remote within 2 s" in done.stdout
    assert "still serving" in done.stdout
    mine = shlex.quote(str(tmp_path / "mine"))
    assert done.stdout.endswith(
        f"`git -C {mine} fetch origin` shows git's whole answer; fix what it names, then `cairn sync team`\n"
    )
    assert took < 60


def test_sync_stopped_by_ctrl_c_stops_its_fetch_too(tmp_path: Path) -> None:
    """Bug fixed: `cairn sync` run by a program (or with --json) starts git fetch in a session of its own; Ctrl-C
    (SIGINT) ended sync with `Interrupted.` but left that git fetch and its helper running, detached, waiting on the
    remote for ever. They now stop with it."""
    import signal
    import socket
    import time

    def fetching(url: str) -> list[str]:
        found = []
        for proc in Path("/proc").iterdir():
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if url.encode() in argv and (proc / "status").read_text().find("State:\tZ") < 0:
                found.append(proc.name)
        return found

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)  # the kernel completes the connection; nothing ever reads or answers it
        url = f"http://127.0.0.1:{server.getsockname()[1]}/team.git"
        _served_from(tmp_path, url)
        with subprocess.Popen(
            [cairn_executable(), "sync", "--json"],
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as sync:
            deadline = time.monotonic() + 60
            while not fetching(url) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert fetching(url), "git fetch never started"
            sync.send_signal(signal.SIGINT)
            _, err = sync.communicate(timeout=60)
        assert (sync.returncode, err.strip()) == (130, "Interrupted.")
        deadline = time.monotonic() + 10
        while fetching(url) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert fetching(url) == []


@contextmanager
def _a_remote_asking_for_a_password() -> Iterator[str]:
    """The URL of an HTTP git remote that answers every request by asking for a password."""
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class AskForPassword(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="team"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), AskForPassword)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/team.git"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.skipif(not shutil.which("script"), reason="needs util-linux `script` for a terminal")
def test_sync_never_waits_on_a_credential_prompt_when_run_by_a_program(tmp_path: Path) -> None:
    """A remote asking for a password: `cairn sync --json` run by a program from a terminal (an agent's shell, a
    script) had git ask "Username for ..." on the terminal, and it waited there for ever. Run by a program, git's
    prompts are now off: the vault fails at once and says why."""
    with _a_remote_asking_for_a_password() as url:
        _served_from(tmp_path, url)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_ASKPASS", "SSH_ASKPASS"))}
        env["GIT_CONFIG_GLOBAL"] = str(tmp_path / "no-credential-helper")  # nothing answers for git but a person
        command = f"{shlex.quote(cairn_executable())} sync --json </dev/null"
        # `script` gives the command a terminal; its own stdin stays open and silent: nobody ever types an answer.
        silent, keep_open = os.pipe()
        try:
            with subprocess.Popen(
                ["script", "-qec", command, "/dev/null"],
                cwd=tmp_path,
                env=env,
                stdin=silent,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            ) as proc:
                os.close(silent)
                try:
                    out, _ = proc.communicate(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    out, _ = proc.communicate()
                    pytest.fail(f"cairn sync waited on a prompt: {out!r}")
        finally:
            os.close(keep_open)
    assert proc.returncode == 1, out
    assert "terminal prompts disabled" in out and "still serving" in out
    # what to do next: the fetch cannot wait for a password here, a person at a terminal can give it
    assert (
        "The remote asks for credentials, which only a person at a terminal can give: run `cairn sync team` in one, "
        "or set up a git credential helper" in out
    )


def test_sync_run_by_a_program_never_waits_on_an_askpass_dialog(tmp_path: Path) -> None:
    """Bug fixed: with GIT_ASKPASS, core.askPass or SSH_ASKPASS set (an editor's terminal sets one; a desktop session
    the last), `cairn sync` run by a program had git ask that program for the password: a dialog nobody answers, and
    sync waited out its --timeout, then said the remote never answered. git runs no askpass program now: the vault
    fails at once, saying the remote asks for credentials."""
    asked = tmp_path / "asked"
    askpass = tmp_path / "askpass"
    askpass.write_text(f'#!/bin/sh\necho "$*" >> {shlex.quote(str(asked))}\nsleep 60\n')
    askpass.chmod(0o755)
    with _a_remote_asking_for_a_password() as url:
        _served_from(tmp_path, url)
        subprocess.run(["git", "-C", str(tmp_path / "mine"), "config", "core.askPass", str(askpass)], check=True)
        for env in ({"GIT_ASKPASS": str(askpass)}, {"SSH_ASKPASS": str(askpass)}, {}):
            done = run_cairn("sync", "--json", "--timeout", "10", cwd=tmp_path, env=env)
            [result] = json.loads(done.stdout)["vaults"]
            assert (done.returncode, result["status"]) == (1, "error"), done.stdout
            assert "terminal prompts disabled" in result["message"], result["message"]
    assert not asked.exists(), asked.read_text()


def test_two_syncs_at_once_both_succeed(tmp_path: Path) -> None:
    """`cairn sync` run twice at the same moment (a cron job and a user): neither fails on the other's ref lock,
    both end at the remote's commit, and the index is whole."""
    author, remote = bare_vault(tmp_path)
    mine = clone(remote, tmp_path / "mine")
    assert run_cairn("vault", "add", str(mine.root), "--name", "team", cwd=tmp_path).returncode == 0
    assert run_cairn("sync", cwd=tmp_path).returncode == 0
    for n in range(4):
        new = push_card(author, f"git/lesson-{n}", f"Lesson number {n} about rebasing")
        with ThreadPoolExecutor(3) as pool:
            done = list(pool.map(lambda _: run_cairn("sync", "--json", cwd=tmp_path), range(3)))
        for result in done:
            assert result.returncode == 0, result.stdout
            assert json.loads(result.stdout)["vaults"][0]["after"] == new
    audit = run_cairn("audit", "--vault", "team", cwd=tmp_path)
    assert audit.returncode == 0, audit.stdout


# -- the writer lock ------------------------------------------------------------------------------------------------


def _indexed(tmp_path: Path) -> tuple[VaultRepo, Path]:
    author, _ = bare_vault(tmp_path)
    done = author.cairn("index", "--json")
    assert done.returncode == 0, done.stderr
    return author, Path(json.loads(done.stdout)["index"])


@pytest.mark.parametrize("kind", ["symlink", "fifo", "folder"])
def test_a_lock_file_that_is_not_a_file_is_refused_with_the_fix(tmp_path: Path, kind: str) -> None:
    author, index_file = _indexed(tmp_path)
    lock = index_file.with_name(index_file.name + ".lock")
    lock.unlink()
    elsewhere = tmp_path / "elsewhere"
    if kind == "symlink":
        lock.symlink_to(elsewhere)
    elif kind == "fifo":
        os.mkfifo(lock)
    else:
        lock.mkdir()
    done = author.cairn("index", "--rebuild")
    assert done.returncode == 1
    assert done.stderr == f"Error: {lock} is not a regular file (a lock file of Cairn's); remove it, then run again\n"
    assert not elsewhere.exists()  # nothing made through the link


def test_a_lock_files_error_is_judged_by_its_kind_not_its_words(tmp_path: Path) -> None:
    """Bug fixed: the writer lock recognised a FIFO or device in the lock file's place by "not a regular file" in the
    error's text, so any error on a path holding those words (here a file where the lock's folder goes) was said as
    a lock file to remove."""
    folder = tmp_path / "not a regular file"
    folder.write_text("")
    with pytest.raises(NotADirectoryError), store.file_lock(folder / "x.lock", "testing"):
        pass


def _hold_lock(index_file: Path) -> subprocess.Popen[str]:
    """Another process holding the index's writer lock (its pid in the lock file), as a stopped `cairn index`
    would, until its stdin closes; it has printed `held` once it holds it."""
    return subprocess.Popen(
        [
            "python3",
            "-c",
            "import fcntl, os, sys; f = open(sys.argv[1], 'r+b'); fcntl.flock(f, fcntl.LOCK_EX); "
            "f.truncate(0); f.write(str(os.getpid()).encode()); f.flush(); print('held', flush=True); sys.stdin.read()",
            str(index_file.with_name(index_file.name + ".lock")),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def _told_behind_a_held_lock(
    author: VaultRepo, index_file: Path, *args: str
) -> tuple[subprocess.Popen[str], str, subprocess.Popen[str], str, str]:
    """`cairn ARGS` run in the vault while another process holds its index's lock: the holder, the first line the
    command told (nothing if it said none within 60 s), the command's process (ended) and its stdout and stderr."""
    holder = _hold_lock(index_file)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    with subprocess.Popen(
        [cairn_executable(), *args],
        cwd=author.root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as waiting:
        try:
            assert waiting.stderr is not None
            ready, _, _ = select.select([waiting.stderr], [], [], 60)  # before a fix: nothing until the holder ended
            told = waiting.stderr.readline() if ready else ""
        finally:
            holder.communicate("")
        out, err = waiting.communicate(timeout=60)
    return holder, told, waiting, out, err


def test_a_held_lock_says_who_holds_it_and_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer that never lets go (a stopped `cairn index`) makes the next one give up with the holder's pid, not
    wait forever."""
    _, index_file = _indexed(tmp_path)
    holder = _hold_lock(index_file)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        monkeypatch.setattr(store, "LOCK_WAIT_SECONDS", 0.2)
        with pytest.raises(store.IndexBusy) as raised, store.writer_lock(index_file):
            pass
        assert str(raised.value) == (
            f"another Cairn process (pid {holder.pid}) is checking or updating the index at {index_file} and has held "
            f"its lock for over 0.2 s; wait for it, or stop it if it is stuck (`kill {holder.pid}`), then run again"
        )
    finally:
        holder.communicate("")
    lock_file = index_file.with_name(index_file.name + ".lock")
    with store.writer_lock(index_file):  # a lock its holder left (it ended) is free at once
        # Its pid is written over the last holder's in one write of a fixed width, never after emptying the file: a
        # waiter reading in between named no holder ("find it with `ps`").
        assert lock_file.read_bytes() == str(os.getpid()).ljust(16).encode("ascii")
    lock_file.write_text("1234567890123456789")  # a longer pid than any, left by an older Cairn
    with store.writer_lock(index_file):
        assert lock_file.read_text().strip() == str(os.getpid())


def test_an_index_waiting_on_a_held_lock_says_so_at_once(tmp_path: Path) -> None:
    """`cairn index` behind another that holds the vault's lock (one stopped with Ctrl-Z in another terminal) waited
    up to 10 minutes without a word. Past a moment it says what it waits for and how to end the wait, then waits on:
    once the holder lets go it indexes as usual."""
    author, index_file = _indexed(tmp_path)
    holder, told, waiting, out, err = _told_behind_a_held_lock(author, index_file, "index", "--rebuild")
    assert told == (
        f"Waiting for another Cairn process (pid {holder.pid}), which is checking or updating the index at "
        f"{index_file}; stop it if it is stuck (`kill {holder.pid}`), or press Ctrl-C to stop this one.\n"
    )
    assert waiting.returncode == 0, err
    # the one note: the author's vault, pushed to a new remote, has no origin/HEAD and serves its local main
    assert out.startswith("Indexed 1 cards at ") and err.count("\n") == 1 and "set-head origin --auto" in err, err


def test_an_explain_waiting_on_the_lock_does_not_say_the_holder_writes(tmp_path: Path) -> None:
    """Bug fixed: several `cairn explain` at once against one vault each hold the index's lock while they check it
    is current, and the ones behind said the holder "is writing the index" when it only checked. The wait says the
    holder checks or updates it. (An explain that finds the index current, or behind its branch, no longer waits:
    this one has no index yet, as while another process makes the vault's first.)"""
    author, index_file = _indexed(tmp_path)
    index_file.unlink()
    holder, told, waiting, _, err = _told_behind_a_held_lock(
        author, index_file, "explain", "how do I undo a force-push"
    )
    assert told.startswith(
        f"Waiting for another Cairn process (pid {holder.pid}), which is checking or updating the index at "
        f"{index_file}; "
    ), told
    assert waiting.returncode == 0, err


def test_a_reader_with_no_index_to_fall_back_on_waits_for_the_writer_to_end(tmp_path: Path) -> None:
    """A reader gives up its short wait for the lock only to read an older, whole index (`behind`); with none (the
    vault's first index is being made) it must wait as a writer does, not build the index beside the holder."""
    author, index_file = _indexed(tmp_path)
    index_file.unlink()
    holder = _hold_lock(index_file)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    with subprocess.Popen(
        [cairn_executable(), "explain", "how do I undo a force-push"],
        cwd=author.root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as waiting:
        try:
            assert waiting.stderr is not None
            ready, _, _ = select.select([waiting.stderr], [], [], 60)
            assert ready and waiting.stderr.readline().startswith("Waiting for another Cairn process")
            # past the reader's short wait (store.READ_WAIT_SECONDS) it still waits, and wrote nothing
            ready, _, _ = select.select([waiting.stderr], [], [], store.READ_WAIT_SECONDS + 2)
            assert not ready and waiting.poll() is None and not index_file.exists()
        finally:
            holder.communicate("")
        _, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err
    assert index_file.exists()


def test_a_teammates_settings_cannot_fake_a_sync_line(tmp_path: Path) -> None:
    """A committed cairn.toml whose key holds a line break and an escape: the vault's line stays one line, with no
    escape sequence (the message names the key as it can)."""
    author, remote = bare_vault(tmp_path)
    mine = clone(remote, tmp_path / "mine")
    assert run_cairn("vault", "add", str(mine.root), "--name", "team", cwd=tmp_path).returncode == 0
    author.write_raw("cairn.toml", '[recall]\n"min\\nother: up to date at 00000000 (9 cards)\\u001b[2J" = 1\n')
    author.commit("Settings")
    author.git("push", "-q", "origin", "main")
    done = run_cairn("sync", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.count("\n") == 1 and "\x1b" not in done.stdout, done.stdout
    assert done.stdout.startswith("team: error: cairn.toml:1: unknown key ")


@pytest.mark.parametrize("scope", ["", " , "])
def test_vault_add_scope_with_no_tag_is_a_usage_error(tmp_path: Path, scope: str) -> None:
    """Bug fixed: `--scope ""` was refused as a fault of the configuration file ("[[vaults]] entry 2: scopes must be
    a list ..."), and `--scope ,` stored the tag "," (the vault then served no card)."""
    author, _ = bare_vault(tmp_path)
    done = run_cairn("vault", "add", str(author.root), "--scope", scope, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.endswith(
        f"Error: Invalid value for '--scope': {scope!r} holds no tag; give one such as --scope git\n"
    )
    assert not config_path().exists()
    split = run_cairn("vault", "add", str(author.root), "--scope", "git, ci", "--scope", "git", cwd=tmp_path)
    assert split.returncode == 0, split.stderr
    [entry] = json.loads(run_cairn("vault", "list", "--json", cwd=tmp_path).stdout)["vaults"]
    assert entry["scopes"] == ["git", "ci"]
