"""`cairn audit`: the cache, the entries against the tree, the hook log and session files, signatures."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cairn.hot.index import SECURITY_RULES_VERSION, IndexReader
from cairn.hot.vault import find_vault
from cairn.index.audit import audit
from cairn.index.build import build_index, index_file_for
from helpers.cachefiles import card_row, edit_card, edit_meta, edit_order, reseal
from helpers.cli import run_on_terminal
from helpers.signing import signed_commit, ssh_signing
from helpers.vaults import BOB, VaultRepo, run_unshallow_commands

PROMPT = "Why did git pull --rebase drop my local commits after a force-push?"
GONE = "is not in this repository (history rewritten, or a shallow clone); its cards cannot be checked"


def _vault(vault_repo: VaultRepo) -> str:
    vault_repo.write(
        "git/force-push-rebase",
        "Pull --rebase drops local commits after a force-push",
        "After someone force-pushes a shared branch, git pull --rebase can drop your local commits; "
        "compare with git reflog before you pull.",
        scope=["git"],
    )
    vault_repo.write("docker/layer-order", "Copy sources after installing deps", "Order Dockerfile layers by churn.")
    vault_repo.write_raw("cairn.toml", "")  # Cairn's marker: the hook serves no folder without it
    commit = vault_repo.commit("Two cards")
    done = vault_repo.invoke("index")
    assert done.returncode == 0, done.stderr
    return commit


def _audit(vault_repo: VaultRepo, *args: str) -> tuple[int, dict[str, Any]]:
    done = vault_repo.invoke("audit", "--json", *args)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def _check(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in report["checks"] if c["name"] == name)


def _state(isolated_env: Path) -> Path:
    state = isolated_env / "state"
    state.mkdir(parents=True, exist_ok=True)
    return state


def _log_line(vault_root: Path, commit: str | None, injected: list[str], **extra: Any) -> str:
    entry: dict[str, Any] = {
        "time": "2026-05-01T12:00:00Z",
        "format": "claude-code",
        "session": hashlib.sha256(b"session-1").hexdigest()[:32],
        "prompt_sha256": hashlib.sha256(PROMPT.encode()).hexdigest(),
        "prompt_len": len(PROMPT),
        "vault": str(vault_root),
        "commit": commit,
        "stale": False,
        "candidates": [{"id": i, "score": 7.5, "decision": "injected", "reason": "passed all gates"} for i in injected],
        "injected": injected,
        "error": None,
    }
    entry.update(extra)
    return json.dumps(entry) + "\n"


def test_a_clean_vault_with_real_hook_lines_passes(vault_repo: VaultRepo) -> None:
    _vault(vault_repo)
    payload = {"session_id": "s1", "cwd": str(vault_repo.root), "hook_event_name": "UserPromptSubmit", "prompt": PROMPT}
    hooked = vault_repo.cairn(
        "hook", "--format", "claude-code", input=json.dumps(payload), env={"CAIRN_VAULT": str(vault_repo.root)}
    )
    assert hooked.returncode == 0, hooked.stderr
    code, report = _audit(vault_repo)
    assert code == 0, report
    assert report["ok"] is True
    assert [c["name"] for c in report["checks"]] == ["cache", "entries", "served", "provenance", "log", "sessions"]
    assert all(c["status"] == "pass" for c in report["checks"])
    assert "git/force-push-rebase" in hooked.stdout  # the hook injected the card, so the log names it
    assert "1 log line(s)" in _check(report, "log")["summary"]
    assert "1 injection(s)" in _check(report, "log")["summary"]
    text = vault_repo.invoke("audit")
    assert text.returncode == 0 and "PASS cache:" in text.stdout and "Audit passed" in text.stdout


def test_a_log_line_carrying_the_prompt_fails(vault_repo: VaultRepo, isolated_env: Path) -> None:
    commit = _vault(vault_repo)
    log = _state(isolated_env) / "hook.jsonl"
    log.write_text(
        _log_line(vault_repo.root, commit, ["git/force-push-rebase"])
        + _log_line(vault_repo.root, commit, [], prompt=PROMPT)
        + _log_line(vault_repo.root, commit, [], prompt_sha256=PROMPT)
        + _log_line(vault_repo.root, commit, [], note="the user asked about rebasing after a force push")
        + "{not json\n"
    )
    code, report = _audit(vault_repo)
    assert code == 1 and report["ok"] is False
    log_check = _check(report, "log")
    assert log_check["status"] == "fail"
    details = "\n".join(log_check["details"])
    assert "hook.jsonl:2: key 'prompt' carries prompt text" in details
    assert "hook.jsonl:3: 'prompt_sha256' holds" in details or "hook.jsonl:3: 'prompt_sha256' is not" in details
    assert "hook.jsonl:4: 'note' holds free text" in details
    assert "hook.jsonl:5: not JSON" in details
    assert "hook.jsonl:1" not in details
    assert _check(report, "cache")["status"] == "pass"
    text = vault_repo.invoke("audit")
    assert text.returncode == 1 and "FAIL log:" in text.stdout and "Audit failed" in text.stderr


def test_a_log_the_hook_cannot_write_fails_rather_than_passing_as_never_run(
    vault_repo: VaultRepo, isolated_env: Path, tmp_path: Path
) -> None:
    """The hook never writes its log through a link or into a folder (it injects all the same): audit read the link's
    target as the log, and took a folder for "the hook has not run", and passed while prompts went unlogged."""
    _vault(vault_repo)
    state = _state(isolated_env)
    elsewhere = tmp_path / "old-log.jsonl"
    elsewhere.write_text("")
    (state / "hook.jsonl").symlink_to(elsewhere)
    payload = {"session_id": "s1", "cwd": str(vault_repo.root), "hook_event_name": "UserPromptSubmit", "prompt": PROMPT}
    hooked = vault_repo.cairn(
        "hook", "--format", "claude-code", "--vault", str(vault_repo.root), input=json.dumps(payload)
    )
    assert "git/force-push-rebase" in hooked.stdout and elsewhere.read_text() == ""  # injected, logged nowhere
    code, report = _audit(vault_repo)
    assert code == 1
    log_check = _check(report, "log")
    assert log_check["status"] == "fail"
    assert log_check["details"] == [
        "hook.jsonl: a symlink, which the hook never writes through (the hook logs no prompt while it is there); "
        f"move {state / 'hook.jsonl'} away"
    ]
    (state / "hook.jsonl").unlink()
    (state / "hook.jsonl").mkdir()
    code, report = _audit(vault_repo)
    assert code == 1 and _check(report, "log")["details"][0].startswith("hook.jsonl: not a regular file")


def test_an_injected_card_that_did_not_exist_at_its_commit_fails(vault_repo: VaultRepo, isolated_env: Path) -> None:
    first = _vault(vault_repo)
    vault_repo.write("shell/pipefail", "Pipelines hide failures", "Set -o pipefail.")
    second = vault_repo.commit("Third card", author=BOB)
    log = _state(isolated_env) / "hook.jsonl"
    log.write_text(
        _log_line(vault_repo.root, second, ["shell/pipefail"])
        + _log_line(vault_repo.root, first, ["shell/pipefail"])
        + _log_line(vault_repo.root, "0" * 40, ["git/force-push-rebase"])
        + _log_line(Path("/elsewhere/other-vault"), first, ["not/here"])  # another vault's line: not ours to check
    )
    code, report = _audit(vault_repo)
    assert code == 1
    details = _check(report, "log")["details"]
    assert details == [
        f"hook.jsonl:2: card 'shell/pipefail' did not exist at {first[:8]}",
        f"hook.jsonl:3: commit {'0' * 12} {GONE}",
    ]
    # one problem, and one line listed that is none: the summary counts each as what it is
    assert _check(report, "log")["summary"] == (
        "1 problem(s) in 4 log line(s); 1 line(s) name commits this repository no longer has (not checked)"
    )


def test_a_line_whose_injected_list_differs_from_its_vaults_parts_fails(
    vault_repo: VaultRepo, isolated_env: Path
) -> None:
    """The injection check reads each vault's part of a line; the line's own `injected` (what a reader of the log sees
    first) was never compared with them, so a card that never existed written there alone passed."""
    _vault(vault_repo)
    payload = {"session_id": "s1", "cwd": str(vault_repo.root), "hook_event_name": "UserPromptSubmit", "prompt": PROMPT}
    hooked = vault_repo.cairn(
        "hook", "--format", "claude-code", "--vault", str(vault_repo.root), input=json.dumps(payload)
    )
    assert "git/force-push-rebase" in hooked.stdout
    log = _state(isolated_env) / "hook.jsonl"
    assert _audit(vault_repo)[0] == 0  # the hook's own line
    entry = json.loads(log.read_text())
    entry["injected"] = ["evil/backdoor"]
    log.write_text(json.dumps(entry) + "\n")
    code, report = _audit(vault_repo)
    assert code == 1
    assert _check(report, "log")["details"] == [
        "hook.jsonl:1: 'injected' does not list the cards its vaults' parts gave"
    ]


def test_a_log_line_or_session_naming_a_revision_not_a_commit_id_fails(
    vault_repo: VaultRepo, isolated_env: Path
) -> None:
    """The hook names each commit by its id: `main` or `HEAD~1` was resolved against today's history, so an edited
    line claiming a card came from `main` passed for any card main holds now."""
    _vault(vault_repo)
    state = _state(isolated_env)
    (state / "hook.jsonl").write_text(_log_line(vault_repo.root, "main", ["git/force-push-rebase"]))
    sessions = state / "sessions"
    sessions.mkdir()
    key = hashlib.sha256(b"s1").hexdigest()[:32]
    seen = {"commit": "HEAD", "time": "2026-05-01T12:00:00Z"}
    data = {"session": key, "vault": str(vault_repo.root), "injected": {"git/force-push-rebase": seen}}
    (sessions / f"{key}.json").write_text(json.dumps(data))
    code, report = _audit(vault_repo)
    assert code == 1
    assert _check(report, "log")["details"] == [
        "hook.jsonl:1: injected git/force-push-rebase at 'main', not a commit id, so it cannot be checked"
    ]
    assert _check(report, "sessions")["details"] == [
        f"{key}.json: injected git/force-push-rebase at 'HEAD', not a commit id, so it cannot be checked"
    ]


def test_a_commit_the_repository_no_longer_has_is_reported_not_failed(
    vault_repo: VaultRepo, isolated_env: Path
) -> None:
    """After a history rewrite (or in a shallow clone) old log lines cannot be checked; that is not tampering."""
    first = _vault(vault_repo)
    log = _state(isolated_env) / "hook.jsonl"
    log.write_text(
        _log_line(vault_repo.root, first, ["git/force-push-rebase"])
        + _log_line(vault_repo.root, "0" * 40, ["git/force-push-rebase"])
    )
    code, report = _audit(vault_repo)
    log_check = _check(report, "log")
    assert code == 0 and log_check["status"] == "pass"
    assert log_check["details"] == [f"hook.jsonl:2: commit {'0' * 12} {GONE}"]
    assert "not checked" in log_check["summary"]


def test_a_missing_commit_gets_one_verdict_in_the_log_and_the_sessions(
    vault_repo: VaultRepo, isolated_env: Path
) -> None:
    """Was: the session check failed what the log check passed. Both report it and pass."""
    _vault(vault_repo)
    state = _state(isolated_env)
    (state / "hook.jsonl").write_text(_log_line(vault_repo.root, "0" * 40, ["git/force-push-rebase"]))
    (state / "sessions").mkdir()
    key = hashlib.sha256(b"s").hexdigest()[:32]
    seen = {"commit": "0" * 40, "time": "2026-05-01T12:00:00Z"}
    data = {"session": key, "vault": str(vault_repo.root), "injected": {"git/force-push-rebase": seen}}
    (state / "sessions" / f"{key}.json").write_text(json.dumps(data))
    code, report = _audit(vault_repo)
    assert code == 0
    assert _check(report, "log")["status"] == _check(report, "sessions")["status"] == "pass"
    assert _check(report, "log")["details"] == [f"hook.jsonl:1: commit {'0' * 12} {GONE}"]
    assert _check(report, "sessions")["details"] == [f"{key}.json: commit {'0' * 12} {GONE}"]


def test_an_id_with_spaces_is_an_id_not_free_text(vault_repo: VaultRepo, isolated_env: Path) -> None:
    """Was: audit failed its own log line for a card whose id has spaces (`'injected' holds free text`)."""
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("notes/a card with spaces in it", "Spaces in the id", "An id may hold spaces; it is still an id.")
    commit = vault_repo.commit("A spaced id")
    assert vault_repo.invoke("index").returncode == 0
    state = _state(isolated_env)
    (state / "hook.jsonl").write_text(_log_line(vault_repo.root, commit, ["notes/a card with spaces in it"]))
    code, report = _audit(vault_repo)
    assert code == 0, report
    assert "1 injection(s) of this vault's cards existed" in _check(report, "log")["summary"]


def test_layered_vault_lines_and_sessions_are_checked_per_vault(vault_repo: VaultRepo, isolated_env: Path) -> None:
    """A configured vault's lines name it in `vaults` (bare ids); its session entries carry `vault` and the shown
    id `name:id`."""
    commit = _vault(vault_repo)
    state = _state(isolated_env)
    part = {"name": "team", "vault": str(vault_repo.root), "ref": "refs/heads/main", "commit": commit}
    other = {"name": "mine", "vault": "/elsewhere/mine", "ref": "refs/heads/main", "commit": commit}
    line = json.loads(_log_line(Path("/unused"), None, ["team:git/force-push-rebase", "mine:x/y"]))
    line.update(vault=None, commit=None)
    good = {**line, "vaults": [{**part, "injected": ["git/force-push-rebase"]}, {**other, "injected": ["x/y"]}]}
    bad = {**line, "injected": ["team:git/never-written"], "vaults": [{**part, "injected": ["git/never-written"]}]}
    (state / "hook.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    (state / "sessions").mkdir()
    key = hashlib.sha256(b"s").hexdigest()[:32]
    seen = {"commit": commit, "time": "2026-05-01T12:00:00Z", "vault": str(vault_repo.root)}
    injected = {"team:git/force-push-rebase": seen, "team:git/gone": seen, "mine:x/y": {**seen, "vault": "/else"}}
    data = {"session": key, "vault": "/else", "injected": injected}
    (state / "sessions" / f"{key}.json").write_text(json.dumps(data))
    code, report = _audit(vault_repo)
    assert code == 1
    assert _check(report, "log")["details"] == [f"hook.jsonl:2: card 'git/never-written' did not exist at {commit[:8]}"]
    assert _check(report, "sessions")["details"] == [f"{key}.json: card 'git/gone' did not exist at {commit[:8]}"]


def test_session_files_must_parse_and_name_existing_cards(vault_repo: VaultRepo, isolated_env: Path) -> None:
    commit = _vault(vault_repo)
    sessions = _state(isolated_env) / "sessions"
    sessions.mkdir()
    good = hashlib.sha256(b"good").hexdigest()[:32]
    bad = hashlib.sha256(b"bad").hexdigest()[:32]
    broken = hashlib.sha256(b"broken").hexdigest()[:32]
    seen = {"commit": commit, "time": "2026-05-01T12:00:00Z"}
    for key, injected in ((good, {"git/force-push-rebase": seen}), (bad, {"git/never-written": seen})):
        data = {"session": key, "vault": str(vault_repo.root), "injected": injected, "updated": "2026-05-01T12:00:00Z"}
        (sessions / f"{key}.json").write_text(json.dumps(data))
    (sessions / f"{broken}.json").write_text('{"session": ')
    code, report = _audit(vault_repo)
    assert code == 1
    check = _check(report, "sessions")
    assert check["status"] == "fail"
    assert any(d.startswith(f"{broken}.json: does not parse") for d in check["details"])
    assert f"{bad}.json: card 'git/never-written' did not exist at {commit[:8]}" in check["details"]
    assert not any(d.startswith(good) for d in check["details"])


def test_a_file_in_place_of_the_sessions_folder_fails(vault_repo: VaultRepo, isolated_env: Path) -> None:
    """The hook cannot keep a session there and injects the same card again each prompt: audit passed, saying the
    hook had not run."""
    _vault(vault_repo)
    sessions = _state(isolated_env) / "sessions"
    sessions.write_text("")
    payload = {"session_id": "s1", "cwd": str(vault_repo.root), "hook_event_name": "UserPromptSubmit", "prompt": PROMPT}
    for _ in range(2):
        hooked = vault_repo.cairn(
            "hook", "--format", "claude-code", "--vault", str(vault_repo.root), input=json.dumps(payload)
        )
        assert "git/force-push-rebase" in hooked.stdout  # the same card, twice in one session
    code, report = _audit(vault_repo)
    assert code == 1
    check = _check(report, "sessions")
    assert check["status"] == "fail"
    assert check["summary"].startswith(f"{sessions} is not a folder, so the hook keeps no session")
    sessions.unlink()
    assert _audit(vault_repo)[0] == 0


def test_a_tampered_cache_is_reported_and_cairn_index_rebuilds_it(vault_repo: VaultRepo) -> None:
    _vault(vault_repo)
    index_file = index_file_for(find_vault(vault_repo.root))
    edit_card(index_file, "git/force-push-rebase", blob="f" * 40)
    code, report = _audit(vault_repo)
    assert code == 1
    cache = _check(report, "cache")
    assert (
        cache["status"] == "fail"
        and "card 'git/force-push-rebase': its fields do not match their seal" in (cache["details"])
    )
    assert _check(report, "served")["details"] == [
        f'git/force-push-rebase: blob differs from the committed card (index: "{"f" * 40}", commit: '
        + json.dumps(vault_repo.git("rev-parse", "HEAD:cards/git/force-push-rebase.md"))
        + ")"
    ]

    rebuilt = vault_repo.invoke("index", "--json")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert json.loads(rebuilt.stdout)["mode"] == "full"
    code, report = _audit(vault_repo)
    assert code == 0, report


def test_a_tamper_that_fixes_the_seals_is_caught_against_the_tree(vault_repo: VaultRepo) -> None:
    _vault(vault_repo)
    index_file = index_file_for(find_vault(vault_repo.root))
    edit_card(index_file, "docker/layer-order", blob="e" * 40)
    reseal(index_file)
    code, report = _audit(vault_repo)
    assert code == 1
    assert _check(report, "cache")["status"] == "pass"
    entries_check = _check(report, "entries")
    assert entries_check["status"] == "fail"
    assert entries_check["details"][0].startswith("docker/layer-order: indexed blob eeeeeeeeeeee differs")


def _audit_an_order_edit(
    vault_repo: VaultRepo, index_file: Path, change: Callable[[list[int]], None]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The audit's cache and served checks once the id order is edited by `change` and re-sealed with the key (a
    failing audit)."""
    edit_order(index_file, change)
    reseal(index_file)
    code, report = _audit(vault_repo)
    assert code == 1
    return _check(report, "cache"), _check(report, "served")


def test_an_id_order_resealed_out_of_the_ids_order_is_caught(vault_repo: VaultRepo) -> None:
    """The id order (which of two cards that score alike ranks first) is re-derived from the stored ids: one swapped
    and re-sealed with the key passes every seal, and both the cache check and the re-derivation from the commit
    say so."""
    _vault(vault_repo)
    index_file = index_file_for(find_vault(vault_repo.root))

    def swap_first_two(places: list[int]) -> None:
        first, second = places.index(1), places.index(2)
        places[first], places[second] = 2, 1

    cache, served = _audit_an_order_edit(vault_repo, index_file, swap_first_two)
    assert cache["status"] == "fail" and "its id order is not the order of its cards' ids" in cache["details"]
    assert served["status"] == "fail"
    assert len(served["details"]) == 1 and served["details"][0].startswith(
        "id order: 2 card(s) out of their ids' order"
    )


def test_an_id_order_resealed_to_place_a_row_no_card_holds_is_caught(vault_repo: VaultRepo) -> None:
    """An update that takes a card out leaves its row empty, placed 0 in the id order. The order re-sealed to give
    that row a place, every card's place still right, is one no writer wrote: both the cache check and the
    re-derivation from the commit say it does not place each card once (found by mutation: the cache check's count
    of places was untested)."""
    _vault(vault_repo)
    index_file = index_file_for(find_vault(vault_repo.root))
    gone = "git/force-push-rebase" if card_row(index_file, "git/force-push-rebase") == 1 else "docker/layer-order"
    vault_repo.git("rm", "-q", f"cards/{gone}.md")
    vault_repo.commit("One card out")
    assert vault_repo.invoke("index").returncode == 0
    assert _audit(vault_repo)[0] == 0  # the empty row, placed 0, is no card out of place

    def place_the_empty_row(places: list[int]) -> None:
        assert places[0] == 0 and sorted(places) == [0, 1]
        places[0] = 2

    cache, served = _audit_an_order_edit(vault_repo, index_file, place_the_empty_row)
    assert cache["status"] == "fail" and "its id order does not place each card once" in cache["details"]
    assert served["details"] == ["id order: it does not place each card once"]


def test_garbled_and_truncated_index_files_are_rebuilt(vault_repo: VaultRepo) -> None:
    _vault(vault_repo)
    vault = find_vault(vault_repo.root)
    index_file = index_file_for(vault)
    size = index_file.stat().st_size
    for damage in ("garble", "truncate"):
        data = bytearray(index_file.read_bytes())
        if damage == "garble":
            data[100 : size - 100] = bytes(range(256)) * ((size - 200) // 256) + bytes((size - 200) % 256)
        else:
            data = data[: size // 3]
        index_file.write_bytes(bytes(data))
        code, report = _audit(vault_repo)
        assert code == 1 and _check(report, "cache")["status"] == "fail", damage
        assert build_index(vault).mode == "full", damage
        code, report = _audit(vault_repo)
        assert code == 0, (damage, report)


def test_missing_index_fails_and_says_what_to_do(vault_repo: VaultRepo) -> None:
    vault_repo.write("a/one", "One", "The first summary.")
    vault_repo.commit("Start")
    code, report = _audit(vault_repo)
    assert code == 1
    assert f"run `cairn index --vault {vault_repo.root}`" in _check(report, "cache")["summary"]


def test_the_command_a_failed_audit_names_runs_as_printed_from_another_folder(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed: `cairn audit --vault NAME` run from another folder said "run `cairn index`", which there finds no
    vault (or another one) and fails; the command now names the vault, and runs as printed from that folder."""
    vault_repo.write("a/one", "One", "The first summary.")
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.commit("Start")
    elsewhere = tmp_path / "project"
    elsewhere.mkdir()
    assert vault_repo.invoke("vault", "add", str(vault_repo.root), "--name", "team", cwd=elsewhere).returncode == 0
    for found in index_file_for(find_vault(vault_repo.root)).parent.iterdir():
        found.unlink()
    audited = vault_repo.invoke("audit", "--vault", "team", cwd=elsewhere)
    assert audited.returncode == 1
    cache = next(line for line in audited.stdout.splitlines() if line.startswith("FAIL cache:"))
    assert cache.endswith("; run `cairn index --vault team`"), cache
    assert vault_repo.invoke("index", "--vault", "team", cwd=elsewhere).returncode == 0
    assert vault_repo.invoke("audit", "--vault", "team", cwd=elsewhere).returncode == 0


def test_the_shallow_clone_note_names_commands_that_run_as_printed_from_another_folder(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed: in a shallow clone, audit's provenance note said "`git fetch --unshallow`, then `cairn index
    --rebuild`": from another folder (`cairn audit --vault PATH`) git fetched nothing there and `cairn index` found no
    vault. Both now name the clone; run as printed from that folder, the note is gone."""
    _vault(vault_repo)
    vault_repo.write("docker/later", "A later lesson about layers", "Order the Dockerfile so the cache holds.")
    vault_repo.commit("A later card")
    clone = tmp_path / "shallow clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{vault_repo.root}", str(clone)], check=True)
    elsewhere = tmp_path / "project"
    elsewhere.mkdir()
    assert vault_repo.invoke("index", "--vault", str(clone), cwd=elsewhere).returncode == 0
    done = vault_repo.invoke("audit", "--json", "--vault", str(clone), cwd=elsewhere)
    assert done.returncode == 0, done.stdout
    [note] = _check(json.loads(done.stdout), "provenance")["details"]
    run_unshallow_commands(note, clone, elsewhere)
    done = vault_repo.invoke("audit", "--json", "--vault", str(clone), cwd=elsewhere)
    assert _check(json.loads(done.stdout), "provenance")["details"] == []


def test_require_signed(vault_repo: VaultRepo, tmp_path: Path) -> None:
    _vault(vault_repo)
    code, report = _audit(vault_repo, "--require-signed")
    assert code == 1
    signatures = _check(report, "signatures")
    assert signatures["status"] == "fail"
    assert any("docker/layer-order: last commit" in d and "not signed" in d for d in signatures["details"])

    ssh_signing(vault_repo, tmp_path)
    for card in ("git/force-push-rebase", "docker/layer-order"):
        path = vault_repo.root / "cards" / f"{card}.md"
        path.write_text(path.read_text() + "\nSigned off.\n")
    signed_commit(vault_repo, "Sign every card")
    assert vault_repo.invoke("index").returncode == 0
    code, report = _audit(vault_repo, "--require-signed")
    assert code == 0, report
    assert _check(report, "signatures")["status"] == "pass"
    assert _audit(vault_repo)[0] == 0  # without the flag, no signature check at all
    assert "signatures" not in [c["name"] for c in _audit(vault_repo)[1]["checks"]]


def test_an_unreadable_committed_cairn_toml_is_one_verdict(vault_repo: VaultRepo) -> None:
    """The served commit's cairn.toml cannot be read: the index holds no card; audit says so once, not per card."""
    vault_repo.write("a/b", "A card", "Its summary names nothing in particular.")
    vault_repo.write_raw("cairn.toml", '[lint]\nmax_age_days = "x"\n')
    vault_repo.commit("A bad setting")
    vault_repo.invoke("index")
    code, report = _audit(vault_repo)
    assert code == 1
    config = _check(report, "config")
    assert config["status"] == "fail" and config["summary"].startswith("cairn.toml")
    assert config["summary"].endswith("; nothing is served until a fix is committed")
    assert [c["name"] for c in report["checks"] if c["status"] == "skip"] == ["entries", "served", "provenance"]
    assert [c["name"] for c in report["checks"] if c["status"] == "fail"] == ["config"]


def test_audit_reports_its_progress_over_the_cards(vault_repo: VaultRepo) -> None:
    """Bug fixed: `cairn audit` re-reads every card from the commit (its `served` check) in silence: about 20 s for
    8,000 cards. It now reports the cards read (`audit(progress=)`), a bar on a terminal, nothing when piped."""
    from cairn.index.audit import audit

    vault_repo.write_raw("cairn.toml", "# defaults\n")
    for n in range(60):
        vault_repo.write(f"ops/service{n}", f"Service {n} hangs without a timeout", f"Set timeout{n} on service{n}.")
    vault_repo.commit("Sixty cards")
    vault = find_vault(vault_repo.root)
    build_index(vault)
    heard: list[tuple[int, int]] = []
    report = audit(vault, progress=lambda done, total: heard.append((done, total)))
    assert report.ok, report
    assert heard and heard[-1] == (60, 60) and {total for _, total in heard} == {60}
    code, output = run_on_terminal(["audit"], vault_repo.root)
    assert code == 0, output
    assert b"audit: re-reading the cards  [" in output and b"60/60" in output
    piped = vault_repo.cairn("audit")
    assert piped.returncode == 0 and "[" not in piped.stderr and "Audit passed" in piped.stdout


def test_require_signed_holds_under_log_show_signature(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """With `log.showSignature = true` in the user's git config, git printed its verdict text before each record
    Cairn parsed, so every signed card was `not signed` (audit failed, `cairn show` said unsigned)."""
    vault_repo.write_raw("cairn.toml", "")
    ssh_signing(vault_repo, tmp_path)
    vault_repo.write("a/one", "One", "The first summary.")
    signed = signed_commit(vault_repo, "Signed card")
    vault_repo.git("config", "log.showSignature", "true")
    assert vault_repo.cairn("index").returncode == 0
    done = vault_repo.cairn("audit", "--require-signed", "--json")
    assert done.returncode == 0, done.stdout
    assert _check(json.loads(done.stdout), "signatures")["status"] == "pass"
    shown = vault_repo.cairn("show", "a/one")
    assert f"last changed:    {signed[:8]}" in shown.stdout and "(signed)" in shown.stdout


def test_a_long_hook_log_asks_git_about_each_commit_once(
    vault_repo: VaultRepo, isolated_env: Path, tmp_path: Path
) -> None:
    """Audit asked git whether a log line's commit exists twice per line (a process each): a hook log of 32 MB, tens
    of thousands of lines, took minutes. Each commit is now asked once (counted with GIT_TRACE, not timed)."""
    commit = _vault(vault_repo)
    lines = [_log_line(vault_repo.root, commit, ["docker/layer-order"]) for _ in range(200)]
    lines += [_log_line(vault_repo.root, "0" * 40, ["docker/layer-order"]) for _ in range(100)]
    (_state(isolated_env) / "hook.jsonl").write_text("".join(lines))
    trace = tmp_path / "git-trace.txt"
    done = vault_repo.cairn("audit", "--json", env={"GIT_TRACE": str(trace)})
    log = _check(json.loads(done.stdout), "log")
    assert log["status"] == "pass" and "100 line(s) name commits this repository no longer has" in log["summary"]
    rev_parses = [line for line in trace.read_text().splitlines() if "built-in: git rev-parse" in line]
    assert len(rev_parses) < 10, len(rev_parses)


def test_a_hook_log_naming_many_commits_asks_git_in_batches(
    vault_repo: VaultRepo, isolated_env: Path, tmp_path: Path
) -> None:
    """A vault served through thousands of commits: audit asked git four processes per commit a log line named
    (whether it exists, what it resolves to, its tree), so a log naming 5,000 commits took most of a minute. The
    commits and the cards they name are now asked in batches (counted with GIT_TRACE, not timed); the verdicts are
    the same, a card a commit did not hold still caught."""
    first = _vault(vault_repo)
    commits = [first]
    for n in range(40):
        vault_repo.write("docker/layer-order", "Copy sources after installing deps", f"Order layers, take {n}.")
        commits.append(vault_repo.commit(f"take {n}"))
    lines = [_log_line(vault_repo.root, commit, ["docker/layer-order", "git/force-push-rebase"]) for commit in commits]
    lines.append(_log_line(vault_repo.root, commits[-1][:10], ["docker/never-was"]))
    (_state(isolated_env) / "hook.jsonl").write_text("".join(lines))
    trace = tmp_path / "git-trace.txt"
    done = vault_repo.cairn("audit", "--json", env={"GIT_TRACE": str(trace)})
    log = _check(json.loads(done.stdout), "log")
    assert log["status"] == "fail" and log["details"] == [
        f"hook.jsonl:42: card 'docker/never-was' did not exist at {commits[-1][:8]}"
    ]
    gits = [line for line in trace.read_text().splitlines() if "trace: built-in: git" in line]
    assert len(gits) < 40, len(gits)


def test_a_stale_index_fails_and_says_what_to_run(vault_repo: VaultRepo) -> None:
    """An index built at an older commit than the served branch names now passed the audit (a detail under PASS):
    the hook serves nothing from it until it is indexed again. It now fails, naming both commits and the command;
    the other checks still judge the index at its own commit."""
    first = _vault(vault_repo)
    vault_repo.write("docker/later", "A later lesson about layers", "Order the Dockerfile so the cache holds.")
    later = vault_repo.commit("A later card")  # no git hooks here: the index stays at the first commit
    code, report = _audit(vault_repo)
    assert code == 1
    cache = _check(report, "cache")
    assert cache["status"] == "fail"
    assert cache["summary"] == (
        f"the index is at {first[:8]} but the served ref refs/heads/main is at {later[:8]}: stale, so agents get "
        f"nothing from this vault until it is indexed; run `cairn index --vault {vault_repo.root}`"
    )
    assert [c["status"] for c in report["checks"] if c["name"] != "cache"] == ["pass"] * 5
    text = vault_repo.invoke("audit")
    assert text.returncode == 1 and "Audit failed: 1 of 6 checks failed (cache)." in text.stderr
    assert vault_repo.invoke("index").returncode == 0
    assert _audit(vault_repo)[0] == 0


def test_an_index_checked_by_older_security_rules_fails_as_the_hook_serves_nothing(vault_repo: VaultRepo) -> None:
    """Bug fixed: after an upgrade that adds a security rule, the hook serves nothing from an index its older rules
    checked (a card the new rule refuses may be in it), while audit passed every check. It now fails, naming both
    versions and the command; `cairn index` rebuilds it."""
    commit = _vault(vault_repo)
    index_file = index_file_for(find_vault(vault_repo.root))
    edit_meta(index_file, security_rules="4")
    reseal(index_file)
    code, report = _audit(vault_repo)
    assert code == 1
    cache = _check(report, "cache")
    assert cache["status"] == "fail"
    assert cache["summary"] == (
        f"the index was checked by older security rules ('4', this Cairn's are {SECURITY_RULES_VERSION!r}), so agents "
        f"get nothing from this vault until it is rebuilt; run `cairn index --vault {vault_repo.root}`"
    )
    assert cache["details"] == [f"index at {commit[:8]} opens, passes its structure check and its seals (2 cards)"]
    assert vault_repo.invoke("index").returncode == 0
    assert _audit(vault_repo)[0] == 0


def test_an_index_built_under_a_withdrawn_security_leave_fails_as_the_hook_serves_nothing(
    vault_repo: VaultRepo,
) -> None:
    """Bug fixed: once the user's `[security] allow_disabled_rules` no longer lets the vault switch a rule off, the
    hook serves nothing from the index built under it (a card that rule refuses may be in it), while audit passed
    every check. It now fails the cache check, saying why and what to run."""
    vault_repo.write_raw("cairn.toml", '[lint]\ndisable = ["secret"]\n')
    vault_repo.write("git/force-push-rebase", "Pull --rebase drops commits", "Compare with git reflog before you pull.")
    vault_repo.commit("A vault that switches the secret rule off")
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "cairn" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[security]\nallow_disabled_rules = ["secret"]\n')
    assert vault_repo.invoke("index").returncode == 0
    assert _audit(vault_repo)[0] == 0
    config.write_text("")  # the leave withdrawn
    code, report = _audit(vault_repo)
    assert code == 1
    cache = _check(report, "cache")
    assert cache["status"] == "fail"
    assert cache["summary"].startswith("the index was built while your configuration let the vault switch security")
    assert cache["summary"].endswith(
        f"so agents get nothing from this vault until it is rebuilt; run `cairn index --vault {vault_repo.root}`"
    )
    assert vault_repo.invoke("index").returncode == 0
    assert _audit(vault_repo)[0] == 0


def test_with_git_told_to_read_another_folders_objects_the_audit_names_the_variable(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed (sweep 95's lead): with GIT_OBJECT_DIRECTORY naming another repository's objects, the audit said
    the index names a commit "the repository does not hold" and told the user to run `cairn index`, which fails for
    the same reason. It now names the variable to unset, as `cairn index` and `cairn review` do."""
    _vault(vault_repo)
    other = tmp_path / "other"
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    objects = str(other / ".git" / "objects")
    done = vault_repo.cairn("audit", "--json", env={**os.environ, "GIT_OBJECT_DIRECTORY": objects})
    assert done.returncode == 1, done.stderr
    cache = _check(json.loads(done.stdout), "cache")
    assert cache["status"] == "fail"
    assert cache["summary"].endswith(
        f"which git does not find: GIT_OBJECT_DIRECTORY={objects} in the environment has git read the commits from "
        "there; unset GIT_OBJECT_DIRECTORY, then run this again"
    )


def test_the_checks_that_read_every_stored_card_share_one_reading(vault_repo: VaultRepo, monkeypatch: Any) -> None:
    """Waste removed (sweep 116): served, provenance and signatures each read and parsed every card's stored record
    (0.34 s of CPU a pass over 10,000 cards). They now share one reading: the card rows are read three times, by the
    cache check (`store.verify`), the entries check and that one (counted, not timed), and the verdicts are the same."""
    _vault(vault_repo)
    reads: list[str] = []
    sealed_rows = IndexReader.sealed_rows

    def counted(reader: IndexReader) -> Any:
        reads.append("rows")
        return sealed_rows(reader)

    monkeypatch.setattr(IndexReader, "sealed_rows", counted)
    report = audit(find_vault(vault_repo.root), require_signed=True)
    assert len(reads) == 3
    assert {check.name: check.status for check in report.checks} == {
        "cache": "pass",
        "entries": "pass",
        "served": "pass",
        "provenance": "pass",
        "log": "pass",
        "sessions": "pass",
        "signatures": "fail",
    }
    assert _check(report.to_dict(), "signatures")["summary"] == "2 card(s) lack a good signature"
