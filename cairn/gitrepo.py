"""All of Cairn's git access, through gitpython: trees, blobs, diffs and history of a vault's repository."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import git
from git.exc import BadName, GitCommandError, InvalidGitRepositoryError, NoSuchPathError

from cairn.errors import CairnError, NotAGitRepository
from cairn.vault import CARDS_DIR, Vault

SYMLINK_MODE = 0o120000
SUBMODULE_MODE = 0o160000


@dataclass(frozen=True, slots=True)
class TreeEntry:
    """A file in a commit's tree. path is vault-relative (`cards/x.md`); mode is git's file mode."""

    path: str
    blob: str
    mode: int


@dataclass(frozen=True, slots=True)
class Change:
    """A card file's change between two commits: status is A, M, D or R; paths are vault-relative."""

    status: str
    old_path: str | None
    new_path: str | None


def open_repo(vault: Vault) -> git.Repo:
    if vault.git_root is None:
        raise NotAGitRepository(
            f"{vault.root} is not in a git repository; run `git init` and commit your cards (or use --worktree)"
        )
    try:
        return git.Repo(vault.git_root)
    except (InvalidGitRepositoryError, NoSuchPathError):
        raise NotAGitRepository(f"{vault.git_root} is not a readable git repository") from None


def head_commit(repo: git.Repo) -> str:
    """The commit HEAD points at; raises when the branch has no commits yet."""
    try:
        return repo.head.commit.hexsha
    except ValueError:
        raise CairnError(
            "the vault has no commits yet; commit your cards first (`git add cards && git commit`)"
        ) from None


def resolve_commit(repo: git.Repo, rev: str) -> str:
    try:
        return repo.commit(rev).hexsha
    except (BadName, ValueError, GitCommandError):
        raise CairnError(f"unknown revision {rev!r}; give a commit, branch or tag") from None


def card_entries(repo: git.Repo, commit: str, vault: Vault) -> list[TreeEntry]:
    """Every file under the vault's `cards/` in a commit's tree, without checking anything out."""
    root = f"{vault.prefix}{CARDS_DIR}"
    out = repo.git.ls_tree("-r", "-z", "--full-tree", commit, "--", root, stdout_as_string=False)
    entries = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, _kind, blob = meta.decode().split(" ")
        path = raw_path.decode("utf-8", "surrogateescape")
        entries.append(TreeEntry(path=path[len(vault.prefix) :], blob=blob, mode=int(mode, 8)))
    return entries


def read_blob(repo: git.Repo, blob: str) -> bytes:
    return repo.odb.stream(bytes.fromhex(blob)).read()  # type: ignore[no-any-return]


def read_path(repo: git.Repo, commit: str, rel_path: str, vault: Vault) -> bytes | None:
    """A vault-relative file's bytes at a commit, or None when the commit does not hold it."""
    try:
        blob = repo.commit(commit).tree / f"{vault.prefix}{rel_path}"
    except KeyError:
        return None
    return blob.data_stream.read()  # type: ignore[no-any-return]


def changed_cards(repo: git.Repo, old: str, new: str, vault: Vault) -> list[Change]:
    """Card files added, modified, deleted or renamed between two commits (rename detection on)."""
    root = f"{vault.prefix}{CARDS_DIR}"
    out = repo.git.diff("--name-status", "-z", "-M", old, new, "--", root, stdout_as_string=False)
    parts = [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0")]
    changes: list[Change] = []
    i = 0
    while i < len(parts) and parts[i]:
        status = parts[i][0]
        if status in "RC":
            old_path, new_path = parts[i + 1], parts[i + 2]
            i += 3
        else:
            old_path = new_path = parts[i + 1]
            i += 2
        strip = len(vault.prefix)
        if status == "C":
            changes.append(Change("A", None, new_path[strip:]))
        elif status == "R":
            changes.append(Change("R", old_path[strip:], new_path[strip:]))
        elif status == "D":
            changes.append(Change("D", old_path[strip:], None))
        elif status == "A":
            changes.append(Change("A", None, new_path[strip:]))
        else:  # M, T (type change) and anything else: re-read it
            changes.append(Change("M", old_path[strip:], new_path[strip:]))
    return changes


def is_ancestor(repo: git.Repo, old: str, new: str) -> bool:
    try:
        repo.git.merge_base("--is-ancestor", old, new)
        return True
    except GitCommandError:
        return False


def commit_exists(repo: git.Repo, commit: str) -> bool:
    try:
        repo.commit(commit)
        return True
    except (BadName, ValueError, GitCommandError):
        return False


def init_repo(path: Path) -> git.Repo:
    return git.Repo.init(path, initial_branch="main") if _supports_initial_branch() else git.Repo.init(path)


def commit_all(repo: git.Repo, message: str) -> str:
    repo.git.add("-A")
    repo.git.commit("-m", message, "--no-verify")
    return repo.head.commit.hexsha


def _supports_initial_branch() -> bool:
    try:
        return git.Git().version_info >= (2, 28)
    except GitCommandError:  # pragma: no cover
        return False


def commit_file_to_new_branch(repo: git.Repo, base: str, branch: str, repo_path: str, data: bytes, message: str) -> str:
    """Commit one file on top of `base` as a NEW branch, without touching HEAD, the index or the working tree.

    Git plumbing: the blob is written to the object store, the tree is built in a temporary index
    (GIT_INDEX_FILE), then commit-tree and update-ref with an all-zero old value, so an existing branch is never
    moved. repo_path is relative to the repository root. Returns the new commit.
    """
    import tempfile
    from io import BytesIO

    from gitdb import IStream

    if not _is_valid_branch(repo, branch):
        raise CairnError(f"{branch!r} is not a valid branch name")
    if branch_exists(repo, branch):
        raise CairnError(f"branch {branch!r} already exists; choose another name (nothing was written)")
    blob = repo.odb.store(IStream("blob", len(data), BytesIO(data))).binsha.hex()
    with tempfile.TemporaryDirectory(prefix="cairn-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        try:
            repo.git.read_tree(base, env=env)
            repo.git.update_index("--add", "--cacheinfo", "100644", blob, repo_path, env=env)
            tree = repo.git.write_tree(env=env)
            commit = repo.git.commit_tree(tree, "-p", base, "-m", message, env=env).strip()
        except GitCommandError as exc:
            raise CairnError(f"git could not make the commit: {_last_line(exc.stderr)}") from None
    try:
        repo.git.update_ref("-m", "cairn: new draft branch", f"refs/heads/{branch}", commit, "0" * len(commit))
    except GitCommandError as exc:
        raise CairnError(f"git could not create branch {branch!r}: {_last_line(exc.stderr)}") from None
    return str(commit)


def branch_exists(repo: git.Repo, branch: str) -> bool:
    try:
        repo.git.show_ref("--verify", "--quiet", f"refs/heads/{branch}")
        return True
    except GitCommandError:
        return False


def _is_valid_branch(repo: git.Repo, branch: str) -> bool:
    try:
        repo.git.check_ref_format("--branch", branch)
        return not branch.startswith("-")
    except GitCommandError:
        return False


def _last_line(text: str | None) -> str:
    lines = [line.strip() for line in (text or "").strip().splitlines() if line.strip()]
    return lines[-1].removeprefix("stderr: ").strip("'") if lines else "unknown error"


# --- git's index (the staging area), for lint inside a pre-commit hook --------------------------------------------
