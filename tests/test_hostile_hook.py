"""Hostile payloads to the installed `cairn hook`: exit 0, nothing or one JSON object on stdout, state stays inside."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.hostile import HOSTILE, run_bytes
from helpers.payloads import FITTING_PROMPT as FITTING
from helpers.payloads import payload_for
from helpers.vaults import VaultRepo, cairn_executable, make_vault, state_dir

SESSION_FILE = re.compile(r"[0-9a-f]{32}\.json")


@pytest.fixture(autouse=True)
def serve_the_vault(vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook serves the test's vault, named by CAIRN_VAULT (it never finds one from the agent's folder)."""
    monkeypatch.setenv("CAIRN_VAULT", str(vault_repo.root))


def _hook(repo: VaultRepo, data: bytes, fmt: str = "claude-code") -> tuple[int, bytes, bytes]:
    done = run_bytes(["hook", "--format", fmt], data, repo.root, timeout=60)  # a hang guard, not a budget
    return done.returncode, done.stdout, done.stderr


def _assert_hook_output(code: int, out: bytes, err: bytes) -> dict[str, object] | None:
    assert code == 0, err
    assert b"Traceback" not in err
    if not out.strip():
        return None
    parsed = json.loads(out)
    assert isinstance(parsed, dict)
    return parsed


def _log() -> list[dict[str, object]]:
    return [json.loads(line) for line in (state_dir() / "hook.jsonl").read_text("utf-8").splitlines()]


@given(data=st.binary(max_size=2048))
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_random_bytes(vault_repo: VaultRepo, data: bytes) -> None:
    if not (vault_repo.root / ".git" / "HEAD").exists() or not vault_repo.git("log", "--oneline", check=False):
        make_vault(vault_repo)
    _assert_hook_output(*_hook(vault_repo, data))


@pytest.mark.parametrize("name", sorted(p.name for p in HOSTILE.glob("hook-*.json")))
@pytest.mark.parametrize("fmt", ("claude-code", "codex", "gemini", "json"))
def test_hostile_payload_files(vault_repo: VaultRepo, name: str, fmt: str) -> None:
    make_vault(vault_repo)
    _assert_hook_output(*_hook(vault_repo, (HOSTILE / name).read_bytes(), fmt))
    entry = _log()[-1]
    assert "prompt" not in entry
    assert entry["prompt_len"] is None or isinstance(entry["prompt_len"], int)


@pytest.mark.parametrize("fmt", ("claude-code", "codex", "gemini", "json"))
def test_a_payload_nested_past_the_parser_is_the_hooks_input_error(vault_repo: VaultRepo, fmt: str) -> None:
    """Bug fixed (found while fuzzing the hook's readers): a payload nested thousands deep raised RecursionError from
    the JSON parser, which the hook logged as an error of its own code (`RecursionError at ...`); it is bad input,
    logged as such."""
    make_vault(vault_repo)
    deep = "[" * 100_000 + "]" * 100_000
    nested = json.dumps({"prompt": FITTING, "session_id": "deep"})[:-1] + f', "x": {deep}}}'
    code, out, err = _hook(vault_repo, nested.encode(), fmt)
    assert (code, out, err) == (0, b"", b"")
    assert _log()[-1]["error"] == "HookInputError: stdin JSON is nested too deeply"


def test_five_megabyte_prompt(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    prompt = (FITTING + " ") * (5 * 1024 * 1024 // (len(FITTING) + 1))
    payload = json.dumps({"session_id": "big", "cwd": str(vault_repo.root), "prompt": prompt}).encode()
    assert len(payload) > 5_000_000
    _assert_hook_output(*_hook(vault_repo, payload))
    code, _, err = _hook(vault_repo, prompt.encode(), fmt="text")
    assert code == 0 and b"Traceback" not in err
    log = (state_dir() / "hook.jsonl").read_text("utf-8")
    assert FITTING not in log and len(log) < 20_000


@pytest.mark.parametrize("fmt", ("claude-code", "codex", "gemini"))
def test_an_input_over_the_limit_is_read_to_its_end(vault_repo: VaultRepo, fmt: str) -> None:
    """Bug fixed: a payload over 8 MiB (a 50 MB pasted log) made the hook exit with its stdin unread, so the agent's
    write of the rest failed with a broken pipe; Codex then reports the hook as failed ("failed to write hook
    stdin") rather than going on without cards. The hook reads the rest, drops it, and serves nothing."""
    make_vault(vault_repo)
    payload = payload_for(fmt, FITTING + " " + "x" * 50_000_000, vault_repo.root).encode()
    hook = subprocess.Popen(
        [cairn_executable(), "hook", "--format", fmt],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=vault_repo.root,
    )
    assert hook.stdin is not None
    hook.stdin.write(payload)  # BrokenPipeError when the hook stops reading early
    hook.stdin.close()
    assert hook.wait(timeout=60) == 0
    assert hook.stdout is not None and hook.stderr is not None
    out, err = hook.stdout.read(), hook.stderr.read()
    hook.stdout.close()
    hook.stderr.close()
    assert (hook.returncode, out, err) == (0, b"", b"")
    assert _log()[-1]["error"] == "HookInputError: stdin is over 8 MiB"


def test_a_stdin_never_closed_fails_open_in_time(vault_repo: VaultRepo) -> None:
    """Bug fixed: the hook read stdin to its end, so an agent (or a wrapper) that wrote the payload and kept the pipe
    open held the prompt until its own timeout killed the hook, and nothing in the log said why. It now stops
    waiting after STDIN_SECONDS, serves nothing and logs it."""
    make_vault(vault_repo)
    hook = subprocess.Popen(
        [cairn_executable(), "hook", "--format", "codex"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=vault_repo.root,
    )
    assert hook.stdin is not None and hook.stdout is not None and hook.stderr is not None
    hook.stdin.write(payload_for("codex", FITTING, vault_repo.root).encode())
    hook.stdin.flush()  # and never closed
    try:
        code = hook.wait(timeout=60)  # a hang guard, not a budget
    finally:
        hook.kill()
        hook.stdin.close()
        out, err = hook.stdout.read(), hook.stderr.read()
        hook.stdout.close()
        hook.stderr.close()
    assert (code, out, err) == (0, b"", b"")
    assert str(_log()[-1]["error"]).startswith("HookInputError: stdin was not closed within 5 s")


HOSTILE_SESSIONS = ["../../x", "/etc/passwd", "a\u0000b", "x" * 10_000, "..", "sessions/../../escape", "\ud800"]


def test_session_ids_never_become_paths(vault_repo: VaultRepo, tmp_path: Path) -> None:
    make_vault(vault_repo)
    before = {p for p in tmp_path.rglob("*") if state_dir() not in p.parents}
    for session in HOSTILE_SESSIONS:
        payload = json.dumps({"session_id": session, "cwd": str(vault_repo.root), "prompt": FITTING}).encode()
        first = _assert_hook_output(*_hook(vault_repo, payload))
        again = _assert_hook_output(*_hook(vault_repo, payload))
        assert first is not None, session  # the card fits
        assert again is None, session  # ... and the same session never gets it twice
    names = sorted(p.name for p in (state_dir() / "sessions").iterdir() if p.suffix == ".json")
    assert len(names) == len(HOSTILE_SESSIONS) and all(SESSION_FILE.fullmatch(n) for n in names)
    after = {p for p in tmp_path.rglob("*") if state_dir() not in p.parents}
    assert {p for p in after - before if ".git" not in p.parts} == set()
    assert not Path("/x.json").exists() and not (vault_repo.root.parent / "x").exists()
    for line in _log():
        assert line["session"] is None or re.fullmatch(r"[0-9a-f]{32}", str(line["session"]))


def test_card_escapes_never_reach_the_agent(vault_repo: VaultRepo) -> None:
    vault_repo.write_raw("cards/git/escape-card.md", (HOSTILE / "escape-card.md").read_bytes())
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.commit()
    assert vault_repo.invoke("index").returncode == 0
    payload = json.dumps({"session_id": "s", "prompt": "force push rebase summary lesson"}).encode()
    out = _assert_hook_output(*_hook(vault_repo, payload))  # None when the index refuses the card (hidden text)
    context = json.dumps(out, ensure_ascii=False)
    text = run_bytes(["hook", "--format", "text"], b"force push rebase summary lesson", vault_repo.root).stdout
    assert not any(ch in context + text.decode("utf-8", "replace") for ch in "\x1b\x07\x9b")


def test_hook_with_a_state_dir_env_that_is_hostile(vault_repo: VaultRepo, tmp_path: Path) -> None:
    make_vault(vault_repo)
    payload = json.dumps({"session_id": "s", "prompt": FITTING}).encode()
    for state in ("", "relative/state", "/dev/null", "/dev/full"):
        done = run_bytes(["hook", "--format", "claude-code"], payload, vault_repo.root, env={"CAIRN_STATE_DIR": state})
        _assert_hook_output(done.returncode, done.stdout, done.stderr)
    assert os.path.exists("/dev/null") and Path("/dev/null").is_char_device()
