"""Commands that make and read a vault: init, add, index, show."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import click

from cairn.cards import catalog
from cairn.cards.card import STATUSES, review_date_fixed
from cairn.cli.common import (
    File,
    FiniteFloatRange,
    Folder,
    argv_text,
    complete_card_id,
    echo,
    echo_json,
    error_text,
    errors_to_exit,
    folder_given,
    indexing,
    json_option,
    open_vault,
    progress_bar,
    split_named_id,
    unknown_vault_name,
    vault_option,
    warn,
    warn_unreadable_config,
)
from cairn.hot.errors import CairnError, CardNotFound, InvalidId, VaultNotFound
from cairn.hot.serve import split_tags
from cairn.hot.vault import Vault, find_vault, shell_word, sparse_checkout
from cairn.index import build as indexer
from cairn.index.store import IndexBusy
from cairn.lint.security import refusal_asking
from cairn.terminal import clean_line, columns, pad

# `cairn index` names this many cards it left out, then counts the rest: a reorganisation that broke 300 cards
# printed 300 lines on every run, up to date or not (`cairn lint` lists every one).
SHOWN_LEFT_OUT = 20


def _vault_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A --name that cannot be registered is refused before the vault is made, not after (when init said so and
    exited 0)."""
    from cairn.hot.userconfig import MAX_NAME_CHARS, is_vault_name

    if value is not None and not is_vault_name(value):
        raise click.BadParameter(
            f"{value!r} is not a vault name: 1 to {MAX_NAME_CHARS} characters of a-z, 0-9, '_' and '-', starting "
            "with a letter or digit (e.g. --name team); nothing was made"
        )
    return value


@click.command()
@click.argument("path", type=Folder(), callback=folder_given)
@click.option(
    "--register/--no-register",
    default=None,
    help="Add the vault to the user configuration, so the prompt hook serves it in every project "
    "(default: ask on a terminal, else no).",
)
@click.option(
    "--name",
    default=None,
    callback=_vault_name,
    help="The name to register it under (default: from the folder's name).",
)
@click.option("--git-hooks/--no-git-hooks", default=True, help="Install the git hooks that keep its index current.")
@errors_to_exit
def init(path: Path, register: bool | None, name: str | None, git_hooks: bool) -> None:
    """Create a vault at PATH from the template, `git init` it, commit and index it, install its git hooks and
    (asked on a terminal, or with --register) add it to the vaults the prompt hook serves. PATH is a new folder, an
    empty one, or the clone of a new, empty repository (its remote is kept: `git push` shares the vault).

    \b
    Example:
      cairn init ~/team-lessons --register
    """
    from cairn import githooks, gitrepo, install, userconfig
    from cairn.cards import authoring
    from cairn.doctor import pre_commit_install

    # `~/x` with no shell to expand it (an MCP client's server entry, a path pasted in quotes) names the folder that
    # `--vault ~/x` reads, as a missing vault's error suggests; it was made as `./~/x`, then refused by git.
    path = Path(os.path.expanduser(path))
    if register and name is not None:  # a name already taken is refused before anything is made
        from cairn.hot.userconfig import load_vaults

        try:
            taken = next((e for e in load_vaults() if e.name == name), None)
        except CairnError:  # a broken configuration: said after the vault is made, as before
            taken = None
        if taken is not None:
            raise CairnError(
                f"a vault named {name!r} is already configured ({taken.path}); pick another --name (nothing was made)"
            )
    commit = authoring.init_vault(path)
    vault = find_vault(path)
    where = shell_word(path)  # `cd -x` reads -x as an option
    # What a Ctrl-C from here on leaves undone: the vault is committed, so `cairn init` again refuses it
    left = [f"cairn index --vault {where}", *([f"cairn install git-hooks --vault {where}"] if git_hooks else [])]
    add = shlex.join(["cairn", "vault", "add", str(vault.root), *(["--name", name] if name else [])])
    try:
        # Index right away, so the agent hook has something to serve on its very first prompt. The vault is made and
        # committed by now: a failure here (the cache folder) is said at the end, after the rest of the setup.
        not_indexed = None
        try:
            report = indexer.build_index(vault)
            echo(f"Created a vault at {path} (commit {commit[:8]}) and indexed its {report.n_cards} example cards.")
            del left[0]
        except (CairnError, OSError) as exc:
            not_indexed = error_text(exc)
            echo(f"Created a vault at {path} (commit {commit[:8]}).")
        outer = _enclosing_work_tree(vault.root.parent)
        # in a folder the repository around it ignores, the vault is kept out of that repository on purpose (a
        # personal vault in a project's ignored folder), and `git add` of it, as the note says, is refused
        if outer is not None and gitrepo.is_ignored(vault.root) is not True:
            # `git add` in the repository around it records a gitlink, not the cards: its clones get an empty folder
            inner = vault.root.relative_to(outer).as_posix()
            here, rel = shell_word(vault.root), shell_word(inner)
            echo(
                f"Note: {path} is inside the git repository {outer} and has a repository of its own, so {outer}'s "
                f"commits will not hold its cards (git adds it there as an embedded repository). For a vault that is "
                f"a folder of {outer}: `rm -rf {here}/.git && git -C {shlex.quote(str(outer))} add {rel}`, commit, "
                f"then `cairn install git-hooks --vault {here}`."
            )
        if git_hooks:
            line = githooks.ensure_git_hooks(vault, install.cairn_executable())
            if line:
                echo(line)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM: say what is left to do, then stop as usual
        serve = "" if register is False else f", then `{add}` to serve it"
        echo(
            f"\nStopped after the vault at {path} was created and committed: `{' && '.join(left)}` finish it{serve}.",
            err=True,
        )
        raise
    if register is None:
        try:
            register = sys.stdin.isatty() and click.confirm(
                "Register it so the prompt hook serves it in every project?", default=True, err=True
            )
        except click.exceptions.Abort as abort:
            # Ctrl-D or Ctrl-C at the question: the vault is made, and `cairn init` again (as "give the answers as
            # options" said) refuses it, so say what the answer would have done
            if isinstance(abort.__context__, KeyboardInterrupt):
                echo(f"\nThe vault at {path} is made but not registered: `{add}` serves it.", err=True)
                raise
            echo("", err=True)  # the question's line stays open
            raise CairnError(
                f"the input ended before the question was answered: the vault at {path} is made but not registered; "
                f"`{add}` serves it in every project"
            ) from None
    not_registered = None
    if register:
        try:
            entry = userconfig.add_vault(vault.root, name=name)
            echo(f"Registered it as vault {entry.name!r} (`cairn vault list`).")
        except CairnError as exc:  # a name already taken, a broken configuration: said last, and exit 1
            register = False
            not_registered = str(exc)
    try:
        own = gitrepo.own_hooks_dir(vault)
    except CairnError:
        own = None
    lint = "lint every card on every commit" + (
        " (from the repository's own hooks folder: pre-commit refuses core.hooksPath's)" if own else ""
    )
    steps = [
        (pre_commit_install(where, own), lint),
        ("cairn list", "the example cards, served as they are: keep those that fit, `git rm` the rest"),
        # by its full path: run after the `cd` above, a relative one named a folder inside the vault
        *([] if register else [(f"cairn vault add {shlex.quote(str(vault.root))}", "serve it in every project")]),
        ("cairn install claude-code --user", "or codex, gemini: the prompt hook"),
        ("cairn add ... && git commit", "write cards; commit them on main (or merge) to serve them"),
        ("cairn doctor", "check the whole setup"),
    ]
    width = max(columns(command) for command, _ in steps[1 if own else 0 :])  # core.hooksPath's long one goes past
    echo("Next:\n" + "\n".join(f"  {pad(command, width)}  # {why}" for command, why in steps))
    undone = [
        *(
            [f"not indexed: {not_indexed}; fix that, then run `cairn index --vault {where}`"]
            if not_indexed is not None
            else []
        ),
        *(
            [f"not registered: {not_registered}; then run `cairn vault add {where}`"]
            if not_registered is not None
            else []
        ),
    ]
    if undone:
        raise CairnError(f"the vault at {path} was created and committed, but " + "; and ".join(undone))


def _enclosing_work_tree(folder: Path) -> Path | None:
    """The git work tree `folder` is in (a folder holding `.git`, itself or above), or None."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def _review_after(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """The card contract's check (`card.review_due`): its own copy here took 20270101, 2027-W10-1 (Python 3.11's
    `fromisoformat`) and any number of digits, which lint then refused in the card it wrote."""
    from cairn.cards.card import review_due

    if value is None:
        return None
    if review_due(dt.date.today(), value.strip()) is None:
        raise click.BadParameter(f"{value!r} is not a date (YYYY-MM-DD) or a duration such as 180d")
    return value.strip()


def _words(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(v.strip() for v in values if v.strip())


@click.command()
@click.option("--name", default=None, help="The card's title; unique in the vault (asked for when missing).")
@click.option("--summary", default=None, help="One or two sentences: the text an agent gets (asked for when missing).")
@click.option("--scope", default=None, help="Comma-separated tags, e.g. git,ci; the first names the card's folder.")
@click.option(
    "--id",
    "card_id",
    default=None,
    help="topic/slug. Default: <first scope>/<slug of the name>; a bare slug goes under the first scope's folder. "
    "With no scope and no folder in --id, the card lands at the top of cards/ (cards/<slug>.md).",
)
@click.option("--alias", "aliases", multiple=True, help="Another word for the situation (repeatable).")
@click.option(
    "--not-when",
    "not_when",
    multiple=True,
    help='A prompt that says this, as a whole word, never gets the card ("go" is not in "django"; repeatable).',
)
@click.option(
    "--review-after",
    default=None,
    callback=_review_after,
    help="A date (YYYY-MM-DD) or a duration after --verified-at such as 180d; past it the card is expired.",
)
@click.option(
    "--supersedes",
    multiple=True,
    metavar="ID",
    shell_complete=complete_card_id,
    help="The id of a card this one replaces (repeatable).",
)
@click.option("--source", default=None, help="Where the lesson came from (a URL, an incident).")
@click.option(
    "--verified-at",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    default=None,
    help="When someone last confirmed the lesson, YYYY-MM-DD (default: today).",
)
@click.option(
    "--status",
    type=click.Choice(STATUSES),
    default=None,
    help="active (default; injected), draft or retired (never injected).",
)
@click.option("--body", default=None, help="The whole lesson in Markdown (default: no body).")
@click.option(
    "--body-file",
    type=File(exists=True, dir_okay=False, allow_dash=True, path_type=Path),
    help="Read the body from a file (- reads stdin).",
)
@click.option(
    "--edit", "-e", is_flag=True, help="Write the body in $VISUAL (else $EDITOR), starting from --body or --body-file."
)
@click.option("--draft", is_flag=True, help="Same as --status draft.")
@click.option("--force", is_flag=True, help="Write the card even when lint warns (lint errors always refuse it).")
@click.option("--interactive", "-i", is_flag=True, help="Ask for missing fields even when stdin is not a terminal.")
@vault_option
@errors_to_exit
def add(
    name: str | None,
    summary: str | None,
    scope: str | None,
    card_id: str | None,
    aliases: tuple[str, ...],
    not_when: tuple[str, ...],
    review_after: str | None,
    supersedes: tuple[str, ...],
    source: str | None,
    verified_at: dt.datetime | None,
    status: str | None,
    body: str | None,
    body_file: Path | None,
    edit: bool,
    draft: bool,
    force: bool,
    interactive: bool,
    vault_path: str | None,
) -> None:
    """Write a new card to cards/<id>.md, from flags or by asking. Never overwrites; does not commit.

    Before writing, the card is linted in the context of the vault with the rules `cairn lint` runs (unique names,
    near-duplicates, summary length, secrets, prompt injection...). Findings are shown as `path:line: rule-id
    message`; an error refuses the write (exit 1, nothing written), and so does a warning unless --force (then the
    card is written and the warnings still shown; when it asked for fields, it asks instead). A card without a body
    gets lint's body-present warning.

    \b
    Examples:
      cairn add --name "Force-push drops rebased commits" \\
        --summary "After a force-push, compare with git reflog before git pull --rebase." \\
        --scope git --body-file notes/force-push.md --review-after 180d
      cairn add --name "Pin the Python version in CI" --summary "..." --scope python,ci -e
      cairn add            (in a terminal: asks for the name, summary, scope, id and body)
    """
    from cairn.cards import authoring  # with the lint runner and PyYAML: not for `show` and `index`, beside it

    if body is not None and body_file is not None:
        raise click.UsageError("give --body or --body-file, not both")
    name, summary, scope, card_id, source, body = (
        None if v is None else argv_text(v) for v in (name, summary, scope, card_id, source, body)
    )
    aliases, not_when, supersedes = (tuple(map(argv_text, v)) for v in (aliases, not_when, supersedes))
    if draft and status not in (None, "draft"):
        raise click.UsageError("give --draft or --status, not both")
    vault = open_vault(vault_path)
    asked = False
    if name is None or summary is None:
        if not (interactive or sys.stdin.isatty()):
            raise click.UsageError("give --name and --summary (or run `cairn add` in a terminal to be asked)")
        if body_file is not None and str(body_file) == "-" and not sys.stdin.isatty():
            # the answers read ahead of the body would swallow it, and its lines would answer "Write it anyway?"
            raise click.UsageError(
                "--body-file - reads the body from stdin, which the questions read too; give --name and --summary "
                "with it, or the body in a file"
            )
        asked = True
        name = name or click.prompt("Name (the situation, in a few words)", err=True).strip()
        summary = (
            summary or click.prompt("Summary (what an agent should know or do, one or two sentences)", err=True).strip()
        )
        if scope is None:
            scope = click.prompt("Scope tags, comma-separated", default="", show_default=False, err=True)
        if card_id is None:
            suggested = authoring.resolve_card_id(authoring.NewCard(name, summary, split_tags(scope or "")))
            # "\r": answers from Windows
            card_id = click.prompt("Id (topic/slug)", default=suggested, err=True).strip() or None
        if body is None and body_file is None and not edit:
            # lint warns about a card without a body, so ask for it rather than refuse what was never asked for
            body = click.prompt(
                "Body (the whole lesson: what happened, why, the fix; Enter to leave it out)",
                default="",
                show_default=False,
                err=True,
            ).strip()
    text = _read_body(body_file) if body_file is not None else body or ""
    if edit:
        text = _edit_body(text)
    new = authoring.NewCard(
        name=name,
        summary=summary,
        scope=split_tags(scope or ""),
        card_id=card_id,
        body=text,
        status=status or ("draft" if draft else "active"),
        verified_at=verified_at.date() if verified_at else None,
        review_after=review_after,
        aliases=_words(aliases),
        not_when=_words(not_when),
        supersedes=_words(supersedes),
        source=source.strip() if source and source.strip() else None,
    )
    try:
        pending = authoring.prepare_card(vault, new)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM while it lints the vault: "Interrupted." alone left the card in doubt
        stopped = f"Stopped while {new.name!r} was checked against the vault's cards: nothing was written."
        echo("\n" + clean_line(stopped), err=True)
        raise
    for finding in pending.findings:
        echo(clean_line(str(finding)), err=True)
    if pending.warnings and not pending.errors and not force and asked:
        force = click.confirm("Write it anyway?", default=False, err=True)
    target = authoring.write_card(vault, pending, force=force)
    rel = target.relative_to(vault.root).as_posix()
    echo(f"Wrote {rel}.")
    from cairn import gitrepo

    rule = gitrepo.ignore_rule(target)
    if rule is not None:  # plain `git add` refuses it: no commit, so no agent, would ever hold the card
        echo(
            f"Note: git ignores {rel} (the rule {clean_line(rule)}), so plain `git add` refuses it: `git add -f` "
            "commits it all the same, or take the file out of that rule.",
            err=True,
        )
    echo(f"Next: review it, then `{_commit_step(vault, rel, forced=rule is not None)}`{_served_after(vault)}.")


def _served_after(vault: Vault) -> str:
    """What makes the card reach agents once committed: nothing more on the served branch; else the merge (or, in a
    clone, the push and fetch) that brings it to the served ref, which `cairn add` on a feature branch left unsaid."""
    from cairn import gitrepo

    try:
        ref, _ = indexer.served_commit(vault)
        with gitrepo.open_repo(vault) as repo:
            branch = gitrepo.head_branch(repo)
    except (CairnError, OSError):
        return " so agents can get it"
    if branch == ref:
        return " so agents can get it"
    served = ref.removeprefix("refs/heads/").removeprefix("refs/remotes/")
    return (
        f"; agents get it once it reaches {served}, the ref the vault serves (try it first with `cairn recall "
        "--ref HEAD`)"
    )


def _commit_step(vault: Vault, rel: str, forced: bool = False) -> str:
    """The command that commits a new card, safe to paste: its path quoted (an id may hold `&`, `*` or `~`, which
    lint only warns about), and run from the vault when the user is elsewhere (`--vault`, a registered vault). Under
    git's sparse checkout, `git add --sparse`: plain `git add` refuses a card in a folder the checkout leaves out;
    `forced`, a card git ignores, `git add -f`, which plain `git add` refuses too."""
    root = vault.root
    sparse = vault.git_root is not None and sparse_checkout(vault.git_root)
    step = f"git add{' -f' if forced else ''}{' --sparse' if sparse else ''} {shlex.quote(rel)} && git commit"
    try:
        here = Path.cwd().resolve() == root.resolve()
    except OSError:  # the current folder was removed
        here = False
    return step if here else f"cd {shlex.quote(str(root))} && {step}"


def _edit_body(text: str) -> str:
    """The body as written in $VISUAL (else $EDITOR), starting from `text`; one clear line when the editor fails or
    saves text that is not UTF-8."""
    try:
        edited = click.edit(text, extension=".md", require_save=False)
    except UnicodeDecodeError:
        raise CairnError(
            "the body the editor saved is not UTF-8 text; save it as UTF-8 and run it again (nothing was written)"
        ) from None
    except click.ClickException as exc:
        raise CairnError(
            f"{exc.format_message()}; set $VISUAL or $EDITOR to an editor that works, or give the body with --body "
            "or --body-file (nothing was written)"
        ) from None
    return edited if edited is not None else text


def _read_body(body_file: Path) -> str:
    """The body from --body-file (`-`: stdin), read no further than a card may hold (`/dev/zero` passes click's
    exists check), as UTF-8 text with universal newlines; one clear line when it is neither."""
    from cairn.cards.card import MAX_CARD_BYTES

    stdin = str(body_file) == "-"
    where = "stdin" if stdin else str(body_file)
    if stdin:
        data = sys.stdin.buffer.read(MAX_CARD_BYTES + 1)
    else:
        with body_file.open("rb") as handle:
            data = handle.read(MAX_CARD_BYTES + 1)
    if len(data) > MAX_CARD_BYTES:
        raise CairnError(f"{where} is over 1 MiB; a card must be under 1 MiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise CairnError(f"{where} is not UTF-8 text; save it as UTF-8 (nothing was written)") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


@click.command()
@click.option("--rebuild", is_flag=True, help="Ignore the cached index and build it again from scratch.")
@click.option("--worktree", is_flag=True, help="Index uncommitted files too (for authors; the hook never uses it).")
@click.option(
    "--ref",
    default=None,
    help="Index this ref instead, in its own file (e.g. HEAD: your branch before it is merged; the hook never "
    "uses it).",
)
@click.option(
    "--wait",
    "wait",
    type=FiniteFloatRange(min=0, max=86400),
    default=None,
    help="Wait at most this many seconds for another `cairn index` of the vault; past it, hand the update to a "
    "background process and return (the vault's git hooks use it: a commit never waits on a long or stuck index).",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes that read the cards (default: one per usable core, at most 8, from 1,000 cards to read; 1: none).",
)
@vault_option
@json_option
@errors_to_exit
def index(
    rebuild: bool,
    worktree: bool,
    ref: str | None,
    wait: float | None,
    jobs: int | None,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """Build or update the index of the vault's served ref (incrementally from the cached commit).

    The served ref is what agents get: the vault's `ref` in the user configuration, else the branch the remote
    `origin` calls its default (refs/remotes/origin/HEAD), else main, else master. A card committed only on a
    feature branch is served once it is merged.

    \b
    Example:
      cairn index --vault ~/team-lessons
      cairn index --ref HEAD       (your branch, for `cairn recall --ref HEAD`)
      cairn index --rebuild -j 4   (from scratch, in four worker processes)
    """
    if worktree and ref:
        raise click.UsageError("give --worktree or --ref, not both")
    if worktree and wait is not None:
        raise click.UsageError("--wait is for the served ref's index (the git hooks'); leave it out with --worktree")
    if worktree and jobs is not None:
        raise click.UsageError("--jobs is for committed cards; leave it out with --worktree (read in this process)")
    vault = open_vault(vault_path)
    with progress_bar("Indexing cards") as progress:
        if worktree:
            report = indexer.build_worktree_index(vault, progress=progress)
        else:
            try:
                report = indexer.build_index(
                    vault, rebuild=rebuild, progress=progress, ref=ref, lock_wait=wait, jobs=jobs
                )
            except IndexBusy:
                if wait is None:
                    raise
                from cairn.hot.hook import spawn_index  # never `python -m cairn` in the vault

                busy = f"Another `cairn index` of {vault.root} has been running for over {wait:g} s; "
                if rebuild or ref or indexer.queue_update(vault):
                    spawn_index(str(vault.root), *(["--rebuild"] if rebuild else []), *(["--ref", ref] if ref else []))
                    echo(busy + "this update continues in the background once it ends.", err=True)
                else:
                    echo(
                        busy + "an update already waits for it in the background, and indexes this commit too.",
                        err=True,
                    )
                return
    if report.mode == "diverged" and not as_json:
        echo(
            f"Error: {_indexed_ref(report.index_file)} moved to {(report.refused_commit or '')[:8]}, which does not "
            f"descend from the indexed {report.commit[:8]} (the branch was rewritten: a force-push?); the index stays "
            f"at {report.commit[:8]} and agents get nothing from this vault until it is rebuilt. If the new history "
            f"is right: `{indexer.rebuild_command(vault)}`",
            err=True,
        )
        sys.exit(1)
    from cairn import gitrepo

    # the cards the user sees in the folder and the index lacks (of the served ref's index: a branch's or the
    # working tree's is the author's own, and says nothing of what agents get)
    ignored = gitrepo.ignored_cards_note(vault) if not worktree and ref is None and vault.git_root else None
    if not worktree and ref is None:  # the served ref: the one the configuration may set went unread
        warn_unreadable_config(
            f"this indexed {_indexed_ref(report.index_file)}, not a ref it may configure for this vault"
        )
    if as_json:
        echo_json(
            {
                "index": str(report.index_file),
                "ref": None if worktree else _indexed_ref(report.index_file),
                "commit": report.commit,
                "previous_commit": report.previous_commit,
                "mode": report.mode,
                "refused_commit": report.refused_commit,
                "cards": report.n_cards,
                "read": report.read,
                "changed": list(report.changed_ids),
                "problems": [f.to_dict() for f in report.problems],
                "seconds": report.seconds,
                "vectors": "" if report.vectors is None else str(report.vectors),
                "ignored": ignored,
            }
        )
        if report.mode == "diverged":
            sys.exit(1)
    else:
        indexed = _indexed_ref(report.index_file)
        where = (
            "working tree"
            if worktree
            else f"{indexed} {report.commit[:8]}"
            if indexed != report.commit
            else indexed[:8]  # a revision given as --ref (HEAD~1, a short id) is indexed as its commit
        )
        if report.mode == "unchanged":
            echo(f"Index is up to date at {where}: {report.n_cards} cards.")
        elif report.mode == "incremental":
            echo(
                f"Updated the index {report.previous_commit[:8] if report.previous_commit else ''} -> {where}: "
                f"re-read {report.read} card file(s), {report.n_cards} cards ({report.seconds:.2f}s)."
            )
        else:
            echo(f"Indexed {report.n_cards} cards at {where} ({report.seconds:.2f}s).")
        if not worktree and ref is None and vault.git_root is not None:
            from cairn.hot.vault import checked_out_branch, detached_head, local_branch_served
            from cairn.userconfig import configured_ref, entry_for, serve_another

            configured = configured_ref(vault.root)
            entry = entry_for(vault.root)
            set_ref = serve_another(entry) if entry else None
            if configured is None and indexed == "HEAD":  # HEAD by default: no branch left to serve
                echo(f"Note: {detached_head(vault.git_root, report.commit, set_ref)}", err=True)
            checked_out = checked_out_branch(vault.git_root, indexed, configured, set_ref)
            if checked_out is not None:
                echo(f"Note: {checked_out}", err=True)
            elif (unpushed := local_branch_served(vault.git_root, indexed, configured)) is not None:
                echo(f"Note: {unpushed}", err=True)
            if ignored is not None:
                echo(f"Note: {ignored}.", err=True)
        asked = f" --vault {shlex.quote(vault_path)}" if vault_path else ""  # lint run from the same folder
        for finding in report.problems[:SHOWN_LEFT_OUT]:
            told = dataclasses.replace(finding, message=refusal_asking(finding.message, finding.path, asked))
            echo(clean_line(f"{told}  (left out of the index)"), err=True)
        if len(report.problems) > SHOWN_LEFT_OUT:
            echo(f"... and {len(report.problems) - SHOWN_LEFT_OUT} more left out.", err=True)
        if report.problems:
            echo(
                f"{len(report.problems)} card file(s) left out; fix them (see `cairn lint{asked}`) and commit.",
                err=True,
            )
        vectors = report.vectors
        if vectors is not None and vectors.status == "background":
            echo(
                f"Note: the semantic extra encodes {vectors.detail} card(s) in the "
                "background; until their vectors are written the hook serves this vault by words alone (`cairn "
                "doctor` says when they are current).",
                err=True,
            )
        if vectors is not None and vectors.status == "failed":
            echo(
                f"Note: the semantic extra wrote no card vectors ({vectors.detail}); the hook "
                "serves by words alone. `cairn doctor` checks the extra; `[recall] semantic = false` turns it off.",
                err=True,
            )


def _indexed_ref(index_file: Path) -> str:
    from cairn.hot.index import IndexReader

    try:
        with IndexReader(index_file) as reader:
            return str(reader.meta.get("ref") or "HEAD")
    except CairnError:
        return "HEAD"


@click.command()
@click.argument("card_id", metavar="ID", shell_complete=complete_card_id)
@click.option("--worktree", is_flag=True, help="Read the file in the working tree instead of the indexed commit.")
@vault_option
@json_option
@errors_to_exit
def show(card_id: str, worktree: bool, vault_path: str | None, as_json: bool) -> None:
    """Print the whole card ID with its provenance.

    ID may be NAME:ID as `recall`, `explain` and the prompt hook show a card of the configured vault NAME.

    \b
    Example:
      cairn show git/force-push-safely
      cairn show team:git/force-push-safely --json
    """
    vault_path, card_id = split_named_id(argv_text(card_id), vault_path)
    try:
        vault = open_vault(vault_path)
        asked = f" --vault {shlex.quote(vault_path)}" if vault_path else ""
        with indexing(vault.root) as progress:
            record = catalog.card_record(
                vault, card_id, worktree=worktree, vault_arg=asked, warn=warn, progress=progress
            )
    except (CardNotFound, VaultNotFound, InvalidId) as exc:
        # `zzz:git/x` with no vault zzz configured was looked up as the id `zzz:git/x` (an id may hold a colon), and
        # "no card" or "no vault here" hid the mistake, the vault's name (`x:git/x`, a one-letter name, was "not a
        # card id": it reads as a Windows drive); a --vault that is no vault is its own
        unknown = unknown_vault_name(card_id)
        if unknown is None or (isinstance(exc, VaultNotFound) and vault_path is not None):
            raise
        raise unknown from None
    if as_json:
        echo_json(record)
        return
    echo(render_card_text(record, vault))


def render_card_text(record: dict[str, object], vault: Vault) -> str:
    """The card as `cairn show` prints it: one line per field, then the body, then provenance. Every value but the
    body is kept on its line (`_one_line`): a card's scope or source holding a line break must not print a line
    that reads like one of these (`status: retired`). vault: the vault shown, which the commands it names ask."""
    one = _one_line
    lines = [
        one(record["name"]),
        f"id: {one(record['id'])}    path: {one(record['path'])}    status: {one(record['status'])}"
        + _not_served(record),
    ]
    if record.get("scope"):
        lines.append(f"scope: {', '.join(one(s) for s in record['scope'])}")  # type: ignore[attr-defined]
    if record.get("verified_at") or record.get("expires_on"):  # a review_after date needs no verified_at
        extra = f"    expires: {one(record['expires_on'])}" if record.get("expires_on") else ""
        lines.append(f"verified: {one(record.get('verified_at') or 'never')}{extra}")
    for key in ("aliases", "not_when", "supersedes"):
        if record.get(key):
            lines.append(f"{key}: {', '.join(one(v) for v in record[key])}")  # type: ignore[attr-defined]
    if record.get("source"):
        lines.append(f"source: {one(record['source'])}")
    lines += ["", f"summary: {one(record['summary'])}", "", str(record.get("body") or "")]
    provenance = record.get("provenance")
    if isinstance(provenance, dict) and provenance:
        lines += ["", *_provenance_lines(provenance, vault)]
    return "\n".join(lines).rstrip() + "\n"


def _not_served(record: dict[str, object]) -> str:
    """Why an active card is not served, as recall's admission says it (expiry before supersedes), or ""."""
    one = _one_line
    expires_on = record.get("expires_on")
    by = ", ".join(one(i) for i in record.get("superseded_by") or ())  # type: ignore[attr-defined]
    if record.get("status", "active") == "active" and expires_on and str(expires_on) < dt.date.today().isoformat():
        if by:  # a new review date would not serve it: the card superseding it keeps it out too
            return f" (review date {one(expires_on)} passed, and superseded by {by}: not served)"
        until = (
            "review_after is set to a later date"
            if review_date_fixed(record.get("review_after"))
            else "it is verified again"
        )
        return f" (review date {one(expires_on)} passed: not served until {until})"
    if by:
        return f" (superseded by {by}: not served)"
    return ""


def _one_line(value: object) -> str:
    """A value printed inside one line: `clean_line`, and the Unicode line and paragraph separators (which
    `str.splitlines` and some terminals break at) shown as `?` too."""
    return clean_line(str(value)).replace("\u2028", "?").replace("\u2029", "?")


def _provenance_lines(provenance: dict[str, Any], vault: Vault) -> list[str]:
    from cairn.index.provenance import describe

    authors = ", ".join(
        f"{_one_line(a['name'])} <{_one_line(a['email'])}> ({a['commits']} commit{'s' if a['commits'] != 1 else ''})"
        for a in provenance.get("authors") or []
    )
    lines = [
        "provenance:",
        f"  created:         {_one_line(describe(provenance.get('created')))}",
        f"  last changed:    {_one_line(describe(provenance.get('last_changed')))}",
        f"  summary changed: {_one_line(describe(provenance.get('summary_changed')))}",
        f"  authors:         {authors or 'unknown'}",
    ]
    if provenance.get("renamed_from"):
        lines.append(f"  renamed from:    {', '.join(_one_line(p) for p in provenance['renamed_from'])}")
    if provenance.get("shallow"):
        lines.append(
            "  note: this clone is shallow, so history stops at the created commit; the card may be older and have "
            f"other authors (`git -C {shell_word(vault.git_root or vault.root)} fetch --unshallow` for the whole "
            f"history, then `{indexer.rebuild_command(vault)}`)"
        )
    return lines


__all__ = ["init", "add", "index", "show", "CairnError"]
