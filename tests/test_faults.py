"""Faults: truncated cache and state files, a full disk, a read-only state dir, odd git states; clean degradation."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.hostile import assert_clean_exit, run_bytes
from helpers.payloads import FITTING_PROMPT as FITTING
from helpers.payloads import log_entries
from helpers.vaults import VaultRepo, cache_dir, make_vault, state_dir

CARD = "git/force-push-rebase"


def _index_file() -> Path:
    files = list(cache_dir().rglob("index.cairn"))
    assert len(files) == 1
    return files[0]


def _hook(repo: VaultRepo, env: dict[str, str] | None = None, session: str = "s") -> subprocess.CompletedProcess[bytes]:
    payload = json.dumps({"session_id": session, "cwd": str(repo.root), "prompt": FITTING}).encode()
    env = {"CAIRN_VAULT": str(repo.root), **(env or {})}  # the hook serves only a vault it is given
    return run_bytes(["hook", "--format", "claude-code"], payload, repo.root, env=env, timeout=60)


@pytest.mark.parametrize("fraction", (0.0, 0.01, 0.15, 0.5, 0.9))
def test_truncated_index(vault_repo: VaultRepo, fraction: float) -> None:
    make_vault(vault_repo)
    index = _index_file()
    data = index.read_bytes()
    index.write_bytes(data[: int(len(data) * fraction)])
    audit = vault_repo.cairn("audit")
    assert_clean_exit(audit, 1)  # any cut: the file is shorter than its header says
    assert f"run `cairn index --vault {vault_repo.root}`" in audit.stdout
    hooked = _hook(vault_repo)
    assert (hooked.returncode, hooked.stdout) == (0, b"")
    error = log_entries()[-1]["error"]
    assert error.startswith("IndexCorrupt: ") and ("truncated" in error or "not a Cairn index" in error), error
    shown = vault_repo.cairn("show", CARD)  # readers rebuild a damaged index
    assert_clean_exit(shown, 0)
    assert vault_repo.cairn("audit").returncode == 0


def test_truncated_session_file_reads_as_a_new_session(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    assert _hook(vault_repo).stdout  # injected once
    (session_file,) = (state_dir() / "sessions").glob("*.json")
    session_file.write_bytes(session_file.read_bytes()[:17])
    again = _hook(vault_repo)
    assert again.returncode == 0 and b"Traceback" not in again.stderr
    json.loads(session_file.read_text("utf-8"))  # rewritten whole
    log = state_dir() / "hook.jsonl"
    log.write_bytes(log.read_bytes()[:-25])  # a log line cut mid-write
    audit = vault_repo.cairn("audit")
    assert_clean_exit(audit, 0, 1)
    assert _hook(vault_repo).returncode == 0


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs that is nearly full (needs root and mount); skipped elsewhere."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        (mount / "filler").write_bytes(b"\0" * 56 * 1024)
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_full_disk_for_the_cache(vault_repo: VaultRepo, tiny_disk: Path) -> None:
    """Bug fixed: `cairn index`, `show` and `recall` were sqlite3.OperationalError tracebacks on a full disk."""
    make_vault(vault_repo)
    env = {"CAIRN_CACHE_DIR": str(tiny_disk / "cache")}
    for args in (("index",), ("show", CARD), ("recall", FITTING)):
        done = vault_repo.cairn(*args, env=env)
        assert_clean_exit(done, 1)
        assert "disk has space" in done.stderr and "CAIRN_CACHE_DIR" in done.stderr
    # Bug fixed: it said "then run `cairn index`", which from another folder (`cairn sync` runs anywhere) finds no
    # vault, or another
    elsewhere = vault_repo.cairn("index", "--vault", str(vault_repo.root), env=env, cwd=tiny_disk)
    assert_clean_exit(elsewhere, 1)
    assert elsewhere.stderr.rstrip().endswith("then run this again"), elsewhere.stderr
    assert not [p for p in (tiny_disk / "cache").rglob("*.tmp")]  # no half-written temp file left behind
    assert (_hook(vault_repo, env=env).returncode, _hook(vault_repo, env=env).stdout) == (0, b"")


def test_full_disk_for_the_state(vault_repo: VaultRepo, tiny_disk: Path) -> None:
    make_vault(vault_repo)
    (tiny_disk / "state").mkdir()
    (tiny_disk / "more").write_bytes(b"\0" * 8 * 1024)  # nothing left
    env = {"CAIRN_STATE_DIR": str(tiny_disk / "state")}
    hooked = _hook(vault_repo, env=env)
    assert hooked.returncode == 0 and b"cannot write the hook log" in hooked.stderr
    done = vault_repo.cairn("recall", FITTING, "--session", "s", env=env)
    assert_clean_exit(done, 1)
    assert "disk is full" in done.stderr


def test_a_session_file_is_never_replaced_by_the_part_a_nearly_full_disk_took(
    vault_repo: VaultRepo, tiny_disk: Path
) -> None:
    """Bug fixed: with one page free, the hook's write of a longer session file wrote its first 4 KiB and put that
    cut file in place of the whole one: every card the session had been given was given again."""
    make_vault(vault_repo)
    env = {"CAIRN_STATE_DIR": str(tiny_disk / "state")}
    assert _hook(vault_repo, env=env).stdout
    (session_file,) = (tiny_disk / "state" / "sessions").glob("*.json")
    data = json.loads(session_file.read_text("utf-8"))
    data["injected"] = {f"x:other/card-{i}": {"commit": "0" * 40, "vault": str(vault_repo.root)} for i in range(60)}
    whole = json.dumps(data).encode()
    assert len(whole) > 8192
    (tiny_disk / "filler").unlink()  # room for it
    session_file.write_bytes(whole)
    free = os.statvfs(tiny_disk)
    (tiny_disk / "more").write_bytes(b"\0" * (free.f_bavail * free.f_frsize - 4096))  # one page left
    assert _hook(vault_repo, env=env).returncode == 0
    kept = json.loads(session_file.read_text("utf-8"))  # whole: the old file (a new one would not fit)
    assert set(kept["injected"]) == set(data["injected"])


def test_full_disk_for_a_project_names_no_cairn_folder(vault_repo: VaultRepo, tiny_disk: Path) -> None:
    """Bug fixed: `cairn install codex --project DIR` on a full disk said to "point CAIRN_CACHE_DIR /
    CAIRN_STATE_DIR at another disk", which moves nothing of the project's; that advice is for Cairn's own folders."""
    make_vault(vault_repo)
    project = tiny_disk / "project"
    project.mkdir()
    (tiny_disk / "more").write_bytes(b"\0" * 8 * 1024)  # nothing left
    done = vault_repo.cairn("install", "codex", "--project", str(project), "--vault", str(vault_repo.root))
    assert_clean_exit(done, 1)
    assert "disk is full; free some space there, then run this again" in done.stderr
    assert "CAIRN_" not in done.stderr
    assert not (project / ".codex" / "hooks.json").exists()


@pytest.mark.parametrize("where", ("a-file", "/dev/full", "/dev/null"))
def test_state_and_cache_where_a_folder_cannot_be(vault_repo: VaultRepo, tmp_path: Path, where: str) -> None:
    make_vault(vault_repo)
    if where == "a-file":
        blocker = tmp_path / "a-file"
        blocker.write_text("keep")
        where = str(blocker)
    env = {"CAIRN_STATE_DIR": where, "CAIRN_CACHE_DIR": where}
    hooked = _hook(vault_repo, env=env)
    assert (hooked.returncode, hooked.stdout) == (0, b"")
    for args in (("index",), ("recall", FITTING, "--session", "s")):
        done = vault_repo.cairn(*args, env=env)
        assert_clean_exit(done, 1)
        assert done.stderr.startswith("Error: ")


def test_read_only_state_dir(vault_repo: VaultRepo, tmp_path: Path) -> None:
    make_vault(vault_repo)
    ro = tmp_path / "ro-state"
    ro.mkdir()
    mounted = False
    if os.geteuid() == 0:
        mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=16k", "tmpfs", str(ro)], capture_output=True)
        if mount.returncode != 0:
            pytest.skip("root cannot be refused by file modes, and tmpfs cannot be mounted here")
        mounted = True
    else:
        ro.chmod(0o555)
    try:
        env = {"CAIRN_STATE_DIR": str(ro)}
        hooked = _hook(vault_repo, env=env)
        # no session can be kept and no log written (a line on stderr): the prompt still gets its card
        assert hooked.returncode == 0 and b"force-push" in hooked.stdout
        assert b"cannot write the hook log" in hooked.stderr
        done = vault_repo.cairn("recall", FITTING, "--session", "s", env=env)
        assert_clean_exit(done, 1)
        assert "read-only" in done.stderr or "permission denied" in done.stderr
        assert vault_repo.cairn("recall", FITTING, env=env).returncode == 0  # without a session it needs no state
        assert_clean_exit(vault_repo.cairn("audit", env=env), 0)
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(ro)], check=False)
        else:
            ro.chmod(0o755)


COMMANDS = [("index",), ("show", CARD), ("lint",), ("audit",), ("recall", FITTING), ("explain", FITTING)]


def test_detached_head(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    vault_repo.git("checkout", "-q", "--detach", "HEAD")
    for args in COMMANDS:
        assert_clean_exit(vault_repo.cairn(*args), 0)
    assert _hook(vault_repo).stdout


def test_a_vault_with_no_main_or_master_says_it_serves_what_is_checked_out(vault_repo: VaultRepo) -> None:
    """A repository whose branches are develop and a feature branch: with no origin/HEAD, main or master, the vault
    serves the branch checked out, an unreviewed one too. `vault add` said nothing and doctor said "ok"; both now
    name it and how to serve the reviewed branch."""
    make_vault(vault_repo)
    vault_repo.git("branch", "-m", "main", "develop")
    vault_repo.git("checkout", "-q", "-b", "feature/unreviewed")
    added = vault_repo.cairn("vault", "add", str(vault_repo.root), "--name", "team")
    assert added.returncode == 0, added.stderr
    assert "has no main or master branch and no origin/HEAD, so it serves the branch checked out, " in added.stderr
    assert "feature/unreviewed: a checkout of an unreviewed branch would serve its cards" in added.stderr
    assert f"name the reviewed branch (`cairn vault add {vault_repo.root} --name team --ref BRANCH --replace`" in (
        added.stderr
    )
    doctor = vault_repo.cairn("doctor", "--json")
    [ref] = [c for c in json.loads(doctor.stdout)["checks"] if c["area"] == "ref"]
    assert ref["ok"] is False and "a checkout of an unreviewed branch would serve its cards" in ref["detail"]
    indexed = vault_repo.cairn("index")
    assert indexed.returncode == 0 and "a checkout of an unreviewed branch would serve its cards" in indexed.stderr
    assert vault_repo.cairn("vault", "remove", "team").returncode == 0
    named = vault_repo.cairn("vault", "add", str(vault_repo.root), "--name", "team", "--ref", "develop")
    assert "unreviewed" not in named.stdout
    doctor = vault_repo.cairn("doctor", "--json")
    [ref] = [c for c in json.loads(doctor.stdout)["checks"] if c["area"] == "ref"]
    assert ref["ok"] is True and ref["detail"].startswith("serves refs/heads/develop at ")


def test_unborn_head(vault_repo: VaultRepo) -> None:
    vault_repo.write(CARD, "Rebase lesson", "git pull --rebase after a force-push drops local commits")
    for args in COMMANDS:
        done = vault_repo.cairn(*args)
        assert_clean_exit(done, 0, 1)
        if done.returncode:
            assert "no commits yet" in done.stdout + done.stderr and "git commit" in done.stdout + done.stderr
    assert vault_repo.cairn("lint").returncode == 0
    assert vault_repo.cairn("show", "--worktree", CARD).returncode == 0
    assert (_hook(vault_repo).returncode, _hook(vault_repo).stdout) == (0, b"")


def test_a_partial_clone_whose_remote_is_gone_says_so_in_one_line(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: in a partial clone (`git clone --filter=blob:none`), a fetched commit's new cards are read from the
    remote when indexed; with the remote unreachable, `cairn index`, `list` and `review` stopped with "unexpected
    GitCommandError ... (a bug in Cairn)". They say what is wrong in one line (review: exit 2, it did not run)."""
    make_vault(vault_repo)
    vault_repo.git("config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "partial"
    subprocess.run(["git", "clone", "-q", "--filter=blob:none", f"file://{vault_repo.root}", str(clone)], check=True)
    vault_repo.write("git/second", "Second lesson", "tags are not pushed by default; use git push --follow-tags")
    vault_repo.commit("Second card")
    subprocess.run(["git", "-C", str(clone), "fetch", "-q"], check=True)
    vault_repo.root.rename(tmp_path / "gone")
    partial = VaultRepo.__new__(VaultRepo)
    partial.root = clone
    for args, code in ((("index",), 1), (("list",), 1), (("review", "main..origin/main"), 2)):
        done = partial.cairn(*args)
        assert_clean_exit(done, code)
        assert done.stderr.startswith(f"Error: {clone} is a partial clone (`git clone --filter`) and git could not ")
        assert done.stderr.endswith(
            f"make the remote reachable (`git -C {clone} remote -v` names it), then run this again\n"
        )


def test_an_indexed_partial_clone_whose_remote_is_gone_says_so_in_one_line(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed: in a partial clone indexed before, a fetched commit that removes a card and adds another is read
    through paths the first build's card listing does not cover (the incremental update's blob sizes, the rename
    detection of review and of provenance's `git log -M`, which a fresh clone's first build runs over a removed
    card's blob too); with the remote unreachable, `cairn index`, `show` and `review` stopped with "unexpected
    GitCommandError ... (a bug in Cairn)". They say what is wrong in one line, as the card listing does."""
    make_vault(vault_repo)
    vault_repo.git("config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "partial"
    subprocess.run(["git", "clone", "-q", "--filter=blob:none", f"file://{vault_repo.root}", str(clone)], check=True)
    partial = VaultRepo.__new__(VaultRepo)
    partial.root = clone
    assert_clean_exit(partial.cairn("index"), 0)
    vault_repo.git("rm", "-q", "cards/docker/layer-cache-order.md")
    vault_repo.write("git/second", "Second lesson", "tags are not pushed by default; use git push --follow-tags")
    vault_repo.commit("Second card, one card removed")
    subprocess.run(["git", "-C", str(clone), "fetch", "-q"], check=True)
    # cloned now, it holds the blobs of the new commit's cards only: the removed card's is the remote's
    fresh = VaultRepo.__new__(VaultRepo)
    fresh.root = tmp_path / "fresh"
    subprocess.run(
        ["git", "clone", "-q", "--filter=blob:none", f"file://{vault_repo.root}", str(fresh.root)], check=True
    )
    vault_repo.root.rename(tmp_path / "gone")
    for repo, args, code in (
        (partial, ("index",), 1),
        (partial, ("show", CARD), 1),
        (partial, ("review", "main..origin/main"), 2),
        (fresh, ("index",), 1),
    ):
        done = repo.cairn(*args)
        assert_clean_exit(done, code)
        assert done.stderr.startswith(f"Error: {repo.root} is a partial clone (`git clone --filter`) and git could not")


def test_shallow_clone_says_history_is_cut(vault_repo: VaultRepo, tmp_path: Path) -> None:
    make_vault(vault_repo)
    vault_repo.write("git/second", "Second lesson", "tags are not pushed by default; use git push --follow-tags")
    vault_repo.commit("Second card")
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{vault_repo.root}", str(clone)], check=True)
    shallow = VaultRepo.__new__(VaultRepo)
    shallow.root = clone
    for args in COMMANDS:
        assert_clean_exit(shallow.cairn(*args), 0)
    shown = shallow.cairn("show", CARD)
    assert "this clone is shallow" in shown.stdout and f"git -C {shallow.root} fetch --unshallow" in shown.stdout
    assert json.loads(shallow.cairn("show", CARD, "--json").stdout)["provenance"]["shallow"] is True
    assert f"git -C {shallow.root} fetch --unshallow" in shallow.cairn("audit").stdout
    full = vault_repo.cairn("show", CARD, "--json")
    assert "shallow" not in json.loads(full.stdout)["provenance"]
