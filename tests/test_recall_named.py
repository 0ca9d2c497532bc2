"""The name relief of the lead gate (issue 16, round 5): a card whose name with its aliases holds most of the prompt's
weight counts its lead `gates.NAMED_LEAD` times, so a close neighbour does not silence the lesson the prompt names."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from cairn.hot import gates
from cairn.hot.recall import Result, recall
from cairn.hot.settings import settings_of
from cairn.hot.vault import find_vault
from cairn.index import build as indexer
from helpers.vaults import VaultRepo, explain_after, run_cairn

# The prune card's name and alias hold every word of this prompt the card matches (66% of its weight); the worktree
# card scores 0.62 of it (not a group), so the prune card's own lead is 0.20 of the query: under min_lead 0.24.
NAMED = "git worktree prune stale entries after a rebase in CI"


def _vault(repo: VaultRepo, named: bool = True) -> VaultRepo:
    if named:
        repo.write(
            "git/worktree-prune",
            "Prune stale git worktrees",
            "After deleting a worktree folder by hand, git still lists it; git worktree prune removes the stale "
            "entries.",
            aliases=["stale worktree entries"],
        )
    else:  # the same words, in the summary and body: the name says something else
        repo.write(
            "git/worktree-prune",
            "After deleting a folder by hand",
            "Prune stale git worktrees: git still lists the stale worktree entries of a folder deleted by hand; git "
            "worktree prune removes them.",
        )
    repo.write(
        "git/worktree-add",
        "Add a worktree per branch under review",
        "Check a branch out in its own folder with git worktree add so a review does not stash your work; prune "
        "stale worktrees when done.",
    )
    for i, (name, summary) in enumerate(
        [
            ("Force-push with --force-with-lease", "After a rebase, push with --force-with-lease."),
            ("Copy dependency files before the source", "COPY the lockfile first in a Dockerfile."),
            ("Retrying a POST needs an idempotency key", "Send an Idempotency-Key header."),
            ("Pin the Python version in CI", "Use setup-python with an exact version."),
            ("Rotate logs with logrotate", "copytruncate keeps the file handle."),
            ("Timeouts on every HTTP call", "requests waits forever without timeout."),
        ]
    ):
        repo.write(f"misc/card-{i}", name, summary)
    repo.commit("cards")
    return repo


def _recall(repo: VaultRepo, query: str, **settings: Any) -> Result:
    vault = find_vault(repo.root)
    indexer.build_index(vault)
    with indexer.open_index(vault) as index:
        chosen = dataclasses.replace(settings_of(index), **settings)
        return recall(index, query, settings=chosen, examine_all=True)


def test_named_lead_counts_more_only_from_the_name_coverage_up() -> None:
    assert gates.named_lead(0.2, gates.NAME_COVERAGE - 0.001) == 0.2
    assert gates.named_lead(0.2, gates.NAME_COVERAGE) == pytest.approx(0.2 * gates.NAMED_LEAD)
    assert gates.named_lead(0.9, 1.0) == 1.0  # a ratio: never above 1


def test_a_card_the_prompt_names_passes_the_lead_gate_its_raw_lead_fails(vault_repo: VaultRepo) -> None:
    result = _recall(_vault(vault_repo), NAMED)
    first, second = result.candidates[0], result.candidates[1]
    assert first.card.id == "git/worktree-prune"
    assert second.score < 0.7 * first.score  # not a group of related cards: the relief alone lets it in
    raw = first.lead / gates.NAMED_LEAD
    assert raw < result.settings.min_lead <= first.lead
    assert first.coverage >= gates.NAME_COVERAGE
    assert [c.card.id for c in result.injected] == ["git/worktree-prune"]
    assert first.reason is None


def test_without_the_relief_the_same_prompt_abstains(vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _vault(vault_repo)
    monkeypatch.setattr(gates, "NAME_COVERAGE", 1.01)  # no card can be named: the lead as before round 5
    monkeypatch.setattr(gates, "SAID_GAP", 1.01)  # nor the own words relief of round 20, which would take its place
    result = _recall(repo, NAMED)
    assert result.injected == ()
    assert result.candidates[0].reason == gates.SMALL_LEAD


def test_the_relief_does_not_lower_a_vault_that_asks_for_a_higher_lead(vault_repo: VaultRepo) -> None:
    # min_lead raised: the named card's counted lead (0.30) is under it, so the vault's own choice holds
    result = _recall(_vault(vault_repo), NAMED, min_lead=0.35)
    assert result.injected == ()
    assert result.candidates[0].reason == gates.SMALL_LEAD


def test_words_outside_the_name_get_no_relief(vault_repo: VaultRepo) -> None:
    # the same prompt and neighbour, the card's matching words in its summary and body, not its name
    result = _recall(_vault(vault_repo, named=False), NAMED)
    first = result.candidates[0]
    assert first.card.id == "git/worktree-prune"
    assert first.coverage >= gates.NAME_COVERAGE
    assert first.lead < result.settings.min_lead
    assert result.injected == ()


def test_explain_says_which_lead_was_counted_for_the_name(vault_repo: VaultRepo) -> None:
    repo = _vault(vault_repo)
    indexer.build_index(find_vault(repo.root))
    after = explain_after(repo.root, NAMED, "git/worktree-prune")
    assert f"lead x{gates.NAMED_LEAD:g} (the prompt names it)" in after[0]
    assert not any("names it" in line for line in after[1:])  # the neighbour is not named by the prompt
    rows = json.loads(run_cairn("explain", NAMED, "--json", cwd=repo.root).stdout)["candidates"]
    assert [row["id"] for row in rows if row.get("named")] == ["git/worktree-prune"]
