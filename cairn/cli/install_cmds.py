"""Commands that connect Cairn to agents and to git: install and uninstall."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from cairn import doctor, githooks, gitrepo, install
from cairn.cli.common import Folder, _one_vault, checked_scope, echo, error_text, errors_to_exit, indexing, open_vault
from cairn.hot.errors import CairnError, InvalidConfig, NotAGitRepository, RefusedWrite, VaultNotFound
from cairn.hot.vault import is_bare_repository, shell_word
from cairn.index import build as indexer

TARGETS = (*install.AGENTS, "git-hooks")
F = TypeVar("F", bound=Callable[..., Any])


def _where_options(func: F) -> F:
    func = click.option(
        "--user", is_flag=True, help="The user's own settings in the home folder (~/.claude, ~/.codex, ~/.gemini)."
    )(func)
    func = click.option(
        "--project",
        "project",
        type=Folder(exists=True, file_okay=False, path_type=Path),  # a typo must not make a folder no agent opens
        default=None,
        help="The project folder whose settings to change (default: the current folder).",
    )(func)
    return func


def _scope_tags(value: str | None) -> str | None:
    """--scope as the hook will read it (`git,ci`). One with no tag (`--scope "$SCOPE"`, unset) would bake in a hook
    that serves every scope, and a tag with a line break or a control character one no card can have: refused, as
    `cairn recall --scope` refuses them."""
    if value is None:
        return None
    return ",".join(checked_scope(value, ", or leave --scope out"))


def _base(project: Path | None, user: bool) -> Path:
    if project is not None and user:
        raise click.UsageError("give --project DIR or --user, not both")
    return (project or Path.cwd()).resolve()


@click.command(name="install")
@click.argument("target", type=click.Choice(TARGETS))
@_where_options
@click.option(
    "--vault",
    "vault_path",
    multiple=True,
    callback=_one_vault,
    help="Agents: bake one vault into the hook (default: none; the hook serves $CAIRN_VAULT, else every vault in "
    "`cairn vault list`). git-hooks: the vault to keep indexed (default: the vault around the current folder).",
)
@click.option(
    "--scope",
    default=None,
    callback=lambda ctx, param, value: _scope_tags(value),
    help="Agents: comma-separated scope tags the hook passes to recall.",
)
@click.option(
    "--chain",
    is_flag=True,
    help="git-hooks: keep existing hooks (moved to <name>.local, run first; not husky's, which would run nothing).",
)
@errors_to_exit
def install_cmd(
    target: str, project: Path | None, user: bool, vault_path: str | None, scope: str | None, chain: bool
) -> None:
    """Register `cairn hook` with an agent, or keep a vault's index current with git hooks.

    TARGET is claude-code (UserPromptSubmit), codex (UserPromptSubmit), gemini (BeforeAgent) or git-hooks
    (post-commit, post-merge, post-checkout, post-rewrite and reference-transaction in the vault's hooks folder,
    core.hooksPath respected). Other hooks are kept, a backup of a settings file that held anything else is written
    beside it, and running it again changes nothing.

    Where: --user writes ~/.claude/settings.json, ~/.codex/hooks.json or ~/.gemini/settings.json, with this
    machine's `cairn` by its full path. A project gets Claude Code's personal .claude/settings.local.json (not
    committed; the same full path), and Codex's .codex/hooks.json or Gemini CLI's .gemini/settings.json, the files
    a team commits (these agents read no personal project file): there the hook runs `cairn` from the PATH.

    Without --vault the hook serves the configured vaults (`cairn vault add PATH`) in every project; with none
    configured (and no --vault or $CAIRN_VAULT) nothing is written, since such a hook could never serve a card.

    \b
    Examples:
      cairn install claude-code --user
      cairn install codex --project ~/work/acme --vault team
      cairn install git-hooks --vault ~/team-lessons
    """
    executable = install.cairn_executable()
    if target == "git-hooks":
        if project is not None or user:
            raise click.UsageError("git-hooks goes into a vault: use --vault, not --project or --user")
        vault = open_vault(vault_path)
        hooks_dir = gitrepo.hooks_dir(vault)
        for git_change in githooks.install_git_hooks(vault, hooks_dir, executable, chain=chain):
            echo(str(git_change))
        echo(
            f"Every commit, merge, checkout, rebase and reset in {vault.root}, and every fetch or push that moves its "
            "served branch, now updates its index before git returns."
        )
        return
    base = _base(project, user)
    if not user and install.is_home_project(target, base):
        # Taken as a project, the home folder's .codex/hooks.json or .gemini/settings.json is the user's own file:
        # it got the shared form (`cairn` from the PATH) and was called committed, read by every teammate.
        user = True
        echo(f"{base} is your home folder, where {target} keeps your own settings: installing as with --user.")
    if not user:
        _refuse_inside_a_vault(base)
        _refuse_git_folder(base)
    vault_arg = _hook_vault(vault_path)
    served = _served_vaults(vault_arg)
    settings = install.install_target(target, base, user)
    # A shared file runs `cairn` from each teammate's PATH: this machine's path would not exist on theirs.
    launcher = ["cairn"] if settings.shared else install.hook_launcher()
    command = install.hook_command(target, vault=vault_arg, scope=scope, executable=launcher)
    # An older Cairn's hook in the shared file goes first (else the agent runs Cairn twice a prompt); a shared file
    # Cairn cannot rewrite then stops the install before anything is written.
    moved = install.move_out_of_shared(target, settings, base)
    change = install.install_agent(target, settings.path, command)
    echo(f"{change.action}: {change.path}")
    echo(f"  hook: {command}")
    if change.backup:
        echo(f"  backup of the previous file: {change.backup}")
    if not user:
        _say_who_reads(target, settings, moved, vault_arg)
    if not vault_arg:
        echo(
            "  The hook serves $CAIRN_VAULT when the agent has it set, else the configured vaults (`cairn vault list`)."
        )
    where = " --user" if user else f" --project {shlex.quote(str(project))}" if project is not None else ""
    for done, vault_dir in enumerate(served):
        try:
            _index_now(vault_dir, executable)
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM: the hook is in, some vaults are not indexed; say so, then stop
            again = f"cairn install {target}{where}" + "".join(
                f" --{flag} {shlex.quote(value)}" for flag, value in (("vault", vault_arg), ("scope", scope)) if value
            )
            rest = ", ".join(name or "$CAIRN_VAULT" for name in served[done:])
            echo(
                f"\nStopped with Cairn's hook in {change.path} and {done} of {len(served)} vault(s) indexed (not "
                f"yet: {rest}): run `{again}` again to finish (until then the hook builds a missing index in the "
                "background on its first prompt).",
                err=True,
            )
            raise
    if change.note:
        echo(f"  Note: {change.note}")
    try:  # a user install: the agent started here also reads this project's hooks
        started = Path.cwd() if user else base
    except OSError:  # the current folder was removed
        started = base
    twice = doctor.served_twice(target, started)
    if twice is not None:
        fix = f"`{twice.fix}`" if twice.fix else twice.note
        echo(f"  Note: {twice.detail}: {fix}")
    echo(f"Undo with `cairn uninstall {target}{where}`.")


def _say_who_reads(
    agent: str, settings: install.SettingsFile, moved: install.SettingsChange | None, vault_arg: str | None
) -> None:
    """Say who reads the project file just written, that a folder baked into a shared one is this machine's, and
    that an older Cairn's hook left the shared one."""
    if settings.shared:
        echo(
            f"  {settings.path.name} is the project's shared settings (committed, read by every teammate's "
            f"{agent}): the hook runs `cairn` from each one's PATH, not this machine's path."
        )
        if install.cairn_executable() != "cairn":
            echo(
                f"  Note: your PATH does not find this installation's `cairn` ({install.cairn_executable()}): put "
                "its folder on PATH (pipx does), or the agent runs no `cairn` here, or another one."
            )
        if vault_arg and os.path.isabs(vault_arg):
            echo(
                f"  Note: the hook names --vault {vault_arg}, a folder of this machine, in a file every teammate "
                "reads: their clones of the vault are elsewhere. Register the vault by name on each machine "
                "(`cairn vault add PATH --name team`) and install with `--vault team`, or leave --vault out."
            )
        elif vault_arg:
            echo(
                f"  Note: the hook serves the vault each teammate registered as {vault_arg!r}: each runs "
                f"`cairn vault add PATH --name {vault_arg}` once (`cairn doctor` says when it is missing)."
            )
        return
    echo(
        f"  {settings.path.name} is your personal settings for this project (not committed): the hook runs this "
        "machine's `cairn` by its full path."
    )
    if moved is not None and moved.action != "absent":
        echo(f"  removed: Cairn's hook from {moved.path}, the project's shared settings, so it runs once, from here")
    from cairn import gitrepo

    if gitrepo.is_ignored(settings.path) is False:
        echo(
            f"  Note: git does not ignore {settings.path}: add it to the project's .gitignore (Claude Code does "
            "when it makes the file) so it is never committed."
        )


def _hook_vault(vault_path: str | None) -> str | None:
    """What --vault bakes into the hook: a configured vault's name as given, else the folder's absolute path."""
    if not vault_path:
        return None
    if "/" not in vault_path and vault_path in _configured_names():
        return vault_path
    # A mistyped name or a folder that holds no vault would be baked into a hook that never serves a card: refused
    # before anything is written, as every command's --vault is.
    open_vault(vault_path)
    return str(Path(vault_path).expanduser().resolve())


def _configured_names() -> list[str]:
    from cairn.hot.errors import ConfigError
    from cairn.hot.userconfig import load_vaults

    try:
        return [e.name for e in load_vaults()]
    except ConfigError:  # a broken configuration: --vault is then a folder
        return []


def _served_vaults(vault_arg: str | None) -> list[str | None]:
    """The vaults the new hook will serve (to index now); refuses when it would serve none."""
    import os

    from cairn.hot.userconfig import config_file, load_vaults

    if vault_arg:
        return [vault_arg]
    entries = load_vaults()
    if entries:  # by name: a vault moved away is then told to `cairn vault add ... --replace`, not to `cairn init`
        return [e.name for e in entries]
    if os.environ.get("CAIRN_VAULT"):
        return [None]
    folder = install.enclosing_vault(Path.cwd())
    around = f"cairn vault add {shlex.quote(str(folder))}" if folder is not None else "cairn vault add PATH"
    raise CairnError(
        f"no vault is configured for the hook to serve ({config_file()} lists none); run `{around}` first "
        "(nothing was written)"
    )


def _refuse_inside_a_vault(base: Path) -> None:
    """Agent settings never go into a vault: its files are what the team reviews, not one person's setup."""
    folder = install.enclosing_vault(base)  # from the folder alone: $CAIRN_VAULT says nothing about it
    if folder is not None:
        raise CairnError(
            f"{base} is inside the vault {folder}; install with --user, or --project DIR for the project your "
            f"agent works in (nothing was written into {folder})"
        )


def _refuse_git_folder(base: Path) -> None:
    """No agent works in git's own folder (a work tree's `.git`, a bare repository): settings written there were
    never read, and install said `installed`."""
    for folder in (base, *base.parents):
        if folder.name == ".git":
            raise CairnError(
                f"{base} is git's own folder of the repository {folder.parent}, where no agent works; install into "
                f"the project: --project {shell_word(folder.parent)} (nothing was written)"
            )
        if is_bare_repository(str(folder)):
            raise CairnError(
                f"{base} is in the bare git repository {folder}, which has no work tree for an agent to work in; "
                "install into a clone of it with --project DIR (nothing was written)"
            )


def _index_now(vault_arg: str | None, executable: str) -> None:
    """Build the vault's index now, so the agent's first prompt is served (the hook itself never waits), and put
    in its git hooks, so every later commit, merge or checkout keeps it current."""
    try:
        vault = open_vault(vault_arg)
        with indexing(vault.root) as progress:
            report = indexer.build_index(vault, progress=progress)
    except (InvalidConfig, NotAGitRepository, RefusedWrite, VaultNotFound, OSError) as exc:
        # The hook's own build in the background would fail the same way: saying it will index was a wrong promise.
        # OSError: a folder the system refuses to read (no permission); the settings are written all the same.
        echo(f"  Not indexed ({error_text(exc)}); the hook serves none of its cards until that is fixed.")
        return
    except CairnError as exc:
        echo(f"  Not indexed yet ({exc}); the hook builds the index in the background on its first prompt.")
        return
    left_out = doctor.left_out_note(len(report.problems), vault_arg or shlex.quote(str(vault.root)))
    echo(f"  Index of {vault.root}: {report.n_cards} cards at {report.commit[:8]}{left_out}.")
    line = githooks.ensure_git_hooks(vault, executable)
    if line:
        echo(f"  {line}")


@click.command(name="uninstall")
@click.argument("target", type=click.Choice(TARGETS))
@_where_options
@click.option(
    "--vault",
    "vault_path",
    multiple=True,
    callback=_one_vault,
    help="git-hooks: the vault whose hooks to remove.",
)
@errors_to_exit
def uninstall_cmd(target: str, project: Path | None, user: bool, vault_path: str | None) -> None:
    """Remove Cairn's hook from an agent's settings (other hooks stay), or Cairn's git hooks from a vault.

    \b
    Examples:
      cairn uninstall claude-code
      cairn uninstall git-hooks --vault ~/team-lessons
    """
    if target == "git-hooks":
        if project is not None or user:  # the vault around the current folder lost its hooks, not the one meant
            raise click.UsageError("git-hooks are in a vault: use --vault, not --project or --user")
        vault = open_vault(vault_path)
        hooks_dir = gitrepo.hooks_dir(vault)
        other = githooks.hooks_of_another_repository(vault, hooks_dir)
        if other:  # a folder core.hooksPath shares: the hooks in it are the other vault's, and keep it indexed
            raise RefusedWrite(
                f"the git hooks in {hooks_dir} are Cairn's for {other}, another repository sharing that folder "
                f"(core.hooksPath), not this vault's; nothing was removed. To remove them, run `cairn uninstall "
                f"git-hooks --vault {shell_word(other)}`"
            )
        for git_change in githooks.uninstall_git_hooks(hooks_dir):
            echo(str(git_change))
        return
    base = _base(project, user)
    files = install.user_files(target) if user else install.project_files(target, base)
    if not user:  # a project's file that links out of it is another file's (the user's own): never changed from here
        for file in files:
            if install.cairn_commands(target, file):
                install.refuse_outside(file, base, "Cairn's hook in it")
    inline = [f for f in files if f.suffix == ".toml"]
    changes = [install.uninstall_agent(target, f) for f in files if f not in inline]
    for change in changes:
        if change.action == "deleted":
            echo(f"removed: {change.path} (it held only Cairn's hook)")
        elif change.action != "absent":
            echo(f"{change.action}: Cairn's hook from {change.path}")
    by_hand = [f for f in inline if install.cairn_commands(target, f)]
    if by_hand:  # Cairn never writes TOML: a hook there was put in by hand, and is taken out the same way
        raise CairnError(
            f"{by_hand[0]} runs Cairn's hook in its [hooks] tables, which Cairn does not rewrite; remove that "
            f"[[hooks.{install.AGENTS[target].event}]] entry by hand"
        )
    if all(c.action == "absent" for c in changes):
        verb = "has" if len(changes) == 1 else "have"
        # `cairn install AGENT --user` (the README's step) put it in the user's own file, which this run left alone
        mine = [] if user else [f for f in install.user_files(target) if install.cairn_commands(target, f)]
        hint = f"; your own {mine[0]} has one: `cairn uninstall {target} --user`" if mine else ""
        echo(f"Nothing to remove: {', '.join(str(c.path) for c in changes)} {verb} no Cairn hook{hint}.")


__all__ = ["install_cmd", "uninstall_cmd"]
