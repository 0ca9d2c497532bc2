"""The session lock: one recall of a session at a time, across processes (`os.lockf`) and across the threads of one
process (the MCP server serves tools in threads; a record lock alone would let two of them in at once)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cairn.hot import session as sessions


def test_threads_of_one_process_take_turns(tmp_path: Path) -> None:
    """Each thread reads the session, waits, and records one card more: with the threads let in together, cards
    recorded by one are lost when another writes what it read before."""
    state = str(tmp_path / "state")
    inside = 0
    most_inside = 0
    count = threading.Lock()

    def one(n: int) -> None:
        nonlocal inside, most_inside
        with sessions.open_session(state, "one-session") as current:
            with count:
                inside += 1
                most_inside = max(most_inside, inside)
            time.sleep(0.02)
            current.record([f"card-{n}"], "vault", "c0ffee")
            with count:
                inside -= 1

    threads = [threading.Thread(target=one, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert most_inside == 1
    with sessions.open_session(state, "one-session") as current:
        assert sorted(current.injected) == sorted(f"card-{n}" for n in range(8))


HOLDER = """
import sys, time
from cairn.hot import session
with session.open_session(sys.argv[1], "one-session"):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _hold(state: str, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, state, str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_another_process_holding_the_session_makes_this_one_wait(tmp_path: Path) -> None:
    state = str(tmp_path / "state")
    holder = _hold(state, 0.5)
    started = time.monotonic()
    with sessions.open_session(state, "one-session") as current:
        waited = time.monotonic() - started
        current.record(["card"], "vault", "c0ffee")
    holder.communicate(timeout=30)
    assert holder.returncode == 0
    assert waited >= 0.3  # it got in only once the other process let go


def test_a_session_held_too_long_is_busy_and_the_next_recall_gets_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sessions, "_LOCK_WAIT_SECONDS", 0.2)
    state = str(tmp_path / "state")
    holder = _hold(state, 3.0)
    try:
        with pytest.raises(sessions.SessionBusy), sessions.open_session(state, "one-session"):
            pass
    finally:
        holder.kill()
        holder.communicate(timeout=30)
    with sessions.open_session(state, "one-session") as current:  # nothing of the failed try is left held
        assert current.injected == {}
