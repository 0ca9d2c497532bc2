"""The vault as lint reads it: the working tree, git's staging area (what a commit would record) inside a git hook, or
a commit (what a draft is committed on top of)."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cairn import gitrepo
from cairn.cards.card import MAX_CARD_BYTES, card_id_from_path
from cairn.config import CONFIG_FILE, VaultConfigError, folder_error, symlink_error
from cairn.hot.errors import CairnError
from cairn.hot.vault import CARDS_DIR, Vault, sparse_checkout, worktree_card_files, worktree_rel

WORKTREE = "worktree"
STAGED = "staged"  # git's staging area (`git ls-files -s`); Cairn's "index" is its own file in the cache
COMMIT = "commit"  # a commit's tree

FILE = "file"
SYMLINK = "symlink"
SUBMODULE = "submodule"  # a submodule (a nested repository in the working tree) at a card's path: no card


@dataclass(frozen=True, slots=True)
class VaultFile:
    """A file under `cards/`: vault-relative path, git blob id of its content, and kind (`file`, `symlink` or
    `submodule`)."""

    path: str
    blob: str
    kind: str = FILE


class Snapshot:
    """Every file under the vault's `cards/` plus `cairn.toml`, from one source, read lazily by blob."""

    def __init__(self, vault: Vault, source: str, commit: str | None = None) -> None:
        self.vault = vault
        self.source = source
        self.files: dict[str, VaultFile] = {}
        self._data: dict[str, bytes] = {}  # blob -> bytes already read
        self._repo: Any = None  # a git.Repo; only cairn.gitrepo knows git
        # a folder or a symlink where cairn.toml goes: lint says so, as the index does
        self.config_error: VaultConfigError | None = None
        if source == COMMIT:
            assert commit is not None
            self._read_commit(commit)
        elif source == STAGED:
            self._read_staged()
        else:
            self._read_worktree()

    def _read_worktree(self) -> None:
        files = [(file, worktree_rel(self.vault, file)) for file in worktree_card_files(self.vault)]
        # A folder holding `.git` is a submodule's (or a nested repository's): git records it as one entry, whose
        # files are no cards of this vault.
        nested = {rel.rsplit("/.git/", 1)[0] for _, rel in files if "/.git/" in rel} | {
            rel.removesuffix("/.git") for _, rel in files if rel.endswith("/.git")
        }
        if CARDS_DIR in nested:
            # `cards/.git`: the vault's own cards folder looks like a repository. Its cards are still the vault's
            # (git goes on tracking them; `cairn index --worktree` reads them): skipping them all, lint said "0 files"
            # and passed a card the index refuses. The `.git` is named, as a submodule is.
            nested.discard(CARDS_DIR)
            nested.add(f"{CARDS_DIR}/.git")
            self.files[f"{CARDS_DIR}/.git"] = VaultFile(f"{CARDS_DIR}/.git", "", SUBMODULE)
        for folder in nested:
            if card_id_from_path(folder) is not None:
                self.files[folder] = VaultFile(folder, "", SUBMODULE)
        for file, rel in files:
            if rel == f"{CARDS_DIR}/.git" or any(rel.startswith(folder + "/") for folder in nested):
                continue
            info = file.lstat()
            if stat.S_ISLNK(info.st_mode):
                self.files[rel] = VaultFile(rel, "", SYMLINK)
            elif stat.S_ISREG(info.st_mode):
                data = gitrepo.stored_text(self.vault, rel, read_capped(file, info.st_size))
                blob = blob_id(data)
                self._data[blob] = data
                self.files[rel] = VaultFile(rel, blob)
        if self.vault.git_root is not None and sparse_checkout(self.vault.git_root):
            # cards git's sparse checkout leaves out of the folder are the vault's all the same: a card that
            # supersedes or links to one named "no card"
            self._repo = gitrepo.open_repo(self.vault)
            for entry in gitrepo.left_out_entries(self._repo, self.vault):
                if entry.path not in self.files:
                    self._add_entry(entry)
        config = self.vault.root / CONFIG_FILE
        if config.is_symlink():  # never read through: git records the link, not the file it names
            self.config_error = symlink_error()
        elif config.is_dir():
            self.config_error = folder_error()
        self.config_text = (
            config.read_text("utf-8", "replace") if self.config_error is None and config.is_file() else None
        )

    def _read_staged(self) -> None:
        self._repo = gitrepo.open_repo(self.vault)
        config_blob = None
        for entry in gitrepo.staged_entries(self._repo, self.vault, extra=(CONFIG_FILE,)):
            if entry.path == CONFIG_FILE and entry.mode == gitrepo.SYMLINK_MODE:
                self.config_error = symlink_error()
            elif entry.path == CONFIG_FILE:
                config_blob = entry.blob
            elif entry.path.startswith(CONFIG_FILE + "/"):  # staged files under a folder named cairn.toml
                self.config_error = folder_error()
            else:
                self._add_entry(entry)
        self.config_text = None
        if config_blob is not None:
            self.config_text = self.read_blobs([config_blob])[config_blob].decode("utf-8", "replace")

    def _read_commit(self, commit: str) -> None:
        self._repo = gitrepo.open_repo(self.vault)
        for entry in gitrepo.card_entries(self._repo, commit, self.vault):
            self._add_entry(entry)
        if gitrepo.holds_folder(self._repo, commit, CONFIG_FILE, self.vault):
            self.config_error = folder_error()
        elif gitrepo.holds_symlink(self._repo, commit, CONFIG_FILE, self.vault):
            self.config_error = symlink_error()
        config = None if self.config_error else gitrepo.read_path(self._repo, commit, CONFIG_FILE, self.vault)
        self.config_text = None if config is None else config.decode("utf-8", "replace")

    def _add_entry(self, entry: gitrepo.TreeEntry) -> None:
        if entry.mode == gitrepo.SYMLINK_MODE:
            self.files[entry.path] = VaultFile(entry.path, entry.blob, SYMLINK)
        elif entry.mode != gitrepo.SUBMODULE_MODE:
            self.files[entry.path] = VaultFile(entry.path, entry.blob)
        elif card_id_from_path(entry.path) is not None:  # the index refuses it: lint says so
            self.files[entry.path] = VaultFile(entry.path, entry.blob, SUBMODULE)

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the git processes the staged snapshot keeps for reading blobs."""
        if self._repo is not None:
            self._repo.close()

    def removed_cards(self) -> list[str]:
        """Card files that what is linted deletes: for the staging area, those HEAD holds that it does not (the commit
        being made); for the working tree that `pre-commit run --from-ref A --to-ref B` lints (CI, the pre-push
        stage), those the merge base of A and B holds that it does not (the range, whose deletions pre-commit passes
        no file of). Empty otherwise, for a commit, and before the first commit."""
        base_ref = _pre_commit_range() if self.source == WORKTREE else None
        if self.source != STAGED and base_ref is None:
            return []
        try:
            if self._repo is None:
                self._repo = gitrepo.open_repo(self.vault)
            if base_ref is None:
                base: str | None = gitrepo.head_commit(self._repo)
            else:
                base = gitrepo.merge_base(self._repo, *(gitrepo.resolve_commit(self._repo, r) for r in base_ref))
        except CairnError:
            return []
        if base is None:
            return []
        return [e.path for e in gitrepo.card_entries(self._repo, base, self.vault) if e.path not in self.files]

    def add_pending(self, rel_path: str, data: bytes) -> None:
        """Hold a file not written yet (`cairn add` lints a new card before writing it), as if it were in the vault."""
        blob = blob_id(data)
        self._data[blob] = data
        self.files[rel_path] = VaultFile(rel_path, blob)

    def read_blobs(self, blobs: list[str]) -> dict[str, bytes]:
        """Contents by blob id (from git's object store for staged files, from memory for the working tree)."""
        missing = [b for b in dict.fromkeys(blobs) if b not in self._data]
        if missing and self._repo is not None:
            self._data.update(gitrepo.read_blobs(self._repo, self.vault, missing))
        return {b: self._data[b] for b in blobs if b in self._data}

    def read(self, rel_path: str) -> bytes | None:
        """A regular file's bytes from this snapshot; None when the snapshot does not hold it as a regular file."""
        file = self.files.get(rel_path)
        if file is None or file.kind != FILE:
            return None
        return self.read_blobs([file.blob]).get(file.blob)


def blob_id(data: bytes) -> str:
    """git's blob id of some bytes (what `git hash-object` prints), so the cache serves both sources."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def read_capped(file: Path, size: int) -> bytes:
    """A file's bytes, or only its first MAX_CARD_BYTES + 1 when it is bigger (the contract rejects it anyway)."""
    with open(file, "rb") as handle:
        return handle.read(MAX_CARD_BYTES + 1) if size > MAX_CARD_BYTES else handle.read()


def _pre_commit_range() -> tuple[str, str] | None:
    """The refs `pre-commit run --from-ref A --to-ref B` (and its pre-push stage) names to the hooks it runs, whose
    files it takes from `git diff A...B`; None outside such a run."""
    refs = os.environ.get("PRE_COMMIT_FROM_REF"), os.environ.get("PRE_COMMIT_TO_REF")
    return (refs[0], refs[1]) if refs[0] and refs[1] else None


def in_git_hook() -> bool:
    """git names its staging area's file in GIT_INDEX_FILE for the hooks it runs around a commit."""
    return bool(os.environ.get("GIT_INDEX_FILE"))


def run_by_pre_commit() -> bool:
    """pre-commit sets PRE_COMMIT=1 for every hook it runs, in a git hook or not (`pre-commit run`, its
    `--from-ref/--to-ref` in CI, the pre-push stage): each lints the repository pre-commit runs in."""
    return os.environ.get("PRE_COMMIT") == "1"
