"""The semantic channel's rules on a vault dense enough for them (issue 16, round 6): a card the prompt's words
barely touch is not injected on meaning alone, however clear the semantic first choice; one the words support
goes in. The vault is real (a git repo, indexed), the z-scores are shaped like the warm encoder's (cosines of
every card to the prompt, as z-scores over the vault's cards, the 50 closest kept)."""

from __future__ import annotations

import statistics
from collections.abc import Callable

import pytest

from cairn.cli.recall_cmds import explain_rows, render_explain
from cairn.hot import gates
from cairn.hot import recall as R
from cairn.hot.recall import recall
from cairn.hot.semantic import Similarities
from cairn.hot.vault import find_vault
from cairn.index import build as indexer
from helpers.vaults import VaultRepo

MIDNIGHT = "python/midnight-time-falsy"
TOPICS = (
    "pip wheel cache", "docker layer order", "git rebase onto", "ssh agent forwarding", "postgres vacuum bloat",
    "kubernetes liveness probe", "nginx proxy buffering", "redis key eviction", "cron job environment",
    "terraform state lock", "webpack chunk names", "celery task retries", "numpy integer overflow",
    "pandas chained assignment", "unicode normalization forms", "json float precision", "regex catastrophic backtracking",
    "tls certificate chain", "dns negative caching", "http keepalive pool", "sqlite write lock", "bash word splitting",
    "makefile phony targets", "yaml norway problem", "csv excel encoding", "mypy strict optional", "pytest fixture scope",
    "ruff import sorting", "virtualenv activation path", "locale decimal comma", "gzip concatenated members",
)  # fmt: skip


IDS = [MIDNIGHT, *("misc/" + "-".join(topic.split()) for topic in TOPICS)]


def _vault(repo: VaultRepo) -> VaultRepo:
    repo.write(
        MIDNIGHT,
        "A datetime.time at midnight is falsy",
        "Before Python 3.5 bool(datetime.time(0, 0)) is False, so a check such as `if t:` skips a midnight value. "
        "Compare with None instead: `if t is not None:`.",
        aliases=["midnight is false", "time object falsy"],
    )
    for topic in TOPICS:
        words = topic.split()
        repo.write(
            "misc/" + "-".join(words),
            f"The {topic} gotcha",
            f"What to know about {topic}: the {words[0]} {words[-1]} behaviour surprises people the first time.",
        )
    repo.commit("cards")
    return repo


def _z(close: dict[str, float], ids: list[str]) -> dict[str, float]:
    """Cosines (`close`, the rest spread between 0.78 and 0.84) as z-scores over the vault's cards, 50 closest."""
    cos = {card: close.get(card, 0.78 + 0.06 * (k % 7) / 6) for k, card in enumerate(ids)}
    mean, sd = statistics.fmean(cos.values()), statistics.pstdev(cos.values())
    z = {card: (c - mean) / sd for card, c in cos.items()}
    return dict(sorted(z.items(), key=lambda kv: -kv[1])[:50])


def test_a_near_topic_the_words_barely_touch_is_not_injected_on_meaning_alone(vault_repo: VaultRepo) -> None:
    repo = _vault(vault_repo)
    z = _z({MIDNIGHT: 0.93, IDS[1]: 0.85}, IDS)
    ranked = sorted(z.values(), reverse=True)
    assert z[MIDNIGHT] == ranked[0] >= 3.0 and ranked[0] - ranked[1] >= 2.0
    for near in (
        "what is the difference between datetime.now() and datetime.utcnow() when I store timestamps in the logs",
        "my datetime check skips some rows in the nightly export, the ones stamped 00:00, and the weekly report too",
    ):
        with indexer.open_index(find_vault(repo.root)) as index:
            plain = recall(index, near)
            meant = recall(index, near, semantic=z)
            assert index.n_cards >= R.SEMANTIC_MIN_CARDS
        first = plain.candidates[0]
        # Round 4 injected these: the first admissible card, refused by the word gates, the semantic first choice
        # with z >= 3 and 2.0 ahead of the second (the rescue), and (z1 - z2) + 1.5 x its lead >= 2.3 (the pick).
        assert first.card.id == MIDNIGHT and first.reason is not None and plain.abstained
        assert first.coverage < R.SEMANTIC_PICK_MIN_COVERAGE  # "datetime" (and "check", "skip") of many words
        assert meant.abstained, near


def test_a_clear_semantic_first_choice_the_words_support_is_picked(vault_repo: VaultRepo) -> None:
    repo = _vault(vault_repo)
    asked = "my datetime check skips the 00:00 rows in the nightly export"
    with indexer.open_index(find_vault(repo.root)) as index:
        plain = recall(index, asked)
        meant = recall(index, asked, semantic=_z({MIDNIGHT: 0.93, IDS[1]: 0.85}, IDS))
        unclear = recall(index, asked, semantic=_z({MIDNIGHT: 0.93, IDS[-1]: 0.92}, IDS))
    first = plain.candidates[0]
    assert plain.abstained and first.card.id == MIDNIGHT
    assert first.coverage >= R.SEMANTIC_PICK_MIN_COVERAGE
    assert [c.card.id for c in meant.injected] == [MIDNIGHT]
    assert unclear.abstained  # another card means the prompt about as much: no pick


def test_a_clear_semantic_first_choice_on_everyday_words_only_is_not_picked(vault_repo: VaultRepo) -> None:
    """The evidence floor holds for the picks too: a prompt saying only words every card of the vault says covers
    the semantic first choice whole, and it leads the second by far in meaning, yet nothing goes in."""
    repo = _vault(vault_repo)
    asked = "the gotcha whose behaviour surprises people"
    with indexer.open_index(find_vault(repo.root)) as index:
        plain = recall(index, asked)
        first = plain.candidates[0]
        meant = recall(index, asked, semantic=_z({first.card.id: 0.99}, IDS))
        settings, weights = plain.settings, R.prompt_weights(index, asked)
    assert plain.abstained and first.coverage >= R.SEMANTIC_PICK_MIN_COVERAGE
    assert R.evidence_of(first.matched, weights, settings) < settings.min_evidence
    assert meant.abstained


def test_an_answer_read_when_the_gates_need_it_decides_as_one_given_and_no_answer_as_the_words(
    vault_repo: VaultRepo,
) -> None:
    """The hook asks the warm encoder before it ranks by words and gives recall a function that reads the answer
    (`cairn.hot.semantic.ask`): recall reads it once, when its gates need it, and decides exactly as with the
    similarities given; when the answer is none, exactly as the words alone, though recall had ranked as deep as
    the semantic pick needs (the second prompt: 100 cards share its words and the session already got the 60 best,
    so that depth examines more of them)."""
    repo = _vault(vault_repo)
    for n in range(70):
        repo.write(
            f"misc/extra-{n}", f"Extra gotcha {n}", "What to know: the behaviour surprises people the first time."
        )
    repo.commit("more cards")
    sims = _z({MIDNIGHT: 0.93, IDS[1]: 0.85}, IDS)
    reads: list[dict[str, float] | None] = []
    nothing: dict[str, float] = {}

    def later(answer: dict[str, float] | None) -> Callable[[], dict[str, float] | None]:
        def read() -> dict[str, float] | None:
            reads.append(answer)
            return answer

        return read

    with indexer.open_index(find_vault(repo.root)) as index:
        broad = "what to know about this gotcha: the behaviour surprises people the first time"
        got = [c.card.id for c in recall(index, broad).candidates[:60]]
        for asked, already in (("my datetime check skips the 00:00 rows in the nightly export", []), (broad, got)):
            for first in (20, None):
                plain = recall(index, asked, already_injected=already, decide_first=first)
                given = recall(index, asked, already_injected=already, decide_first=first, semantic=sims)
                reads.clear()
                deferred = recall(index, asked, already_injected=already, decide_first=first, semantic=later(sims))
                assert deferred == given and reads == [sims]
                for none in (None, nothing):
                    unanswered = recall(
                        index, asked, already_injected=already, decide_first=first, semantic=later(none)
                    )
                    assert unanswered == plain
                assert reads == [sims, None, {}]


def _scaled(close: dict[str, float], ids: list[str]) -> Similarities:
    """`_z`'s z-scores with their unit in cosine, as the warm encoder gives them (`Similarities.scale`)."""
    cos = {card: close.get(card, 0.78 + 0.06 * (k % 7) / 6) for k, card in enumerate(ids)}
    out = Similarities(_z(close, ids))
    out.scale = statistics.pstdev(cos.values())
    return out


CRON = "misc/cron-job-environment"


def test_the_first_card_of_both_channels_whose_words_nearly_pass_goes_in(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agreement pick (`recall._agreement_pick`): the words rank a card first with a lead a little under
    `min_lead` (0.22 against 0.24) and half the prompt's best possible score; when the semantic channel puts the same
    card first, ahead of the second by `AGREE_COSINE_GAP` in cosine or more, it goes in. Not when the semantic first is
    another card, nor when the two lead by less, nor when the z-scores come without their unit in cosine (an older
    warm encoder): then the words decide, and they abstain."""
    monkeypatch.setattr(R, "PHRASE_SCALE", 1.0)  # the rule under test alone: no phrase step (RESULTS.md "Round 13")
    monkeypatch.setattr(gates, "SAID_GAP", 1.01)  # nor the own words relief ("Round 20"), which would pass the words
    repo = _vault(vault_repo)
    asked = "midnight time falsy with the cron job environment"
    with indexer.open_index(find_vault(repo.root)) as index:
        plain = recall(index, asked)
        best = R.prompt_weights(index, asked).best
        agree = _scaled({CRON: 0.865}, IDS)
        decided = {
            "agree": recall(index, asked, semantic=agree),
            "another first": recall(index, asked, semantic=_scaled({MIDNIGHT: 0.865}, IDS)),
            "too close": recall(index, asked, semantic=_scaled({CRON: 0.8405}, IDS)),
            "no scale": recall(index, asked, semantic=dict(agree)),
        }
    first = plain.candidates[0]
    assert plain.abstained and first.card.id == CRON and first.reason == "small_lead"
    assert R.AGREE_LEAD <= first.lead < plain.settings.min_lead and first.score >= R.AGREE_SCORE * best
    assert agree.scale is not None
    z = sorted(agree.values(), reverse=True)
    assert (z[0] - z[1]) + first.lead < R.SEMANTIC_PICK  # the semantic pick would not take it
    assert (z[0] - z[1]) * agree.scale >= R.AGREE_COSINE_GAP
    assert [c.card.id for c in decided["agree"].injected] == [CRON]
    assert decided["agree"].injected[0].picked == R.AGREEMENT_PICKED
    rows = {row["id"]: row for row in explain_rows(decided["agree"])}
    assert rows[CRON]["picked"] == "agreement" and rows[CRON]["reason"] is None
    assert "both channels" in render_explain(decided["agree"], list(rows.values()))  # explain says why it went in
    for name in ("another first", "too close", "no scale"):
        assert decided[name].abstained, name


def test_a_first_card_whose_words_pass_all_but_the_lead_goes_in_when_the_meaning_confirms_it(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agreement pick's second form: the words pass coverage and margin and fall short only on the lead (0.23
    against 0.24) with under `AGREE_SCORE` of the best possible score; in a prompt the veto judges, the card goes in
    when both channels put it first, its cosine `AGREE_CONFIRMED_GAP` ahead, and its z-score reaches the veto's
    `SEMANTIC_MIN_Z`. Not at a lower z-score, not closer, and not in a prompt the veto does not judge (a question in
    an agent's wrapper)."""
    monkeypatch.setattr(R, "PHRASE_SCALE", 1.0)  # the rule under test alone: no phrase step (RESULTS.md "Round 13")
    monkeypatch.setattr(gates, "SAID_GAP", 1.01)  # nor the own words relief ("Round 20"), which would pass the words
    repo = _vault(vault_repo)
    asked = "why does cron job environment python bool fail?"
    wrapped = f"We run the billing workers on Debian hosts. {asked} Keep the answer short, no code changes."
    with indexer.open_index(find_vault(repo.root)) as index:
        plain = recall(index, asked)
        best = R.prompt_weights(index, asked).best
        sure = _scaled({CRON: 0.93, MIDNIGHT: 0.90}, IDS)  # a second not far behind: no semantic pick
        under = _scaled({CRON: 0.87, MIDNIGHT: 0.835}, IDS)  # as clearly first, at a z-score under 3
        decided = {
            "sure": recall(index, asked, semantic=sure),
            "under the veto's z": recall(index, asked, semantic=under),
            "too close": recall(index, asked, semantic=_scaled({CRON: 0.93, MIDNIGHT: 0.915}, IDS)),
            "in a wrapper": recall(index, wrapped, semantic=sure),
        }
    first = plain.candidates[0]
    assert plain.abstained and first.card.id == CRON and first.reason == "small_lead"
    assert R.AGREE_LEAD <= first.lead < plain.settings.min_lead and first.score < R.AGREE_SCORE * best
    assert first.coverage >= plain.settings.min_coverage and first.margin >= plain.settings.min_margin
    lower = decided["under the veto's z"].candidates[0].similarity
    assert lower is not None and sure[CRON] >= R.SEMANTIC_MIN_Z > lower
    assert [c.card.id for c in decided["sure"].injected] == [CRON]
    assert decided["sure"].injected[0].picked == R.AGREEMENT_PICKED
    assert under.scale is not None and (under[CRON] - under[MIDNIGHT]) * under.scale >= R.AGREE_CONFIRMED_GAP
    assert decided["under the veto's z"].abstained  # the z-score alone keeps it out
    assert sure.scale is not None and (sure[CRON] - sure[MIDNIGHT]) * sure.scale >= R.AGREE_CONFIRMED_GAP
    assert decided["too close"].abstained  # its cosine leads the second's by less than AGREE_CONFIRMED_GAP
    assert not R.veto_judges(wrapped) and decided["in a wrapper"].abstained


def test_a_first_card_of_both_channels_whose_cosine_stands_clear_goes_in_whatever_its_lead(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agreement pick's third form: the words rank a card first, covering a quarter of the prompt or more, with a
    lead under `AGREE_LEAD` (0.18), so neither earlier form takes it; when the semantic channel puts the same card
    first and its cosine leads the semantic second's by `AGREE_CLEAR_GAP` or more, it goes in. Not when the cosines
    are closer than that, nor when the semantic first is another card."""
    monkeypatch.setattr(R, "PHRASE_SCALE", 1.0)  # the rule under test alone: no phrase step (RESULTS.md "Round 13")
    monkeypatch.setattr(gates, "SAID_GAP", 1.01)  # nor the own words relief ("Round 20"), which would pass the words
    repo = _vault(vault_repo)
    asked = "the cron environment of a job sees a falsy midnight time"
    clear = _scaled({CRON: 0.885, MIDNIGHT: 0.84}, IDS)
    with indexer.open_index(find_vault(repo.root)) as index:
        plain = recall(index, asked)
        decided = {
            "clear": recall(index, asked, semantic=clear),
            "closer": recall(index, asked, semantic=_scaled({CRON: 0.87, MIDNIGHT: 0.84}, IDS)),
            "another first": recall(index, asked, semantic=_scaled({MIDNIGHT: 0.885, CRON: 0.84}, IDS)),
        }
    first = plain.candidates[0]
    assert plain.abstained and first.card.id == CRON and first.reason == "small_lead"
    assert first.lead < R.AGREE_LEAD and first.coverage >= R.SEMANTIC_PICK_MIN_COVERAGE
    z = sorted(clear.values(), reverse=True)
    assert clear.scale is not None and (z[0] - z[1]) * clear.scale >= R.AGREE_CLEAR_GAP
    assert (z[0] - z[1]) + first.lead < R.SEMANTIC_PICK  # the semantic pick would not take it
    assert [c.card.id for c in decided["clear"].injected] == [CRON]
    assert decided["clear"].injected[0].picked == R.AGREEMENT_PICKED
    for name in ("closer", "another first"):
        assert decided[name].abstained, name
    at_least = R.SEMANTIC_PICK_MIN_COVERAGE  # the words' share of the prompt it needs, that share included
    for coverage, taken in ((at_least, True), (at_least - 0.01, False)):
        assert R._agreement_pick(first.card, first.score, first.lead, first.score, clear, coverage=coverage) is taken


def test_with_one_vault_the_answer_is_read_only_when_it_could_change_the_decision(vault_repo: VaultRepo) -> None:
    """`recall(only_if_decisive=True)`, as the hook serving one vault calls it: a prompt the answer cannot change
    (it fits no card; or the words inject a card and the prompt says more than one thing, so the veto does not
    judge it) is decided by the words without reading the answer, the same cards a read answer gives; a prompt it
    could change (the words pass a card the veto judges; nothing passes and a pick could fire) reads it."""
    repo = _vault(vault_repo)
    sims = _z({MIDNIGHT: 0.93, IDS[1]: 0.85}, IDS)
    far = _z({IDS[1]: 0.93, MIDNIGHT: 0.80}, IDS)  # the midnight card far from the prompt: a veto
    reads: list[str] = []

    def later(answer: dict[str, float]) -> Callable[[], dict[str, float] | None]:
        def read() -> dict[str, float] | None:
            reads.append("read")
            return answer

        return read

    cases = {  # prompt: (answer, read, injected with the answer given)
        "how do I center a div with flexbox in css": (sims, False, []),  # fits no card
        "A datetime.time at midnight is falsy: why does `if t:` skip midnight?": (far, True, []),  # vetoed
        "my datetime check skips the 00:00 rows in the nightly export": (sims, True, [MIDNIGHT]),  # the pick
        (
            "Our nightly export runs on a Python 3.4 cron box and writes Parquet for the analysts. "
            "A datetime.time at midnight is falsy: why does `if t:` skip midnight?"
        ): (far, False, [MIDNIGHT]),  # the words inject; a prompt of two things in prose: no veto
    }
    with indexer.open_index(find_vault(repo.root)) as index:
        for asked, (answer, decisive, expected) in cases.items():
            given = recall(index, asked, semantic=answer)
            assert [c.card.id for c in given.injected] == expected, asked
            if answer is far and decisive:  # the words pass the card, the veto refuses it
                assert [c.card.id for c in recall(index, asked).injected] == [MIDNIGHT]
                assert given.candidates[0].reason == R.SEMANTIC_VETO
            reads.clear()
            lazy = recall(index, asked, semantic=later(answer), only_if_decisive=True)
            assert [c.card.id for c in lazy.injected] == [c.card.id for c in given.injected], asked
            assert reads == (["read"] if decisive else []), asked
            if not decisive:
                assert all(c.similarity is None for c in lazy.candidates)
