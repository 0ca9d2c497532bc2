"""A sentence of a prompt about something else than the vault (issue 16, item 4; `recall.FOREIGN_SHARE`): an agent's
wrapper names the repo and stack around a short question in words the vault never uses, and those words no longer
drown the question; a question about something the vault does not know keeps all its weight."""

from __future__ import annotations

import json

import pytest

from cairn.cli.recall_cmds import explain_rows, render_explain
from cairn.hot import gates, stored_settings
from cairn.hot import recall as R
from cairn.hot.recall import prompt_weights, recall
from cairn.hot.tokens import prompt_sentences
from cairn.hot.vault import find_vault
from cairn.index import build as indexer
from helpers.vaults import VaultRepo

NAN = "js/typeof-nan-is-number"
QUESTION = "typeof NaN is number?? how do I check for a real number"
WRAPPED = (
    "Legacy jQuery admin panel, plain ES5 in public/js/, no build step. " + QUESTION + " Please don't reformat the "
    "file; just tell me which line is wrong and why."
)


def _vault(repo: VaultRepo) -> VaultRepo:
    repo.write(
        NAN,
        "`typeof NaN` is 'number'",
        "NaN is a value of the number type, so `typeof x === 'number'` lets NaN through. Check a real number with "
        "`Number.isFinite(x)`.",
    )
    repo.write(
        "js/unary-plus-string",
        "Unary plus on a non-numeric string does not throw",
        "`+'abc'` gives no error: validate input before you convert it.",
    )
    repo.write(
        "js/parseint-radix",
        "parseInt without a radix",
        "Always pass the radix: `parseInt(s, 10)`; older engines read a leading zero as octal.",
    )
    repo.write(
        "build/webpack-chunk-names",
        "Name webpack chunks explicitly",
        "Without names, a build renames every chunk when one module changes, and browsers download them all again.",
    )
    repo.commit("cards")
    return repo


def test_the_wrappers_sentence_in_words_the_vault_never_uses_does_not_drown_the_question(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _vault(vault_repo)
    sentences = prompt_sentences(WRAPPED)
    shipped = R.FOREIGN_WEIGHT
    assert sentences[0][:2] == ("legacy", "jquery") and len(sentences) >= 3  # the wrapper's own sentence
    with indexer.open_index(find_vault(repo.root)) as index:
        alone = recall(index, QUESTION)
        wrapped = recall(index, WRAPPED)
        weights = prompt_weights(index, WRAPPED)
        monkeypatch.setattr(R, "FOREIGN_WEIGHT", 1.0)  # the rule off: the wrapper's words at full weight
        monkeypatch.setattr(R, "_fragment_pick", lambda *args: None)  # and the fragment pick (its own tests) off
        monkeypatch.setattr(gates, "SAID_GAP", 1.01)  # and the own words relief (its own tests)
        drowned = recall(index, WRAPPED)
        full = prompt_weights(index, WRAPPED)
    assert [c.card.id for c in alone.injected] == [NAN]
    assert [c.card.id for c in wrapped.injected] == [NAN]
    assert drowned.abstained and drowned.candidates[0].card.id == NAN  # first, but its lead and coverage drowned
    assert wrapped.injected[0].lead > 2 * drowned.candidates[0].lead
    # the wrapper's words (jquery, panel, es5: no card uses them; build: one card) weigh a tenth; the question's fully
    assert weights.unknown_terms["jquery"] == pytest.approx(shipped * full.unknown_terms["jquery"])
    assert weights.idf["build"] == pytest.approx(shipped * full.idf["build"])
    assert weights.idf["nan"] == pytest.approx(full.idf["nan"])
    assert weights.best < full.best
    # explain says which terms were weighed a tenth (`QueryWeights.foreign`)
    assert "jquery" in weights.foreign and "build" in weights.foreign and "nan" not in weights.foreign
    assert full.foreign == weights.foreign  # the rule found them; only their weight was patched
    shown = render_explain(wrapped, explain_rows(wrapped), foreign=weights.foreign)
    assert "Weighed a tenth" in shown and "jquery" in shown.splitlines()[2]
    assert "Weighed a tenth" not in render_explain(alone, explain_rows(alone), foreign=prompt_weights_of(repo).foreign)


def prompt_weights_of(repo: VaultRepo) -> R.QueryWeights:
    with indexer.open_index(find_vault(repo.root)) as index:
        return prompt_weights(index, QUESTION)


def test_a_question_about_what_the_vault_does_not_know_keeps_its_weight(vault_repo: VaultRepo) -> None:
    """One sentence is never discounted, nor a prompt whose every sentence the vault hardly knows: the words no card
    uses are what say the prompt is about something else, and the false injections they prevent stay prevented."""
    repo = _vault(vault_repo)
    single = "how do I check kitebuilder's plugin manifest for a real number of workers"
    all_foreign = "Our kitebuilder plugin manifest lists workers. The gradle daemon ignores them on windows."
    with indexer.open_index(find_vault(repo.root)) as index:
        for prompt in (single, all_foreign):
            weights = prompt_weights(index, prompt)
            unknown_weight = stored_settings(index.config).unknown_weight
            assert weights.unknown_terms["kitebuilder"] == pytest.approx(weights.one_card * unknown_weight)
            assert recall(index, prompt).abstained, prompt


def test_explain_names_the_terms_weighed_a_tenth(vault_repo: VaultRepo) -> None:
    """The installed `cairn explain`, as a user runs it: the line and the JSON key appear only when the rule applied."""
    repo = _vault(vault_repo)
    wrapped = repo.invoke("explain", WRAPPED, "--json")
    plain = repo.invoke("explain", QUESTION, "--json")
    text = repo.invoke("explain", WRAPPED)
    assert wrapped.returncode == plain.returncode == text.returncode == 0, wrapped.stderr
    assert "jquery" in json.loads(wrapped.stdout)["foreign_terms"]
    assert "foreign_terms" not in json.loads(plain.stdout)
    assert "Weighed a tenth" in text.stdout and "legacy" in text.stdout


def test_the_salient_evidence_of_a_traceback_is_never_weighed_a_tenth(vault_repo: VaultRepo) -> None:
    """A sentence naming the package a pasted traceback names, in words the vault does not know, is foreign; the
    package and the exception's words are the evidence (`tokens.prompt_terms`) and keep their full weight."""
    repo = _vault(vault_repo)
    prompt = (
        "We ship kitebuilder through the zorblax pipeline.\n"
        "typeof NaN is number?? how do I check for a real number\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/site-packages/kitebuilder/check.py", line 3, in <module>\n'
        "TypeError: zorblax got NaN\n"
    )
    assert all("kitebuilder" not in s and "zorblax" not in s for s in prompt_sentences(prompt))
    with indexer.open_index(find_vault(repo.root)) as index:
        weights = prompt_weights(index, prompt)
        unknown_weight = stored_settings(index.config).unknown_weight
    for evidence in ("kitebuilder", "zorblax"):
        assert evidence not in weights.foreign
        assert weights.unknown_terms[evidence] == pytest.approx(weights.one_card * unknown_weight)
    assert "pipeline" in weights.foreign  # the rest of the foreign sentence is weighed a tenth
