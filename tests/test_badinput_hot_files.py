"""The files the hook opens besides its index are checked, not trusted: a FIFO, a device or a symlink in place of the
hook log, a session file, a stamp, a git ref or the user configuration never blocks the prompt, is never read
without bound, and is never written through.

Each case runs the installed `cairn hook` as an agent does, with a timeout: a hook that blocks fails the test."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from helpers.payloads import FITTING_PROMPT, claude_payload, log_entries
from helpers.vaults import VaultRepo, cache_dir, cairn_executable, make_vault, state_dir

SESSION = "session-files"
HOOK_TIMEOUT = 20  # seconds; a hook normally answers in well under one


def _hook(
    vault: VaultRepo, *, vault_arg: str | None = None, env: dict[str, str] | None = None, session: str = SESSION
) -> subprocess.CompletedProcess[str]:
    payload = json.dumps(claude_payload(FITTING_PROMPT, vault.root, session))
    args = [cairn_executable(), "hook", "--format", "claude-code"]
    args += ["--vault", vault_arg if vault_arg is not None else str(vault.root)]
    return subprocess.run(
        args,
        input=payload,
        capture_output=True,
        text=True,
        cwd=vault.root,
        env={**os.environ, **(env or {})},
        timeout=HOOK_TIMEOUT,
        check=False,
    )


def _served(vault: VaultRepo) -> None:
    make_vault(vault)
    done = _hook(vault)  # the session, the log and their folders exist: the hook has served once
    assert done.returncode == 0 and "force-push" in done.stdout, done


def _session_file(suffix: str) -> Path:
    key = hashlib.sha256(SESSION.encode()).hexdigest()[:32]
    return state_dir() / "sessions" / f"{key}{suffix}"


def _stale(vault: VaultRepo) -> None:
    """The served branch moves on without the index: the hook serves nothing and starts a background index."""
    tree = vault.git("rev-parse", "HEAD^{tree}")
    commit = vault.git("commit-tree", "-p", "HEAD", "-m", "moved on", tree)
    vault.git("update-ref", "refs/heads/main", commit)


def _index_folder() -> Path:
    (found,) = cache_dir().rglob("index.cairn")
    return found.parent


def _fifo(path: Path, old: bool = False) -> None:
    if path.is_symlink() or path.exists():
        path.unlink()
    os.mkfifo(path, 0o600)
    if old:
        os.utime(path, (0, 0))


def test_a_fifo_in_place_of_the_hook_log_never_blocks(vault_repo: VaultRepo) -> None:
    _served(vault_repo)
    _fifo(state_dir() / "hook.jsonl")
    done = _hook(vault_repo, session="another")
    assert done.returncode == 0
    assert "force-push" in done.stdout  # the prompt is served; only the log line is lost
    assert "cannot write the hook log" in done.stderr


def test_the_hook_log_is_never_written_through_a_symlink(vault_repo: VaultRepo, tmp_path: Path) -> None:
    _served(vault_repo)
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("a user's file\n")
    log = state_dir() / "hook.jsonl"
    log.unlink()
    log.symlink_to(elsewhere)
    done = _hook(vault_repo, session="another")
    assert done.returncode == 0 and "force-push" in done.stdout
    assert elsewhere.read_text() == "a user's file\n"
    assert "cannot write the hook log" in done.stderr


@pytest.mark.parametrize("kind", ["folder", "symlink"])
def test_a_hook_log_in_the_way_is_named_not_its_folder(vault_repo: VaultRepo, tmp_path: Path, kind: str) -> None:
    """Bug fixed: with a folder (or a dangling link) in place of hook.jsonl, the hook's line on stderr said to "make
    STATE a folder you can write", which it was. It now names the log to move away; once moved, the log is kept."""
    _served(vault_repo)
    log = state_dir() / "hook.jsonl"
    log.unlink()
    if kind == "folder":
        log.mkdir()
    else:
        log.symlink_to(tmp_path / "gone.jsonl")
    done = _hook(vault_repo, session="another")
    assert done.returncode == 0 and "force-push" in done.stdout
    assert done.stderr.startswith("cairn hook: cannot write the hook log: ")
    assert done.stderr.endswith(
        f"; move {log} away (the hook starts a new log), or set CAIRN_STATE_DIR to another folder\n"
    ), done.stderr
    log.rename(tmp_path / "moved-away")
    again = _hook(vault_repo, session="a third")
    assert (again.returncode, again.stderr) == (0, "") and len(log_entries()) == 1


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_a_session_file_that_is_not_a_file_never_blocks(vault_repo: VaultRepo, kind: str) -> None:
    _served(vault_repo)
    session = _session_file(".json")
    session.unlink()
    if kind == "fifo":
        _fifo(session)
    elif kind == "device":
        session.symlink_to("/dev/zero")  # read whole, it never ends
    else:
        session.mkdir()
    started = time.monotonic()
    done = _hook(vault_repo)
    assert time.monotonic() - started < HOOK_TIMEOUT
    assert done.returncode == 0 and done.stderr == ""
    assert log_entries()[-1]["prompt_sha256"]  # the prompt was logged (by its hash)


def test_a_session_file_nested_past_the_parser_reads_as_a_new_session(vault_repo: VaultRepo) -> None:
    """Bug fixed (found while fuzzing the hook's readers): a damaged session file reads as a new session, but one nested
    thousands deep (`[[[...`) raised RecursionError from the JSON parser, past the check for a file that does not parse:
    the hook logged it, and the card the session had not been given was not served."""
    _served(vault_repo)
    _session_file(".json").write_text("[" * 100_000)
    done = _hook(vault_repo)
    assert done.returncode == 0 and done.stderr == "" and "force-push" in done.stdout  # a new session: served again
    assert log_entries()[-1]["error"] is None


def test_a_session_lock_is_never_created_through_a_symlink(vault_repo: VaultRepo, tmp_path: Path) -> None:
    _served(vault_repo)
    lock = _session_file(".lock")
    lock.unlink()
    target = tmp_path / "made-by-the-hook"
    lock.symlink_to(target)
    done = _hook(vault_repo)
    assert done.returncode == 0 and "force-push" in done.stdout  # served, without the once-a-session rule
    assert not target.exists()
    assert "the session cannot be kept" in log_entries()[-1]["error"]


def test_a_session_folder_that_cannot_be_written_still_serves_the_cards(vault_repo: VaultRepo) -> None:
    """A state folder whose sessions cannot be kept (here a file where the sessions folder goes; a folder the user
    cannot write does the same) cost every prompt its cards: the session raised, and the hook served nothing. The
    cards are served without the once-a-session rule, and the log says why."""
    make_vault(vault_repo)
    sessions = state_dir() / "sessions"
    state_dir().mkdir(parents=True, exist_ok=True)
    sessions.write_text("not a folder")
    for _ in range(2):
        done = _hook(vault_repo)
        assert done.returncode == 0 and done.stderr == "" and "force-push" in done.stdout
        entry = log_entries()[-1]
        assert entry["injected"] and "the session cannot be kept" in entry["error"]


def test_a_fifo_as_the_reindex_stamp_never_blocks(vault_repo: VaultRepo) -> None:
    _served(vault_repo)
    _stale(vault_repo)
    _fifo(_index_folder() / "index.cairn.reindex", old=True)
    done = _hook(vault_repo)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    (line,) = log_entries()[-1]["vaults"]
    assert line["error"]


def test_the_reindex_stamp_is_never_created_through_a_symlink(vault_repo: VaultRepo, tmp_path: Path) -> None:
    _served(vault_repo)
    _stale(vault_repo)
    target = tmp_path / "made-by-the-hook"
    stamp = _index_folder() / "index.cairn.reindex"
    if stamp.exists():
        stamp.unlink()
    stamp.symlink_to(target)
    done = _hook(vault_repo)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert not target.exists()
    (line,) = log_entries()[-1]["vaults"]
    assert line["error"]


def test_a_fifo_as_the_sessions_prune_stamp_never_blocks(vault_repo: VaultRepo) -> None:
    _served(vault_repo)
    _fifo(state_dir() / "sessions" / ".pruned", old=True)
    done = _hook(vault_repo)
    assert done.returncode == 0 and done.stderr == ""
    assert log_entries()[-1]["error"] is None


@pytest.mark.parametrize("ref", ["HEAD", "refs/heads/main"])
def test_a_git_file_that_is_not_a_file_never_blocks(vault_repo: VaultRepo, ref: str) -> None:
    """The vault's own `.git` is read by the hook (the served ref): a FIFO or a device there is not read."""
    _served(vault_repo)
    git_file = vault_repo.root / ".git" / ref
    git_file.unlink()
    if ref == "HEAD":
        git_file.symlink_to("/dev/zero")
    else:
        _fifo(git_file)
    started = time.monotonic()
    done = _hook(vault_repo)
    assert time.monotonic() - started < HOOK_TIMEOUT
    assert done.returncode == 0 and done.stderr == ""
    assert log_entries()[-1]["prompt_sha256"]


def test_the_index_the_hook_starts_never_waits_on_a_fifo_ref(vault_repo: VaultRepo) -> None:
    """The hook refuses a FIFO as the served branch's ref file and starts `cairn index` in the background, which
    asked gitpython for the ref: it opened the FIFO and waited forever, one more process every 30 s of prompts. Now
    `cairn index` refuses the file in one line, and the background index ends."""
    _served(vault_repo)
    ref = vault_repo.root / ".git" / "refs" / "heads" / "main"
    ref.unlink()
    _fifo(ref)
    done = subprocess.run(
        [cairn_executable(), "index"], cwd=vault_repo.root, capture_output=True, text=True, timeout=HOOK_TIMEOUT
    )
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done
    assert done.stderr.startswith(f"Error: {ref} is not a regular file"), done.stderr
    assert _hook(vault_repo).returncode == 0
    deadline = time.monotonic() + HOOK_TIMEOUT
    while _background_indexes(vault_repo) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _background_indexes(vault_repo)


def _background_indexes(vault: VaultRepo) -> list[str]:
    """The command lines of running `cairn index --vault VAULT` processes (Linux's /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"index" in args and str(vault.root).encode() in args:
            found.append(" ".join(a.decode(errors="replace") for a in args))
    return found


@pytest.mark.parametrize("which", ["config", "cached copy"])
def test_a_fifo_as_the_user_configuration_never_blocks(vault_repo: VaultRepo, tmp_path: Path, which: str) -> None:
    _served(vault_repo)
    config = tmp_path / "config.toml"
    env = {"CAIRN_CONFIG": str(config)}
    added = vault_repo.cairn("vault", "add", str(vault_repo.root), "--name", "team", env=env)
    assert added.returncode == 0, added.stderr
    served = _hook(vault_repo, vault_arg="team", env=env, session="another")  # the configuration's copy is made
    assert "team:" in served.stdout, served
    if which == "config":
        _fifo(config)
    else:
        (copy,) = (state_dir() / "config").glob("*.json")
        _fifo(copy)
    for vault_arg in ("team", str(vault_repo.root)):
        done = _hook(vault_repo, vault_arg=vault_arg, env=env)
        assert done.returncode == 0 and done.stderr == ""
        assert log_entries()[-1]["prompt_sha256"]


def test_a_cached_copy_of_the_configuration_nested_past_the_parser_is_made_again(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed (found while fuzzing the hook's readers): a damaged cached copy of the user configuration is made again
    from the TOML, but one nested thousands deep raised RecursionError from the JSON parser: every prompt served nothing
    from the configured vaults until the copy was deleted by hand."""
    _served(vault_repo)
    config = tmp_path / "config.toml"
    env = {"CAIRN_CONFIG": str(config)}
    added = vault_repo.cairn("vault", "add", str(vault_repo.root), "--name", "team", env=env)
    assert added.returncode == 0, added.stderr
    assert "team:" in _hook(vault_repo, vault_arg="team", env=env, session="another").stdout  # the copy is made
    (copy,) = (state_dir() / "config").glob("*.json")
    copy.write_text("[" * 100_000)
    done = _hook(vault_repo, vault_arg="team", env=env)
    assert done.returncode == 0 and done.stderr == "" and "team:" in done.stdout
    assert log_entries()[-1]["error"] is None
    assert json.loads(copy.read_text())["data"]["vaults"][0]["name"] == "team"  # made again from the TOML


def test_lint_never_passes_a_card_read_through_a_symlinked_folder(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """`cairn lint FILE` reads a file the snapshot does not hold from the disk: one reached through a symlinked
    folder lives outside the vault (the index never reads it: the commit holds a symlink), so it is a finding, not
    a clean card."""
    make_vault(vault_repo)
    outside = tmp_path / "outside" / "topic"
    outside.mkdir(parents=True)
    (outside / "secret.md").write_text(
        '---\nname: "Outside card about kettles"\nsummary: "This file lives outside the vault; lint read it."\n---\n\nb\n'
    )
    (vault_repo.root / "cards" / "linked").symlink_to(outside)
    done = vault_repo.cairn("lint", "cards/linked/secret.md")
    assert done.returncode == 1, done
    assert "cards/linked/secret.md:0: file-symlink" in done.stdout


def test_a_full_log_that_cannot_rotate_stops_growing(vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    """hook.jsonl past its size moves to hook.jsonl.1; with a folder in that place the move failed silently and the
    log grew without bound. Past twice the size it is no longer written (the documented stderr line says so); the
    prompt is served as ever."""
    from cairn.hot import hook as hook_module

    monkeypatch.setattr(hook_module, "MAX_LOG_BYTES", 1000)
    state = state_dir()
    state.mkdir(parents=True, exist_ok=True)
    (state / "hook.jsonl.1").mkdir()
    (state / "hook.jsonl.1" / "keep").write_text("a file, so the folder is not empty")
    log = state / "hook.jsonl"
    log.write_text("x" * 1500 + "\n")
    hook_module.append_log(str(state), {"n": 1})  # over the size, under twice it: still written
    assert log.stat().st_size > 1500
    log.write_text("x" * 2500 + "\n")
    with pytest.raises(OSError, match="cannot be moved"):
        hook_module.append_log(str(state), {"n": 2})
    assert log.stat().st_size == 2501
