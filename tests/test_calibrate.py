"""`cairn calibrate`: the grid fit (against a brute force), cross-validation, agreement with `cairn eval`, --write."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.config import RecallSettings
from cairn.hot.errors import CairnError
from cairn.quality.calibrate import (
    CasePoint,
    Thresholds,
    _Grid,
    calibrate,
    fold_of,
    measure,
    write_thresholds,
)
from helpers.cli import invoke_cli
from helpers.vaults import VaultRepo


def point(
    case_id: str,
    positive: bool,
    top: tuple[float, float, float] | None,
    hit: bool = True,
    slice_: str = "",
    fold: int = 0,
) -> CasePoint:
    return CasePoint(case_id, slice_, positive, (top,) if top else (), (hit,) if top else (), fold)


# A fixture small enough to solve by hand (grid step 0.1).
FIXTURE = [
    point("a", True, (0.5, 0.6, 0.7)),
    point("b", True, (0.3, 0.8, 0.9)),
    point("c", True, (0.9, 0.9, 0.9), hit=False),  # wrong card on top: never an Injection@1 hit
    point("d", False, (0.4, 0.5, 0.8)),
    point("e", False, (0.2, 0.3, 0.2)),
    point("f", True, None),  # no candidate at all
]


def test_fit_on_a_fixture_matches_the_hand_solution() -> None:
    # Both hits need score <= 0.3, coverage <= 0.6, margin <= 0.7; coverage 0.6 then also stops both negatives.
    # Ties go to the strictest point: margin 0.7, coverage 0.6, score 0.3.
    result = calibrate(FIXTURE, RecallSettings(), target_fir=0.0, folds=1, step=0.1, targets=(0.5,))
    assert result.best.thresholds == Thresholds(0.3, 0.6, 0.7)
    assert result.best.fitted.to_dict() == {
        "injection@1": 0.5,
        "injection@3": 0.5,
        "false_injection_rate": 0.0,
        "n_pos": 4,
        "n_neg": 2,
    }
    # at FIR <= 0.5 the same two hits are the most; the lower FIR wins the tie
    loose = next(p for p in result.tradeoff if p.target_fir == 0.5)
    assert loose.thresholds == Thresholds(0.3, 0.6, 0.7)
    # the current thresholds are replayed as they are (not snapped to the grid)
    assert result.current == Thresholds(0.24, 0.38, 0.275)
    assert result.current_measure.injection_at_1 == 0.5
    assert result.current_measure.false_injection_rate == 0.5  # d passes the shipped gates


def test_every_slice_must_hold_the_target() -> None:
    points = [
        point("p1", True, (0.5, 0.5, 0.5), slice_="long"),
        point("p2", True, (0.5, 0.5, 0.5), slice_="short"),
        point("p3", True, (0.5, 0.5, 0.9), slice_="short"),
        point("n1", False, (0.5, 0.5, 0.5), slice_="long"),
        *(point(f"n{i}", False, (0.1, 0.1, 0.1), slice_="short") for i in range(2, 12)),
    ]
    # Overall 1 false injection in 11 negatives is under 0.1, but it is 1 of 1 on the long slice.
    result = calibrate(points, RecallSettings(), target_fir=0.1, folds=1, step=0.1, targets=())
    assert result.best.thresholds.min_margin > 0.5
    assert result.best.fitted.injection_at_1 == pytest.approx(1 / 3, abs=1e-4)
    assert result.best.fitted.by_slice["long"].false_injection_rate == 0.0


def test_injection_is_a_run_from_the_top() -> None:
    # The second card is expected, but it is never injected when the first card fails a gate.
    p = CasePoint("x", "", True, ((0.1, 0.1, 0.1), (0.9, 0.9, 0.9)), (False, True))
    assert p.injected(Thresholds(0.5, 0.5, 0.5)) == 0
    assert p.injected(Thresholds(0.0, 0.0, 0.0)) == 2
    assert measure([p], Thresholds(0.0, 0.0, 0.0)).injection_at_3 == 1.0


def _brute(points: list[CasePoint], target: float, step: float, leave_out: int | None = None) -> Thresholds:
    """The fit, the slow way: replay every grid point with `measure`."""
    use = [p for p in points if p.fold != leave_out]
    values = [round(k * step, 6) for k in range(round(1 / step) + 1)]
    best, best_key = None, None
    for s, c, m in itertools.product(range(len(values)), repeat=3):
        t = Thresholds(values[s], values[c], values[m])
        got = measure(use, t)
        groups = [got, *got.by_slice.values()]
        if any(g.n_neg and g.false_injection_rate > target + 1e-9 for g in groups):
            continue
        hits = sum(1 for p in use if p.positive and p.injected(t) and p.hits[0])
        negs = [
            sum(1 for p in use if not p.positive and p.injected(t) and (not name or p.slice == name))
            for name in ["", *sorted(got.by_slice)]
        ]
        n_negs = [g.n_neg for g in [got, *(got.by_slice[n] for n in sorted(got.by_slice))]]
        rates = [n / d if d else 0.0 for n, d in zip(negs, n_negs, strict=True)]
        key = (hits, -max(rates), -rates[0], m, c, s)
        if best_key is None or key > best_key:
            best, best_key = t, key
    # Nothing feasible (a negative passes even the strictest point): the fit falls back to the strictest point.
    return best if best is not None else Thresholds(values[-1], values[-1], values[-1])


gate = st.tuples(*(st.sampled_from([0.0, 0.12, 0.25, 0.5, 0.75, 1.0]),) * 3)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), st.one_of(st.none(), gate), st.booleans(), st.sampled_from(["", "a", "b"])),
        min_size=2,
        max_size=14,
    ),
    st.sampled_from([0.0, 0.2, 0.5]),
)
def test_grid_fit_equals_brute_force(
    raw: list[tuple[bool, tuple[float, float, float] | None, bool, str]], target: float
) -> None:
    points = [point(f"c{i}", pos, top, hit, sl, fold=i % 2) for i, (pos, top, hit, sl) in enumerate(raw)]
    grid = _Grid(points, 0.25, 2)
    assert grid.fit(target) == _brute(points, target, 0.25)
    assert grid.fit(target, leave_out=0) == _brute(points, target, 0.25, leave_out=0)


def test_related_cards_that_fit_alike_inject_together_in_the_replay() -> None:
    """Card 1 fails the margin against card 2, which fits about as well; the pair stands clear of card 3."""
    p = CasePoint(
        "x", "", True, ((0.3, 0.8, 0.1), (0.4, 0.6, 0.6), (0.0, 0.1, 0.0)), (True, False, False), 0, (True, True, False)
    )
    assert p.injected(Thresholds(0.2, 0.5, 0.3)) == 2  # the group of two
    assert p.injected(Thresholds(0.2, 0.7, 0.3)) == 0  # card 2 fails coverage: no group, card 1 fails margin
    assert p.injected(Thresholds(0.5, 0.5, 0.3)) == 0  # the pair's lead over card 3 is too small
    assert p.boxes() == [(0.3, 0.8, 0.1), (0.4, 0.6, 0.6)]
    alone = CasePoint("y", "", True, p.top, p.hits, 0, (True, False, False))
    assert alone.injected(Thresholds(0.2, 0.5, 0.3)) == 0 and alone.boxes() == [(0.3, 0.8, 0.1)]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.booleans(),
            st.lists(gate, min_size=1, max_size=3),
            st.lists(st.booleans(), min_size=3, max_size=3),
            st.booleans(),
            st.sampled_from(["", "a"]),
        ),
        min_size=2,
        max_size=12,
    ),
    st.sampled_from([0.0, 0.2, 0.5]),
)
def test_grid_fit_with_groups_equals_brute_force(
    raw: list[tuple[bool, list[tuple[float, float, float]], list[bool], bool, str]], target: float
) -> None:
    points = [
        CasePoint(f"g{i}", sl, pos, tuple(top), (hit,) + (False,) * (len(top) - 1), i % 2, (True, *alike[1 : len(top)]))
        for i, (pos, top, alike, hit, sl) in enumerate(raw)
    ]
    grid = _Grid(points, 0.25, 2)
    assert grid.fit(target) == _brute(points, target, 0.25)
    assert grid.fit(target, leave_out=1) == _brute(points, target, 0.25, leave_out=1)


def test_cross_validation_measures_each_fold_at_the_others_fit() -> None:
    points = [
        point(f"q{i}", i % 3 != 0, ((i % 7) / 7, (i % 5) / 5, (i % 4) / 4), hit=i % 4 != 1, slice_="s")
        for i in range(40)
    ]
    points = [CasePoint(p.id, p.slice, p.positive, p.top, p.hits, fold_of(p.id, 3)) for p in points]
    result = calibrate(points, RecallSettings(), target_fir=0.1, folds=3, step=0.25, targets=())
    fits = result.best.fold_thresholds
    assert len(fits) == 3
    held = sum(1 for p in points if p.positive and p.injected(fits[p.fold]) and p.hits[0])
    n_pos = sum(p.positive for p in points)
    assert result.best.cross_validated.injection_at_1 == round(held / n_pos, 4)
    # a hash of the id, not the position in the file, and the same in every run: not Python's salted `hash`
    ids = [f"q{i}" for i in range(20)]
    script = f"from cairn.quality.calibrate import fold_of; print([fold_of(i, 5) for i in {ids!r}])"
    for seed in ("1", "2"):
        run = subprocess.run(
            [sys.executable, "-c", script], env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True
        )
        assert run.stdout == f"{[fold_of(i, 5) for i in ids]}\n", run.stderr


def test_calibrate_refuses_cases_without_negatives() -> None:
    with pytest.raises(CairnError, match="negative"):
        calibrate([point("a", True, (0.5, 0.5, 0.5))], RecallSettings(), folds=1)


def test_write_thresholds_refuses_what_it_cannot_edit_and_leaves_the_file(tmp_path: Path) -> None:
    config = tmp_path / "cairn.toml"
    config.write_text("recall.min_lead = 0.2\n")
    with pytest.raises(CairnError):
        write_thresholds(tmp_path, Thresholds(0.1, 0.2, 0.3))
    assert config.read_text() == "recall.min_lead = 0.2\n"


def test_calibrate_cli_agrees_with_eval_and_write_keeps_comments(tmp_path: Path) -> None:
    init = invoke_cli(["init", str(tmp_path / "v")])
    assert init.returncode == 0, init.stderr
    vault = VaultRepo(tmp_path / "v")  # the template vault, committed by init
    cases = "evals/cases.yaml"

    before = json.loads(vault.invoke("eval", "--cases", cases, "--json").stdout)
    done = vault.invoke("calibrate", "--cases", cases, "--json", "--folds", "3", "--target-fir", "0.1")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    # the replay of the current thresholds is what eval measures
    assert data["current"]["injection@1"] == before["injection@1"]
    assert data["current"]["false_injection_rate"] == before["false_injection_rate"]
    best = data["best"]
    assert best["target_fir"] == 0.1
    assert best["fitted"]["worst_false_injection_rate"] <= 0.1
    assert [p["target_fir"] for p in data["tradeoff"]] == [0.01, 0.02, 0.05, 0.1, 0.2]
    assert data["written"] is None
    # the commit fitted on, as eval names the one it measured (calibrate --json named none)
    assert data["commit"] == before["commit"] == vault.git("rev-parse", "HEAD"), data

    text = vault.invoke("calibrate", "--cases", cases, "--folds", "3", "--target-fir", "0.1").stdout
    assert "cross-validated:" in text and "<- target" in text and "Nothing written" in text
    # lexical figures: with the semantic extra, `cairn eval` gave others for the same thresholds, unexplained
    assert "Every figure is on words alone, as `CAIRN_SEMANTIC=0 cairn eval` measures them" in text

    original = (vault.root / "cairn.toml").read_text()
    written = vault.invoke("calibrate", "--cases", cases, "--folds", "3", "--target-fir", "0.1", "--write")
    assert written.returncode == 0, written.stderr
    new = (vault.root / "cairn.toml").read_text()
    t = best["thresholds"]
    # only the three gate lines changed; every comment and other setting is where it was
    changed = [(a, b) for a, b in zip(original.splitlines(), new.splitlines(), strict=True) if a != b]
    assert {b.split(" = ")[0] for _, b in changed} <= {"min_lead", "min_coverage", "min_margin"}
    assert f"min_coverage = {t['min_coverage']}" in new
    assert [line for line in original.splitlines() if line.startswith("#")] == [
        line for line in new.splitlines() if line.startswith("#")
    ]

    # committed, eval makes exactly the decisions calibrate replayed
    vault.git("commit", "-q", "-am", "Calibrated gates")
    # and writing the same fit again changes nothing: it said "Wrote ...; commit it" with nothing to commit
    again = vault.invoke("calibrate", "--cases", cases, "--folds", "3", "--target-fir", "0.1", "--write")
    assert again.returncode == 0, again.stderr
    assert "already holds" in again.stdout and "as the served ref does; nothing to commit." in again.stdout
    assert "Wrote" not in again.stdout and (vault.root / "cairn.toml").read_text() == new
    after = json.loads(vault.invoke("eval", "--cases", cases, "--json").stdout)
    assert after["injection@1"] == best["fitted"]["injection@1"]
    assert after["injection@3"] == best["fitted"]["injection@3"]
    assert after["false_injection_rate"] == best["fitted"]["false_injection_rate"]


def test_the_replay_keeps_a_group_whose_second_card_is_under_the_evidence_floor(tmp_path: Path) -> None:
    """Card 1 fails the lead gate alone but goes in as a group with card 2, which the evidence floor keeps out (its
    words are common in the vault). Calibrate replayed from the cards recall injected at open gates, card 1 alone,
    so its "Current" figures said this negative got nothing while `cairn eval` counted a false injection."""
    vault = VaultRepo(tmp_path / "v")
    vault.write_raw("cairn.toml", "# defaults\n")
    vault.write(
        "x/a",
        "Kettle descaling schedule",
        "Descale the kettle monthly with citric acid.",
        "Limescale builds up: the widget sensor and the flux valve clog; gamma stops.",
    )
    vault.write(
        "x/b", "Widget flux sensor drift", "Widget flux sensors drift after a firmware update; recalibrate them."
    )
    for i in range(30):  # "widget" and "flux" each in a few of them: everyday words of this vault
        word = " widget" if i < 3 else " flux" if i < 6 else ""
        body = f"Water it on day {i % 7}.{word} Unrelated filler words about gardens, soil, pots and sunlight."
        vault.write(f"f/c{i}", f"Houseplant {i} watering", f"Houseplant {i} wilts in a dry week.", body)
    vault.commit()
    cases = tmp_path / "cases.yaml"
    cases.write_text(
        "- {id: n1, query: widget flux gamma, expect: []}\n"
        "- {id: p1, query: descale the kettle with citric acid, expect: [x/a]}\n"
    )
    explained = json.loads(vault.invoke("explain", "--json", "widget flux gamma").stdout)
    assert explained["injected"] == ["x/a"]
    assert [c["reason"] for c in explained["candidates"][:2]] == [None, "little_evidence"]

    measured = json.loads(vault.invoke("eval", "--cases", str(cases), "--json").stdout)
    done = vault.invoke("calibrate", "--cases", str(cases), "--json", "--folds", "1")
    assert done.returncode == 0, done.stderr
    current = json.loads(done.stdout)["current"]
    assert measured["false_injection_rate"] == current["false_injection_rate"] == 1.0
    assert measured["injection@1"] == current["injection@1"]


# gate values just under a grid line of step 0.25, which PHRASE_SCALE lifts over it, and some on the lines
near_lines = st.tuples(*(st.sampled_from([0.0, 0.12, 0.23, 0.24, 0.25, 0.46, 0.5, 0.7, 0.75, 1.0]),) * 3)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.booleans(),
            st.lists(near_lines, min_size=1, max_size=3),
            st.lists(st.booleans(), min_size=3, max_size=3),
            st.booleans(),
            st.booleans(),
        ),
        min_size=2,
        max_size=12,
    ),
    st.sampled_from([0.0, 0.2, 0.5]),
)
def test_grid_fit_with_the_phrase_step_equals_brute_force(
    raw: list[tuple[bool, list[tuple[float, float, float]], list[bool], bool, bool]], target: float
) -> None:
    """Cases whose first card holds a rare phrase (`recall._phrase_step`) pass at PHRASE_SCALE x the thresholds,
    in the grid as in the replay."""
    points = [
        CasePoint(
            f"h{i}",
            "",
            pos,
            tuple(top),
            (hit,) + (False,) * (len(top) - 1),
            i % 2,
            (True, *alike[1 : len(top)]),
            phrased=phrased,
        )  # fmt: skip
        for i, (pos, top, alike, hit, phrased) in enumerate(raw)
    ]
    grid = _Grid(points, 0.25, 2)
    assert grid.fit(target) == _brute(points, target, 0.25)
    assert grid.fit(target, leave_out=1) == _brute(points, target, 0.25, leave_out=1)


def test_write_refuses_a_fit_that_misses_its_target_held_out(isolated_env: Path, tmp_path: Path) -> None:
    """`calibrate --write` wrote thresholds whose cross-validated false injection rate it had just printed as over
    the target (on the vault `cairn init` makes, Injection@1 0.84 -> 0.41 for a fit that does not hold). It now
    writes nothing and says why, unless --force."""
    from helpers.vaults import run_cairn

    root = tmp_path / "lessons"
    assert run_cairn("init", str(root), "--no-register", cwd=tmp_path).returncode == 0
    args = ("calibrate", "--cases", "evals/cases.yaml", "--target-fir", "0.0", "--folds", "4")
    data = json.loads(run_cairn(*args, "--json", cwd=root).stdout)
    assert data["best"]["cross_validated"]["worst_false_injection_rate"] > 0.0  # the fit misses, held out
    before = (root / "cairn.toml").read_text()
    refused = run_cairn(*args, "--write", cwd=root)
    assert refused.returncode == 1
    assert refused.stderr.startswith("Error: nothing written: held out, ") and "--force" in refused.stderr
    assert "--target-fir" not in refused.stderr  # there is no lower target than 0 to ask for
    assert "Current (" in refused.stdout  # the report is still printed
    assert (root / "cairn.toml").read_text() == before
    forced = run_cairn(*args, "--write", "--force", cwd=root)
    assert forced.returncode == 0, forced.stderr
    assert (root / "cairn.toml").read_text() != before
    assert run_cairn(*args, "--force", cwd=root).returncode == 2  # --force without --write: a usage error


def test_the_lower_target_calibrate_advises_holds_when_run_as_printed(isolated_env: Path, tmp_path: Path) -> None:
    """A fit that missed its target held out was told "a lower --target-fir ... makes it hold", also at a target of
    0 and when every lower target of the trade-off missed held out too (and `--write` then refused again). It now
    names a lower target whose fit holds, only when there is one, and that target writes."""
    from helpers.vaults import run_cairn

    root = tmp_path / "lessons"
    assert run_cairn("init", str(root), "--no-register", cwd=tmp_path).returncode == 0
    args = ("calibrate", "--cases", "evals/cases.yaml", "--folds", "4")
    missed = run_cairn(*args, "--target-fir", "0.15", "--write", cwd=root)
    assert missed.returncode == 1
    assert "--target-fir 0.1 fits thresholds that hold held out" in missed.stdout
    assert "or use --target-fir 0.1, whose fit holds held out" in missed.stderr
    followed = run_cairn(*args, "--target-fir", "0.1", "--write", cwd=root)
    assert followed.returncode == 0, followed.stderr
    assert "Held-out FIR exceeds" not in followed.stdout and "Wrote min_lead" in followed.stdout
    strict = run_cairn(*args, "--target-fir", "0.0", cwd=root)
    assert "no lower target of the trade-off holds held out either: add negative cases." in strict.stdout


def test_write_refuses_a_fit_that_misses_its_target_on_the_cases_themselves(isolated_env: Path, tmp_path: Path) -> None:
    """With --folds 1 there is no held-out figure, and `calibrate --write` wrote the strictest grid point (every
    gate at 1: no card is ever injected) although its own report said that fit still broke the target (a negative
    that gets a card at any thresholds): the vault's recall was switched off silently. It now writes nothing and
    says why, unless --force."""
    from helpers.vaults import run_cairn

    root = tmp_path / "lessons"
    assert run_cairn("init", str(root), "--no-register", cwd=tmp_path).returncode == 0
    cases = tmp_path / "cases.yaml"
    cases.write_text(
        "- id: p1\n"
        '  query: "I rebased my feature branch onto main and git now rejects the push as non-fast-forward. Two other'
        " people push to this branch too. What's the safe way to push it?\"\n"
        "  expect: [git/force-push-safely]\n"
        "- id: n1\n"
        "  query: SIGTERM graceful shutdown\n"  # one card holds these words: every gate value is 1
        "  expect: []\n"
    )
    args = ("calibrate", "--cases", str(cases), "--folds", "1")
    data = json.loads(run_cairn(*args, "--json", cwd=root).stdout)
    assert data["best"]["fitted"]["false_injection_rate"] > data["best"]["target_fir"]  # no slices: overall is worst
    before = (root / "cairn.toml").read_text()
    refused = run_cairn(*args, "--write", cwd=root)
    assert refused.returncode == 1
    assert refused.stderr.startswith("Error: nothing written: on the cases fitted on, ") and "--force" in refused.stderr
    assert (root / "cairn.toml").read_text() == before
    forced = run_cairn(*args, "--write", "--force", cwd=root)
    assert forced.returncode == 0, forced.stderr
    assert (root / "cairn.toml").read_text() != before


@pytest.mark.parametrize(
    "table", ["recall = { min_lead = 0.3 }\n", "recall.min_lead = 0.3\n", '[recall]\n"min_lead" = 0.3\n']
)
def test_write_into_a_recall_table_it_cannot_edit_says_to_set_them_by_hand(
    isolated_env: Path, tmp_path: Path, table: str
) -> None:
    """A valid cairn.toml whose [recall] is an inline table, dotted keys or quoted keys: --write's edit would not
    parse, and the error blamed the user's file at a line it does not have ("cairn.toml:3: not valid TOML"). It now
    says the table could not be edited and what to set by hand, and leaves the file."""
    from helpers.vaults import run_cairn

    root = tmp_path / "lessons"
    assert run_cairn("init", str(root), "--no-register", cwd=tmp_path).returncode == 0
    (root / "cairn.toml").write_text(table, encoding="utf-8")
    done = run_cairn("calibrate", "--cases", "evals/cases.yaml", "--write", "--force", cwd=root)
    assert done.returncode == 1
    assert "could not edit the [recall] table safely; set min_lead = " in done.stderr
    assert "by hand" in done.stderr and "not valid TOML" not in done.stderr
    assert (root / "cairn.toml").read_text(encoding="utf-8") == table


def test_write_leaves_a_read_only_cairn_toml_and_keeps_a_writable_ones_mode(isolated_env: Path, tmp_path: Path) -> None:
    """`calibrate --write` replaced a cairn.toml its owner had made read-only (the rename needs only the folder's
    permission) and left every file it wrote at 0644. A read-only file is now refused, as `cairn install` refuses a
    read-only settings file, and a writable one keeps its mode."""
    from helpers.vaults import run_cairn

    root = tmp_path / "lessons"
    assert run_cairn("init", str(root), "--no-register", cwd=tmp_path).returncode == 0
    config = root / "cairn.toml"
    before = config.read_text(encoding="utf-8")
    args = ("calibrate", "--cases", "evals/cases.yaml", "--write", "--force")
    config.chmod(0o444)
    refused = run_cairn(*args, cwd=root)
    assert refused.returncode == 1
    assert refused.stderr.startswith(f"Error: {config} is read-only (mode 444); nothing was written: make it writable")
    assert config.read_text(encoding="utf-8") == before and config.stat().st_mode & 0o777 == 0o444
    config.chmod(0o640)
    written = run_cairn(*args, cwd=root)
    assert written.returncode == 0, written.stderr
    assert config.read_text(encoding="utf-8") != before and config.stat().st_mode & 0o777 == 0o640
    config.unlink()
    config.mkdir()
    folder = run_cairn(*args, cwd=root)
    assert folder.returncode == 1
    assert folder.stderr == f"Error: {config} is not a file; move it away, then run this again (nothing was written)\n"


def test_write_refuses_a_cairn_toml_symlinked_out_of_the_vault(isolated_env: Path, tmp_path: Path) -> None:
    """Bug fixed: `calibrate --write` read a cairn.toml symlinked out of the vault (a pull request can commit one)
    and replaced the link with a file of that text and the thresholds: a file of the machine that reads as Cairn's
    settings (another vault's, one of comments) was copied into the vault to commit, its comments too. Such a link
    is refused; nothing is written."""
    from helpers.vaults import run_cairn

    root = tmp_path / "lessons"
    assert run_cairn("init", str(root), "--no-register", cwd=tmp_path).returncode == 0
    config = root / "cairn.toml"
    outside = tmp_path / "credentials.toml"
    outside.write_text(config.read_text(encoding="utf-8") + "# registry token: s3cret\n", encoding="utf-8")
    before = outside.read_text(encoding="utf-8")
    config.unlink()
    config.symlink_to(outside)
    done = run_cairn("calibrate", "--cases", "evals/cases.yaml", "--write", "--force", cwd=root)
    assert done.returncode == 1
    assert done.stderr == (
        f"Error: {config} is a symlink to {outside}, outside the vault; nothing was written: make cairn.toml a file "
        "of the vault's own, then run this again\n"
    )
    assert config.is_symlink() and outside.read_text(encoding="utf-8") == before


def test_write_keeps_a_cairn_toml_with_windows_line_endings_as_it_is(isolated_env: Path, tmp_path: Path) -> None:
    """Bug fixed: `calibrate --write` read cairn.toml with universal newlines and wrote every `\\r\\n` back as
    `\\n`: a file saved on Windows came back with every line changed, not only the three thresholds."""
    from helpers.vaults import run_cairn

    root = tmp_path / "lessons"
    assert run_cairn("init", str(root), "--no-register", cwd=tmp_path).returncode == 0
    config = root / "cairn.toml"
    config.write_bytes(
        b"# Thresholds\r\n[recall]  # fitted\r\nmin_lead = 0.3  # lead\r\n\r\n[lint]\r\nmax_age_days = 200\r\n"
    )
    done = run_cairn("calibrate", "--cases", "evals/cases.yaml", "--write", "--force", cwd=root)
    assert done.returncode == 0, done.stderr
    lines = config.read_bytes().split(b"\r\n")
    assert lines[-1] == b"" and not any(b"\n" in line for line in lines)  # every line still ends in \r\n
    assert lines[:2] == [b"# Thresholds", b"[recall]  # fitted"] and lines[2].startswith(b"min_lead = ")
    assert lines[2].endswith(b"  # lead") and lines[-4:-1] == [b"", b"[lint]", b"max_age_days = 200"]


def test_write_keeps_a_byte_order_mark_and_edits_the_recall_table_after_it(isolated_env: Path, tmp_path: Path) -> None:
    """Bug fixed: a cairn.toml saved with a byte order mark whose first line is `[recall]` was not seen to hold the
    table: --write appended a second one and refused (`could not edit the [recall] table safely`)."""
    from helpers.vaults import run_cairn

    root = tmp_path / "lessons"
    assert run_cairn("init", str(root), "--no-register", cwd=tmp_path).returncode == 0
    config = root / "cairn.toml"
    config.write_bytes(b"\xef\xbb\xbf[recall]\nmin_lead = 0.3\n")
    done = run_cairn("calibrate", "--cases", "evals/cases.yaml", "--write", "--force", cwd=root)
    assert done.returncode == 0, done.stderr
    text = config.read_text(encoding="utf-8")
    assert text.startswith("\ufeff[recall]\nmin_lead = ") and text.count("[recall]") == 1
    assert "min_coverage = " in text and "min_margin = " in text


def test_write_renames_a_threshold_kept_under_its_old_name(isolated_env: Path, tmp_path: Path) -> None:
    """Bug fixed: a cairn.toml that sets the lead gate as `min_score` (its old name, still read) made --write refuse
    (`could not edit the [recall] table safely; set min_lead = ... by hand`), and setting min_lead by hand beside it
    made the file invalid (`has both min_score and min_lead`): the vault served nothing. The line is renamed."""
    from helpers.vaults import run_cairn

    root = tmp_path / "lessons"
    assert run_cairn("init", str(root), "--no-register", cwd=tmp_path).returncode == 0
    config = root / "cairn.toml"
    config.write_text("[recall]\nmin_score = 0.3  # the lead gate\nmax_cards = 2\n", encoding="utf-8")
    done = run_cairn("calibrate", "--cases", "evals/cases.yaml", "--write", "--force", cwd=root)
    assert done.returncode == 0, done.stderr
    lines = config.read_text(encoding="utf-8").splitlines()
    assert lines[1].startswith("min_lead = ") and lines[1].endswith("  # the lead gate")
    assert "min_score" not in config.read_text(encoding="utf-8") and lines[2] == "max_cards = 2"
    assert run_cairn("lint", "cairn.toml", cwd=root).returncode == 0


def test_the_fit_reports_its_progress_on_a_terminal(isolated_env: Path, tmp_path: Path) -> None:
    """The bar stopped at the last case, then nothing moved while the grid was built and fitted: 45 s on a terminal
    for 524 cases in 20 slices at --step 0.025 --folds 10. The fit now has a bar of its own, one step per fit."""
    import os
    import pty
    import subprocess

    from helpers.vaults import cairn_executable, run_cairn

    root = tmp_path / "lessons"
    assert run_cairn("init", str(root), "--no-register", cwd=tmp_path).returncode == 0
    seen: list[tuple[int, int]] = []
    points = [point("a", True, (0.5, 0.5, 0.5), fold=0), point("b", False, (0.2, 0.2, 0.2), fold=1)]
    calibrate(
        points, RecallSettings(), folds=2, targets=(0.1,), progress=lambda done, total: seen.append((done, total))
    )
    assert seen == [(0, 6), (1, 6), (2, 6), (3, 6), (4, 6), (5, 6), (6, 6)]  # 2 targets x (1 fit + 2 folds' fits)

    main, terminal = pty.openpty()
    try:
        done = subprocess.run(
            [cairn_executable(), "calibrate", "--cases", "evals/cases.yaml", "--folds", "2", "--json"],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=terminal,
            check=False,
            timeout=120,
        )
        os.close(terminal)
        drawn = b""
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the terminal's other end is closed: all of it was read
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(main)
    assert done.returncode == 0
    assert json.loads(done.stdout)["folds"] == 2
    assert b"calibrate: fitting" in drawn and b"15/15" in drawn  # 5 targets x (1 + 2)


def test_a_target_rate_of_nan_is_a_usage_error(isolated_env: Path, tmp_path: Path) -> None:
    """`--target-fir nan` passed click's range check and failed later as a user error (exit 1), after the index was
    opened; it is a usage error (exit 2), as `--target-fir 2` is."""
    from helpers.vaults import run_cairn

    root = tmp_path / "lessons"
    assert run_cairn("init", str(root), "--no-register", cwd=tmp_path).returncode == 0
    for value in ("nan", "2"):
        done = run_cairn("calibrate", "--cases", "evals/cases.yaml", "--target-fir", value, cwd=root)
        assert done.returncode == 2 and done.stdout == "", value
        assert "Error: Invalid value for '--target-fir'" in done.stderr and "Traceback" not in done.stderr
