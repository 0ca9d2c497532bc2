"""Hostile and odd input to eval, calibrate and bench: one-line errors, honest figures, nothing forged on a terminal."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from cairn.hot.errors import InvalidCases
from cairn.membench.suites import InvalidBenchmark, load_locomo, load_longmemeval
from cairn.quality.evaluate import load_cases
from helpers.cli import invoke_cli
from helpers.vaults import REBASE_ID, VaultRepo, make_vault

POSITIVE = "git pull --rebase dropped my local commits after a force-push"
NEGATIVE = "how long should sourdough bread rest before baking"


def _cases(path: Path, *cases: dict[str, Any]) -> str:
    path.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return str(path)


def _one_line_error(done: Any) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), done.stderr
    return str(lines[0])


# -- cases naming cards the index does not hold -----------------------------------------------------------------


@pytest.mark.parametrize("command", ["eval", "calibrate"])
def test_a_case_expecting_an_unknown_card_is_refused(vault_repo: VaultRepo, tmp_path: Path, command: str) -> None:
    make_vault(vault_repo)
    cases = _cases(
        tmp_path / "cases.jsonl",
        {"id": "typo", "query": POSITIVE, "expect": ["git/force-push-rebse"]},
        {"id": "neg", "query": NEGATIVE, "expect": []},
    )
    line = _one_line_error(vault_repo.invoke(command, "--cases", cases))
    assert "typo" in line and "git/force-push-rebse" in line and "cairn list" in line


def test_a_known_expected_card_passes_the_check(vault_repo: VaultRepo, tmp_path: Path) -> None:
    make_vault(vault_repo)
    cases = _cases(tmp_path / "cases.jsonl", {"id": "ok", "query": POSITIVE, "expect": [REBASE_ID]})
    done = vault_repo.invoke("eval", "--cases", cases, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["n_pos"] == 1


# -- error messages stay one line -------------------------------------------------------------------------------


def test_a_duplicate_id_with_a_line_break_gives_one_line(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text('- {id: "a\\nError: forged", query: x}\n- {id: "a\\nError: forged", query: y}\n')
    with pytest.raises(InvalidCases) as caught:
        load_cases(path)
    assert "\n" not in str(caught.value) and "appears twice" in str(caught.value)


def test_a_misspelt_key_with_a_line_break_gives_one_line(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps({"id": "a", "query": "x", "expect\n": []}) + "\n")
    with pytest.raises(InvalidCases) as caught:
        load_cases(path)
    assert "\n" not in str(caught.value) and "did you mean 'expect'" in str(caught.value)


@pytest.mark.parametrize("key", ["expected_cards", "cards_expected", "Expected-IDs"])
def test_an_expect_key_spelt_far_off_is_refused_not_read_as_a_negative(tmp_path: Path, key: str) -> None:
    """`expected_cards:` is not close enough to `expect` for difflib: the case silently became a negative (its
    right card "falsely injected"), measuring the wrong thing. A key holding "expect" in a case without one is
    refused; beside an `expect` it is a note of the suite's own, as other keys are."""
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps({"id": "a", "query": "x", key: ["git/x"]}) + "\n")
    with pytest.raises(InvalidCases) as caught:
        load_cases(path)
    assert str(caught.value) == f"{path}:1: unknown key '{key}' in a case; did you mean 'expect'?"
    path.write_text(json.dumps({"id": "a", "query": "x", "expect": ["git/x"], key: "a note"}) + "\n")
    assert [c.expect for c in load_cases(path)] == [("git/x",)]


@pytest.mark.parametrize("suffix", [".jsonl", ".yaml"])
def test_a_case_id_too_long_a_number_to_read_is_one_line(vault_repo: VaultRepo, tmp_path: Path, suffix: str) -> None:
    """Bug fixed: a case id of 5,000 digits (JSON) or 4,000 hex digits (YAML) is an int past Python's limit:
    `cairn eval` failed with `unexpected ValueError: Exceeds the limit (4300 digits) ... (a bug in Cairn)`."""
    make_vault(vault_repo)
    cases = tmp_path / f"cases{suffix}"
    number = "1" * 5000 if suffix == ".jsonl" else "0x" + "f" * 4000
    query = json.dumps(POSITIVE)
    cases.write_text(
        f'{{"query": {query}, "id": {number}}}\n' if suffix == ".jsonl" else f"- {{query: {query}, id: {number}}}\n"
    )
    line = _one_line_error(vault_repo.cairn("eval", "--cases", str(cases)))
    assert "a number" in line and "quote it to keep it as text" in line and "unexpected" not in line


@pytest.mark.parametrize(
    ("name", "data", "what_to_do"),
    [
        ("missing.jsonl", None, "no such cases file; check the path"),
        ("latin1.yaml", b"- {query: caf\xe9}\n", "not UTF-8 text; save it as UTF-8"),
        (
            "cases.json",
            b'[{"query": "x"}]',
            "cases files are .jsonl (one case a line) or .yaml (a list of cases); a JSON list of cases is YAML too: "
            "rename it to .yaml",
        ),
    ],
)
def test_a_cases_file_it_cannot_read_says_what_to_do(
    vault_repo: VaultRepo, tmp_path: Path, name: str, data: bytes | None, what_to_do: str
) -> None:
    """Bug fixed: `no such cases file`, `not UTF-8 text` and `cases files are .jsonl or .yaml` said what was wrong
    and not what to do, as every other error does."""
    make_vault(vault_repo)
    cases = tmp_path / name
    if data is not None:
        cases.write_bytes(data)
    for command in ("eval", "calibrate"):
        assert f"Error: {cases}: {what_to_do}" in _one_line_error(vault_repo.cairn(command, "--cases", str(cases)))


def test_show_of_a_card_the_working_tree_lacks_says_what_to_do(vault_repo: VaultRepo) -> None:
    """Bug fixed: `cairn show --worktree` of a missing card said `no card 'x' in the working tree (...)` and no more."""
    make_vault(vault_repo)
    line = _one_line_error(vault_repo.cairn("show", "--worktree", "git/nope"))
    assert line == (
        "Error: no card 'git/nope' in the working tree (cards/git/nope.md); check the id: a card's path under cards/, "
        "without .md"
    )


def test_a_yaml_syntax_error_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text('- {id: a, query: "x", expect: []}\n- {id: b, query: "y"\n- {id: c, query: z}\n')
    with pytest.raises(InvalidCases, match=r"cases\.yaml:\d+: not valid YAML") as caught:
        load_cases(path)
    assert "\n" not in str(caught.value)


def test_a_duplicate_key_in_a_case_names_its_line(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: a case with a key given twice (a pasted `query:`) was refused as `not valid YAML (duplicate key
    'query')` with no line, in a file of hundreds of cases that all have that key."""
    make_vault(vault_repo)
    cases = tmp_path / "cases.yaml"
    cases.write_text(
        "- id: a\n  query: git pull after a force-push\n  expect: []\n"
        "- id: b\n  query: docker layer cache\n  query: docker layers\n  expect: []\n"
    )
    for command in ("eval", "calibrate"):
        line = _one_line_error(vault_repo.cairn(command, "--cases", str(cases)))
        assert line == f"Error: {cases}:6: not valid YAML (duplicate key 'query')"


def test_calibrate_on_an_empty_cases_file_names_it_and_what_to_add(vault_repo: VaultRepo, tmp_path: Path) -> None:
    make_vault(vault_repo)
    empty = tmp_path / "cases.yaml"
    empty.write_text("")
    line = _one_line_error(vault_repo.invoke("calibrate", "--cases", str(empty)))
    assert str(empty) in line and "expect" in line


# -- the eval table ---------------------------------------------------------------------------------------------


def test_eval_table_slice_names_cannot_forge_lines(vault_repo: VaultRepo, tmp_path: Path) -> None:
    make_vault(vault_repo)
    forged = "x\nall       1.000  1.000  1.000  1.000  0.000    99    99"
    cases = _cases(
        tmp_path / "cases.jsonl",
        {"id": "p", "query": POSITIVE, "expect": [REBASE_ID], "slice": forged},
        {"id": "n", "query": NEGATIVE, "expect": [], "slice": "\x1b[31mred"},
    )
    done = vault_repo.invoke("eval", "--cases", cases, "--failures", "0")
    assert done.returncode == 0, done.stderr
    table = done.stdout.split("R@1, R@3 =")[0].strip().splitlines()
    assert len(table) == 4  # the head, all, and the two slices
    assert sum(1 for line in table if line.startswith("all ")) == 1
    assert "\x1b" not in done.stdout


def test_eval_table_shows_long_slice_names_whole(vault_repo: VaultRepo, tmp_path: Path) -> None:
    make_vault(vault_repo)
    cases = _cases(
        tmp_path / "cases.jsonl",
        {"id": "p", "query": POSITIVE, "expect": [REBASE_ID], "slice": "frontend-team-a"},
        {"id": "n", "query": NEGATIVE, "expect": [], "slice": "frontend-team-b"},
    )
    done = vault_repo.invoke("eval", "--cases", cases, "--failures", "0")
    assert done.returncode == 0, done.stderr
    assert "frontend-team-a " in done.stdout and "frontend-team-b " in done.stdout


def test_eval_table_gives_no_figure_where_there_is_no_case_to_share(vault_repo: VaultRepo, tmp_path: Path) -> None:
    make_vault(vault_repo)
    cases = _cases(
        tmp_path / "cases.jsonl",
        {"id": "p", "query": POSITIVE, "expect": [REBASE_ID], "slice": "pos-only"},
        {"id": "n", "query": NEGATIVE, "expect": [], "slice": "neg-only"},
    )
    done = vault_repo.invoke("eval", "--cases", cases, "--failures", "0")
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()[1:4]}
    # columns: R@1 R@3 Inj@1 Inj@3 FIR pos neg
    assert rows["pos-only"][4] == "-" and rows["pos-only"][0] != "-"
    assert rows["neg-only"][:4] == ["-"] * 4 and rows["neg-only"][4] == "0.000"
    assert "-" not in rows["all"]


# -- calibrate --------------------------------------------------------------------------------------------------


def _calibrate_vault(vault_repo: VaultRepo, tmp_path: Path, **slices: str) -> str:
    make_vault(vault_repo)
    return _cases(
        tmp_path / "cases.jsonl",
        {"id": "p1", "query": POSITIVE, "expect": [REBASE_ID], "slice": slices.get("p", "")},
        {"id": "p2", "query": "docker rebuilds pip install when I COPY the source first", "expect": [
            "docker/layer-cache-order"
        ], "slice": slices.get("p", "")},
        {"id": "n1", "query": NEGATIVE, "expect": [], "slice": slices.get("n", "")},
        {"id": "n2", "query": "which tyres for a winter bicycle commute", "expect": [], "slice": slices.get("n", "")},
    )  # fmt: skip


def test_calibrate_with_one_fold_claims_no_held_out_figures(vault_repo: VaultRepo, tmp_path: Path) -> None:
    cases = _calibrate_vault(vault_repo, tmp_path)
    done = vault_repo.invoke("calibrate", "--cases", cases, "--folds", "1")
    assert done.returncode == 0, done.stderr
    assert "cross-validated:        Inj@1" not in done.stdout
    assert "no case held out" in done.stdout
    data = json.loads(vault_repo.invoke("calibrate", "--cases", cases, "--folds", "1", "--json").stdout)
    assert data["best"]["cross_validated"] is None
    assert all(p["cross_validated"] is None for p in data["tradeoff"])
    # with folds, the held-out figures are there
    data = json.loads(vault_repo.invoke("calibrate", "--cases", cases, "--folds", "2", "--json").stdout)
    assert data["best"]["cross_validated"]["n_pos"] == 2


def test_calibrate_slice_names_cannot_forge_lines(vault_repo: VaultRepo, tmp_path: Path) -> None:
    cases = _calibrate_vault(vault_repo, tmp_path, p="a\nForged line", n="b\nForged line")
    done = vault_repo.invoke("calibrate", "--cases", cases, "--folds", "2")
    assert done.returncode == 0, done.stderr
    assert not any(line.startswith("Forged") for line in done.stdout.splitlines())


def test_calibrate_takes_a_case_id_that_is_no_valid_unicode(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: a JSON Lines case id holding a lone surrogate escape (`"id": "p\\ud800"`, what a tool that cut a
    string inside an emoji writes) passed `cairn eval`, but `cairn calibrate` failed with `unexpected
    UnicodeEncodeError ... (a bug in Cairn)` hashing it into a fold."""
    cases = Path(_calibrate_vault(vault_repo, tmp_path))
    cases.write_text(cases.read_text("utf-8").replace('"id": "p1"', '"id": "p\\ud800"'), encoding="utf-8")
    assert json.loads(cases.read_text("utf-8").splitlines()[0])["id"] == "p\ud800"
    done = vault_repo.cairn("calibrate", "--cases", str(cases), "--folds", "2", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["n_cases"] == 4


def test_calibrate_gives_no_rate_for_a_slice_without_negatives(vault_repo: VaultRepo, tmp_path: Path) -> None:
    cases = _calibrate_vault(vault_repo, tmp_path, p="posonly", n="negonly")
    done = vault_repo.invoke("calibrate", "--cases", cases, "--folds", "2")
    assert done.returncode == 0, done.stderr
    current = next(line for line in done.stdout.splitlines() if line.startswith("Current"))
    assert "posonly -" in current and ("negonly 0.000" in current or "negonly 1.000" in current)


# -- bench ------------------------------------------------------------------------------------------------------


def _lme(qid: str, answer: str, sessions: dict[str, str], qtype: str = "single-session-user") -> dict[str, Any]:
    return {
        "question_id": qid,
        "question_type": qtype,
        "question": "where did I park the car",
        "question_date": "2023/05/20 (Sat) 02:21",
        "haystack_session_ids": list(sessions),
        "haystack_dates": ["2023/05/01 (Mon) 10:00"] * len(sessions),
        "haystack_sessions": [[{"role": "user", "content": text}] for text in sessions.values()],
        "answer_session_ids": [answer],
    }


@pytest.mark.parametrize("suite", ["longmemeval", "locomo"])
def test_bench_on_a_file_without_questions_is_an_error(tmp_path: Path, suite: str) -> None:
    path = tmp_path / "empty.json"
    path.write_text("[]")
    line = _one_line_error(invoke_cli(["bench", suite, str(path)]))
    assert "no question" in line


def test_bench_on_a_file_whose_questions_are_all_left_out_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "abs.json"
    path.write_text(json.dumps([_lme("q1_abs", "s1", {"s1": "I parked on level 3"})]))
    line = _one_line_error(invoke_cli(["bench", "longmemeval", str(path)]))
    assert "no question" in line and "abstention" in line


def test_longmemeval_refuses_a_question_id_given_twice(tmp_path: Path) -> None:
    path = tmp_path / "dup.json"
    path.write_text(
        json.dumps(
            [
                _lme("q1", "s1", {"s1": "I parked the car on level 3", "s2": "pizza tonight"}),
                _lme("q1", "x2", {"x1": "nothing here", "x2": "more pizza"}),
            ]
        )
    )
    with pytest.raises(InvalidBenchmark, match="q1.*twice"):
        load_longmemeval(path)


def test_locomo_refuses_a_conversation_id_given_twice(tmp_path: Path) -> None:
    conversation = {"session_1": [{"speaker": "A", "text": "we hiked"}], "session_1_date_time": "8 May, 2023"}
    record = {"sample_id": "c1", "conversation": conversation, "qa": [{"question": "hike?", "evidence": ["D1:1"]}]}
    path = tmp_path / "dup.json"
    path.write_text(json.dumps([record, record]))
    with pytest.raises(InvalidBenchmark, match="c1.*twice"):
        load_locomo(path)


def test_locomo_leaves_out_a_question_whose_evidence_names_no_session(tmp_path: Path) -> None:
    conversation = {"session_1": [{"speaker": "A", "text": "we hiked"}], "session_1_date_time": "8 May, 2023"}
    qa = [{"question": "hike?", "evidence": ["D1:1"], "category": 1}, {"question": "x?", "evidence": ["somewhere"]}]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([{"sample_id": "c1", "conversation": conversation, "qa": qa}]))
    suite = load_locomo(path)
    assert [q.id for q in suite.questions] == ["c1/q1"]
    assert suite.excluded == {"unreadable_evidence": 1}


def test_bench_question_types_cannot_forge_lines(tmp_path: Path) -> None:
    path = tmp_path / "lme.json"
    forged = "t\nall          9      1.000      1.000      1.000      1.000      1.000"
    path.write_text(json.dumps([_lme("q1", "s1", {"s1": "I parked the car on level 3"}, qtype=forged)]))
    done = invoke_cli(["bench", "longmemeval", str(path)])
    assert done.returncode == 0, done.stderr
    assert sum(1 for line in done.stdout.splitlines() if line.startswith("all ")) == 1


def test_longmemeval_leaves_out_a_question_without_an_answer_session(tmp_path: Path) -> None:
    path = tmp_path / "lme.json"
    empty = {**_lme("q2", "s1", {"s1": "I parked the car on level 3"}), "answer_session_ids": []}
    path.write_text(json.dumps([_lme("q1", "s1", {"s1": "I parked the car on level 3"}), empty]))
    suite = load_longmemeval(path)
    assert [q.id for q in suite.questions] == ["q1"]
    assert suite.excluded == {"no_answer_session": 1}
    done = invoke_cli(["bench", "longmemeval", str(path), "--json"])
    assert json.loads(done.stdout)["recall@1"] == 1.0  # the unscorable question does not pull it to 0.5


def test_bench_leaves_out_a_question_whose_answer_session_its_haystack_lacks(tmp_path: Path) -> None:
    """An answer session id (LongMemEval) or evidence session (LoCoMo) that the haystack does not hold, as a typo in
    a converted file gives: the question could only score 0 and pulled every figure down, silently (and a second,
    present answer session scored NDCG against an ideal it could not reach). It is left out, with its count."""
    lme = tmp_path / "lme.json"
    typo = _lme("q2", "s9", {"s1": "I parked the car on level 3"})
    lme.write_text(json.dumps([_lme("q1", "s1", {"s1": "I parked the car on level 3"}), typo]))
    done = invoke_cli(["bench", "longmemeval", str(lme), "--json"])
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["questions"] == 1 and data["recall@1"] == 1.0 and data["excluded"] == {"no_answer_session": 1}
    conversation = {"session_1": [{"speaker": "A", "text": "we hiked"}], "session_1_date_time": "8 May, 2023"}
    qa = [{"question": "hike?", "evidence": ["D1:1", "D7:2"], "category": 1}, {"question": "x?", "evidence": ["D4:1"]}]
    locomo = tmp_path / "locomo.json"
    locomo.write_text(json.dumps([{"sample_id": "c1", "conversation": conversation, "qa": qa}]))
    done = invoke_cli(["bench", "locomo", str(locomo), "--json"])
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["questions"] == 1 and data["ndcg@10"] == 1.0 and data["excluded"] == {"unreadable_evidence": 1}


def test_cases_with_the_same_query_share_a_fold(vault_repo: VaultRepo) -> None:
    # c0 and c2 hash to different folds of 5; the same question under two ids must not be fitted on in one fold and
    # measured as held out in the other.
    from cairn.config import RecallSettings
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer
    from cairn.quality.calibrate import fold_of, gather
    from cairn.quality.evaluate import Case

    assert fold_of("c0", 5) != fold_of("c2", 5)
    make_vault(vault_repo)
    cases = [
        Case("c0", POSITIVE, (REBASE_ID,)),
        Case("c2", "  " + POSITIVE.upper() + " ", (REBASE_ID,)),
        Case("c3", NEGATIVE, ()),
    ]
    with indexer.open_index(find_vault(vault_repo.root)) as index:
        points = gather(index, cases, settings=RecallSettings(), folds=5)
    assert points[0].fold == points[1].fold == fold_of("c0", 5)
    assert points[2].fold == fold_of("c3", 5)


def test_a_jsonl_cases_file_with_a_byte_order_mark_reads(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": "a", "query": "x"}).encode() + b"\n")
    assert [c.id for c in load_cases(path)] == ["a"]


@pytest.mark.parametrize("name", ["lme.json", "lme.json.gz"])
def test_a_benchmark_file_with_a_byte_order_mark_reads(tmp_path: Path, name: str) -> None:
    """A file saved by a Windows editor or PowerShell starts with a byte order mark: a cases file read, a benchmark
    file said `not JSON (Unexpected UTF-8 BOM (decode using utf-8-sig) ...)`, an advice no user of Cairn can take."""
    path = tmp_path / name
    data = b"\xef\xbb\xbf" + json.dumps([_lme("q1", "s1", {"s1": "I parked the car on level 3"})]).encode()
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    done = invoke_cli(["bench", "longmemeval", str(path), "--json"])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["questions"] == 1


def test_a_gzipped_benchmark_file_reads_whatever_its_name(tmp_path: Path) -> None:
    """A gzipped file not named `.gz` (a download saved as `.json`, `<(cat file.gz)`) said `not UTF-8 text; a
    benchmark file is UTF-8 JSON`, though it was the very file the help's example reads."""
    path = tmp_path / "lme.json"
    path.write_bytes(gzip.compress(json.dumps([_lme("q1", "s1", {"s1": "I parked the car on level 3"})]).encode()))
    done = invoke_cli(["bench", "longmemeval", str(path), "--json"])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["questions"] == 1


def test_a_truncated_benchmark_file_says_where_its_json_breaks(tmp_path: Path) -> None:
    """A download cut short inside a string said `not JSON (Unterminated string starting at at line 1)`: a doubled
    word, and line 1 of a file published as one line says nothing of where."""
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([_lme("q1", "s1", {"s1": "I parked the car on level 3"})])[:100])
    line = _one_line_error(invoke_cli(["bench", "longmemeval", str(path)]))
    assert line.endswith(": not JSON (Unterminated string starting at line 1, column 76)"), line


def test_an_answer_session_or_evidence_given_as_a_string_is_that_one_id(tmp_path: Path) -> None:
    """`"answer_session_ids": "s1"` (LongMemEval) or `"evidence": "D1:1"` (LoCoMo), one id not in a list, was read
    character by character: no character named a session, and the question was left out as having no answer."""
    lme = tmp_path / "lme.json"
    lme.write_text(
        json.dumps([{**_lme("q1", "s1", {"s1": "I parked the car on level 3"}), "answer_session_ids": "s1"}])
    )
    assert [q.relevant for q in load_longmemeval(lme).questions] == [frozenset({"s1"})]
    conversation = {"session_1": [{"speaker": "A", "text": "we hiked"}], "session_1_date_time": "8 May, 2023"}
    locomo = tmp_path / "locomo.json"
    qa = [{"question": "hike?", "evidence": "D1:1", "category": 1}]
    locomo.write_text(json.dumps([{"sample_id": "c1", "conversation": conversation, "qa": qa}]))
    assert [q.relevant for q in load_locomo(locomo).questions] == [frozenset({"c1/1"})]


def test_a_haystack_whose_lists_differ_in_length_says_which(tmp_path: Path) -> None:
    """One date short said `(ValueError: zip() argument 2 is shorter than argument 1)`: Python's words, no field."""
    path = tmp_path / "lme.json"
    record = _lme("q1", "s1", {"s1": "I parked the car on level 3", "s2": "pizza"})
    path.write_text(json.dumps([{**record, "haystack_dates": record["haystack_dates"][:1]}]))
    line = _one_line_error(invoke_cli(["bench", "longmemeval", str(path)]))
    assert line.endswith(
        "question #1 is not in the LongMemEval format (2 haystack_session_ids, 1 haystack_dates, "
        "2 haystack_sessions; each session needs its id, its date and its turns)"
    ), line


def test_a_benchmark_file_whose_sessions_hold_no_text_is_an_error(tmp_path: Path) -> None:
    """Turns under other keys (ShareGPT's `{"from": "human", "value": ...}`) left every document empty: every question
    was ranked in corpus order, and `cairn bench` printed those figures (Recall@1 0.026 on the dev half), exit 0."""
    record = _lme("q1", "s1", {"s1": "I parked the car on level 3", "s2": "pizza"})
    record["haystack_sessions"] = [[{"from": "human", "value": text}] for text in ("I parked on level 3", "pizza")]
    lme = tmp_path / "lme.json"
    lme.write_text(json.dumps([record]))
    assert '"role": "user"' in _one_line_error(invoke_cli(["bench", "longmemeval", str(lme)]))
    conversation = {"session_1": [{"speaker": "A", "content": "we hiked"}], "session_1_date_time": "8 May, 2023"}
    locomo = tmp_path / "locomo.json"
    qa = [{"question": "hike?", "evidence": ["D1:1"], "category": 1}]
    locomo.write_text(json.dumps([{"sample_id": "c1", "conversation": conversation, "qa": qa}]))
    assert '"text"' in _one_line_error(invoke_cli(["bench", "locomo", str(locomo)]))


@pytest.mark.parametrize(("given", "meant"), [("longmemeval", "locomo"), ("locomo", "longmemeval")])
def test_a_benchmark_file_of_the_other_format_says_which_command_reads_it(
    tmp_path: Path, given: str, meant: str
) -> None:
    conversation = {"session_1": [{"speaker": "A", "text": "we hiked"}]}
    records = {
        "locomo": [{"sample_id": "c1", "conversation": conversation, "qa": []}],
        "longmemeval": [_lme("q1", "s1", {"s1": "I parked"})],
    }
    path = tmp_path / "file.json"
    path.write_text(json.dumps(records[meant]))
    line = _one_line_error(invoke_cli(["bench", given, str(path)]))
    assert f"cairn bench {meant}" in line


def test_bench_on_a_damaged_gzip_or_a_huge_number_is_one_line(tmp_path: Path) -> None:
    """A gzip file whose compressed data is damaged (zlib.error) and a number of thousands of digits (Python's
    int-string limit, a ValueError from json) each ended as "unexpected error ... a bug in Cairn"."""
    packed = bytearray(gzip.compress(json.dumps([_lme("q1", "s1", {"s1": "I parked on level 3"})]).encode()))
    packed[15] ^= 0xFF
    packed[20] ^= 0xFF
    damaged = tmp_path / "damaged.json.gz"
    damaged.write_bytes(bytes(packed))
    line = _one_line_error(invoke_cli(["bench", "longmemeval", str(damaged)]))
    assert "gzip" in line and "bug" not in line
    huge = tmp_path / "huge.json"
    huge.write_text('[{"question_id": ' + "9" * 5000 + "}]")
    for suite in ("longmemeval", "locomo"):
        line = _one_line_error(invoke_cli(["bench", suite, str(huge)]))
        assert "huge.json" in line and "bug" not in line
