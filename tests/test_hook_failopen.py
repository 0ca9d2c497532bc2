"""The hook fails open: whatever is wrong, exit 0, nothing on stdout, the error in the log (never exit 2)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from helpers.payloads import FITTING_PROMPT, log_entries, payload_for
from helpers.vaults import VaultRepo, cairn_executable, make_vault, state_dir

BAD_INPUTS = {
    "bad-json": b'{"prompt": "force-push rebase", ',
    "empty": b"",
    "whitespace": b"  \n\t ",
    "binary": b"\x00\x01\x02git rebase\xff\xfe",
    "not-utf8": b'{"prompt": "caf\xe9 rebase"}',
    "array": b'["git", "rebase"]',
    "no-prompt": b'{"session_id": "s", "cwd": "."}',
    "prompt-not-text": b'{"prompt": 42, "session_id": "s"}',
}


@pytest.fixture(autouse=True)
def serve_the_vault(vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook serves the test's vault, named by CAIRN_VAULT (it never finds one from the agent's folder)."""
    monkeypatch.setenv("CAIRN_VAULT", str(vault_repo.root))


def hook_bytes(repo: VaultRepo, fmt: str, data: bytes) -> subprocess.CompletedProcess[bytes]:
    """Run the hook with exactly these bytes on stdin (VaultRepo.cairn would decode them as text)."""
    return subprocess.run(
        [cairn_executable(), "hook", "--format", fmt],
        input=data,
        capture_output=True,
        cwd=repo.root,
        env=dict(os.environ),
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize("fmt", ("claude-code", "codex", "gemini", "json"))
@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_stdin_fails_open(vault_repo: VaultRepo, fmt: str, case: str) -> None:
    make_vault(vault_repo)
    done = hook_bytes(vault_repo, fmt, BAD_INPUTS[case])
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    entry = log_entries()[-1]
    assert entry["error"]
    assert entry["injected"] == []


@pytest.mark.parametrize("fmt", ("text", "claude-code"))
def test_stdin_holding_a_nul_is_refused_as_binary_though_it_is_utf8(vault_repo: VaultRepo, fmt: str) -> None:
    """A NUL is valid UTF-8, and a text prompt holding one would otherwise fit a card: the hook takes stdin with a NUL
    as binary, not as a prompt, and says so in the log rather than what the JSON parser makes of it."""
    make_vault(vault_repo)
    payload = payload_for(fmt, FITTING_PROMPT, vault_repo.root).encode()
    done = hook_bytes(vault_repo, fmt, payload[:20] + b"\x00" + payload[20:])
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    entry = log_entries()[-1]
    assert entry["error"] == "HookInputError: stdin is binary (holds NUL bytes)"
    assert entry["injected"] == []


@pytest.mark.parametrize("fmt", ("claude-code", "codex"))
def test_a_payload_after_a_byte_order_mark_is_served(vault_repo: VaultRepo, fmt: str) -> None:
    """A UTF-8 byte-order mark before the JSON (a wrapper script, a Windows editor) was "stdin is not JSON": the
    prompt got nothing. It is not part of the input."""
    make_vault(vault_repo)
    payload = payload_for(fmt, FITTING_PROMPT, vault_repo.root).encode()
    done = hook_bytes(vault_repo, fmt, b"\xef\xbb\xbf" + payload)
    assert done.returncode == 0 and b"force-push" in done.stdout, done.stderr
    assert log_entries()[-1]["error"] is None


def test_a_cwd_holding_a_nul_is_taken_as_none_given(vault_repo: VaultRepo) -> None:
    """A `cwd` with a NUL in it (no path can hold one) raised ValueError in realpath: no card for the prompt."""
    import json

    make_vault(vault_repo)
    payload = json.loads(payload_for("claude-code", FITTING_PROMPT, vault_repo.root))
    payload["cwd"] = str(vault_repo.root) + "\0/elsewhere"
    done = hook_bytes(vault_repo, "claude-code", json.dumps(payload).encode())
    assert done.returncode == 0 and b"force-push" in done.stdout, done.stderr
    assert log_entries()[-1]["error"] is None


def test_a_cwd_holding_a_lone_surrogate_is_taken_as_none_given(vault_repo: VaultRepo) -> None:
    """Bug fixed: a `cwd` with a lone UTF-16 surrogate (`"\\ud800"` in the JSON: no path's bytes) raised
    UnicodeEncodeError in realpath: no card for the prompt."""
    make_vault(vault_repo)
    payload = payload_for("claude-code", FITTING_PROMPT, vault_repo.root)
    payload = payload.replace(f'"cwd": "{vault_repo.root}', f'"cwd": "{vault_repo.root}/\\ud800')
    assert "\\ud800" in payload
    done = hook_bytes(vault_repo, "claude-code", payload.encode())
    assert done.returncode == 0 and b"force-push" in done.stdout, done.stderr
    assert log_entries()[-1]["error"] is None


def test_a_cwd_longer_than_any_working_folder_is_taken_as_none_given(vault_repo: VaultRepo) -> None:
    """Bug fixed: a payload's `cwd` of a megabyte (no agent's working folder is over 4,096 bytes) went through
    `os.path.realpath`, quadratic in a path's parts, once per card given: the prompt waited for over a minute."""
    import json

    from cairn.hot.hook import MAX_CWD_BYTES, parse_payload

    make_vault(vault_repo)
    payload = json.loads(payload_for("claude-code", FITTING_PROMPT, vault_repo.root))
    assert parse_payload("claude-code", json.dumps(payload).encode()).cwd == str(vault_repo.root)
    payload["cwd"] = str(vault_repo.root) + "/x" * 500_000
    data = json.dumps(payload).encode()
    assert parse_payload("claude-code", data).cwd is None
    payload["cwd"] = "/" + "é" * (MAX_CWD_BYTES // 2)  # within the limit in characters, not in bytes
    assert parse_payload("claude-code", json.dumps(payload).encode()).cwd is None
    done = hook_bytes(vault_repo, "claude-code", data)  # over a minute before: its 60 s hang guard failed it
    assert done.returncode == 0 and b"force-push" in done.stdout, done.stderr
    assert log_entries()[-1]["error"] is None


@pytest.mark.parametrize("fmt", ("text", "json"))
def test_a_deleted_working_folder_still_serves(vault_repo: VaultRepo, tmp_path: Path, fmt: str) -> None:
    """Bug fixed: with no cwd in the input (text, json), the hook took its own folder, and when that folder had been
    deleted under it (a removed worktree) `os.getcwd()` failed the whole prompt: no card, and a log line naming no
    file ("FileNotFoundError: [Errno 2] No such file or directory")."""
    make_vault(vault_repo)
    gone = tmp_path / "removed-worktree"
    gone.mkdir()
    done = subprocess.run(
        ["sh", "-c", 'cd "$1" && rmdir "$1" && exec "$2" hook --format "$3"', "sh", str(gone), cairn_executable(), fmt],
        input=payload_for(fmt, FITTING_PROMPT, vault_repo.root).encode(),
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0 and b"force-push" in done.stdout, done.stderr
    assert log_entries()[-1]["error"] is None
    assert not gone.exists()


@pytest.mark.parametrize("cwd", (".", "project"))
def test_a_relative_cwd_in_a_deleted_working_folder_still_serves(
    vault_repo: VaultRepo, tmp_path: Path, cwd: str
) -> None:
    """Bug fixed: a payload whose cwd is relative (to the hook's own folder), when that folder had been deleted,
    failed the whole prompt: no card from any vault, and the log said only "FileNotFoundError: [Errno 2] No such
    file or directory"."""
    make_vault(vault_repo)
    gone = tmp_path / "removed-worktree"
    gone.mkdir()
    payload = json.dumps({"prompt": FITTING_PROMPT, "session_id": "s", "cwd": cwd}).encode()
    done = subprocess.run(
        [
            "sh",
            "-c",
            'cd "$1" && rmdir "$1" && exec "$2" hook --format claude-code',
            "sh",
            str(gone),
            cairn_executable(),
        ],
        input=payload,
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0 and b"force-push" in done.stdout, done.stderr
    assert log_entries()[-1]["error"] is None


@pytest.mark.parametrize("case", ("empty", "binary", "not-utf8"))
def test_bad_stdin_fails_open_for_text(vault_repo: VaultRepo, case: str) -> None:
    make_vault(vault_repo)
    done = hook_bytes(vault_repo, "text", BAD_INPUTS[case])
    assert (done.returncode, done.stdout) == (0, b"")
    assert log_entries()[-1]["error"]


def test_missing_vault_fails_open(vault_repo: VaultRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CAIRN_VAULT")
    nowhere = tmp_path / "not-a-vault"
    nowhere.mkdir()
    done = vault_repo.cairn(
        "hook", "--format", "claude-code", input=payload_for("claude-code", FITTING_PROMPT, nowhere), cwd=nowhere
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert "VaultNotFound" in log_entries()[-1]["error"]
    gone = vault_repo.cairn("hook", "--format", "text", "--vault", str(tmp_path / "gone"), input=FITTING_PROMPT)
    assert (gone.returncode, gone.stdout) == (0, "")


def test_damaged_cache_fails_open(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    index_files = list(Path(os.environ["CAIRN_CACHE_DIR"]).rglob("index.cairn"))
    assert len(index_files) == 1
    index_files[0].write_bytes(b"this is not a sqlite database" * 100)
    done = vault_repo.cairn(
        "hook", "--format", "claude-code", input=payload_for("claude-code", FITTING_PROMPT, vault_repo.root)
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    entry = log_entries()[-1]
    assert "IndexCorrupt" in entry["error"]
    assert entry["stale"] is True


def test_unwritable_state_dir_fails_open_with_a_line_on_stderr(
    vault_repo: VaultRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No state folder can be made: no session, no log (a line on stderr says so), and the prompt still gets its
    card (it got nothing while a session that could not be kept failed the whole prompt). Bug fixed: when nothing was
    served (an agent run as `nobody`, whose home holds no configuration), the line said only that the log could not
    be written; why nothing was served was in the log line it lost, and goes to stderr too now."""
    make_vault(vault_repo)
    blocker = tmp_path / "state-is-a-file"
    blocker.write_text("not a folder")

    def hook() -> subprocess.CompletedProcess[str]:
        return vault_repo.cairn(
            "hook",
            "--format",
            "claude-code",
            input=payload_for("claude-code", FITTING_PROMPT, vault_repo.root),
            env={"CAIRN_STATE_DIR": str(blocker / "state")},
        )

    done = hook()
    assert done.returncode == 0 and "force-push" in done.stdout
    assert "cannot write the hook log" in done.stderr
    assert done.stderr.endswith(f"; make {blocker / 'state'} a folder you can write, or set CAIRN_STATE_DIR to one\n")
    assert done.stderr.count("\n") == 1
    assert FITTING_PROMPT not in done.stderr
    assert blocker.read_text() == "not a folder"
    monkeypatch.delenv("CAIRN_VAULT")  # and no vault configured
    done = hook()
    assert (done.returncode, done.stdout) == (0, "")
    first, second = done.stderr.splitlines()
    assert first.startswith("cairn hook: VaultNotFound: no vault to serve: none is configured in "), first
    assert second.startswith("cairn hook: cannot write the hook log: ")
    assert FITTING_PROMPT not in done.stderr


def test_no_index_yet_injects_nothing_and_builds_one(vault_repo: VaultRepo) -> None:
    vault_repo.write("git/x", "Rebase lesson", "git pull --rebase after force-push drops local commits")
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.commit()
    done = vault_repo.cairn("hook", "--format", "text", input="git pull --rebase after force-push drops commits")
    assert (done.returncode, done.stdout) == (0, "")
    entry = log_entries()[-1]
    assert entry["stale"] is True
    assert "no index" in entry["error"]


def test_usage_errors_never_exit_2(vault_repo: VaultRepo) -> None:
    for args in (("--format", "cursor"), ("--bogus",), (), ("--format",)):
        done = vault_repo.cairn("hook", *args, input=FITTING_PROMPT)
        assert done.returncode == 1, args
        assert done.stdout == ""
        assert done.stderr.startswith("Error: ")
    shown = vault_repo.cairn("hook", "--help")
    assert shown.returncode == 0
    assert "Example:" in shown.stdout and "--format" in shown.stdout
    assert [entry["error"] for entry in log_entries()] == [
        "UsageError: --format must be one of claude-code, codex, gemini, text, json, not 'cursor'; fix the hook "
        "command in the agent's settings",
        "UsageError: unknown option '--bogus'; fix the hook command in the agent's settings",
        "UsageError: --format is required (claude-code, codex, gemini, text, json); fix the hook command in the "
        "agent's settings",
        "UsageError: --format needs a value; fix the hook command in the agent's settings",
    ]  # --help logs nothing


def test_an_argument_that_is_no_option_is_called_an_argument(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: a vault path with a space left unquoted in the agent's settings (`--vault /my vault`) was
    "unknown option 'vault'": it is no option, but a value cut off its option."""
    done = vault_repo.cairn("hook", "--format", "text", "--vault", str(tmp_path / "my"), "vault", input=FITTING_PROMPT)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines()[0] == (
        "Error: unexpected argument 'vault': the hook takes options only (quote a value with spaces)"
    )


def test_a_misspelt_format_reads_the_agents_whole_payload_before_it_exits(vault_repo: VaultRepo) -> None:
    """Bug fixed: a command line the hook could not understand (`--format Codex` in the agent's settings) exited
    before reading stdin, so the agent's write of a payload larger than the pipe failed (EPIPE; Codex then reports
    "failed to write hook stdin", not the typo), and nothing was logged for `cairn doctor`."""
    payload = payload_for("codex", "x " * 1_000_000, vault_repo.root)  # 2 MB: far more than a pipe holds
    started = subprocess.Popen(
        [cairn_executable(), "hook", "--format", "Codex"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=vault_repo.root,
        env=dict(os.environ),
    )
    out, err = started.communicate(payload.encode(), timeout=60)  # raises BrokenPipeError if the hook did not read
    assert (started.returncode, out) == (1, b"")
    assert err.decode().splitlines()[0] == (
        "Error: --format must be one of claude-code, codex, gemini, text, json, not 'Codex'"
    )
    assert log_entries()[-1]["error"].startswith("UsageError: --format must be one of")
    assert "x x x" not in (state_dir() / "hook.jsonl").read_text()  # the prompt is never stored


def test_a_closed_stdout_is_an_exit_0(vault_repo: VaultRepo) -> None:
    """Bug fixed: with its stdout closed (`>&-`: Python's sys.stdout is None), the hook served the cards, then
    printed a traceback (AttributeError) and exited 1."""
    make_vault(vault_repo)
    done = subprocess.run(
        ["sh", "-c", f"'{cairn_executable()}' hook --format claude-code >&-"],
        input=payload_for("claude-code", FITTING_PROMPT, vault_repo.root).encode(),
        capture_output=True,
        cwd=vault_repo.root,
        env=dict(os.environ),
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, b"")
    assert log_entries()[-1]["injected"] and log_entries()[-1]["error"] is None


@pytest.mark.parametrize(("redirect", "status", "said"), [(">&-", 0, ""), (">/dev/full", 1, "Error: cannot print")])
def test_help_to_a_closed_or_full_stdout_is_no_traceback(
    vault_repo: VaultRepo, redirect: str, status: int, said: str
) -> None:
    """Bug fixed: `cairn hook --help >&-` and `> /dev/full` ended in a traceback (AttributeError, OSError): a closed
    stdout is nothing to print to, as for the cards; a full one is one line and exit 1, as every command says it."""
    if redirect == ">/dev/full" and not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full (Linux)")
    done = subprocess.run(
        ["sh", "-c", f"'{cairn_executable()}' hook --help {redirect}"],
        capture_output=True,
        text=True,
        cwd=vault_repo.root,
        check=False,
        timeout=60,
    )
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.startswith(said), done.stderr
    assert len(done.stderr.splitlines()) == (1 if said else 0), done.stderr


def test_help_to_a_reader_gone_away_exits_141_quietly(vault_repo: VaultRepo) -> None:
    """Bug fixed: `cairn hook --help | true` said "Error: cannot print the help: Broken pipe" and exited 1, where
    every other command's help stops quietly with 141 when its reader has gone away."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader exits before reading anything
    try:
        done = subprocess.run(
            [cairn_executable(), "hook", "--help"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=vault_repo.root,
            check=False,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, "")


def test_a_closed_stdin_is_logged_as_no_stdin_not_as_a_crash(vault_repo: VaultRepo) -> None:
    """`cairn hook <&-` exited 0 with nothing printed, as it should, but logged `AttributeError at hook.py` (Python's
    sys.stdin is None), as if Cairn had failed."""
    make_vault(vault_repo)
    done = subprocess.run(
        ["sh", "-c", f"'{cairn_executable()}' hook --format claude-code <&-"],
        capture_output=True,
        cwd=vault_repo.root,
        env=dict(os.environ),
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert log_entries()[-1]["error"] == (
        "HookInputError: no stdin (it is closed); the agent gives the hook its payload on stdin"
    )


def test_the_hooks_readme_says_what_a_misspelt_format_exits(vault_repo: VaultRepo) -> None:
    """`cairn/templates/hooks/README.md` said the hook "always exits 0": a command line it cannot understand exits 1
    (`hook._refuse_command_line`), as its --help says."""
    done = vault_repo.cairn("hook", "--format", "claud", input=payload_for("claude-code", "x", vault_repo.root))
    assert (done.returncode, done.stdout) == (1, "")
    readme = " ".join((Path(__file__).parent.parent / "cairn/templates/hooks/README.md").read_text().split())
    assert "always exits 0" not in readme
    assert "a command line it cannot understand (a misspelt `--format`) exits 1" in readme
