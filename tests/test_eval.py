"""`cairn eval`: case files to metrics, per slice, with exactly the decisions `cairn recall` makes."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from cairn.cli.recall_cmds import EVAL_LEGEND
from cairn.hot.errors import InvalidCases
from cairn.quality.evaluate import load_cases
from helpers.payloads import FITTING_PROMPT
from helpers.vaults import REBASE_ID, VaultRepo, make_vault

FIXTURE = Path(__file__).parent / "fixtures" / "recall_vault"
KEYS = {"recall@1", "recall@3", "injection@1", "injection@3", "false_injection_rate", "n_pos", "n_neg"}


@pytest.fixture
def fixture_vault(vault_repo: VaultRepo) -> VaultRepo:
    shutil.copytree(FIXTURE / "cards", vault_repo.root / "cards", dirs_exist_ok=True)
    vault_repo.commit("fixture cards")
    return vault_repo


def _eval(repo: VaultRepo, cases: Path, *extra: str) -> dict[str, Any]:
    done = repo.invoke("eval", "--cases", str(cases), "--json", *extra)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_eval_json_has_the_contract_keys(fixture_vault: VaultRepo) -> None:
    data = _eval(fixture_vault, FIXTURE / "cases.yaml")
    assert set(data) == KEYS | {"commit", "by_slice", "cases"}
    assert set(data["by_slice"]) == {"short", "long"}
    assert all(set(m) == KEYS for m in data["by_slice"].values())
    assert all(set(c) == {"id", "expect", "ranked", "injected"} for c in data["cases"])
    assert data["n_pos"] == 4 and data["n_neg"] == 2


def test_eval_json_names_the_commit_it_measured_while_another_process_updates_the_index(
    fixture_vault: VaultRepo,
) -> None:
    """Bug fixed: `cairn eval --json` named no commit, so while another process updated an index behind its branch
    (eval then measures the older index, and says so only in a warning on stderr) a script could not tell which
    commit's cards its figures were of."""
    import fcntl

    measured = fixture_vault.git("rev-parse", "HEAD")
    done = fixture_vault.cairn("index", "--json")
    assert done.returncode == 0, done.stderr
    fixture_vault.write("notes/later", "A later lesson", "Something else to know.")
    fixture_vault.commit("Later card")
    with open(json.loads(done.stdout)["index"] + ".lock", "rb") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)  # another process is rebuilding the index
        evaluated = fixture_vault.cairn("eval", "--cases", str(FIXTURE / "cases.yaml"), "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)["commit"] == measured
    assert f"the index is of {measured[:8]}" in evaluated.stderr


def test_eval_metrics_on_the_fixture(fixture_vault: VaultRepo) -> None:
    data = _eval(fixture_vault, FIXTURE / "cases.yaml")
    # Recall@k reads the ranking before the gates, of the cards that can be served: the superseded card, which
    # outranks its successor for one case, is not among them (it counted, and that case's right card "missed" its
    # Recall@1 while it was injected).
    assert data["recall@1"] == 1.0 and data["recall@3"] == 1.0 and data["injection@1"] == 1.0
    force = next(c for c in data["cases"] if c["id"] == "en-force-push")
    assert force["ranked"][0] == "git/force-push-safely" and "git/force-push-plain" not in force["ranked"]
    assert force["injected"] == ["git/force-push-safely"]
    # from the fixture's folder: `--vault PATH` refuses it as the hook does (no cairn.toml)
    explained = fixture_vault.invoke("explain", "--json", "force push")
    assert explained.returncode == 0, explained.stderr
    assert "git/force-push-plain" in explained.stdout  # still ranked by recall, refused at admission
    assert data["false_injection_rate"] == 0.0
    by_slice = data["by_slice"]
    assert by_slice["long"]["n_pos"] == 1 and by_slice["long"]["injection@1"] == 1.0


def test_jsonl_and_yaml_cases_agree(fixture_vault: VaultRepo) -> None:
    yaml_cases = {c["id"]: c for c in _eval(fixture_vault, FIXTURE / "cases.yaml")["cases"]}
    for case in _eval(fixture_vault, FIXTURE / "cases.jsonl")["cases"]:
        assert yaml_cases[case["id"]] == case


def test_eval_makes_exactly_the_decisions_recall_makes(fixture_vault: VaultRepo) -> None:
    cases = load_cases(FIXTURE / "cases.yaml")
    outcomes = {c["id"]: c for c in _eval(fixture_vault, FIXTURE / "cases.yaml")["cases"]}
    for case in cases:
        done = fixture_vault.invoke("recall", case.query, "--json")
        recalled = [c["id"] for c in json.loads(done.stdout)["cards"]]
        assert outcomes[case.id]["injected"] == recalled, case.id


def test_eval_scope_is_applied_like_recall(fixture_vault: VaultRepo) -> None:
    data = _eval(fixture_vault, FIXTURE / "cases.jsonl", "--scope", "python")
    assert data["injection@1"] == 0.0
    recalled = json.loads(
        fixture_vault.invoke("recall", "切换分支之前怎么暂存未提交的修改？", "--json", "--scope", "python").stdout
    )
    assert recalled["cards"] == []


def test_eval_text_table(fixture_vault: VaultRepo) -> None:
    done = fixture_vault.invoke("eval", "--cases", str(FIXTURE / "cases.yaml"))
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["R@1", "R@3", "Inj@1", "Inj@3", "FIR", "pos", "neg"]
    assert [line.split()[0] for line in lines[1:4]] == ["all", "long", "short"]
    assert lines[4:] == [EVAL_LEGEND, "", "No failing cases."]
    assert "FIR = false_injection_rate" in EVAL_LEGEND and "Inj@1, Inj@3 = injection@1, injection@3" in EVAL_LEGEND
    assert "\r" not in done.stderr  # no progress bar when stderr is not a terminal


FAILING_CASES = """\
- id: pos-ok
  query: "git rejects my push after a rebase; can I use git push --force on our shared branch?"
  expect: [git/force-push-safely]
  slice: short
- id: pos-miss
  query: "Before you touch any files, read the README first. Question from a teammate: why does
    datetime.utcnow() give a naive datetime that is treated as local time? Don't change anything yet"
  expect: [zh/git-stash]
  slice: long
- id: neg-hit
  query: "Why does datetime.utcnow() give a naive datetime that is treated as local time?"
  expect: []
- id: neg-ok
  query: "How do I center a div with CSS grid?"
  expect: []
  slice: short
"""
MISSED = (
    '  pos-miss  [long]  "Before you touch any files, read the README first. Question from a teammate: wh…"'
    "  expected zh/git-stash  got python/utcnow-naive"
)
FALSE = (
    '  neg-hit  [-]  "Why does datetime.utcnow() give a naive datetime that is treated as local time?"'
    "  expected nothing  got python/utcnow-naive"
)


def test_eval_text_lists_the_failing_cases(fixture_vault: VaultRepo, tmp_path: Path) -> None:
    cases = tmp_path / "failing.yaml"
    cases.write_text(FAILING_CASES, encoding="utf-8")
    done = fixture_vault.invoke("eval", "--cases", str(cases))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[5:] == [
        "",
        "Failing cases: 1 positive(s) without an expected card, 1 negative(s) given a card:",
        MISSED,
        FALSE,
    ]
    done = fixture_vault.invoke("eval", "--cases", str(cases), "--failures", "1")
    assert done.stdout.splitlines()[5:] == [
        "",
        "Failing cases: 1 positive(s) without an expected card, 1 negative(s) given a card; "
        "the first 1 (--failures N shows more):",
        MISSED,
    ]
    done = fixture_vault.invoke("eval", "--cases", str(cases), "--failures", "0")
    assert len(done.stdout.splitlines()) == 5  # the table and its legend only
    assert fixture_vault.invoke("eval", "--cases", str(cases), "--failures", "-1").returncode == 2


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("bad.jsonl", '{"id": "a", "query": "x", "expect": []}\nnot json\n', "bad.jsonl:2: not JSON"),
        ("bad.yaml", "id: a\n", "a YAML cases file is a list"),
        ("noquery.yaml", "- id: a\n  expect: []\n", "'query' must be non-empty text"),
        ("badexpect.jsonl", '{"id": "a", "query": "x", "expect": 3}\n', "'expect' must be a list"),
        ("twice.jsonl", '{"id": "a", "query": "x"}\n{"id": "a", "query": "y"}\n', "appears twice"),
        ("cases.txt", "x", "cases files are .jsonl"),
    ],
)
def test_bad_cases_files(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidCases, match=message.replace("(", r"\(").replace(".", r"\.")):
        load_cases(path)


def test_a_json_list_of_cases_is_told_the_rename_that_reads_it(fixture_vault: VaultRepo, tmp_path: Path) -> None:
    """A cases.json holding a JSON list of cases was told "rename it to the one it is": renamed .jsonl as the
    message offers, it failed again ("a case is a mapping", or "not JSON" when indented). It is now told to rename
    it to .yaml, which reads it as it is."""
    cases = [{"id": "a", "query": "center a div with flexbox", "expect": []}]
    listed = tmp_path / "cases.json"
    listed.write_text(json.dumps(cases, indent=2), encoding="utf-8")
    done = fixture_vault.invoke("eval", "--cases", str(listed))
    assert done.returncode == 1 and "a JSON list of cases is YAML too: rename it to .yaml" in done.stderr
    renamed = listed.rename(tmp_path / "cases.yaml")
    assert fixture_vault.invoke("eval", "--cases", str(renamed)).returncode == 0
    lines = tmp_path / "lines.json"  # one case a line, named .json: not a list, so not told .yaml
    lines.write_text(json.dumps(cases[0]) + "\n", encoding="utf-8")
    assert "rename it to the one it is" in fixture_vault.invoke("eval", "--cases", str(lines)).stderr


def test_bad_cases_file_is_one_error_line(fixture_vault: VaultRepo, tmp_path: Path) -> None:
    bad = tmp_path / "cases.jsonl"
    bad.write_text("{\n", encoding="utf-8")
    done = fixture_vault.invoke("eval", "--cases", str(bad))
    assert done.returncode == 1 and done.stderr.startswith("Error: ") and len(done.stderr.splitlines()) == 1


def test_missing_cases_option_is_a_usage_error(fixture_vault: VaultRepo) -> None:
    assert fixture_vault.invoke("eval").returncode == 2


def test_a_large_yaml_cases_file_loads(tmp_path: Path) -> None:
    """Case files share the bounded YAML loader with cards, but not the card frontmatter's 64 KiB limit."""
    from cairn.quality.evaluate import load_cases

    path = tmp_path / "cases.yaml"
    path.write_text(
        "".join(
            f"- id: c{i}\n  query: how do I fix problem {i} in the build pipeline\n  expect: []\n  slice: short\n"
            for i in range(3000)
        )
    )
    assert path.stat().st_size > 64 * 1024
    assert len(load_cases(path)) == 3000


def test_eval_reads_a_long_query_as_the_hook_does(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """A case past the hook's cut (pasted logs) is judged on what the hook reads: words beyond it decide nothing."""
    make_vault(vault_repo)
    query = "Here is some log output that says nothing in particular. " * 150 + FITTING_PROMPT
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        json.dumps({"id": "long", "query": query, "expect": [REBASE_ID]})
        + "\n"
        + json.dumps({"id": "none", "query": "weather in Paris", "expect": []})
        + "\n",
        encoding="utf-8",
    )
    served = vault_repo.cairn("recall", "-", "--json", input=query)
    assert served.returncode == 0, served.stderr
    assert json.loads(served.stdout)["cards"] == []  # the hook's cut leaves the fitting words out
    done = vault_repo.cairn("eval", "--cases", str(cases), "--json")
    assert done.returncode == 0, done.stderr
    case = next(c for c in json.loads(done.stdout)["cases"] if c["id"] == "long")
    assert case["injected"] == []


def test_eval_text_table_lines_up_a_slice_named_in_chinese(fixture_vault: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: the slice column was padded by characters, so a slice named in Chinese (two columns a character
    on a terminal) pushed its figures right of every other row's."""
    import unicodedata

    cases = tmp_path / "zh.yaml"
    cases.write_text(FAILING_CASES.replace("slice: long", "slice: 中文长问题"), encoding="utf-8")
    lines = fixture_vault.invoke("eval", "--cases", str(cases)).stdout.splitlines()[:4]
    assert [line.split()[0] for line in lines[1:]] == ["all", "short", "中文长问题"], lines

    def columns(text: str) -> int:  # what a terminal gives them
        return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)

    assert len({columns(line) for line in lines}) == 1, lines


def test_eval_on_a_branch_that_renames_a_card_says_the_served_ref_lacks_it(vault_repo: VaultRepo) -> None:
    """Bug fixed: on a branch that renamed a card and its cases with it, `cairn eval --cases evals/cases.yaml` (the
    served ref's cards against the branch's cases) said "fix the id": the id was right. It now says the served ref
    does not have the branch's cards yet and that --worktree reads them; calibrate says the same."""
    make_vault(vault_repo)
    vault_repo.git("checkout", "-q", "-b", "rename")
    vault_repo.git("mv", f"cards/{REBASE_ID}.md", "cards/git/rebase.md")
    vault_repo.write_raw(
        "evals/cases.jsonl", json.dumps({"id": "one", "query": FITTING_PROMPT, "expect": ["git/rebase"]})
    )
    vault_repo.commit("Rename the rebase card")
    for command in ("eval", "calibrate"):
        done = vault_repo.invoke(command, "--cases", "evals/cases.jsonl")
        assert done.returncode == 1, done.stdout + done.stderr
        assert "fix the id" not in done.stderr
        assert "the commit checked out changes cards that main (the ref agents are served) does not have yet" in (
            done.stderr
        )
    assert vault_repo.invoke("eval", "--cases", "evals/cases.jsonl", "--worktree").returncode == 0
    vault_repo.git("checkout", "-q", "main")
    vault_repo.write_raw("evals/typo.jsonl", json.dumps({"id": "typo", "query": FITTING_PROMPT, "expect": ["git/x"]}))
    typo = vault_repo.invoke("eval", "--cases", "evals/typo.jsonl")
    assert typo.returncode == 1 and "fix the id" in typo.stderr  # on the served branch the id is what is wrong


def test_eval_on_a_branch_that_changes_a_card_says_its_figures_are_the_served_refs(vault_repo: VaultRepo) -> None:
    """An author who improved a card on a branch ran `cairn eval` and saw the served ref's figures, unchanged, with
    nothing saying they were not the branch's. Eval and calibrate now note it, and that --worktree reads the branch."""
    make_vault(vault_repo)
    vault_repo.write_raw(
        "evals/cases.jsonl",
        json.dumps({"id": "one", "query": FITTING_PROMPT, "expect": [REBASE_ID]})
        + "\n"
        + json.dumps({"id": "none", "query": "what is the weather like today", "expect": []}),
    )
    vault_repo.commit("Cases")
    vault_repo.git("checkout", "-q", "-b", "aliases")
    card = vault_repo.root / "cards" / f"{REBASE_ID}.md"
    card.write_text(card.read_text().replace("scope: [", "aliases: [lost commits]\nscope: ["))
    vault_repo.commit("An alias")
    note = "Note: the commit checked out changes cards that main (the ref agents are served) does not have yet; "
    done = vault_repo.invoke("eval", "--cases", "evals/cases.jsonl")
    assert done.returncode == 0, done.stderr
    assert note + "the figures below are of its cards; `--worktree` measures those checked out." in done.stderr
    fitted = vault_repo.invoke("calibrate", "--cases", "evals/cases.jsonl", "--folds", "1")
    assert note + "the fit below is on its cards; `--worktree` fits on those checked out." in fitted.stderr
    for command in ("eval", "calibrate"):
        assert "Note:" not in vault_repo.invoke(command, "--cases", "evals/cases.jsonl", "--worktree").stderr
        assert vault_repo.invoke(command, "--cases", "evals/cases.jsonl", "--json").stderr == ""  # stdout alone
    vault_repo.git("checkout", "-q", "main")
    assert "Note:" not in vault_repo.invoke("eval", "--cases", "evals/cases.jsonl").stderr


def test_eval_worktree_with_an_unknown_id_does_not_send_to_the_served_refs_list(vault_repo: VaultRepo) -> None:
    """Bug fixed: `cairn eval --worktree` (and calibrate) with a case expecting a card no file checked out holds said
    "`cairn list` shows the cards": the served ref's, not the working tree's that --worktree reads. It now says
    where the ids it reads come from, and the lint that names the card files left out."""
    make_vault(vault_repo)
    vault_repo.write_raw("evals/typo.jsonl", json.dumps({"id": "typo", "query": FITTING_PROMPT, "expect": ["git/x"]}))
    for command in ("eval", "calibrate"):
        done = vault_repo.invoke(command, "--cases", "evals/typo.jsonl", "--worktree")
        assert done.returncode == 1, done.stdout + done.stderr
        assert "fix the id (a card's id is its file's path under cards/, without .md;" in done.stderr, done.stderr
        assert "cairn list" not in done.stderr and "`cairn lint` shows the card files left out" in done.stderr


def test_eval_from_another_folder_names_commands_that_ask_the_vault_given(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed: `cairn eval --cases C --vault V` (and calibrate) run outside the vault, with a case expecting no
    card the index holds, said "fix the id (`cairn list` shows the cards, `cairn lint` those left out)": run as
    printed there, both said there is no vault here. They now ask the vault given."""
    make_vault(vault_repo)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cases = elsewhere / "cases.jsonl"
    cases.write_text(json.dumps({"id": "typo", "query": FITTING_PROMPT, "expect": ["git/x"]}), encoding="utf-8")
    for command in ("eval", "calibrate"):
        done = vault_repo.cairn(command, "--cases", str(cases), "--vault", str(vault_repo.root), cwd=elsewhere)
        assert done.returncode == 1 and "fix the id" in done.stderr, done.stderr
        told = re.findall(r"`(cairn [^`]+)`", done.stderr)
        assert [t.split()[1] for t in told] == ["list", "lint"], done.stderr
        for line in told:
            ran = vault_repo.cairn(*shlex.split(line)[1:], cwd=elsewhere)
            assert "Error" not in ran.stderr and ran.returncode == 0, (line, ran.stderr)
            assert REBASE_ID in ran.stdout or "cairn lint: 0 errors" in ran.stdout + ran.stderr, (line, ran.stdout)
