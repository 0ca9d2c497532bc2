"""All of Cairn's git access, through gitpython: trees, blobs, diffs and history of a vault's repository."""

from __future__ import annotations

import os
import re
import selectors
import shlex
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

# gitpython looks for git when it is imported and, finding none, fails the import with a page of advice: every
# command, `cairn doctor` too, ended in that traceback. Quiet, it imports, and `require_git` says it in one line.
os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")

import git  # noqa: E402
from git.exc import BadName, InvalidGitRepositoryError, NoSuchPathError  # noqa: E402
from git.exc import GitCommandError as GitCommandError  # noqa: E402  (re-exported: no other module imports git)

from cairn import mailmap  # noqa: E402
from cairn.hot import REPOSITORY_VARIABLES  # noqa: E402
from cairn.hot.errors import (  # noqa: E402
    CairnError,
    GitNotFound,
    NotAGitRepository,
    RepositoryNotOwned,
    UnsupportedRepository,
)
from cairn.hot.vault import CARDS_DIR, Vault  # noqa: E402
from cairn.mailmap import Mailmap  # noqa: E402

SYMLINK_MODE = 0o120000
SUBMODULE_MODE = 0o160000
# Blobs are read with a limit (a card is under 1 MiB, see `cairn.cards.card.MAX_CARD_BYTES`): a blob over it gives
# only its first `limit + 1` bytes, enough for the caller's size check, and is never read whole.
READ_LIMIT = 1024 * 1024


@dataclass(frozen=True, slots=True)
class TreeEntry:
    """A file in a commit's tree. path is vault-relative (`cards/x.md`); mode is git's file mode; size is the
    blob's size in bytes (-1 when unknown: staged entries, submodules)."""

    path: str
    blob: str
    mode: int
    size: int = -1


@dataclass(frozen=True, slots=True)
class Change:
    """A card file's change between two commits: status is A, M, D or R; paths are vault-relative."""

    status: str
    old_path: str | None
    new_path: str | None


def require_git() -> None:
    """Raise GitNotFound when there is no `git` on PATH (an IDE's or a job's bare PATH), before any git command
    fails on it as something else."""
    if shutil.which("git") is None:
        raise GitNotFound(
            "git was not found on PATH; install git, or add the folder that holds it to PATH, then run this again"
        )


def open_repo(vault: Vault) -> git.Repo:
    require_git()
    if vault.git_root is None:
        raise NotAGitRepository(
            f"{vault.root} is not in a git repository; run `git init` and commit your cards (`cairn recall`, "
            "`explain`, `show`, `index`, `eval` and `calibrate` read uncommitted cards with --worktree)"
        )
    try:
        # expand_vars=False here and below: `$x` in a folder's name is the folder's (gitpython would read another
        # folder when `x` is set, and warn on every command when it is not)
        repo = git.Repo(vault.git_root, expand_vars=False)
    except (InvalidGitRepositoryError, NoSuchPathError):
        raise NotAGitRepository(f"{vault.git_root} is not a readable git repository") from None
    try:
        # gitpython opens a repository git itself refuses: every later call then failed as "a bug in Cairn" (an
        # empty SHA) or as an unknown revision. Ask git once.
        repo.git.rev_parse("--git-dir")
    except GitCommandError as exc:
        repo.close()
        if "dubious ownership" in str(exc.stderr):  # another user's repository (a shared folder, a container)
            raise RepositoryNotOwned(
                f"git refuses to work in {vault.git_root}: it is owned by another user; if you trust it, run "
                f"`{trust_command(vault.git_root)}`"
            ) from None
        raise NotAGitRepository(
            f"{vault.git_root} is not a readable git repository: {_last_line(exc.stderr)}; fix what git names "
            f"(`git -C {shlex.quote(str(vault.git_root))} status` says it again), then run this again"
        ) from None
    object_format = object_format_of(repo)
    if object_format != "sha1":
        repo.close()
        raise UnsupportedRepository(
            f"{vault.git_root} names its objects by {object_format} (extensions.objectFormat), which gitpython, "
            "Cairn's git library, cannot read; keep the vault in a repository made by a plain `git init` (sha1)"
        )
    if os.environ.get("GIT_WORK_TREE") or os.environ.get("GIT_INDEX_FILE"):
        # gitpython names the repository's own GIT_DIR to git when one is set, not its work tree or staging area:
        # those of another repository (a git hook's, a `--work-tree` alias's) had git read paths against that one,
        # and `cairn review` of a vault's pull request found no card changed
        own = _staging_env(vault)
        repo.git.update_environment(**{name: own[name] for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")})
    return repo


def trust_command(git_root: Path) -> str:
    """The command that makes git work in a repository another user owns (`RepositoryNotOwned`)."""
    return f"git config --global --add safe.directory {shlex.quote(str(git_root))}"


def object_format_of(repo: git.Repo) -> str:
    """The hash that names the repository's objects, `sha1` or `sha256` (`git init --object-format=sha256`).

    gitpython parses object ids and object headers as 20 bytes and 40 hex digits, so a SHA-256 repository's first
    read (its `cairn.toml`, a card's blob) stopped `cairn index`, `show` and `review` as a bug in Cairn."""
    try:
        value = repo.config_reader("repository").get_value("extensions", "objectformat", "sha1")
    except Exception:  # an unreadable config: git itself has answered above, so take git's default
        return "sha1"
    return str(value).strip().lower() or "sha1"


def head_branch(repo: git.Repo) -> str | None:
    """The branch checked out (`refs/heads/NAME`), or None on a detached HEAD."""
    try:
        return str(repo.head.reference.path)
    except (TypeError, ValueError):  # detached
        return None


def head_commit(repo: git.Repo) -> str:
    """The commit HEAD points at; raises when the branch has no commits yet."""
    try:
        return repo.head.commit.hexsha
    except ValueError:
        raise CairnError(
            "the vault has no commits yet; commit your cards first (`git add cards && git commit`)"
        ) from None


def resolve_commit(repo: git.Repo, rev: str) -> str:
    """The commit a revision names, as git itself reads it (gitrevisions(7): `main@{2.days.ago}`, `@{-1}`, `:/fix`).

    gitpython's own reading stopped on some of them as a bug in Cairn (`NotImplementedError`, `IndexError`, a
    traceback), and took a parent a shallow clone does not hold for a commit."""
    commit = ""
    try:
        # the object first, then its commit: `REV^{commit}` would make `:/text` search for `text^{commit}`
        named = str(repo.git.rev_parse("--verify", "--quiet", "--end-of-options", rev)).strip()
        commit = str(repo.git.rev_parse("--verify", "--quiet", "--end-of-options", f"{named}^{{commit}}")).strip()
    except GitCommandError:
        pass
    if not commit:
        elsewhere = elsewhere_note()
        if elsewhere:  # the revision may well be there: git was told to read commits from another folder
            raise CairnError(f"git does not find the revision {rev!r}: {elsewhere}, then run this again")
        shallow = shallow_commits(repo)
        hint = "; this clone is shallow, so its history may not reach it (`git fetch --unshallow`)" if shallow else ""
        raise CairnError(f"unknown revision {rev!r}; give a commit, branch or tag{hint}")
    return commit


# Where git looks for a short ref name, in its order (gitrevisions(7)), after a file of that name in the git folder
_REF_RULES = ("refs/{}", "refs/tags/{}", "refs/heads/{}", "refs/remotes/{}", "refs/remotes/{}/HEAD")


def refs_named(repo: git.Repo, rev: str) -> dict[str, str]:
    """The refs the name that opens `rev` (`main` in `main~2`) could mean, in the order git tries them: full ref ->
    the commit it points at. git takes the first and only warns of the others, so a tag `main` pushed beside the
    branch `main` (or a tag `origin/main`) makes `main` mean the tag."""
    name = re.split(r"[~^:]|@\{", rev, maxsplit=1)[0]
    if not name or name == "@" or name.endswith("HEAD") and "/" not in name:
        return {}  # HEAD, FETCH_HEAD, ORIG_HEAD: files of the git folder, which git reads first
    if re.fullmatch(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}", name):
        return {}  # a whole object id is that object, whatever refs bear its name (git only warns of them)
    wanted = [rule.format(name) for rule in _REF_RULES]
    try:
        out = repo.git.for_each_ref("--format=%(refname)%00%(objectname)%00%(*objectname)", *wanted)
    except GitCommandError:  # "missing object": a ref git cannot peel names no commit, which `resolve_commit` says
        return {}
    found = {}
    for line in str(out).splitlines():
        ref, oid, peeled = line.split("\0")
        found[ref] = peeled or oid
    return {ref: found[ref] for ref in wanted if ref in found}


def card_entries(repo: git.Repo, commit: str, vault: Vault) -> list[TreeEntry]:
    """Every file under the vault's `cards/` in a commit's tree, without checking anything out."""
    return folder_entries(repo, commit, vault, CARDS_DIR)


def card_listing(repo: git.Repo, commit: str, vault: Vault) -> dict[str, bytes]:
    """Every file under the vault's `cards/` in a commit's tree, in git's order: vault-relative path -> git's `MODE
    TYPE BLOB` for it, unparsed. An update walks every card's path (provenance) but needs the entries of the few
    cards it reads again (`entries_of`): `git ls-tree` without sizes opens no blob (at 10,000 cards 11 ms against
    65), and 10,000 entries are not parsed."""
    root = f"{vault.prefix}{CARDS_DIR}"
    out = repo.git.ls_tree("-r", "-z", "--full-tree", commit, "--", root, stdout_as_string=False)
    cut = len(vault.prefix)
    listing: dict[str, bytes] = {}
    for record in out.split(b"\0"):
        if record:
            meta, _, raw_path = record.partition(b"\t")
            listing[raw_path.decode("utf-8", "surrogateescape")[cut:]] = meta
    return listing


def entries_of(repo: git.Repo, vault: Vault, listing: dict[str, bytes], paths: Collection[str]) -> list[TreeEntry]:
    """The entries of `paths` in a `card_listing`, in its order, with their blobs' sizes (one `git cat-file
    --batch-check` for all; -1 for an object the repository does not hold, such as a submodule's commit)."""
    chosen = [(path, listing[path].decode("ascii", "replace").split()) for path in listing if path in paths]
    sizes = _blob_sizes(repo, vault, sorted({meta[2] for _, meta in chosen if len(meta) == 3})) if chosen else {}
    return [
        TreeEntry(path=path, blob=meta[2], mode=int(meta[0], 8), size=sizes.get(meta[2], -1))
        for path, meta in chosen
        if len(meta) == 3
    ]


def folder_entries(repo: git.Repo, commit: str, vault: Vault, folder: str) -> list[TreeEntry]:
    """Every file under a vault-relative folder (`evals`) in a commit's tree; empty when the folder is absent."""
    root = f"{vault.prefix}{folder.strip('/')}"
    try:  # the sizes (-l) read each blob's header, which a partial clone may have to fetch
        out = repo.git.ls_tree("-r", "-z", "-l", "--full-tree", commit, "--", root, stdout_as_string=False)
    except GitCommandError as exc:
        raise _unfetched(repo, exc) from None
    return _entries(out, vault)


def _unfetched(repo: git.Repo, exc: GitCommandError) -> Exception:
    """What to raise for a git command that failed: a partial clone (`git clone --filter`) that could not fetch a
    blob it lacks from its remote says so in one line; any other failure is `exc` itself."""
    stderr = str(exc.stderr)
    if "promisor remote" not in stderr:
        return exc
    lines = [line.strip().removeprefix("stderr: ").strip("'") for line in stderr.splitlines() if line.strip()]
    folder = shlex.quote(str(repo.working_tree_dir or repo.git_dir))
    return NotAGitRepository(  # as one git refuses to read: `cairn review` did not run (exit 2)
        f"{folder} is a partial clone (`git clone --filter`) and git could not fetch the card files it lacks from "
        f"its remote ({lines[0] if lines else 'unknown error'}); make the remote reachable (`git -C {folder} "
        "remote -v` names it), then run this again"
    )


def _entries(out: bytes, vault: Vault, *, staged: bool = False) -> list[TreeEntry]:
    """The files `git ls-tree -r -z -l` lists (`MODE TYPE BLOB SIZE<tab>PATH`, the size padded), or with staged=True
    those of `git ls-files -s -z` (`MODE BLOB STAGE<tab>PATH`), paths made vault-relative.

    Staged paths at a stage other than 0 are unmerged (a conflict in progress) and left out: they cannot be
    committed.
    """
    entries = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, second, third, *rest = meta.decode().split()
        if staged and third != "0":
            continue
        blob = second if staged else third
        size = int(rest[0]) if rest and rest[0].isdigit() else -1
        path = raw_path.decode("utf-8", "surrogateescape")
        entries.append(TreeEntry(path=path[len(vault.prefix) :], blob=blob, mode=int(mode, 8), size=size))
    return entries


def merge_base(repo: git.Repo, a: str, b: str) -> str | None:
    """The best common ancestor of two commits (what a pull request from b into a is compared with), or None."""
    try:
        out = repo.git.merge_base(a, b)
    except GitCommandError:
        return None
    return str(out).strip() or None


MERGE_TREE_GIT = (2, 38)  # the first git whose `merge-tree --write-tree` merges without a work tree


@dataclass(frozen=True, slots=True)
class MergeResult:
    """What merging one commit into another makes, as `git merge-tree --write-tree` computes it. commit: a commit
    of the merged tree (parents: both sides), which nothing references; conflicts: the repository paths that would
    conflict (their blobs in the tree hold conflict markers)."""

    commit: str
    conflicts: tuple[str, ...]


def merge_result(repo: git.Repo, ours: str, theirs: str) -> MergeResult | str:
    """The merge of `theirs` into `ours`, computed without touching the work tree or the index; or, when git cannot
    compute it (older than 2.38, an object it cannot read or write), why not. The merged tree and its commit are
    written to the object store, unreferenced (git's own gc prunes them), as `git merge-tree` always writes them."""
    if git.Git().version_info < MERGE_TREE_GIT:
        version = ".".join(map(str, git.Git().version_info[:3]))
        return f"git {version} cannot compute a merge without a work tree (`git merge-tree --write-tree` needs 2.38)"
    status, out, err = repo.git.merge_tree(
        "--write-tree",
        "--name-only",
        "--no-messages",
        "-z",
        ours,
        theirs,
        with_extended_output=True,
        with_exceptions=False,
        stdout_as_string=False,
    )
    fields = out.split(b"\0")
    if status not in (0, 1) or not fields[0]:
        return f"git merge-tree failed: {_last_line(err.decode('utf-8', 'replace') if isinstance(err, bytes) else err)}"
    tree = fields[0].decode("ascii")
    conflicts = tuple(dict.fromkeys(p.decode("utf-8", "surrogateescape") for p in fields[1:] if p))
    try:
        commit = repo.git.commit_tree(
            tree, "-p", ours, "-p", theirs, "--no-gpg-sign", "-m", "cairn review: the merge", env=identity_env(repo)
        )
    except GitCommandError as exc:
        return f"git commit-tree failed: {_last_line(exc.stderr)}"
    return MergeResult(str(commit).strip(), conflicts if status == 1 else ())


def blob_size(repo: git.Repo, blob: str) -> int:
    """A blob's size in bytes, from its header (`git cat-file --batch-check`): nothing of it is read."""
    try:
        return int(repo.odb.info(bytes.fromhex(blob)).size)
    except ValueError:  # gitpython's word for an object git reports missing (a damaged or incomplete repository)
        raise _object_missing(repo, blob) from None


def _object_missing(repo: git.Repo, oid: str) -> CairnError:
    return CairnError(
        f"git cannot read the object {oid} in {repo.git_dir}: the repository is damaged or incomplete; "
        "`git fsck` names what is wrong (fetch the object again, or re-clone the vault), then run this again"
    )


def read_blob(repo: git.Repo, blob: str, limit: int | None = READ_LIMIT, size: int = -1) -> bytes:
    """A blob's bytes; over `limit`, only its first `limit + 1` (the size is checked first, a huge blob is never
    read whole; limit=None reads any size). `size`: the blob's size when the caller knows it (a tree listing
    carries it), which saves asking git for it."""
    if limit is not None and (size if size >= 0 else blob_size(repo, blob)) > limit:
        return _blob_prefix(repo, blob, limit + 1)
    try:
        return repo.odb.stream(bytes.fromhex(blob)).read()  # type: ignore[no-any-return]
    except ValueError:
        raise _object_missing(repo, blob) from None


def read_small_blobs(repo: git.Repo, blobs: list[str]) -> dict[str, bytes]:
    """Committed blobs' bytes from one `git cat-file --batch` run (missing ones are left out). Each is read whole:
    the caller has checked their sizes (a tree listing carries them) against its limit first."""
    if not blobs:
        return {}
    done = subprocess.run(
        ["git", "cat-file", "--batch"],
        input="".join(f"{b}\n" for b in blobs).encode("ascii"),
        capture_output=True,
        env={**os.environ, "GIT_DIR": str(_git_dir_of(repo))},
        cwd=_git_dir_of(
            repo
        ),  # git reads its working folder first: a deleted one (`cd` into a folder then removed) fails
        check=False,
    )
    if done.returncode != 0:
        raise CairnError(f"git cat-file failed in {repo.git_dir}: {done.stderr.decode('utf-8', 'replace').strip()}")
    return _parse_batch(done.stdout)


def _parse_batch(out: bytes) -> dict[str, bytes]:
    """`git cat-file --batch` output: `<sha> <type> <size>`, the bytes and a newline per blob; missing ones skipped."""
    found: dict[str, bytes] = {}
    pos = 0
    while pos < len(out):
        end = out.index(b"\n", pos)
        header = out[pos:end].decode("ascii", "replace").split(" ")
        pos = end + 1
        if len(header) != 3:  # `<sha> missing`
            continue
        size = int(header[2])
        found[header[0]] = out[pos : pos + size]
        pos += size + 1
    return found


def _blob_prefix(repo: git.Repo, blob: str, n: int, env: dict[str, str] | None = None) -> bytes:
    """The first n bytes of a blob, from a `git cat-file` that is stopped once they are read."""
    run_env = {**os.environ, **(env or {}), "GIT_DIR": str(_git_dir_of(repo))}
    with subprocess.Popen(
        ["git", "cat-file", "blob", blob],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=run_env,
        cwd=_git_dir_of(repo),  # as `read_small_blobs`: never the process's own folder, which may be gone
    ) as proc:
        assert proc.stdout is not None
        data = proc.stdout.read(n)
        proc.kill()
    return data


def _git_dir_of(repo: git.Repo) -> Path:
    return Path(repo.git_dir).resolve()


def read_path(repo: git.Repo, commit: str, rel_path: str, vault: Vault, limit: int | None = READ_LIMIT) -> bytes | None:
    """A vault-relative file's bytes at a commit (over `limit`: its first `limit + 1`), or None when the commit does
    not hold it, or holds a folder or a submodule there (whose tree object was read as the file's text)."""
    try:
        blob = repo.commit(commit).tree / f"{vault.prefix}{rel_path}"
    except KeyError:
        return None
    if blob.type != "blob":
        return None
    if limit is not None and blob.size > limit:
        return _blob_prefix(repo, blob.hexsha, limit + 1)
    return blob.data_stream.read()  # type: ignore[no-any-return]


def mailmap_at(repo: git.Repo, commit: str) -> Mailmap:
    """The `.mailmap` at the top of the repository as `commit` holds it (`cairn.mailmap`: never the working tree's);
    none when the commit has no such file, or one that is not a file or is over `mailmap.MAX_BYTES`."""
    try:
        blob = repo.commit(commit).tree / ".mailmap"
    except (KeyError, ValueError, BadName):
        return mailmap.EMPTY
    if blob.type != "blob" or blob.size > mailmap.MAX_BYTES:
        return mailmap.EMPTY
    return mailmap.parse(blob.data_stream.read().decode("utf-8", "replace"))


def holds_folder(repo: git.Repo, commit: str, rel_path: str, vault: Vault) -> bool:
    """Whether the commit holds a folder (a tree) at the vault-relative path, where a file is expected."""
    try:
        return bool((repo.commit(commit).tree / f"{vault.prefix}{rel_path}").type == "tree")
    except KeyError:
        return False


def holds_symlink(repo: git.Repo, commit: str, rel_path: str, vault: Vault) -> bool:
    """Whether the commit holds a symlink at the vault-relative path (its blob is the path it names, not a file)."""
    try:
        return bool((repo.commit(commit).tree / f"{vault.prefix}{rel_path}").mode == SYMLINK_MODE)
    except KeyError:
        return False


def changed_cards(repo: git.Repo, old: str, new: str, vault: Vault) -> list[Change]:
    """Card files added, modified, deleted or renamed between two commits (rename detection on)."""
    root = f"{vault.prefix}{CARDS_DIR}"
    try:  # rename detection (-M) reads the blobs of added and deleted files, which a partial clone may have to fetch
        out = repo.git.diff("--name-status", "-z", "-M", old, new, "--", root, stdout_as_string=False)
    except GitCommandError as exc:
        raise _unfetched(repo, exc) from None
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


def uncommitted_cards(repo: git.Repo, vault: Vault) -> list[str]:
    """Card files (vault-relative, `.md`) the working tree adds, edits or deletes against HEAD, staged or not, untracked
    ones included: what no commit serves yet. Ignored files are left out (git never commits them).

    The folder may be anyone's (`cairn recall` in a project downloaded with its `.git` and a `cairn.toml`), so no git
    command that runs what its config names: `git status` runs `core.fsmonitor` and the clean filters of
    `.gitattributes`. Each file's blob id, of its bytes as they are, is compared with HEAD's instead, as
    `last_commit_day` does; a file that a filter changes on checkout reads as changed, but not one git's own CRLF
    conversion gave CRLF line ends (`core.autocrlf`, `eol=crlf`): every card of such a clone; nor one it checks out
    in another encoding (`working-tree-encoding`, `stored_text`). A file git's sparse
    checkout leaves out of the work tree (tagged `S`, skip-worktree) is not there and not deleted either; one the flag
    hides while it is there (`git update-index --skip-worktree`) is listed when it differs (`passed_over_flag`)."""
    from cairn.hot.serve import blob_id

    root = f"{vault.prefix}{CARDS_DIR}"
    head = card_listing(repo, "HEAD", vault)
    # `core.fsmonitor` is a command git starts to read the index; -t tags each path (`S`: skip-worktree)
    out = repo.git.execute(
        ["git", "-c", "core.fsmonitor=false", "ls-files", "-z", "-t", "--cached", "--others", "--exclude-standard"]
        + ["--full-name", "--", root],
        stdout_as_string=False,
    )
    assert isinstance(out, bytes)
    strip = len(vault.prefix) + 2  # the tag and its space
    tagged = [(raw[:1], raw.decode("utf-8", "surrogateescape")[strip:]) for raw in out.split(b"\0") if raw]
    listed = {path for _, path in tagged}
    left_out = {path for tag, path in tagged if tag == b"S" and not os.path.lexists(os.path.join(vault.root, path))}
    changed = []
    for path in sorted(path for path in listed | set(head) if path.endswith(".md") and path not in left_out):
        meta = head.get(path, b"").decode("ascii", "replace").split()
        file = os.path.join(vault.root, path)
        try:
            found = os.lstat(file)
            if stat.S_ISREG(found.st_mode) and found.st_size > READ_LIMIT:  # no card; git reads it, not memory
                same = meta[2:3] == [str(repo.git.hash_object("--no-filters", "--", file)).strip()]
            elif stat.S_ISREG(found.st_mode):
                with open(file, "rb") as handle:
                    data = handle.read()
                stored = stored_text(vault, path, data)  # checked out in UTF-16 (working-tree-encoding): UTF-8
                same = meta[2:3] in ([blob_id(data)], [blob_id(stored.replace(b"\r\n", b"\n"))])
            else:  # a symlink stands where HEAD has one; a folder never does
                same = stat.S_ISLNK(found.st_mode) and meta[:1] == ["120000"]
        except OSError:  # deleted
            same = False
        if not same:
            changed.append(path)
    return changed


def passed_over_flag(repo: git.Repo, vault: Vault, path: str) -> str | None:
    """The flag of git's index that has `git add` and `git commit -a` pass over the edits of the card file `path`
    (vault-relative): `assume-unchanged` or `skip-worktree` (`git update-index --no-FLAG PATH` clears it); None."""
    out = repo.git.execute(
        ["git", "--literal-pathspecs", "-c", "core.fsmonitor=false", "ls-files", "-z", "-v", "--full-name", "--"]
        + [f"{vault.prefix}{path}"],
        stdout_as_string=False,
    )
    assert isinstance(out, bytes)
    tag = out[:1]  # -v: lowercase for assume-unchanged, `S` for skip-worktree
    return "skip-worktree" if tag in (b"S", b"s") else "assume-unchanged" if tag.islower() else None


def ignored_cards(repo: git.Repo, vault: Vault) -> list[str]:
    """Card files (vault-relative, `.md`) in the working tree that git ignores and no commit tracks (a `.gitignore`,
    `info/exclude` or `core.excludesFile` rule; the vault a folder in another repository's ignored folder): plain
    `git add` refuses them, so no commit, and no agent, ever gets them. `core.fsmonitor` off, as `uncommitted_cards`."""
    out = repo.git.execute(
        ["git", "-c", "core.fsmonitor=false", "ls-files", "-z", "--others", "--ignored", "--exclude-standard"]
        + ["--full-name", "--", f"{vault.prefix}{CARDS_DIR}"],
        stdout_as_string=False,
    )
    assert isinstance(out, bytes)
    listed = out.decode("utf-8", "surrogateescape").split("\0")
    return sorted(path[len(vault.prefix) :] for path in listed if path.endswith(".md"))


def ignored_cards_note(vault: Vault, among: Collection[str] | None = None) -> str | None:
    """The card files of the vault's folder that git ignores, with the rule and the file it is in, as a note: plain
    `git add` refuses them, so no commit, and no agent, ever gets them (a card written in a folder a `.gitignore`
    names; a vault in another repository's ignored folder, whose index holds 0 cards). None when there is none, or
    git cannot tell. among: only these files (vault-relative; the cards a command just wrote)."""
    from cairn.hot.vault import shell_word
    from cairn.terminal import clean_line

    try:
        with open_repo(vault) as repo:
            ignored = ignored_cards(repo, vault)
    except (CairnError, OSError, ValueError, GitCommandError):
        return None
    if among is not None:
        ignored = [path for path in ignored if path in among]
    if not ignored:
        return None
    more = f" and {len(ignored) - 1} more card files" if len(ignored) > 1 else ""
    rule = ignore_rule(vault.root / ignored[0])
    them = "them" if more else "it"
    return (
        f"{clean_line(shell_word(ignored[0]))}{more} in the vault's folder {'are' if more else 'is'} ignored by "
        f"git{f' (the rule {clean_line(rule)})' if rule else ''}, so no commit holds {them} and agents never get "
        f"{them}: `git add -f` {them} and commit, or take {them} out of that rule"
    )


@dataclass(frozen=True, slots=True)
class FileVersion:
    """One card file touched by a commit: status A, M, R or D; blob is the file after the commit (None for D).

    A merge lists a file only when its result differs from every parent (a conflict resolved by hand, or a file the
    merge itself added); `parents` then holds the file's path in each parent that had it (old_path is the first).
    old_blob: the file before the commit, in its one parent (M, R; None for a merge's file)."""

    status: str
    old_path: str | None
    new_path: str | None
    blob: str | None
    parents: tuple[str, ...] = ()
    old_blob: str | None = None


@dataclass(frozen=True, slots=True)
class LoggedCommit:
    """A commit from `git log` over `cards/`, with its author and the card files it touched (vault-relative).
    parents: its nearest ancestors on each side that touched `cards/` too (git's parent rewriting), or commits
    outside the range logged."""

    commit: str
    author: str
    email: str
    date: str
    files: tuple[FileVersion, ...]
    parents: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Signature:
    """git's verdict on a commit's signature: status is `%G?` (G good, N none, B bad, U/X/Y/R/E see git-log)."""

    status: str
    key: str = ""


# What each `%G?` letter but G and N means, for a reader who does not know git's letters ("signature U" told nothing).
_SIGNATURE_WORDS = {
    "B": "a bad signature",
    "U": "signed by a key that neither the allowed signers file nor the keyring trusts",
    "X": "a good signature that has expired",
    "Y": "signed by a key that has expired",
    "R": "signed by a revoked key",
    "E": "a signature that cannot be checked: its key, or the program that checks it, is missing",
}


def signature_words(status: str) -> str:
    """git's `%G?` verdict in words, with its letter: `signature U: signed by a key that neither ... trusts`."""
    return f"signature {status}: {_SIGNATURE_WORDS.get(status, 'not a good signature')}"


# Raw diffs with full blob ids, renames detected, and nothing a user's config could add to the output or take from
# it: the root commit's files (`--root`; `log.showRoot = false` hid the commit that created the vault's first cards)
# and names in UTF-8 (`--encoding`; `i18n.logOutputEncoding` re-encoded them). A merge's own changes come as a
# combined diff (`-c`: only files whose result differs from every parent), with each parent's path
# (`--combined-all-paths`): a card added or rewritten in a merge commit is that commit's author's doing. Every child
# before its parents, else by commit date (`--date-order`): git's default order is by date alone, and a commit dated
# before its parent (a skewed clock, a rebase keeping dates) on one side of a merge came after that parent, so the
# walk, which follows a card's path back commit by commit, passed the parent's edit under the card's old name before
# the rename reached it. Each commit's parents among the commits logged (`--parents`: rewritten to the nearest that
# touched `cards/`), so a merge's card can be followed back along each side.
_LOG_FORMAT = "--format=%x01%H%x00%P%x00%an%x00%ae%x00%aI"
_LOG_ARGS = (
    "--date-order",
    "--parents",
    "--raw",
    "--root",
    "--encoding=UTF-8",
    "-z",
    "-M",
    "-c",
    "--combined-all-paths",
    "--no-abbrev",
    "--no-show-signature",
    "--no-color",
    "--no-ext-diff",
    _LOG_FORMAT,
)


def card_log(repo: git.Repo, vault: Vault, commit: str, since: str | None = None) -> list[LoggedCommit]:
    """Every commit reachable from `commit` (not from `since`) that touched `cards/`, newest first, in one
    `git log --raw -M` pass; a merge contributes the files its result changes against every parent
    (`_merge_version`), not those it takes whole from one side."""
    root = f"{vault.prefix}{CARDS_DIR}"
    rev = f"{since}..{commit}" if since else commit
    try:  # as `changed_cards`: -M reads blobs a partial clone may have to fetch
        out = repo.git.log(*_LOG_ARGS, rev, "--", root, stdout_as_string=False)
    except GitCommandError as exc:
        raise _unfetched(repo, exc) from None
    strip = len(vault.prefix)
    # Read field by field, never by splitting on the \x01 marker: an author's name or e-mail and a card's file name
    # may hold that byte (git keeps it), so only a field where a commit can start is read as one.
    parts = [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0")]
    commits: list[LoggedCommit] = []
    i = 0
    while i < len(parts):
        head = parts[i].lstrip("\n")
        if not head.startswith("\x01") or i + 4 >= len(parts):
            i += 1
            continue
        sha, parents, author, email, date = head[1:], *parts[i + 1 : i + 5]
        i += 5
        files: list[FileVersion] = []
        while i < len(parts):
            meta = parts[i].lstrip("\n")
            i += 1
            if not meta:  # a merge's combined diff opens with an empty field
                continue
            if not meta.startswith(":"):
                i -= 1
                break  # the next commit's header
            if meta.startswith("::"):
                version, i = _merge_version(meta, parts, i, strip)
                files.append(version)
                continue
            fields = meta[1:].split(" ")
            status, old_blob, blob = fields[4][:1], fields[2], fields[3]
            if status in "RC":
                old_path, new_path = parts[i][strip:], parts[i + 1][strip:]
                i += 2
            else:
                old_path = new_path = parts[i][strip:]
                i += 1
            if status == "D":
                files.append(FileVersion("D", old_path, None, None))
            elif status == "A" or status == "C":
                files.append(FileVersion("A", None, new_path, blob))
            elif status == "R":
                files.append(FileVersion("R", old_path, new_path, blob, old_blob=old_blob))
            else:  # M, T: a new version of the same path
                files.append(FileVersion("M", old_path, new_path, blob, old_blob=old_blob))
        # git leaves `%aI` as it is when the commit's author line holds no date it can read (a crafted commit)
        date = date if date[:1].isdigit() else ""
        commits.append(LoggedCommit(sha, author, email, date, tuple(files), tuple(parents.split())))
    return commits


def _merge_version(meta: str, parts: list[str], i: int, strip: int) -> tuple[FileVersion, int]:
    """One file of a merge's combined raw diff (`::MODES SHAS STATUS`, then each parent's path and the result's),
    and the index of the part after it. Added against every parent: the merge created it; absent from the result:
    deleted; else a new version, followed back through the path each parent that had the file gave it."""
    n = len(meta) - len(meta.lstrip(":"))  # one colon per parent
    fields = meta[n:].split(" ")
    blob, status = fields[2 * n + 1], fields[2 * n + 2]
    paths = [p[strip:] for p in parts[i : i + n + 1]]
    i += n + 1
    new_path = paths[-1]
    parents = tuple(dict.fromkeys(p for p, s in zip(paths[:-1], status, strict=False) if s != "A"))
    if fields[n] == "000000" and set(blob) == {"0"}:
        return FileVersion("D", new_path, None, None), i
    if not parents:
        return FileVersion("A", None, new_path, blob), i
    kind = "M" if parents == (new_path,) else "R"
    return FileVersion(kind, parents[0], new_path, blob, parents), i


def commit_signatures(repo: git.Repo, commits: list[str] | set[str]) -> dict[str, Signature]:
    """Verify the signatures of commits; only commits that carry one are handed to git (and gpg/ssh)."""
    result: dict[str, Signature] = {}
    signed: list[str] = []
    for sha in sorted(commits):
        try:
            raw = repo.odb.stream(bytes.fromhex(sha)).read()
        except (ValueError, KeyError, OSError):
            result[sha] = Signature("N")
            continue
        header = raw.split(b"\n\n", 1)[0]
        if b"\ngpgsig " in header or b"\ngpgsig-sha256 " in header:
            signed.append(sha)
        else:
            result[sha] = Signature("N")
    for start in range(0, len(signed), 200):
        chunk = signed[start : start + 200]
        # `log.showSignature = true` would put gpg's or ssh's verdict text before each record: off, as in `card_log`
        out = repo.git.execute(
            ["git", *_verifiers(repo), "log", "--no-walk=unsorted", "--no-show-signature", "--no-color", "-z"]
            + ["--format=%H%x00%G?%x00%GK", *chunk]
        )
        fields = out.split("\0")
        for i in range(0, len(fields) - 2, 3):
            sha = fields[i].strip()
            result[sha] = Signature(fields[i + 1] or "N", fields[i + 2])
    return result


# The programs git runs to check a signature, and git's own default for each.
_VERIFIERS = {"openpgp": "gpg", "x509": "gpgsm", "ssh": "ssh-keygen"}


def _verifiers(repo: git.Repo) -> list[str]:
    """`-c` options that give git's signature check the programs the user chose (global or system config, `-c` and
    `GIT_CONFIG_*` of the environment) or git's defaults, never the repository's own: a `gpg.program` in the `.git`
    of a project downloaded with it is a command of the project's choosing, run on `cairn index`, `show` or
    `audit` there. Nothing when the repository names none."""
    try:
        out = str(repo.git.config("--show-scope", "-z", "--get-regexp", r"^gpg\.(program|[a-z0-9]+\.program)$"))
    except GitCommandError as exc:  # 1: none is set; else a git before 2.26 (no --show-scope): git's defaults
        return [] if exc.status == 1 else _program_options(_VERIFIERS)
    chosen: dict[str, str] = {}
    foreign = False
    fields = out.rstrip("\0").split("\0")  # scope, then key and value, each record NUL-ended
    for scope, setting in zip(fields[::2], fields[1::2], strict=True):
        key, _, value = setting.partition("\n")
        kind = "openpgp" if key == "gpg.program" else key.split(".")[1]
        if scope in ("local", "worktree"):
            foreign = True
        elif kind in _VERIFIERS:
            chosen[kind] = value
    return _program_options({**_VERIFIERS, **chosen}) if foreign else []


def _program_options(programs: dict[str, str]) -> list[str]:
    options = ["-c", f"gpg.program={programs['openpgp']}"]
    for kind, program in programs.items():
        options += ["-c", f"gpg.{kind}.program={program}"]
    return options


FETCH_TIMEOUT_SECONDS = 120.0  # a fetch of a lesson vault takes seconds; a remote silent this long is stuck


def fetch(
    repo: git.Repo,
    args: list[str],
    *,
    prompt: bool = False,
    timeout: float = FETCH_TIMEOUT_SECONDS,
    env: dict[str, str] | None = None,
) -> tuple[int, str]:
    """Run `git fetch ARGS` in the repository: (exit status, git's stderr in English). It never outlives `timeout`
    seconds: then it is stopped with everything it started (a remote helper, ssh) and the status is -1.

    Unless `prompt` (a person at a terminal ran the command), no credential or ssh question can wait for an answer:
    git's own prompts are off (GIT_TERMINAL_PROMPT=0, GCM_INTERACTIVE=never), so are the askpass programs git and ssh
    would run instead (an empty GIT_ASKPASS hides core.askPass and SSH_ASKPASS from git: an editor's terminal sets
    one, whose dialog nobody answers), and git runs in a session of its own, with no controlling terminal for ssh or
    a credential helper to open.
    """
    run_env = {k: v for k, v in os.environ.items() if k not in ("GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_PREFIX")}
    run_env.update(env or {})
    run_env.update({"GIT_DIR": str(_git_dir_of(repo)), "LC_ALL": "C", "LANGUAGE": "C"})  # stderr is parsed
    if not prompt:
        run_env.update(
            {"GIT_TERMINAL_PROMPT": "0", "GCM_INTERACTIVE": "never", "GIT_ASKPASS": "", "SSH_ASKPASS_REQUIRE": "never"}
        )
    proc = subprocess.Popen(
        ["git", "fetch", *args],
        cwd=repo.working_tree_dir or repo.git_dir,
        env=run_env,
        stdin=subprocess.DEVNULL if not prompt else None,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=not prompt,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + timeout
    try:
        err = _kept_output(proc.stderr, deadline, FETCH_STDERR_BYTES)
        if err is None:
            raise subprocess.TimeoutExpired(proc.args, timeout)
        proc.wait(timeout=max(deadline - time.monotonic(), 0))
        proc.stderr.close()
        return proc.returncode, err.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        _stop(proc, group=not prompt)
        return -1, f"fatal: no answer from the remote within {timeout:g} s (git fetch stopped)"
    except BaseException:  # Ctrl-C, a signal: in a session of its own, git would fetch on after Cairn is gone
        _stop(proc, group=not prompt)
        raise


# Of git fetch's stderr, the first and the last bytes kept: git's own lines (the first says what failed, the last
# ones name a lock or a refused ref) fit many times over; a remote's lines, which git relays, can run to gigabytes.
FETCH_STDERR_BYTES = 64 * 1024


def _kept_output(stream: IO[bytes], deadline: float, keep: int) -> bytes | None:
    """A pipe read to its end: its first and last `keep` bytes (a line `[...]` between them when more was read), or
    None when it is still open at `deadline` (`time.monotonic()`)."""
    fd = stream.fileno()
    head, tail, cut = bytearray(), bytearray(), False
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return bytes(head + (b"\n[...]\n" if cut else b"") + tail)
            room = max(keep - len(head), 0)
            head += chunk[:room]
            tail += chunk[room:]
            if len(tail) > keep:
                del tail[: len(tail) - keep]
                cut = True


def _stop(proc: subprocess.Popen[bytes], group: bool) -> None:
    """Stop a git that ran out of time: SIGTERM first (git puts a terminal it switched echo off on back), then
    SIGKILL; a process group (its own session) is stopped whole. Its stderr is read for a moment only, since a
    child of git's that outlived it may still hold the pipe."""
    import signal

    def send(sig: int) -> None:
        try:
            if group:
                os.killpg(proc.pid, sig)
            else:
                os.kill(proc.pid, sig)
        except ProcessLookupError:
            pass

    send(signal.SIGTERM)
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        send(signal.SIGKILL)
        proc.wait()
    if group:
        send(signal.SIGKILL)  # what git started and left behind
    try:
        if proc.stderr is not None:
            _kept_output(proc.stderr, time.monotonic() + 1, 0)
    finally:
        if proc.stderr is not None:
            proc.stderr.close()


def is_ancestor(repo: git.Repo, old: str, new: str) -> bool:
    try:
        repo.git.merge_base("--is-ancestor", old, new)
        return True
    except GitCommandError:
        return False


def shallow_commits(repo: git.Repo) -> frozenset[str]:
    """The boundary commits of a shallow clone (history stops there); empty for a full clone."""
    shallow = Path(repo.common_dir) / "shallow"
    try:
        return frozenset(line.strip() for line in shallow.read_text("ascii").splitlines() if line.strip())
    except (OSError, UnicodeDecodeError):
        return frozenset()


def shallow_cut(repo: git.Repo, base: str, head: str) -> str | None:
    """A boundary commit of a shallow clone in base..head whose parents the clone does not hold as base's history,
    or None. git reads such a commit as a root that adds every file, so who changed what in the range is lost; one
    whose recorded parents all lie in base's history (a branch of one commit fetched 2 deep) loses nothing."""
    shallow = shallow_commits(repo)
    if not shallow:
        return None
    in_range = set(str(repo.git.rev_list(f"{base}..{head}")).split())
    for commit in sorted(shallow & in_range):
        try:  # the commit object still names its parents; the shallow file only hides them
            header = str(repo.git.cat_file("commit", commit)).split("\n\n", 1)[0]
        except GitCommandError:
            return commit
        parents = [line.split()[1] for line in header.splitlines() if line.startswith("parent ")]
        if not all(is_ancestor(repo, parent, base) for parent in parents):
            return commit
    return None


def object_types(repo: git.Repo, names: list[str]) -> dict[str, tuple[str, str]]:
    """What each of `names` (`REV^{commit}`, `REV:PATH`; one line each) gives, from one `git cat-file --batch-check`
    run: (object id, type) for the names git has, ("", "missing") for those it has not; a name it cannot be asked
    this way (a line break or a NUL in it) is left out."""
    found: dict[str, tuple[str, str]] = {}
    asked: dict[str, bytes] = {}
    for name in names:
        try:
            raw = name.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a lone surrogate no file name holds
            continue
        if not any(byte in raw for byte in b"\n\r\0"):
            asked[name] = raw
    if not asked:
        return found
    names = list(asked)
    with tempfile.TemporaryFile() as request:
        request.write(b"".join(raw + b"\n" for raw in asked.values()))
        request.seek(0)
        out = repo.git.execute(["git", "cat-file", "--batch-check"], istream=request, stdout_as_string=False)
    for name, line in zip(names, out.decode("utf-8", "replace").split("\n"), strict=False):
        parts = line.split(" ")
        # else `NAME missing` or `NAME ambiguous`
        found[name] = (parts[0], parts[1]) if len(parts) == 3 and parts[2].isdigit() else ("", "missing")
    return found


def object_kind(repo: git.Repo, oid: str) -> str:
    """What `oid` names, peeled (an annotated tag is what it tags): `commit`, `tree`, `blob`, or `missing` when this
    repository holds no such object."""
    peeled, commit = f"{oid}^{{}}", f"{oid}^{{commit}}"
    try:
        found = object_types(repo, [oid, peeled, commit])
    except GitCommandError:  # a name git stops on rather than call missing (`HEAD@{99}` past the reflog's end)
        return "missing"
    kinds = {name: kind for name, (_, kind) in found.items() if kind != "missing"}
    if oid not in kinds:
        return "missing"
    # `REV:PATH^{}` reads as a path: then the object itself
    return "commit" if commit in kinds else kinds.get(peeled, kinds[oid])


def commit_exists(repo: git.Repo, commit: str) -> bool:
    # `repo.commit(sha)` accepts any well-formed sha without looking, so ask git whether the object is there.
    try:
        repo.git.rev_parse("--verify", "--quiet", "--end-of-options", f"{commit}^{{commit}}")
        return True
    except (BadName, ValueError, GitCommandError):
        return False


def elsewhere_variables() -> list[str]:
    """The variables of git's environment that have git read this repository's commits from another folder
    (GIT_COMMON_DIR, GIT_OBJECT_DIRECTORY), as `NAME=value`: set, a commit the branch names is "not in" the vault,
    which then looks damaged, and git itself answers the same until they are unset."""
    return [f"{name}={os.environ[name]}" for name in ("GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY") if os.environ.get(name)]


def elsewhere_note() -> str | None:
    """What to say of a commit git does not find while `elsewhere_variables` are set (`NAME=value in the environment
    has git read the commits from there; unset NAME`), or None when none is."""
    elsewhere = elsewhere_variables()
    if not elsewhere:
        return None
    names = " and ".join(v.split("=")[0] for v in elsewhere)
    return f"{' and '.join(elsewhere)} in the environment has git read the commits from there; unset {names}"


def init_repo(path: Path) -> git.Repo:
    """A new repository in `path` (its branch `main`, whatever git's version or `init.defaultBranch`; a clone of an
    empty repository keeps the branch its clone chose), opened with its own folders named to every git command run
    through it: git's environment describing another repository initialised that one again and stopped as a bug in
    Cairn (GIT_DIR, GIT_WORK_TREE), or took the new vault's files into the other repository's staging area
    (GIT_INDEX_FILE). A new repository names its objects by sha1 whatever GIT_DEFAULT_HASH says, and an empty clone
    of a sha256 repository is refused before any commit: gitpython failed the first commit half-way ("Failed to
    parse reference information"), leaving a commit in the clone that the error said was not kept."""
    require_git()
    new, named = not (path / ".git").exists(), _supports_initial_branch()
    # `--`: a folder named `-x` is the folder, not an option of git init
    args = ["git", "init", "-q", *(["--initial-branch=main"] if named else []), "--", str(path)]
    env = {k: v for k, v in os.environ.items() if k not in (*REPOSITORY_VARIABLES, "GIT_DEFAULT_HASH")}
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise CairnError(f"git init failed in {path}: {_last_line(done.stderr)}")
    repo = git.Repo(path, expand_vars=False)
    object_format = object_format_of(repo)
    if object_format != "sha1":
        repo.close()
        raise UnsupportedRepository(
            f"{path} names its objects by {object_format} (extensions.objectFormat), which gitpython, Cairn's git "
            "library, cannot read; make the vault in a new folder, or in the clone of an empty sha1 repository "
            f"(nothing was kept at {path})"
        )
    root = Path(os.path.abspath(path))  # git runs in the work tree: a relative path would be read from there
    own = _git_dir(root)
    repo.git.update_environment(GIT_DIR=str(own), GIT_WORK_TREE=str(root), GIT_INDEX_FILE=str(own / "index"))
    if new and not named:  # git before 2.28 (Ubuntu 20.04's 2.25) has no --initial-branch: its `master` is renamed
        repo.git.symbolic_ref("HEAD", "refs/heads/main")
    return repo


def has_no_refs(path: Path) -> bool:
    """Whether the repository whose work tree is `path` has no commit and no branch or tag yet (`git init`, or a
    clone of an empty repository): `for-each-ref` lists nothing and HEAD names no commit."""
    env = {k: v for k, v in os.environ.items() if k not in REPOSITORY_VARIABLES}
    path = path.absolute()  # --git-dir is read from the -C folder: a relative one would be looked for inside it
    own = ["git", "-C", str(path), f"--git-dir={path / '.git'}"]
    refs = subprocess.run([*own, "for-each-ref", "--count=1"], env=env, capture_output=True, check=False)
    head = subprocess.run([*own, "rev-parse", "-q", "--verify", "HEAD"], env=env, capture_output=True, check=False)
    return refs.returncode == 0 and not refs.stdout.strip() and head.returncode != 0


FALLBACK_IDENTITY = ("Cairn", "cairn@localhost")


def identity_env(repo: git.Repo) -> dict[str, str]:
    """Author and committer for commits Cairn makes itself: the user's git identity, else a named fallback.

    A fresh machine often has no `user.name`; `cairn init` and `cairn demo` must still make their first commit.
    """
    env: dict[str, str] = {}
    for key, var, fallback in (
        ("user.name", "NAME", FALLBACK_IDENTITY[0]),
        ("user.email", "EMAIL", FALLBACK_IDENTITY[1]),
    ):
        try:
            configured = repo.git.config("--get", key).strip()
        except GitCommandError:
            configured = ""
        if not configured and not os.environ.get(f"GIT_AUTHOR_{var}"):
            env[f"GIT_AUTHOR_{var}"] = env[f"GIT_COMMITTER_{var}"] = fallback
    return env


def commit_all(repo: git.Repo, message: str) -> str:
    """Commit every file of the work tree (the template `cairn init` laid down), those git's ignore rules name too: a
    user's own `core.excludesFile` of `*.md` left every example card out of the vault's first commit, and init said
    it "indexed its 0 example cards" (`cairn add` names the rule for the cards written later)."""
    repo.git.add("-A", "--force")
    repo.git.commit("-m", message, "--no-verify", env=identity_env(repo))
    return repo.head.commit.hexsha


def _supports_initial_branch() -> bool:
    try:
        return git.Git().version_info >= (2, 28)
    except GitCommandError:  # pragma: no cover
        return False


def commit_file_to_new_branch(repo: git.Repo, base: str, branch: str, repo_path: str, data: bytes, message: str) -> str:
    """Commit one file on top of `base` as a NEW branch, without touching HEAD, the staging area or the working tree.

    Git plumbing: the blob is written to the object store, the tree is built in a temporary staging area
    (its own GIT_INDEX_FILE), then commit-tree and update-ref with an all-zero old value, so an existing branch is never
    moved. repo_path is relative to the repository root. Returns the new commit.
    """
    import tempfile
    from io import BytesIO

    from gitdb import IStream

    if not _is_valid_branch(repo, branch):
        raise CairnError(
            f"{branch!r} is not a valid branch name (git check-ref-format refuses it); choose another name "
            "(nothing was written)"
        )
    taken = branch_taken(repo, branch)
    if taken is not None:
        where = "" if taken.startswith("refs/heads/") else f" on a remote ({taken.removeprefix('refs/remotes/')})"
        raise CairnError(f"branch {branch!r} already exists{where}; choose another name (nothing was written)")
    blob = repo.odb.store(IStream("blob", len(data), BytesIO(data))).binsha.hex()
    with tempfile.TemporaryDirectory(prefix="cairn-staging-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index"), **identity_env(repo)}
        try:
            repo.git.read_tree(base, env=env)
            repo.git.update_index("--add", "--cacheinfo", "100644", blob, repo_path, env=env)
            tree = repo.git.write_tree(env=env)
            commit = repo.git.commit_tree(tree, "-p", base, "-m", message, *_signing(repo), env=env).strip()
        except GitCommandError as exc:
            raise CairnError(f"git could not make the commit: {_last_line(exc.stderr)}") from None
    try:
        repo.git.update_ref("-m", "cairn: new draft branch", f"refs/heads/{branch}", commit, "0" * len(commit))
    except GitCommandError as exc:
        raise CairnError(f"git could not create branch {branch!r}: {_last_line(exc.stderr)}") from None
    return str(commit)


def _signing(repo: git.Repo) -> list[str]:
    """`-S` where the user's `commit.gpgSign` asks every commit to be signed: `git commit` reads it, but `git
    commit-tree`, the plumbing a draft is made with, does not (it made the draft unsigned)."""
    try:
        return ["-S"] if repo.git.config("--type=bool", "--get", "commit.gpgsign").strip() == "true" else []
    except GitCommandError:  # not set
        return []


def branch_exists(repo: git.Repo, branch: str) -> bool:
    try:
        repo.git.show_ref("--verify", "--quiet", f"refs/heads/{branch}")
        return True
    except GitCommandError:
        return False


def branch_taken(repo: git.Repo, branch: str) -> str | None:
    """The ref that holds `branch`: the local branch, or a remote's branch as last fetched
    (`refs/remotes/<remote>/<branch>`, beside which a new local branch of that name could not be pushed); or None."""
    if branch_exists(repo, branch):
        return f"refs/heads/{branch}"
    # a pattern's `*` matches within one level: the remote's name, never part of the branch's
    found = repo.git.for_each_ref("--count=1", "--format=%(refname)", f"refs/remotes/*/{branch}").strip()
    return found or None


def _is_valid_branch(repo: git.Repo, branch: str) -> bool:
    try:
        repo.git.check_ref_format("--branch", branch)
        return not branch.startswith("-")
    except GitCommandError:
        return False


def _last_line(text: str | None) -> str:
    lines = [line.strip() for line in (text or "").strip().splitlines() if line.strip()]
    return lines[-1].removeprefix("stderr: ").strip("'") if lines else "unknown error"


# --- git's staging area, for lint inside a pre-commit hook --------------------------------------------------------


def staged_entries(repo: git.Repo, vault: Vault, extra: tuple[str, ...] = ()) -> list[TreeEntry]:
    """Files under the vault's `cards/` (and the vault-relative `extra` paths) as git's staging area holds them.

    This is what the next commit records. Inside a git hook the staging area is the index file git names in
    GIT_INDEX_FILE: a temporary one for `git commit -a` or `git commit PATH`; see `_staging_env` for how the
    variables are honoured. Unmerged paths (a conflict in progress) are left out: they cannot be committed.
    """
    return _entries(_staged_files(repo, vault, (CARDS_DIR, *extra)), vault, staged=True)


def left_out_entries(repo: git.Repo, vault: Vault) -> list[TreeEntry]:
    """Files under the vault's `cards/` that git's sparse checkout leaves out of the work tree (skip-worktree, tagged
    `S` by `git ls-files -t`): committed and unchanged, as the staging area holds them, but in no folder."""
    out = _staged_files(repo, vault, (CARDS_DIR,), "-t")
    return _entries(b"\0".join(r[2:] for r in out.split(b"\0") if r.startswith(b"S ")), vault, staged=True)


def _staged_files(repo: git.Repo, vault: Vault, paths: tuple[str, ...], *options: str) -> bytes:
    """`git ls-files -s -z` (with `options`) of the vault-relative `paths`, read from the vault's own staging area
    (`_staging_env`): a GIT_INDEX_FILE or GIT_DIR that git's hook of another repository set is not this vault's."""
    specs = [f"{vault.prefix}{p}" for p in paths]
    # `core.fsmonitor` is a command git starts to read the index: a repository's own, not Cairn's to run
    out = repo.git.execute(
        ["git", "-c", "core.fsmonitor=false", "ls-files", *options, "-s", "-z", "--full-name", "--", *specs],
        stdout_as_string=False,
        env=_staging_env(vault),
    )
    assert isinstance(out, bytes)
    return out


def read_blobs(repo: git.Repo, vault: Vault, blobs: list[str], limit: int | None = READ_LIMIT) -> dict[str, bytes]:
    """Many blobs' bytes in one `git cat-file --batch` call (staged blobs are already in git's object store); sizes
    are asked first (`--batch-check`), and a blob over `limit` gives only its first `limit + 1` bytes."""
    if not blobs:
        return {}
    found: dict[str, bytes] = {}
    if limit is not None:
        sizes = _blob_sizes(repo, vault, blobs)
        for blob in [b for b in dict.fromkeys(blobs) if sizes.get(b, 0) > limit]:
            found[blob] = _blob_prefix(repo, blob, limit + 1, _staging_env(vault))
        blobs = [b for b in blobs if b not in found and b in sizes]
        if not blobs:
            return found
    found.update(_read_batch(repo, vault, blobs))
    return found


def _blob_sizes(repo: git.Repo, vault: Vault, blobs: list[str]) -> dict[str, int]:
    """Sizes of the blobs git has (`git cat-file --batch-check`); missing ones are left out."""
    with tempfile.TemporaryFile() as request:
        request.write("".join(f"{b}\n" for b in blobs).encode())
        request.seek(0)
        try:  # a blob a partial clone lacks is fetched for its header
            out = repo.git.execute(
                ["git", "cat-file", "--batch-check"], istream=request, stdout_as_string=True, env=_staging_env(vault)
            )
        except GitCommandError as exc:
            raise _unfetched(repo, exc) from None
    sizes: dict[str, int] = {}
    for line in str(out).splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2].isdigit():
            sizes[parts[0]] = int(parts[2])
    return sizes


def _read_batch(repo: git.Repo, vault: Vault, blobs: list[str]) -> dict[str, bytes]:
    with tempfile.TemporaryFile() as request:
        request.write("".join(f"{b}\n" for b in blobs).encode())
        request.seek(0)
        out = repo.git.execute(
            ["git", "cat-file", "--batch"],
            istream=request,
            stdout_as_string=False,
            strip_newline_in_stdout=False,
            env=_staging_env(vault),
        )
    assert isinstance(out, bytes)
    return _parse_batch(out)


def _git_dir(work_tree: Path) -> Path:
    """The repository folder of a work tree: `.git`, or where a `.git` file points (linked worktrees, submodules)."""
    dot_git = work_tree / ".git"
    if dot_git.is_file():
        text = dot_git.read_text("utf-8", "replace").strip()
        if text.startswith("gitdir:"):
            return (work_tree / text[len("gitdir:") :].strip()).resolve()
    return dot_git.resolve()


def _staging_env(vault: Vault) -> dict[str, str]:
    """GIT_DIR, GIT_WORK_TREE and GIT_INDEX_FILE (where git keeps the staging area) for reading the vault's staged
    files, all absolute.

    git runs a pre-commit hook from the work tree's root with GIT_INDEX_FILE set (relative, `.git/index`, or
    absolute, `.git/index.lock` for `git commit -a`) and, in some setups, GIT_DIR. Those variables describe the
    repository being committed to; they are honoured only when it is the vault's repository (so `--vault` pointing
    at another repository from inside a hook reads that repository's own staging area), and always passed on
    explicitly.
    """
    assert vault.git_root is not None
    git_dir = _git_dir(vault.git_root)
    staging = git_dir / "index"
    env_staging = os.environ.get("GIT_INDEX_FILE")
    if env_staging and _env_repo_is(git_dir, vault.git_root):
        staging = Path(os.path.abspath(env_staging))  # relative to the current folder, as git reads it
    return {
        "GIT_DIR": str(git_dir),
        "GIT_WORK_TREE": str(vault.git_root),
        "GIT_INDEX_FILE": str(staging),
        "GIT_LITERAL_PATHSPECS": "1",
    }


def stored_text(vault: Vault, rel_path: str, data: bytes) -> bytes:
    """A working-tree file of the vault as git stores it, for a file that is not UTF-8: one whose `.gitattributes`
    give it a `working-tree-encoding` (`UTF-16`, `SHIFT-JIS`) is checked out in that encoding and stored, staged and
    committed as UTF-8, so lint and `--worktree` read what the index will (they refused such a card, "save it as
    UTF-8", that the commit, the index and the hook read as a good one). `data` itself when it is UTF-8 (no git
    command then), when no such attribute applies, or when it names an encoding Python lacks or `data` is not in
    it (git refuses to add such a file)."""
    try:
        data.decode("utf-8")
        return data
    except UnicodeDecodeError:
        pass
    encoding = working_tree_encoding(vault, rel_path)
    if encoding is None:
        return data
    try:
        text = data.decode(_codec(encoding)[0])
    except (LookupError, UnicodeDecodeError):
        return data
    return text.removeprefix("\ufeff").encode("utf-8")


def checked_out_text(vault: Vault, rel_path: str, text: str) -> bytes:
    """`text` as git checks the vault's file `rel_path` out: see `encoded_as_checked_out`."""
    return encoded_as_checked_out(text, working_tree_encoding(vault, rel_path))


def encoded_as_checked_out(text: str, encoding: str | None) -> bytes:
    """`text` as git checks out a file whose `working-tree-encoding` is `encoding`: UTF-8 when None, else that
    encoding, with the byte order mark git requires of `UTF-16` (a new card written as UTF-8 there made `git add`
    fail, "BOM is required"). Raises LookupError for an encoding Python lacks, UnicodeEncodeError for text the
    encoding cannot hold."""
    if encoding is None:
        return text.encode("utf-8")
    codec, with_bom = _codec(encoding)
    return (("\ufeff" if with_bom else "") + text).encode(codec)


def working_tree_encoding(vault: Vault, rel_path: str) -> str | None:
    """The `working-tree-encoding` the vault's `.gitattributes` give `rel_path` (`UTF-16`), or None: none, or no git."""
    return working_tree_encodings(vault, [rel_path])[rel_path]


def working_tree_encodings(vault: Vault, rel_paths: Sequence[str]) -> dict[str, str | None]:
    """`working_tree_encoding` of each of `rel_paths`, from one `git check-attr` (an import of 3,500 cards ran 3,500
    of them, a quarter of its time). `check-attr` runs no filter: it reads the attribute files alone (and no
    `core.fsmonitor`, a command git would start to read the index)."""
    found: dict[str, str | None] = dict.fromkeys(rel_paths)
    if not found or vault.git_root is None or shutil.which("git") is None:
        return found
    try:
        out = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", "check-attr", "-z", "--stdin", "working-tree-encoding"],
            cwd=vault.git_root,
            env={**os.environ, **_staging_env(vault)},
            input=b"".join(f"{vault.prefix}{rel}".encode("utf-8", "surrogateescape") + b"\0" for rel in found),
            capture_output=True,
            check=False,
        ).stdout.split(b"\0")
    except OSError:
        return found
    # One `path NUL attribute NUL value NUL` per path, in the order the paths were given; a git that failed gave
    # none, and those paths stay None, as one that failed for a single path left it.
    for rel, encoding in zip(found, (v.decode("ascii", "replace") for v in out[2::3]), strict=False):
        found[rel] = None if encoding in ("", "unspecified", "set", "unset") else encoding
    return found


def _codec(encoding: str) -> tuple[str, bool]:
    """Python's codec for git's encoding name, and whether git puts a byte order mark before the text: its
    `UTF-16LE-BOM` is little-endian with one; Python's `utf-16` and `utf-32` write theirs themselves."""
    with_bom = encoding.upper().endswith("-BOM")
    return (encoding[: -len("-BOM")] if with_bom else encoding), with_bom


def _env_repo_is(git_dir: Path, work_tree: Path) -> bool:
    """Whether the repository git's environment describes (GIT_DIR, else the one around the cwd) is this one."""
    env_dir = os.environ.get("GIT_DIR")
    if env_dir:
        return Path(os.path.realpath(env_dir)) == git_dir
    cwd = Path.cwd().resolve()
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder == work_tree
    return False


def hooks_dir(vault: Vault) -> Path:
    """Where git looks for this repository's hooks: `core.hooksPath` when set, else `.git/hooks` (worktrees too)."""
    with open_repo(vault) as repo:
        out = repo.git.rev_parse("--git-path", "hooks")
        path = Path(out)
        # Relative to the folder git ran in: the work tree, or the git folder itself when `core.bare` is set
        return path if path.is_absolute() else Path(repo.working_dir) / path


def own_hooks_dir(vault: Vault) -> Path | None:
    """The repository's own hooks folder (the common `.git/hooks`, which pre-commit installs into) when
    `core.hooksPath` is set, at any level and to any value, else None: pre-commit then refuses to install at all."""
    with open_repo(vault) as repo:
        try:
            repo.git.config("--get", "core.hooksPath")
        except GitCommandError:  # not set
            return None
        return Path(repo.common_dir).resolve() / "hooks"


def last_commit_day(path: Path) -> str | None:
    """The day (YYYY-MM-DD, committer date) of the last commit that changed the file at `path`, when the file is
    tracked in a git repository and its bytes are HEAD's; else None. `cairn import` dates imported lessons by it.

    The repository is anyone's (a project downloaded with its `.git`), so no git command that runs what its config
    names: `git status` runs `core.fsmonitor` and the clean filters of `.gitattributes`; the file's blob id is
    compared with HEAD's (`hash-object --no-filters`, `ls-tree`) instead. A file that a filter (CRLF) changes on
    checkout reads as changed: dated today."""
    require_git()
    try:
        repo = git.Repo(path.resolve().parent, search_parent_directories=True, expand_vars=False)
    except (InvalidGitRepositoryError, NoSuchPathError):
        return None
    with repo:
        return _last_commit_day(repo, path)


def _last_commit_day(repo: git.Repo, path: Path) -> str | None:
    if repo.working_tree_dir is None:
        return None
    root = Path(repo.working_tree_dir).resolve()
    git_dir = _git_dir(root)  # git's environment may describe another repository (a hook's): name this one
    env = {"GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(root), "GIT_INDEX_FILE": str(git_dir / "index")}
    env["GIT_LITERAL_PATHSPECS"] = "1"
    try:
        rel = path.resolve().relative_to(root).as_posix()
        entry = str(repo.git.ls_tree("-z", "HEAD", "--", rel, env=env)).rstrip("\0")
        meta, _, listed = entry.partition("\t")
        if listed != rel or meta.split(" ")[1:2] != ["blob"]:
            return None  # not in HEAD, or not a file there
        current = str(repo.git.hash_object("--no-filters", "--", str(path.resolve()), env=env)).strip()
        if meta.split(" ")[2:3] != [current]:
            return None  # changed since HEAD (staged or not)
        # `log.showSignature = true` would print git's verdict on a signed commit before the day
        day = str(repo.git.log("-1", "--no-show-signature", "--format=%cd", "--date=short", "--", rel, env=env)).strip()
    except (GitCommandError, ValueError):
        return None
    return day or None


def is_ignored(path: Path) -> bool | None:
    """Whether git ignores the file at `path` in the work tree it is in (`git check-ignore`); None outside one, and
    without a git to ask."""
    rule = _ignore_rule(path)
    return rule if rule is None else bool(rule)


def ignore_rule(path: Path) -> str | None:
    """The rule by which git ignores the file at `path`, as `PATTERN in FILE, line N` (FILE absolute: a `.gitignore`
    of the repository, its `info/exclude`, or the user's `core.excludesFile`), for a message that tells the user
    what to change; None when git does not ignore it, outside a work tree, and without a git to ask."""
    return _ignore_rule(path) or None


def _ignore_rule(path: Path) -> str | None:
    """`ignore_rule`, or "" when git does not ignore the file; None when git cannot tell."""
    if shutil.which("git") is None:
        return None
    folder = path.parent
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    try:
        repo = git.Repo(folder, search_parent_directories=True, expand_vars=False)
    except (InvalidGitRepositoryError, NoSuchPathError):
        return None
    with repo:
        if repo.working_tree_dir is None:
            return None
        root = Path(repo.working_tree_dir).resolve()
        git_dir = _git_dir(root)  # git's environment may describe another repository (a hook's): name this one
        env = {"GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(root)}  # check-ignore takes no pathspec magic
        try:
            rel = (folder.resolve() / path.relative_to(folder)).relative_to(root).as_posix()
            # the project's own config is not ours to run: `core.fsmonitor` is a command git starts to read the index
            with tempfile.TemporaryFile() as request:  # -z (fields that may hold `:`) takes the path on stdin
                request.write(rel.encode("utf-8", "surrogateescape") + b"\0")
                request.seek(0)
                out = repo.git.execute(
                    ["git", "-c", "core.fsmonitor=false", "check-ignore", "-v", "-z", "--stdin"],
                    env=env,
                    istream=request,
                    stdout_as_string=False,
                )
        except GitCommandError as exc:
            return "" if exc.status == 1 else None  # 1: not ignored; 128: git could not tell
        except ValueError:
            return None
    source, line, pattern = out.decode("utf-8", "replace").split("\0")[:3]  # SOURCE, LINE, PATTERN, PATH
    if pattern.startswith("!"):  # a negated rule matched last: git keeps the file
        return ""
    return f"`{pattern}` in {root / source}, line {line}"  # `root / source` keeps a source that is absolute
