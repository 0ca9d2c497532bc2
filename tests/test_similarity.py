"""Near-duplicates: one definition (`cairn.cards.similarity`) that lint and review both report, with the same figure."""

from __future__ import annotations

import json
import re

import pytest

from cairn.cards.similarity import DEFAULT_THRESHOLD, describe, likeness, profile
from helpers.vaults import VaultRepo

LEASE = "After a rebase, push the shared branch with git push --force-with-lease so teammates' commits survive."


def test_a_summary_copied_with_one_word_changed_is_a_near_duplicate() -> None:
    a = profile("Push rebased branches with a lease", ("git",), LEASE)
    b = profile("Lease pushes keep teammates' work", ("git",), LEASE.replace("shared", "common"))
    found = likeness(a, b).duplicate()
    assert found is not None and found[0] == "summary" and found[1] >= DEFAULT_THRESHOLD


def test_chinese_summaries_are_compared_on_their_terms() -> None:
    """Recall's CJK 2-grams: a Chinese summary with one character changed is still a copy."""
    a = profile(
        "强制推送后拉取会丢失本地提交",
        (),
        "如果共享分支被强制推送过，执行拉取变基可能悄悄丢掉你的本地提交，请先查看引用日志。",
    )
    b = profile(
        "强制推送以后变基拉取丢提交",
        (),
        "如果共享分支被强制推送过，执行拉取变基可能悄悄丢掉你的本地提交，请先查看操作日志。",
    )
    alike = likeness(a, b)
    assert alike.summary >= DEFAULT_THRESHOLD
    assert alike.name_counts  # 14 and 13 CJK characters: sentence-like names


@pytest.mark.parametrize(
    ("name_a", "name_b"),
    [("cp", "scp"), ("cargo rustc", "cargo rustdoc"), ("docker container rm", "docker container stop")],
)
def test_short_names_alike_are_not_near_duplicates(name_a: str, name_b: str) -> None:
    """In a short name the word that tells two cards apart is most of the name: its character ratio says nothing."""
    alike = likeness(profile(name_a, (), "Copy files."), profile(name_b, (), "Stop containers."))
    assert alike.name >= 0.8
    assert not alike.name_counts and alike.duplicate() is None


def test_a_respelled_sentence_name_counts_within_a_scope_only() -> None:
    a = profile("Create Postgres indexes concurrently", ("databases",), "Use CREATE INDEX CONCURRENTLY.")
    b = profile("Create Postgres indices concurrently", ("databases",), "Build indexes without a write lock.")
    found = likeness(a, b).duplicate()
    assert found is not None and found[0] == "name" and round(found[1], 3) == 0.944
    elsewhere = profile("Create Postgres indices concurrently", ("mysql",), "Build indexes without a write lock.")
    assert likeness(a, elsewhere).duplicate() is None  # two scopes: two lessons


def test_short_texts_and_the_threshold() -> None:
    tiny = likeness(
        profile("A card name here", (), "Use a lease."), profile("Other card name here", (), "Use a lease.")
    )
    assert tiny.summary == 0.0  # too few terms to call an overlap
    a = profile("One", (), LEASE)
    b = profile("Two", (), LEASE.replace("teammates' commits survive", "nothing is lost"))
    alike = likeness(a, b)
    assert 0.5 < alike.summary < DEFAULT_THRESHOLD
    assert alike.duplicate() is None and alike.duplicate(0.5) == ("summary", alike.summary)


def test_lint_and_review_report_the_same_pair_with_the_same_figure(vault_repo: VaultRepo) -> None:
    vault_repo.write("git/lease", "Push rebased branches with a lease", LEASE, scope=["git"])
    vault_repo.write("python/utc", "Aware datetimes in UTC", "Use datetime.now(timezone.utc), never utcnow().")
    vault_repo.commit("base")
    vault_repo.git("checkout", "-q", "-b", "copy")
    copy = LEASE.replace("shared", "common")
    vault_repo.write("git/lease-again", "Lease pushes keep teammates' work", copy, scope=["git"])
    vault_repo.commit("a copy")

    linted = vault_repo.invoke("lint", "cards/git/lease-again.md", "--rules", "near-duplicate")
    lint_figure = re.search(r"their summaries share (\d+)% of their words", linted.stdout)
    assert lint_figure, linted.stdout

    review = json.loads(vault_repo.invoke("review", "main..copy", "--format", "json").stdout)
    [similar] = review["similar"]
    assert similar["kind"] == "near-duplicate" and {similar["card"], similar["other"]} == {
        "git/lease",
        "git/lease-again",
    }
    assert similar["why"].startswith(describe("summary", similar["summary_similarity"]))
    assert f"{similar['summary_similarity']:.0%}" == f"{lint_figure.group(1)}%"
    markdown = vault_repo.invoke("review", "main..copy").stdout
    assert f"their summaries share {lint_figure.group(1)}% of their words" in markdown


def test_the_vaults_threshold_holds_for_review_too(vault_repo: VaultRepo) -> None:
    vault_repo.write("git/lease", "Push rebased branches with a lease", LEASE, scope=["git"])
    vault_repo.write_raw("cairn.toml", "[lint]\nduplicate_threshold = 0.99\n")
    vault_repo.commit("base")
    vault_repo.git("checkout", "-q", "-b", "copy")
    vault_repo.write("git/lease-again", "Lease pushes keep teammates' work", LEASE.replace("shared", "common"))
    vault_repo.commit("a copy")
    assert "near-duplicate" not in vault_repo.invoke("lint", "--rules", "near-duplicate").stdout
    review = json.loads(vault_repo.invoke("review", "main..copy", "--format", "json").stdout)
    assert review["similar"] == []
