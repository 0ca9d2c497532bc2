"""Recall@k, Injection@k and the false injection rate: one definition, the same figure wherever it is measured."""

from __future__ import annotations

from cairn.quality.calibrate import CasePoint, Thresholds, measure
from cairn.quality.evaluate import Case, CaseOutcome, EvalReport
from cairn.quality.metrics import Metrics, Outcome, metrics_of

T, F = True, False


def test_figures_on_hand_made_outcomes() -> None:
    m = metrics_of(
        [
            Outcome("short", T, (F, T, F), (T,)),  # ranked second, injected first
            Outcome("short", T, (T, F, F), ()),  # ranked first, nothing injected
            Outcome("long", T, (F, F, F), (F, F, T)),  # not in the top 3 ranked, injected third
            Outcome("long", F, (F,), (F,)),  # a negative that got a card
            Outcome("", F, (), ()),  # no slice: counted overall only
        ]
    )
    assert (m.n_pos, m.n_neg) == (3, 2)
    assert (m.recall_at_1, m.recall_at_3) == (0.3333, 0.6667)
    assert (m.injection_at_1, m.injection_at_3) == (0.3333, 0.6667)
    assert m.false_injection_rate == 0.5
    assert sorted(m.by_slice) == ["long", "short"]
    assert m.by_slice["long"].false_injection_rate == 1.0 and m.worst_fir == 1.0
    assert m.by_slice["short"].n_neg == 0 and m.by_slice["short"].false_injection_rate == 0.0


def test_no_cases_give_zero_not_an_error() -> None:
    m = metrics_of([])
    assert m == Metrics(0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, {})


def test_replayed_outcomes_measure_no_recall_and_print_none() -> None:
    m = metrics_of([Outcome("", T, None, (T,)), Outcome("", F, None, ())])
    assert m.recall_at_1 is None and m.recall_at_3 is None
    assert "recall@1" not in m.to_dict() and "recall@1" not in m.eval_dict()
    assert metrics_of([Outcome("", F, None, ())]).recall_at_1 is None  # negatives alone say so too


def test_dict_shapes() -> None:
    sliced = metrics_of([Outcome("a", T, (T,), (T,)), Outcome("b", F, (F,), (F,))])
    assert list(sliced.eval_dict()) == [
        "recall@1",
        "recall@3",
        "injection@1",
        "injection@3",
        "false_injection_rate",
        "n_pos",
        "n_neg",
        "by_slice",
    ]
    assert sliced.to_dict()["worst_false_injection_rate"] == 1.0
    plain = metrics_of([Outcome("", T, (T,), (T,))])
    assert plain.eval_dict()["by_slice"] == {}  # eval always prints the key
    assert "by_slice" not in plain.to_dict() and "worst_false_injection_rate" not in plain.to_dict()


def test_eval_and_calibrate_count_a_case_the_same_way() -> None:
    """The same decisions, once as eval's outcome of a recall run and once as calibrate's replay, give the same
    Injection@k and false injection rate."""
    cases = [
        (Case("p1", "q", ("a",), "s"), ("b", "a"), (True, True)),  # wrong card first, expected one second
        (Case("p2", "q", ("a",), "s"), ("a",), (True,)),
        (Case("p3", "q", ("a",), ""), ("b", "c", "d", "a"), (True, True, True, True)),  # 4th: beyond Injection@3
        (Case("n1", "q", (), "s"), ("x",), (True,)),
        (Case("n2", "q", (), ""), ("y",), (False,)),
    ]
    at = Thresholds(0.5, 0.5, 0.5)
    passes, fails = (0.9, 0.9, 0.9), (0.1, 0.1, 0.1)
    outcomes, points = [], []
    for case, cards, passing in cases:
        run = 0
        while run < len(passing) and passing[run]:
            run += 1
        outcomes.append(CaseOutcome(case, cards[:3], cards[:run]))
        points.append(
            CasePoint(
                case.id,
                case.slice,
                case.positive,
                tuple(passes if ok else fails for ok in passing),
                tuple(card in case.expect for card in cards),
            )
        )
    evaluated = EvalReport(metrics_of(o.scored for o in outcomes), tuple(outcomes)).overall
    replayed = measure(points, at)
    for m in (evaluated, replayed):
        assert (m.injection_at_1, m.injection_at_3, m.false_injection_rate) == (0.3333, 0.6667, 0.5)
        assert m.by_slice["s"].false_injection_rate == 1.0
    assert evaluated.recall_at_1 == 0.3333 and replayed.recall_at_1 is None
