"""Cairn's git hooks in a vault's repository: after each commit, merge, checkout, rebase and reset they run
`cairn index`, so the next prompt is served the new commit's cards. Never overwrites a hook that is not Cairn's."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from cairn.atomic import write_atomic, write_backup
from cairn.hot.errors import CairnError, RefusedWrite
from cairn.hot.vault import Vault, common_git_dir, shell_word

# post-commit, post-merge, post-checkout and post-rewrite share one script; reference-transaction (git 2.28 and later)
# indexes when a command that runs none of them moves a branch that may be served (a reset, a fast-forward rebase).
GIT_HOOKS = ("post-commit", "post-merge", "post-checkout", "post-rewrite", "reference-transaction")
GIT_HOOK_MARKER = "cairn-index-hook"
# The lines `git_hook_script` fills in: a hook that differs from its template in these alone is Cairn's, unedited.
_FILLED = re.compile(r"^(CAIRN_BIN|CAIRN_VAULT_DIR|CAIRN_WORK_TREE|CAIRN_COMMON_DIR)=.*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class GitHookChange:
    """One git hook file: action `installed`, `updated`, `unchanged`, `chained` (a foreign hook moved to
    `<name>.local` runs first), `removed`, `restored` (the chained hook put back) or `absent`. kept: a copy of the
    file replaced or removed, when it was not Cairn's script as this version writes it (edited by hand, or an older
    Cairn's)."""

    path: Path
    action: str
    kept: Path | None = None

    def __str__(self) -> str:
        copy = f" (what it held before is kept in {self.kept.name})" if self.kept is not None else ""
        return f"{self.action}: {self.path}{copy}"


def git_hook_script(
    executable: str, vault_dir: str, name: str = "post-commit", work_tree: str = "", common_dir: str = ""
) -> str:
    """The git hook `name`'s template with the cairn command, the vault folder (relative to the work tree), the
    work tree (its physical path: git runs hooks there) and its repository's common git folder filled in. A bare
    `cairn` becomes its full path: git runs hooks with the PATH of whatever started it (an IDE, a GUI client), where
    `cairn` may not be, and the hook would then index nothing, silently. With the work tree, the hooks index nothing
    in another repository that shares their folder (a global `core.hooksPath`) and happens to have a `cards/` folder;
    with the common folder, the reference-transaction hook still indexes the vault when another work tree of its
    repository (`git worktree add`) moves a branch it may serve."""
    if os.sep not in executable:
        executable = shutil.which(executable) or executable
    text = resources.files("cairn").joinpath(f"templates/hooks/git/{name}").read_text("utf-8")
    text = text.replace('CAIRN_BIN="cairn"', f"CAIRN_BIN={shlex.quote(executable)}", 1)
    if work_tree:
        text = text.replace('CAIRN_WORK_TREE=""', f"CAIRN_WORK_TREE={shlex.quote(work_tree)}", 1)
    if common_dir:
        text = text.replace('CAIRN_COMMON_DIR=""', f"CAIRN_COMMON_DIR={shlex.quote(common_dir)}", 1)
    return text.replace('CAIRN_VAULT_DIR="."', f"CAIRN_VAULT_DIR={shlex.quote(vault_dir)}", 1)


def _work_tree(vault: Vault) -> str:
    """The physical path of the vault's git work tree (`pwd -P` in a hook run there), or "" outside git."""
    return os.path.realpath(vault.git_root) if vault.git_root is not None else ""


def _common_dir(vault: Vault) -> str:
    """The physical path of the common git folder of the vault's repository (every work tree's), or ""."""
    found = common_git_dir(vault.git_root) if vault.git_root is not None else None
    return os.path.realpath(found) if found else ""


def outdated_git_hooks(vault: Vault, hooks_dir: Path, executable: str) -> list[str]:
    """Cairn's git hooks in `hooks_dir` that differ from what `install_git_hooks` would write now: written by an
    older Cairn (before `cairn index --wait`, a commit could wait 10 minutes on another index), for another `cairn`,
    or for the vault at another place."""
    vault_dir = vault.prefix.rstrip("/") or "."
    work_tree, common_dir = _work_tree(vault), _common_dir(vault)
    outdated = []
    for name in GIT_HOOKS:
        path = hooks_dir / name
        try:
            text = path.read_text("utf-8", "replace")
        except OSError:
            continue  # missing: said elsewhere
        if GIT_HOOK_MARKER in text and text != git_hook_script(executable, vault_dir, name, work_tree, common_dir):
            outdated.append(name)
    return outdated


def idle_git_hooks(vault: Vault, hooks_dir: Path) -> str | None:
    """Why Cairn's git hooks in `hooks_dir` index nothing for this vault, or None: written for a work tree at another
    place (the vault was moved since, or the hooks are another repository's), or running a `cairn` that is gone or no
    longer starts as they start it. Such hooks still look installed, and every commit leaves the index stale without
    a word."""
    work_tree = _work_tree(vault)
    tried: set[tuple[str, str]] = set()
    for name in GIT_HOOKS:
        try:
            text = (hooks_dir / name).read_text("utf-8", "replace")
        except OSError:
            continue
        if GIT_HOOK_MARKER not in text:
            continue
        written_for, runs = _filled(text, "CAIRN_WORK_TREE"), _filled(text, "CAIRN_BIN")
        if written_for and work_tree and written_for != work_tree:
            return f"were written for the work tree {written_for}, so they index nothing in {work_tree}"
        if runs and os.sep in runs and not os.access(runs, os.X_OK):
            return f"run {runs}, which is not there any more, so they index nothing"
        # An older Cairn's hooks in a venv whose path holds a space ran its own script as `PYTHON -S cairn`; upgraded in
        # place, `cairn` is pip's console-script launcher, which cannot find Cairn without `site`.
        python = _filled(text, "CAIRN_PYTHON")
        if python and runs and (python, runs) not in tried:
            tried.add((python, runs))
            if not _starts([python, "-S", runs]):
                return f"run {shlex.join([python, '-S', runs])}, which no longer starts Cairn, so they index nothing"
    return None


def _starts(launcher: list[str]) -> bool:
    """Whether `launcher --version` runs."""
    try:
        done = subprocess.run(
            [*launcher, "--version"], capture_output=True, timeout=20, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def hooks_work_tree(hooks_dir: Path) -> str:
    """The work tree Cairn's git hooks in `hooks_dir` were written for (`CAIRN_WORK_TREE`), or "" when none says."""
    return _hooks_filled(hooks_dir, "CAIRN_WORK_TREE")


def hooks_of_another_repository(vault: Vault, hooks_dir: Path) -> str:
    """The folder of another repository's vault that Cairn's git hooks in `hooks_dir` index, while its work tree is
    still there, or "". The folder is then shared (core.hooksPath), and the hooks index that one work tree alone: writing
    or removing them for this vault would leave the other's index behind every commit without a word."""
    other, written_common = hooks_work_tree(hooks_dir), _hooks_filled(hooks_dir, "CAIRN_COMMON_DIR")
    if not other or other == _work_tree(vault) or not os.path.isdir(other):
        return ""
    if written_common and written_common == _common_dir(vault):
        return ""  # another work tree of the same repository (`git worktree add`): its hooks folder is this one's
    return os.path.normpath(os.path.join(other, _hooks_filled(hooks_dir, "CAIRN_VAULT_DIR") or "."))


def _taken(vault: Vault, hooks_dir: Path, other: str) -> str:
    """The refusal to install this vault's hooks over `other`'s in a shared folder, with the fix that keeps both."""
    from cairn import gitrepo

    own = gitrepo.own_hooks_dir(vault)
    fix = (
        f"give this repository its own hooks folder: `git -C {shell_word(str(vault.git_root))} config core.hooksPath "
        f"{shell_word(str(own))}`, then run this again"
        if own is not None
        else "run this again from a repository whose hooks folder is its own"
    )
    return (
        f"{hooks_dir} holds Cairn's git hooks for {other}, another repository sharing that folder (core.hooksPath); "
        f"nothing was written, since they index one work tree and installing them here would leave {other}'s index "
        f"behind every commit. To keep both, {fix}"
    )


def _hooks_filled(hooks_dir: Path, variable: str) -> str:
    """The value Cairn's first git hook in `hooks_dir` was filled in with for `variable`, or "" when none says."""
    for name in GIT_HOOKS:
        try:
            text = (hooks_dir / name).read_text("utf-8", "replace")
        except OSError:
            continue
        value = _filled(text, variable) if GIT_HOOK_MARKER in text else ""
        if value:
            return value
    return ""


def _filled(text: str, variable: str) -> str:
    """The value `git_hook_script` filled in for `variable` (unquoted as sh reads it), or "" when it is not there."""
    found = re.search(rf"^{variable}=(.*)$", text, re.MULTILINE)
    if found is None:
        return ""
    try:
        words = shlex.split(found.group(1))
    except ValueError:
        return ""
    return words[0] if len(words) == 1 else ""


def missing_git_hooks(hooks_dir: Path) -> list[str]:
    """Cairn's git hooks that are not in `hooks_dir` (as files git can run): a commit, merge or pull there leaves the
    index behind until something else builds it."""
    return [name for name in GIT_HOOKS if not _runs(hooks_dir / name)]


def foreign_git_hooks(hooks_dir: Path) -> list[str]:
    """The names of Cairn's git hooks that another hook holds in `hooks_dir`: install writes there only with
    `--chain` (the other hook then moves to `<name>.local` and runs first)."""
    return [name for name in GIT_HOOKS if _is_foreign(hooks_dir / name)]


def _runs(hook: Path) -> bool:
    try:
        return os.access(hook, os.X_OK) and GIT_HOOK_MARKER in hook.read_text("utf-8", "replace")
    except OSError:
        return False


def install_git_hooks(vault: Vault, hooks_dir: Path, executable: str, chain: bool = False) -> list[GitHookChange]:
    """Put Cairn's post-commit, post-merge, post-checkout, post-rewrite and reference-transaction hooks into
    `hooks_dir`.

    A hook file that is not Cairn's is never overwritten: with chain=True it moves to `<name>.local` and
    Cairn's hook runs it first; without, nothing is written and RefusedWrite says what to do. Cairn's hook with
    lines of someone else's (or an older Cairn's) is replaced, its old text kept in `<name>.bak-TIME` beside it.
    """
    vault_dir = vault.prefix.rstrip("/") or "."
    foreign = foreign_git_hooks(hooks_dir)
    if foreign and not chain:
        names = ", ".join(str(hooks_dir / n) for n in foreign)
        # The whole command: `cairn install AGENT` and `cairn init` install these hooks too, and take no --chain.
        again = shlex.join(["cairn", "install", "git-hooks", "--chain", "--vault", str(vault.root)])
        raise RefusedWrite(
            f"{names} already exist and are not Cairn's; nothing was written. Keep them with `{again}` (they move "
            f"to <name>.local and run first), or add `cairn index --vault {shlex.quote(vault_dir)}` to them by hand"
        )
    taken = [hooks_dir / f"{n}.local" for n in foreign if os.path.lexists(hooks_dir / f"{n}.local")]
    if taken:  # before any hook moves: a refusal half way through left some chained and some not
        raise RefusedWrite(
            f"{', '.join(map(str, taken))} already exist{'s' if len(taken) == 1 else ''}; nothing was written: move "
            f"{'it' if len(taken) == 1 else 'them'} away, then run this again"
        )
    other = hooks_of_another_repository(vault, hooks_dir)
    if other:
        raise RefusedWrite(_taken(vault, hooks_dir, other))
    if hooks_dir.exists() and not hooks_dir.is_dir():
        raise RefusedWrite(
            f"{hooks_dir} is a file where git's hooks folder goes; nothing was written: move it away, then run "
            "this again"
        )
    hooks_dir.mkdir(parents=True, exist_ok=True)
    changes = []
    for name in GIT_HOOKS:
        target = hooks_dir / name
        script = git_hook_script(executable, vault_dir, name, _work_tree(vault), _common_dir(vault))
        action, copy = "installed", None
        if name in foreign:
            local = target.with_name(name + ".local")
            os.replace(target, local)
            action = "chained"
        elif target.exists():
            text = target.read_text("utf-8", "replace")
            if text == script:
                changes.append(GitHookChange(target, "unchanged"))
                continue
            action = "updated"
            if not _unedited(text, name):
                copy = _backup(target)
        write_atomic(target, script.encode("utf-8"), overwrite=True, mode=0o755)
        changes.append(GitHookChange(target, action, copy))
    return changes


def ensure_git_hooks(vault: Vault, executable: str) -> str:
    """Install the vault's git hooks when they are missing, as `cairn init` and `cairn install AGENT` do; returns one
    line to show ("" when they were there). Never raises for a hook that is in the way: the line says what to run.

    A hooks folder outside the repository (a global `core.hooksPath`) serves every repository of the user, so it
    is left to an explicit `cairn install git-hooks`.
    """
    from cairn import gitrepo

    try:
        hooks = gitrepo.hooks_dir(vault)
        inside = vault.git_root is not None and hooks.resolve().is_relative_to(vault.git_root.resolve())
        with gitrepo.open_repo(vault) as repo:
            common = Path(repo.common_dir).resolve()
        if not inside and not hooks.resolve().is_relative_to(common):
            return (
                f"Git hooks not installed: {hooks} (core.hooksPath) is shared by other repositories; run "
                f"`cairn install git-hooks --vault {shlex.quote(str(vault.root))}` if that is what you want"
            )
        changes = install_git_hooks(vault, hooks, executable)
    except CairnError as exc:
        return f"Git hooks not installed: {exc}"
    if all(c.action == "unchanged" for c in changes):
        return ""
    kept = [c.kept.name for c in changes if c.kept is not None]
    copies = f" (what the hooks held before is kept in {', '.join(kept)} in {hooks})" if kept else ""
    return (
        f"Installed git hooks in {vault.root}: its index follows every commit, merge, checkout, rebase and "
        f"reset{copies}."
    )


def uninstall_git_hooks(hooks_dir: Path) -> list[GitHookChange]:
    """Remove Cairn's git hooks; a hook chained by install goes back in its place."""
    changes = []
    for name in GIT_HOOKS:
        target = hooks_dir / name
        local = target.with_name(name + ".local")
        if not target.exists() and not target.is_symlink() and local.exists():
            # An install --chain stopped between moving the user's hook aside and writing Cairn's: git runs no
            # `.local` hook, so the user's goes back under its own name.
            os.replace(local, target)
            changes.append(GitHookChange(target, "restored"))
            continue
        if not target.exists() or _is_foreign(target):
            changes.append(GitHookChange(target, "absent"))
            continue
        copy = None if _unedited(target.read_text("utf-8", "replace"), name) else _backup(target)
        if local.exists():
            os.replace(local, target)
            changes.append(GitHookChange(target, "restored", copy))
        else:
            target.unlink()
            changes.append(GitHookChange(target, "removed", copy))
    return changes


def _unedited(text: str, name: str) -> bool:
    """Whether a hook's text is Cairn's script for `name` as this version writes it, whatever it was filled in with."""
    template = resources.files("cairn").joinpath(f"templates/hooks/git/{name}").read_text("utf-8")
    return _FILLED.sub(r"\1=", text) == _FILLED.sub(r"\1=", template)


def _backup(hook: Path) -> Path:
    """Keep a hook about to be replaced or removed in `<name>.bak-TIME` beside it (`atomic.write_backup`), not
    executable."""
    return write_backup(hook, hook.read_bytes(), hook.stat().st_mode & 0o666)


def _is_foreign(path: Path) -> bool:
    """A hook file that is there and is not Cairn's (a dangling link counts: something else put it there)."""
    if not path.exists() and not path.is_symlink():
        return False
    try:
        return GIT_HOOK_MARKER not in path.read_text("utf-8", "replace")
    except OSError:
        return True
