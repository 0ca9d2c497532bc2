"""Recall's phrase step (RESULTS.md "Round 13"): a card that holds words of the prompt side by side, which at most
two cards of the vault hold so, passes the word gates at `PHRASE_SCALE` of theirs when nothing else is injected."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from cairn.config import RecallSettings
from cairn.hot import recall as R
from cairn.hot.recall import PHRASE_PICKED, PHRASE_SCALE, rare_phrases, recall
from cairn.hot.settings import settings_of
from cairn.hot.tokens import phrases, tokenize
from cairn.hot.vault import find_vault
from cairn.index import build as indexer
from cairn.quality.calibrate import CasePoint, Thresholds
from helpers.payloads import claude_payload, log_entries
from helpers.vaults import VaultRepo

ASKED = "Why is the connection pool empty right after a deploy?"
SCATTERED = "Why is the pool empty right after a deploy, and which connection?"  # the same words, apart
POOL = "db/connection-pool-exhausted"


def test_phrases_are_neighbouring_words_sorted_without_an_identifiers_parts() -> None:
    assert phrases(tokenize("How do I run a GitHub Actions job?")) == ["github run", "action github", "action job"]
    assert phrases(tokenize("pool pool connection")) == ["connection pool"]  # a word beside itself is no phrase
    assert phrases(tokenize("connection pool, then the connection pool")) == ["connection pool"] * 3
    assert phrases(tokenize("")) == [] and phrases(tokenize("pool")) == []


def test_a_cjk_phrase_is_two_2_grams_side_by_side() -> None:
    # 环境变量: 2-grams 环境 境变 变量; only 环境 + 变量 do not overlap: one phrase of 4 characters
    assert phrases(tokenize("环境变量")) == ["变量 环境"]
    assert phrases(tokenize("环境")) == [] and phrases(tokenize("环境变")) == []


def _vault(repo: VaultRepo, holders: int = 0, scattered: int = 0) -> Path:
    """A small vault whose pool card holds "connection pool"; `holders` more cards hold the phrase too, `scattered`
    more hold both words apart."""
    repo.write_raw("cairn.toml", "# defaults\n")
    repo.write(
        POOL,
        "Connection pool exhausted under load",
        # its summary says more than the prompts do (under a tenth of its words), so the own words relief
        # (`gates.said_lead`) does not count its lead more: the step is what decides at these thresholds
        "Each request kept a connection pool slot until its transaction ended; size the pool for the workers, and "
        "alert on waiting requests before the queue backs up behind the slowest handler of each replica, shard and region.",
        "A deploy doubled the workers and the connection pool ran dry within minutes.",
    )
    repo.write("db/slow-migrations", "Long migrations lock tables", "Split a migration that rewrites a big table.")
    repo.write("docker/layer-cache", "Copy lockfiles first", "COPY the lockfile before the source to keep the cache.")
    repo.write("git/force-with-lease", "Force-push with a lease", "Push with --force-with-lease after a rebase.")
    for n in range(holders):
        repo.write(
            f"ops/holder-{n}",
            f"Dashboard number {n} for the connection pool",
            f"Graph the connection pool of service {n} on the team dashboard.",
        )
    for n in range(scattered):
        repo.write(
            f"ops/apart-{n}",
            f"Pool of workers number {n}",
            f"Keep the worker pool small; every worker opens one connection of its own ({n}).",
        )
    repo.commit("cards")
    return repo.root


def _step_settings(root: Path, query: str) -> RecallSettings:
    """Settings at which the first card fails the lead gate and passes it at PHRASE_SCALE (coverage and margin off)."""
    vault = find_vault(root)
    indexer.build_index(vault)
    with indexer.open_index(vault) as index:
        shipped = settings_of(index)
        open_ = dataclasses.replace(shipped, min_lead=0.0, min_coverage=0.0, min_margin=0.0, min_evidence=0.0)
        first = recall(index, query, settings=open_).injected[0]
        assert first.card.id == POOL and not first.named
    return dataclasses.replace(shipped, min_lead=first.lead / 0.95, min_coverage=0.0, min_margin=0.0)


def _recall(root: Path, query: str, settings: RecallSettings) -> R.Result:
    vault = find_vault(root)
    with indexer.open_index(vault) as index:
        return recall(index, query, settings=settings)


def _count_reads(index: Any, reads: list[str]) -> None:
    """Have `index` append to `reads` the id of every stored record it reads."""
    real = index.record

    def counted(card_id: str) -> object:
        reads.append(card_id)
        return real(card_id)

    index.record = counted


def _phrases_of_first(root: Path, first_id: str = POOL, reads: list[str] | None = None) -> list[str]:
    """`rare_phrases` of ASKED for the card recall puts first with every gate open (asserted to be `first_id`);
    `reads` collects the ids of the stored records it reads."""
    vault = find_vault(root)
    indexer.build_index(vault)
    with indexer.open_index(vault) as index:
        open_ = dataclasses.replace(
            settings_of(index), min_lead=0.0, min_coverage=0.0, min_margin=0.0, min_evidence=0.0
        )
        first = recall(index, ASKED, settings=open_).injected[0]
        assert first.card.id == first_id
        if reads is not None:
            _count_reads(index, reads)
        return rare_phrases(index, ASKED, first)


def test_a_rare_phrase_lets_the_first_card_pass_the_gates_at_the_phrase_scale(vault_repo: VaultRepo) -> None:
    root = _vault(vault_repo)
    settings = _step_settings(root, ASKED)
    result = _recall(root, ASKED, settings)
    assert [c.card.id for c in result.injected] == [POOL]
    assert result.injected[0].picked == PHRASE_PICKED
    assert result.phrases == ("connection pool",)
    assert result.settings == settings  # the thresholds the vault has, not the scaled ones
    with indexer.open_index(find_vault(root)) as index:  # without the phrase step, these thresholds inject nothing
        alone = R._decided(index, ASKED, None, (), None, settings, False, None, None, False)
    assert alone.abstained


def test_the_step_reads_each_record_once_a_prompt(vault_repo: VaultRepo) -> None:
    """The step asks for the first card's phrases, then for those of the card the looser gates inject (here the
    same card): its record is read once (the two asks share their reads and their budget)."""
    root = _vault(vault_repo)
    settings = _step_settings(root, ASKED)
    with indexer.open_index(find_vault(root)) as index:
        reads: list[str] = []
        _count_reads(index, reads)
        result = recall(index, ASKED, settings=settings)
    assert [c.picked for c in result.injected] == [PHRASE_PICKED]
    assert reads == [POOL]


def test_the_same_words_apart_are_no_phrase(vault_repo: VaultRepo) -> None:
    root = _vault(vault_repo)
    settings = _step_settings(root, SCATTERED)
    result = _recall(root, SCATTERED, settings)
    assert result.abstained and result.phrases == ()


@pytest.mark.parametrize(("holders", "rare"), [(0, True), (1, True), (2, False)])
def test_a_phrase_is_rare_while_at_most_two_cards_hold_it(vault_repo: VaultRepo, holders: int, rare: bool) -> None:
    assert _phrases_of_first(_vault(vault_repo, holders=holders)) == (["connection pool"] if rare else [])


def test_a_phrase_three_cards_hold_lets_nothing_through(vault_repo: VaultRepo) -> None:
    root = _vault(vault_repo, holders=2)
    settings = _step_settings(root, ASKED)
    assert _recall(root, ASKED, settings).abstained


@pytest.mark.parametrize(("scattered", "rare"), [(5, True), (R.PHRASE_READS + 2, False)])
def test_cards_holding_both_words_apart_are_read_up_to_the_budget(
    vault_repo: VaultRepo, scattered: int, rare: bool
) -> None:
    """Cards holding both words apart do not hold the phrase: read (within PHRASE_READS), the phrase stays rare;
    beyond the budget it is counted common, without reading a record."""
    reads: list[str] = []
    assert _phrases_of_first(_vault(vault_repo, scattered=scattered), reads=reads) == (
        ["connection pool"] if rare else []
    )
    # the pool card and each card holding both words apart, once; beyond the budget the postings alone say common
    # and no record is read, not even the pool card's
    assert len(reads) == (1 + scattered if rare else 0)
    assert len(set(reads)) == len(reads)


def test_explain_and_the_hook_say_the_phrase_step_injected(vault_repo: VaultRepo) -> None:
    root = _vault(vault_repo)
    settings = _step_settings(root, ASKED)
    vault_repo.write_raw(
        "cairn.toml", f"[recall]\nmin_lead = {settings.min_lead!r}\nmin_coverage = 0.0\nmin_margin = 0.0\n"
    )
    vault_repo.commit("thresholds")
    assert vault_repo.cairn("index").returncode == 0
    shown = vault_repo.cairn("explain", ASKED)
    assert shown.returncode == 0, shown.stderr
    assert f"Injected: {POOL}" in shown.stdout
    assert (
        f"lead and margin gates at {PHRASE_SCALE:g} of theirs" in shown.stdout and '"connection pool"' in shown.stdout
    )
    assert "rare phrase" in shown.stdout
    data = json.loads(vault_repo.cairn("explain", "--json", ASKED).stdout)
    assert data["phrases"] == ["connection pool"]
    assert [c["picked"] for c in data["candidates"] if c["decision"] == "injected"] == [PHRASE_PICKED]
    done = vault_repo.cairn(
        "hook", "--format", "claude-code", "--vault", str(root), input=json.dumps(claude_payload(ASKED, root))
    )
    assert done.returncode == 0, done.stderr
    assert POOL in done.stdout
    entry = log_entries()[-1]
    assert entry["injected"] == [POOL]
    assert [c.get("picked") for c in entry["candidates"] if c["decision"] == "injected"] == [PHRASE_PICKED]
    assert "connection pool" not in json.dumps(log_entries())  # the log never holds the prompt's words


def test_a_deferred_semantic_answer_is_read_once_however_often_recall_decides() -> None:
    calls: list[int] = []

    def read() -> dict[str, float]:
        calls.append(1)
        return {"a": 1.0}

    once = R._Once(read)
    assert once() == {"a": 1.0} and once() == {"a": 1.0}
    assert calls == [1]


def test_calibrate_replays_the_phrase_step() -> None:
    """A phrased case is injected at thresholds its gate values pass at PHRASE_SCALE; its boxes scale up."""
    gate = (0.30, 0.50, 0.40)
    plain = CasePoint("x", "", True, (gate,), (True,))
    phrased = dataclasses.replace(plain, phrased=True)
    t = Thresholds(0.32, 0.5, 0.4)  # lead 0.30 fails 0.32, passes 0.9 x 0.32 = 0.288
    assert plain.injected(t) == 0 and phrased.injected(t) == 1
    assert phrased.injected(Thresholds(0.34, 0.5, 0.4)) == 0  # 0.9 x 0.34 = 0.306 > 0.30
    assert phrased.boxes() == [(gate[0] / PHRASE_SCALE, gate[1], gate[2] / PHRASE_SCALE)]
    assert phrased.injected(Thresholds(0.32, 0.51, 0.4)) == 0  # coverage is not scaled: 0.50 fails 0.51


def test_the_phrase_step_never_relaxes_coverage(vault_repo: VaultRepo) -> None:
    """Phrases tell a card from its neighbours; whether the prompt is about what the vault knows stays coverage's."""
    root = _vault(vault_repo)
    vault = find_vault(root)
    indexer.build_index(vault)
    with indexer.open_index(vault) as index:
        open_ = dataclasses.replace(
            settings_of(index), min_lead=0.0, min_coverage=0.0, min_margin=0.0, min_evidence=0.0
        )
        first = recall(index, ASKED, settings=open_).injected[0]
        assert first.card.id == POOL and rare_phrases(index, ASKED, first) == ["connection pool"]
        strict = dataclasses.replace(open_, min_coverage=first.coverage / 0.95)  # passes at 0.9 x, were it scaled
        assert recall(index, ASKED, settings=strict).abstained


@pytest.mark.parametrize(("filler", "held"), [(R.PHRASE_CHARS - 200, True), (R.PHRASE_CHARS + 200, False)])
def test_a_card_is_read_for_phrases_to_phrase_chars_of_each_field(
    vault_repo: VaultRepo, filler: int, held: bool
) -> None:
    """The contract lets a card reach 1 MB: the hook works out phrases from the first PHRASE_CHARS of each field."""
    vault_repo.write_raw("cairn.toml", "# defaults\n")
    notes = "Notes from the incident review, kept for the record. "
    body = (notes * (filler // len(notes) + 1))[:filler] + "\n\nThe connection pool ran dry within minutes."
    vault_repo.write("db/pool-runs-dry", "Pool runs dry after a deploy", "Each connection outlived its request.", body)
    vault_repo.write("db/slow-migrations", "Long migrations lock tables", "Split a migration that rewrites a table.")
    vault_repo.write("git/force-with-lease", "Force-push with a lease", "Push with --force-with-lease after a rebase.")
    vault_repo.commit("cards")
    assert _phrases_of_first(vault_repo.root, "db/pool-runs-dry") == (["connection pool"] if held else [])


def test_records_read_for_one_prompt_stop_past_phrase_read_chars(vault_repo: VaultRepo) -> None:
    """Five cards hold both words apart, each in a long body: they are read until the records read pass
    PHRASE_READ_CHARS, and the phrase, whose count would need the fifth, is counted common."""
    root = _vault(vault_repo)
    long = R.PHRASE_READ_CHARS // 4 + 1_000
    filler = ("Notes from the incident review, kept for the record. " * (long // 50 + 1))[:long]
    for n in range(5):
        vault_repo.write(
            f"ops/long-{n}",
            f"Pool of workers number {n}",
            f"Keep the worker pool small; every worker opens one connection of its own ({n}).",
            filler,
        )
    vault_repo.commit("long cards")
    reads: list[str] = []
    assert _phrases_of_first(root, reads=reads) == []
    assert reads[0] == POOL and len(reads) == 5 and len(set(reads)) == 5


def test_the_cards_read_to_count_a_phrase_are_read_in_id_order_however_the_index_was_built(
    vault_repo: VaultRepo,
) -> None:
    """Bug fixed (sweep 105): the cards holding both words of a phrase were read in row order until their records
    held PHRASE_READ_CHARS, and a phrase that needed more was counted common. Rows follow the index's history, so
    which cards fitted in that budget, and whether the phrase was rare, depended on how each machine's index was
    built: here, updated commit by commit, the two long cards came first and the budget ran out; rebuilt, the
    short ones did and every holder was read. They are read in the index's id order now, the same either way."""
    root = _vault(vault_repo)
    filler = " ".join(f"filler{n % 50}" for n in range(13_000))  # about 112,000 characters: two pass the budget
    for name in ("z-long-1", "z-long-2"):
        vault_repo.write(f"ops/{name}", f"Worker pool notes {name}", "Every pool worker opens a connection.", filler)
    vault_repo.commit("long cards")
    assert vault_repo.invoke("index").returncode == 0
    for name in ("a-short-1", "a-short-2"):
        vault_repo.write(f"ops/{name}", f"Worker pool notes {name}", "Every pool worker opens one connection.")
    vault_repo.commit("short cards")
    updated = _phrases_of_first(root)  # an update: the short cards take rows after the long ones
    assert vault_repo.invoke("index", "--rebuild").returncode == 0
    assert _phrases_of_first(root) == updated == ["connection pool"]
