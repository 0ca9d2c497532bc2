"""`cairn vault add|list|remove`: the vaults the prompt hook serves, kept in the user configuration."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import click

from cairn import userconfig
from cairn.cli.common import (
    Folder,
    checked_scope,
    complete_vault_name,
    echo,
    echo_json,
    errors_to_exit,
    folder_given,
    indexing,
    json_option,
)
from cairn.hot.gitrefs import served_ref
from cairn.hot.userconfig import VaultEntry, config_file, load_vaults
from cairn.hot.vault import Vault
from cairn.terminal import columns, pad


def _scope_tags(given: tuple[str, ...]) -> tuple[str, ...]:
    """The tags of each --scope, in order, checked as every --scope is (`checked_scope`): one with no tag (`--scope
    ""`, `--scope ,`) blamed the configuration file, or was stored as the tag "," and served no card."""
    return tuple(dict.fromkeys(tag for value in given for tag in checked_scope(value)))


@click.group(name="vault")
def vault_group() -> None:
    """The vaults the prompt hook serves in every project, in order of precedence (the user configuration:
    $CAIRN_CONFIG, else $XDG_CONFIG_HOME/cairn/config.toml, else ~/.config/cairn/config.toml).

    \b
    Example:
      cairn vault add ~/team-lessons --name team
      cairn vault list
    """


@vault_group.command(name="add")
# A missing folder: one line, with the fix (not click's check).
@click.argument("path", type=Folder(file_okay=False), callback=folder_given)
@click.option("--name", default=None, help="Shown as NAME:card-id (default: from the folder's name).")
@click.option(
    "--ref",
    default=None,
    help="The ref to serve (default: the remote's default branch, else main/master: what was reviewed).",
)
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    callback=lambda ctx, param, value: _scope_tags(value),
    help="Serve only cards whose scope meets this tag (repeatable, or comma-separated: git,ci).",
)
@click.option(
    "--project",
    "projects",
    multiple=True,
    type=Folder(file_okay=False),
    callback=folder_given,
    help="Serve only to agents working under this folder (repeatable; default: everywhere).",
)
@click.option("--first", is_flag=True, help="Put it before the others (it wins when two hold the same lesson).")
@click.option(
    "--replace",
    is_flag=True,
    help="Register the vault configured as --name again, in its place: its new path, ref, scopes and projects.",
)
@errors_to_exit
def add_cmd(
    path: Path,
    name: str | None,
    ref: str | None,
    scopes: tuple[str, ...],
    projects: tuple[Path, ...],
    first: bool,
    replace: bool,
) -> None:
    """Register the vault at PATH, after those already configured (or --first); the first listed wins when two
    hold the same lesson. With --replace, the vault configured as --name is registered again in its place (a moved
    folder, another ref or scope), keeping its precedence.

    \b
    Example:
      cairn vault add ~/team-lessons --name team
      cairn vault add ~/my-notes --name me --scope python --project ~/work/acme
      cairn vault add ~/src/team-lessons --name team --ref main --replace
    """
    if replace and first:
        raise click.UsageError("--replace keeps the vault's place: give --first or --replace, not both")
    if ref is not None and not ref:  # `--ref "$BRANCH"` with BRANCH unset: not the default branch, silently
        from cairn.hot.errors import CairnError

        raise CairnError("--ref is empty; give a branch, a tag or a commit, or leave --ref out to serve the default")
    kind = _ref_kind(path, ref) if ref else None
    _refuse_non_commit(kind, ref or "")
    tagged = _tagged_commit(path, ref) if ref and kind == "commit" else None
    if tagged is not None:  # a tag object never moves: its commit is served the same, packed by git or not
        echo(f"Note: --ref {ref} is an annotated tag's object; registered the commit it tags, {tagged}.", err=True)
        ref = tagged
    entry = userconfig.add_vault(
        path, name=name, ref=ref, scopes=scopes, projects=[str(p) for p in projects], first=first, replace=replace
    )
    from cairn.hot.vault import (
        checked_out_branch,
        detached_head,
        git_dir,
        local_branch_served,
        missing_ref,
        served_ref,
    )

    done = f"Replaced vault {entry.name!r} in its place" if replace else f"Added vault {entry.name!r}"
    echo(f"{done} ({entry.path}) {'in' if replace else 'to'} {config_file()}.")
    where = f"to agents working under {', '.join(entry.projects)}" if entry.projects else "in every project"
    only = f" (only cards of scope {', '.join(entry.scopes)})" if entry.scopes else ""
    work_tree = _work_tree(entry.path)  # a vault may be a folder inside a repository
    if git_dir(work_tree) is None:  # registered (a clone may come later), but nothing is served from it yet
        echo(
            f"Note: {entry.path} is not a git repository yet: the hook serves nothing from it until cards are "
            "committed there (`cairn init` makes a vault; `git clone` brings one); `cairn doctor` checks the setup.",
            err=True,
        )
        return
    ref, commit = served_ref(work_tree, entry.ref)
    if kind == "missing":  # an object id the files name, which git does not hold
        echo(
            f"Note: --ref {entry.ref} names no commit this repository holds (yet), so the hook serves nothing from it: "
            "fetch it (`git fetch`) or serve a branch; `cairn doctor` checks the setup.",
            err=True,
        )
        return
    if commit is None:
        advice = missing_ref(work_tree, ref, entry.ref, userconfig.serve_another(entry), vault_root=entry.path)
        echo(
            f"Note: {advice.problem}, so the hook serves nothing from it: {advice.fix}; `cairn doctor` checks the setup.",
            err=True,
        )
        return
    if ref == "HEAD" and not entry.ref:
        echo(
            f"Note: {detached_head(work_tree, commit, userconfig.serve_another(entry))}; `cairn doctor` checks the setup.",
            err=True,
        )
        return
    checked_out = checked_out_branch(work_tree, ref, entry.ref, userconfig.serve_another(entry))
    if checked_out is not None:
        echo(f"Note: {checked_out}; `cairn doctor` checks the setup.", err=True)
        return
    unpushed = local_branch_served(work_tree, ref, entry.ref)
    if unpushed is not None:  # served all the same: the note says how to serve what was pushed
        echo(f"Note: {unpushed}.", err=True)
    if not _indexed(entry):
        return
    echo(f"The prompt hook now serves it {where}{only}; `cairn doctor` checks the setup.")


def _indexed(entry: VaultEntry) -> bool:
    """The vault's index built now (a bar on a terminal), so the agent's first prompt is served: the hook never waits
    for one, and the prompt that finds none got nothing while it was built in the background. False, with a note,
    when it cannot be built."""
    from cairn.doctor import left_out_note
    from cairn.hot.errors import CairnError
    from cairn.hot.vault import find_configured_vault
    from cairn.index import build as indexer

    try:
        vault = find_configured_vault(entry)
        with indexing(vault.root) as progress:
            report = indexer.build_index(vault, progress=progress)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM: registered already, so `cairn vault add` again refuses the name
        echo(
            f"\nStopped after vault {entry.name!r} was registered, before its index was built: `cairn index --vault "
            f"{entry.name}` builds it (until then the hook builds it in the background on its first prompt).",
            err=True,
        )
        raise
    except CairnError as exc:
        echo(
            f"Note: not indexed ({exc}), so the hook serves nothing from it until that is fixed; `cairn doctor` "
            "checks the setup.",
            err=True,
        )
        return False
    echo(f"Index: {report.n_cards} cards at {report.commit[:8]}{left_out_note(len(report.problems), entry.name)}.")
    from cairn import gitrepo

    ignored = gitrepo.ignored_cards_note(vault)  # the cards the user sees in the folder and the index lacks
    if ignored is not None:  # on stderr, as `cairn add`, `cairn import` and `cairn index` say it
        echo(f"Note: {ignored}.", err=True)
    if entry.scopes:
        _unmet_scopes(vault, entry)
    return True


def _unmet_scopes(vault: Vault, entry: VaultEntry) -> None:
    """A note for each configured scope tag no card of the vault has (a typo: `--scope awss`): the hook then serves
    the vault's cards with no scope alone, where the user meant to keep it to a subject."""
    from cairn.hot.errors import CairnError
    from cairn.index import build as indexer

    try:
        with indexer.open_index(vault, served_only=True) as index:
            used = {tag.lower() for card in index.cards(index.held_rows()).values() for tag in card.scope}
    except CairnError:  # said by the index note above, or by `cairn doctor`
        return
    unmet = [tag for tag in entry.scopes if tag.lower() not in used]
    if not unmet:
        return
    met = [tag for tag in entry.scopes if tag not in unmet]
    serves = f"its cards of scope {', '.join(met)} and those with no scope" if met else "only its cards with no scope"
    echo(
        f"Note: no card of {entry.name!r} has the scope {', '.join(unmet)} (a typo?), so the hook serves {serves}; "
        f"`cairn list --vault {entry.name}` shows each card's scope."
    )


def _ref_kind(path: Path, ref: str) -> str | None:
    """What --ref names in the vault's repository (`gitrepo.object_kind`), or None when that cannot be told yet (no
    repository, no such ref: the notes after the vault is added say so)."""
    from cairn.gitrepo import object_kind, open_repo
    from cairn.hot.errors import CairnError
    from cairn.hot.vault import find_vault

    try:
        vault = find_vault(os.path.abspath(os.path.expanduser(path)))
        if vault.git_root is None:
            return None
        _, oid = served_ref(vault.git_root, ref)
        if oid is None:
            return None
        with open_repo(vault) as repo:
            return object_kind(repo, oid)
    except CairnError:
        return None  # `add_vault` says what is wrong with the folder


def _tagged_commit(path: Path, ref: str) -> str | None:
    """The commit an annotated tag object's full id (`git rev-parse TAG` pasted as --ref) tags, else None: the hook
    reads the id from the files, and named the tag object as the served commit (a packed one it cannot peel)."""
    from cairn.gitrepo import object_types, open_repo
    from cairn.hot.errors import CairnError
    from cairn.hot.vault import find_vault

    if not re.fullmatch(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}", ref.strip()):  # a tag's name may move: it is kept
        return None
    oid = ref.strip().lower()
    try:
        with open_repo(find_vault(os.path.abspath(os.path.expanduser(path)))) as repo:
            found = object_types(repo, [oid, f"{oid}^{{commit}}"])
    except CairnError:
        return None
    if found.get(oid, ("", ""))[1] != "tag":
        return None
    commit, kind = found[f"{oid}^{{commit}}"]
    return commit if kind == "commit" else None


def _refuse_non_commit(kind: str | None, ref: str) -> None:
    """Refuses a --ref that names a tree or a blob (`git rev-parse HEAD^{tree}` pasted, a tag of a tree): no commit
    is ever served from it."""
    from cairn.hot.errors import CairnError

    if kind is not None and kind not in ("commit", "missing"):
        article = "an" if kind[:1] in "aeiou" else "a"
        raise CairnError(
            f"--ref {ref} names {article} {kind}, not a commit: --ref takes a branch, a tag or a commit (e.g. --ref main)"
        )


@vault_group.command(name="list")
@json_option
@errors_to_exit
def list_cmd(as_json: bool) -> None:
    """The configured vaults in order of precedence, with the ref each serves and its commit.

    \b
    Example:
      cairn vault list --json
    """
    rows: list[dict[str, Any]] = []
    for entry in load_vaults():
        ref, commit = served_ref(_work_tree(entry.path), entry.ref) if os.path.isdir(entry.path) else (entry.ref, None)
        # the ref's file names an object; git says whether it is a commit it holds (a tree's id configured, a branch
        # a damaged clone left naming a lost commit)
        problem = None
        if commit is not None:
            kind = _ref_kind(Path(entry.path), commit)
            if kind == "missing":
                problem = f"names {commit[:8]}, which this repository does not hold"
            elif kind not in (None, "commit"):
                problem = f"names a {kind}, not a commit"
            if problem is not None:
                commit = None
        rows.append(
            {
                "name": entry.name,
                "path": entry.path,
                "ref": entry.ref,
                "served_ref": ref,
                "commit": commit,
                "problem": problem,
                "scopes": list(entry.scopes),
                "projects": list(entry.projects),
                "exists": os.path.isdir(entry.path),
            }
        )
    if as_json:
        echo_json({"config": config_file(), "vaults": rows})
        return
    if not rows:
        echo(f"No vault is configured ({config_file()}); add one with `cairn vault add PATH`.")
        return
    name_width = max(len(row["name"]) for row in rows)
    path_width = max(columns(row["path"]) for row in rows)
    for row in rows:
        ref = row["served_ref"] or "-"  # a missing folder with no `ref` configured has no ref to show
        served = f"{ref} @ {row['commit'][:8]}" if row["commit"] else f"{ref} ({row['problem'] or 'no commit'})"
        extra = "".join(
            [
                f"  scopes: {', '.join(row['scopes'])}" if row["scopes"] else "",
                f"  projects: {', '.join(row['projects'])}" if row["projects"] else "",
                "" if row["exists"] else "  (not a folder)" if os.path.lexists(row["path"]) else "  (missing folder)",
            ]
        )
        echo(f"{row['name']:<{name_width}}  {pad(row['path'], path_width)}  {served}{extra}")


def _work_tree(path: str) -> str:
    """The git work tree around a vault folder (a vault may be a folder inside a repository)."""
    folder = os.path.realpath(path)
    while not os.path.exists(os.path.join(folder, ".git")):
        parent = os.path.dirname(folder)
        if parent == folder:
            return path
        folder = parent
    return folder


@vault_group.command(name="remove")
@click.argument("name", shell_complete=complete_vault_name)
@errors_to_exit
def remove_cmd(name: str) -> None:
    """Stop serving the vault NAME (its folder, cards and index are left as they are).

    \b
    Example:
      cairn vault remove team
    """
    entry = userconfig.remove_vault(name)
    echo(f"Removed vault {entry.name!r} ({entry.path}) from {config_file()}.")


__all__ = ["vault_group"]
