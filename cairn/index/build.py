"""Building the index from a commit's tree, and updating it from the cached commit through the git diff."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import errno
import json
import os
import stat
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cairn import gitrepo
from cairn.atomic import disk_fix
from cairn.cards.card import (
    MAX_CARD_BYTES,
    Card,
    card_id_from_path,
    file_key,
    misnamed_card_id,
    oversize_finding,
    parse_card,
)
from cairn.config import (
    CONFIG_FILE,
    Config,
    VaultConfigError,
    folder_error,
    parse_config,
    symlink_error,
    worktree_config_text,
)
from cairn.finding import Finding
from cairn.hot import build_name, paths
from cairn.hot.errors import CairnError, IndexCorrupt, IndexMissing, IndexStale, InvalidConfig
from cairn.hot.index import IndexReader
from cairn.hot.serve import blob_id
from cairn.hot.vault import CARDS_DIR, Vault, sparse_checkout, worktree_card_files, worktree_rel
from cairn.index import cardread, expiry, provenance, refcache, store
from cairn.index.cardread import card_terms
from cairn.lint import security

if TYPE_CHECKING:  # gitpython is imported by `cairn.gitrepo` alone (it quiets gitpython's check for git)
    import git

    from cairn.semantic.vectors import Outcome

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What `cairn index` did. mode is `full`, `incremental`, `unchanged` or `diverged` (the served ref is a
    remote-tracking branch whose new commit `refused_commit` does not descend from the indexed one: a force-push;
    the index is left as it was until `--rebuild`), or, for a command that only reads, `behind` (another process
    held the writer lock past `store.READ_WAIT_SECONDS`, and the index is a whole one of an older commit of the
    served ref, which is at `branch_commit`: read as it is, `open_index`)."""

    index_file: Path
    commit: str
    mode: str
    n_cards: int
    read: int
    removed: int
    problems: tuple[Finding, ...] = ()
    seconds: float = 0.0
    previous_commit: str | None = None
    changed_ids: tuple[str, ...] = field(default=())
    refused_commit: str | None = None
    vectors: Outcome | None = None  # what became of the card vectors (`semantic.vectors.refresh_after_index`)
    branch_commit: str | None = None  # `behind`: the served ref's commit, which another process is indexing


def index_file_for(vault: Vault, worktree: bool = False, ref: str | None = None) -> Path:
    """The vault's index file: the served ref's, the working tree's, or (`ref`, for authors) another ref's own."""
    path = paths.index_path(vault.root)
    if worktree:
        return path.with_name("worktree.cairn")
    if ref is not None:
        return path.with_name(f"ref-{paths.sha256_hex(ref.encode('utf-8', 'surrogateescape'))[:16]}.cairn")
    return path


# Beside the served ref's index: a background update is queued behind another writer (`queue_update`).
QUEUED_SUFFIX = ".queued"


def queue_update(vault: Vault) -> bool:
    """Whether to start a background update of the served ref's index while another writer holds it: False when one
    already waits for the lock. At most one waits: each commit made during a long index started its own, each
    waiting up to `store.LOCK_WAIT_SECONDS`; the one that takes the lock reads the served commit then, so it
    indexes every commit made until that moment, and clears the mark (`_unqueue`). A mark older than the longest
    wait is of a process that never took the lock (killed): it is taken over."""
    marker = Path(str(index_file_for(vault)) + QUEUED_SUFFIX)
    try:
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600))
        return True
    except FileExistsError:
        try:
            if 0 <= time.time() - marker.lstat().st_mtime <= store.LOCK_WAIT_SECONDS + 60:
                return False
            os.utime(marker, follow_symlinks=False)
        except OSError:
            pass
        return True
    except OSError:  # no mark can be made (a read-only cache): start one, as before marks
        return True


def _unqueue(index_file: Path) -> None:
    try:
        os.unlink(str(index_file) + QUEUED_SUFFIX)
    except OSError:
        pass


def served_commit(vault: Vault, repo: git.Repo | None = None, ref: str | None = None) -> tuple[str, str]:
    """(ref name, commit) the vault's index is built from: `ref` when given (`HEAD` for an author's branch), else
    the served ref (the user configuration's `ref` for this vault, else the reviewed default branch)."""
    from cairn.hot.gitrefs import served_ref
    from cairn.hot.vault import missing_ref, unreadable_ref_file
    from cairn.userconfig import configured_ref, entry_for, serve_another

    if ref is not None and not ref.strip():  # an unset variable (`--ref "$REF"`): not the default branch
        raise CairnError("the ref given is empty; give a branch, tag or commit (or leave --ref out for the served ref)")
    if repo is None:
        with gitrepo.open_repo(vault) as opened:
            return served_commit(vault, opened, ref)
    assert vault.git_root is not None
    configured = ref if ref is not None else configured_ref(vault.root)
    name, commit = served_ref(vault.git_root, configured)
    # The files name an object; whether git holds it, and as a commit, only git can tell (a tree's or a blob's id,
    # or a branch left naming a lost commit, was a ValueError "bug in Cairn" further on)
    if commit is not None and not gitrepo.commit_exists(repo, commit):
        elsewhere = gitrepo.elsewhere_note()
        if elsewhere:  # not the repository's damage: git was told to read its commits from another folder
            raise CairnError(f"{name} names {commit}, which git does not find: {elsewhere}, then run this again")
        if commit != name.lower():
            raise CairnError(
                f"{name} names {commit}, which is not a commit this repository holds (damaged or incomplete? "
                "`git fsck` says); point it at a commit again (`git branch -f`, `git fetch`), then run this again"
            )
        commit = None  # an object id given as the ref: said below as any ref that names no commit
    if commit is None:  # what the files alone cannot tell (a loose annotated tag, a reftable repository): ask git
        for checked in dict.fromkeys(("HEAD", name)):
            odd = unreadable_ref_file(vault.git_root, checked)
            if odd is not None:  # git would wait on it, or read it without end
                raise CairnError(
                    f"{odd} is not a regular file (a FIFO or a device?), so git cannot read {checked} from it; "
                    "remove it and point the branch at its commit again (`git branch -f`), then run this again"
                )
        try:
            commit = gitrepo.resolve_commit(repo, name)
        except CairnError:
            if ref is not None:  # --ref: the author's own revision, read as git reads it (HEAD~1, @, a short id)
                try:
                    commit = gitrepo.resolve_commit(repo, ref.strip())
                    return commit, commit  # served as its commit, as a full commit id given as --ref is
                except CairnError:
                    pass
                kind = gitrepo.object_kind(repo, ref.strip())
                if kind not in ("commit", "missing"):  # `HEAD^{tree}`, `main:cards`, a blob's id
                    raise CairnError(
                        f"the ref {ref!r} names a {kind}, not a commit; give a branch, tag or commit"
                    ) from None
                raise CairnError(
                    f"the ref {ref!r} names no commit in {vault.git_root}; give a branch, tag or commit that exists"
                ) from None
            entry = entry_for(vault.root)
            set_ref = serve_another(entry) if entry else None
            raise CairnError(
                str(missing_ref(vault.git_root, name, configured, set_ref, vault_root=vault.root))
            ) from None
    return name, commit


def build_index(
    vault: Vault,
    *,
    rebuild: bool = False,
    progress: Progress | None = None,
    ref: str | None = None,
    lock_wait: float | None = None,
    jobs: int | None = None,
    reading: bool = False,
) -> IndexReport:
    """Bring the cache up to the served ref's commit (or `ref`'s, in that ref's own file): incrementally when a
    usable index exists, else in full. A commit on a feature branch is not served until it is merged. lock_wait:
    the seconds to wait for another writer of the index before `store.IndexBusy` (default `LOCK_WAIT_SECONDS`). jobs:
    the worker processes that read cards (`cardread.workers_for`; default: one a usable core, for many cards).
    reading: for a command that only reads the served ref's index (`open_index`): when it is current it is taken
    without the writer lock, so a read does not wait out another process's `cairn index --rebuild`; when it is
    behind the served ref and another process holds the lock past `store.READ_WAIT_SECONDS`, a whole index of an
    older commit of that ref is reported `behind` rather than waited for."""
    started = time.perf_counter()
    with gitrepo.open_repo(vault) as repo:
        report = _build_index(repo, vault, rebuild, progress, ref, started, lock_wait, jobs, reading)
    # the other refs' index files an author asked for once are not kept for good
    refcache.prune(report.index_file.parent, report.index_file if ref is not None else None, vault.git_root)
    return report


def _build_index(
    repo: git.Repo,
    vault: Vault,
    rebuild: bool,
    progress: Progress | None,
    ref: str | None,
    started: float,
    lock_wait: float | None = None,
    jobs: int | None = None,
    reading: bool = False,
) -> IndexReport:
    ref_name, commit = served_commit(vault, repo, ref)
    target = index_file_for(vault, ref=None if ref is None else ref_name)
    _retire_sqlite_cache(target)
    # A ref's own index is only "used" when its lock is taken (`refcache`): a read of it takes the lock as before.
    reader = reading and not rebuild and ref is None
    if reader:
        current = _current_unlocked(repo, vault, target, ref_name, commit)
        if current is not None:
            return dataclasses.replace(_timed(current, started), vectors=_semantic_vectors(target))
    with contextlib.ExitStack() as locked:
        behind = _lock_or_behind(locked, repo, vault, target, ref_name, commit) if reader else None
        if behind is not None:
            return dataclasses.replace(behind, seconds=round(time.perf_counter() - started, 3))
        if not reader:
            locked.enter_context(store.writer_lock(target, lock_wait))
        _unqueue(target)  # before the commit is read: an update queued until now is this one
        # Read again under the lock: the branch may have moved while this waited, and the index of the newer commit
        # another writer made meanwhile was rebuilt from scratch at the older one (stale: nothing served), or, for a
        # remote branch, refused as a force-push.
        ref_name, commit = served_commit(vault, repo, ref)
        base = None if rebuild else _usable_base(target, vault, repo)
        if base is not None and base.commit != commit and not gitrepo.is_ancestor(repo, base.commit, commit):
            # Only the same branch can have been rewritten: an index of another ref (the served ref switched, to
            # `origin/main` once `origin/HEAD` is set, or by a configured `ref`) is simply replaced.
            same_ref = base.meta.get("ref") in (None, ref_name)
            if ref is None and ref_name.startswith("refs/remotes/") and same_ref:
                # The team's branch was rewritten (a force-push): keep serving what was reviewed until someone
                # decides (`cairn index --rebuild`); a plain `git pull` must not swap the lessons silently.
                kept = IndexReport(target, base.commit, "diverged", base.n_cards, 0, 0, _stored_problems(base))
                base.close()
                return _timed(kept, started, refused_commit=commit)
            # History was rewritten or HEAD moved back: stored provenance may name commits HEAD no longer has.
            base.close()
            base = None
        try:
            config = _config_at(repo, commit, vault)
        except InvalidConfig as exc:  # serve nothing from a vault whose committed settings cannot be read
            if base is not None:
                base.close()
            refused = {**_meta(vault, commit, "commit", Config(), config_error=str(exc)), "ref": ref_name}
            problems = [
                (CONFIG_FILE, line, "config-invalid", detail)
                for line, detail in getattr(exc, "problems", ((0, str(exc)),))
            ]
            _write_index(target, refused, [], problems=problems)
            raise
        meta = _served_meta(repo, vault, commit, ref_name, config)
        if base is not None and base.meta.get("security_off") != meta["security_off"]:
            # Other security rules run now (the vault's cairn.toml or the user's leave changed): a card kept, or
            # refused, under the old ones may not be under these, whether or not the diff names it.
            base.close()
            base = None
        if base is not None and _is_current(base, commit, meta):
            report = IndexReport(target, commit, "unchanged", base.n_cards, 0, 0, _stored_problems(base))
            base.close()
            vectors = _semantic_vectors(target)  # the extra may have been installed since
            return dataclasses.replace(_timed(report, started), vectors=vectors)
        # Same commit with other settings (a Cairn upgrade changed a default): the incremental path rewrites the
        # stored settings and re-reads no card.
        if base is None:
            report = _full_from_commit(vault, repo, commit, target, meta, progress, jobs=jobs)
        else:
            try:
                report = _incremental(vault, repo, base, commit, target, meta, progress, jobs)
            except IndexCorrupt:  # the base fails a check only an update reads far enough to make: start over
                report = _full_from_commit(vault, repo, commit, target, meta, progress, jobs=jobs)
        vectors = _semantic_vectors(target)
    return dataclasses.replace(_timed(report, started), vectors=vectors)


def _current_unlocked(repo: git.Repo, vault: Vault, target: Path, ref_name: str, commit: str) -> IndexReport | None:
    """The `unchanged` report when the index at `target` is already the one `_build_index` would keep for `commit`,
    checked without the writer lock; None when it must be taken (to write, or to wait for a writer). Safe unlocked:
    writers replace the file whole (`os.replace`), the file's seal after it, so a file read while a writer runs is
    the old whole file or the new one, and one whose seal is not yet its own fails `_usable_base` (the lock then)."""
    base = _usable_base(target, vault, repo)
    if base is None:
        return None
    with base:
        if base.commit != commit:
            return None
        try:
            config = _config_at(repo, commit, vault)
        except InvalidConfig:
            return None
        if not _is_current(base, commit, _served_meta(repo, vault, commit, ref_name, config)):
            return None
        return IndexReport(target, commit, "unchanged", base.n_cards, 0, 0, _stored_problems(base))


def _lock_or_behind(
    locked: contextlib.ExitStack, repo: git.Repo, vault: Vault, target: Path, ref_name: str, commit: str
) -> IndexReport | None:
    """For a reader whose index is not current: the writer lock taken in `locked` (None), or, when another process
    holds it past `store.READ_WAIT_SECONDS` (a long `cairn index --rebuild`), the `behind` report of the index at
    `target` when it is a whole, checked index of an older commit of the served ref, kept with the settings it
    would be kept with now (`unchanged` when it is of the served commit by then); else the lock is waited for as a
    writer waits. Safe unlocked as `_current_unlocked`."""
    try:
        locked.enter_context(store.writer_lock(target, store.READ_WAIT_SECONDS))
        return None
    except store.IndexBusy:
        pass
    base = _usable_base(target, vault, repo)
    if base is not None:
        with base:
            try:
                config = _config_at(repo, base.commit, vault)
            except InvalidConfig:
                config = None
            if (
                config is not None
                and gitrepo.is_ancestor(repo, base.commit, commit)
                and _is_current(base, base.commit, _served_meta(repo, vault, base.commit, ref_name, config))
            ):
                if base.commit == commit:  # its writer put it in place during the wait, and still holds the lock
                    return IndexReport(target, commit, "unchanged", base.n_cards, 0, 0, _stored_problems(base))
                kept = IndexReport(target, base.commit, "behind", base.n_cards, 0, 0, _stored_problems(base))
                return dataclasses.replace(kept, branch_commit=commit)
    locked.enter_context(store.writer_lock(target))
    return None


def _served_meta(repo: git.Repo, vault: Vault, commit: str, ref_name: str, config: Config) -> dict[str, str]:
    """The meta of the index of `commit` served as `ref_name`."""
    return {**_meta(vault, commit, "commit", config), "ref": ref_name, "shallow": _shallow_mark(repo)}


def _is_current(base: IndexReader, commit: str, meta: dict[str, str]) -> bool:
    """Whether `base` is the index of `commit` with the settings of `meta`: nothing to read again (`unchanged`)."""
    # the ref too: an index of `refs/heads/main` went on naming it after the branch was deleted (HEAD served)
    keys = ("security_off", "config", "cairn_version", "security_allowed", "ref")
    return base.commit == commit and all(base.meta.get(key) == meta[key] for key in keys)


def _semantic_vectors(target: Path) -> Outcome:
    """The optional semantic channel's card vectors, in a side file next to the index (nothing without the extra;
    see cairn/semantic/vectors.py). Never fails the index: the hook then serves lexically. Returns what happened."""
    from cairn.semantic.vectors import refresh_after_index

    return refresh_after_index(target)


def build_commit_index(
    vault: Vault,
    commit: str,
    target: Path,
    progress: Progress | None = None,
    provenance_of: Collection[str] | None = None,
) -> IndexReport:
    """A full index of any commit (cards and cairn.toml as that commit holds them) written to `target`.

    For comparing two commits (`cairn review`); the vault's cached index is not touched. `provenance_of`: the card
    paths whose provenance is wanted (the others get none), so a review of one card does not read every older
    version of every card.
    """
    started = time.perf_counter()
    with gitrepo.open_repo(vault) as repo:
        commit = gitrepo.resolve_commit(repo, commit)
        meta = _meta(vault, commit, "commit", _config_at(repo, commit, vault))
        with store.writer_lock(target):
            report = _full_from_commit(vault, repo, commit, target, meta, progress, provenance_of)
    return _timed(report, started)


def build_worktree_index(vault: Vault, progress: Progress | None = None) -> IndexReport:
    """Index the working tree (uncommitted edits included), for authors; never used by the hook."""
    started = time.perf_counter()
    target = index_file_for(vault, worktree=True)
    config = _parsed_config(vault, worktree_config_text(vault.root))
    files = list(worktree_card_files(vault))
    upserts: list[store.CardTerms] = []
    problems: list[Finding] = []

    def take(rel: str, card: Card | None, findings: list[Finding], data: bytes) -> None:
        if card is not None:
            findings += security.refusals(rel, data, card, config.lint.disable)
            card = None if findings else card
        problems.extend(findings)
        if card is not None:  # the file's object id: `served_file` gives its path while it holds what was read
            upserts.append(card_terms(card, blob_id(data)))

    for done, file in enumerate(files, 1):
        rel = worktree_rel(vault, file)
        if rel == CARDS_DIR:  # cards/ itself a symlink (`worktree_card_files` lists it): as the commit's index says
            why = "cards/ must be a folder, not a symlink or a file; no card is read through it"
            problems.append(Finding(rel, 0, "file-symlink", why))
            continue
        if not _read_as_card(rel):
            continue
        card, findings = read_worktree_card(vault, file)
        take(rel, card, findings, gitrepo.stored_text(vault, rel, file.read_bytes()) if card is not None else b"")
        if progress:
            progress(done, len(files))
    for rel, data in _left_out_cards(vault).items():
        take(rel, *parse_card(rel, data), data)
    problems = _with_free_names(problems, [worktree_rel(vault, file) for file in files])
    meta = _meta(vault, "worktree", "worktree", config)
    with store.writer_lock(target):
        _write_index(target, meta, upserts, problems=[_problem_row(f) for f in problems])
    return _timed(IndexReport(target, "worktree", "full", len(upserts), len(files), 0, tuple(problems)), started)


def _left_out_cards(vault: Vault) -> dict[str, bytes]:
    """The card files git's sparse checkout leaves out of the work tree, as the staging area holds them: committed
    and unchanged (git reads them so), the working tree's cards all the same."""
    if vault.git_root is None or not sparse_checkout(vault.git_root):
        return {}
    with gitrepo.open_repo(vault) as repo:
        entries = [
            e
            for e in gitrepo.left_out_entries(repo, vault)
            if e.mode not in (gitrepo.SYMLINK_MODE, gitrepo.SUBMODULE_MODE) and card_id_from_path(e.path) is not None
        ]
        data = gitrepo.read_blobs(repo, vault, [e.blob for e in entries])
    return {e.path: data[e.blob] for e in entries if e.blob in data}


def read_worktree_card(vault: Vault, file: Path) -> tuple[Card | None, list[Finding]]:
    """Read one card file from the working tree; symlinks and files outside `cards/` are findings."""
    rel = worktree_rel(vault, file) if file.is_relative_to(vault.root) else str(file)
    if file.is_symlink():
        return None, [Finding(rel, 0, "file-symlink", "a card must be a regular file, not a symlink")]
    real = file.resolve()
    if not (real.is_relative_to(vault.cards_dir.resolve()) and real.is_relative_to(vault.root.resolve())):
        return None, [Finding(rel, 0, "path-outside-cards", "a card is a `.md` file under the vault's cards/")]
    try:
        info = file.stat()
        if not stat.S_ISREG(info.st_mode):  # a FIFO would be waited on for good, a device read without end
            return None, [Finding(rel, 0, "file-unreadable", "a card must be a regular file, not a FIFO or a device")]
        if info.st_size > MAX_CARD_BYTES:  # never read a huge file whole
            return None, [oversize_finding(rel, info.st_size)]
        data = file.read_bytes()
    except OSError as exc:
        return None, [Finding(rel, 0, "file-unreadable", f"cannot read the file: {exc.strerror or exc}")]
    return parse_card(rel, gitrepo.stored_text(vault, rel, data))


def open_index(
    vault: Vault,
    *,
    worktree: bool = False,
    ref: str | None = None,
    served_only: bool = False,
    warn: Callable[[str], None] | None = None,
    progress: Progress | None = None,
) -> IndexReader:
    """The index for reading: for the commit view, brought up to the served ref's commit (or `ref`'s) first.

    served_only: what an agent may read (the MCP server; `cairn recall` and `explain`, which say what an agent
    gets): an index kept at a commit the served ref no longer descends from (a force-push, `build_index`'s
    `diverged`) is refused with what to do, as the prompt hook serves nothing from it. People's other commands read
    it (`show`, `list`, `eval`, `calibrate`), and are told through `warn` that what they read is that kept commit's,
    not what agents get; `cairn index` says it is kept. So with an index behind the served ref while another process
    holds its writer lock (`build_index`'s `behind`): agents' reads are refused with when to try again (the prompt
    hook serves nothing from it either), people's read it and are told through `warn` which commit they read.
    progress: hears the cards read when the index is built or brought up to date (a command's bar on a terminal: a
    large vault's first build takes seconds)."""
    if worktree:
        report = build_worktree_index(vault, progress)
        return IndexReader(report.index_file)
    report = build_index(vault, ref=ref, progress=progress, reading=True)
    if report.mode == "diverged":
        moved = (
            f"the vault's served branch was rewritten (a force-push?): it moved to {(report.refused_commit or '')[:8]}, "
            f"which does not descend from the indexed {report.commit[:8]}"
        )
        if served_only:
            raise IndexStale(
                f"{moved}; agents are served nothing from this vault until a person checks the new history and runs "
                f"`{rebuild_command(vault)}`"
            )
        if warn is not None:
            warn(
                f"{moved}. This reads the cards of {report.commit[:8]}, and agents are served nothing from this "
                f"vault until a person checks the new history and runs `{rebuild_command(vault)}`."
            )
    try:
        reader = IndexReader(report.index_file)
    except IndexCorrupt:
        if report.mode == "behind":  # its writer replaced it as this opened it (the seal after the file): again
            return open_index(vault, ref=ref, served_only=served_only, warn=warn, progress=progress)
        build_index(vault, rebuild=True, ref=ref, progress=progress)
        return IndexReader(report.index_file)
    if report.mode == "behind" and reader.commit == report.commit:  # not the new one its writer put in place since
        behind = (
            f"the index is of {report.commit[:8]}, {reader.meta.get('ref') or 'the served ref'} is at "
            f"{(report.branch_commit or '')[:8]}, and another Cairn process is updating it"
        )
        if served_only:
            reader.close()
            raise store.IndexBusy(
                f"{behind}; agents are served nothing from an index behind its branch (the prompt hook serves "
                "nothing from it either): try again in a moment, when that update ends"
            )
        if warn is not None:
            warn(f"{behind}: this reads the cards of {report.commit[:8]}, not yet those of the newer commit.")
    return reader


def rebuild_command(vault: Vault) -> str:
    """`cairn index --rebuild` of this vault as it runs from any folder (`index_command`)."""
    return index_command(vault, "--rebuild")


def index_command(vault: Vault, option: str = "") -> str:
    """`cairn index` (with `option`) of this vault as it runs from any folder: the commands that say it run outside
    the vault too (recall and explain from a project, `--vault NAME`), where a bare one finds no vault or another."""
    return vault_command(vault, f"index {option}".rstrip())


def vault_command(vault: Vault, command: str) -> str:
    """`cairn COMMAND` (a subcommand and its options) asking this vault, so that it runs as printed from any folder.
    The vault is named as configured, else by its path."""
    import shlex

    from cairn.userconfig import entry_for

    entry = entry_for(vault.root)
    return f"cairn {command} --vault {shlex.quote(entry.name if entry else str(vault.root))}"


def config_of(vault: Vault, *, worktree: bool = False) -> Config:
    """The vault's settings: from the working tree, or from the served ref's commit when the vault is in git."""
    return _parsed_config(vault, *config_source(vault, worktree=worktree))


def config_source(vault: Vault, *, worktree: bool = False) -> tuple[str | None, str | None]:
    """The text of the cairn.toml `config_of` reads (None: there is none) and the commit it is read from (None: the
    working tree)."""
    if worktree or vault.git_root is None:
        return worktree_config_text(vault.root), None
    with gitrepo.open_repo(vault) as repo:
        try:
            commit = served_commit(vault, repo)[1]
        except CairnError:
            return worktree_config_text(vault.root), None
        return _config_text_at(repo, commit, vault), commit


# -- internals ----------------------------------------------------------------------------------------------------


def _retire_sqlite_cache(target: Path) -> None:
    """A vault's cache folder from before format 7 holds `index.sqlite` (an SQLite file) and its side files. The
    card vectors (`index.sqlite.vec`, reused card by card through their blobs) move beside the new index, so no card
    is encoded again; the other old files are removed. Once they are gone this is one `glob` of a small folder."""
    folder = target.parent
    old_vectors = folder / "index.sqlite.vec"
    new_vectors = Path(f"{folder / paths.INDEX_NAME}{paths.VECTORS_SUFFIX}")
    try:
        if old_vectors.is_file() and not new_vectors.exists():
            old_vectors.replace(new_vectors)
        for old in folder.glob("*.sqlite*"):
            old.unlink()
    except OSError:  # an old file another process holds, or a folder we cannot write: the new index does not need it
        pass


def _write_index(target: Path, *args: Any, **kwargs: Any) -> None:
    """store.write_index, with the system's refusals (a full disk, a read-only folder) said as what to do. Not "run
    `cairn index`": the build may be `cairn sync`'s or `recall`'s from another folder, where a bare one finds no
    vault or another, or one of `--ref` or `--worktree`."""
    try:
        store.write_index(target, *args, **kwargs)
    except OSError as exc:
        # the file refused may be another than the index: the cache's key (`index.key`), a lock, a temp file
        culprit = f": {exc.filename}" if exc.filename and os.fspath(exc.filename) != os.fspath(target) else ""
        if culprit and isinstance(exc, IsADirectoryError):  # no space or permission would help: a folder is in the way
            raise CairnError(
                f"cannot write the index at {target}: {exc.filename} is a folder, where Cairn keeps a file of its "
                "own; remove that folder, then run this again"
            ) from None
        fix = (
            "make sure that disk has space and the folder is writable (or point CAIRN_CACHE_DIR elsewhere), "
            "then run this again"
        )
        if exc.errno == errno.EFBIG:  # no space or folder helps: the file size limit (`ulimit -f`)
            fix = disk_fix(exc, fix)
        raise CairnError(f"cannot write the index at {target} ({exc.strerror or exc}{culprit}); {fix}") from None


def _timed(report: IndexReport, started: float, refused_commit: str | None = None) -> IndexReport:
    return IndexReport(
        report.index_file,
        report.commit,
        report.mode,
        report.n_cards,
        report.read,
        report.removed,
        report.problems,
        round(time.perf_counter() - started, 3),
        report.previous_commit,
        report.changed_ids,
        refused_commit or report.refused_commit,
    )


def _config_at(repo: git.Repo, commit: str, vault: Vault) -> Config:
    return _parsed_config(vault, _config_text_at(repo, commit, vault), commit)


def _config_text_at(repo: git.Repo, commit: str, vault: Vault) -> str | None:
    if gitrepo.holds_folder(repo, commit, CONFIG_FILE, vault):
        raise folder_error(commit)
    data = gitrepo.read_path(repo, commit, CONFIG_FILE, vault)
    if data is None:
        return None
    if gitrepo.holds_symlink(repo, commit, CONFIG_FILE, vault):
        raise symlink_error(commit)
    return data.decode("utf-8", "replace")


def _parsed_config(vault: Vault, text: str | None, commit: str | None = None) -> Config:
    """`parse_config` of this vault's cairn.toml: a file of several mistakes names the `cairn lint` that lists each
    as it runs from any folder (recall and index run with `--vault` outside the vault too)."""
    try:
        return parse_config(text, commit=commit)
    except VaultConfigError as exc:
        raise exc.asking(vault_command(vault, "lint")) from None


def _meta(vault: Vault, commit: str, source: str, config: Config, config_error: str = "") -> dict[str, str]:
    """The index's meta; config_error: why the commit's cairn.toml cannot be read (the index then holds no card)."""
    allowed = security.allowed_to_disable()
    off = security.switched_off(config.lint.disable, allowed)
    return {
        "commit": commit,
        "source": source,
        "vault_root": str(vault.root),
        "git_root": str(vault.git_root) if vault.git_root else "",
        "prefix": vault.prefix,
        "built_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "config": json.dumps(config.to_dict(), ensure_ascii=False),
        "provenance": provenance.FORMAT if source == "commit" else "",
        # The stored config has Cairn's defaults filled in: a new version may change them (the hook compares it).
        "cairn_version": build_name(),
        # Cards that fail a security rule are refused (not indexed): new rules must re-read every card.
        "security_rules": security.VERSION,
        # The security rules the commit's cairn.toml switches off with the user's leave, and that leave: the cards
        # they would refuse are in the index only while both hold. A change re-reads every card (`_build_index`);
        # the hook serves nothing from an index whose leave the user's configuration no longer gives.
        "security_off": json.dumps(off),
        "security_allowed": json.dumps(sorted(allowed)) if off else "",
        "config_error": config_error,
    }


def _usable_base(target: Path, vault: Vault, repo: git.Repo) -> IndexReader | None:
    try:
        reader = IndexReader(target)
    except (IndexMissing, IndexCorrupt):
        return None
    try:
        ok = (
            reader.meta.get("source") == "commit"
            and reader.meta.get("vault_root") == str(vault.root)
            and reader.meta.get("prefix") == vault.prefix
            and reader.meta.get("provenance") == provenance.FORMAT
            and reader.meta.get("security_rules") == security.VERSION
            and not reader.meta.get("config_error")
            # provenance read in a shallow clone stops at its boundary: once the clone is deepened (or made shallow),
            # the stored provenance is not what the history now gives, and an update would only join it
            and reader.meta.get("shallow", "") == _shallow_mark(repo)
            and gitrepo.commit_exists(repo, reader.commit)
            and store.checksum_holds(reader, row_seals=False)
        )
    except (IndexCorrupt, KeyError, ValueError):  # a damaged file: rebuild rather than fail
        ok = False
    if not ok:
        reader.close()
        return None
    return reader


def _indexed(reader: IndexReader, path: str) -> bool:
    """Whether the index holds a card at this vault-relative path."""
    card_id = card_id_from_path(path)
    return card_id is not None and reader.record(card_id) is not None


def _shallow_mark(repo: git.Repo) -> str:
    """The boundary of a shallow clone as one short digest ("" for a full clone): what the provenance read."""
    boundary = gitrepo.shallow_commits(repo)
    return paths.sha256_hex("\n".join(sorted(boundary)).encode("ascii"))[:16] if boundary else ""


def _stored_provenance(reader: IndexReader, card_id: str) -> tuple[dict[str, Any] | None, str] | None:
    record = reader.record(card_id)
    return (record["provenance"], record["summary"]) if record is not None else None


def _stored_problems(reader: IndexReader) -> tuple[Finding, ...]:
    return tuple(Finding(path, line, rule, message) for path, line, rule, message in reader.problems())


def _problem_row(finding: Finding) -> tuple[str, int, str, str]:
    return (_problem_path(finding.path), finding.line, finding.rule, finding.message)


def _problem_path(path: str) -> str:
    # A file name with undecodable bytes arrives with surrogates: keep it readable (as `cairn audit` expects).
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _read_entries(
    repo: git.Repo,
    entries: Sequence[gitrepo.TreeEntry],
    progress: Progress | None,
    meta: dict[str, str] | None = None,
    jobs: int | None = None,
) -> tuple[list[store.CardTerms], list[Finding]]:
    """The entries read as cards (`cardread`: in `jobs` worker processes, by default as many as the cores when
    there are many cards), with the findings that kept some out."""
    off = security.switched_off(_disabled_rules(meta))
    upserts: list[store.CardTerms] = []
    problems: list[Finding] = []
    for card, findings in cardread.read_entries(_with_blobs(repo, entries), len(entries), off, jobs, progress):
        problems.extend(findings)
        if card is not None:
            upserts.append(card)
    return upserts, problems


def _with_blobs(
    repo: git.Repo, entries: Sequence[gitrepo.TreeEntry]
) -> Iterator[tuple[gitrepo.TreeEntry, bytes | None]]:
    """Each entry with its blob's bytes when `cardread.needs_blob`, read `_BATCH` blobs a git call (not one round trip
    each), a batch in memory at most."""
    for at in range(0, len(entries), _BATCH):
        batch = entries[at : at + _BATCH]
        prefetched = gitrepo.read_small_blobs(repo, [e.blob for e in batch if cardread.needs_blob(e) and e.size >= 0])
        for entry in batch:
            data = None
            if cardread.needs_blob(entry):
                data = prefetched.get(entry.blob)
                if data is None:  # its size unknown, or git's batch left it out
                    data = gitrepo.read_blob(repo, entry.blob, size=entry.size)
            yield entry, data


_BATCH = 1000  # card blobs read per git call


def _disabled_rules(meta: dict[str, str] | None) -> tuple[str, ...]:
    """The vault's `[lint] disable` at the indexed commit (security rules count only where the user allows it)."""
    try:
        disable = json.loads((meta or {}).get("config") or "{}").get("lint", {}).get("disable", ())
    except (ValueError, AttributeError):
        return ()
    return tuple(str(d) for d in disable) if isinstance(disable, (list, tuple)) else ()


def _with_free_names(problems: list[Finding], paths: Iterable[str]) -> list[Finding]:
    """`problems` with card-path's findings of `.MD` files in lint's words (`card_path.no_card_message`): the parser's
    "rename it to cards/git/x.md" would overwrite the card `x.md` beside `x.MD`; lint names a free one, among the
    cards at `paths`."""
    if not any(f.rule == "card-path" and misnamed_card_id(f.path) is not None for f in problems):
        return problems
    from cairn.lint.rules import card_path

    ids_by_file: dict[str, list[str]] = {}
    for card_id in filter(None, map(card_id_from_path, paths)):
        ids_by_file.setdefault(file_key(card_id), []).append(card_id)
    return [
        dataclasses.replace(f, message=card_path.no_card_message(f.path, ids_by_file))
        if f.rule == "card-path" and misnamed_card_id(f.path) is not None
        else f
        for f in problems
    ]


def _card_entries(repo: git.Repo, commit: str, vault: Vault) -> list[gitrepo.TreeEntry]:
    return [e for e in gitrepo.card_entries(repo, commit, vault) if _read_as_card(e.path)]


def _read_as_card(path: str) -> bool:
    """Whether a file listed under `cards/` is read (as a card, or refused with a finding): a card's path, a card's
    path ending in `.MD` (left out with a finding, not ignored in silence), or `cards` itself as a symlink (or a
    file), so it is refused with a finding rather than read as 0 cards."""
    return card_id_from_path(path) is not None or misnamed_card_id(path) is not None or path == CARDS_DIR


def _full_from_commit(
    vault: Vault,
    repo: git.Repo,
    commit: str,
    target: Path,
    meta: dict[str, str],
    progress: Progress | None,
    provenance_of: Collection[str] | None = None,
    jobs: int | None = None,
) -> IndexReport:
    entries = _card_entries(repo, commit, vault)
    upserts, problems = _read_entries(repo, entries, progress, meta, jobs)
    problems = _with_free_names(problems, [e.path for e in entries])
    paths = [t.path for t in upserts if provenance_of is None or t.path in provenance_of]
    lineages = provenance.walk_history(repo, vault, commit, paths)
    upserts = [expiry.believed(t) for t in provenance.attach(repo, upserts, lineages)]
    _write_index(target, meta, upserts, problems=[_problem_row(f) for f in problems])
    return IndexReport(target, commit, "full", len(upserts), len(entries), 0, tuple(problems))


def _incremental(
    vault: Vault,
    repo: git.Repo,
    base: IndexReader,
    commit: str,
    target: Path,
    meta: dict[str, str],
    progress: Progress | None,
    jobs: int | None = None,
) -> IndexReport:
    previous = base.commit
    changes = gitrepo.changed_cards(repo, previous, commit, vault)
    touched_paths = {p for c in changes for p in (c.old_path, c.new_path) if p}
    removed_ids = {card_id_from_path(c.old_path) for c in changes if c.old_path and c.status in "DRM"}
    new_paths = sorted({c.new_path for c in changes if c.new_path and c.status in "AMR"})
    listing = gitrepo.card_listing(repo, commit, vault)
    head_paths = [path for path in listing if _read_as_card(path)]
    # Cards touched by any new commit get new provenance, even when the diff nets out to nothing.
    lineages = provenance.walk_history(repo, vault, commit, head_paths, since=previous)
    # A card whose path at the indexed commit held no indexed card (its frontmatter broken then, a security
    # refusal, a name like `x.MD` renamed to `x.md`) has no stored provenance to join: its history before that
    # commit is walked too, as a full build walks it, or its creator would be whoever fixed it.
    orphans = [
        path
        for path, lineage in lineages.items()
        if lineage.versions and not lineage.created and not _indexed(base, lineage.origin)
    ]
    if orphans:
        lineages.update(provenance.walk_history(repo, vault, commit, orphans))
    wanted = set(new_paths) | provenance.touched_paths(lineages)
    entries = gitrepo.entries_of(repo, vault, listing, {path for path in head_paths if path in wanted})
    upserts, new_problems = _read_entries(repo, entries, progress, meta, jobs)
    upserts = provenance.attach(repo, upserts, lineages, base=lambda card_id: _stored_provenance(base, card_id))
    upserts = [expiry.believed(t) for t in upserts]
    # Stored problems name their files as `_problem_row` wrote them: a name that is not UTF-8 is compared so too, or
    # the problem of a file renamed or deleted since stayed reported for ever.
    touched_rows = {_problem_path(p) for p in touched_paths}
    kept = [Finding(*p) for p in base.problems() if p[0] not in touched_rows]
    # every `.MD` file's name to take again, its own untouched: a card added under that name takes it
    problems = [_problem_row(f) for f in _with_free_names(kept + new_problems, listing)]
    n_before = base.n_cards
    base_path = base.path
    base.close()
    # Under the writer lock nobody replaces base_path, so it can be copied as the starting point.
    _write_index(target, meta, upserts, removed_ids={i for i in removed_ids if i}, problems=problems, base=base_path)
    reader = IndexReader(target)
    n_after = reader.n_cards
    reader.close()
    changed = tuple(sorted({c.id for c in upserts} | {i for i in removed_ids if i}))
    report_problems = tuple(Finding(*p) for p in problems)
    return IndexReport(
        target,
        commit,
        "incremental",
        n_after,
        len(entries),
        max(0, n_before + len(upserts) - n_after),
        report_problems,
        0.0,
        previous,
        changed,
    )
