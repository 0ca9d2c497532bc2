"""The own words relief of the lead gate (issue 16, round 20): a card counts its lead `gates.NAMED_LEAD` times when the
prompt says a larger share of the card's own words (its name and summary) than of the next card's, by
`gates.SAID_GAP`: the right card is matched on what it is about, a near-topic neighbour on shared context."""

from __future__ import annotations

import dataclasses
import json

import pytest

from cairn.hot import gates
from cairn.hot.recall import SAID_CHARS, Result, recall, said_share
from cairn.hot.settings import settings_of
from cairn.hot.tokens import prompt_terms
from cairn.hot.vault import find_vault
from cairn.index import build as indexer
from cairn.quality.calibrate import Thresholds, gather
from cairn.quality.evaluate import Case
from helpers.vaults import VaultRepo, explain_after, run_cairn

# The mutable-default card's summary says "evaluates ... once, at definition: every call appends to the same list";
# the class-attribute card shares "list", "append" and "same". Its raw lead is 0.18 of the query: under min_lead.
SAID = "every call appends to the same list and the list keeps growing as if it were evaluated once at definition"
DEFAULT_ID = "python/mutable-default-argument"
NEIGHBOUR_ID = "python/class-attribute-shared"


def _vault(repo: VaultRepo) -> VaultRepo:
    repo.write(
        DEFAULT_ID,
        "Mutable default arguments are shared between calls",
        "def f(items=[]) evaluates the default list once, at definition: every call appends to the same list. "
        "Default to None and make the list inside.",
    )
    repo.write(
        NEIGHBOUR_ID,
        "Class attributes are shared by every instance",
        "A list defined in the class body is one object for all instances: appending to it through self changes "
        "the list every instance sees.",
    )
    for card_id, name, summary in [
        ("python/requests-timeout", "Set a timeout on every requests call", "requests.get waits forever without one."),
        ("git/force-with-lease", "Force-push with --force-with-lease", "After a rebase, push with --force-with-lease."),
        ("docker/deps-first", "Copy dependency files before the source", "COPY the lockfile first in a Dockerfile."),
        ("http/idempotency", "Retrying a POST needs an idempotency key", "Send an Idempotency-Key header."),
        ("ci/pin-python", "Pin the Python version in CI", "Use setup-python with an exact version."),
        ("ops/logrotate", "Rotate logs with logrotate", "copytruncate keeps the file handle."),
        ("db/n-plus-one", "N+1 queries in the ORM", "Use select_related or a join instead of a query per row."),
    ]:
        repo.write(card_id, name, summary)
    repo.commit("cards")
    return repo


def _recall(repo: VaultRepo, query: str) -> Result:
    vault = find_vault(repo.root)
    indexer.build_index(vault)
    with indexer.open_index(vault) as index:
        return recall(index, query, examine_all=True)


def test_said_lead_counts_more_only_from_the_gap_up() -> None:
    assert gates.said_lead(0.2, 0.3, 0.3 - gates.SAID_GAP + 0.001) == 0.2
    assert gates.said_lead(0.2, 0.3, 0.3 - gates.SAID_GAP) == pytest.approx(0.2 * gates.NAMED_LEAD)
    assert gates.said_lead(0.2, 0.0, 0.0) == 0.2  # a card none of whose words the prompt says
    assert gates.said_lead(0.9, 1.0, 0.0) == 1.0  # a ratio: never above 1


def test_a_card_whose_own_words_the_prompt_says_passes_the_lead_gate_its_raw_lead_fails(vault_repo: VaultRepo) -> None:
    result = _recall(_vault(vault_repo), SAID)
    first, second = result.candidates[0], result.candidates[1]
    assert first.card.id == DEFAULT_ID
    assert second.score < 0.7 * first.score  # not a group of related cards: the relief alone lets it in
    assert not first.named  # nor the name relief: the prompt does not name it
    assert first.said
    assert first.lead / gates.NAMED_LEAD < result.settings.min_lead <= first.lead
    assert [c.card.id for c in result.injected] == [DEFAULT_ID]
    assert not second.said


def test_without_the_relief_the_same_prompt_abstains(vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _vault(vault_repo)
    monkeypatch.setattr(gates, "SAID_GAP", 1.01)  # no share can be that far ahead: the lead as before round 20
    result = _recall(repo, SAID)
    assert result.injected == ()
    assert result.candidates[0].reason == gates.SMALL_LEAD
    assert not result.candidates[0].said


def test_the_gap_is_over_the_next_cards_share_not_a_share_alone(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _vault(vault_repo)
    asked = frozenset(prompt_terms(SAID))
    with indexer.open_index(find_vault(repo.root)) as index:
        cards = {card_id: index.card_by_id(card_id) for card_id in (DEFAULT_ID, NEIGHBOUR_ID)}
    own = said_share(cards[DEFAULT_ID], asked)  # type: ignore[arg-type]
    following = said_share(cards[NEIGHBOUR_ID], asked)  # type: ignore[arg-type]
    assert 0 < following < own  # the neighbour says some of its own words too: the relief weighs the difference
    monkeypatch.setattr(gates, "SAID_GAP", own - following + 0.001)
    assert _recall(repo, SAID).injected == ()
    monkeypatch.setattr(gates, "SAID_GAP", own - following - 0.001)
    assert [c.card.id for c in _recall(repo, SAID).injected] == [DEFAULT_ID]


def test_the_relief_does_not_lower_a_vault_that_asks_for_a_higher_lead(vault_repo: VaultRepo) -> None:
    repo = _vault(vault_repo)
    repo.write_raw("cairn.toml", "[recall]\nmin_lead = 0.35\n")  # the counted lead (0.27) is under it
    repo.commit("a stricter vault")
    result = _recall(repo, SAID)
    assert result.injected == ()
    assert result.candidates[0].reason == gates.SMALL_LEAD


def test_the_hook_and_explain_say_which_lead_was_counted(vault_repo: VaultRepo) -> None:
    repo = _vault(vault_repo)
    indexer.build_index(find_vault(repo.root))
    after = explain_after(repo.root, SAID, DEFAULT_ID)
    assert f"lead x{gates.NAMED_LEAD:g} (the prompt says more of its own words than of the next card's)" in after[0]
    rows = json.loads(run_cairn("explain", SAID, "--json", cwd=repo.root).stdout)["candidates"]
    assert [row["id"] for row in rows if row.get("said")] == [DEFAULT_ID]
    got = run_cairn("recall", SAID, "--json", cwd=repo.root)
    assert got.returncode == 0, got.stderr
    assert [card["id"] for card in json.loads(got.stdout)["cards"]] == [DEFAULT_ID]


def test_a_cards_own_words_are_read_from_what_an_interface_gives_of_it(vault_repo: VaultRepo) -> None:
    """A card's fields are untrusted and its frontmatter may be long: the share reads the first SAID_CHARS characters
    of its name and of its summary, so a summary of 17,000 characters costs a prompt no more than one of 2,000."""
    filler = " ".join(f"word{n}" for n in range(SAID_CHARS))  # far past the bound
    vault_repo.write("ops/long-summary", "Rotate logs", f"{filler} timeout")
    vault_repo.write("ops/short-summary", "Rotate logs", "timeout on rotation")
    vault_repo.commit("cards")
    indexer.build_index(find_vault(vault_repo.root))
    with indexer.open_index(find_vault(vault_repo.root)) as index:
        long_card, short_card = index.card_by_id("ops/long-summary"), index.card_by_id("ops/short-summary")
    assert long_card is not None and short_card is not None
    assert len(long_card.summary) > 8 * SAID_CHARS
    asked = frozenset(prompt_terms("timeout"))
    assert said_share(long_card, asked) == 0.0  # its "timeout" lies past the bound
    assert said_share(short_card, asked) == pytest.approx(1 / 4)  # rotate, log, timeout, rotation


def test_calibrate_replays_the_relief_at_every_threshold(vault_repo: VaultRepo) -> None:
    """`cairn calibrate` replays recall from one run with the gates open, where no lead is under a threshold: the
    relief is a property of the case (`CasePoint.said`), and the replay injects what recall injects at each lead
    threshold, below the raw lead, between it and the relieved one, and above both."""
    repo = _vault(vault_repo)
    case = Case(id="said", query=SAID, expect=(DEFAULT_ID,))
    with indexer.open_index(find_vault(repo.root)) as index:
        settings = settings_of(index)
        (point,) = gather(index, [case], settings=settings)
        raw = point.top[0][0]
        assert raw < settings.min_lead <= raw * gates.NAMED_LEAD
        for min_lead in (raw * 0.9, (raw + raw * gates.NAMED_LEAD) / 2, raw * gates.NAMED_LEAD * 1.1):
            at = dataclasses.replace(settings, min_lead=min_lead)
            replayed = point.injected(Thresholds(min_lead, settings.min_coverage, settings.min_margin))
            assert replayed == len(recall(index, SAID, settings=at).injected), min_lead
        assert point.said
        assert point.injected(Thresholds(raw * gates.NAMED_LEAD * 1.1, 0.0, 0.0)) == 0
        assert point.injected(Thresholds(settings.min_lead, settings.min_coverage, settings.min_margin)) == 1
