"""Layered vaults compare cards on one scale: coverage with the prompt's terms weighed by IDF over the vaults in play
together (`serve.Scale`), not each vault's own IDF; and with the semantic extra, a card given for its meaning is not
vetoed by another vault's card that only shares more words (`serve.SEMANTIC_WEIGHT`).

Two real git vaults of 40 cards. The team's (listed first) holds `unix/lp`, the only card there saying "print" or
"file", and never says "justfile". The org's holds `build/just`, its only card saying "justfile", and a few cards
that mention printing or files in passing. For "print a file from the justfile" each vault's own IDF calls its own
words rare: lp covers 0.56 of the prompt in the team's vault, just 0.55 (or less) in the org's. Over both vaults
"print" and "file" are common words and "justfile" the telling one: just covers more, lp less.

The installed hook runs from a third folder, as an agent runs it; the semantic test runs recall in process with the
z-scores the warm encoder gives (a map of card id to z), since the extra's encoder is not part of the test suite."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from helpers.payloads import log_entries
from helpers.vaults import VaultRepo
from test_hook_layered import hook, register

if TYPE_CHECKING:
    from cairn.hot.recall import Result
    from cairn.hot.serve import Layer

PROMPT = "print a file from the justfile"
WORDS = (
    "apple bridge candle dragon engine forest garden harbor island jungle kettle lantern meadow needle orchard pillow "
    "quarry river saddle timber umbrella valley wagon yarrow zephyr anchor blossom copper desert ember falcon glacier "
    "hollow ivory juniper kernel ledger marble nectar"
).split()


@pytest.fixture
def home(isolated_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CAIRN_CONFIG", str(tmp_path / "config" / "cairn.toml"))
    monkeypatch.setenv("CAIRN_SEMANTIC", "0")  # words alone, whether or not the extra is installed
    return isolated_env


def vault(root: Path, card: tuple[str, str, str], printing: int, files: int) -> VaultRepo:
    """A vault of 40 cards: `card`, and 39 unrelated lessons of which `printing` mention printing and `files` keeping
    something in a file, in their bodies."""
    repo = VaultRepo(root)
    # The prompt's telling word is one word of one card ("justfile", "print"): this file is about the scale the
    # vaults' cards are compared on, so the evidence floor (one word of one card is 1.0 rare word) is off.
    repo.write_raw("cairn.toml", "[recall]\nmin_evidence = 0\n")
    repo.write(*card)
    for i in range(39):
        word, other = WORDS[i], WORDS[(i * 7 + 3) % len(WORDS)]
        body = ("You can print it as well. " if i < printing else "") + (
            "Keep it in a file. " if i >= 39 - files else ""
        )
        repo.write(f"misc/{word}", f"Lesson about the {word} {i}", f"Notes on {word} and {other}.", body)
    repo.commit("Lessons")
    assert repo.invoke("index").returncode == 0
    return repo


def two_vaults(tmp_path: Path, printing: int, files: int) -> tuple[VaultRepo, VaultRepo, Path]:
    team = vault(
        tmp_path / "team", ("unix/lp", "Print a file with lp", "lp sends a file to the default printer."), 0, 0
    )
    org = vault(
        tmp_path / "org",
        ("build/just", "Recipes live in the justfile", "just runs what a justfile declares."),
        printing,
        files,
    )
    register(team.root, "team")
    register(org.root, "org")
    project = tmp_path / "work" / "acme"
    project.mkdir(parents=True)
    return team, org, project


def names(context: str) -> list[str]:
    return [line.split(": ", 1)[1].strip('"') for line in context.split("\n") if line.lstrip().startswith("id: ")]


def recalled(
    team: VaultRepo, org: VaultRepo, semantic: dict[str, dict[str, float]] | None = None
) -> tuple[list[Layer], list[Result]]:
    """Both vaults' layers and recall results for PROMPT, in process."""
    from cairn.hot.index import IndexReader
    from cairn.hot.paths import index_path
    from cairn.hot.recall import recall
    from cairn.hot.serve import Layer

    layers = [
        Layer(name, str(repo.root), IndexReader(index_path(str(repo.root))))
        for name, repo in (("team", team), ("org", org))
    ]
    results = [
        recall(layer.index, PROMPT, semantic=None if semantic is None else semantic[layer.name or ""])
        for layer in layers
    ]
    return layers, results


def test_cards_of_two_vaults_are_ordered_by_coverage_on_one_scale(home: Path, tmp_path: Path) -> None:
    from cairn.hot.serve import Scale

    team, org, project = two_vaults(tmp_path, printing=4, files=5)
    context = hook(project, PROMPT)
    assert names(context) == ["org:build/just", "team:unix/lp"]  # each vault's own coverage put lp first
    layers, results = recalled(team, org)
    lp, just = results[0].injected[0], results[1].injected[0]
    scale = Scale(layers, results)
    assert lp.coverage > just.coverage  # each vault's own scale: lp first
    assert scale.figure(just) > scale.figure(lp) + 0.05  # one scale: just first, clearly
    for layer in layers:
        layer.index.close()


def test_a_vault_that_knows_the_telling_word_vetoes_a_card_covering_it_only_on_its_own_scale(
    home: Path, tmp_path: Path
) -> None:
    from cairn.hot import serve

    team, org, project = two_vaults(tmp_path, printing=3, files=3)
    # The org's vault asks for a lead its just card misses even counted 1.5 times for its own words (the prompt says
    # "justfile", a fifth of them; `gates.said_lead`): it gives nothing, which is what this test is about.
    org.write_raw("cairn.toml", "[recall]\nmin_evidence = 0\nmin_lead = 0.4\n")
    org.commit("a stricter vault")
    assert org.invoke("index").returncode == 0
    assert hook(project, PROMPT) == ""  # lp was given: the team's vault never says "justfile", so it cost little
    logged = {c["id"]: c for c in log_entries()[-1]["candidates"]}
    assert logged["team:unix/lp"]["reason"] == "cross_vault"
    assert logged["org:build/just"]["reason"] == "small_lead"  # the org's vault found nothing clear
    layers, results = recalled(team, org)
    lp, just = results[0].injected[0], results[1].candidates[0]
    assert lp.coverage > just.coverage  # on each vault's own scale, lp covers the prompt better
    scale = serve.Scale(layers, results)
    assert scale.figure(lp) < scale.figure(just)  # on one scale, the org knows it better
    for layer in layers:
        layer.index.close()


def test_a_card_given_for_its_meaning_stands_against_a_card_sharing_more_words(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cairn.hot import gates, serve

    team, org, project = two_vaults(tmp_path, printing=3, files=3)
    monkeypatch.setattr(gates, "SAID_GAP", 1.01)  # the org's just card without the own words relief: no word pick
    # The warm encoder's z-scores: lp is the team's card the prompt means (z 6); the org's just card shares more
    # words but means nothing close (z 0.5, its vault's second 0.4: no semantic pick there).
    sims = {"team": {"unix/lp": 6.0, "misc/apple": 0.2}, "org": {"build/just": 0.5, "misc/apple": 0.4}}
    layers, results = recalled(team, org, sims)
    assert [c.card.id for c in results[0].injected] == ["unix/lp"] and results[1].injected == ()
    assert serve.SEMANTIC_WEIGHT > 0
    kept = serve.merge(layers, results, serve.MAX_CARDS)
    assert [p.qid for p in kept] == ["team:unix/lp"]
    dropped: dict[str, str] = {}
    assert serve.merge(layers, results, serve.MAX_CARDS, dropped, semantic_weight=0.0) == []  # words alone: vetoed
    assert dropped == {"team:unix/lp": "cross_vault"}
    # A rival as close in meaning vetoes it again.
    sims["org"] = {"build/just": 6.0, "misc/apple": 5.9}
    layers2, results2 = recalled(team, org, sims)
    assert results2[1].injected == ()
    assert serve.merge(layers2, results2, serve.MAX_CARDS) == []
    for layer in (*layers, *layers2):
        layer.index.close()


def test_one_vault_on_the_one_scale_is_its_own_coverage(home: Path, tmp_path: Path) -> None:
    from cairn.hot.serve import Scale

    team, org, _ = two_vaults(tmp_path, printing=4, files=5)
    layers, results = recalled(team, org)
    for layer, result in zip(layers, results, strict=True):
        alone = Scale([layer], [result])
        assert result.candidates
        for c in result.candidates:
            if c.reason is None or c.coverage > 0:  # the gates' coverage (cards refused at admission show 0.0)
                assert abs(alone.figure(c) - c.coverage) < 1e-3
        layer.index.close()


def test_the_semantic_answer_is_read_only_when_it_could_decide_across_vaults_too(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`serve.recall_all` reads a vault's answer only when it could change that vault's decision; across vaults,
    once any vault gives a card, every vault whose answer went unread is recalled again with it, since the merge
    compares the cards given with the others' similarities (`Scale.veto_figure`). Each result is the one a read
    answer gives."""
    from collections.abc import Callable

    from cairn.hot import serve
    from cairn.hot.index import IndexReader
    from cairn.hot.paths import index_path
    from cairn.hot.recall import recall

    team, org, _ = two_vaults(tmp_path, printing=4, files=5)
    answer = {"unix/lp": 0.5, "build/just": 0.4}
    reads: list[str] = []

    def asked(index: IndexReader, query: str, *, alone: bool = True) -> Callable[[], dict[str, float] | None]:
        def read() -> dict[str, float] | None:
            reads.append(query)
            return answer

        return read

    monkeypatch.setattr(serve, "ask_similarities", asked)
    layers = [
        serve.Layer(name, str(repo.root), IndexReader(index_path(str(repo.root))))
        for name, repo in (("team", team), ("org", org))
    ]
    nothing = "how do I center a div with flexbox in css"
    # Two sentences of prose: the veto does not judge it, so neither vault needs its answer for its own decision.
    two_things = (
        "We keep the build recipes in a justfile at the repository root. "
        "How do I print a file from the justfile on the office printer?"
    )
    for query, served, read in (
        (nothing, layers[:1], 0),
        (nothing, layers, 0),
        (two_things, layers[:1], 0),
        (two_things, layers, 2),
    ):
        reads.clear()
        lazy = serve.recall_all(served, query, None, None)
        assert len(reads) == read, (query, len(served))
        eager = [recall(layer.index, query, semantic=answer) for layer in served]
        assert [[c.card.id for c in r.injected] for r in lazy] == [[c.card.id for c in r.injected] for r in eager]
        if read:
            assert [r.candidates for r in lazy] == [r.candidates for r in eager]  # similarities too: the merge's
    assert serve.recall_all(layers, two_things, None, None)[0].injected  # a vault gives a card: the second pass ran
    for layer in layers:
        layer.index.close()
