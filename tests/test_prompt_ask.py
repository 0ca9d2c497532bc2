"""What a prompt asks (issue 16 item 4): in a long agent prompt the question weighs fully and the context sentences
around it (repo, stack, ticket, deliverables) weigh `tokens.CONTEXT_WEIGHT`, so they do not drown the question.

The discount ships off (`CONTEXT_WEIGHT` 1.0: it drowned the situation told before a short question); these tests
hold the mechanism at the measured 0.02 (`MEASURED`), and the last one what ships."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from cairn.hot import gates, tokens
from cairn.hot.recall import Result, recall
from cairn.hot.settings import settings_of
from cairn.hot.tokens import prompt_terms
from cairn.hot.vault import find_vault
from cairn.index import build as indexer
from helpers.payloads import payload_for
from helpers.vaults import VaultRepo

QUESTION = "Why does requests.get never return, so the worker hangs forever?"
LONG_PROMPT = (
    "I'm working in our billing backend (Python 3.11, Celery, pytest, Docker Compose, Postgres 15). "
    "The nightly invoice export runs in the reports queue and talks to the partner ledger service. " + QUESTION + " "
    "Don't restart the staging workers or deploy anything. Write a short root-cause note for ticket BILL-2291, "
    "with the fix and a regression test you would add."
)


def _cards(repo: VaultRepo) -> VaultRepo:
    repo.write(
        "python/requests-timeout",
        "requests calls without a timeout hang forever",
        "requests.get and requests.post wait forever by default when the server stops answering: a worker that calls "
        "them without timeout= hangs and never returns. Always pass timeout=(connect, read).",
        aliases=["requests.get hangs", "requests never returns"],
    )
    repo.write(
        "postgres/export-locks",
        "A long export transaction holds locks on the invoice tables",
        "An export that reads every invoice in one transaction blocks the nightly vacuum and schema migrations of the "
        "billing database; page through the rows in short transactions.",
    )
    repo.write(
        "celery/queue-routing",
        "Route slow tasks to their own Celery queue",
        "A slow report task on the default queue starves the short tasks behind it; give reports their own queue and "
        "worker.",
    )
    repo.write(
        "docker/compose-healthcheck",
        "depends_on does not wait for Postgres to be ready",
        "Docker Compose starts the service as soon as the Postgres container starts, not when it accepts "
        "connections; add a healthcheck and condition: service_healthy.",
    )
    repo.write(
        "testing/regression-first",
        "Write the regression test before the fix",
        "A bug fix lands with a test that fails without it; write the test first and watch it fail.",
    )
    repo.write(
        "git/force-push-safely",
        "Force-push with --force-with-lease",
        "After a rebase, push with --force-with-lease so a teammate's commits pushed meanwhile are not overwritten.",
    )
    repo.write(
        "frontend/bundle-size",
        "Check the bundle size before adding a dependency",
        "A date library added for one helper doubled the bundle; measure with the analyzer first.",
    )
    repo.write_raw("cairn.toml", "")  # the marker file the hook serves vaults by
    repo.commit("cards")
    return repo


def _recall(repo: VaultRepo, query: str) -> Result:
    with indexer.open_index(find_vault(repo.root)) as index:
        return recall(index, query, settings=dataclasses.replace(settings_of(index)))


MEASURED = 0.02  # the discount fitted on the wrapped dev suites (benchmarks/wrapped.py --fit), shipped off


@pytest.fixture(autouse=True)
def measured_discount(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The mechanism's tests run at the measured discount; a test marked `shipped` runs what Cairn ships."""
    if request.node.get_closest_marker("shipped") is None:
        monkeypatch.setattr(tokens, "CONTEXT_WEIGHT", MEASURED)
    tokens._LAST_PROMPT.clear()


@pytest.fixture
def no_context_discount(monkeypatch: pytest.MonkeyPatch) -> None:
    """Recall as it read prompts before: every sentence weighs fully."""
    monkeypatch.setattr(tokens, "CONTEXT_WEIGHT", 1.0)
    tokens._LAST_PROMPT.clear()


# -- recall on long agent prompts ----------------------------------------------------------------------------------


def test_the_question_card_is_injected_with_context_sentences_around_it(vault_repo: VaultRepo) -> None:
    repo = _cards(vault_repo)
    assert [c.card.id for c in _recall(repo, QUESTION).injected] == ["python/requests-timeout"]
    result = _recall(repo, LONG_PROMPT)
    assert [c.card.id for c in result.injected] == ["python/requests-timeout"]
    top = result.candidates[0]
    assert top.lead >= result.settings.min_lead and top.coverage >= result.settings.min_coverage


def test_without_the_discount_the_question_asked_alone_still_finds_its_card(
    vault_repo: VaultRepo, no_context_discount: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same prompt, every sentence weighing fully (what ships): the context drowns the whole prompt's lead, and
    the question asked alone (`recall._fragment_pick`) injects the card the whole prompt ranks first."""
    monkeypatch.setattr(gates, "SAID_GAP", 1.01)  # the lead as the words give it (the own words relief has its tests)
    result = _recall(_cards(vault_repo), LONG_PROMPT)
    top = result.candidates[0]
    assert top.card.id == "python/requests-timeout" and top.lead < result.settings.min_lead
    assert [c.card.id for c in result.injected] == ["python/requests-timeout"] and top.picked == "fragment"
    assert result.fragment is not None and "requests.get" in result.fragment


def test_context_alone_injects_nothing(vault_repo: VaultRepo) -> None:
    """No question, only the context sentences: nothing is asked, nothing discounted, nothing fits well enough."""
    repo = _cards(vault_repo)
    context_only = LONG_PROMPT.replace(QUESTION + " ", "")
    assert prompt_terms(context_only) == {t: 1.0 for t in prompt_terms(context_only)}
    assert "python/requests-timeout" not in [c.card.id for c in _recall(repo, context_only).injected]


# A developer tells the situation, then asks a short question: the situation is what the card is about. At the
# measured discount the situation weighed 0.02 and the question's few words went to another card (the template
# vault's case orm-n1-3 got the force-push card); what ships reads the situation fully.
SITUATION = (
    "My Django template loops over books and prints book.author.name, and the page runs one query per book. "
    "How do I fetch the authors in one go?"
)


def _orm_cards(repo: VaultRepo) -> VaultRepo:
    repo.write(
        "databases/orm-n-plus-one",
        "An ORM loop that touches a relation runs one query per row",
        "Reading book.author inside a loop over books runs a query per book (N+1); fetch the relation with the "
        "first query: select_related / prefetch_related in Django, joinedload in SQLAlchemy.",
    )
    repo.write(
        "git/force-push-safely",
        "Force-push with --force-with-lease",
        "After a rebase, push the branch in one go with --force-with-lease so a teammate's commits are not lost.",
    )
    for i, (name, summary) in enumerate(
        [
            ("Pin the Python version in CI", "Use setup-python with an exact version."),
            ("Rotate logs with logrotate", "copytruncate keeps the file handle."),
            ("Timeouts on every HTTP call", "requests waits forever without timeout."),
        ]
    ):
        repo.write(f"misc/card-{i}", name, summary)
    repo.write_raw("cairn.toml", "")  # the marker file the hook serves vaults by
    repo.commit("cards")
    return repo


@pytest.mark.shipped
def test_the_hook_reads_the_situation_told_before_a_short_question(vault_repo: VaultRepo) -> None:
    repo = _orm_cards(vault_repo)
    assert set(prompt_terms(SITUATION).values()) == {1.0}  # the discount ships off
    assert repo.cairn("index").returncode == 0
    payload = payload_for("claude-code", SITUATION, repo.root)
    done = repo.cairn("hook", "--format", "claude-code", input=payload, env={"CAIRN_VAULT": str(repo.root)})
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    context = out["hookSpecificOutput"]["additionalContext"]
    assert "An ORM loop that touches a relation runs one query per row" in context
    assert "Force-push" not in context


def test_the_measured_discount_drowned_the_situation(vault_repo: VaultRepo) -> None:
    """Why the discount ships off: at 0.02 the situation's words barely count and the question's decide."""
    terms = prompt_terms(SITUATION)
    assert terms["query"] <= MEASURED and terms["book"] <= MEASURED and terms["fetch"] == terms["author"] == 1.0
    injected = [c.card.id for c in _recall(_orm_cards(vault_repo), SITUATION).injected]
    assert "git/force-push-safely" in injected  # a card about pushing "in one go", for an N+1 query question


# -- prompt_terms: what a prompt asks ------------------------------------------------------------------------------


def test_context_sentences_weigh_less_than_the_question() -> None:
    terms = prompt_terms(LONG_PROMPT)
    for asked in ("requests.get", "requests", "worker", "hang", "forever"):
        assert terms[asked] == 1.0, asked
    for around in ("bill", "celery", "postgre", "invoice", "ledger", "restart", "ticket", "regression"):
        assert 0 < terms[around] <= MEASURED, around


def test_a_term_the_question_also_says_keeps_its_full_weight() -> None:
    terms = prompt_terms("The export worker runs in Celery on Docker. Why does the export worker hang?")
    assert terms["export"] == terms["worker"] == terms["hang"] == 1.0
    assert terms["celery"] < 1.0 and terms["docker"] < 1.0


@pytest.mark.parametrize(
    "prompt",
    [
        "We deploy with Helm on GKE. How do I roll back one release?",
        "We deploy with Helm on GKE. Could you explain why a rollback keeps the old config map",
        "We deploy with Helm on GKE. I'm wondering whether a rollback keeps the old config map.",
        "We deploy with Helm on GKE. Someone on the team asked me this: roll back one release without downtime.",
    ],
)
def test_asks_are_found_by_mark_question_word_or_label(prompt: str) -> None:
    terms = prompt_terms(prompt)
    assert terms["helm"] < 1.0 and terms["gke"] < 1.0
    assert terms["rollback" if "rollback" in terms else "roll"] == 1.0


def test_no_ask_found_weighs_every_sentence_fully() -> None:
    terms = prompt_terms("We deploy with Helm on GKE. Roll back one release without downtime.")
    assert set(terms.values()) == {1.0}


def test_chinese_asks_and_context() -> None:
    terms = prompt_terms(
        "我在公司的后端仓库里，用 Celery 和 Docker。为什么导出任务一直卡住？先别重启服务，写一段说明。"
    )
    assert terms["导出"] == terms["卡住"] == 1.0
    assert terms["celery"] < 1.0 and terms["重启"] < 1.0
    labelled = prompt_terms("环境：macOS 14，zsh。组里有人问我：创建最近7天提交的打包文件。帮我写一段回复。")
    assert labelled["打包"] == 1.0 and labelled["zsh"] < 1.0


def test_the_dev_wrapper_is_read_as_before() -> None:
    """The boilerplate-only wrapper is still left out; the labelled question weighs fully."""
    assert prompt_terms(
        "Before you touch any files, read the README first. Question from a teammate: Run encfs in the foreground. "
        "Don't change anything yet, just explain."
    ) == {"run": 1.0, "encf": 1.0, "foreground": 1.0}


def test_an_ask_that_points_at_a_sentence_asks_that_sentence() -> None:
    """ "Is this a bug?" before the symptom, "Is there a way to do it faster?" after it: the symptom is asked."""
    first = prompt_terms("Is this a bug? My video on youtube won't load after I pause it.")
    assert first["youtube"] == first["video"] == 1.0
    after = prompt_terms("I keep fixing the indentation after pasting code into gmail. Is there a way to do it faster?")
    assert after["gmail"] == after["indentation"] == 1.0
    bare = prompt_terms("The export worker hangs forever on Celery. Any idea why? Reply in Slack when you know.")
    assert bare["celery"] == bare["hang"] == 1.0 and bare["slack"] < 1.0


def test_a_yes_no_question_without_its_question_mark_is_an_ask() -> None:
    terms = prompt_terms("We deploy with Helm on GKE. Is it possible to roll back one release without downtime")
    assert terms["roll"] == terms["downtime"] == 1.0 and terms["helm"] < 1.0
    instruction = prompt_terms("We deploy with Helm on GKE. Do not roll back anything.")
    assert set(instruction.values()) == {1.0}  # "Do not ..." asks nothing: no discount


def test_a_chinese_instruction_with_a_question_word_inside_asks_nothing() -> None:
    """ "列出你会怎么做" (list what you would do) tells the agent what to deliver: no ask, so the task before it is not
    discounted. "如何..." opening a clause asks."""
    instruction = prompt_terms(
        "背景：测试集群是共用的。创建最近7天提交的打包文件。请不要重启任何服务，列出你会怎么做。"
    )
    assert set(instruction.values()) == {1.0}
    opener = prompt_terms("背景：测试集群是共用的。如何创建最近7天提交的打包文件。请不要重启任何服务。")
    assert opener["打包"] == 1.0 and opener["集群"] < 1.0
