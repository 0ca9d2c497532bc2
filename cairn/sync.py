"""`cairn sync`: fetch a vault's served branch from its remote and index it, fast-forward only.

The fetch updates only the served ref (a remote-tracking branch such as `refs/remotes/origin/main`, or a local
branch that is not checked out) and never with force: a remote branch that was rewritten (a force-push) is refused
by git itself, so the served ref, the index and what agents get all stay at the last reviewed commit until someone
decides. The working tree, the staging area and the current branch are never touched.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cairn import githooks, gitrepo
from cairn.hot import paths
from cairn.hot.errors import CairnError, NotAGitRepository
from cairn.hot.index import IndexReader
from cairn.hot.userconfig import VaultEntry, add_again
from cairn.hot.vault import Vault, git_dir
from cairn.index import build as indexer
from cairn.index import store
from cairn.userconfig import serve_another

Say = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class SyncResult:
    """What sync did to one vault. status: `updated` (new commits indexed), `unchanged`, `diverged` (the remote was
    rewritten: the served ref stays, `message` says what to do), `error` (fetch or index failed: the served ref stays).
    When the fetch fails, the index is still brought up to the served ref as it stands (`before` -> `after`)."""

    name: str
    root: str
    ref: str
    status: str
    before: str | None = None
    after: str | None = None
    cards: int | None = None
    fetched: str = ""
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.root,
            "ref": self.ref,
            "status": self.status,
            "before": self.before,
            "after": self.after,
            "cards": self.cards,
            "fetched": self.fetched,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class Fetching:
    """How sync's fetches run. prompt: a person at a terminal may answer git's credential and ssh questions (else
    none can wait for an answer); timeout: seconds a fetch may take before it is stopped and the vault fails."""

    prompt: bool = False
    timeout: float = gitrepo.FETCH_TIMEOUT_SECONDS


def sync_vault(
    vault: Vault,
    name: str,
    say: Say = lambda text: None,
    fetching: Fetching = Fetching(),
    progress: indexer.Progress | None = None,
) -> SyncResult:
    """Fetch the vault's served ref (fast-forward only) and bring its index up to it (`progress` hears the cards it
    reads). Two syncs of one vault take turns (a lock beside its index): at once, one's fetch would fail on the ref
    lock the other's holds."""
    if vault.git_root is None:  # the generic advice names `git init` and --worktree, which sync has no use for
        raise NotAGitRepository(
            f"{vault.root} is not in a git repository (its .git gone?), so there is nothing to fetch into: clone the "
            f"vault there again, or `cairn vault remove {name}`"
        )
    with gitrepo.open_repo(vault) as repo:
        folder = indexer.index_file_for(vault).parent
        paths.private_folder(str(folder))
        with store.file_lock(folder / "sync.lock", f"syncing {name}"):
            return _sync(repo, vault, name, say, fetching, progress)


def _sync(
    repo: Any, vault: Vault, name: str, say: Say, fetching: Fetching, progress: indexer.Progress | None
) -> SyncResult:
    ref, _ = indexer.served_commit(vault, repo)
    switched, indexed = _indexed(vault)
    # an index of another ref (before the served ref switched) is no earlier state of this one: replaced, never
    # called diverged
    before = indexed if switched in (None, ref) else None
    source = _fetch_source(repo, ref)
    fetched = ""
    if source is not None:
        remote, src = source
        fetched = f"{remote} {src}"
        say(f"{name}: fetching {src.removeprefix('refs/heads/')} from {remote}")
        status, stderr = gitrepo.fetch(
            repo,
            [
                "--no-tags",
                "--no-progress",
                "--refmap=",  # only the refspec below: no forced update through the remote's configured refspec
                "--end-of-options",
                remote,
                f"{src}:{ref}",
            ],
            prompt=fetching.prompt,
            timeout=fetching.timeout,
            # The reflog says `cairn sync` moved the ref, and the vault's reference-transaction hook leaves the index
            # to sync, which builds it below (else it would run `cairn index` in the fetch, and sync again).
            env={"GIT_REFLOG_ACTION": "cairn sync"},
        )
        refused = _checked_out(str(stderr)) or _not_fast_forward(str(stderr))
        held = status != 0 and refused and _holds_the_remote(repo, remote, src, ref, fetching)
        if held and not _dropped_by_the_remote(repo, ref, remote, src):
            # Checked out, or ahead with commits not pushed yet: it holds every commit of the remote's already.
            say(f"{name}: {ref} already holds {remote}'s {src.removeprefix('refs/heads/')}")
        elif status != 0:
            indexed = _index_as_it_stands(repo, vault, name, ref, before, say, progress)
            failed = _fetch_failed(repo, vault, name, ref, indexed, remote, src, str(stderr))
            return dataclasses.replace(failed, before=before)
    try:
        _, after = indexer.served_commit(vault, repo)
        if before and before != after and gitrepo.commit_exists(repo, before):
            if not gitrepo.is_ancestor(repo, before, after):
                return SyncResult(
                    name,
                    str(vault.root),
                    ref,
                    "diverged",
                    before,
                    after,
                    fetched=fetched,
                    message=f"{ref} at {after[:8]} does not descend from the indexed {before[:8]} (history was "
                    f"rewritten); agents get nothing from this vault until it is rebuilt. If the new history is right: "
                    f"`cairn index --vault {name} --rebuild`",
                )
        say(f"{name}: indexing {ref} at {after[:8]}")
        report = indexer.build_index(vault, progress=progress)
        if report.mode == "diverged":
            return SyncResult(
                name,
                str(vault.root),
                ref,
                "diverged",
                before,
                before,
                fetched=fetched,
                message=f"{ref} at {after[:8]} does not descend from the indexed {report.commit[:8]} (history was "
                f"rewritten); agents get nothing from this vault until it is rebuilt. If the new history is right: "
                f"`cairn index --vault {name} --rebuild`",
            )
    except CairnError as exc:
        return SyncResult(name, str(vault.root), ref, "error", before, before, fetched=fetched, message=str(exc))
    outcome = "unchanged" if before == report.commit else "updated"
    note = ""
    if switched not in (None, ref):  # `git remote remove origin`, origin/HEAD moved, a branch made or deleted
        another = serve_another(_entry(name, str(vault.root)))
        note = f"it served {switched} until now; {ref} is what it serves now; to serve another ref: `{another}`"
    return SyncResult(name, str(vault.root), ref, outcome, before, report.commit, report.n_cards, fetched, note)


def _index_as_it_stands(
    repo: Any, vault: Vault, name: str, ref: str, before: str | None, say: Say, progress: indexer.Progress | None
) -> str | None:
    """The commit the index holds once it is brought up to the served ref as it stands, when the fetch failed. The
    ref may have moved since the index was built (a `git fetch`, or a commit on the checked-out branch, in a clone
    without Cairn's git hooks): agents get nothing from an index behind it. A rewritten history is left as it was."""
    try:
        _, served = indexer.served_commit(vault, repo)
        if served == before:
            return before
        say(f"{name}: indexing {ref} at {served[:8]}")
        report = indexer.build_index(vault, progress=progress)
    except CairnError:
        return before
    return before if report.mode == "diverged" else report.commit


def _entry(name: str, root: str) -> VaultEntry:
    """The configured entry of the vault at `root`, or one with no ref, scopes or projects (it is not configured)."""
    from cairn.userconfig import entry_for

    return entry_for(root) or VaultEntry(name, root, None, (), ())


def _indexed(vault: Vault) -> tuple[str | None, str | None]:
    """The ref the vault's index was built from and its commit, (None, None) with no readable index."""
    try:
        with IndexReader(indexer.index_file_for(vault)) as reader:
            found = reader.meta.get("ref")
            return (found if isinstance(found, str) else None), reader.commit
    except CairnError:
        return None, None


def _fetch_source(repo: Any, ref: str) -> tuple[str, str] | None:
    """(remote, the remote's ref) that feeds the served ref, or None when nothing does (no remote, a tag)."""
    remotes = sorted(str(repo.git.remote()).split(), key=len, reverse=True)
    if ref.startswith("refs/remotes/"):
        rest = ref[len("refs/remotes/") :]
        for remote in remotes:  # the longest name first: a remote may be called `team/origin`
            if rest.startswith(remote + "/") and rest != f"{remote}/HEAD":
                return remote, f"refs/heads/{rest[len(remote) + 1 :]}"
        return None
    if ref.startswith("refs/heads/"):
        branch = ref[len("refs/heads/") :]
        remote = _config(repo, f"branch.{branch}.remote")
        merge = _config(repo, f"branch.{branch}.merge")
        if remote and merge and remote in remotes:
            return remote, merge
    return None


def _not_fast_forward(stderr: str) -> bool:
    """git refused to move the served ref because the remote's branch does not descend from it."""
    return "non-fast-forward" in stderr or "[rejected]" in stderr


def _checked_out(stderr: str) -> bool:
    """git refused to move the served branch because a work tree has it checked out."""
    return "refusing to fetch into" in stderr or "checked out" in stderr


def _holds_the_remote(repo: Any, remote: str, src: str, ref: str, fetching: Fetching) -> bool:
    """Whether the checked-out served branch already has every commit of the remote's (the author's own vault,
    pushed from there): fetched into FETCH_HEAD alone, nothing of the user's is moved."""
    status, _ = gitrepo.fetch(
        repo,
        ["--no-tags", "--no-progress", "--refmap=", "--end-of-options", remote, src],
        prompt=fetching.prompt,
        timeout=fetching.timeout,
    )
    return status == 0 and gitrepo.is_ancestor(repo, "FETCH_HEAD", ref)


def _dropped_by_the_remote(repo: Any, ref: str, remote: str, src: str) -> bool:
    """Whether the served ref's commits past the remote's branch (in FETCH_HEAD) are all ones the remote held: a
    force-push back to an older commit took them out (a remote-tracking ref's are always the remote's), and they are
    no author's unpushed work to go on serving."""
    return _commits_not_in(repo, ref, "FETCH_HEAD") > 0 and not _own_commits(repo, ref, remote, src, "FETCH_HEAD")


def _rebasing(folder: Path) -> bool:
    """Whether a rebase is under way in a work tree, given its git folder (where git keeps that state)."""
    return (folder / "rebase-merge").is_dir() or (folder / "rebase-apply").is_dir()


def _merging(folder: Path) -> bool:
    """Whether a merge stopped on a conflict is under way in a work tree, given its git folder."""
    return (folder / "MERGE_HEAD").is_file()


def _bisecting(folder: Path) -> bool:
    """Whether a bisect is under way in a work tree, given its git folder (git refuses to move the branch it began on)."""
    return (folder / "BISECT_START").is_file()


def _checked_out_at(stderr: str, root: str) -> str:
    """The work tree that has the served branch checked out, as git's refusal names it: another worktree of the
    repository (`git worktree add`) as well as the vault's own, where a pull in the vault would move another branch."""
    found = re.search(r"checked out at '(.+)'", stderr)
    return found.group(1) if found else root


def _commits_not_in(repo: Any, ref: str, other: str) -> int:
    """How many commits of `ref` `other` lacks (0 when git cannot tell)."""
    status, out, _ = repo.git.rev_list(
        "--count", ref, "--not", other, "--", with_extended_output=True, with_exceptions=False
    )
    return int(str(out).strip()) if status == 0 and str(out).strip().isdigit() else 0


def _config(repo: Any, key: str) -> str:
    status, out, _ = repo.git.config("--get", key, with_extended_output=True, with_exceptions=False)
    return str(out).strip() if status == 0 else ""


def _own_commits(repo: Any, ref: str, remote: str, src: str, *also: str) -> int:
    """How many commits of the local branch `ref` the remote's branch `src` does not hold nor held (as this clone
    saw it), nor `also`: commits not pushed. Another branch of the remote's (a teammate's, fast-forwarded into `ref`)
    is no part of what `src` held."""
    status, out, _ = repo.git.rev_list(
        "--count",
        ref,
        "--not",
        *_tracked(repo, remote, src),
        *also,
        with_extended_output=True,
        with_exceptions=False,
    )
    return int(str(out).strip()) if status == 0 and str(out).strip().isdigit() else 0


def _tracked(repo: Any, remote: str, src: str) -> list[str]:
    """The commits the remote-tracking ref of `remote`'s branch `src` points at and pointed at, as its reflog keeps
    them (none without the ref): a plain `git fetch` of a force-push moves it back, and only the reflog still says
    the remote held the commits it dropped."""
    tracking = f"refs/remotes/{remote}/{src.removeprefix('refs/heads/')}"
    if not gitrepo.commit_exists(repo, tracking):
        return []
    status, out, _ = repo.git.log(
        "--walk-reflogs", "--format=%H", tracking, "--", with_extended_output=True, with_exceptions=False
    )
    return [tracking, *dict.fromkeys(str(out).split() if status == 0 else [])]


def _has_git_hooks(vault: Vault) -> bool:
    """Whether Cairn's git hooks are in the vault's repository and index it (not another work tree's, nor running a
    `cairn` that is gone: `cairn doctor` fails those), so a pull there indexes what it brings."""
    try:
        hooks = gitrepo.hooks_dir(vault)
        return not githooks.missing_git_hooks(hooks) and githooks.idle_git_hooks(vault, hooks, run=False) is None
    except CairnError:
        return False


def _stale_lock(stderr: str) -> str | None:
    """The lock file git's `Unable to create '...lock': File exists` names, else None. Found from its end, not by a
    regex: `'(.+?\\.lock)'` ran from every `Unable to create '` to the end of its line, and a remote's one long line
    of them (git relays its `remote:` lines) kept `cairn sync` searching for hours."""
    opener, closer, after = "Unable to create '", ".lock': File exists", 0
    while (end := stderr.find(closer, after)) >= 0:
        start = stderr.rfind(opener, max(after, stderr.rfind("\n", after, end) + 1), end)
        if start >= 0:
            return stderr[start + len(opener) : end + len(".lock")]
        after = end + len(closer)
    return None


def _fetch_failed(
    repo: Any, vault: Vault, name: str, ref: str, before: str | None, remote: str, src: str, stderr: str
) -> SyncResult:
    branch = src.removeprefix("refs/heads/")
    root = str(vault.root)
    checked_out = _checked_out(stderr)
    where = _checked_out_at(stderr, root) if checked_out else root  # the work tree the branch moves in
    at = shlex.quote(where)
    git_folder = Path((git_dir(where) if where != root else None) or repo.git_dir)
    rewritten = 0  # commits of the checked-out branch the remote held as last fetched, and no longer holds
    if checked_out:  # `_holds_the_remote` fetched the remote's branch into FETCH_HEAD
        own = _commits_not_in(repo, ref, "FETCH_HEAD")
        if own and not _own_commits(repo, ref, remote, src, "FETCH_HEAD"):
            rewritten, own = own, 0
    elif _not_fast_forward(stderr) and ref.startswith("refs/heads/"):
        own = _own_commits(repo, ref, remote, src)
    else:
        own = 0
    # A plain `git pull` stops when both sides have commits ("Need to specify how to reconcile divergent branches"):
    # a branch with commits of its own merges the remote's (its commits are not rewritten), else fast-forwards.
    # `--ff`: a user's `merge.ff = only` or `pull.ff = only` refused the merge ("Not possible to fast-forward").
    pull = f"git -C {at} pull --no-rebase --ff" if own else f"git -C {at} pull --ff-only"
    # What indexes the branch once the user moves it: the vault's git hooks, else the command said after the pull (a
    # clone registered with `cairn vault add` has none: the index stayed behind, and the next prompt got nothing).
    hooked = _has_git_hooks(vault)
    index_after = "" if hooked else f" && cairn index --vault {name}"
    said = " (its git hooks index it)" if hooked else ""
    fetched = f"{remote} {src}"
    if checked_out and (_rebasing(git_folder) or _merging(git_folder) or _bisecting(git_folder)):
        if _rebasing(git_folder):
            what, end = (
                "rebase",
                f"finish it (`git -C {at} rebase --continue`) or abort it (`git -C {at} rebase --abort`)",
            )
        elif _merging(git_folder):
            what, end = "merge", f"finish it (`git -C {at} commit`) or abort it (`git -C {at} merge --abort`)"
        else:  # a pull on the detached HEAD a bisect checks out stops: "You are not currently on a branch"
            what, end = "bisect", f"end it (`git -C {at} bisect reset`)"
        message = (
            f"{remote}'s {branch} has commits that {ref} lacks, and a {what} is under way in {where}, so sync cannot "
            f"move {ref}: {end}, then `{pull}{index_after}`{said}"
        )
        return SyncResult(name, root, ref, "error", before, before, fetched=fetched, message=message)
    if own:
        # A local branch with commits of its own, and the remote's has others: a forced fetch would drop the former.
        served = (before or ref)[:8] if before else ref
        local = ref.removeprefix("refs/heads/")
        switch = "" if checked_out else f"git -C {at} switch {local} && "
        message = (
            f"{ref} has {own} commit{'s' if own != 1 else ''} that {remote}'s {branch} lacks and {remote}'s {branch} "
            f"has commits that {ref} lacks; still serving {served}. Merge them in {where} "
            f"(`{switch}{pull}`; `--rebase` to rebase instead), then `cairn sync {name}`"
        )
        return SyncResult(name, root, ref, "diverged", before, before, fetched=fetched, message=message)
    if rewritten:
        # Each commit the branch holds and the remote dropped was pushed (the remote's branch held it as last
        # fetched): a pull would merge the history the force-push removed back in, a card taken out among it.
        message = (
            f"{remote}'s {branch} was rewritten (a force-push?): it no longer holds {rewritten} commit"
            f"{'s' if rewritten != 1 else ''} of {ref} it held before; still serving "
            f"{(before or ref)[:8] if before else ref}. If the new history is right: `git -C {at} fetch {remote} "
            f"{branch} && git -C {at} reset --keep FETCH_HEAD`, then `cairn index --vault {name} --rebuild`"
        )
        return SyncResult(name, root, ref, "diverged", before, before, fetched=fetched, message=message)
    if _not_fast_forward(stderr):
        message = (
            f"{remote}'s {branch} was rewritten (a force-push?) and is not a fast-forward of {ref}; still serving "
            f"{(before or ref)[:8] if before else ref}. If the new history is right: "
            f"`git -C {at} fetch --force {remote} {branch}:{ref}`, then `cairn index --vault {name} --rebuild`"
        )
        return SyncResult(name, root, ref, "diverged", before, before, fetched=fetched, message=message)
    if checked_out:
        entry = _entry(name, root)
        # origin/HEAD is served only when no ref is configured, and no other remote's HEAD ever is: with `--ref main`,
        # or a remote called `upstream`, setting it changes nothing
        instead = (
            f"`git -C {at} remote set-head {remote} --auto`"
            if entry.ref is None and remote == "origin"
            else f"`{add_again(entry, root, ref=remote + '/' + branch)}`"
        )
        message = (
            f"{remote}'s {branch} has commits that {ref} lacks, and {ref} is checked out in {where}, so sync cannot "
            f"move it: `{pull}{index_after}`{said}, or serve the remote's branch instead ({instead})"
        )
        return SyncResult(name, root, ref, "error", before, before, fetched=fetched, message=message)
    if "couldn't find remote ref" in stderr:  # the remote renamed its branch (master -> main) or deleted it
        entry = _entry(name, root)
        if ref.startswith("refs/remotes/") and entry.ref is None:  # origin/HEAD names the old branch
            fix = (
                f"If {remote}'s default branch is now another: `git -C {at} fetch {remote} && git -C {at} remote "
                f"set-head {remote} --auto`, then `cairn sync {name}`"
            )
        else:
            fix = f"Serve another branch: `{add_again(entry, root, ref='BRANCH')}`"
        message = f"{remote} has no branch {branch} (renamed or deleted?); still serving what was indexed. {fix}"
        return SyncResult(name, root, ref, "error", before, before, fetched=fetched, message=message)
    lock = _stale_lock(stderr)
    if lock is not None:  # a git that was killed midway (a fetch stopped, a crash) leaves its lock behind
        message = (
            f"fetching {branch} from {remote} failed: git's lock {lock} is there, left by a git still running in "
            f"{root} or killed midway; still serving what was indexed. If no git runs there: `rm {shlex.quote(lock)}`, "
            f"then `cairn sync {name}`"
        )
        return SyncResult(name, root, ref, "error", before, before, fetched=fetched, message=message)
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    # git's first line says what failed ("fatal: '/x' does not appear to be a git repository", "ssh: Could not
    # resolve hostname ..."); its last is advice ("and the repository exists.").
    detail = lines[0].removeprefix("fatal: ").removeprefix("error: ")[:300] if lines else "git fetch failed"
    if "terminal prompts disabled" in stderr:  # run from cron, a script or an agent: nobody can type a password
        advice = (
            f"The remote asks for credentials, which only a person at a terminal can give: run `cairn sync {name}` "
            "in one, or set up a git credential helper"
        )
    else:
        advice = f"`git -C {at} fetch {remote}` shows git's whole answer; fix what it names, then `cairn sync {name}`"
    return SyncResult(
        name,
        root,
        ref,
        "error",
        before,
        before,
        fetched=f"{remote} {src}",
        message=f"fetching {branch} from {remote} failed ({detail}); still serving what was indexed. {advice}",
    )
