"""Recall's judgement (issue 16): related cards inject together, pasted material does not drown the question, the
prompt's terms (`tokens.prompt_terms`), explain's matched and missing terms, stdin, and the semantic argument."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from cairn.cli.recall_cmds import explain_rows, render_explain
from cairn.hot import recall as R
from cairn.hot.recall import Result, recall
from cairn.hot.settings import settings_of
from cairn.hot.tokens import PASTED_WEIGHT, prompt_terms, prose_fragments
from cairn.hot.vault import find_vault
from cairn.index import build as indexer
from helpers.vaults import VaultRepo

HANG = "requests.get call never returns and the worker hangs forever"
TRACEBACK = """acme-cli crashes right after pip install: its templates are missing, why?
Traceback (most recent call last):
  File "/usr/lib/python3.11/site-packages/acme_cli/main.py", line 12, in load
    data = open(path).read()
  File "/usr/lib/python3.11/site-packages/acme_cli/render.py", line 40, in render
    tpl = env.get_template(name)
FileNotFoundError: [Errno 2] No such file or directory: '/usr/lib/python3.11/site-packages/acme_cli/templates/base.html'
"""


def _cards(repo: VaultRepo) -> VaultRepo:
    repo.write(
        "python/requests-timeout",
        "requests calls without a timeout hang forever",
        "requests.get and requests.post wait forever by default when the server stops answering: a worker that calls "
        "them without timeout= hangs and never returns. Always pass timeout=(connect, read).",
        "A worker called requests.get(url) on a partner API that accepted the connection and never answered.",
        aliases=["requests.get hangs", "requests never returns", "no timeout"],
    )
    repo.write(
        "python/asyncio-blocking-call",
        "A blocking call inside asyncio freezes the event loop",
        "A synchronous call such as requests.get or time.sleep inside an async function blocks the whole event loop: "
        "the worker hangs and never returns to other tasks. Use an async client or asyncio.to_thread.",
        "An async worker called requests.get in a handler; while it waited, nothing else was served.",
        aliases=["event loop blocked", "worker hangs forever", "requests in async"],
    )
    repo.write(
        "git/force-push-safely",
        "Force-push with --force-with-lease",
        "After a rebase, push with --force-with-lease so a teammate's commits pushed meanwhile are not overwritten.",
    )
    repo.write(
        "docker/copy-deps-first",
        "Copy dependency files before the source in a Dockerfile",
        "COPY the lockfile and install dependencies before the source, so a code change keeps the cached layer.",
    )
    repo.write(
        "http/retry-post-idempotency",
        "Retrying a POST needs an idempotency key",
        "A client that retries a POST after a timeout can create the order twice; send an Idempotency-Key header.",
    )
    repo.write(
        "python/package-data",
        "Package data missing from the wheel",
        "Template and data files under the package are left out of the wheel unless package-data lists them; the "
        "installed CLI then fails with FileNotFoundError.",
        "The CLI worked from a checkout and crashed after pip install: its templates folder was not in the wheel.",
        aliases=["templates missing after pip install", "site-packages missing files"],
    )
    repo.commit("cards")
    return repo


def _recall(repo: VaultRepo, query: str, **settings: Any) -> Result:
    with indexer.open_index(find_vault(repo.root)) as index:
        chosen = dataclasses.replace(settings_of(index), **settings)
        return recall(index, query, settings=chosen)


# -- related cards inject together ---------------------------------------------------------------------------------


def test_two_related_cards_that_both_fit_are_injected_together(vault_repo: VaultRepo) -> None:
    result = _recall(_cards(vault_repo), HANG)
    first, second = result.candidates[0], result.candidates[1]
    assert {first.card.id, second.card.id} == {"python/requests-timeout", "python/asyncio-blocking-call"}
    # the first card alone does not stand clear of the second: the adjacent margin gate would have abstained
    assert first.margin < result.settings.min_margin
    assert [c.card.id for c in result.injected] == [first.card.id, second.card.id]
    assert first.reason is None and second.reason is None


def test_a_group_is_cards_that_fit_about_as_well_and_stand_clear_of_the_next(vault_repo: VaultRepo) -> None:
    with indexer.open_index(find_vault(_cards(vault_repo).root)) as index:
        settings = settings_of(index)
    best = 20.0  # lead = (score - next) / best
    alike = [10.0, 8.0, 1.0]
    assert R._group(alike, [1.0, 1.0, 1.0], best, settings) == 2
    assert R._group([10.0, 8.0, 7.5, 1.0], [1.0, 1.0, 1.0, 1.0], best, settings) == 3
    assert R._group([10.0, 6.0, 1.0], [1.0, 1.0, 1.0], best, settings) == 0  # card 2 does not fit as well
    assert R._group(alike, [1.0, 0.1, 1.0], best, settings) == 0  # card 2 fails coverage
    assert R._group([10.0, 8.0, 7.9], [1.0, 1.0, 1.0], best, settings) == 3  # three alike, nothing after
    assert R._group([10.0, 9.0, 8.5, 8.4], [1.0] * 4, best, settings) == 0  # none clear of the next


def test_a_group_needs_every_card_to_pass_coverage(vault_repo: VaultRepo) -> None:
    repo = _cards(vault_repo)
    query = HANG + " without a timeout"
    first, second = _recall(repo, query).candidates[:2]
    assert second.coverage < first.coverage and first.margin < 0.35
    result = _recall(repo, query, min_coverage=(first.coverage + second.coverage) / 2)
    assert result.abstained
    assert result.candidates[0].reason in ("small_lead", "small_margin")
    assert result.candidates[1].reason == "low_coverage"


def test_a_first_card_covering_little_of_the_prompt_brings_no_group_in(vault_repo: VaultRepo) -> None:
    """Card 1 matches two of the prompt's six rare words, strongly (its name): it scores first with a coverage of
    0.33. Card 2 matches the other four, scores about as well and stands clear of the rest: the two would be a group,
    but card 1 fails the coverage gate, so neither goes in (card 2 is refused below it). Kills sweep 61's mutant R13
    (no coverage check on card 1 of a group: both injected) and R9 (no prefix rule: card 2 injected alone)."""
    vault_repo.write("zoo/quokka", "Quokka quoll", "Quokka and quoll care", "The quokka and the quoll need shade.")
    vault_repo.write(
        "zoo/marsupials",
        "Feeding marsupials",
        "How to feed the wombat",
        "Give the wombat fresh grass, the numbat termites, the bilby seeds and the potoroo fungi; all eat at dusk.",
    )
    vault_repo.write("zoo/lions", "Lion feeding", "Lions eat meat", "Give meat to lions at noon.")
    vault_repo.write("zoo/penguins", "Penguin pool", "Penguins need cold water", "Keep the penguin pool cold.")
    vault_repo.write("zoo/reptiles", "Reptile lamps", "Reptiles need heat lamps", "Check the lamps daily.")
    vault_repo.commit("zoo")
    result = _recall(vault_repo, "quokka quoll wombat numbat bilby potoroo")
    first, second = result.candidates[:2]
    assert (first.card.id, second.card.id) == ("zoo/quokka", "zoo/marsupials")
    assert first.coverage < result.settings.min_coverage <= second.coverage
    assert second.score >= R.GROUP_SPREAD * first.score and second.lead >= result.settings.min_lead
    assert result.abstained and result.injected == ()
    assert (second.reason, second.blocked_by) == ("small_margin", "zoo/quokka")


def test_the_opt_in_confidence_gate_injects_the_cut_it_is_sure_of(vault_repo: VaultRepo) -> None:
    from cairn.hot import confidence

    repo = _cards(vault_repo)
    off = {"min_lead": 0.0, "min_coverage": 0.0, "min_margin": 0.0}  # the thresholds still apply on top of it
    loose = _recall(repo, HANG, min_confidence=0.01, **off)
    strict = _recall(repo, HANG, min_confidence=0.999, **off)
    assert loose.injected and loose.injected[0].card.id == loose.candidates[0].card.id
    assert strict.abstained and strict.candidates[0].reason == "low_confidence"
    chance = confidence.probability(loose.evidence[0])
    assert 0 < chance < 1 and loose.candidates[0].confidence == round(chance, 4)
    off_gate = _recall(repo, HANG)  # the gate off (shipped): nothing computes what nothing reads
    assert off_gate.evidence == () and off_gate.candidates[0].confidence == 0.0
    with indexer.open_index(find_vault(repo.root)) as index:  # unless asked for (the confidence study fits on it)
        asked = recall(index, HANG, evidence=True)
    assert asked.evidence[0] == loose.evidence[0] and asked.candidates[0].confidence == round(chance, 4)


# -- pasted material ---------------------------------------------------------------------------------------------


def test_a_traceback_does_not_drown_the_question(vault_repo: VaultRepo) -> None:
    result = _recall(_cards(vault_repo), TRACEBACK)
    assert [c.card.id for c in result.injected] == ["python/package-data"]
    top = result.candidates[0]
    assert "filenotfounderror" in top.matched and "acme_cli" not in top.matched
    assert top.lead >= result.settings.min_lead


def test_the_traceback_counts_little_without_its_exception_line(vault_repo: VaultRepo) -> None:
    """The frames alone (no question, no exception line) weigh PASTED_WEIGHT: they do not make a card fit."""
    frames = "\n".join(line for line in TRACEBACK.splitlines()[1:-1])
    result = _recall(_cards(vault_repo), frames)
    assert result.abstained


def test_agent_boilerplate_around_a_question_changes_nothing(vault_repo: VaultRepo) -> None:
    repo = _cards(vault_repo)
    bare = _recall(repo, "acme cli templates missing after pip install")
    wrapped = _recall(
        repo,
        "Before you touch any files, read the README first. Question from a teammate: acme cli templates missing "
        "after pip install. Don't change anything yet, just explain.",
    )
    assert [c.card.id for c in bare.injected] == ["python/package-data"]
    assert [(c.card.id, c.score, c.lead, c.coverage) for c in wrapped.injected] == [
        (c.card.id, c.score, c.lead, c.coverage) for c in bare.injected
    ]


# -- prompt_terms ------------------------------------------------------------------------------------------------


def test_prompt_terms_drop_boilerplate_sentences() -> None:
    english = prompt_terms(
        "Before you touch any files, read the README first. Question from a teammate: Run encfs in the foreground. "
        "Don't change anything yet, just explain."
    )
    assert english == {"run": 1.0, "encf": 1.0, "foreground": 1.0}
    chinese = prompt_terms("先别改任何文件，先读一下 README。同事问了这个问题：生成棋盘格图片。只需要解释一下。")
    assert set(chinese) == {"生成", "成棋", "棋盘", "盘格", "格图", "图片"}


def test_prompt_terms_drop_boilerplate_that_follows_a_question_without_its_full_stop() -> None:
    """A question glued to "Don't change anything yet, just explain.": the trailing run of boilerplate starts at a capital
    after a lower-case word; a capital that starts words of the question cuts nothing."""
    glued = prompt_terms(
        "Question from a teammate: How can I force google to use the exact words I type in Don't change anything "
        "yet, just explain."
    )
    assert glued == {"force": 1.0, "google": 1.0, "use": 1.0, "exact": 1.0, "word": 1.0, "type": 1.0}
    bracketed = "Question from a teammate: Specify defines (after `--`) Don't change anything yet, just explain."
    assert prompt_terms(bracketed) == {"specify": 1.0, "define": 1.0}
    assert "change" in prompt_terms("Why does Git Change file modes when I Check Out a branch")
    assert "change" in prompt_terms("how to Change the default branch name")  # the run is not all boilerplate
    assert prompt_terms("How do I Read a File") == {"read": 1.0, "file": 1.0}  # all boilerplate: all kept
    # Only the last _TAIL_CHARS characters are looked at (one pass, word by word): a longer run is cut within them.
    from cairn.hot.tokens import _TAIL_CHARS, _sentences

    run = ("Read the File " * (_TAIL_CHARS // 14 + 2)).strip()
    head, tail = _sentences("x rebase " + run)
    assert head.startswith("x rebase Read") and _TAIL_CHARS - 14 < len(tail) <= _TAIL_CHARS
    assert _sentences("x rebase Read the File") == ["x rebase", "Read the File"]


def test_prompt_terms_keep_a_prompt_made_only_of_instruction_words() -> None:
    assert prompt_terms("Edit the README") == {"edit": 1.0, "readme": 1.0}


def test_prompt_terms_weigh_pasted_lines_less_but_not_the_exception_or_the_package() -> None:
    weights = prompt_terms(TRACEBACK)
    assert weights["crash"] == 1.0 and weights["filenotfounderror"] == 1.0
    assert weights["acme_cli"] == 1.0  # the package a site-packages path names
    assert weights["render"] == PASTED_WEIGHT and weights["env.get_template"] == PASTED_WEIGHT
    assert weights["base"] == PASTED_WEIGHT  # a path inside the exception line is pasted material
    logs = prompt_terms("why does the sync stall?\n2026-11-30 02:00:01 INFO starting payroll\n[WARN] retrying payroll")
    assert logs["sync"] == 1.0 and logs["payroll"] == PASTED_WEIGHT
    fenced = prompt_terms("what is wrong here?\n```\nresult = compute(values)\n```")
    assert fenced["compute"] == PASTED_WEIGHT and fenced["wrong"] == 1.0


def test_a_term_in_the_question_and_in_the_paste_weighs_fully() -> None:
    weights = prompt_terms("the render step fails\n    tpl = render(name)")
    assert weights["render"] == 1.0 and weights["tpl"] == PASTED_WEIGHT


# -- the semantic argument ---------------------------------------------------------------------------------------


def test_no_semantic_evidence_is_exactly_the_lexical_judgement(vault_repo: VaultRepo) -> None:
    repo = _cards(vault_repo)
    with indexer.open_index(find_vault(repo.root)) as index:
        plain = recall(index, HANG)
        assert recall(index, HANG, semantic=None) == plain
        assert recall(index, HANG, semantic={}) == plain
        with_sims = recall(index, HANG, semantic={"python/requests-timeout": 4.5, "python/asyncio-blocking-call": 3.9})
    assert [c.card.id for c in with_sims.injected] == [c.card.id for c in plain.injected]
    sims = {c.card.id: c.similarity for c in with_sims.candidates}
    assert sims["python/requests-timeout"] == 4.5 and all(v is None for k, v in sims.items() if "python/" not in k)


@pytest.fixture(autouse=True)
def _semantic_in_small_vaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """These vaults have a handful of cards; the semantic rules apply from SEMANTIC_MIN_CARDS (tested below)."""
    monkeypatch.setattr(R, "SEMANTIC_MIN_CARDS", 1)


def test_a_small_vault_is_judged_on_words_alone(vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(R, "SEMANTIC_MIN_CARDS", 30)
    repo = _cards(vault_repo)
    with indexer.open_index(find_vault(repo.root)) as index:
        plain = recall(index, TRACEBACK)
        far = recall(index, TRACEBACK, semantic={"python/package-data": 1.2, "git/force-push-safely": 4.0})
        reads: list[str] = []

        def read() -> dict[str, float]:
            reads.append("read")
            return {"python/package-data": 1.2, "git/force-push-safely": 4.0}

        lazy = recall(index, TRACEBACK, semantic=read, only_if_decisive=True)
    assert [c.card.id for c in far.injected] == [c.card.id for c in plain.injected] == ["python/package-data"]
    assert lazy.injected == plain.injected and reads == []  # the hook does not wait for an answer it cannot use


def test_the_semantic_channel_vetoes_a_card_it_does_not_find_near_the_prompt(vault_repo: VaultRepo) -> None:
    repo = _cards(vault_repo)
    with indexer.open_index(find_vault(repo.root)) as index:
        plain = recall(index, TRACEBACK)
        assert [c.card.id for c in plain.injected] == ["python/package-data"]
        far = recall(index, TRACEBACK, semantic={"python/package-data": 1.2, "git/force-push-safely": 4.0})
        near = recall(index, TRACEBACK, semantic={"python/package-data": 4.1, "git/force-push-safely": 1.0})
    assert far.abstained and far.candidates[0].reason == R.SEMANTIC_VETO
    assert [c.card.id for c in near.injected] == ["python/package-data"]


def test_the_veto_judges_every_card_the_words_pass_not_only_the_first(vault_repo: VaultRepo) -> None:
    """The second card of a group the words pass is vetoed like the first when the prompt does not mean it: under
    `SEMANTIC_MIN_Z`, or missing from the answer (the warm encoder sends the closest cards only); at the floor
    exactly it goes in."""
    repo = _cards(vault_repo)
    first, second = "python/requests-timeout", "python/asyncio-blocking-call"
    with indexer.open_index(find_vault(repo.root)) as index:
        outcomes = {
            "far": recall(index, HANG, semantic={first: 4.5, second: 1.0}),
            "missing": recall(index, HANG, semantic={first: 4.5, "git/force-push-safely": 1.0}),
            "floor": recall(index, HANG, semantic={first: 4.5, second: R.SEMANTIC_MIN_Z}),
        }
    for name in ("far", "missing"):
        assert [c.card.id for c in outcomes[name].injected] == [first], name
        assert outcomes[name].candidates[1].reason == R.SEMANTIC_VETO, name
    assert [c.card.id for c in outcomes["floor"].injected] == [first, second]


def test_the_veto_spares_a_card_the_words_clearly_pass_and_the_meaning_puts_first_or_near(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a vault about one subject a prompt's right card often stands at a z-score under 3, first in meaning or a
    hair behind another card. When its words clear the lead gate by `SEMANTIC_SPARE_LEAD` and its z-score is within
    `SEMANTIC_SPARE_NEAR` of the semantic first's, the veto spares it."""
    monkeypatch.setattr(R, "PHRASE_SCALE", 1.0)  # the rule under test alone: no phrase step (RESULTS.md "Round 13")
    repo = _cards(vault_repo)
    first = {"python/package-data": 2.5, "git/force-push-safely": 1.0}  # the semantic first, under SEMANTIC_MIN_Z
    near = {"python/package-data": 2.5, "git/force-push-safely": 2.5 + R.SEMANTIC_SPARE_NEAR - 0.05}
    behind = {"python/package-data": 2.5, "git/force-push-safely": 2.5 + R.SEMANTIC_SPARE_NEAR + 0.05}
    with indexer.open_index(find_vault(repo.root)) as index:
        spared = recall(index, TRACEBACK, semantic=first)
        lead = spared.candidates[0].lead  # 0.28: over min_lead 0.24 by more than SEMANTIC_SPARE_LEAD
        scraping = dataclasses.replace(settings_of(index), min_lead=lead - R.SEMANTIC_SPARE_LEAD / 2)
        outcomes = {
            "near": recall(index, TRACEBACK, semantic=near),
            "behind": recall(index, TRACEBACK, semantic=behind),
            "scraped": recall(index, TRACEBACK, settings=scraping, semantic=first),
            "plain": recall(index, TRACEBACK, settings=scraping),
        }
    given = {k: [c.card.id for c in r.injected] for k, r in {"first": spared, **outcomes}.items()}
    assert given == {
        "first": ["python/package-data"],
        "near": ["python/package-data"],
        "behind": [],  # further behind the semantic first
        "scraped": [],  # the words pass it at that min_lead, but do not clear it by enough
        "plain": ["python/package-data"],
    }
    assert outcomes["behind"].candidates[0].reason == outcomes["scraped"].candidates[0].reason == R.SEMANTIC_VETO


QUESTION = "Why are the templates missing after pip install of our CLI?"
# The same question in an agent's wrapper: two sentences of prose more (the project, the deliverable).
WRAPPED = (
    "We ship acme-cli as a wheel built from our monorepo on GitHub Actions, Python 3.11. "
    + QUESTION
    + " Reply with the likely cause, no code changes."
)


def test_the_veto_judges_a_one_question_prompt_not_one_in_a_wrapper(vault_repo: VaultRepo) -> None:
    """A prompt that says more than one thing in prose is encoded whole, wrapper and all: its z-scores are no
    evidence against the card its words pass (`recall.SEMANTIC_VETO_FRAGMENTS`). A traceback's exception line is
    evidence of the question, not another thing said: that prompt is still judged (the test above)."""
    repo = _cards(vault_repo)
    far = {"python/package-data": 1.2, "git/force-push-safely": 4.0}
    with indexer.open_index(find_vault(repo.root)) as index:
        alone = recall(index, QUESTION, semantic=far)
        wrapped = recall(index, WRAPPED, semantic=far)
        plain = recall(index, WRAPPED)
    assert alone.abstained and alone.candidates[0].reason == R.SEMANTIC_VETO
    assert [c.card.id for c in wrapped.injected] == [c.card.id for c in plain.injected] == ["python/package-data"]
    assert wrapped.injected[0].similarity == 1.2  # read, and shown, but not a veto
    assert prose_fragments(QUESTION) == [] and len(prose_fragments(WRAPPED)) == 2
    assert len(prose_fragments(TRACEBACK)) == 1  # a question, and its exception line is no prose


def test_explain_says_when_the_semantic_veto_does_not_judge_the_prompt(vault_repo: VaultRepo) -> None:
    from cairn.cli.recall_cmds import _veto_note

    repo = _cards(vault_repo)
    far = {"python/package-data": 1.2, "git/force-push-safely": 4.0}
    with indexer.open_index(find_vault(repo.root)) as index:
        result = recall(index, WRAPPED, examine_all=True, semantic=far)
    text = render_explain(result, explain_rows(result), veto=_veto_note(True, R.veto_judges(WRAPPED)))
    assert "no semantic veto: the prompt says more than one thing in prose" in text
    assert text.splitlines()[1] == "Injected: python/package-data"
    assert _veto_note(True, R.veto_judges(QUESTION)) is None  # one question: the veto judged it
    assert _veto_note(False, R.veto_judges(WRAPPED)) is None  # no similarities read: nothing to say


def test_explain_shows_gate_values_for_a_vetoed_card(vault_repo: VaultRepo) -> None:
    from cairn.cli.recall_cmds import explain_rows, render_explain

    repo = _cards(vault_repo)
    with indexer.open_index(find_vault(repo.root)) as index:
        result = recall(
            index, TRACEBACK, examine_all=True, semantic={"python/package-data": 1.2, "git/force-push-safely": 4.0}
        )
    rows = explain_rows(result)
    top = rows[0]
    assert top["reason"] == R.SEMANTIC_VETO and top["gates"] is not None and top["similarity"] == 1.2
    text = render_explain(result, rows)
    assert "semantic_veto" in text and "similarity 1.20" in text and "refused before the gates" not in text


def test_explain_gives_the_floor_a_vetoed_card_fell_under(vault_repo: VaultRepo) -> None:
    """A card refused `semantic_veto` showed its z-score and no floor: at 2.76 (a card far above most of its vault),
    the author could not tell why it was vetoed (the veto asks for 3); no other row names the floor."""
    repo = _cards(vault_repo)
    with indexer.open_index(find_vault(repo.root)) as index:
        result = recall(
            index, TRACEBACK, examine_all=True, semantic={"python/package-data": 2.76, "git/force-push-safely": 4.0}
        )
    rows = explain_rows(result)
    assert rows[0]["reason"] == R.SEMANTIC_VETO
    lines = render_explain(result, rows).splitlines()
    terms = lines[lines.index(next(line for line in lines if line.endswith("python/package-data"))) + 1]
    assert terms.endswith("similarity 2.76 (z-score over the vault's cards), under 3 (the semantic veto)")
    assert sum("(the semantic veto)" in line for line in lines) == 1


def test_the_semantic_pick_gives_the_word_ranking_first_card_when_it_is_clearly_first_in_meaning(
    vault_repo: VaultRepo,
) -> None:
    """The first card by words, refused by the word gates, is injected by the semantic pick (round 6; round 3's
    rescue did this before) when it is also the clear first choice in meaning, and not when it is only a little
    ahead or another card is first in meaning."""
    repo = _cards(vault_repo)
    query = "requests.get hangs in the nightly payroll export under celery beat on kubernetes"
    with indexer.open_index(find_vault(repo.root)) as index:
        plain = recall(index, query)
        first = plain.candidates[0].card.id
        clear = recall(
            index, query, semantic={first: 5.5, "python/asyncio-blocking-call": 3.1, "git/force-push-safely": 0.2}
        )
        unclear = recall(index, query, semantic={first: 4.0, "python/asyncio-blocking-call": 3.5})
        listed_after = recall(index, query, semantic={"python/asyncio-blocking-call": 3.5, first: 4.0})
        elsewhere = recall(index, query, semantic={first: 3.2, "git/force-push-safely": 5.9})
    assert plain.abstained and first == "python/requests-timeout"
    assert [c.card.id for c in clear.injected] == [first]  # z 5.5, 2.4 ahead of the semantic second
    assert unclear.abstained  # only 0.5 ahead
    assert listed_after.abstained  # the same, the semantic second listed first in the answer
    assert elsewhere.abstained  # the semantic first choice is another card


def test_the_semantic_pick_injects_its_clear_first_choice_among_the_word_ranking(vault_repo: VaultRepo) -> None:
    """Nothing passes the word gates; the semantic channel's first choice, ranked second by words, is injected when
    its z-gap plus SEMANTIC_PICK_LEAD_WEIGHT times its (negative) word lead reaches SEMANTIC_PICK, and only then."""
    repo = _cards(vault_repo)
    query = "requests.get hangs in the nightly payroll export under celery beat on kubernetes"
    with indexer.open_index(find_vault(repo.root)) as index:
        plain = recall(index, query)
        first, second = (c for c in plain.candidates[:2])
        behind = (second.score - first.score) / R.prompt_weights(index, query).best
        clear_gap = R.SEMANTIC_PICK - R.SEMANTIC_PICK_LEAD_WEIGHT * behind + 0.05
        clear = recall(index, query, semantic={second.card.id: 1.0 + clear_gap, first.card.id: 1.0})
        short = recall(index, query, semantic={second.card.id: 1.0 + clear_gap - 0.1, first.card.id: 1.0})
        unranked = recall(index, query, semantic={"docker/copy-deps-first": 9.0, first.card.id: 1.0})
    assert plain.abstained and second.card.id == "python/asyncio-blocking-call" and behind < 0
    assert [c.card.id for c in clear.injected] == [second.card.id]
    picked = {c.card.id: c for c in clear.candidates}
    assert picked[first.card.id].decision == R.REJECTED and picked[second.card.id].reason is None
    assert short.abstained  # 0.1 short of the pick: a card words rank lower needs a larger semantic gap
    assert unranked.abstained  # the semantic first choice shares no word with the prompt: never picked
    rows = {row["id"]: row for row in explain_rows(clear)}
    assert rows[second.card.id]["picked"] == "semantic" and "picked" not in rows[first.card.id]
    assert "semantic pick" in render_explain(
        clear, list(rows.values())
    )  # explain says why a card failing a gate went in
    assert all("picked" not in row for row in explain_rows(plain))


# -- the commands ------------------------------------------------------------------------------------------------


def test_explain_shows_matched_and_missing_terms(vault_repo: VaultRepo) -> None:
    repo = _cards(vault_repo)
    query = "requests.get hangs in the nightly payroll export under celery beat on kubernetes"
    done = repo.cairn("explain", "--json", query)
    assert done.returncode == 0, done.stderr
    rows = {row["id"]: row for row in json.loads(done.stdout)["candidates"]}
    top = rows["python/requests-timeout"]
    assert "requests.get" in top["matched"]
    rejected = [row for row in rows.values() if row["decision"] == "rejected" and row["gates"]]
    assert rejected and all("payroll" in row["missing"] for row in rejected)
    assert json.loads(done.stdout)["abstained"]
    text = repo.cairn("explain", query).stdout
    assert "     matched: requests.get, requests, get, hangs; missing: nightly, payroll, export" in text


def test_recall_and_explain_read_the_prompt_from_stdin(vault_repo: VaultRepo) -> None:
    repo = _cards(vault_repo)
    done = repo.cairn("recall", "-", "--json", input=TRACEBACK)
    assert done.returncode == 0, done.stderr
    assert [c["id"] for c in json.loads(done.stdout)["cards"]] == ["python/package-data"]
    explained = repo.cairn("explain", "-", input=TRACEBACK)
    assert explained.returncode == 0 and "Injected: python/package-data" in explained.stdout
    empty = repo.cairn("recall", "-", input="  \n")
    assert empty.returncode == 2 and "stdin is empty" in empty.stderr and "Traceback" not in empty.stderr
