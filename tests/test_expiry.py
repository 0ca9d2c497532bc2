"""A served card's expiry: a `verified_at` later than the commit that wrote the card does not push it out.

Lint refuses such a date (`verified-at-future`); these cards are committed with `--no-verify`, as a hurried author or
a hostile one could, and the index must not believe the date either."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.vaults import VaultRepo, make_vault

PROMPT = "Which versions of our Python dependencies should the lock file pin for reproducible builds?"
CARD = "python/pin-dependencies"


def _commit_card(repo: VaultRepo, monkeypatch: pytest.MonkeyPatch, verified_at: str, review_after: str) -> None:
    repo.write(
        CARD,
        "Pin Python dependencies in a lock file for reproducible builds",
        "Unpinned Python dependencies change under you between builds; pin exact versions in a lock file.",
        scope=["python"],
        verified_at=verified_at,
        review_after=review_after,
    )
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2026-01-05T10:00:00+01:00")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-01-05T10:00:00+01:00")
    repo.commit("Pin dependencies")
    monkeypatch.delenv("GIT_AUTHOR_DATE")
    monkeypatch.delenv("GIT_COMMITTER_DATE")


def _expires_on(repo: VaultRepo) -> object:
    shown = repo.cairn("show", CARD, "--json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)["expires_on"]


def _reason(repo: VaultRepo) -> str:
    done = repo.cairn("explain", PROMPT, "--json")
    assert done.returncode == 0, done.stderr
    reasons = {c["id"]: str(c.get("reason")) for c in json.loads(done.stdout)["candidates"]}
    return reasons.get(CARD, "not a candidate")


def test_a_future_verified_at_counts_its_review_from_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = VaultRepo(tmp_path / "vault")
    make_vault(repo)
    _commit_card(repo, monkeypatch, verified_at="2099-01-01", review_after="180d")
    assert repo.cairn("index").returncode == 0
    # 180 days from the commit's day (2026-01-05), not from 2099: long expired on the test's day.
    assert _expires_on(repo) == "2026-07-04"
    assert _reason(repo) == "expired"

    # An update after another commit and a build from scratch agree, and audit re-derives the same date.
    repo.write("docker/other", "Docker image tags drift", "Pin base images by digest, not by a moving tag.")
    repo.commit("Another card")
    assert repo.cairn("index").returncode == 0
    assert _expires_on(repo) == "2026-07-04"
    audited = repo.cairn("audit")
    assert audited.returncode == 0, audited.stdout + audited.stderr
    assert repo.cairn("index", "--rebuild").returncode == 0
    assert _expires_on(repo) == "2026-07-04"
    assert repo.cairn("audit").returncode == 0


@pytest.mark.parametrize(
    ("verified_at", "review_after", "expires_on"),
    [
        ("2026-01-04", "180d", "2026-07-03"),  # an honest date: counted from it, as written
        ("2026-01-06", "180d", "2026-07-05"),  # a day ahead of the commit's: today somewhere, believed
        ("2099-01-01", "2099-06-01", "2099-06-01"),  # a fixed review date: verified_at does not move it
    ],
)
def test_a_believable_verified_at_or_a_fixed_review_date_is_kept(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    verified_at: str,
    review_after: str,
    expires_on: str,
) -> None:
    repo = VaultRepo(tmp_path / "vault")
    make_vault(repo)
    _commit_card(repo, monkeypatch, verified_at=verified_at, review_after=review_after)
    assert repo.cairn("index").returncode == 0
    assert _expires_on(repo) == expires_on


def test_list_counts_a_future_verified_at_from_the_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A card with a verified_at of 2099 and no review_after, committed in 2026: `cairn list` gave it a review date
    of 2100 and `list --due` never named it, though the index does not believe the date."""
    repo = VaultRepo(tmp_path / "vault")
    make_vault(repo)
    repo.write_raw("cairn.toml", "[lint]\nmax_age_days = 30\n")
    repo.write(CARD, "Pin Python dependencies", "Pin exact versions in a lock file.", verified_at="2099-01-01")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2026-01-05T10:00:00+01:00")
    repo.commit("Pin dependencies")
    done = repo.cairn("list", "--json")
    assert done.returncode == 0, done.stderr
    card = {c["id"]: c for c in json.loads(done.stdout)["cards"]}[CARD]
    assert (card["verified_at"], card["due_on"], card["due"]) == ("2099-01-01", "2026-02-04", True)
    assert CARD in repo.cairn("list", "--due").stdout


def test_a_rename_does_not_move_the_day_a_future_verified_at_counts_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `git mv` changes no word of a card: its expiry, counted from the commit that wrote its text, stays. Counted
    from the rename's day, an expired card was served again for another `review_after`."""
    repo = VaultRepo(tmp_path / "vault")
    make_vault(repo)
    _commit_card(repo, monkeypatch, verified_at="2099-01-01", review_after="180d")
    assert repo.cairn("index").returncode == 0
    assert _expires_on(repo) == "2026-07-04"
    repo.git("mv", f"cards/{CARD}.md", "cards/python/pin-dependency-versions.md")
    repo.commit("Rename the card")  # today: counted from here, the card would be served until next year
    moved = "python/pin-dependency-versions"
    for build in (("index",), ("index", "--rebuild")):  # an update and a build from scratch agree
        assert repo.cairn(*build).returncode == 0
        shown = repo.cairn("show", moved, "--json")
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["expires_on"] == "2026-07-04"
        done = repo.cairn("explain", PROMPT, "--json")
        reasons = {c["id"]: str(c.get("reason")) for c in json.loads(done.stdout)["candidates"]}
        assert reasons.get(moved) == "expired"
        assert repo.cairn("audit").returncode == 0
