"""Bad input to `cairn list`, `recall`, `explain` and `demo`: a prompt the hook would not read as given (empty,
over its cut, binary, not UTF-8), an empty --ref or --scope, dates at the contract's limits, and what the demo
leaves behind."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from pathlib import Path

from cairn.hot.hook import MAX_QUERY_CHARS
from helpers.payloads import FITTING_PROMPT
from helpers.vaults import REBASE_ID, VaultRepo, cairn_executable, make_vault, run_cairn


def _run_bytes(repo: VaultRepo, *args: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    """The installed `cairn ARGS` with raw bytes on stdin (what a pipe of a binary or Latin-1 file gives)."""
    return subprocess.run(
        [cairn_executable(), *args], cwd=repo.root, input=stdin, capture_output=True, check=False, timeout=120
    )


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr
    assert lines and lines[-1].startswith("Error: "), stderr
    return lines[-1]


def _hook_ids(repo: VaultRepo, prompt: str) -> list[str]:
    done = repo.cairn("hook", "--format", "json", "--vault", str(repo.root), input=json.dumps({"prompt": prompt}))
    assert done.returncode == 0, done.stderr
    return [card["id"] for card in json.loads(done.stdout)["cards"]]


def test_a_prompt_longer_than_the_hooks_cut_gets_what_the_hook_gives(vault_repo: VaultRepo) -> None:
    """The hook reads a prompt's first MAX_QUERY_CHARS characters; recall and explain read the same part, so a
    question pasted after a long log gets from them what it gets from the hook: nothing here."""
    make_vault(vault_repo)
    filler = "Here is the build log, line after line of it. " * (MAX_QUERY_CHARS // 40)
    prompt = filler + FITTING_PROMPT
    assert len(filler) > MAX_QUERY_CHARS
    assert _hook_ids(vault_repo, prompt) == []
    assert _hook_ids(vault_repo, FITTING_PROMPT) == [REBASE_ID]  # the question alone fits
    for args, given in ((("recall", "--json", "-"), prompt), (("recall", "--json", prompt), None)):
        done = vault_repo.cairn(*args, input=given)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {
            "cards": [],
            "abstained": True,
            "commit": vault_repo.git("rev-parse", "HEAD"),
        }
    explained = vault_repo.cairn("explain", "--json", "-", input=prompt)
    assert explained.returncode == 0, explained.stderr
    data = json.loads(explained.stdout)
    assert data["abstained"] and data["query"] == prompt[:MAX_QUERY_CHARS]
    text = vault_repo.cairn("explain", "-", input=prompt)
    assert text.returncode == 0 and f"first {MAX_QUERY_CHARS} characters" in text.stdout


def test_an_empty_query_is_a_usage_error(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    for command in ("recall", "explain"):
        for query in ("", "   \n\t"):
            for extra in ((), ("--json",)):
                done = vault_repo.cairn(command, *extra, query)
                assert done.returncode == 2, (command, query, done.stdout)
                assert done.stdout == ""
                assert "QUERY is empty" in done.stderr and "Traceback" not in done.stderr


def test_binary_or_non_utf8_stdin_is_refused_as_the_hook_refuses_it(vault_repo: VaultRepo) -> None:
    """The hook (text format) serves nothing for stdin that is not UTF-8 or holds NUL bytes; recall and explain
    say so in one line instead of serving cards the hook never would, or echoing lone surrogates as JSON."""
    make_vault(vault_repo)
    latin1 = FITTING_PROMPT.encode() + b" caf\xe9"
    binary = FITTING_PROMPT.encode() + b"\x00\x01\x02"
    for command in ("recall", "explain"):
        for stdin, said in ((latin1, "not UTF-8"), (binary, "binary")):
            done = _run_bytes(vault_repo, command, "--json", "-", stdin=stdin)
            assert done.returncode == 2, (command, done.stdout)
            assert done.stdout == b""
            line = _one_error_line(done.stderr.decode())
            assert said in line


def test_a_non_utf8_query_argument_is_a_usage_error(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    query = os.fsdecode(FITTING_PROMPT.encode() + b" caf\xe9")  # as Python decodes a Latin-1 argument
    for command in ("recall", "explain"):
        done = subprocess.run(
            [os.fsencode(cairn_executable()), os.fsencode(command), b"--json", os.fsencode(query)],
            cwd=vault_repo.root,
            capture_output=True,
            check=False,
            timeout=120,
        )
        assert done.returncode == 2 and done.stdout == b""
        assert "not UTF-8" in _one_error_line(done.stderr.decode())


def test_stdin_over_the_hooks_limit_is_refused_without_reading_it_all(vault_repo: VaultRepo) -> None:
    from cairn.hot.hook import MAX_STDIN_BYTES

    make_vault(vault_repo)
    huge = (FITTING_PROMPT + " ").encode() * (MAX_STDIN_BYTES // len(FITTING_PROMPT) + 10)
    assert len(huge) > MAX_STDIN_BYTES
    done = _run_bytes(vault_repo, "recall", "-", stdin=huge)
    assert done.returncode == 2 and done.stdout == b""
    assert "MiB" in _one_error_line(done.stderr.decode())


def test_an_empty_ref_is_a_usage_error_not_the_default_branch(vault_repo: VaultRepo) -> None:
    """`--ref ""` (an unset variable) read the default branch, not the vault's served ref; it is refused."""
    make_vault(vault_repo)
    for command in ("recall", "explain"):
        done = vault_repo.cairn(command, "--ref", "", FITTING_PROMPT)
        assert done.returncode == 2 and done.stdout == ""
        assert "--ref is empty" in done.stderr and "Traceback" not in done.stderr


def test_list_scope_takes_comma_separated_tags_and_refuses_an_empty_one(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    done = vault_repo.cairn("list", "--json", "--scope", "git, Docker")
    assert done.returncode == 0, done.stderr
    assert [c["id"] for c in json.loads(done.stdout)["cards"]] == ["docker/layer-cache-order", REBASE_ID]
    for value in ("", " , "):
        empty = vault_repo.cairn("list", "--scope", value)
        assert empty.returncode == 2 and empty.stdout == ""
        assert "--scope" in empty.stderr and "no tag" in empty.stderr


def test_recall_explain_and_eval_refuse_a_scope_with_no_tag(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """`--scope "$SCOPE"` with the variable unset meant every scope, silently: an eval measured without the scope
    it was asked for, a recall that served cards of every scope. It is a usage error, as `cairn list` has it."""
    make_vault(vault_repo)
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "p", "query": FITTING_PROMPT, "expect": [REBASE_ID]}) + "\n", encoding="utf-8")
    for command in (["recall", FITTING_PROMPT], ["explain", FITTING_PROMPT], ["eval", "--cases", str(cases)]):
        for value in ("", " , "):
            done = vault_repo.cairn(*command, "--scope", value)
            assert done.returncode == 2 and done.stdout == "", command
            assert _one_error_line(done.stderr).startswith("Error: Invalid value for '--scope': ")
            assert "holds no tag" in done.stderr
        assert vault_repo.cairn(*command, "--scope", "git,").returncode == 0, command


def test_list_with_a_verified_at_near_the_last_date(vault_repo: VaultRepo) -> None:
    """verified_at 9999-12-31 is not a crash: like any date after its commit it counts from the commit's day (the
    index does not believe it); 0001-01-01 is long due."""
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("git/late", "A card verified at the end of time", "Some summary text.", verified_at="9999-12-31")
    vault_repo.write("git/early", "A card verified at the start", "Other summary.", verified_at="0001-01-01")
    vault_repo.commit()
    done = vault_repo.cairn("list", "--json")
    assert done.returncode == 0, done.stderr
    cards = {c["id"]: c for c in json.loads(done.stdout)["cards"]}
    committed = dt.date.fromisoformat(vault_repo.git("log", "-1", "--format=%as"))
    assert cards["git/late"]["due"] is False
    assert cards["git/late"]["due_on"] == (committed + dt.timedelta(days=365)).isoformat()
    assert cards["git/early"]["due"] is True and cards["git/early"]["due_on"] == "0002-01-01"
    text = vault_repo.cairn("list", "--due")
    assert text.returncode == 0 and "git/early" in text.stdout and "git/late" not in text.stdout


def test_list_due_names_a_card_on_its_review_date_as_its_help_says(vault_repo: VaultRepo) -> None:
    """Bug fixed: `list --due` lists a card on its review date itself (the day it is to be reviewed by, still served),
    but its help said "past their date", which only the next day is."""
    today = dt.date.today().isoformat()
    vault_repo.write("git/today", "A card to review today", "Some summary text.", review_after=today)
    vault_repo.commit()
    listed = vault_repo.cairn("list", "--due").stdout
    if dt.date.today().isoformat() == today:  # a run that crossed midnight finds it expired: nothing to compare
        line = listed.splitlines()[0]
        assert line.split()[:2] == ["git/today", "active"] and line.endswith(f"review by {today}  -  DUE"), listed
    assert "(their review date reached, or never verified)" in " ".join(
        vault_repo.cairn("list", "--help").stdout.split()
    )


def test_list_and_show_name_a_superseded_card(vault_repo: VaultRepo) -> None:
    """Bug fixed: an active card another active card supersedes is never served, yet `cairn list` (and its JSON)
    and `cairn show` called it "active", and `list --due` asked for it to be reviewed."""
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("git/lease", "Use --force-with-lease", "Push with --force-with-lease, not --force.")
    vault_repo.write(
        "git/safely",
        "Force-push safely",
        "Push with --force-with-lease --force-if-includes.",
        supersedes=["git/lease"],
    )
    vault_repo.commit()
    cards = {c["id"]: c for c in json.loads(vault_repo.cairn("list", "--json").stdout)["cards"]}
    assert (cards["git/lease"]["status"], cards["git/lease"]["superseded_by"], cards["git/lease"]["due"]) == (
        "superseded",
        ["git/safely"],
        False,
    )
    assert (cards["git/safely"]["status"], cards["git/safely"]["superseded_by"]) == ("active", [])
    assert "git/lease" not in vault_repo.cairn("list", "--due").stdout
    shown = vault_repo.cairn("show", "git/lease")
    assert "status: active (superseded by git/safely: not served)" in shown.stdout
    assert json.loads(vault_repo.cairn("show", "git/lease", "--json").stdout)["superseded_by"] == ["git/safely"]


def test_list_and_show_name_an_expired_card(vault_repo: VaultRepo) -> None:
    """Bug fixed: an active card past its review date is never served (explain, the hook log and review say
    `expired`), yet `cairn list` and its JSON called it "active", and `cairn show` said nothing of it; a review_after
    date with no verified_at was not shown at all. Expired and superseded, it is expired, as recall says it."""
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("git/lease", "Use --force-with-lease", "Push with --force-with-lease, not --force.")
    vault_repo.write("git/stale", "Rebase before push", "Rebase on main before you push.", review_after="2020-01-01")
    vault_repo.write(
        "git/safely",
        "Force-push safely",
        "Push with --force-with-lease --force-if-includes.",
        supersedes=["git/lease", "git/stale"],
        verified_at="2020-01-01",
        review_after="30d",
    )
    vault_repo.commit()
    cards = {c["id"]: c for c in json.loads(vault_repo.cairn("list", "--json").stdout)["cards"]}
    assert (cards["git/safely"]["status"], cards["git/safely"]["due"]) == ("expired", True)
    assert (cards["git/stale"]["status"], cards["git/stale"]["due"]) == ("expired", False)  # superseded: not due
    assert cards["git/lease"]["status"] == "superseded"
    assert "git/safely  expired" in vault_repo.cairn("list", "--due").stdout
    shown = vault_repo.cairn("show", "git/safely").stdout
    assert "status: active (review date 2020-01-31 passed: not served until it is verified again)" in shown
    shown = vault_repo.cairn("show", "git/stale").stdout
    # Bug fixed: it said "not served until review_after is set to a later date", and a later date would not serve
    # it: git/safely, active, supersedes it as well
    assert "status: active (review date 2020-01-01 passed, and superseded by git/safely: not served)" in shown
    assert "verified: never    expires: 2020-01-01" in shown
    vault_repo.write("git/unsuperseded", "Pull before push", "Pull before you push to main.", review_after="2020-01-01")
    vault_repo.commit()
    # review_after is a date: a new verified_at would not serve it again
    assert (
        "status: active (review date 2020-01-01 passed: not served until review_after is set to a later date)"
        in vault_repo.cairn("show", "git/unsuperseded").stdout
    )


def test_demo_leaves_no_index_behind(tmp_path: Path, isolated_env: Path) -> None:
    cache = Path(os.environ["CAIRN_CACHE_DIR"])
    state = Path(os.environ["CAIRN_STATE_DIR"])
    done = run_cairn("demo", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not cache.exists() or not any(cache.iterdir()), sorted(map(str, cache.rglob("*")))
    assert not state.exists() or not any(state.iterdir())
    kept = tmp_path / "kept"
    done = run_cairn("demo", "--keep", str(kept), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    listed = run_cairn("list", "--json", cwd=kept)  # the kept vault's index is where Cairn looks for it
    assert listed.returncode == 0 and len(json.loads(listed.stdout)["cards"]) > 5
    assert any(cache.rglob("index.cairn"))


def test_demo_shows_what_rejected_cards_miss_as_explain_does(tmp_path: Path) -> None:
    done = run_cairn("demo", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "small_lead" in done.stdout and "; missing: " in done.stdout
    # a follow-up, as agents mostly get, stays silent: the evidence floor (it got two cards before it)
    assert "6. A follow-up, as agents mostly get: ok, run the tests\n   Cairn stays silent: " in done.stdout


def test_list_fails_when_no_configured_vault_can_be_listed(tmp_path: Path) -> None:
    """Outside any vault with several configured and every one unreadable (moved), `cairn list` said nothing on
    stdout and exited 0 (`{"vaults": []}` with --json), where recall and explain fail: one error line, exit 1."""
    names = ("one", "two")
    for name in names:
        repo = VaultRepo(tmp_path / name)
        make_vault(repo)
        done = run_cairn("vault", "add", str(repo.root), "--name", name, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    assert run_cairn("list", "--json", cwd=outside).returncode == 0
    for name in names:
        (tmp_path / name).rename(tmp_path / f"{name}-moved")
    for extra in ((), ("--json",)):
        done = run_cairn("list", *extra, cwd=outside)
        assert done.returncode == 1 and done.stdout == "", done.stdout
        line = _one_error_line(done.stderr)
        assert "one" in line and "two" in line and "cairn vault" in line


def test_list_warns_of_a_configured_vault_it_cannot_open_and_lists_the_others(tmp_path: Path) -> None:
    """Bug fixed: a configured vault whose folder the system refuses to open (no permission; here a name too long,
    which root meets as well) made `cairn list` outside any vault one `Error:` line, listing no vault, while a moved
    one is a warning and recall, explain and the hook serve the others. It is a warning line now."""
    repo = VaultRepo(tmp_path / "team")
    make_vault(repo)
    assert run_cairn("vault", "add", str(repo.root), "--name", "team", cwd=tmp_path).returncode == 0
    far = tmp_path / ("x" * 300)
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "cairn" / "config.toml"
    config.write_text(config.read_text() + f'\n[[vaults]]\nname = "far"\npath = "{far}"\n')
    done = run_cairn("list", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"team:{REBASE_ID}" in done.stdout
    [line] = done.stderr.splitlines()
    assert line.startswith(f"Warning: vault 'far' ({far}) is not listed: File name too long ("), line


def test_list_says_how_many_card_files_the_index_left_out(tmp_path: Path) -> None:
    """Bug fixed: `cairn list` of a vault whose index refused a committed card said "2 card(s)" and nothing of it, a
    card its author believes served. One note on stderr counts them and names the command that says why, as
    doctor and `cairn index` do; listed with another configured vault, it names the vault."""
    repo = VaultRepo(tmp_path / "team")
    make_vault(repo)
    repo.write_raw("cards/big/broken.md", "---\nname: [unclosed\n---\n")
    repo.commit("A broken card")
    done = repo.cairn("list")
    assert done.returncode == 0 and "2 card(s) at " in done.stdout, done.stdout
    assert done.stderr == "Note: 1 card file(s) left out of the index, not listed (see `cairn lint`).\n"
    assert repo.cairn("list", "--json").stderr == ""  # JSON's reader is told nothing on the side
    other = VaultRepo(tmp_path / "other")
    make_vault(other)
    for name, vault in (("team", repo), ("other", other)):
        assert run_cairn("vault", "add", str(vault.root), "--name", name, cwd=tmp_path).returncode == 0
    both = run_cairn("list", cwd=tmp_path)
    assert both.returncode == 0 and "team: 2 card(s)" in both.stdout, both.stdout
    assert both.stderr == (
        "Note: vault 'team': 1 card file(s) left out of the index, not listed (see `cairn lint --vault team`).\n"
    )


def test_list_shows_a_status_with_a_line_break_on_its_cards_line(vault_repo: VaultRepo) -> None:
    """Bug fixed: `cairn list` printed a card's status as the card spells it, so an unknown status holding a line
    break (`status: "draft\\nforged/card  active ..."`) printed a row of its own, for a card the vault has not."""
    make_vault(vault_repo)
    forged = "forged/card  active   verified 2026-01-01  review by 2099-01-01  git"
    vault_repo.write("odd/status", "Odd status", "A card whose status forges a row.", status=f'"draft\\n{forged}"')
    vault_repo.commit("A card with an odd status")
    done = vault_repo.cairn("list")
    assert done.returncode == 0, done.stderr
    assert not any(line.startswith("forged/card") for line in done.stdout.splitlines()), done.stdout
    (row,) = [line for line in done.stdout.splitlines() if line.startswith("odd/status")]
    assert f"draft?{forged}" in row
    listed = json.loads(vault_repo.cairn("list", "--json").stdout)
    assert {c["id"]: c["status"] for c in listed["cards"]}["odd/status"] == f"draft\n{forged}"  # JSON: exact


def test_list_shows_an_empty_status_as_the_card_has_it_not_active(vault_repo: VaultRepo) -> None:
    """Bug fixed: a card with `status: ''` is no active card (lint's status-value refuses it, recall rejects it as an
    unknown status, so agents never get it), yet `cairn list` and its JSON called it "active"."""
    make_vault(vault_repo)
    vault_repo.write("odd/empty-status", "Empty status", "A card whose status is an empty string.", status="''")
    vault_repo.commit("A card with an empty status")
    explained = json.loads(vault_repo.cairn("explain", "--json", "A card whose status is an empty string").stdout)
    assert explained["injected"] == [] and explained["candidates"][0]["reason"] == "unknown_status"
    listed = json.loads(vault_repo.cairn("list", "--json").stdout)
    assert {c["id"]: c["status"] for c in listed["cards"]}["odd/empty-status"] == ""
    (row,) = [line for line in vault_repo.cairn("list").stdout.splitlines() if line.startswith("odd/empty-status")]
    assert "active" not in row


def test_a_command_run_in_a_removed_folder_says_so(tmp_path: Path) -> None:
    """Bug fixed: run from a folder removed while the shell stood in it, `cairn list`, `recall` and `show` said only
    `Error: No such file or directory`, naming no file and nothing to do; `cairn init x` named only `x`."""
    gone = tmp_path / "gone"
    gone.mkdir()
    # `cairn init x` named the relative path alone: `Error: No such file or directory (x)`
    for args in (["list"], ["recall", "a prompt"], ["show", "git/x"], ["init", "x", "--no-register"]):
        script = f'cd "{gone}" && rmdir "{gone}" && exec "$0" "$@"'
        done = subprocess.run(
            ["sh", "-c", script, cairn_executable(), *args], capture_output=True, text=True, check=False, timeout=120
        )
        assert gone.exists() is False
        assert (done.returncode, done.stdout) == (1, ""), done.stderr
        assert done.stderr == (
            "Error: the current folder no longer exists (removed?); cd into one that does and run this again\n"
        )
        gone.mkdir()


def test_a_vault_named_by_path_is_read_from_a_removed_folder(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: with `--vault PATH`, a command run from a removed folder needs no folder of its own, but `list`,
    `show` and `audit` failed with git's "Unable to read current working directory": the card reads ran git in it."""
    make_vault(vault_repo)
    gone = tmp_path / "gone"
    for args in (["list"], ["show", REBASE_ID], ["audit"]):
        gone.mkdir()
        script = f'cd "{gone}" && rmdir "{gone}" && exec "$0" "$@"'
        command = [cairn_executable(), *args, "--vault", str(vault_repo.root)]
        done = subprocess.run(["sh", "-c", script, *command], capture_output=True, text=True, check=False, timeout=120)
        assert gone.exists() is False
        assert done.returncode == 0, done.stderr
        assert "Unable to read current working directory" not in done.stdout + done.stderr


def test_list_of_a_named_vault_from_another_folder_says_a_show_that_runs_there(tmp_path: Path) -> None:
    """Bug fixed: `cairn list --vault NAME` run outside the vault, with several configured, ended "`cairn show ID`
    prints one", and that command, run there, failed (it asks which vault); it now names the vault list was given."""
    for name in ("one", "two"):
        repo = VaultRepo(tmp_path / name)
        make_vault(repo)
        assert run_cairn("vault", "add", str(repo.root), "--name", name, cwd=tmp_path).returncode == 0
    listed = run_cairn("list", "--vault", "two", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[-1].endswith("; `cairn show ID --vault two` prints one.")
    shown = run_cairn("show", REBASE_ID, "--vault", "two", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
