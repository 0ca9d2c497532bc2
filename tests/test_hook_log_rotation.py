"""The hook log's rotation under concurrent hooks: real processes append at once just as hook.jsonl falls due to
become hook.jsonl.1, and no line is lost, no rotated file overwritten, no error raised into the prompt.

Moving the log by name, two hooks that found it full both moved it: the second moved the first one's new hook.jsonl
onto hook.jsonl.1, and the whole rotated log was gone (3 rounds in 400 lost theirs, 8 writers on a loaded machine)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cairn.hot import hook as hook_module
from cairn.hot.session import session_key
from helpers.payloads import FITTING_PROMPT, claude_payload
from helpers.vaults import REBASE_ID, VaultRepo, cairn_executable, make_vault, state_dir

MAX = 16 * 1024  # the writers' MAX_LOG_BYTES: a rotation every round without writing 32 MiB each time
WRITERS = 8
ROUNDS = 100
PER_ROUND = 3

# One writer: the hook's own `append_log`, with a small MAX_LOG_BYTES; each line on stdin names the state folder of
# a round, and every writer is sent it at once.
WRITER = """
import sys
from cairn.hot import hook
hook.MAX_LOG_BYTES = int(sys.argv[1])
for line in sys.stdin:
    for n in range(int(sys.argv[3])):
        hook.append_log(line.strip(), {"writer": sys.argv[2], "n": n, "pad": "x" * 100})
    sys.stdout.write("done\\n")
    sys.stdout.flush()
"""


def _full_log(state: Path, size: int) -> set[tuple[str, int]]:
    """hook.jsonl holding `size` bytes or a little more of numbered lines: its next write rotates it."""
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    lines: list[str] = []
    written = 0
    while written < size:
        lines.append(json.dumps({"writer": "before", "n": len(lines), "pad": "y" * 200}) + "\n")
        written += len(lines[-1])
    (state / "hook.jsonl").write_text("".join(lines))
    return {("before", n) for n in range(len(lines))}


def _logged(state: Path) -> list[dict[str, object]]:
    entries = []
    for name in ("hook.jsonl.1", "hook.jsonl"):
        path = state / name
        if path.exists():
            entries += [json.loads(line) for line in path.read_text().splitlines()]  # whole lines, none interleaved
    return entries


def test_concurrent_writers_rotating_at_once_lose_no_line(tmp_path: Path) -> None:
    states = [tmp_path / f"state-{r}" for r in range(ROUNDS)]
    expected = [_full_log(state, MAX) for state in states]
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(MAX), f"w{w}", str(PER_ROUND)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WRITERS)
    ]
    try:
        for state in states:
            for writer in writers:
                assert writer.stdin is not None
                writer.stdin.write(f"{state}\n")
                writer.stdin.flush()
            for writer in writers:
                assert writer.stdout is not None and writer.stdout.readline() == "done\n"
    finally:
        errors = []
        for writer in writers:
            assert writer.stdin is not None and writer.stdout is not None and writer.stderr is not None
            writer.stdin.close()
            errors.append(writer.stderr.read())
            writer.wait(timeout=60)
            writer.stdout.close()
            writer.stderr.close()
    assert errors == [""] * WRITERS and [writer.returncode for writer in writers] == [0] * WRITERS
    for state, before in zip(states, expected, strict=True):
        got = [(str(e["writer"]), int(str(e["n"]))) for e in _logged(state)]
        wanted = before | {(f"w{w}", n) for w in range(WRITERS) for n in range(PER_ROUND)}
        assert sorted(got) == sorted(wanted), state  # every line once: the rotated log kept, nothing written twice
        assert (state / "hook.jsonl.1").stat().st_size >= MAX  # one rotation, of the full log


HOLDER = """
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
os.lockf(fd, os.F_LOCK, 0)
print("held", flush=True)
sys.stdin.read()
"""


def test_a_hook_finding_the_rotation_under_way_writes_into_the_moving_file_without_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another hook holds the full log's lock (it is moving it): this one neither waits nor moves it too; its line
    goes into that file, whichever name it ends up with."""
    monkeypatch.setattr(hook_module, "MAX_LOG_BYTES", MAX)
    state = tmp_path / "state"
    before = _full_log(state, MAX)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(state / "hook.jsonl")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        hook_module.append_log(str(state), {"writer": "this", "n": 0})
    finally:
        holder.communicate(timeout=60)
    assert not (state / "hook.jsonl.1").exists()
    assert {(str(e["writer"]), int(str(e["n"]))) for e in _logged(state)} == before | {("this", 0)}
    hook_module.append_log(str(state), {"writer": "this", "n": 1})  # the lock free again: this hook rotates
    assert (state / "hook.jsonl").read_text().count("\n") == 1
    assert len(_logged(state)) == len(before) + 2


def test_real_hooks_at_once_on_a_full_log_serve_their_prompts_and_lose_no_line(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    state = state_dir()
    before = _full_log(state, hook_module.MAX_LOG_BYTES)
    args = [cairn_executable(), "hook", "--format", "claude-code", "--vault", str(vault_repo.root)]
    hooks = [
        subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=vault_repo.root,
            env=os.environ,
        )
        for _ in range(6)
    ]
    payloads = [json.dumps(claude_payload(FITTING_PROMPT, vault_repo.root, f"s{i}")) for i in range(6)]
    outputs = [h.communicate(payload, timeout=120) for h, payload in zip(hooks, payloads, strict=True)]
    assert [h.returncode for h in hooks] == [0] * 6
    assert all(REBASE_ID in out and err == "" for out, err in outputs)
    entries = _logged(state)
    assert {("before", int(str(e["n"]))) for e in entries if e.get("writer") == "before"} == before
    assert sorted(str(e["session"]) for e in entries if "session" in e) == sorted(
        session_key(f"s{i}") for i in range(6)
    )
