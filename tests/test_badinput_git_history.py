"""Git-side commands on real histories: merges that change cards themselves, cards moved to names no index reads.

Each test builds a real repository, runs the installed `cairn` as a user would, and checks that what it reports is
true of the history (who wrote a card, what a pull request does to the served lessons)."""

from __future__ import annotations

import json
import subprocess
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from helpers.vaults import ANN, BOB, VaultRepo, make_vault

CAROL = ("Carol Çelik", "carol@example.com")
DAVE = ("Dave Merger", "dave@example.com")


def _provenance(vault_repo: VaultRepo, card_id: str) -> dict[str, Any]:
    shown = vault_repo.cairn("show", card_id, "--json")
    assert shown.returncode == 0, shown.stderr
    prov = json.loads(shown.stdout)["provenance"]
    assert prov is not None, f"{card_id} has no provenance"
    return prov  # type: ignore[no-any-return]


def _conflicting_merge(vault_repo: VaultRepo) -> dict[str, str]:
    """Ann creates a card; Bob (main) and Carol (feature/x) change its summary; Dave merges, resolves the conflict
    with a summary of his own and adds a card in the merge commit itself."""
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("git/rebase", "Rebase before pushing", "Rebase your branch on main before you push it.")
    commits = {"create": vault_repo.commit("A card", author=ANN)}
    vault_repo.git("branch", "feature/x")
    vault_repo.write("git/rebase", "Rebase before pushing", "Rebase on main, then run the tests, before you push.")
    commits["main"] = vault_repo.commit("Main's summary", author=BOB)
    vault_repo.git("checkout", "-q", "feature/x")
    vault_repo.write("git/rebase", "Rebase before pushing", "Rebase on origin/main first; never push a stale branch.")
    commits["feature"] = vault_repo.commit("Feature's summary", author=CAROL)
    vault_repo.git("checkout", "-q", "main")
    vault_repo.git("merge", "-q", "--no-ff", "feature/x", "-m", "Merge feature/x", author=DAVE, check=False)
    vault_repo.write("git/rebase", "Rebase before pushing", "Fetch, rebase on origin/main and test before a push.")
    vault_repo.write("git/merge-only", "Card born in a merge", "This card was added by the merge commit itself.")
    commits["merge"] = vault_repo.commit("Merge feature/x", author=DAVE)
    parents = vault_repo.git("rev-list", "--parents", "-n", "1", "HEAD").split()
    assert len(parents) == 3, "the last commit must be a merge"
    return commits


@pytest.mark.parametrize("incremental", [False, True])
def test_a_merge_that_rewrites_a_card_is_its_last_change(vault_repo: VaultRepo, incremental: bool) -> None:
    if incremental:  # an index from before the branches, brought up to the merge
        vault_repo.write("ci/cache", "Key caches on the lockfile", "Key CI caches on the lockfile hash.")
        vault_repo.commit("An older card", author=ANN)
        assert vault_repo.cairn("index").returncode == 0
    commits = _conflicting_merge(vault_repo)
    prov = _provenance(vault_repo, "git/rebase")
    assert prov["created"]["commit"] == commits["create"]
    # The summary agents get now was written in the merge commit, by Dave: not by either side.
    assert prov["last_changed"]["commit"] == commits["merge"]
    assert prov["summary_changed"]["commit"] == commits["merge"]
    assert prov["summary_changed"]["author"] == DAVE[0]
    assert {a["name"] for a in prov["authors"]} == {ANN[0], BOB[0], CAROL[0], DAVE[0]}


def test_a_card_added_in_a_merge_commit_has_its_author(vault_repo: VaultRepo) -> None:
    commits = _conflicting_merge(vault_repo)
    prov = _provenance(vault_repo, "git/merge-only")
    assert prov["created"]["commit"] == commits["merge"]
    assert prov["created"]["author"] == DAVE[0]
    assert [a["name"] for a in prov["authors"]] == [DAVE[0]]
    audit = vault_repo.cairn("audit", "--json")
    checks = {c["name"]: c["status"] for c in json.loads(audit.stdout)["checks"]}
    assert checks["provenance"] == "pass", audit.stdout


def test_a_clean_merge_keeps_the_sides_authors(vault_repo: VaultRepo) -> None:
    """A merge whose result is one side's file changes nothing itself: the side's commit stays the last change."""
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("git/a", "Card a", "The first card of this vault, about rebasing.")
    vault_repo.commit("A", author=ANN)
    vault_repo.git("checkout", "-q", "-b", "feature/x")
    vault_repo.write("git/a", "Card a", "The first card of this vault, about rebasing onto main.")
    side = vault_repo.commit("Edit on the side", author=CAROL)
    vault_repo.git("checkout", "-q", "main")
    vault_repo.write("git/b", "Card b", "Another card, about stashing before a pull.")
    vault_repo.commit("B", author=BOB)
    vault_repo.git("merge", "-q", "--no-ff", "feature/x", "-m", "Merge", author=DAVE)
    prov = _provenance(vault_repo, "git/a")
    assert prov["last_changed"]["commit"] == side
    assert DAVE[0] not in {a["name"] for a in prov["authors"]}


def test_a_merge_of_a_renamed_card_follows_both_sides(vault_repo: VaultRepo) -> None:
    """feature renames the card while main edits it; the merge joins them under the new name."""
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("git/old", "Stash before pull", "Stash your changes before a pull that may conflict with them.")
    create = vault_repo.commit("Card", author=ANN)
    vault_repo.git("checkout", "-q", "-b", "feature/x")
    (vault_repo.root / "cards" / "vcs").mkdir()
    vault_repo.git("mv", "cards/git/old.md", "cards/vcs/new.md")
    vault_repo.commit("Move", author=CAROL)
    vault_repo.git("checkout", "-q", "main")
    vault_repo.write("git/old", "Stash before pull", "Stash your changes before any pull that may conflict with them.")
    edit = vault_repo.commit("Edit", author=BOB)
    vault_repo.git("merge", "-q", "--no-ff", "feature/x", "-m", "Merge", author=DAVE)
    prov = _provenance(vault_repo, "vcs/new")
    assert prov["created"]["commit"] == create
    assert prov["summary_changed"]["commit"] == edit
    assert {a["name"] for a in prov["authors"]} >= {ANN[0], BOB[0], CAROL[0]}
    assert "cards/git/old.md" in prov["renamed_from"]


@pytest.mark.parametrize("edit_first", [True, False])
def test_a_merge_of_a_summary_edit_and_a_rename_credits_the_edit(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch, edit_first: bool
) -> None:
    """A branch edits the card's summary and main renames the card; the merge joins them. When the edit was the
    older commit, history in date order put the rename between the merge and the edit, so the summary's change was
    credited to the merge, whose author only merged. Each side is now followed back along its own parents."""
    days = iter(["01", "02", "03", "04"] if edit_first else ["01", "03", "02", "04"])

    def dated() -> None:
        day = next(days)
        monkeypatch.setenv("GIT_AUTHOR_DATE", f"2026-{day}-01T12:00:00Z")
        monkeypatch.setenv("GIT_COMMITTER_DATE", f"2026-{day}-01T12:00:00Z")

    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("git/old", "Stash before pull", "Stash your changes before a pull that may conflict with them.")
    vault_repo.write("ci/cache", "Cache keys need the lockfile", "Key CI caches on the lockfile hash.")
    dated()
    create = vault_repo.commit("Cards", author=ANN)
    vault_repo.git("checkout", "-q", "-b", "feature/x")
    vault_repo.write("git/old", "Stash before pull", "Stash your changes before any pull that may conflict with them.")
    dated()
    edit = vault_repo.commit("Sharper summary", author=BOB)
    vault_repo.git("checkout", "-q", "main")
    (vault_repo.root / "cards" / "vcs").mkdir()
    vault_repo.git("mv", "cards/git/old.md", "cards/vcs/new.md")
    vault_repo.write("ci/cache", "Cache keys need the lockfile", "Key CI caches on the lockfile's hash.")
    dated()
    vault_repo.commit("Move, and another card", author=CAROL)
    dated()
    vault_repo.git("merge", "-q", "--no-ff", "feature/x", "-m", "Merge", author=DAVE)
    merge = vault_repo.git("rev-parse", "HEAD")
    prov = _provenance(vault_repo, "vcs/new")
    assert prov["created"]["commit"] == create
    assert prov["last_changed"]["commit"] == merge
    assert (prov["summary_changed"]["commit"], prov["summary_changed"]["author"]) == (edit, BOB[0])
    assert sorted(a["name"] for a in prov["authors"]) == sorted([ANN[0], BOB[0], CAROL[0], DAVE[0]])


@pytest.mark.parametrize("new_name", ["cards/git/rebase.txt", "cards/git/rebase.MD", "notes/rebase.md"])
def test_review_blocks_a_card_moved_to_a_name_that_is_no_card(vault_repo: VaultRepo, new_name: str) -> None:
    """The index skips `x.txt` and `x.MD`: moving a card there silences it as deleting it would."""
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("git/rebase", "Rebase before pushing", "Rebase your branch on main before you push it.")
    vault_repo.write("git/stash", "Stash before pulling", "Stash local changes before a pull that may conflict.")
    vault_repo.commit("Cards", author=ANN)
    vault_repo.git("checkout", "-q", "-b", "feature/hide")
    Path(vault_repo.root / new_name).parent.mkdir(parents=True, exist_ok=True)
    vault_repo.git("mv", "cards/git/rebase.md", new_name)
    vault_repo.commit("Move a card", author=BOB)
    done = vault_repo.cairn("review", "main..feature/hide", "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 3, done.stdout + done.stderr
    assert report["verdict"] == "blocked"
    assert [(b["kind"], b["reason"]) for b in report["blocked"]] == [("cards", "removes the card git/rebase")]
    vault_repo.git("checkout", "-q", "main")
    vault_repo.git("merge", "-q", "--ff-only", "feature/hide")
    listed = vault_repo.cairn("list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert "git/stash" in listed.stdout and "git/rebase" not in listed.stdout  # merged, the lesson is gone


def test_review_passes_a_plain_rename(vault_repo: VaultRepo) -> None:
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("git/rebase", "Rebase before pushing", "Rebase your branch on main before you push it.")
    vault_repo.commit("Card", author=ANN)
    vault_repo.git("checkout", "-q", "-b", "feature/x")
    vault_repo.git("mv", "cards/git/rebase.md", "cards/git/rebase-first.md")
    vault_repo.commit("Rename", author=BOB)
    done = vault_repo.cairn("review", "main..feature/x", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["blocked"] == []


@pytest.mark.parametrize("first", ["added", "moved"])
def test_review_credits_every_author_of_a_card_moved_in_the_range(vault_repo: VaultRepo, first: str) -> None:
    """A card added (or moved) by Ann, edited by Bob, then moved again by Carol: the range's diff names its first
    and last paths only, and Bob's edit under the path between was left out of the authors in the range."""
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("ci/cache", "Key caches on the lockfile", "Key CI caches on the hash of the lockfile.")
    if first == "moved":
        vault_repo.write("git/rebase", "Rebase before pushing", "Rebase your branch on main before you push it.")
    vault_repo.commit("Cards", author=DAVE)
    vault_repo.git("checkout", "-q", "-b", "feature/x")
    if first == "moved":
        (vault_repo.root / "cards/vcs").mkdir()
        vault_repo.git("mv", "cards/git/rebase.md", "cards/vcs/rebase.md")
    else:
        vault_repo.write("vcs/rebase", "Rebase before pushing", "Rebase your branch on main before you push it.")
    vault_repo.commit("Card under vcs/", author=ANN)
    vault_repo.write("vcs/rebase", "Rebase before pushing", "Rebase on main and run the tests before you push.")
    vault_repo.commit("Edit", author=BOB)
    vault_repo.git("mv", "cards/vcs/rebase.md", "cards/vcs/rebase-first.md")
    vault_repo.commit("Rename", author=CAROL)
    done = vault_repo.cairn("review", "main..feature/x", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    [card] = json.loads(done.stdout)["cards"]
    assert card["id"] == "vcs/rebase-first"
    assert card["authors"] == [ANN[0], BOB[0], CAROL[0]]
    assert [c["author"] for c in card["commits"]] == [CAROL[0], BOB[0], ANN[0]]


def test_review_credits_who_removed_a_card_moved_before_in_the_range(vault_repo: VaultRepo) -> None:
    """Bob moves a card, Carol deletes it under its new path: the range's diff names only its old path, and the
    removal was credited to Bob alone."""
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("ci/cache", "Key caches on the lockfile", "Key CI caches on the hash of the lockfile.")
    vault_repo.write("git/rebase", "Rebase before pushing", "Rebase your branch on main before you push it.")
    vault_repo.commit("Cards", author=DAVE)
    vault_repo.git("checkout", "-q", "-b", "feature/x")
    (vault_repo.root / "cards/vcs").mkdir()
    vault_repo.git("mv", "cards/git/rebase.md", "cards/vcs/rebase.md")
    vault_repo.commit("Move", author=BOB)
    vault_repo.git("rm", "-q", "cards/vcs/rebase.md")
    vault_repo.commit("Delete", author=CAROL)
    done = vault_repo.cairn("review", "main..feature/x", "--json")
    assert done.returncode == 3, done.stdout + done.stderr  # the removal is blocked
    [card] = json.loads(done.stdout)["cards"]
    assert (card["status"], card["id"]) == ("removed", "git/rebase")
    assert card["authors"] == [BOB[0], CAROL[0]]
    assert card["provenance"]["created"]["author"] == DAVE[0]


def test_review_gives_provenance_of_changed_and_removed_cards_only(vault_repo: VaultRepo) -> None:
    """Review reads the history of the cards the range touches (a removed card's from the base), not every card's."""
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("git/rebase", "Rebase before pushing", "Rebase your branch on main before you push it.")
    vault_repo.write("git/stash", "Stash before pulling", "Stash local changes before a pull that may conflict.")
    vault_repo.write("ci/cache", "Key caches on the lockfile", "Key CI caches on the hash of the lockfile.")
    created = vault_repo.commit("Cards", author=ANN)
    vault_repo.git("checkout", "-q", "-b", "feature/x")
    vault_repo.git("rm", "-q", "cards/git/stash.md")
    vault_repo.write("git/rebase", "Rebase before pushing", "Rebase on main and run the tests before you push.")
    edited = vault_repo.commit("Edit one, remove one", author=BOB)
    done = vault_repo.cairn("review", "main..feature/x", "--json")
    assert done.returncode == 3, done.stdout + done.stderr  # the removal is blocked
    cards = {c["id"]: c for c in json.loads(done.stdout)["cards"]}
    assert set(cards) == {"git/rebase", "git/stash"}
    assert cards["git/rebase"]["provenance"]["created"]["commit"] == created
    assert cards["git/rebase"]["provenance"]["last_changed"]["commit"] == edited
    assert cards["git/stash"]["status"] == "removed"
    assert cards["git/stash"]["provenance"]["created"]["author"] == ANN[0]


def test_a_control_byte_in_an_author_or_a_file_name_does_not_break_the_history_walk(vault_repo: VaultRepo) -> None:
    """git keeps \\x01 in an author's name and in a file name; the log reader split records on that byte, so one
    such commit (any contributor's) made every `cairn index` fail with a ValueError, and the vault served nothing
    new. Each field is now read where it stands."""
    odd = ("Evil\x01Name", "e\x01vil@example.com")
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("git/rebase", "Rebase before pushing", "Rebase your branch on main before you push it.")
    created = vault_repo.commit("A card", author=odd)
    vault_repo.write("odd\x01name", "A card with a control byte in its file name", "Its history is read too.")
    vault_repo.write("git/rebase", "Rebase before pushing", "Rebase on main, then run the tests, before you push.")
    changed = vault_repo.commit("Two changes", author=BOB)
    indexed = vault_repo.cairn("index", "--json")
    assert indexed.returncode == 0, indexed.stderr
    prov = _provenance(vault_repo, "git/rebase")
    shown = ("EvilName", "evil@example.com")  # what reaches a reader: provenance loses invisible characters
    assert (prov["created"]["commit"], prov["created"]["author"], prov["created"]["email"]) == (created, *shown)
    assert prov["last_changed"]["commit"] == changed
    assert prov["summary_changed"]["commit"] == changed
    assert [(a["name"], a["commits"]) for a in prov["authors"]] == [(shown[0], 1), (BOB[0], 1)]
    assert json.loads(indexed.stdout)["cards"] + len(json.loads(indexed.stdout)["problems"]) == 2


def test_a_commit_whose_author_line_holds_no_date_gets_no_date(vault_repo: VaultRepo) -> None:
    """A commit written by hand (`git hash-object --literally`, or another tool) whose author line has no date git
    can read: `git log` leaves the `%aI` placeholder as it is, and `cairn show` gave "%aI" as the date, in --json
    too. The date is now empty, shown as "(no date)"."""
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("git/rebase", "Rebase before pushing", "Rebase your branch on main before you push it.")
    parent = vault_repo.commit("A card", author=ANN)
    vault_repo.write("git/rebase", "Rebase before pushing", "Rebase on main, then run the tests, before you push.")
    vault_repo.git("add", "-A")
    tree = vault_repo.git("write-tree")
    raw = f"tree {tree}\nparent {parent}\nauthor Mallory <m@example.com> not-a-date\n"
    raw += f"committer {ANN[0]} <{ANN[1]}> 1700000000 +0000\n\nno date\n"
    made = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--literally", "--stdin"],
        cwd=vault_repo.root,
        input=raw,
        capture_output=True,
        text=True,
        check=True,
    )
    vault_repo.git("update-ref", "refs/heads/main", made.stdout.strip())
    assert vault_repo.cairn("index").returncode == 0
    prov = _provenance(vault_repo, "git/rebase")
    assert (prov["last_changed"]["author"], prov["last_changed"]["date"]) == ("Mallory", "")
    assert prov["created"]["date"].startswith(("19", "20"))
    shown = vault_repo.cairn("show", "git/rebase").stdout
    assert "(no date) Mallory <m@example.com>" in shown and "%aI" not in shown


def test_a_card_kept_beside_its_renamed_copy_keeps_its_history(vault_repo: VaultRepo) -> None:
    """A card renamed on main while a branch edits it, merged keeping both files: both cards come from the one
    file, but the walk followed that file's history for the renamed card only, so the kept card had no provenance
    at all (`cairn show` gave none, `cairn audit` failed on a vault nobody had tampered with)."""
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("git/stash", "Stash leaves untracked files", "git stash keeps untracked files out.")
    vault_repo.write("ci/cache", "Cache keys need the lockfile", "Key CI caches on the lockfile hash.")
    created = vault_repo.commit("Two cards", author=ANN)
    vault_repo.git("switch", "-q", "-c", "side")
    vault_repo.write("git/stash", "Stash leaves untracked files", "Use git stash -u to take untracked files along.")
    edited = vault_repo.commit("Sharper summary", author=CAROL)
    vault_repo.git("switch", "-q", "main")
    vault_repo.git("mv", "cards/git/stash.md", "cards/git/stash-untracked.md")
    vault_repo.write("ci/cache", "Cache keys need the lockfile", "Key CI caches on the lockfile's hash.")
    vault_repo.commit("Rename, and another card", author=BOB)
    vault_repo.git("merge", "-q", "--no-commit", "side", check=False)
    vault_repo.git("checkout", "side", "--", "cards/git/stash.md")  # the branch's card is kept beside the copy
    vault_repo.commit("Merge side, keeping both", author=DAVE)
    assert sorted(p.name for p in (vault_repo.root / "cards" / "git").iterdir()) == ["stash-untracked.md", "stash.md"]

    assert vault_repo.cairn("index", "--rebuild").returncode == 0
    kept = _provenance(vault_repo, "git/stash")
    assert (kept["created"]["commit"], kept["summary_changed"]["commit"]) == (created, edited)
    assert [a["name"] for a in kept["authors"]] == [ANN[0], CAROL[0]]
    audit = vault_repo.cairn("audit", "--json")
    assert audit.returncode == 0, audit.stdout


def test_show_finds_a_card_whose_file_name_is_in_another_unicode_form(vault_repo: VaultRepo) -> None:
    """Bug fixed: a card committed as `cafe` + U+0301 (the form macOS writes a name in) could not be shown by the id
    a keyboard types (U+00E9): "no card 'café'; did you mean café?", the two looking alike."""
    make_vault(vault_repo)
    decomposed = unicodedata.normalize("NFD", "misc/café")
    vault_repo.write(decomposed, "A card named in NFD", "Koalas sleep up to twenty hours a day in eucalyptus trees.")
    vault_repo.commit("An NFD file name")
    for typed in ("misc/café", decomposed):
        shown = vault_repo.cairn("show", typed)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.startswith("A card named in NFD\n")
