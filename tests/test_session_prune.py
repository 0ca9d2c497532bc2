"""Pruning old agent sessions never costs the prompt that finds it due: the hook starts a detached process for it
and lists nothing itself (`cairn.hot.session.prune`). Seen from inside a real hook run through Python's audit
events, and in the files the detached process removes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from cairn import install
from cairn.hot import session as sessions
from helpers.payloads import FITTING_PROMPT, claude_payload
from helpers.vaults import REBASE_ID, VaultRepo, make_vault, state_dir

OLD = time.time() - 40 * 86400  # past the default session_ttl_days (14)

# The hook's own `main`, in a process that records every folder it lists and every process it starts.
AUDITED_HOOK = """
import json, sys
seen = []
def audit(event, args):
    if event in ("os.listdir", "os.scandir"):
        seen.append([event, str(args[0])])
    elif event == "os.posix_spawn":
        seen.append([event, [str(a) for a in args[1]]])
sys.addaudithook(audit)
from cairn.hot.hook import main
status = main(sys.argv[2:])
sys.stdout.flush()
with open(sys.argv[1], "w") as out:
    out.write(json.dumps(seen))
"""


def _audited_hook(vault: VaultRepo, record: Path) -> tuple[subprocess.CompletedProcess[str], list[list[object]]]:
    payload = json.dumps(claude_payload(FITTING_PROMPT, vault.root, "a-new-session"))
    args = [sys.executable, "-c", AUDITED_HOOK, str(record), "--format", "claude-code", "--vault", str(vault.root)]
    done = subprocess.run(args, input=payload, capture_output=True, text=True, cwd=vault.root, timeout=60, check=False)
    assert done.returncode == 0 and done.stderr == "", done
    return done, json.loads(record.read_text())


def _stale_and_fresh(folder: Path) -> tuple[list[Path], list[Path]]:
    folder.mkdir(parents=True, exist_ok=True)
    stale = [folder / f"{'a' * 31}{i}{suffix}" for i in range(3) for suffix in (".json", ".lock")]
    stale.append(folder / f"{'b' * 32}.json.123.cafe.tmp")
    fresh = [folder / f"{'c' * 32}.json", folder / f"{'c' * 32}.lock", folder / "notes-of-mine.txt"]
    for path in stale + fresh:
        path.write_text("{}")
    for path in [*stale, fresh[-1]]:  # an old file whose name is no session's is kept too
        os.utime(path, (OLD, OLD))
    return stale, fresh


def _wait_until_gone(paths: list[Path], limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while any(path.exists() for path in paths) and time.monotonic() < deadline:
        time.sleep(0.05)


def test_prune_folder_deletes_only_old_session_files(tmp_path: Path) -> None:
    stale, fresh = _stale_and_fresh(tmp_path / "sessions")
    assert sessions.prune_folder(str(tmp_path / "sessions"), time.time() - 14 * 86400) == 3
    assert [path for path in stale if path.exists()] == []
    assert all(path.exists() for path in fresh)


def test_the_hook_lists_no_session_folder_and_a_detached_process_prunes_it(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    make_vault(vault_repo)
    folder = state_dir() / "sessions"
    stale, fresh = _stale_and_fresh(folder)
    done, seen = _audited_hook(vault_repo, tmp_path / "first.json")
    assert REBASE_ID in done.stdout  # the prompt got its card
    listed = [path for event, path in seen if event in ("os.listdir", "os.scandir")]
    assert str(folder) not in listed  # the prompt's own process never walks the sessions
    started = [argv for event, argv in seen if event == "os.posix_spawn" and isinstance(argv, list)]
    assert len(started) == 1 and sessions.PRUNE_CODE in started[0] and str(folder) in started[0]
    _wait_until_gone(stale)
    assert [path for path in stale if path.exists()] == []
    assert all(path.exists() for path in fresh)

    _, seen = _audited_hook(vault_repo, tmp_path / "second.json")  # pruned a moment ago: not due again
    assert [event for event, _ in seen if event == "os.posix_spawn"] == []


def test_the_pruner_never_imports_the_agents_folder_through_pythonpath(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: the pruner starts in the agent's folder (the hook's), with the hook's environment: a PYTHONPATH
    with an empty entry (`:/x`) made its interpreter import that folder's `encodings/` at start, so the project's code
    ran and the sessions were never pruned. It now starts isolated (`-I`), as the hook's launcher does."""
    make_vault(vault_repo)
    stale, _ = _stale_and_fresh(state_dir() / "sessions")
    project = tmp_path / "project"
    (project / "encodings").mkdir(parents=True)
    marker = tmp_path / "the-project-ran"
    (project / "encodings" / "__init__.py").write_text(f"import posix\nposix.mkdir({str(marker)!r})\n")
    done = subprocess.run(
        [*install.hook_launcher(), "hook", "--format", "claude-code", "--vault", str(vault_repo.root)],
        input=json.dumps(claude_payload(FITTING_PROMPT, project, "a-new-session")),
        capture_output=True,
        text=True,
        cwd=project,
        env={**os.environ, "PYTHONPATH": ":/opt/elsewhere"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and REBASE_ID in done.stdout, done.stderr
    _wait_until_gone(stale)
    assert [path for path in stale if path.exists()] == []
    assert not marker.exists()


def test_prune_is_due_again_only_after_hours(tmp_path: Path) -> None:
    state = str(tmp_path / "state")
    stale, _ = _stale_and_fresh(tmp_path / "state" / "sessions")
    assert sessions.prune(state, 14) is True
    assert sessions.prune(state, 14) is False  # the stamp was touched before the pruner started
    _wait_until_gone(stale)
    assert [path for path in stale if path.exists()] == []


def test_a_prune_stamp_from_the_future_does_not_hold_pruning_off(tmp_path: Path) -> None:
    """The clock set back after a prune (NTP, a VM restored): its stamp's time is ahead of now, and no session was
    pruned until the clock caught up with it."""
    state = str(tmp_path / "state")
    stale, _ = _stale_and_fresh(tmp_path / "state" / "sessions")
    stamp = tmp_path / "state" / "sessions" / ".pruned"
    stamp.touch()
    ahead = time.time() + 30 * 86400
    os.utime(stamp, (ahead, ahead))
    assert sessions.prune(state, 14) is True
    _wait_until_gone(stale)
    assert [path for path in stale if path.exists()] == []


def test_a_long_lived_process_collects_the_pruners_it_started(tmp_path: Path) -> None:
    """The MCP server serves prompts for days: each pruner it started stayed a zombie until the server ended. The
    next prompt it serves now collects every pruner that has ended."""
    state = str(tmp_path / "state")
    stale, _ = _stale_and_fresh(tmp_path / "state" / "sessions")
    assert sessions.prune(state, 14) is True
    pid = sessions._PRUNERS[-1]
    _wait_until_gone(stale)
    stat = Path(f"/proc/{pid}/stat")
    deadline = time.monotonic() + 60
    while stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z" and time.monotonic() < deadline:
        time.sleep(0.05)  # the pruner has ended: a zombie until its parent collects it
    assert stat.exists(), "the pruner was collected before prune could"
    assert sessions.prune(state, 14) is False  # not due again; it collects the ended pruner all the same
    assert pid not in sessions._PRUNERS
    assert not stat.exists()


def test_a_session_in_use_keeps_its_lock_file(tmp_path: Path) -> None:
    """Pruning judges a file by its last change, and a lock file is never written: an active session whose lock file
    was made more than `session_ttl_days` ago had it deleted while a hook held it, and a second hook of the session
    then locked a new file and went on at the same time. Taking the lock now marks the file used."""
    state = str(tmp_path / "state")
    with sessions.open_session(state, "a long session"):
        pass
    [lock] = (tmp_path / "state" / "sessions").glob("*.lock")
    os.utime(lock, (OLD, OLD))
    with sessions.open_session(state, "a long session"):
        assert lock.stat().st_mtime > time.time() - 60
        sessions.prune_folder(str(lock.parent), time.time() - 14 * 86400)
        assert lock.exists()


def test_a_session_still_prompting_keeps_what_it_was_given(tmp_path: Path) -> None:
    """A session's record is written only when it gets a card; its lock is touched at every prompt. A session that
    prompted every day but got no new card for `session_ttl_days` had its record pruned, and was given again every
    card it already had."""
    state = str(tmp_path / "state")
    with sessions.open_session(state, "a long session") as session:
        session.record([REBASE_ID], "/vault", "c" * 40)
    [record] = (tmp_path / "state" / "sessions").glob("*.json")
    os.utime(record, (OLD, OLD))
    with sessions.open_session(state, "a long session"):  # today's prompt, which got no new card
        pass
    sessions.prune_folder(str(record.parent), time.time() - 14 * 86400)
    with sessions.open_session(state, "a long session") as session:
        assert REBASE_ID in session.injected
