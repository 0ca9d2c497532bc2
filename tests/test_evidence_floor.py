"""The evidence floor (`[recall] min_evidence`, `cairn.hot.gates`): a prompt of one or two everyday words injects
nothing, however well the three share gates say it fits. Before it, the vault `cairn init` makes injected a card
for "continue", "run the tests", "fix it", "push" and even "c": the lead, coverage and margin are shares, and one
word matched by one card is a share of 1.0. The installed `cairn` runs the hook on the agents' real payloads."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from helpers.payloads import claude_payload, codex_payload, log_entries
from helpers.vaults import run_cairn

FOLLOW_UPS = ("continue", "run the tests", "fix it", "push", "try again", "build it", "c", "x", "1", "再试一次")
# A question the template vault's force-push card answers (its own eval case git-force-push-1).
QUESTION = (
    "I rebased my feature branch onto main and git now rejects the push as non-fast-forward. Two other people push "
    "to this branch too. What's the safe way to push it?"
)


@pytest.fixture
def template(isolated_env: Path, tmp_path: Path) -> Path:
    root = tmp_path / "lessons"
    done = run_cairn("init", str(root), "--no-register", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return root


def hook(root: Path, prompt: str, session: str, agent: str = "claude-code") -> str:
    payload = (claude_payload if agent == "claude-code" else codex_payload)(prompt, root, session)
    done = run_cairn("hook", "--format", agent, "--vault", str(root), cwd=root, input=json.dumps(payload))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_follow_ups_inject_nothing_and_a_question_still_does(template: Path, agent: str) -> None:
    for n, prompt in enumerate(FOLLOW_UPS):
        assert hook(template, prompt, f"s{n}", agent) == "", prompt
        assert log_entries()[-1]["injected"] == [], prompt
    assert "git/force-push-safely" in hook(template, QUESTION, "s-question", agent)


def test_the_log_and_explain_say_the_floor_refused_the_card(template: Path) -> None:
    assert hook(template, "continue", "s1") == ""
    reasons = {c["id"]: c["reason"] for c in log_entries()[-1]["candidates"]}
    assert reasons and set(reasons.values()) == {"little_evidence"}  # every card "continue" reaches
    shown = run_cairn("explain", "push", cwd=template)
    assert shown.returncode == 0, shown.stderr
    assert "evidence >= 1.3 rare words" in shown.stdout.splitlines()[0]
    line = next(line for line in shown.stdout.splitlines() if "git/force-push-safely" in line)
    assert "little_evidence" in line
    assert "evidence 0.78 rare words, under 1.3" in shown.stdout  # "push": a word in 2 of the vault's 14 cards
    rows = json.loads(run_cairn("explain", "--json", "push", cwd=template).stdout)["candidates"]
    card = next(r for r in rows if r["id"] == "git/force-push-safely")
    assert card["gates"]["evidence"] == {"value": pytest.approx(0.78, abs=0.01), "threshold": 1.3}


def test_min_evidence_is_a_setting_of_the_vault(template: Path) -> None:
    """0 turns the floor off (as it does the other gates): "continue" then gets the two cards that say it, as it did
    before the floor. A setting that is not a number, or is negative, is refused by lint with a clear message."""
    toml = template / "cairn.toml"
    text = toml.read_text(encoding="utf-8")
    assert "min_evidence = 1.3" in text  # the template spells the default out
    toml.write_text(text.replace("min_evidence = 1.3", "min_evidence = 0"), encoding="utf-8")
    subprocess.run(["git", "-C", str(template), "commit", "-qam", "evidence floor off"], check=True)
    assert run_cairn("index", cwd=template).returncode == 0
    assert hook(template, "continue", "s1") != ""
    toml.write_text(text.replace("min_evidence = 1.3", "min_evidence = -1"), encoding="utf-8")
    linted = run_cairn("lint", cwd=template)
    assert linted.returncode != 0
    assert "min_evidence" in linted.stdout + linted.stderr


def test_words_that_weigh_exactly_the_floor_are_enough(template: Path) -> None:
    """The floor is "at least": with `min_evidence = 1`, one word found in one card of the vault (1.0 rare word)
    injects that card. Kills sweep 61's mutant R10 (the floor's `<` made `<=`: the card refused as little_evidence)."""
    toml = template / "cairn.toml"
    text = toml.read_text(encoding="utf-8")
    toml.write_text(text.replace("min_evidence = 1.3", "min_evidence = 1"), encoding="utf-8")
    subprocess.run(["git", "-C", str(template), "commit", "-qam", "evidence floor at one rare word"], check=True)
    assert run_cairn("index", cwd=template).returncode == 0
    assert "http/retry-post-needs-idempotency-key" in hook(template, "idempotency", "s1")
    card = log_entries()[-1]["candidates"][0]
    assert (card["id"], card["reason"]) == ("http/retry-post-needs-idempotency-key", None)
    rows = json.loads(run_cairn("explain", "--json", "idempotency", cwd=template).stdout)["candidates"]
    assert rows[0]["gates"]["evidence"] == {"value": 1.0, "threshold": 1.0}
