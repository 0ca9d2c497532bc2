"""`cairn hook` as the agents run it: the installed executable, real payloads on stdin, every output format."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import jsonschema
import pytest

from helpers.payloads import FITTING_PROMPT, UNRELATED_PROMPT, load_schema, log_entries, payload_for
from helpers.vaults import REBASE_ID, VaultRepo, cairn_executable, make_vault, state_dir, write_filler_cards

AGENT_FORMATS = ("claude-code", "codex", "gemini")


def hook(
    repo: VaultRepo,
    fmt: str,
    stdin: str | bytes,
    *extra: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """The hook as an agent runs it, serving `repo` through CAIRN_VAULT unless the test names a vault itself."""
    if "--vault" not in extra and "CAIRN_VAULT" not in (env or {}):
        env = {**(env or {}), "CAIRN_VAULT": str(repo.root)}
    return repo.cairn("hook", "--format", fmt, *extra, input=stdin, env=env, cwd=cwd)


@pytest.mark.parametrize("fmt", AGENT_FORMATS)
def test_agent_formats_print_one_json_object_with_the_fitting_card(vault_repo: VaultRepo, fmt: str) -> None:
    make_vault(vault_repo)
    done = hook(vault_repo, fmt, payload_for(fmt, FITTING_PROMPT, vault_repo.root))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    out = json.loads(done.stdout)  # exactly one JSON object and nothing else
    event = "BeforeAgent" if fmt == "gemini" else "UserPromptSubmit"
    assert out == {
        "hookSpecificOutput": {
            "hookEventName": event,
            "additionalContext": out["hookSpecificOutput"]["additionalContext"],
        }
    }
    context = out["hookSpecificOutput"]["additionalContext"]
    assert REBASE_ID in context
    assert "Pull --rebase drops local commits after a force-push" in context
    assert "compare with git reflog before you pull" in context
    assert json.dumps(str(vault_repo.root / "cards" / f"{REBASE_ID}.md")) in context
    assert f"cairn show {REBASE_ID}" in context
    assert "docker/layer-cache-order" not in context
    assert len(context) < 10_000


@pytest.mark.parametrize("fmt", ("claude-code", "codex"))
def test_output_validates_against_codex_output_schema(vault_repo: VaultRepo, fmt: str) -> None:
    make_vault(vault_repo)
    done = hook(vault_repo, fmt, payload_for(fmt, FITTING_PROMPT, vault_repo.root))
    jsonschema.validate(json.loads(done.stdout), load_schema("user-prompt-submit.command.output.schema.json"))


@pytest.mark.parametrize("fmt", (*AGENT_FORMATS, "text"))
def test_nothing_fits_means_no_output_at_all(vault_repo: VaultRepo, fmt: str) -> None:
    make_vault(vault_repo)
    done = hook(vault_repo, fmt, payload_for(fmt, UNRELATED_PROMPT, vault_repo.root))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert log_entries()[-1]["injected"] == []


def test_text_format_prints_the_context_block(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    done = hook(vault_repo, "text", FITTING_PROMPT)
    assert done.returncode == 0
    assert done.stdout.startswith("Cairn: 1 note from the team's lesson vault matches this prompt. ")
    assert f'   id: "{REBASE_ID}"\n' in done.stdout
    assert f"`cairn show {REBASE_ID}`" in done.stdout  # the vault encloses the cwd: no --vault needed


def test_text_format_says_how_many_cards_match(vault_repo: VaultRepo) -> None:
    for n in range(2):
        vault_repo.write(f"git/rebase-{n}", f"Force-push rebase lesson {n}", "force-push rebase dropped commits reflog")
    vault_repo.write_raw("cairn.toml", "[recall]\nmin_lead = 0.0\nmin_coverage = 0.0\nmin_margin = 0.0\n")
    vault_repo.commit("Two alike")
    assert vault_repo.invoke("index").returncode == 0
    done = hook(vault_repo, "text", "force-push rebase dropped commits reflog")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Cairn: 2 notes from the team's lesson vault match this prompt. ")


def test_json_format(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    out = json.loads(hook(vault_repo, "json", payload_for("json", FITTING_PROMPT, vault_repo.root)).stdout)
    assert out["abstained"] is False
    assert [c["id"] for c in out["cards"]] == [REBASE_ID]
    assert set(out["cards"][0]) == {"id", "name", "summary", "path", "score", "file"}
    assert out["cards"][0]["path"] == f"cards/{REBASE_ID}.md"
    assert out["cards"][0]["file"] == str(vault_repo.root / "cards" / f"{REBASE_ID}.md")
    assert out["notice"].startswith("Teammates' notes from the lesson vault, quoted as reference data")
    assert out["already_injected"] == []  # the payload carries a session id
    nothing = json.loads(hook(vault_repo, "json", payload_for("json", UNRELATED_PROMPT, vault_repo.root)).stdout)
    assert nothing == {"cards": [], "abstained": True, "already_injected": []}
    again = json.loads(hook(vault_repo, "json", payload_for("json", FITTING_PROMPT, vault_repo.root)).stdout)
    assert again == {"cards": [], "abstained": True, "already_injected": [REBASE_ID]}  # as recall --session says


def test_vault_flag_and_env_but_never_the_agents_folder(vault_repo: VaultRepo, tmp_path: Path) -> None:
    make_vault(vault_repo)
    elsewhere = tmp_path / "project"
    elsewhere.mkdir()
    payload = payload_for("claude-code", FITTING_PROMPT, elsewhere)
    by_flag = hook(vault_repo, "claude-code", payload, "--vault", str(vault_repo.root), cwd=elsewhere)
    context = json.loads(by_flag.stdout)["hookSpecificOutput"]["additionalContext"]
    assert f"cairn show {REBASE_ID} --vault {vault_repo.root}" in context  # outside the vault: say which vault
    other = payload_for("claude-code", FITTING_PROMPT, elsewhere, session="session-2")
    by_env = hook(vault_repo, "claude-code", other, env={"CAIRN_VAULT": str(vault_repo.root)}, cwd=elsewhere)
    assert REBASE_ID in by_env.stdout
    # Trust is explicit: with no --vault, no CAIRN_VAULT and no user configuration, an agent working inside the
    # vault itself gets nothing (the hook never searches the agent's folder), and the log says what to do.
    third = payload_for("claude-code", FITTING_PROMPT, vault_repo.root / "cards", session="session-3")
    unset = {"CAIRN_VAULT": ""}
    assert hook(vault_repo, "claude-code", third, env=unset, cwd=vault_repo.root).stdout == ""
    assert log_entries()[-1]["error"].startswith("VaultNotFound: no vault to serve: none is configured in ")
    assert "`cairn vault add PATH`" in log_entries()[-1]["error"]


def test_the_whole_card_command_of_an_id_with_a_leading_dash_runs(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: a card at cards/-x/-rf.md (lint only warns of its id) got `cairn show -x/-rf`, which click reads
    as options ("No such option '-x'"), so the command the frame offers the agent failed."""
    make_vault(vault_repo)
    vault_repo.write("-x/-rf", "Zebra quokka migration stalls", "Restart the quokka pipeline with the zebra flag.")
    vault_repo.commit("An id with leading dashes")
    assert vault_repo.invoke("index").returncode == 0
    for cwd in (tmp_path, vault_repo.root):  # with `--vault VAULT` and without
        done = hook(vault_repo, "text", "zebra quokka migration stalls", cwd=cwd)
        (line,) = [x for x in done.stdout.splitlines() if x.startswith("   whole card: `")]
        command = shlex.split(line.split("`")[1])
        assert command[:2] == ["cairn", "show"]
        shown = vault_repo.cairn(*command[1:], cwd=cwd)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.startswith("Zebra quokka migration stalls\n")


def test_the_whole_card_command_opens_the_injected_card_from_a_vault_nested_in_it(vault_repo: VaultRepo) -> None:
    """Bug fixed: the agent working in a personal vault nested in the team's (`team/personal`) was given `cairn show
    ID` without --vault; run there, it opened the nested vault's card of the same id, another lesson."""
    make_vault(vault_repo)
    vault_repo.write("ops/zanzibar", "Zanzibar queue stalls on restart", "Drain zanzibar consumers before a restart.")
    vault_repo.commit("The team's card")
    assert vault_repo.invoke("index").returncode == 0
    nested = VaultRepo(vault_repo.root / "personal")
    nested.write_raw("cairn.toml", "")
    nested.write("ops/zanzibar", "My own note on editor tabs", "Tabs and spaces in the editor, nothing about queues.")
    nested.commit("A personal card of the same id")
    done = hook(vault_repo, "text", "zanzibar queue stalls after a restart", cwd=nested.root)
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("   whole card: `")]
    command = shlex.split(line.split("`")[1])
    assert command[-2:] == ["--vault", str(vault_repo.root)]
    shown = vault_repo.cairn(*command[1:], cwd=nested.root)
    assert shown.stdout.startswith("Zanzibar queue stalls on restart\n"), shown.stdout + shown.stderr


def test_scope_flag_and_env_drop_out_of_scope_cards(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    assert hook(vault_repo, "text", FITTING_PROMPT, "--scope", "docker").stdout == ""
    assert hook(vault_repo, "text", FITTING_PROMPT, env={"CAIRN_SCOPE": "python,docker"}).stdout == ""
    assert REBASE_ID in hook(vault_repo, "text", FITTING_PROMPT, "--scope", "git").stdout
    decisions = {c["id"]: c["reason"] for c in log_entries()[0]["candidates"]}
    assert decisions[REBASE_ID] == "out_of_scope"


def test_each_card_once_per_session(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    first = hook(vault_repo, "claude-code", payload_for("claude-code", FITTING_PROMPT, vault_repo.root, "s-a"))
    assert REBASE_ID in first.stdout
    again = hook(vault_repo, "claude-code", payload_for("claude-code", FITTING_PROMPT, vault_repo.root, "s-a"))
    assert again.stdout == ""
    assert {c["id"]: c["reason"] for c in log_entries()[-1]["candidates"]}[REBASE_ID] == "already_injected"
    other = hook(vault_repo, "claude-code", payload_for("claude-code", FITTING_PROMPT, vault_repo.root, "s-b"))
    assert REBASE_ID in other.stdout
    files = sorted((state_dir() / "sessions").glob("*.json"))
    assert len(files) == 2
    record = json.loads(files[0].read_text())
    assert set(record) == {"session", "vault", "injected", "updated"}
    assert list(record["injected"]) == [REBASE_ID]
    assert record["injected"][REBASE_ID]["commit"] == vault_repo.git("rev-parse", "HEAD")


def test_log_line_follows_the_contract(vault_repo: VaultRepo) -> None:
    import hashlib

    make_vault(vault_repo)
    hook(vault_repo, "codex", payload_for("codex", FITTING_PROMPT, vault_repo.root, "sess-log"))
    entry = log_entries()[-1]
    assert set(entry) >= {
        "time",
        "format",
        "session",
        "prompt_sha256",
        "prompt_len",
        "vault",
        "commit",
        "stale",
        "vaults",
        "candidates",
        "injected",
        "error",
    }
    assert entry["format"] == "codex"
    assert entry["session"] == hashlib.sha256(b"sess-log").hexdigest()[:32]
    assert entry["prompt_sha256"] == hashlib.sha256(FITTING_PROMPT.encode()).hexdigest()
    assert entry["prompt_len"] == len(FITTING_PROMPT)
    assert entry["vault"] == str(vault_repo.root.resolve())
    assert entry["commit"] == vault_repo.git("rev-parse", "HEAD")
    assert entry["stale"] is False
    assert entry["injected"] == [REBASE_ID]
    assert entry["error"] is None
    assert entry["time"].endswith("Z")
    assert entry["vaults"] == [
        {
            "name": None,
            "vault": str(vault_repo.root.resolve()),
            "ref": "refs/heads/main",
            "commit": vault_repo.git("rev-parse", "HEAD"),
            "stale": False,
            "skipped": None,
            "error": None,
            "injected": [REBASE_ID],
        }
    ]
    top = entry["candidates"][0]
    assert set(top) == {"id", "score", "decision", "reason"}
    assert (top["id"], top["decision"], top["reason"]) == (REBASE_ID, "injected", None)


def test_twenty_hooks_at_once_in_one_session_inject_a_card_once(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    payload = payload_for("claude-code", FITTING_PROMPT, vault_repo.root, "crowded-session")
    procs = [
        subprocess.Popen(
            [cairn_executable(), "hook", "--format", "claude-code"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=vault_repo.root,
            env={**os.environ, "CAIRN_VAULT": str(vault_repo.root)},
            text=True,
        )
        for _ in range(20)
    ]
    results = [p.communicate(payload, timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 20
    assert all(err == "" for _, err in results)
    outputs = [out for out, _ in results if out]
    assert len(outputs) == 1
    assert REBASE_ID in json.loads(outputs[0])["hookSpecificOutput"]["additionalContext"]
    entries = log_entries()
    assert len(entries) == 20
    assert sum(e["injected"].count(REBASE_ID) for e in entries) == 1
    assert all(e["error"] is None for e in entries)
    sessions = list((state_dir() / "sessions").glob("*.json"))
    assert len(sessions) == 1
    assert list(json.loads(sessions[0].read_text())["injected"]) == [REBASE_ID]
    assert not list((state_dir() / "sessions").glob("*.tmp"))


def test_the_prompt_is_never_written_anywhere(vault_repo: VaultRepo, isolated_env: Path) -> None:
    make_vault(vault_repo)
    marker = "zqxv-unique-marker-7731"
    prompt = f"{FITTING_PROMPT} {marker}"
    for n, fmt in enumerate(("claude-code", "codex", "gemini", "text", "json")):
        hook(vault_repo, fmt, payload_for(fmt, prompt, vault_repo.root, f"private-{n}"))
    hook(vault_repo, "claude-code", "{not json " + marker)  # and not through an error message either
    assert len(log_entries()) == 6
    roots = {isolated_env, vault_repo.root, Path(os.environ["CAIRN_CACHE_DIR"]), state_dir()}
    scanned = 0
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                scanned += 1
                assert marker.encode() not in path.read_bytes(), path
    assert scanned > 5


def test_the_hook_never_writes_into_the_vault(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    before = {p: p.stat().st_mtime_ns for p in vault_repo.root.rglob("*") if p.is_file()}
    for fmt in ("claude-code", "codex", "gemini", "text", "json"):
        hook(vault_repo, fmt, payload_for(fmt, FITTING_PROMPT, vault_repo.root, f"vault-{fmt}"))
    after = {p: p.stat().st_mtime_ns for p in vault_repo.root.rglob("*") if p.is_file()}
    assert after == before
    assert vault_repo.git("status", "--porcelain", "--ignored") == ""


def test_context_block_stays_under_the_configured_limit(vault_repo: VaultRepo) -> None:
    long_summary = "force-push rebase commits dropped reflog " + "detail " * 300
    for n in range(3):
        vault_repo.write(f"git/long-{n}", f"Force-push rebase lesson {n}", long_summary + f"variant{n}")
    vault_repo.write_raw("cairn.toml", "[hook]\nmax_context_chars = 2500\n")
    vault_repo.commit("Long cards")
    assert vault_repo.invoke("index").returncode == 0
    done = hook(vault_repo, "text", "force-push rebase commits dropped reflog detail variant0")
    assert len(done.stdout) <= 2500
    entry = log_entries()[-1]
    assert len(entry["injected"]) <= 1


def test_a_raised_context_limit_still_keeps_the_block_under_the_hard_limit(vault_repo: VaultRepo) -> None:
    """`[hook] max_context_chars` takes any value from 1 (lint warns above 9999); the hook keeps its block under the
    hard limit all the same: three cards of the longest name and summary it gives, with long paths, would make one
    of over 10,000 characters, so the third is left out (`context_limit`)."""
    from cairn.hot.hook import CONTEXT_HARD_LIMIT

    write_filler_cards(vault_repo, 12)
    folder = "/".join(["recovering-commits-after-a-force-push"] * 8)
    for n in range(3):
        vault_repo.write(
            f"git/{folder}/long-{n}",
            f"Force-push rebase lesson {n} " + "about the reflog " * 10,
            "force-push rebase commits dropped reflog " + "detail " * 300 + f"variant{n}",
        )
    vault_repo.write_raw("cairn.toml", "[hook]\nmax_context_chars = 50000\n")
    vault_repo.commit("Three long cards, a raised context limit")
    assert vault_repo.invoke("index").returncode == 0
    done = hook(
        vault_repo,
        "claude-code",
        payload_for("claude-code", "force-push rebase commits dropped reflog detail", vault_repo.root),
    )
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert len(context) <= CONTEXT_HARD_LIMIT
    entry = log_entries()[-1]
    assert len(entry["injected"]) == 2
    assert [row["reason"] for row in entry["candidates"]].count("context_limit") == 1


def test_an_error_message_holding_a_long_prompt_logs_none_of_it() -> None:
    """The message is cut to 500 characters only after the prompt is taken out: cut first, the start of a prompt
    longer than the cut stayed in the log."""
    from cairn.hot.hook import _error_text

    prompt = "deploy the billing service with the staging password hunter2 " * 20
    text = _error_text(OSError(f"cannot read {prompt!s}"), prompt)
    assert text == "OSError: cannot read <prompt>"
    assert "hunter2" not in _error_text(OSError(prompt + " and more " * 100), prompt)


def test_an_unexpected_error_logs_its_type_and_place_not_its_message() -> None:
    """A `KeyError`'s message is its key: a word of the prompt reached the log that way (recall's foreign terms,
    tests/test_hot_worst_case.py). Only a file's error or Cairn's own keeps its message."""
    from cairn.hot.errors import IndexCorrupt
    from cairn.hot.hook import _error_text

    secrets: dict[str, str] = {}
    try:
        secrets["hunter2"]
    except KeyError as exc:
        text = _error_text(exc, "the password is hunter2, deploy it")
    assert "hunter2" not in text
    assert text.startswith("KeyError at test_hook.py:") and "not logged" in text
    assert _error_text(IndexCorrupt("the index is damaged; run cairn index"), "x" * 10) == (
        "IndexCorrupt: the index is damaged; run cairn index"
    )


def test_the_smallest_context_limit_still_holds_a_card(vault_repo: VaultRepo) -> None:
    """Bug fixed: `[hook] max_context_chars` reads a value under its floor as the floor, said to hold one card's
    block; at 500 none ever fitted (the frame alone is about 475 characters), so a vault set to the documented
    minimum, and every vault layered with it, served nothing, with `context_limit` in the log alone."""
    make_vault(vault_repo)
    vault_repo.write_raw("cairn.toml", "[hook]\nmax_context_chars = 500\n")
    vault_repo.commit("The smallest context limit lint takes without a warning before")
    assert vault_repo.invoke("index").returncode == 0
    hook(vault_repo, "text", FITTING_PROMPT)
    assert log_entries()[-1]["injected"] == [REBASE_ID]


def test_recall_and_explain_give_what_the_hook_gives_under_a_small_context_limit(vault_repo: VaultRepo) -> None:
    """The hook keeps only the cards whose block fits `[hook] max_context_chars`; `cairn recall` showed every card
    recall injected, and `explain` called them injected, so a team that lowered the limit saw cards no agent got."""
    detail = "the reflog keeps the dropped commits for ninety days, so recover them before they expire " * 3
    for n in range(2):
        vault_repo.write(f"git/reflog-{n}", f"Recover commits dropped by a rebase {n}", f"{detail} (part {n})")
    vault_repo.commit("Two cards that fit one prompt")
    prompt = "recover commits dropped by a rebase from the reflog"
    assert vault_repo.invoke("index").returncode == 0
    whole = json.loads(vault_repo.cairn("recall", "--json", prompt).stdout)
    assert len(whole["cards"]) == 2  # both fit the prompt; the default limit holds both

    vault_repo.write_raw("cairn.toml", "[hook]\nmax_context_chars = 1200\n")
    vault_repo.commit("A smaller context")
    assert vault_repo.invoke("index").returncode == 0
    hook(vault_repo, "text", prompt)
    given = log_entries()[-1]["injected"]
    assert len(given) == 1
    recalled = json.loads(vault_repo.cairn("recall", "--json", prompt).stdout)
    assert [card["id"] for card in recalled["cards"]] == given
    explained = json.loads(vault_repo.cairn("explain", "--json", prompt).stdout)
    assert explained["injected"] == given
    (left_out,) = (row for row in explained["candidates"] if row["id"] != given[0] and row["reason"] == "context_limit")
    assert left_out["decision"] == "rejected"


def test_a_card_too_long_for_the_context_limit_leaves_the_next_one_given(vault_repo: VaultRepo) -> None:
    """Bug fixed: the hook cut the cards it gives from the end until their block fitted `[hook] max_context_chars`,
    so a first card whose block alone was over the limit (a long summary, which lint only warns of) took every card
    after it along: the agent got nothing, though the second card's block fitted, and explain said the block held
    none of them. Now such a card alone is left out; `cairn recall` and `explain` say the same."""
    detail = "the reflog keeps the dropped commits for ninety days, so recover them before they expire "
    vault_repo.write("git/reflog-long", "Recover commits dropped by a rebase from the reflog", detail * 12)
    vault_repo.write("git/reflog-short", "Recover commits dropped by a rebase", detail)
    vault_repo.write_raw("cairn.toml", "[hook]\nmax_context_chars = 1200\n")
    vault_repo.commit("A long card and a short one on one prompt, in a small context")
    assert vault_repo.invoke("index").returncode == 0
    prompt = "recover commits dropped by a rebase from the reflog"
    explained = json.loads(vault_repo.cairn("explain", "--json", prompt).stdout)
    first, second = explained["candidates"][:2]
    assert (first["id"], first["reason"]) == ("git/reflog-long", "context_limit")  # recall chose both
    assert second["id"] == "git/reflog-short"
    assert explained["injected"] == ["git/reflog-short"]

    done = hook(vault_repo, "codex", payload_for("codex", prompt, vault_repo.root))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    jsonschema.validate(out, load_schema("user-prompt-submit.command.output.schema.json"))
    assert '1. name: "Recover commits dropped by a rebase"\n' in out["hookSpecificOutput"]["additionalContext"]
    assert log_entries()[-1]["injected"] == ["git/reflog-short"]
    recalled = json.loads(vault_repo.cairn("recall", "--json", prompt).stdout)
    assert [card["id"] for card in recalled["cards"]] == ["git/reflog-short"]


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_a_chinese_card_reaches_the_agent_in_an_ascii_locale(vault_repo: VaultRepo, fmt: str) -> None:
    """Bug fixed: in a locale whose encoding is ASCII (`LC_ALL=POSIX`, no UTF-8 mode) the `json` and `text` formats
    wrote a card in Chinese to a stdout that refused it: the agent got nothing, while the log said it was injected.
    The hook writes UTF-8, as the agents read it, whatever the locale."""
    vault_repo.write_raw("cairn.toml", "# the defaults\n")
    vault_repo.write(
        "databases/migration-lock-timeout",
        "数据库迁移锁超时",
        "在生产环境执行数据库迁移时，要先设置 lock_timeout，否则 ALTER TABLE 会阻塞所有查询。",
    )
    vault_repo.commit("A card in Chinese")
    assert vault_repo.invoke("index").returncode == 0
    prompt = "生产环境执行数据库迁移时 ALTER TABLE 阻塞所有查询怎么办"
    ascii_locale = {"LC_ALL": "POSIX", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}
    done = hook(vault_repo, fmt, payload_for(fmt, prompt, vault_repo.root), env=ascii_locale)
    assert done.returncode == 0, done.stderr
    if fmt == "json":
        assert [card["name"] for card in json.loads(done.stdout)["cards"]] == ["数据库迁移锁超时"]
    else:
        assert '1. name: "数据库迁移锁超时"\n' in done.stdout, done.stdout
    assert log_entries()[-1]["injected"] == ["databases/migration-lock-timeout"]
