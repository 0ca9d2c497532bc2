"""`cairn bench`: LongMemEval and LoCoMo on small fixtures in their formats, with known rankings and metrics."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import cairn_executable

from cairn.membench import load_locomo, load_longmemeval, run_bench
from cairn.membench.metrics import ndcg_at, recall_at
from cairn.membench.ranker import RankSettings, question_query
from cairn.membench.suites import InvalidBenchmark, date_text

FIXTURES = Path(__file__).parent / "fixtures" / "membench"
LONGMEMEVAL = FIXTURES / "longmemeval_tiny.json"
LOCOMO = FIXTURES / "locomo_tiny.json"
KEYS = ["recall@1", "recall@3", "recall@5", "recall@10", "ndcg@10"]


def _bench(*args: str) -> dict[str, object]:
    import subprocess

    done = subprocess.run(
        [cairn_executable(), "bench", *args, "--json"], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_longmemeval_fixture_gives_the_known_metrics() -> None:
    report = _bench("longmemeval", str(LONGMEMEVAL))
    # q-ferret and q-violin: the answer session first. q-passport: the answer session shares no word with the
    # question, so it follows the one returned session in corpus order: rank 3 (NDCG 1/log2(4) = 0.5).
    assert report["questions"] == 3
    assert report["excluded"] == {"abstention": 1}
    assert [report[k] for k in KEYS] == [0.6667, 1.0, 1.0, 1.0, 0.8333]
    assert report["by_type"] == {
        "multi-session": {"questions": 1, "recall@1": 0.0, "recall@3": 1.0, "recall@5": 1.0, "recall@10": 1.0,
                          "ndcg@10": 0.5},
        "single-session-user": {"questions": 2, "recall@1": 1.0, "recall@3": 1.0, "recall@5": 1.0,
                                "recall@10": 1.0, "ndcg@10": 1.0},
    }  # fmt: skip


def test_locomo_fixture_gives_the_known_metrics() -> None:
    report = _bench("locomo", str(LOCOMO))
    multi = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))  # answer sessions 3 and 1 ranked 1st and 3rd of 3
    corpus_order = 1 / math.log2(3)  # nothing returned: the answer session is 2nd in corpus order
    assert report["questions"] == 5
    assert report["excluded"] == {"no_evidence": 1}
    assert report["recall@1"] == 0.8
    assert [report[k] for k in KEYS[1:4]] == [1.0, 1.0, 1.0]
    assert report["ndcg@10"] == round((1 + 1 + multi + 1 + corpus_order) / 5, 4)
    by_type = report["by_type"]
    assert isinstance(by_type, dict)
    assert sorted(by_type) == ["category-1", "category-2", "category-3", "category-4"]
    # Bo's turn (the second speaker) and a shared photo's caption are both indexed.
    assert by_type["category-4"] == {"questions": 2, **dict.fromkeys(KEYS, 1.0)}
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
    assert lines[0] == "longmemeval: 3 questions (left out: 1 abstention)"
    assert lines[1].split() == ["n", *KEYS]
    assert lines[2].split() == ["all", "3", "0.667", "1.000", "1.000", "1.000", "0.833"]
    assert text.stderr == ""  # no progress bar when stderr is not a terminal


def test_bench_rejects_a_file_in_the_wrong_format(tmp_path: Path) -> None:
    import subprocess

    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"not": "a list"}))
    done = subprocess.run(
        [cairn_executable(), "bench", "locomo", str(wrong)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 1
    assert done.stderr.startswith("Error: ") and "LoCoMo" in done.stderr
    missing = subprocess.run(
        [cairn_executable(), "bench", "longmemeval", str(tmp_path / "nope.json")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert missing.returncode == 2


def test_loaders_read_the_formats() -> None:
    lme = load_longmemeval(LONGMEMEVAL)
    assert [q.id for q in lme.questions] == ["q-ferret", "q-violin", "q-passport"]
    # User turns only.
    assert lme.haystacks["q-violin"].sessions[0].turns == ("Tell me something about music.",)
    locomo = load_locomo(LOCOMO)
    assert locomo.questions[2].relevant == frozenset({"conv-a/1", "conv-a/3"})  # "D1:1; D3:2"
    assert [s.id for s in locomo.haystacks["conv-a"].sessions] == ["conv-a/1", "conv-a/2", "conv-a/3"]
    assert locomo.haystacks["conv-a"].sessions[0].turns[2].endswith("a photo of a lighthouse on a rocky cliff")


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
    kept = RankSettings(drop_question_words=False)
    assert question_query("What did Ann mention?", kept) == "What did Ann mention?"


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
