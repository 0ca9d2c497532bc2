"""The fragment pick (issue 16, item 4; `recall._fragment_pick`): when an agent prompt's context and instructions, in
words the vault knows, drown its question, the question asked alone still injects the card the whole prompt ranks
first; a fragment that would inject another card, or one too weakly, injects nothing."""

from __future__ import annotations

import dataclasses
import json

import pytest

from cairn.cli.recall_cmds import explain_rows, render_explain
from cairn.hot import recall as R
from cairn.hot.recall import FRAGMENT_PICKED, recall
from cairn.hot.settings import settings_of
from cairn.hot.tokens import prompt_fragments
from cairn.hot.vault import find_vault
from cairn.index import build as indexer
from cairn.quality.calibrate import Thresholds, gather
from cairn.quality.evaluate import Case
from helpers.payloads import log_entries, payload_for
from helpers.vaults import VaultRepo

TEMPLATE = "js/template-literal-object"
QUESTION = "error message shows `Failed for [object Object]` instead of the request details"
# The wrapper's words are the vault's (react, vite, typescript, strict, patch, package): the foreign-sentence rule
# cannot discount them, and the instruction is glued to the question without a full stop.
WRAPPED = (
    "We're on the checkout frontend, React 18 + Vite, TypeScript strict. "
    + QUESTION
    + " Give me the root cause first, then a minimal patch; don't touch package.json."
)


def _vault(repo: VaultRepo) -> VaultRepo:
    repo.write(
        TEMPLATE,
        "A template literal prints an object as [object Object]",
        "Interpolating an object into a template literal or an error message calls its toString, which gives "
        "`[object Object]` instead of its fields: use JSON.stringify(obj) or name the fields.",
    )
    repo.write(
        "react/strict-mode-double-render",
        "React 18 strict mode renders components twice",
        "In development, React 18's StrictMode mounts, unmounts and mounts every component again: effects run twice.",
    )
    repo.write(
        "ts/strict-null-checks",
        "TypeScript strict mode and optional fields",
        "With `strict` on, TypeScript reports every read of an optional field without a check for undefined.",
    )
    repo.write(
        "build/vite-env-prefix",
        "Vite exposes only VITE_-prefixed variables to the frontend",
        "A variable without the VITE_ prefix is undefined in the browser bundle; Vite leaves it out on purpose.",
    )
    repo.write(
        "npm/patch-package",
        "Patch a dependency with patch-package, not by editing node_modules",
        "Edits in node_modules vanish on the next install; patch-package keeps a patch file and reapplies it.",
    )
    repo.write(
        "npm/lockfile-root-cause",
        "A frontend that breaks after a fresh install: check the lockfile first",
        "The root cause is often a dependency's minor release: package.json allows it, the lockfile pinned the old one.",
    )
    repo.write_raw("cairn.toml", "# Cairn's settings for this vault: the defaults.\n")  # the hook serves only a vault
    repo.commit("cards")
    return repo


def test_prompt_fragments_cut_sentences_and_glued_instructions() -> None:
    # the instructions glued on ("Give me ...", "don't touch ...") are cut off, and asked alone only when the prompt
    # says nothing else
    assert prompt_fragments(WRAPPED) == [
        "We're on the checkout frontend, React 18 + Vite, TypeScript strict.",
        QUESTION,
    ]
    instructions = "Keep changes small and run the tests for the package you touch. Give me the root cause first."
    assert prompt_fragments(instructions) == [
        "Keep changes small and run the tests for the package you touch.",
        "Give me the root cause first.",
    ]
    # a colon that labels a message ends no fragment, nor does one inside a `code span`; one that labels a question
    # does. A prompt of one fragment has none to ask alone: it was asked whole.
    message = "JSON.stringify throws TypeError: Do not know how to serialize a BigInt. The export page shows nothing."
    assert prompt_fragments(message) == [
        "JSON.stringify throws TypeError: Do not know how to serialize a BigInt.",
        "The export page shows nothing.",
    ]
    quoted = "Running `docker: Error response from daemon: could not select device driver` on the build host. Why?"
    assert prompt_fragments(quoted) == []
    labelled = "Someone on the team asked me this: which shell sorts the history by date? We use zsh on macOS laptops."
    assert prompt_fragments(labelled) == [
        "which shell sorts the history by date?",
        "We use zsh on macOS laptops.",
    ]
    assert prompt_fragments("Someone on the team asked me this: which shell sorts the history by date?") == []
    assert prompt_fragments(
        "A new hire on the payments team (Node, Postgres): splitting an empty CSV line gives 1"
    ) == [
        "A new hire on the payments team (Node, Postgres):",
        "splitting an empty CSV line gives 1",
    ]
    # an exception line stays whole; pasted code and fenced blocks are no fragment; nor is a sentence of fewer than
    # three terms that are not instruction words, or one made of instruction words alone
    prompt = (
        "Why does the worker crash at startup on the staging cluster?\n"
        "```\nconfig = load_config(path)\nworker.start(config)\n```\n"
        "    at Worker.start (worker.js:10:5)\n"
        "TypeError: Cannot read properties of undefined (reading 'port')\n"
        "Fix it. Check the code first, then change the files."
    )
    assert prompt_fragments(prompt) == [
        "Why does the worker crash at startup on the staging cluster?",
        "TypeError: Cannot read properties of undefined (reading 'port')",
    ]
    # CJK full stops end a fragment without a space after them
    assert prompt_fragments(
        "我们在做订单服务的发版整理。合并分支以后提交历史里出现了重复的提交记录。先别改任何文件。"
    ) == [
        "我们在做订单服务的发版整理。",
        "合并分支以后提交历史里出现了重复的提交记录。",
    ]


def test_the_question_asked_alone_injects_the_card_the_whole_prompt_ranks_first(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _vault(vault_repo)
    with indexer.open_index(find_vault(repo.root)) as index:
        alone = recall(index, QUESTION)
        picked = recall(index, WRAPPED)
        shown = render_explain(picked, explain_rows(picked))
        monkeypatch.setattr(R, "_fragment_pick", lambda *args: None)  # the rule off
        drowned = recall(index, WRAPPED)
    assert [c.card.id for c in alone.injected] == [TEMPLATE]
    assert drowned.abstained and drowned.candidates[0].card.id == TEMPLATE  # first, its lead drowned by the wrapper
    assert drowned.candidates[0].lead < drowned.settings.min_lead
    assert [c.card.id for c in picked.injected] == [TEMPLATE]
    first = picked.injected[0]
    assert first.picked == FRAGMENT_PICKED and first.reason is None
    assert (first.lead, first.coverage) == (drowned.candidates[0].lead, drowned.candidates[0].coverage)  # the whole's
    assert picked.fragment == QUESTION
    assert [c.card.id for c in picked.candidates] == [c.card.id for c in drowned.candidates]
    assert "one sentence" in shown and "Injected on one sentence of the prompt" in shown and "object Object" in shown


def test_a_fragment_that_injects_another_card_or_too_weakly_injects_nothing(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _vault(vault_repo)
    # the context sentence alone injects the Vite card, but the whole prompt ranks the template card first: only the
    # question, which agrees with the whole, may inject
    question = QUESTION + " when I interpolate the object into a template literal"
    prompt = "We're on the checkout frontend and Vite exposes VITE_ variables only. " + question
    context = prompt_fragments(prompt)[0]
    with indexer.open_index(find_vault(repo.root)) as index:
        by_context = recall(index, context)
        whole = recall(index, prompt)
        monkeypatch.setattr(R, "FRAGMENT_LEAD", 1.01)  # no fragment's lead reaches it
        strict = recall(index, WRAPPED)
    assert prompt_fragments(prompt) == [context, question]
    assert [c.card.id for c in by_context.injected] == ["build/vite-env-prefix"]
    assert whole.candidates[0].card.id == TEMPLATE and whole.candidates[0].lead < whole.settings.min_lead
    assert [c.card.id for c in whole.injected] == [TEMPLATE] and whole.fragment == question
    assert strict.abstained and strict.fragment is None


def test_the_hook_injects_the_drowned_question_and_explain_says_why(vault_repo: VaultRepo) -> None:
    """The installed `cairn hook` with Claude Code's payload, and `cairn explain --json`, as a user runs them."""
    repo = _vault(vault_repo)
    assert repo.invoke("index").returncode == 0  # the hook serves an index, never builds one
    done = repo.cairn(
        "hook", "--format", "claude-code", input=payload_for("claude-code", WRAPPED, repo.root),
        env={"CAIRN_VAULT": str(repo.root)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert TEMPLATE in context and "react/strict-mode-double-render" not in context
    entry = log_entries()[-1]
    assert entry["injected"] == [TEMPLATE]
    assert [(c["id"], c["reason"], c.get("picked")) for c in entry["candidates"][:1]] == [(TEMPLATE, None, "fragment")]
    assert QUESTION not in json.dumps(entry)  # the log never holds the prompt, nor the fragment asked
    explained = repo.invoke("explain", WRAPPED, "--json")
    assert explained.returncode == 0, explained.stderr
    data = json.loads(explained.stdout)
    assert data["fragment"] == QUESTION
    assert [row["id"] for row in data["candidates"] if row["decision"] == "injected"] == [TEMPLATE]
    assert data["candidates"][0]["picked"] == FRAGMENT_PICKED
    plain = json.loads(repo.invoke("explain", QUESTION, "--json").stdout)
    assert "fragment" not in plain


def test_a_pasted_document_asks_at_most_a_few_fragments(vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hundreds of sentences that each name the first card's words: the hook scores at most `FRAGMENT_TRIES` of them,
    those saying most of the card's matched terms first."""
    repo = _vault(vault_repo)
    asked: list[str] = []
    real = R._may_lead

    def counting(index: object, fragment: str, row: int, settings: object) -> bool:
        asked.append(fragment)
        return real(index, fragment, row, settings)  # type: ignore[arg-type]

    monkeypatch.setattr(R, "_may_lead", counting)
    filler = " ".join(f"Deployment {i} of the reporting cron job printed the object twice." for i in range(300))
    best = "The template literal shows [object Object] in the error message."
    with indexer.open_index(find_vault(repo.root)) as index:
        result = recall(index, filler + " " + best)
    assert 0 < len(asked) <= R.FRAGMENT_TRIES
    assert asked[0] == best  # it says the most of what the card matched
    assert [c.card.id for c in result.injected] == [TEMPLATE] and result.fragment == best


def test_calibrate_replays_the_fragment_pick(vault_repo: VaultRepo) -> None:
    """`cairn calibrate` replays recall at every grid point from one run with the gates open: the fragment's gate
    values are a box of their own, so the replay injects what recall injects, at the shipped thresholds and above."""
    repo = _vault(vault_repo)
    cases = [Case(id="wrapped", query=WRAPPED, expect=(TEMPLATE,), slice="long")]
    with indexer.open_index(find_vault(repo.root)) as index:
        settings = settings_of(index)
        (point,) = gather(index, cases, settings=settings)
        shipped = Thresholds(settings.min_lead, settings.min_coverage, settings.min_margin)
        strict = Thresholds(0.9, settings.min_coverage, settings.min_margin)
        real = recall(index, WRAPPED)
        at_strict = recall(index, WRAPPED, settings=dataclasses.replace(settings, min_lead=0.9))
    assert point.asked and not shipped.passes(point.top[0])  # the whole prompt's gates refuse; a fragment's pass
    assert point.injected(shipped) == len(real.injected) == 1
    assert point.injected(strict) == len(at_strict.injected) == 0
