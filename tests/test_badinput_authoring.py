"""Hostile and broken input to the commands that write a vault or its cards (`init`, `add`, `import`, `sanitize`)
and to `show`: one clear line, the documented exit code, nothing written outside where it belongs, nothing left
half-made, and no card text printed as a line of its own."""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers.cli import invoke_cli
from helpers.vaults import VaultRepo, cairn_executable, make_vault, run_cairn, run_cairn_within

LESSON = "- The build fails when the cache is stale because the lockfile changed; run `make clean` first.\n"


def _one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("Error: ") and "Traceback" not in stderr and "a bug in Cairn" not in stderr, stderr
    return lines[0]


# -- sanitize ------------------------------------------------------------------------------------------------------


def _git(repo: VaultRepo, *args: str, input_text: str | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=repo.root, input=input_text, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _commit_tree_with_dotdot(repo: VaultRepo) -> None:
    """A commit whose tree holds `cards/../../../pwned.md`: git writes such a tree (`git mktree`), a clone of a
    hostile remote can carry it, and `git ls-tree -r` lists the path as it is."""
    blob = _git(repo, "hash-object", "-w", "--stdin", input_text="---\nname: x\nsummary: y\n---\n")
    tree = _git(repo, "mktree", input_text=f"100644 blob {blob}\tpwned.md\n")
    for _ in range(2):
        tree = _git(repo, "mktree", input_text=f"040000 tree {tree}\t..\n")
    cards = _git(repo, "mktree", input_text=_git(repo, "ls-tree", "HEAD:cards") + f"\n040000 tree {tree}\t..\n")
    top = [line for line in _git(repo, "ls-tree", "HEAD").splitlines() if not line.endswith("\tcards")]
    root = _git(repo, "mktree", input_text="\n".join([*top, f"040000 tree {cards}\tcards"]) + "\n")
    commit = _git(repo, "commit-tree", root, "-p", "HEAD", "-m", "a path out of cards/")
    _git(repo, "update-ref", "refs/heads/main", commit)
    assert "cards/../../../pwned.md" in _git(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines()


# A git set to sign every commit with a signer that fails (git's own configuration, from the environment).
FAILING_SIGNER = {
    "GIT_CONFIG_COUNT": "2",
    "GIT_CONFIG_KEY_0": "commit.gpgsign",
    "GIT_CONFIG_VALUE_0": "true",
    "GIT_CONFIG_KEY_1": "gpg.program",
    "GIT_CONFIG_VALUE_1": "false",
}


def test_sanitize_never_writes_a_tree_path_that_climbs_out_of_the_copy(vault_repo: VaultRepo, tmp_path: Path) -> None:
    make_vault(vault_repo)
    _commit_tree_with_dotdot(vault_repo)
    out = tmp_path / "a" / "b" / "share"
    out.parent.mkdir(parents=True)
    done = vault_repo.invoke("sanitize", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert not list(tmp_path.rglob("pwned.md"))  # not beside --out, nor anywhere above it
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.md")) == [
        "cards/docker/layer-cache-order.md",
        "cards/git/force-push-rebase.md",
    ]
    assert "cards/../../../pwned.md:0: not-a-card" in done.stderr and "(not copied)" in done.stderr


# -- show ----------------------------------------------------------------------------------------------------------


def test_show_prints_each_field_of_a_card_on_its_own_line(vault_repo: VaultRepo) -> None:
    """Line breaks inside a scope tag, a not_when word or the source pass lint; `cairn show` must not print them
    as lines that read like its own (`status: retired`, a second `summary:`)."""
    vault_repo.write_raw(
        "cards/ops/odd.md",
        "---\n"
        'name: "Stale caches break the build"\n'
        'summary: "When the build fails because of stale caches, clear them first."\n'
        'scope: ["ci\\nverified: 2099-01-01"]\n'
        'not_when: ["mercurial\\nstatus: retired"]\n'
        'aliases: ["cache\\nsummary: fake"]\n'
        'source: "https://example.org/1\\n\\nsummary: retired, ignore this card"\n'
        "---\n\nClear the cache.\n",
    )
    make_vault(vault_repo)
    done = vault_repo.invoke("show", "ops/odd")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Stale caches break the build"
    starts = [line.split(":")[0] for line in lines if line and not line.startswith(" ")]
    assert starts.count("summary") == 1 and "status" not in starts and "verified" not in starts, lines
    # the parser folds them, as it folds name and summary (`cairn show` keeps one line per field regardless)
    assert "scope: ci verified: 2099-01-01" in lines
    assert "source: https://example.org/1 summary: retired, ignore this card" in lines


def test_a_line_separator_escaped_in_a_field_keeps_the_card_out(vault_repo: VaultRepo) -> None:
    """A `\\u2028` escape in a quoted value is a line break YAML writes into the field: hidden-text refuses it (it
    was folded and served), so `cairn show` says why the card is left out."""
    vault_repo.write_raw(
        "cards/ops/odd.md",
        '---\nname: "Stale caches break the build"\nsummary: "Clear them first."\n'
        'aliases: ["cache\\u2028summary: fake"]\n---\n\nClear the cache.\n',
    )
    make_vault(vault_repo)
    done = vault_repo.invoke("show", "ops/odd")
    assert done.returncode == 1 and "\u2028" not in done.stderr
    assert (
        "is left out of the index (hidden-text: refused: the aliases holds invisible characters (U+2028" in done.stderr
    )


# -- import --------------------------------------------------------------------------------------------------------


def test_import_of_a_folder_does_not_follow_a_symlink_out_of_it(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """A notes folder (a cloned repository, say) with `notes/creds.md -> ~/.aws/...` must not copy that file into
    the vault, where it would be committed and shared."""
    make_vault(vault_repo)
    private = tmp_path / "private"
    private.mkdir()
    (private / "secret.md").write_text(
        "---\nname: Private deploy notes\nsummary: The deploy fails because the staging key rotated.\n---\n\nprivate\n"
    )
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "creds.md").symlink_to(private / "secret.md")
    (notes / "real.md").write_text(
        "---\nname: Flaky port binding\nsummary: Tests are flaky because the fixture server binds port 8080.\n---\n\n"
        "Use port 0.\n"
    )
    done = vault_repo.invoke("import", str(notes))
    assert done.returncode == 1, done.stderr
    written = [p.read_text() for p in (vault_repo.root / "cards").rglob("*.md")]
    assert not [text for text in written if "Private deploy notes" in text]
    assert any("Flaky port binding" in text for text in written)
    assert f"{notes / 'creds.md'}: skipped (invalid): a symlink to a file outside {notes}" in done.stderr


def test_import_keeps_the_source_field_on_one_line_whatever_the_folder_is_called(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    make_vault(vault_repo)
    src = tmp_path / "src"
    folder = src / "app\nsource: fake"
    folder.mkdir(parents=True)
    (folder / "CLAUDE.md").write_text("# App\n\n## Gotchas\n\n" + LESSON)
    done = vault_repo.invoke("import", str(src), "--lessons")
    assert done.returncode == 0, done.stderr
    [card] = (vault_repo.root / "cards" / "lessons").glob("*.md")
    meta = yaml.safe_load(card.read_text().split("---\n")[1])
    assert meta["source"] == "app?source: fake/CLAUDE.md:5"
    assert invoke_cli(["lint", str(card)], cwd=vault_repo.root).returncode == 0


# -- add -----------------------------------------------------------------------------------------------------------


def _add(repo: VaultRepo, *args: str, input: bytes | None = None) -> subprocess.CompletedProcess[str]:
    name, summary = "Stale caches break CI", "Clear the cache when CI fails."
    return repo.invoke("add", "--name", name, "--summary", summary, *args, input=input)


def test_add_with_a_body_file_that_is_not_utf8_is_one_line(vault_repo: VaultRepo, tmp_path: Path) -> None:
    make_vault(vault_repo)
    body = tmp_path / "body.md"
    body.write_bytes(b"caf\xe9 au lait\n")
    done = _add(vault_repo, "--body-file", str(body))
    assert done.returncode == 1
    assert _one_error_line(done.stderr) == f"Error: {body} is not UTF-8 text; save it as UTF-8 (nothing was written)"
    stdin = _add(vault_repo, "--body-file", "-", input=b"\xff\xfe body")
    assert _one_error_line(stdin.stderr) == "Error: stdin is not UTF-8 text; save it as UTF-8 (nothing was written)"
    assert sorted(p.name for p in (vault_repo.root / "cards").rglob("*.md")) == [
        "force-push-rebase.md",
        "layer-cache-order.md",
    ]


def test_add_reads_no_more_of_an_endless_body_file_than_a_card_may_hold(vault_repo: VaultRepo) -> None:
    """`--body-file -` fed from /dev/zero is refused once past the card limit, not read until memory runs out: the
    child's memory is capped well above the limit and far below what it would take."""
    make_vault(vault_repo)

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    with open("/dev/zero", "rb") as endless:
        done = subprocess.run(
            [cairn_executable(), "add", "--name", "Endless", "--summary", "Cache.", "--body-file", "-"],
            cwd=vault_repo.root,
            stdin=endless,
            capture_output=True,
            text=True,
            env=dict(os.environ),
            preexec_fn=cap,
            timeout=120,
        )
    assert done.returncode == 1
    assert _one_error_line(done.stderr) == "Error: stdin is over 1 MiB; a card must be under 1 MiB"


def test_a_body_file_that_is_a_fifo_or_a_device_is_a_usage_error(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: `cairn add --body-file PIPE`, a named FIFO no one writes to, waited for a writer for ever, and
    `--body-file /dev/zero` read a mebibyte first; each is now one line and exit 2 at once, as `--project PIPE` is.
    What the shell passes as a descriptor (`<(command)`, `/dev/fd/N`) is still read."""
    make_vault(vault_repo)
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    for given, kind in ((str(pipe), "a FIFO"), ("/dev/zero", "a device")):
        done = run_cairn("add", "--name", "Piped", "--summary", "Cache.", "--body-file", given, cwd=vault_repo.root)
        assert (done.returncode, done.stdout) == (2, ""), done
        assert done.stderr.endswith(
            f"Error: Invalid value for '--body-file': {given!r} is {kind}, not a regular file\n"
        )
    read, write = os.pipe()
    os.write(write, b"The body, from a pipe.\n")
    os.close(write)
    try:
        done = subprocess.run(
            [cairn_executable(), "add", "--name", "Piped", "--summary", "Cache.", "--body-file", f"/dev/fd/{read}"],
            cwd=vault_repo.root,
            capture_output=True,
            text=True,
            pass_fds=(read,),
            timeout=120,
        )
    finally:
        os.close(read)
    assert done.returncode == 0, done.stderr
    assert "The body, from a pipe." in (vault_repo.root / "cards" / "piped.md").read_text("utf-8")


def test_add_past_a_file_size_limit_says_to_raise_it_and_writes_nothing(vault_repo: VaultRepo) -> None:
    """Bug fixed: under a file size limit (`ulimit -f`) `cairn add` and `cairn import` said "File too large in
    cards/ci/; check that you can write there", sending the user to a folder's mode; the line names the limit."""
    make_vault(vault_repo)
    body = "The nightly build failed for a week until someone cleared the runner's cache."
    add = ["add", "--name", "Stale caches break CI", "--summary", "Clear the cache when CI fails."]
    done = run_cairn_within(resource.RLIMIT_FSIZE, 0, *add, "--scope", "ci", "--body", body, cwd=vault_repo.root)
    assert done.returncode == 1
    line = _one_error_line(done.stderr)
    assert "File too large in cards/ci/; a file size limit (`ulimit -f`) stopped the write: raise it" in line, line
    assert not (vault_repo.root / "cards" / "ci").exists() or not list((vault_repo.root / "cards" / "ci").iterdir())
    again = _add(vault_repo, "--scope", "ci", "--body", body)
    assert again.returncode == 0, again.stderr


# -- init ----------------------------------------------------------------------------------------------------------


def test_init_that_cannot_make_its_first_commit_leaves_nothing_behind(tmp_path: Path) -> None:
    """A git set to sign every commit with a signer that fails: one line with git's reason, and no half-made vault
    that a second `cairn init` would call "not empty" (nor an empty folder that was given stays anything but empty)."""
    signing = FAILING_SIGNER
    target = tmp_path / "deep" / "lessons"
    done = invoke_cli(["init", str(target), "--no-register"], env=signing)
    assert done.returncode == 1
    line = _one_error_line(done.stderr)
    assert "gpg failed to sign" in line and "nothing was kept" in line, line
    assert not (tmp_path / "deep").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert invoke_cli(["init", str(empty), "--no-register"], env=signing).returncode == 1
    assert empty.is_dir() and not list(empty.iterdir())
    again = invoke_cli(["init", str(target), "--no-register"])
    assert again.returncode == 0, again.stderr


def test_init_fills_the_clone_of_an_empty_repository_and_keeps_its_git_on_failure(tmp_path: Path) -> None:
    """Bug fixed: a team makes an empty repository on its forge, clones it, and runs `cairn init` there: it said
    "not empty" (the clone's .git). The vault now goes into it, its remote kept; a failed first commit removes what
    init wrote but never that .git. A clone with a commit is still refused."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    clone = tmp_path / "lessons"
    subprocess.run(["git", "clone", "-q", str(remote), str(clone)], check=True, capture_output=True)
    failed = invoke_cli(["init", str(clone), "--no-register"], env=FAILING_SIGNER)
    assert failed.returncode == 1 and "gpg failed to sign" in failed.stderr
    assert [p.name for p in clone.iterdir()] == [".git"]
    done = invoke_cli(["init", str(clone), "--no-register"])
    assert done.returncode == 0, done.stderr
    assert (clone / "cairn.toml").is_file()
    git = ["git", "-C", str(clone)]
    origin = subprocess.run([*git, "remote", "get-url", "origin"], capture_output=True, text=True, check=True)
    assert origin.stdout.strip() == str(remote)
    log = subprocess.run([*git, "log", "--format=%s"], capture_output=True, text=True, check=True)
    assert log.stdout.splitlines() == ["Start a Cairn vault from the template"]
    subprocess.run([*git, "push", "-q", "origin", "HEAD"], check=True, capture_output=True)
    again = tmp_path / "again"
    subprocess.run(["git", "clone", "-q", str(remote), str(again)], check=True, capture_output=True)
    (again / "cairn.toml").unlink()
    subprocess.run(["git", "-C", str(again), "commit", "-qam", "no config"], check=True, capture_output=True)
    for child in again.iterdir():
        if child.name != ".git":
            subprocess.run(["git", "-C", str(again), "rm", "-rq", child.name], check=True)
    subprocess.run(["git", "-C", str(again), "commit", "-qm", "empty tree"], check=True, capture_output=True)
    refused = invoke_cli(["init", str(again), "--no-register"])
    assert refused.returncode == 1 and "is not empty" in refused.stderr


def test_init_in_an_empty_sha256_repository_refuses_it_before_any_commit(tmp_path: Path) -> None:
    """Bug fixed: `cairn init` in an empty repository made by `git init --object-format=sha256` said "git could not
    make the vault's first commit (Failed to parse reference information ...); nothing was kept", when git had made
    that commit: the repository was left with a commit and every template file deleted from its work tree. It is
    now refused before anything is written, and a new vault under GIT_DEFAULT_HASH=sha256 is made as sha1, the only
    format Cairn reads."""
    clone = tmp_path / "lessons"
    subprocess.run(["git", "init", "-q", "--object-format=sha256", str(clone)], check=True)
    done = run_cairn("init", str(clone), "--no-register", cwd=tmp_path)
    assert done.returncode == 1
    line = _one_error_line(done.stderr)
    assert f"{clone} names its objects by sha256" in line and "nothing was kept" in line, line
    assert [p.name for p in clone.iterdir()] == [".git"]
    head = subprocess.run(["git", "-C", str(clone), "rev-parse", "-q", "--verify", "HEAD"], capture_output=True)
    assert head.returncode != 0, head.stdout  # no commit was made
    fresh = tmp_path / "fresh"
    made = run_cairn("init", str(fresh), "--no-register", cwd=tmp_path, env={"GIT_DEFAULT_HASH": "sha256"})
    assert made.returncode == 0, made.stderr
    listed = run_cairn("list", cwd=fresh, env={"GIT_DEFAULT_HASH": "sha256"})
    assert listed.returncode == 0 and "git/force-push-safely" in listed.stdout, listed.stderr


def test_init_fills_the_clone_of_an_empty_repository_named_by_a_relative_path(tmp_path: Path) -> None:
    """Bug fixed: `git clone team.git team-lessons && cairn init team-lessons` said "team-lessons is not empty" (git
    was asked for team-lessons/team-lessons/.git); the same folder by its full path worked."""
    remote = tmp_path / "team.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    subprocess.run(["git", "clone", "-q", "team.git", "team-lessons"], cwd=tmp_path, check=True, capture_output=True)
    done = run_cairn("init", "team-lessons", "--no-register", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "team-lessons" / "cairn.toml").is_file()


def test_init_past_a_file_size_limit_is_one_short_line_and_leaves_nothing(tmp_path: Path) -> None:
    """A full disk or a file size limit (`ulimit -f`) while the template is copied: the error was Python's list of
    every file that failed (source, destination and error each, 5,000 characters on one line), with nothing to do."""
    target = tmp_path / "lessons"
    done = run_cairn_within(resource.RLIMIT_FSIZE, 2048, "init", str(target), "--no-register", cwd=tmp_path)
    assert done.returncode == 1
    line = _one_error_line(done.stderr)
    assert len(line) < 250 + 3 * len(str(target)) and "File too large" in line and "ulimit -f" in line, line
    assert "nothing was kept" in line and "[(" not in line, line
    assert not target.exists()


def test_demo_that_cannot_make_its_first_commit_says_to_run_demo_again(tmp_path: Path) -> None:
    """The demo makes its vault with init's code, whose failure said "then run `cairn init` again"."""
    signing = FAILING_SIGNER
    done = run_cairn("demo", cwd=tmp_path, env=signing)
    assert done.returncode == 1
    line = _one_error_line(done.stderr)
    assert "gpg failed to sign" in line and "then run `cairn demo` again" in line and "cairn init" not in line, line


def test_init_says_the_vault_was_made_when_only_its_index_failed(tmp_path: Path) -> None:
    blocker = tmp_path / "cache-is-a-file"
    blocker.write_text("")
    target = tmp_path / "lessons"
    done = invoke_cli(["init", str(target), "--no-register"], env={"CAIRN_CACHE_DIR": str(blocker / "cache")})
    assert done.returncode == 1
    line = _one_error_line(done.stderr)
    assert line.startswith(f"Error: the vault at {target} was created and committed, but not indexed: "), line
    assert line.endswith(f"fix that, then run `cairn index --vault {target}`"), line
    assert (target / "cairn.toml").is_file() and (target / ".git" / "hooks" / "post-commit").is_file()
    assert "Next:" in done.stdout


def test_init_on_a_file_says_it_is_a_file(tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("mine\n")
    done = invoke_cli(["init", str(target), "--no-register"])
    assert done.returncode == 1
    assert (
        _one_error_line(done.stderr)
        == f"Error: {target} is a file, not a folder; choose a new folder (nothing was written)"
    )
    assert target.read_text() == "mine\n"


def test_import_of_files_whose_names_are_not_utf8(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """A lesson file in a folder whose name is not UTF-8 gets a readable `source`; a note named by such a file
    (no name, no heading) is refused for its name, not for YAML Cairn wrote itself."""
    make_vault(vault_repo)
    src = tmp_path / "src"
    folder = src / os.fsdecode(b"app\xff")
    folder.mkdir(parents=True)
    (folder / "CLAUDE.md").write_text("# App\n\n## Gotchas\n\n" + LESSON)
    (src / os.fsdecode(b"caf\xe9.md")).write_text("The deploy fails because the staging key rotated.\n")
    done = vault_repo.invoke("import", str(src))
    assert done.returncode == 1
    [card] = (vault_repo.root / "cards" / "lessons").glob("*.md")
    assert yaml.safe_load(card.read_text().split("---\n")[1])["source"] == "app?/CLAUDE.md:5"
    assert f"{src}/caf?.md: skipped (invalid): the file name is not UTF-8 text" in done.stderr
    assert "not valid YAML" not in done.stderr


def test_import_of_a_named_note_whose_file_name_mixes_another_script_and_bytes_not_utf8(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """A note with its own `name:` is given an id from its file name; one holding Chinese letters and a byte that
    is not UTF-8 made the id's hash raise UnicodeEncodeError, and the whole import stopped with "a bug in Cairn"
    (no card written, not even the others). It is imported under a script tag and a hash, like any such name."""
    make_vault(vault_repo)
    src = tmp_path / "notes"
    src.mkdir()
    note = "---\nname: {}\nsummary: {}\n---\n\nMore detail.\n"
    (src / os.fsdecode("定时任务-".encode() + b"\xff.md")).write_text(
        note.format("Cron jobs run twice on DST day", "Cron jobs run twice or never on a DST change; use UTC."),
        encoding="utf-8",
    )
    (src / "plain.md").write_text(
        note.format("Plain note imported beside it", "The staging deploy fails because its key rotated."),
        encoding="utf-8",
    )
    done = vault_repo.invoke("import", str(src), "--force")
    assert done.returncode == 0, done.stderr
    written = sorted(p.name for p in (vault_repo.root / "cards" / "imported").glob("*.md"))
    assert len(written) == 2 and "plain.md" in written
    assert [name for name in written if name != "plain.md"][0].startswith("zh-")


def test_init_interrupted_mid_way_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C after the template is copied and `git init` ran, before the first commit: the folder goes again."""
    from cairn import gitrepo
    from cairn.cards import authoring

    def interrupted(repo: object, message: str) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(gitrepo, "commit_all", interrupted)
    target = tmp_path / "team" / "lessons"
    with pytest.raises(KeyboardInterrupt):
        authoring.init_vault(target)
    assert not (tmp_path / "team").exists()


def test_messages_about_unusable_input_say_what_to_do(vault_repo: VaultRepo, tmp_path: Path) -> None:
    make_vault(vault_repo)
    empty_name = vault_repo.invoke("add", "--name", " ", "--summary", "Clear the cache when CI fails.", "--body", "x")
    assert empty_name.returncode == 1
    assert _one_error_line(empty_name.stderr) == (
        "Error: cards/card.md was not written: 'name' is empty; fix that and run it again"
    )
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "latin1.md").write_bytes(b"The deploy fails because caf\xe9 rotated the key.\n")
    done = vault_repo.invoke("import", str(notes))
    assert done.returncode == 1
    assert f"{notes / 'latin1.md'}: skipped (invalid): not UTF-8 text; save it as UTF-8 and import it again" in (
        done.stderr
    )


def test_add_refuses_a_card_while_cairn_toml_is_invalid(vault_repo: VaultRepo) -> None:
    """Bug fixed: with a cairn.toml that does not parse, `cairn add` linted the new card against the defaults
    (not the team's policy) and wrote it without a word, where `cairn lint` reports config-invalid."""
    make_vault(vault_repo)
    (vault_repo.root / "cairn.toml").write_text("[lint\nx=\n", encoding="utf-8")
    done = vault_repo.cairn(
        "add",
        "--name",
        "Stash leaves untracked files",
        "--summary",
        "git stash -u takes untracked files along.",
        "--scope",
        "git",
        "--body",
        "I stashed and switched branches; my new files came along.",
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stderr.startswith("Error: cairn.toml:1:") and "nothing was written" in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert not list((vault_repo.root / "cards").rglob("stash*"))


def test_init_of_a_folder_whose_name_starts_with_a_dash(tmp_path: Path) -> None:
    """`cairn init -- -lessons` gave `-lessons` to git init as an option ("specify the hash algorithm to use"), and
    its next steps said `cd -lessons`."""
    done = run_cairn("init", "--no-register", "--", "-lessons", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "-lessons" / "cairn.toml").is_file() and (tmp_path / "-lessons" / ".git").is_dir()
    assert not (tmp_path / ".git").exists()
    # the next steps can be pasted: `cd -lessons` and `cairn vault add -lessons` read the name as an option
    assert "  cd ./-lessons && " in done.stdout and "pre-commit install  " in done.stdout  # its full path off PATH
    assert f"  cairn vault add {tmp_path / '-lessons'} " in done.stdout


def test_inits_next_steps_run_in_order_register_the_vault(tmp_path: Path) -> None:
    """Bug fixed: the steps said `cd 'team lessons' && pre-commit install`, then `cairn vault add 'team lessons'`,
    which, run next in the same shell, named a folder inside the vault: "is not a folder; create one with `cairn
    init .../team lessons/team lessons`"."""
    done = run_cairn("init", "--no-register", "--no-git-hooks", "team lessons", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    steps = [line.split("  #")[0].strip() for line in done.stdout.split("Next:\n", 1)[1].splitlines()]
    into = steps[0].split(" && ")[0]
    between = steps[1 : steps.index(next(s for s in steps if s.startswith("cairn vault add "))) + 1]
    assert into.startswith("cd ") and between[0] == "cairn list", steps  # the example cards, from the vault
    path = f"{Path(cairn_executable()).parent}{os.pathsep}{os.environ['PATH']}"
    script = "\n".join([into, *between])
    ran = subprocess.run(
        ["sh", "-ec", script], cwd=tmp_path, env={**os.environ, "PATH": path}, capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr
    listed = run_cairn("vault", "list", cwd=tmp_path)
    assert str(tmp_path / "team lessons") in listed.stdout, listed.stdout


def test_init_keeps_the_folders_mode_and_makes_the_rest_as_the_umask_says(tmp_path: Path) -> None:
    """Bug fixed: `cairn init` copied the template with the installed package's modes, into the folder it was given
    too: a folder made 0700 became 0755 (open to everyone), and under a umask of 077 every card was 0644."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    done = subprocess.run(
        [cairn_executable(), "init", str(private), "--no-register"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        preexec_fn=lambda: os.umask(0o077),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    made = [private, *(p for p in private.rglob("*") if ".git" not in p.relative_to(private).parts)]
    assert any(p.name == "cairn.toml" for p in made) and any(p.suffix == ".md" for p in made)
    assert {oct(p.stat().st_mode & 0o777) for p in made if p.is_dir()} == {oct(0o700)}
    assert {oct(p.stat().st_mode & 0o777) for p in made if p.is_file()} == {oct(0o600)}


def test_init_on_a_dangling_symlink_says_where_it_points(tmp_path: Path) -> None:
    """A symlink to a folder not made yet (a drive not mounted): it was "Error: File exists (lessons)"."""
    link = tmp_path / "lessons"
    link.symlink_to(tmp_path / "missing")
    done = run_cairn("init", "--no-register", str(link), cwd=tmp_path)
    assert done.returncode == 1
    assert _one_error_line(done.stderr) == (
        f"Error: {link} is a symlink to {tmp_path / 'missing'}, which does not exist; make that folder or choose a "
        "new one (nothing was written)"
    )
    assert link.is_symlink() and not (tmp_path / "missing").exists()


def test_init_on_symlinks_that_loop_says_no_folder_can_be_made_there(tmp_path: Path) -> None:
    """Bug fixed: `lessons -> other -> lessons` was "a symlink to other, which does not exist; make that folder", but
    `other` exists (a symlink), and no folder can be made there."""
    link, other = tmp_path / "lessons", tmp_path / "other"
    link.symlink_to(other)
    other.symlink_to(link)
    done = run_cairn("init", "--no-register", str(link), cwd=tmp_path)
    assert done.returncode == 1
    assert _one_error_line(done.stderr) == (
        f"Error: {link} is a symlink to {other}, itself a symlink that leads to no folder (a loop, or a chain whose "
        "last link is missing); point it at a folder or choose a new one (nothing was written)"
    )
    assert link.is_symlink() and other.is_symlink()


def test_add_with_text_that_is_not_utf8_names_the_field(vault_repo: VaultRepo) -> None:
    """A terminal set to Latin-1 sends `café` as `caf\\xe9`: the card was refused for "the frontmatter is not valid
    YAML: found invalid Unicode character escape code", YAML Cairn wrote itself."""
    make_vault(vault_repo)
    summary = "The deploy fails because the signing key rotated; fetch the new key first."
    name = os.fsdecode(b"Caf\xe9 deploys fail")
    done = vault_repo.cairn("add", "--name", name, "--summary", summary, "--body", "Seen twice.")
    assert done.returncode == 1
    assert _one_error_line(done.stderr) == (
        "Error: cards/caf-deploys-fail.md was not written: its name is not UTF-8 text (a terminal set to another "
        "encoding?); give it in UTF-8 and run it again"
    )
    body = os.fsdecode(b"Seen twice in caf\xe9.")
    done = vault_repo.cairn("add", "--name", "Deploys fail", "--summary", summary, "--scope", "ops", "--body", body)
    assert done.returncode == 1
    assert _one_error_line(done.stderr) == (
        "Error: cards/ops/deploys-fail.md was not written: its body is not UTF-8 text (a terminal set to another "
        "encoding?); give it in UTF-8 and run it again"
    )
    assert vault_repo.git("status", "--porcelain") == ""


def test_add_import_and_sanitize_on_a_full_disk_say_to_free_space(
    vault_repo: VaultRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk under the vault or the copy said to "check that you can write there" (add, import) or to "choose
    a folder you can write to" (sanitize): the folder was writable, and no permission would have helped."""
    make_vault(vault_repo)
    notes = tmp_path / "CLAUDE.md"
    notes.write_text("# Gotchas\n\n" + LESSON, encoding="utf-8")

    def full_disk(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(tempfile, "mkstemp", full_disk)
    monkeypatch.setattr(tempfile, "mkdtemp", full_disk)
    summary = "The deploy fails because the signing key rotated; fetch the new key first."
    added = vault_repo.invoke("add", "--name", "Deploys fail", "--summary", summary, "--scope", "ops", "--body", "x")
    assert _one_error_line(added.stderr) == (
        "Error: cards/ops/deploys-fail.md could not be written: No space left on device in cards/ops/; free some "
        "space on that disk, then run this again (nothing was written)"
    )
    imported = vault_repo.invoke("import", str(notes))
    assert imported.returncode == 1
    assert "No space left on device in cards/" in imported.stderr
    assert "free some space on that disk, then run this again" in imported.stderr
    out = tmp_path / "copy"
    copied = vault_repo.invoke("sanitize", "--out", str(out))
    assert _one_error_line(copied.stderr) == (
        f"Error: {out}: the copy could not be written there (No space left on device); free some space on that disk, "
        "then run this again (nothing was written)"
    )
    assert vault_repo.git("status", "--porcelain") == "" and not out.exists()


@pytest.mark.parametrize("day", ["2026-02-30", "soon", "20261201"])
def test_a_cairn_today_that_is_no_day_is_an_error_and_nothing_is_written(
    vault_repo: VaultRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, day: str
) -> None:
    """Bug fixed: `cairn add`, `init` and `import` dated cards by the clock when `$CAIRN_TODAY` named no day, where
    lint and review refuse it: the cards were dated unlike the day lint then judged them as of."""
    make_vault(vault_repo)
    before = sorted(p.name for p in (vault_repo.root / "cards").rglob("*.md"))
    monkeypatch.setenv("CAIRN_TODAY", day)
    expected = f"Error: $CAIRN_TODAY is '{day}', not a day; set it to YYYY-MM-DD, or unset it"
    added = vault_repo.invoke("add", "--name", "Deploys fail", "--summary", "The key rotated.", "--scope", "ops")
    assert (added.returncode, _one_error_line(added.stderr)) == (1, expected)
    made = invoke_cli(["init", str(tmp_path / "new")], cwd=tmp_path)
    assert (made.returncode, _one_error_line(made.stderr)) == (1, expected)
    assert not (tmp_path / "new").exists()
    notes = tmp_path / "CLAUDE.md"
    notes.write_text("# Gotchas\n\n" + LESSON, encoding="utf-8")
    imported = vault_repo.invoke("import", str(notes))
    assert imported.returncode == 1 and expected in imported.stderr
    assert sorted(p.name for p in (vault_repo.root / "cards").rglob("*.md")) == before
