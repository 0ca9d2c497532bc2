"""Provenance from git history: creator, last change, authors, the summary's last change, renames, signatures;
computed in one pass for a full build and joined incrementally, with the same result either way."""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cairn.hot.vault import find_vault
from cairn.index.build import build_index, open_index
from helpers.signing import signed_commit, ssh_signing
from helpers.vaults import ANN, BOB, VaultRepo, run_unshallow_commands


def _prov(vault_repo: VaultRepo, card_id: str) -> dict[str, Any]:
    with open_index(find_vault(vault_repo.root)) as index:
        record = index.record(card_id)
    assert record is not None, card_id
    return record["provenance"]  # type: ignore[no-any-return]


def _all_provenance(vault_repo: VaultRepo) -> dict[str, Any]:
    with open_index(find_vault(vault_repo.root)) as index:
        return {card_id: index.record(card_id)["provenance"] for card_id in index.ids()}  # type: ignore[index]


def _history(vault_repo: VaultRepo) -> dict[str, str]:
    """Ann creates a card, Bob edits its body, Ann changes its summary, Bob renames it; plus an untouched card."""
    commits = {}
    vault_repo.write("git/force-push", "Force push drops commits", "Compare with the reflog before pulling.")
    vault_repo.write("ci/cache-key", "Cache keys need the lockfile", "Key CI caches on the lockfile hash.")
    commits["create"] = vault_repo.commit("Two cards", author=ANN)
    vault_repo.write(
        "git/force-push", "Force push drops commits", "Compare with the reflog before pulling.", body="More detail."
    )
    commits["body"] = vault_repo.commit("Explain more", author=BOB)
    vault_repo.write(
        "git/force-push", "Force push drops commits", "Check git reflog first, then pull --rebase.", body="More."
    )
    commits["summary"] = vault_repo.commit("Sharper summary", author=ANN)
    (vault_repo.root / "cards" / "vcs").mkdir()
    vault_repo.git("mv", "cards/git/force-push.md", "cards/vcs/force-push.md")
    commits["rename"] = vault_repo.commit("Move to vcs", author=BOB)
    return commits


def test_show_json_has_creator_last_change_authors_summary_change_and_renames(vault_repo: VaultRepo) -> None:
    commits = _history(vault_repo)
    shown = vault_repo.invoke("show", "vcs/force-push", "--json")
    assert shown.returncode == 0, shown.stderr
    prov = json.loads(shown.stdout)["provenance"]
    assert prov["created"]["commit"] == commits["create"]
    assert (prov["created"]["author"], prov["created"]["email"]) == ANN
    assert prov["last_changed"]["commit"] == commits["rename"]
    assert prov["last_changed"]["author"] == BOB[0]
    assert prov["summary_changed"]["commit"] == commits["summary"]
    assert prov["summary_changed"]["author"] == ANN[0]
    assert [(a["name"], a["commits"]) for a in prov["authors"]] == [(ANN[0], 2), (BOB[0], 2)]
    assert prov["commits"] == 4
    assert prov["renamed_from"] == ["cards/git/force-push.md"]
    assert prov["last_changed"]["signed"] is False and prov["last_changed"]["signature"] == "N"
    assert prov["created"]["date"].startswith("20")

    untouched = _prov(vault_repo, "ci/cache-key")
    assert untouched["created"]["commit"] == untouched["last_changed"]["commit"] == commits["create"]
    assert untouched["summary_changed"]["commit"] == commits["create"]

    text = vault_repo.invoke("show", "vcs/force-push")
    assert text.returncode == 0, text.stderr
    assert "provenance:" in text.stdout
    assert f"created:         {commits['create'][:8]}" in text.stdout
    assert f"last changed:    {commits['rename'][:8]}" in text.stdout and BOB[0] in text.stdout
    assert f"summary changed: {commits['summary'][:8]}" in text.stdout
    assert "renamed from:    cards/git/force-push.md" in text.stdout


def test_rewrapping_the_summary_is_not_a_summary_change(vault_repo: VaultRepo) -> None:
    vault_repo.write("shell/pipefail", "Pipelines hide failures", "Set -o pipefail so a failing stage fails the job.")
    first = vault_repo.commit("Card", author=ANN)
    vault_repo.write_raw(
        "cards/shell/pipefail.md",
        "---\nname: Pipelines hide failures\nsummary: >-\n  Set -o pipefail so a failing\n"
        "  stage fails the job.\n---\n\nBody.\n",
    )
    rewrap = vault_repo.commit("Rewrap", author=BOB)
    prov = _prov(vault_repo, "shell/pipefail")
    assert prov["last_changed"]["commit"] == rewrap
    assert prov["summary_changed"]["commit"] == first


def test_incremental_provenance_equals_a_full_rebuild(vault_repo: VaultRepo) -> None:
    vault_repo.write("a/one", "One", "The first summary.")
    vault_repo.write("a/two", "Two", "The second summary.")
    vault_repo.write("a/three", "Three", "The third summary.")
    vault_repo.commit("Start", author=ANN)
    vault = find_vault(vault_repo.root)
    assert build_index(vault).mode == "full"

    # In one range: a rename followed by an edit, a body-only edit, a delete and re-add under the same path,
    # a summary change, and an edit that is reverted (the diff nets out to nothing for that card).
    (vault_repo.root / "cards" / "b").mkdir()
    vault_repo.git("mv", "cards/a/one.md", "cards/b/one.md")
    vault_repo.commit("Move one", author=BOB)
    vault_repo.write("b/one", "One", "The first summary.", body="Now with a body.")
    vault_repo.write("a/two", "Two", "The second summary, sharper.")
    vault_repo.commit("Edits", author=BOB)
    vault_repo.git("rm", "-q", "cards/a/three.md")
    vault_repo.commit("Drop three", author=ANN)
    vault_repo.write("a/three", "Three again", "A new card at an old path.")
    original = (vault_repo.root / "cards" / "a" / "two.md").read_text()
    vault_repo.write("a/two", "Two", "Temporarily different.")
    vault_repo.commit("Re-add three, touch two", author=BOB)
    vault_repo.write_raw("cards/a/two.md", original)
    vault_repo.commit("Revert two", author=ANN)

    report = build_index(vault)
    assert report.mode == "incremental"
    incremental = _all_provenance(vault_repo)
    assert build_index(vault, rebuild=True).mode == "full"
    full = _all_provenance(vault_repo)
    assert incremental == full
    assert full["b/one"]["renamed_from"] == ["cards/a/one.md"]
    assert full["a/three"]["authors"] == [{"name": BOB[0], "email": BOB[1], "commits": 1}]
    # The revert is two's last change even though its file ends as it was two commits before.
    assert full["a/two"]["last_changed"]["author"] == ANN[0]
    assert full["a/two"]["commits"] == 4


def test_rewritten_history_rebuilds_provenance(vault_repo: VaultRepo) -> None:
    vault_repo.write("a/one", "One", "The first summary.")
    vault_repo.commit("Start", author=ANN)
    vault = find_vault(vault_repo.root)
    build_index(vault)
    vault_repo.git("commit", "-q", "--amend", "--no-edit", "--reset-author", author=BOB)
    amended = vault_repo.git("rev-parse", "HEAD")
    report = build_index(vault)
    assert report.mode == "full"
    assert _prov(vault_repo, "a/one")["created"]["commit"] == amended


def test_signed_commits_are_verified(vault_repo: VaultRepo, tmp_path: Path) -> None:
    vault_repo.write("a/one", "One", "The first summary.")
    unsigned = vault_repo.commit("Unsigned start", author=ANN)
    ssh_signing(vault_repo, tmp_path)
    vault_repo.write("a/one", "One", "A signed summary.")
    signed = signed_commit(vault_repo, "Signed change")
    prov = _prov(vault_repo, "a/one")
    assert prov["created"]["commit"] == unsigned and prov["created"]["signed"] is False
    assert prov["last_changed"]["commit"] == signed
    assert prov["last_changed"]["signature"] == "G" and prov["last_changed"]["signed"] is True
    assert prov["last_changed"]["signing_key"].startswith("SHA256:")
    text = vault_repo.invoke("show", "a/one")
    assert f"last changed:    {signed[:8]}" in text.stdout and "(signed)" in text.stdout


def test_show_says_what_git_says_of_a_signature_now(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: the index kept each commit's signature verdict of its build, so after the key left the allowed
    signers `cairn show` still said "(signed)" (JSON "G") where `cairn audit --require-signed` failed; and the other
    way round, a vault indexed before the allowed-signers file was set showed good signatures as unsigned."""
    vault_repo.write("a/one", "One", "The first summary.")
    vault_repo.commit("Unsigned start", author=ANN)
    ssh_signing(vault_repo, tmp_path)
    allowed = Path(vault_repo.git("config", "gpg.ssh.allowedSignersFile"))
    trusted = allowed.read_text()
    allowed.write_text("")  # nobody is trusted yet when the index is built
    vault_repo.write("a/one", "One", "A signed summary.")
    signed = signed_commit(vault_repo, "Signed change")
    assert _prov(vault_repo, "a/one")["last_changed"]["signed"] is False  # stored at the build
    allowed.write_text(trusted)
    shown = json.loads(vault_repo.cairn("show", "a/one", "--json").stdout)["provenance"]["last_changed"]
    assert (shown["commit"], shown["signature"], shown["signed"]) == (signed, "G", True)
    allowed.write_text("")  # the key is no longer trusted
    assert vault_repo.cairn("index").returncode == 0
    shown = json.loads(vault_repo.cairn("show", "a/one", "--json").stdout)["provenance"]["last_changed"]
    assert shown["signature"] != "G" and shown["signed"] is False
    assert "(signed)" not in vault_repo.cairn("show", "a/one").stdout


def test_show_and_audit_say_in_words_why_a_signature_is_not_good(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: a commit signed by a key the allowed signers file does not hold was shown as "(signature U)" and
    audited as "signature status U, not good": git's letter, which does not say the key is the one not trusted."""
    ssh_signing(vault_repo, tmp_path)
    allowed = Path(vault_repo.git("config", "gpg.ssh.allowedSignersFile"))
    allowed.write_text("")  # signed with a key nobody trusts
    vault_repo.write("a/one", "One", "A signed summary.")
    signed = signed_commit(vault_repo, "Signed by an unknown key")
    assert vault_repo.cairn("index").returncode == 0
    words = "signature U: signed by a key that neither the allowed signers file nor the keyring trusts"
    assert f"last changed:    {signed[:8]}" in (shown := vault_repo.cairn("show", "a/one").stdout)
    assert f"({words})" in shown
    audited = vault_repo.cairn("audit", "--require-signed")
    assert audited.returncode == 1
    assert f"a/one: last commit {signed[:8]} has no good signature ({words})" in audited.stdout


def test_signatures_are_checked_by_the_users_programs_not_the_repositorys(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed: git checked each card's signature with the `gpg.program` or `gpg.ssh.program` the repository's own
    `.git/config` names, so `cairn index` or `cairn show` in a project downloaded with its `.git` ran a command of the
    project's choosing. The repository's programs are now passed over for the user's (here from the environment,
    `GIT_CONFIG_*`), else git's own, and the signature is still checked."""
    vault_repo.write("a/one", "One", "The first summary.")
    vault_repo.commit("Unsigned start", author=ANN)
    ssh_signing(vault_repo, tmp_path)
    vault_repo.write("a/one", "One", "A signed summary.")
    signed = signed_commit(vault_repo, "Signed change")
    ran = tmp_path / "ran"
    ran.mkdir()
    for key in ("gpg.program", "gpg.ssh.program", "gpg.x509.program"):
        vault_repo.git("config", key, f"/bin/sh -c 'touch {ran}/{key}; exit 1' --")
    for env in (
        {},
        {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "gpg.ssh.program", "GIT_CONFIG_VALUE_0": "ssh-keygen"},
    ):
        assert vault_repo.cairn("index", env=env).returncode == 0
        shown = vault_repo.cairn("show", "a/one", "--json", env=env)
        last = json.loads(shown.stdout)["provenance"]["last_changed"]
        assert (last["commit"], last["signature"]) == (signed, "G"), shown.stderr
    assert list(ran.iterdir()) == []
    user = tmp_path / "user-ssh-keygen"
    user.write_text(f'#!/bin/sh\ntouch {ran}/user\nexec ssh-keygen "$@"\n')
    user.chmod(0o755)
    env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "gpg.ssh.program", "GIT_CONFIG_VALUE_0": str(user)}
    shown = vault_repo.cairn("show", "a/one", "--json", env=env)
    assert json.loads(shown.stdout)["provenance"]["last_changed"]["signature"] == "G", shown.stderr
    assert [p.name for p in ran.iterdir()] == ["user"]


def test_the_users_log_settings_change_no_provenance(vault_repo: VaultRepo) -> None:
    """`log.showRoot = false` hid the root commit's files (the vault's first cards got a later creator and lost an
    author), `i18n.logOutputEncoding` re-encoded authors' names; Cairn's history reader now ignores both."""
    zoe = ("Zoë Ærøskøbing", "zoe@example.com")
    vault_repo.write("a/one", "One", "The first summary.")
    root = vault_repo.commit("Start", author=zoe)
    vault_repo.write("a/one", "One", "The first summary, sharper.")
    vault_repo.commit("Sharper", author=BOB)
    vault_repo.git("config", "log.showRoot", "false")
    vault_repo.git("config", "i18n.logOutputEncoding", "ISO-8859-1")
    shown = vault_repo.cairn("show", "a/one", "--json")
    assert shown.returncode == 0, shown.stderr
    prov = json.loads(shown.stdout)["provenance"]
    assert prov["created"]["commit"] == root
    assert [(a["name"], a["commits"]) for a in prov["authors"]] == [(zoe[0], 1), (BOB[0], 1)]
    assert prov["commits"] == 2


def test_a_card_fixed_after_it_was_indexed_keeps_its_creator(vault_repo: VaultRepo) -> None:
    """A card the indexed commit did not hold as a card (its frontmatter broken, or named `x.MD`) had no stored
    provenance, so the incremental update made whoever fixed it its creator and sole author until `--rebuild`."""
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("a/keep", "Keep", "A card that stays as it is.")
    vault_repo.write_raw("cards/a/broken.md", "---\nname: Broken\nsummary: [unclosed\n---\n\nBody.\n")
    vault_repo.write("a/shout", "Shout", "A card soon renamed to a name that is no card.")
    created = vault_repo.commit("Three cards, one broken", author=ANN)
    vault_repo.git("mv", "cards/a/shout.md", "cards/a/shout.MD")
    vault_repo.commit("Upper case", author=ANN)
    assert vault_repo.cairn("index").returncode == 0
    vault_repo.write("a/broken", "Broken no more", "The frontmatter now parses.")
    vault_repo.git("mv", "cards/a/shout.MD", "cards/a/shout.md")
    vault_repo.commit("Fix both", author=BOB)
    done = vault_repo.cairn("index")
    assert done.returncode == 0 and "Updated the index" in done.stdout, done.stdout + done.stderr

    def provenance(card_id: str) -> dict[str, Any]:
        shown = vault_repo.cairn("show", card_id, "--json")
        assert shown.returncode == 0, shown.stderr
        return json.loads(shown.stdout)["provenance"]  # type: ignore[no-any-return]

    incremental = {card_id: provenance(card_id) for card_id in ("a/broken", "a/shout")}
    assert incremental["a/broken"]["created"]["commit"] == created
    assert incremental["a/shout"]["created"]["commit"] == created
    assert [a["name"] for a in incremental["a/broken"]["authors"]] == [ANN[0], BOB[0]]
    assert incremental["a/shout"]["renamed_from"] == ["cards/a/shout.MD"]
    assert vault_repo.cairn("index", "--rebuild").returncode == 0
    assert {card_id: provenance(card_id) for card_id in incremental} == incremental


def test_authors_without_an_email_are_told_apart(vault_repo: VaultRepo) -> None:
    """git records `<>` for an author with no e-mail; authors were told apart by e-mail alone, so every such author
    was counted as the first of them (`Xavier <> (2 commits)` for Xavier's and Yolanda's commits)."""
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("a/one", "One", "The first summary.")
    vault_repo.commit("Start", author=("Xavier", ""))
    assert vault_repo.cairn("index").returncode == 0
    vault_repo.write("a/one", "One", "The first summary, sharper.")
    vault_repo.commit("Sharper", author=("Yolanda", ""))
    vault_repo.write("a/one", "One", "The first summary, sharper still.")
    vault_repo.commit("Sharper still", author=("Xavier", ""))
    expected = [("Xavier", "", 2), ("Yolanda", "", 1)]
    for args in (("index",), ("index", "--rebuild")):  # joined to the stored authors, then from scratch
        assert vault_repo.cairn(*args).returncode == 0
        shown = vault_repo.cairn("show", "a/one", "--json")
        authors = json.loads(shown.stdout)["provenance"]["authors"]
        assert [(a["name"], a["email"], a["commits"]) for a in authors] == expected
    assert "authors:         Xavier <> (2 commits), Yolanda <> (1 commit)" in vault_repo.cairn("show", "a/one").stdout


def test_deepening_a_shallow_clone_reads_the_whole_history_again(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """In a shallow clone a card's history stops at the boundary; after `git fetch --unshallow` the served commit is
    the same, so `cairn index` said "up to date" and kept the boundary as the card's creator, now without the
    shallow note; an update after it joined that cut history for good."""
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("a/one", "One", "The first summary.")
    created = vault_repo.commit("Start", author=ANN)
    vault_repo.write("a/one", "One", "The first summary, sharper.")
    vault_repo.commit("Sharper", author=BOB)
    clone = VaultRepo(tmp_path / "clone")
    clone.git("fetch", "-q", "--depth", "1", vault_repo.root.as_uri(), "main:refs/remotes/origin/main")
    clone.git("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    clone.git("remote", "add", "origin", vault_repo.root.as_uri())
    assert clone.cairn("index").returncode == 0
    assert json.loads(clone.cairn("show", "a/one", "--json").stdout)["provenance"]["shallow"] is True
    clone.git("fetch", "-q", "--unshallow", "origin", "main:refs/remotes/origin/main")
    done = clone.cairn("index")
    assert done.returncode == 0 and "up to date" not in done.stdout, done.stdout
    prov = json.loads(clone.cairn("show", "a/one", "--json").stdout)["provenance"]
    assert prov["created"]["commit"] == created and "shallow" not in prov
    assert [a["name"] for a in prov["authors"]] == [ANN[0], BOB[0]]


def test_show_of_a_shallow_clone_from_another_folder_names_commands_that_run_there(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed: `cairn show ID --vault CLONE` of a shallow clone, run from another folder, noted "`git fetch
    --unshallow` ..., then `cairn index --rebuild`": there git fetched nothing and `cairn index` found no vault. Both
    now name the clone; run as printed from that folder, the note is gone."""
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("a/one", "One", "The first summary.")
    vault_repo.commit("Start", author=ANN)
    vault_repo.write("a/one", "One", "The first summary, sharper.")
    vault_repo.commit("Sharper", author=BOB)
    clone = tmp_path / "shallow clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", vault_repo.root.as_uri(), str(clone)], check=True)
    elsewhere = tmp_path / "project"
    elsewhere.mkdir()
    shown = vault_repo.invoke("show", "a/one", "--vault", str(clone), cwd=elsewhere)
    assert shown.returncode == 0, shown.stderr
    [note] = [line for line in shown.stdout.splitlines() if "this clone is shallow" in line]
    run_unshallow_commands(note, clone, elsewhere)
    shown = vault_repo.invoke("show", "a/one", "--vault", str(clone), cwd=elsewhere)
    assert shown.returncode == 0 and "this clone is shallow" not in shown.stdout, shown.stdout


def _commit_at(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch, day: str, message: str, author: tuple[str, str]
) -> str:
    """Commit everything as `author`, authored and committed at noon UTC on 2026-`day` (MM-DD); the commit's id."""
    monkeypatch.setenv("GIT_AUTHOR_DATE", f"2026-{day}T12:00:00Z")
    monkeypatch.setenv("GIT_COMMITTER_DATE", f"2026-{day}T12:00:00Z")
    vault_repo.git("add", "-A", author=author)
    vault_repo.git("commit", "-q", "--no-verify", "-m", message, author=author)
    return vault_repo.git("rev-parse", "HEAD")


def test_a_commit_dated_before_its_parent_keeps_the_parents_edit(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git log's default order is by commit date: a rename dated before its parent (a skewed clock, a rebase that
    kept dates) on one side of a merge came after that parent, so the walk passed the parent's edit under the card's
    old name and lost it: the summary's rewrite was credited to the rename and its author was missing."""

    commit_at = functools.partial(_commit_at, vault_repo, monkeypatch)

    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("git/stash", "Stash leaves untracked files", "git stash keeps untracked files out.")
    vault_repo.write("ci/cache", "Cache keys need the lockfile", "Key CI caches on the lockfile hash.")
    create = commit_at("01-01", "two cards", ANN)
    assert vault_repo.cairn("index").returncode == 0
    vault_repo.write("git/stash", "Stash leaves untracked files", "Use git stash -u to take untracked files along.")
    rewrite = commit_at("03-01", "sharper summary", BOB)
    vault_repo.git("switch", "-q", "-c", "side")
    vault_repo.git("mv", "cards/git/stash.md", "cards/git/stash-untracked.md")
    rename = commit_at("02-01", "rename, dated before its parent", ANN)
    vault_repo.git("switch", "-q", "main")
    vault_repo.write("ci/cache", "Cache keys need the lockfile", "Key CI caches on the lockfile's hash.")
    commit_at("04-01", "other card", BOB)
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-05-01T12:00:00Z")
    vault_repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")

    for rebuild in ((), ("--rebuild",)):  # incremental from the first commit, then whole
        assert vault_repo.cairn("index", *rebuild).returncode == 0
        shown = vault_repo.cairn("show", "git/stash-untracked", "--json")
        assert shown.returncode == 0, shown.stderr
        prov = json.loads(shown.stdout)["provenance"]
        assert prov["created"]["commit"] == create
        assert prov["summary_changed"]["commit"] == rewrite
        assert prov["last_changed"]["commit"] == rename
        assert [(a["name"], a["commits"]) for a in prov["authors"]] == [(ANN[0], 2), (BOB[0], 1)]


def test_a_card_added_on_both_sides_of_a_merge_credits_both(vault_repo: VaultRepo) -> None:
    """The same card added on two branches (an add/add conflict) and merged with one side's summary: the walk
    stopped at the first side's add it met, so the other side's author was left out and the summary that side wrote
    was credited to whoever resolved the merge."""
    carol = ("Carol", "carol@example.com")
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("ci/cache", "Cache keys need the lockfile", "Key CI caches on the lockfile hash.")
    vault_repo.commit("first card", author=ANN)
    assert vault_repo.cairn("index").returncode == 0
    vault_repo.git("switch", "-q", "-c", "side")
    bobs = "git pull --rebase can drop local commits after a force push; compare with the reflog."
    vault_repo.write("git/rebase", "Rebase drops commits", bobs, body="Bob's notes.")
    added_by_bob = vault_repo.commit("Bob's card", author=BOB)
    vault_repo.git("switch", "-q", "main")
    vault_repo.write("git/rebase", "Rebase drops commits", "Check the reflog before any pull.", body="Ann's notes.")
    vault_repo.commit("Ann's card", author=ANN)
    vault_repo.git("merge", "-q", "side", "-m", "merge side", check=False)  # a conflict, resolved below
    vault_repo.write("git/rebase", "Rebase drops commits", bobs, body="Both notes.")
    resolved = vault_repo.commit("resolve", author=carol)

    for rebuild in ((), ("--rebuild",)):  # incremental from the first commit, then whole
        assert vault_repo.cairn("index", *rebuild).returncode == 0
        shown = vault_repo.cairn("show", "git/rebase", "--json")
        assert shown.returncode == 0, shown.stderr
        prov = json.loads(shown.stdout)["provenance"]
        assert prov["summary_changed"]["commit"] == added_by_bob
        assert prov["last_changed"]["commit"] == resolved
        assert sorted(a["name"] for a in prov["authors"]) == sorted([ANN[0], BOB[0], carol[0]])


def test_a_merge_that_keeps_one_sides_card_credits_that_side(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A card edited on both sides, merged keeping the branch's file whole (a conflict resolved with --theirs) while
    the main line's edit of another card is kept: the main line's edit of this card, dated later, is not in it, yet
    a full index named it the last change (the newest version by date) and an incremental one the branch's edit.
    The last change is now the newest version that holds the file as it is."""

    commit_at = functools.partial(_commit_at, vault_repo, monkeypatch)

    vault_repo.write_raw("cairn.toml", "")
    summary = "git stash keeps untracked files out; use git stash -u."
    vault_repo.write("git/stash", "Stash leaves untracked files", summary, body="First notes.")
    vault_repo.write("ci/cache", "Cache keys need the lockfile", "Key CI caches on the lockfile hash.")
    commit_at("01-01", "two cards", ANN)
    vault_repo.git("switch", "-q", "-c", "side")
    vault_repo.write("git/stash", "Stash leaves untracked files", summary, body="Bob's notes.")
    kept = commit_at("02-01", "Bob's notes", BOB)
    vault_repo.git("switch", "-q", "main")
    vault_repo.write("git/stash", "Stash leaves untracked files", summary, body="Ann's notes.")
    vault_repo.write("ci/cache", "Cache keys need the lockfile", "Key CI caches on the lockfile's hash.")
    commit_at("03-01", "Ann's notes, and another card", ANN)
    assert vault_repo.cairn("index").returncode == 0
    vault_repo.git("merge", "-q", "side", "-m", "merge side", check=False)  # a conflict: Bob's file is kept
    vault_repo.git("checkout", "--theirs", "--", "cards/git/stash.md")
    commit_at("04-01", "merge side", ANN)

    for rebuild in ((), ("--rebuild",)):  # incremental from Ann's notes, then whole
        assert vault_repo.cairn("index", *rebuild).returncode == 0
        prov = _prov(vault_repo, "git/stash")
        assert prov["last_changed"]["commit"] == kept, rebuild


def test_a_summary_kept_from_a_branch_is_credited_to_the_branch(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A summary rewritten on a branch and on main, merged keeping the branch's card whole, then a body edit: the
    walk compared versions by date, met main's discarded summary between, and credited the summary to the body edit
    in a full index (an incremental one credited the branch). Each version is now compared with the one it was made
    from."""

    commit_at = functools.partial(_commit_at, vault_repo, monkeypatch)

    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("git/stash", "Stash leaves untracked files", "git stash keeps untracked files out.")
    vault_repo.write("ci/cache", "Cache keys need the lockfile", "Key CI caches on the lockfile hash.")
    commit_at("01-01", "two cards", ANN)
    vault_repo.git("switch", "-q", "-c", "side")
    kept_summary = "Use git stash -u to take untracked files along."
    vault_repo.write("git/stash", "Stash leaves untracked files", kept_summary)
    rewrite = commit_at("02-01", "Bob's summary", BOB)
    vault_repo.git("switch", "-q", "main")
    vault_repo.write("git/stash", "Stash leaves untracked files", "git stash -u stashes untracked files too.")
    vault_repo.write("ci/cache", "Cache keys need the lockfile", "Key CI caches on the lockfile's hash.")
    commit_at("03-01", "Ann's summary, and another card", ANN)
    assert vault_repo.cairn("index").returncode == 0
    vault_repo.git("merge", "-q", "side", "-m", "merge side", check=False)  # a conflict: Bob's card is kept
    vault_repo.git("checkout", "--theirs", "--", "cards/git/stash.md")
    commit_at("04-01", "merge side", ANN)
    vault_repo.write("git/stash", "Stash leaves untracked files", kept_summary, body="More notes.")
    body = commit_at("05-01", "more notes", ANN)

    for rebuild in ((), ("--rebuild",)):  # incremental from Ann's summary, then whole
        assert vault_repo.cairn("index", *rebuild).returncode == 0
        prov = _prov(vault_repo, "git/stash")
        assert (prov["summary_changed"]["commit"], prov["last_changed"]["commit"]) == (rewrite, body), rebuild


@pytest.mark.parametrize("broken_twice", [False, True], ids=["once", "twice"])
def test_fixing_a_card_broken_in_between_is_no_summary_change(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch, broken_twice: bool
) -> None:
    """Ann writes a card; two scope edits meet in a merge that commits git's conflict markers (`--no-verify`), or a
    plain commit breaks the frontmatter; Bob removes the markers. The broken version has no summary, so the walk
    stopped there and credited Bob's fix with the summary Ann wrote. `twice`: a commit after the merge edits the card
    with the markers still in; the walk goes on past both broken versions (found by mutation: only one was tested)."""
    commit_at = functools.partial(_commit_at, vault_repo, monkeypatch)
    vault_repo.write_raw("cairn.toml", "")
    summary = "A request path leaks SQLAlchemy sessions; close them in a finally block."
    vault_repo.write("db/pool", "Pool exhausted by leaked sessions", summary, scope=["db"])
    vault_repo.write("db/lines", "Lines broken in between", summary + " Lines.", scope=["db"])
    written = commit_at("01-01", "two cards", ANN)
    vault_repo.git("switch", "-q", "-c", "side")
    vault_repo.write("db/pool", "Pool exhausted by leaked sessions", summary, scope=["db", "postgres"])
    commit_at("02-01", "postgres scope", ANN)
    vault_repo.git("switch", "-q", "main")
    vault_repo.write("db/pool", "Pool exhausted by leaked sessions", summary, scope=["db", "sqlalchemy"])
    path = vault_repo.root / "cards" / "db" / "lines.md"
    path.write_text(path.read_text(encoding="utf-8").replace('scope: ["db"]', 'scope: ["db"'), encoding="utf-8")
    commit_at("03-01", "sqlalchemy scope; a bracket lost", BOB)
    vault_repo.git("merge", "-q", "side", "-m", "merge side", check=False)  # a conflict in the scope line
    assert "<<<<<<<" in (vault_repo.root / "cards" / "db" / "pool.md").read_text(encoding="utf-8")
    commit_at("04-01", "merge side, markers and all", BOB)
    if broken_twice:
        pool = vault_repo.root / "cards" / "db" / "pool.md"
        pool.write_text(pool.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
        commit_at("04-02", "a line more, markers still in", BOB)
    assert vault_repo.cairn("index").returncode == 0  # both cards left out: the update below walks them whole
    vault_repo.write("db/pool", "Pool exhausted by leaked sessions", summary, scope=["db", "sqlalchemy", "postgres"])
    vault_repo.write("db/lines", "Lines broken in between", summary + " Lines.", scope=["db"])
    fixed = commit_at("05-01", "remove the markers", BOB)
    for rebuild in ((), ("--rebuild",)):  # incremental, then whole
        assert vault_repo.cairn("index", *rebuild).returncode == 0
        for card_id in ("db/pool", "db/lines"):
            prov = _prov(vault_repo, card_id)
            assert (prov["summary_changed"]["commit"], prov["last_changed"]["commit"]) == (written, fixed), card_id


def test_an_update_whose_range_holds_a_merge_keeps_the_summarys_older_author(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ann writes a card and the index is built; then a body edit on a branch and a scope edit on main meet in a
    clean merge. The update walks only the new versions, all carrying Ann's summary back to the oldest walked: the
    summary is still credited to Ann's commit, as a whole build says (found by mutation: no update walked a merge
    whose run reached the end of its range)."""
    commit_at = functools.partial(_commit_at, vault_repo, monkeypatch)
    vault_repo.write_raw("cairn.toml", "")
    summary = "A request path leaks SQLAlchemy sessions; close them in a finally block."
    vault_repo.write("db/pool", "Pool exhausted by leaked sessions", summary, "Body.", scope=["db"])
    written = commit_at("01-01", "a card", ANN)
    assert vault_repo.cairn("index").returncode == 0
    vault_repo.git("switch", "-q", "-c", "side")
    vault_repo.write("db/pool", "Pool exhausted by leaked sessions", summary, "Body, longer.", scope=["db"])
    commit_at("02-01", "a longer body", ANN)
    vault_repo.git("switch", "-q", "main")
    vault_repo.write("db/pool", "Pool exhausted by leaked sessions", summary, "Body.", scope=["db", "sqlalchemy"])
    commit_at("03-01", "sqlalchemy scope", BOB)
    vault_repo.git("merge", "-q", "--no-edit", "side", author=BOB)
    for rebuild in ((), ("--rebuild",)):  # incremental, then whole
        assert vault_repo.cairn("index", *rebuild).returncode == 0
        assert _prov(vault_repo, "db/pool")["summary_changed"]["commit"] == written, rebuild


def test_authors_are_shown_as_the_indexed_commits_mailmap_names_them(vault_repo: VaultRepo) -> None:
    """Someone who committed under two e-mails was two authors in `cairn show` (`git shortlog` showed one): Cairn
    read no `.mailmap`. It now reads the one the indexed commit holds, never the working tree's (an uncommitted edit
    would change who is credited)."""
    old, new = ("Ann", "ann@old.example"), ("Ann Lee", "ann@new.example")
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("a/one", "One", "The first summary.")
    vault_repo.commit("Start", author=old)
    vault_repo.write("a/one", "One", "The first summary, sharper.")
    vault_repo.commit("Sharper", author=new)
    vault_repo.write_raw(".mailmap", "# who is who\nAnn Lee <ann@new.example> <ANN@old.example>  # her old address\n")
    vault_repo.commit("One name for Ann", author=BOB)
    assert vault_repo.cairn("index").returncode == 0
    vault_repo.write_raw(".mailmap", "Mallory <mallory@example.com> <ann@new.example>\n")  # not committed

    record = json.loads(vault_repo.cairn("show", "a/one", "--json").stdout)["provenance"]
    assert [(a["name"], a["email"], a["commits"]) for a in record["authors"]] == [("Ann Lee", "ann@new.example", 2)]
    assert (record["created"]["author"], record["created"]["email"]) == new
    assert "authors:         Ann Lee <ann@new.example> (2 commits)" in vault_repo.cairn("show", "a/one").stdout


def test_mailmap_lines_of_each_form() -> None:
    """gitmailmap(5)'s four forms; e-mails and names compared ignoring case; an entry naming the commit's name wins
    over one for its e-mail alone; comments and lines of no known shape skipped."""
    from cairn.mailmap import parse

    names = parse(
        "Proper One <one@example.com>\n"
        "<two@new.example> <two@old.example>\n"
        "Proper Three <three@new.example> <three@old.example>\n"
        "Fourth Person <four@new.example> Old Four <four@old.example>\n"
        "Fourth Other <other@new.example> <four@old.example>\n"
        "# Nobody <nobody@example.com>\n"
        "no brackets here\n"
    )
    assert names.identity("one", "ONE@example.com") == ("Proper One", "ONE@example.com")
    assert names.identity("Two", "two@old.example") == ("Two", "two@new.example")
    assert names.identity("Three", "three@old.example") == ("Proper Three", "three@new.example")
    assert names.identity("old four", "four@old.example") == ("Fourth Person", "four@new.example")
    assert names.identity("Someone Else", "four@old.example") == ("Fourth Other", "other@new.example")
    assert names.identity("Nobody", "nobody@example.com") == ("Nobody", "nobody@example.com")
