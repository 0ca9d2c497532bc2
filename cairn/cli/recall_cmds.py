"""Commands that ask recall: recall (what a prompt would get), explain (why) and eval (how well, on cases)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import click

from cairn.cards.card import STATUSES
from cairn.cli.common import (
    argv_text,
    echo,
    echo_json,
    error_text,
    errors_to_exit,
    file_given,
    indexing,
    json_option,
    open_vault,
    progress_stages,
    ref_option,
    resolve_vault,
    utf8_flag,
    vault_option,
    warn,
    warn_unreadable_config,
    where_to_read,
    worktree_option,
)
from cairn.hot.errors import CairnError, InvalidCases
from cairn.hot.gates import LITTLE_EVIDENCE, NAMED_LEAD, failed_gate
from cairn.hot.hook import context_trim, hook_gives, show_command, vault_encloses
from cairn.hot.index import IndexedCard, IndexReader
from cairn.hot.recall import (
    AGREEMENT_PICKED,
    ALREADY_INJECTED,
    FRAGMENT_PICKED,
    GATE_REASONS,
    GROUP_SPREAD,
    INJECTED,
    PHRASE_PICKED,
    PHRASE_RARE,
    PHRASE_SCALE,
    REJECTED,
    SEMANTIC_MIN_CARDS,
    SEMANTIC_MIN_Z,
    SEMANTIC_PICKED,
    SEMANTIC_VETO,
    UNKNOWN_STATUS,
    Candidate,
    QueryWeights,
    Result,
    evidence_of,
    missing_terms,
    not_when_found,
    prompt_weights,
    recall,
    veto_judges,
)
from cairn.hot.serve import (
    MAX_CARDS,
    Layer,
    Pick,
    Served,
    card_json,
    layer_scope,
    lesson_keys,
    scope_tags,
    serve_layers,
    serve_prompt,
    served_file,
)
from cairn.hot.tokens import is_cjk, tokenize
from cairn.hot.userconfig import VaultEntry, load_vaults
from cairn.hot.vault import Vault, locate_served, shell_word
from cairn.index import build as indexer
from cairn.terminal import clean_line, columns, pad
from cairn.userconfig import entry_for, outside_projects, served_scope

if TYPE_CHECKING:  # eval's own: loaded when eval or calibrate runs, not for `list`, `recall` or `explain`
    from cairn.quality.evaluate import Case, CaseOutcome

EXPLAIN_TOP = 20
_GATED = GATE_REASONS


def _scope_with_tags(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--scope "" (an unset variable) would mean every scope, silently: refused, as `cairn list` refuses it. The tags
    are read as QUERY is (`argv_text`): in an ASCII locale `--scope 数据库` was a tag of escapes that refused every
    card."""
    if value is None:
        return None
    value = utf8_flag(value, "--scope")
    if not scope_tags(value):
        raise click.BadParameter(
            f"{value!r} holds no tag; give one such as --scope git, or leave --scope out (then $CAIRN_SCOPE applies)"
        )
    return value


def _session_given(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--session "" (an unset variable) would be one session every such recall shares, where the hook and the MCP
    server take an empty id as none: refused."""
    if value is not None and not value.strip():
        raise click.BadParameter(
            "is empty (a shell variable that is not set?); give the agent's session id, or leave --session out"
        )
    return value


scope_option = click.option(
    "--scope",
    default=None,
    callback=_scope_with_tags,
    help="Comma-separated scope tags (default: $CAIRN_SCOPE); cards of other scopes are refused.",
)


@click.command("recall")
@click.argument("query")
@scope_option
@click.option(
    "--session",
    "session_id",
    default=None,
    callback=_session_given,
    help="Agent session id: each card at most once per session.",
)
@ref_option
@worktree_option
@vault_option
@json_option
@errors_to_exit
def recall_cmd(
    query: str,
    scope: str | None,
    session_id: str | None,
    ref: str | None,
    worktree: bool,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """The cards a prompt would get (at most 3), or none when none fits. QUERY `-` reads the prompt from stdin.

    Outside any vault, with no --vault and no $CAIRN_VAULT, it asks every configured vault together as the prompt
    hook does (ids shown as NAME:ID; --session is shared with the hook).

    \b
    Example:
      cairn recall "git push --force rejected after a rebase" --json
      pbpaste | cairn recall -
      cairn recall --worktree "a prompt my uncommitted card should fit"
    """
    where_to_read(ref, worktree)
    if session_id is not None and (ref or worktree):
        # The session is the agent's, shared with the hook: a branch's or an uncommitted card recorded there under
        # its id would keep the reviewed card of that id from the agent for the rest of the session.
        raise click.UsageError(
            f"--session records what an agent was given, and {'--ref' if ref else '--worktree'} reads cards no agent "
            "is given: leave one out"
        )
    _check_ref(ref)
    query, _ = _query_text(query)
    explain = _explain_command(scope, ref, worktree, vault_path)  # what to run when nothing fits
    if serves_configured(vault_path):
        with configured_layers(scope, ref, worktree) as slots:
            _warn_skipped(slots)
            layers = [s.layer for s in slots if s.layer is not None]
            layered = serve_layers(
                layers, query, session_id=session_id, fit=context_trim(layers), want_already=session_id is not None
            )
            read = [{"name": layer.name, "commit": layer.index.commit} for layer in layers]
        _print_layered(layered.given, list(layered.already) if session_id else None, as_json, explain, read)
        if not layered.given and not layered.already and ref is None and not worktree and not as_json:
            _note_unserved(
                slots,
                "`cairn recall --ref HEAD QUERY` asks them",
                "`cairn recall --worktree QUERY` reads the card files as they are",
            )
        return
    vault = _asked_vault(vault_path, served=ref is None and not worktree)
    tags, entry = _vault_scope(vault, scope)  # a configured vault's limits, as the hook applies them
    if tags is None:
        _print_recall([], [] if session_id else None, as_json, str(vault.root), explain)
        return
    with _opened(vault, ref, worktree) as index:
        served = serve_prompt(
            index,
            query,
            vault_root=str(vault.root),
            scope=tags,
            session_id=session_id,
            fit=context_trim([Layer(None, str(vault.root), index)]),
            name=None if entry is None else entry.name,
        )
        already = _already_given(index, query, str(vault.root), tags, served) if session_id else None
        commit = index.commit  # of the index read: an older one while another process updates it (`open_index`)
    _print_recall(served.given, already, as_json, str(vault.root), explain, ref, commit)
    if not served.given and not already and ref is None and not worktree and not as_json:  # JSON: stdout alone
        asked = f" --vault {shell_word(vault_path)}" if vault_path else ""  # from another folder: ask this vault
        note = _unserved_changes(
            vault,
            f"`cairn recall --ref HEAD{asked} QUERY` asks them",
            f"`cairn recall --worktree{asked} QUERY` reads the card files as they are",
        )
        if note is not None:
            echo(f"Note: {note}.", err=True)


def _explain_command(scope: str | None, ref: str | None, worktree: bool, vault_path: str | None) -> str:
    """The `cairn explain` that shows why this recall abstained: with its --scope, --ref, --worktree and --vault,
    without which explain reads other cards, or gates them otherwise."""
    words = ["cairn", "explain"]
    for flag, value in (("--scope", scope), ("--ref", ref), ("--vault", vault_path)):
        if value:
            words += [flag, shell_word(value)]
    if worktree:
        words.append("--worktree")
    return " ".join([*words, "QUERY"])


def _asked_vault(vault_path: str | None, served: bool) -> Vault:
    """The vault recall or explain asks alone. For what agents are served (`served`: no --ref, no --worktree), a vault
    named by --vault, $CAIRN_VAULT or the configuration is refused as the prompt hook and the MCP server refuse it
    (`locate_served`: no cairn.toml, cards/ gone from the work tree), with the same line and fix: the hook serves
    nothing from it. So is the vault around the current folder when it is a configured one; another is asked as it
    is found (the hook never serves a folder by where it runs)."""
    vault, reason = resolve_vault(vault_path)
    if served and (reason != "current folder" or entry_for(vault.root) is not None):
        locate_served(str(vault.root))
    return vault


def _opened(vault: Vault, ref: str | None, worktree: bool) -> IndexReader:
    """The index recall and explain read: what an agent gets, so nothing from an index kept after its served branch
    was rewritten (`served_only`); its build or update drawn on a terminal, the bar ended before the answer."""
    with indexing(vault.root) as progress:
        return indexer.open_index(
            vault, ref=ref, worktree=worktree, served_only=ref is None and not worktree, progress=progress
        )


def check_cases(
    vault: Vault, index: IndexReader, cases: Sequence[Case], path: Path, worktree: bool, vault_path: str | None
) -> None:
    """`check_expected` for eval and calibrate: on a branch that renames or adds the cards its cases expect, the ids
    are right and the served ref lacks them, so the error says so, and that --worktree reads the cards checked out,
    instead of "fix the id" (whose commands ask the vault given as --vault `vault_path`, from any folder)."""
    from cairn.quality.evaluate import check_expected

    vault_arg = f" --vault {shell_word(vault_path)}" if vault_path else ""
    # `cairn list` shows the served ref's cards: with --worktree the ids are the files checked out
    fix = (
        f"fix the id (a card's id is its file's path under cards/, without .md; `cairn lint{vault_arg}` shows the "
        "card files left out)"
        if worktree
        else None
    )
    try:
        check_expected(index, cases, path, fix=fix, vault_arg=vault_arg)
    except InvalidCases:
        reads = "`--worktree` reads the cards checked out"
        note = None if worktree else _unserved_changes(vault, reads, reads)
        if note is None:
            raise
        check_expected(index, cases, path, fix=note)


def served_note(vault: Vault, worktree: bool, what: str) -> None:
    """For eval and calibrate, which read the served ref unless --worktree: a note (stderr) when the checkout holds
    card changes it does not (an author on a branch who improved a card saw the served ref's figures, unchanged).
    what: whose figures the output gives, and how --worktree reads the cards checked out."""
    note = None if worktree else _unserved_changes(vault, what, what)
    if note is not None:
        echo(f"Note: {note}.", err=True)


def _unserved_changes(vault: Vault, ask: str, ask_worktree: str) -> str | None:
    """Why a card just written or committed may not be asked yet, when nothing fits: the commit checked out holds
    card changes the served ref does not (an author on a feature branch), or the working tree holds card files no
    commit does (written by `cairn add` and not committed). "No card fits" alone sent the author to the card.
    ask, ask_worktree: how the command asks the cards checked out, or the files as they are, instead."""
    from cairn import gitrepo

    try:
        ref, served = indexer.served_commit(vault)
        with gitrepo.open_repo(vault) as repo:
            head = gitrepo.head_commit(repo)
            # from where they part: a checkout that is only behind the served ref (a clone after `cairn sync`) holds
            # no card of its own
            since = gitrepo.merge_base(repo, served, head) or served
            committed = head != served and bool(gitrepo.changed_cards(repo, since, head, vault))
            uncommitted = [] if committed else gitrepo.uncommitted_cards(repo, vault)
            flag = gitrepo.passed_over_flag(repo, vault, uncommitted[0]) if len(uncommitted) == 1 else None
    # no commit yet, a damaged repository: nothing to add
    except (CairnError, OSError, ValueError, gitrepo.GitCommandError):
        return None
    shown_ref = ref.removeprefix("refs/heads/").removeprefix("refs/remotes/")
    if committed:
        return f"the commit checked out changes cards that {shown_ref} (the ref agents are served) does not have yet; {ask}"
    if not uncommitted:  # a card file git ignores is no uncommitted change, and `git add` refuses it
        ignored = gitrepo.ignored_cards_note(vault)
        return None if ignored is None else f"{ignored}; {ask_worktree}"
    if flag is not None:  # `git add` and `git commit -a` pass its edits over: "not committed" alone led nowhere
        path = clean_line(shell_word(uncommitted[0]))
        root = clean_line(shell_word(vault.root))  # the path is the vault's: run from anywhere (`--vault NAME`)
        return (
            f"{path} in the vault's folder is not committed, and git's {flag} flag on it has `git add` pass its "
            f"edits over: `git -C {root} update-index --no-{flag} {path}`, then commit it, so agents are served it once "
            f"{shown_ref} holds it; {ask_worktree}"
        )
    more = f" and {len(uncommitted) - 1} more card files" if len(uncommitted) > 1 else ""
    return (
        f"{clean_line(shell_word(uncommitted[0]))}{more} in the vault's folder {'are' if more else 'is'} not committed, and agents "
        f"are served {shown_ref} only once it holds them; {ask_worktree}"
    )


def _note_unserved(slots: Sequence[Slot], ask: str, ask_worktree: str) -> None:
    """`_unserved_changes` of each configured vault in play, as a note on stderr naming the vault: recall and explain
    outside any vault, which ask them all, say it as they do of the one vault they are run in."""
    from cairn.hot.vault import find_vault

    for slot in slots:
        if slot.layer is None:
            continue
        note = _unserved_changes(find_vault(slot.layer.root), ask, ask_worktree)
        if note is not None:
            echo(f"Note: vault {slot.name!r}: {note}.", err=True)


def _vault_scope(vault: Vault, scope: str | None) -> tuple[tuple[str, ...] | None, VaultEntry | None]:
    """The scope recall and explain use for one vault (`served_scope`: a configured vault's `scopes` limit met with
    the declared tags, None when they share no tag) and its configured entry; says on stderr when that limit, or
    its projects limit, means the prompt hook serves less from it here, and when the user configuration cannot be
    read (the hook serves nothing; `served_scope` finds no entry, so no configured limit applies here)."""
    warn_unreadable_config(
        "this answer applies none of the limits it may configure for this vault (ref, scopes, projects)"
    )
    tags, entry = served_scope(vault.root, scope_tags(scope))
    if entry is not None and tags is None:
        warn(
            f"vault {entry.name!r} is configured to serve only cards of scope {', '.join(entry.scopes)}; the scope "
            "asked shares no tag with it, so the prompt hook serves nothing from it"
        )
    elif entry is not None and entry.scopes:
        echo(
            f"Note: vault {entry.name!r} serves only cards of scope {', '.join(tags or ())} (its configuration).",
            err=True,
        )
    note = outside_projects(entry, os.getcwd())
    if note is not None:
        echo(f"Note: {note}.", err=True)
    return tags, entry


class Slot(NamedTuple):
    """A configured vault as recall and explain meet it: its layer, or why it serves nothing here."""

    name: str
    root: str | None
    layer: Layer | None
    skipped: str | None = None  # why it serves nothing here
    broken: bool = False  # skipped for a fault to fix (a moved folder, an index that cannot be built)


def serves_configured(vault_path: str | None) -> bool:
    """Whether a command serves the configured vaults together, as the prompt hook does: no `--vault`, no
    `$CAIRN_VAULT`, no vault around the current folder, and the user configuration lists vaults."""
    from cairn.hot.errors import VaultLeftOut, VaultNotFound
    from cairn.hot.vault import find_vault

    if vault_path or os.environ.get("CAIRN_VAULT"):
        return False
    try:
        find_vault(None)
        return False
    except VaultLeftOut:  # the vault here, its cards/ left out of the work tree: said, not the configured ones
        raise
    except VaultNotFound:
        pass
    return bool(load_vaults())


@contextmanager
def configured_layers(scope: str | None, ref: str | None, worktree: bool = False) -> Iterator[list[Slot]]:
    """Every vault of the user configuration, in its order, as the hook takes them (`hook_vaults`): a vault limited
    to projects the current folder is outside of, or to scopes the declared ones miss, serves nothing; an unusable
    one is skipped with why. Each index is brought up to its served ref (the configured `ref`), or `ref`'s, or to
    the working tree."""
    from cairn.hot.errors import CairnError
    from cairn.hot.vault import find_vault, hook_vaults

    vaults, unusable = hook_vaults(None)
    as_served = ref is None and not worktree  # a rewritten served branch serves nothing, as to the hook
    declared = scope_tags(scope)
    cwd = os.getcwd()
    slots: list[Slot] = []
    with ExitStack() as stack:
        for vault in vaults:
            name, root = vault.name or "", vault.dirs.root
            tags = layer_scope(declared, vault.scopes)
            if not vault.serves_cwd(cwd):
                where = ", ".join(clean_line(project) for project in vault.projects)
                slots.append(
                    Slot(name, root, None, f"the current folder is outside the projects it is limited to ({where})")
                )
            elif tags is None:
                slots.append(Slot(name, root, None, "the scope shares no tag with the scopes it is limited to"))
            else:
                try:
                    with indexing(root) as progress:
                        opened = indexer.open_index(
                            find_vault(root), ref=ref, worktree=worktree, served_only=as_served, progress=progress
                        )
                    index = stack.enter_context(opened)
                except (CairnError, OSError) as exc:  # OSError: its index the system refuses to read, as the hook
                    slots.append(Slot(name, root, None, error_text(exc), broken=True))
                    continue
                slots.append(Slot(name, root, Layer(name, root, index, tags), None))
        slots += [Slot(name, None, None, why, broken=True) for name, why in unusable]
        if all(slot.broken for slot in slots):
            from cairn.hot.errors import VaultNotFound

            raise VaultNotFound("; ".join(f"{slot.name}: {slot.skipped}" for slot in slots))
        yield slots


def _warn_skipped(slots: Sequence[Slot]) -> None:
    for slot in slots:
        if slot.broken:
            echo(f"Warning: vault {slot.name!r} serves nothing: {slot.skipped}", err=True)


def _print_layered(
    given: Sequence[Pick], already: list[str] | None, as_json: bool, explain: str, read: list[dict[str, Any]]
) -> None:
    """What the configured vaults give a prompt: ids as `name:id`, paths in full (several vaults). read: each vault
    asked, its name and the commit its index holds (`--json`'s `vaults`)."""
    if as_json:
        cards = [{**card_json(p.candidate, p.qid, p.layer.root), "vault": p.layer.name} for p in given]
        out: dict[str, Any] = {"cards": cards, "abstained": not given, "vaults": read}
        if already is not None:
            out["already_injected"] = already
        echo_json(out)
        return
    if not given and already:
        echo(f"Already given in this session: {', '.join(already)} (no other card fits this prompt).")
        return
    if not given:
        echo(f"No card fits this prompt in any configured vault (recall abstained). `{explain}` shows why.")
        return
    for n, p in enumerate(given, 1):
        c = p.candidate
        echo(f"{n}. {c.card.name}  [{p.qid}]  score {c.score:.2f}")
        echo(f"   {c.card.summary}")
        echo(f"   {_file_line(p.layer.root, c.card, os.path.join(p.layer.root, c.card.path), p.qid)}")
    if already:
        echo(f"Already given in this session: {', '.join(already)}")


def _already_given(
    index: IndexReader, query: str, vault_root: str, scope: tuple[str, ...], served: Served
) -> list[str]:
    """The cards this prompt would get that the session already got: refused as already injected, and injected by
    the same recall without the session (a card the session got that would not fit this prompt is left out)."""
    refused = {c.card.id for c in served.result.candidates if c.reason == ALREADY_INJECTED}
    if not refused:
        return []
    trim = context_trim([Layer(None, vault_root, index)])
    fresh = serve_prompt(index, query, vault_root=vault_root, scope=scope, fit=trim)  # no session: nothing recorded
    return [c.card.id for c in fresh.given if c.card.id in refused]


def _file_line(
    root: str, card: IndexedCard, shown: str, card_id: str, vault_arg: str = "", ref: str | None = None
) -> str:
    """The card's file, and when it is not what was indexed (a branch's or an uncommitted edit, or no file: a clone
    whose checkout is behind the fetched branch it serves) a word saying so: agents are given no path then
    (`serve.served_file`). vault_arg: ` --vault ROOT` (quoted) when recall was asked from outside the vault, where
    `cairn show ID` alone would read another vault's card, or none. ref: the --ref recall read, whose card `cairn
    show` (the served ref's) is not: git shows it."""
    if served_file(root, card):
        return shown
    why = "this file differs from the card served"
    if not os.path.lexists(os.path.join(root, card.path)):
        why = "no such file in the working tree"
    if ref:
        why = why.replace("the card served", f"{ref}'s card")
        return f"{shown} ({why}: `git -C {shell_word(root)} show {shell_word(f'{ref}:./{card.path}')}` reads it)"
    return f"{shown} ({why}: `{show_command(card_id, vault_arg)}` reads the card)"


def _print_recall(
    given: Sequence[Candidate],
    already: list[str] | None,
    as_json: bool,
    root: str,
    explain: str,
    ref: str | None = None,
    commit: str | None = None,
) -> None:
    """The cards served (`Served.given`: recall's, at most the hook's `MAX_CARDS`, whatever a vault's own limit).
    commit: the one the index read holds (`--json`'s `commit`; None when no index was read)."""
    if as_json:
        cards = [card_json(c, root=root) for c in given]
        out: dict[str, Any] = {"cards": cards, "abstained": not given, "commit": commit}
        if already is not None:  # with --session
            out["already_injected"] = already
        echo_json(out)
        return
    if not given and already:
        echo(f"Already given in this session: {', '.join(already)} (no other card fits this prompt).")
        return
    if not given:
        echo(f"No card fits this prompt (recall abstained). `{explain}` shows why.")
        return
    # Asked from outside the vault (`--vault`), a path relative to it names no file here, and `cairn show ID` opens
    # another vault or none: the hook's block says the same of a vault that does not enclose the agent's folder.
    here = vault_encloses(root, os.getcwd())
    for n, c in enumerate(given, 1):
        echo(f"{n}. {c.card.name}  [{c.card.id}]  score {c.score:.2f}")
        echo(f"   {c.card.summary}")
        shown, vault_arg = c.card.path, ""
        if not here:
            shown, vault_arg = os.path.join(root, c.card.path), f" --vault {shell_word(root)}"
        echo(f"   {_file_line(root, c.card, shown, c.card.id, vault_arg, ref)}")
    if already:
        echo(f"Already given in this session: {', '.join(already)}")


@click.command()
@click.argument("query")
@scope_option
@ref_option
@worktree_option
@vault_option
@json_option
@errors_to_exit
def explain(
    query: str, scope: str | None, ref: str | None, worktree: bool, vault_path: str | None, as_json: bool
) -> None:
    """Why recall injects what it does: the 20 best candidates the gates judged and every card refused at admission
    (status, expiry, supersedes, scope, not_when, another language), by score, with each gate's value, the prompt's
    terms each card matched and, for a rejected card, the heaviest ones it lacks. QUERY `-` reads stdin.

    Outside any vault, with no --vault and no $CAIRN_VAULT, it explains every configured vault, each under its own
    heading (ids shown as NAME:ID), as the prompt hook would serve them together.

    \b
    Example:
      cairn explain "how do I force-push safely"
      cairn explain - < prompt.txt
    """
    where_to_read(ref, worktree)
    _check_ref(ref)
    query, given = _query_text(query)
    cut = _cut_note(len(query), given)
    if serves_configured(vault_path):
        _explain_layered(query, scope, ref, worktree, as_json, cut)
        return
    vault = _asked_vault(vault_path, served=ref is None and not worktree)
    tags, _ = _vault_scope(vault, scope)  # a configured vault's limits, as the hook applies them
    if tags is None:
        if as_json:
            echo_json(
                {
                    "query": query,
                    "abstained": True,
                    "injected": [],
                    "candidates": [],
                    "skipped": "scope",
                    "commit": None,
                }
            )
        else:  # not an empty stdout (`cairn recall` sends the reader here to see why)
            echo(
                "Abstained: no card is asked; the scope asked shares no tag with the scopes this vault is configured "
                "to serve (`cairn vault list`)."
            )
        return
    with _opened(vault, ref, worktree) as index:
        similarity = _similarities(index, query)
        result = recall(index, query, scope=tags, examine_all=True, semantic=similarity)
        weights = prompt_weights(index, query, result.settings)
        read = similarity is not None and index.n_cards >= SEMANTIC_MIN_CARDS  # smaller vaults: words alone
        dropped: dict[str, str] = {}
        layer = Layer(None, str(vault.root), index, tags)
        # as the hook gives them: at most MAX_CARDS whatever the vault's max_cards, and as many as its block holds
        served = [p.qid for p in hook_gives([layer], [result], dropped)]
        commit = index.commit  # of the index read, as `cairn recall --json` names it
    rows = add_missing(explain_rows(result, query), weights)
    for row in rows:
        if row["decision"] == "injected" and row["id"] not in served:
            row["decision"], row["reason"] = REJECTED, dropped.get(row["id"], "over_total")
    if as_json:
        out: dict[str, Any] = {
            "query": query,
            "abstained": result.abstained,
            "injected": served,
            "candidates": rows,
            "commit": commit,
        }
        if weights.foreign:  # terms weighed a tenth (`recall.FOREIGN_WEIGHT`), said only where the vault is lost
            out["foreign_terms"] = list(weights.foreign)
        if result.fragment is not None:  # the part of the prompt the fragment pick asked alone
            out["fragment"] = result.fragment
        if result.phrases:  # the rare phrases the phrase step found (`recall._phrase_step`)
            out["phrases"] = list(result.phrases)
        if read:  # whether the semantic veto judged the prompt (`recall.SEMANTIC_VETO_FRAGMENTS`)
            out["semantic_veto"] = veto_judges(query)
        echo_json(out)
    else:
        table = render_explain(
            result,
            rows,
            injected=served,
            foreign=weights.foreign,
            veto=_veto_note(read, veto_judges(query)),
            query=query,
            scope=_scope_note(scope, tags),
        )
        echo("\n".join(filter(None, (cut, table))))
    if not served and ref is None and not worktree and not as_json:
        asked = f" --vault {shell_word(vault_path)}" if vault_path else ""
        note = _unserved_changes(
            vault,
            f"`cairn explain --ref HEAD{asked} QUERY` asks them",
            f"`cairn explain --worktree{asked} QUERY` reads the card files",
        )
        if note is not None:
            echo(f"Note: {note}.", err=True)


def add_missing(rows: list[dict[str, Any]], weights: QueryWeights) -> list[dict[str, Any]]:
    """`rows` with, on each card the gates rejected, the heaviest prompt terms it lacks (`missing`)."""
    for row in rows:
        if row["decision"] == REJECTED and row["gates"] is not None:
            row["missing"] = missing_terms(weights, row["matched"])
    return rows


def _cut_note(read: int, given: int) -> str | None:
    """explain's line for a prompt longer than the hook reads, else None."""
    if read == given:
        return None
    return (
        f"The prompt is {given} characters; the first {read} characters are read, as the prompt hook reads them "
        "(the rest is not asked)."
    )


def _scope_note(flag: str | None, tags: Sequence[str]) -> str | None:
    """explain's line on the scope recall was asked with (`--scope`, else `$CAIRN_SCOPE`, which a shell may hold
    unseen, else a configured vault's `scopes`), else None: its cards of other scopes are refused `out_of_scope`."""
    if not tags:
        return None
    where = "" if flag is not None else " (from $CAIRN_SCOPE)" if scope_tags(None) else " (the vault's configuration)"
    shown = ", ".join(clean_line(tag) for tag in tags)
    return f"Scope asked: {shown}{where}; a card scoped to other tags only is refused (out_of_scope)."


def _veto_note(read: bool, judged: bool) -> str | None:
    """explain's line when similarities were read (in a vault of `SEMANTIC_MIN_CARDS` or more) and the semantic veto
    did not judge the prompt (`recall.veto_judges`), else None."""
    if not read or judged:
        return None
    return (
        "Similarities read, no semantic veto: the prompt says more than one thing in prose (the wrapper is encoded "
        "with the question), so the word gates judge it."
    )


def _explain_layered(
    query: str, scope: str | None, ref: str | None, worktree: bool, as_json: bool, cut: str | None = None
) -> None:
    """`explain` across the configured vaults: each vault's candidates under its own heading, ids as `name:id`, and
    a card its vault's recall chose but the merge left out marked rejected with the merge's reason, as the hook
    logs it (`same_lesson`, `cross_vault`, `over_total`)."""
    sections: list[dict[str, Any]] = []
    tables: list[str] = []
    with configured_layers(scope, ref, worktree) as slots:
        layers = [s.layer for s in slots if s.layer is not None]
        results: dict[int, Result] = {}
        weights: dict[int, QueryWeights] = {}
        veto: dict[int, bool] = {}  # read similarities in a vault the semantic rules apply to: whether the veto judged
        for layer in layers:
            similarity = _similarities(layer.index, query)
            result = recall(layer.index, query, scope=layer.scope, examine_all=True, semantic=similarity)
            results[id(layer)] = result
            weights[id(layer)] = prompt_weights(layer.index, query, result.settings)
            if similarity is not None and layer.index.n_cards >= SEMANTIC_MIN_CARDS:
                veto[id(layer)] = veto_judges(query)
        dropped: dict[str, str] = {}
        given = hook_gives(layers, [results[id(layer)] for layer in layers], dropped)
        kept_copies = _lesson_kept(layers, [results[id(layer)] for layer in layers], dropped)
        for slot in slots:
            section: dict[str, Any] = {"vault": slot.name, "path": slot.root}
            sections.append(section)
            if slot.layer is None:
                section.update(skipped=slot.skipped, commit=None)
                continue
            layer = slot.layer
            section["commit"] = layer.index.commit
            result = results[id(layer)]
            rows = explain_rows(result, query)
            kept = [p.qid for p in given if p.layer is layer]
            for row in rows:
                if row["decision"] == REJECTED and row["gates"] is not None:
                    row["missing"] = missing_terms(weights[id(layer)], row["matched"])
                row["id"] = layer.qualified(row["id"])
                if row.get("blocked_by"):
                    row["blocked_by"] = layer.qualified(row["blocked_by"])
                if row["decision"] == "injected" and row["id"] not in kept:
                    row["decision"], row["reason"] = REJECTED, dropped.get(row["id"], "over_total")
                    if row["id"] in kept_copies:  # the card of the same lesson the merge kept, in its vault
                        row["same_as"] = kept_copies[row["id"]]
            section.update(abstained=result.abstained, injected=kept)
            if weights[id(layer)].foreign:
                section["foreign_terms"] = list(weights[id(layer)].foreign)
            if result.fragment is not None:
                section["fragment"] = result.fragment
            if result.phrases:
                section["phrases"] = list(result.phrases)
            if id(layer) in veto:
                section["semantic_veto"] = veto[id(layer)]
            section["candidates"] = rows
            tables.append(
                render_explain(
                    result,
                    rows,
                    injected=section["injected"],
                    foreign=weights[id(layer)].foreign,
                    veto=_veto_note(id(layer) in veto, veto.get(id(layer), True)),
                    query=query,
                    scope=_scope_note(scope, layer.scope),
                )
            )
    injected = [p.qid for p in given]
    if as_json:
        echo_json({"query": query, "abstained": not given, "injected": injected, "vaults": sections})
        return
    lines = [] if cut is None else [cut]
    lines += [
        f"Across {len(slots)} configured vault(s): "
        + (f"injected {', '.join(injected)}" if given else "abstained, nothing fits")
        + f" (at most {MAX_CARDS} in total; each vault's own thresholds)."
    ]
    for section in sections:
        lines += ["", f"== {section['vault']} ({section['path'] or 'unusable'}) =="]
        lines.append(f"Skipped: {section['skipped']}" if "skipped" in section else tables.pop(0))
    echo("\n".join(lines))
    if not given and ref is None and not worktree:
        _note_unserved(
            slots, "`cairn explain --ref HEAD QUERY` asks them", "`cairn explain --worktree QUERY` reads the card files"
        )


def _lesson_kept(layers: Sequence[Layer], results: Sequence[Result], dropped: dict[str, str]) -> dict[str, str]:
    """Each card the merge left out as `same_lesson`, with the card of that lesson it kept before it (`serve`'s
    merge: the same name or summary, the first vault's): which vault's card hides it."""
    holders: dict[tuple[int, str], str] = {}
    kept: dict[str, str] = {}
    for layer, result in zip(layers, results, strict=True):
        for c in result.injected:
            qid = layer.qualified(c.card.id)
            if dropped.get(qid) == "cross_vault":
                continue
            keys = [(i, key) for i, key in enumerate(lesson_keys(c.card)) if key]
            if dropped.get(qid) == "same_lesson":
                holder = next((holders[k] for k in keys if k in holders), None)
                if holder is not None:
                    kept[qid] = holder
                continue
            for k in keys:
                holders.setdefault(k, qid)
    return kept


@click.command("eval")
@click.option(
    "--cases",
    "cases_path",
    required=True,
    type=click.Path(dir_okay=False),
    callback=file_given,
    help="Cases file: .jsonl or .yaml (id, query, expect, slice).",
)
@scope_option
@click.option(
    "--worktree", is_flag=True, help="Evaluate the working tree (uncommitted cards) instead of the served ref."
)
@click.option(
    "--failures",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="After the table, list up to N failing cases: positives not given an expected card, negatives given a "
    "card (0: none). The JSON has every case.",
)
@vault_option
@json_option
@errors_to_exit
def eval_cmd(
    cases_path: Path, scope: str | None, worktree: bool, failures: int, vault_path: str | None, as_json: bool
) -> None:
    """Recall@1/3, Injection@1/3 and the false injection rate on positive and negative cases.

    \b
    Example:
      cairn eval --cases evals/cases.yaml
      cairn eval --cases evals/cases.yaml --failures 50
      cairn eval --cases evals/cases.yaml --json
    """
    from cairn.quality.evaluate import evaluate, load_cases, shown

    vault = open_vault(vault_path)
    cases = load_cases(cases_path)
    if not cases:  # all-zero figures and "no failing cases" would read as a pass
        raise InvalidCases(f"{cases_path}: no cases to evaluate; add positive and negative cases (id, query, expect)")
    with indexing(vault.root) as progress:  # the bar ends before eval's own
        opened = indexer.open_index(vault, worktree=worktree, warn=warn, progress=progress)
    with opened as index:
        check_cases(vault, index, cases, cases_path, worktree, vault_path)
        with progress_stages() as stage:  # the cases encoded (a minute for thousands), then evaluated: one bar
            queries = [case.query for case in cases]
            semantic = _cases_similarities(index, queries, stage("eval: encoding the cases"))
            report = evaluate(index, cases, scope=scope_tags(scope), progress=stage("eval"), semantic=semantic)
        commit = index.commit  # of the index measured: an older one while another process updates it (`open_index`)
    if as_json:
        echo_json({"commit": commit, **report.to_dict()})
        return
    data = report.to_dict()
    served_note(vault, worktree, "the figures below are of its cards; `--worktree` measures those checked out")
    rows = [("all", data), *((shown(name, SLICE_WIDTH), m) for name, m in data["by_slice"].items())]
    width = max(8, *(columns(name) for name, _ in rows))  # a slice named in Chinese: two columns a character
    echo(f"{'':{width}} {'R@1':>6} {'R@3':>6} {'Inj@1':>6} {'Inj@3':>6} {'FIR':>6} {'pos':>5} {'neg':>5}")
    for name, m in rows:
        pos = [_share(m[key], m["n_pos"]) for key in ("recall@1", "recall@3", "injection@1", "injection@3")]
        echo(
            f"{pad(name, width)} {' '.join(pos)} {_share(m['false_injection_rate'], m['n_neg'])} {m['n_pos']:5d} {m['n_neg']:5d}"
        )
    unmeasured = any(m["n_pos"] == 0 or m["n_neg"] == 0 for _, m in rows)
    echo(EVAL_LEGEND + (" " + EVAL_NO_SHARE if unmeasured else ""))
    if failures:
        for line in render_failures(report.outcomes, failures):
            echo(line)


SLICE_WIDTH = 24  # a slice's name in the table, at most


def _share(value: float, n: int) -> str:
    """A share for the table, or `-` when it has no case to be a share of (--json gives 0.0 with n_pos/n_neg 0)."""
    return f"{value:6.3f}" if n else f"{'-':>6}"


EVAL_NO_SHARE = (
    "- = no case to measure: R@k and Inj@k need positive cases (expect: [ids]), FIR negative ones (expect: [])."
)

# The table's abbreviations, by the names --json gives the same figures.
EVAL_LEGEND = (
    "R@1, R@3 = recall@1, recall@3; Inj@1, Inj@3 = injection@1, injection@3; FIR = false_injection_rate; "
    "pos, neg = n_pos, n_neg (as --json names them)."
)


def render_failures(outcomes: Sequence[CaseOutcome], limit: int) -> list[str]:
    """The failing cases, up to `limit`: positives whose expected cards were none of the injected ones, and
    negatives that got a card; one line each (id, slice, query cut to QUERY_WIDTH characters, expected, got)."""
    failing = [o for o in outcomes if _failed(o)]
    if not failing:
        return ["", "No failing cases."]
    missed = sum(1 for o in failing if o.case.positive)
    shown = failing[:limit]
    head = f"Failing cases: {missed} positive(s) without an expected card, {len(failing) - missed} negative(s) given a card"
    head += ":" if len(shown) == len(failing) else f"; the first {len(shown)} (--failures N shows more):"
    lines = ["", head]
    for o in shown:
        case = o.case
        expected = clean_line(", ".join(case.expect)) or "nothing"
        got = clean_line(", ".join(o.injected)) or "nothing"
        lines.append(
            f'  {clean_line(case.id)}  [{clean_line(case.slice) or "-"}]  "{_cut(case.query)}"  '
            f"expected {expected}  got {got}"
        )
    return lines


QUERY_WIDTH = 80


def _failed(o: CaseOutcome) -> bool:
    if o.case.positive:
        return not any(card_id in o.case.expect for card_id in o.injected)
    return bool(o.injected)


def _cut(query: str) -> str:
    one_line = " ".join(clean_line(query).split())
    return one_line if len(one_line) <= QUERY_WIDTH else one_line[: QUERY_WIDTH - 1] + "…"


def _query_text(query: str) -> tuple[str, int]:
    """(the prompt as the hook reads it, its whole length): QUERY as given, or stdin for `-` (a prompt with pasted
    logs does not fit on a command line), cut to the hook's first `MAX_QUERY_CHARS` characters. What the hook would
    serve nothing for is a usage error: stdin as its `text` format refuses it (over `MAX_STDIN_BYTES`, empty,
    binary, not UTF-8), an empty QUERY, one not UTF-8."""
    from cairn.hot.hook import MAX_QUERY_CHARS, MAX_STDIN_BYTES, HookInputError, parse_payload

    if query == "-":
        try:
            text = parse_payload("text", sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)).prompt
        except HookInputError as exc:
            raise click.UsageError(
                f"QUERY is - but {exc}; pipe in the prompt as UTF-8 text (the prompt hook serves nothing for this)"
            ) from None
    else:
        if not query.strip():
            raise click.UsageError('QUERY is empty; give the prompt ("..."), or - to read it from stdin')
        query = argv_text(query)
        try:
            query.encode("utf-8")
        except UnicodeEncodeError:  # argv bytes Python could not decode (a Latin-1 terminal)
            raise click.UsageError(
                "QUERY is not UTF-8 text; give the prompt as UTF-8 (or - to read it from stdin)"
            ) from None
        text = query
    return text[:MAX_QUERY_CHARS], len(text)


def _check_ref(ref: str | None) -> None:
    """--ref "" (an unset variable) would read the default branch, not the served ref: refused."""
    if ref is not None and not ref.strip():
        raise click.UsageError("--ref is empty; give a ref such as HEAD, or leave --ref out to read the served ref")


def _similarities(index: IndexReader, query: str) -> dict[str, float] | None:
    """The optional semantic channel's similarities of the cards to the prompt, computed here (no warm encoder), or
    None without the extra, with `[recall] semantic = false` or without card vectors in the index, or when the
    channel fails (`_semantic_failed` says so)."""
    try:
        from cairn.semantic.batch import similarities_now
    except ImportError:
        return None
    try:
        return similarities_now(index.path, query, top=50, z=True)  # what the hook gets (cairn.hot.serve)
    except Exception as exc:  # the channel is optional: explain works without it
        _semantic_failed(exc)
        return None


def _semantic_failed(exc: Exception) -> None:
    """Say on stderr that the installed semantic extra failed here: with the similarities silently left out, explain
    and eval read words alone and the user could not tell why."""
    echo(
        clean_line(
            f"Note: the semantic extra failed here ({type(exc).__name__}: {exc}); similarities are left out, as the "
            "hook leaves them out when its encoder fails. `cairn doctor` checks the extra."
        )[:400],
        err=True,
    )


def _cases_similarities(
    index: IndexReader, queries: list[str], progress: Callable[[int, int], None]
) -> list[dict[str, float]] | None:
    """Each case's similarities as `_similarities` gives one prompt's (what the hook gets with the semantic extra),
    so that eval decides as `cairn recall` and the hook do; None without the extra or card vectors. `progress` hears
    of the cases encoded."""
    try:
        from cairn.semantic.batch import similarities_all_now
    except ImportError:
        return None
    try:
        return similarities_all_now(index.path, queries, top=50, z=True, progress=progress)
    except Exception as exc:  # the channel is optional: eval works without it, as recall and the hook do
        _semantic_failed(exc)
        return None


def explain_rows(result: Result, query: str = "") -> list[dict[str, Any]]:
    """The 20 best candidates the gates judged and every card refused at admission, by score, as JSON-ready rows;
    `query` (the prompt as recall read it) names the `not_when` word that refused a card. The 20 are counted among
    the judged: 20 drafts of a lesson that outscore its active card hid the one card recall decided on."""
    s = result.settings
    rows: list[dict[str, Any]] = []
    judged = 0
    for rank, c in enumerate(result.candidates, 1):
        admitted = c.reason in _GATED
        if admitted:
            judged += 1
            if judged > EXPLAIN_TOP:
                continue
        row: dict[str, Any] = {"rank": rank, "id": c.card.id, "name": c.card.name, "score": c.score}
        if admitted:
            row["gates"] = {
                "lead": {"value": c.lead, "threshold": s.min_lead},
                "score": {"value": c.lead, "threshold": s.min_lead},  # the old name of "lead", kept until 0.3
                "coverage": {"value": c.coverage, "threshold": s.min_coverage},
                "margin": {"value": c.margin, "threshold": s.min_margin},
            }
            if result.weights is not None:  # the evidence floor (`recall.evidence_of`)
                value = round(evidence_of(c.matched, result.weights, s), 4)
                row["gates"]["evidence"] = {"value": value, "threshold": s.min_evidence}
        else:
            row["gates"] = None
        row.update(decision=c.decision, reason=c.reason, matched=list(c.matched))
        if c.reason == UNKNOWN_STATUS:  # the status as the card spells it, so the reader can fix the typo
            row["status"] = c.card.status
        if c.reason == "expired":  # the review date it passed, so the reader knows what to bump
            row["expires_on"] = c.card.expires_on
            if c.card.superseded_by:  # a bump would not serve it: recall says expired before superseded
                row["superseded_by"] = list(c.card.superseded_by)
        if c.reason == "not_when" and query:  # which word
            row["not_when"] = not_when_found(c.card, query)
        if admitted and getattr(s, "min_confidence", 0.0) > 0:  # the opt-in confidence gate's estimate
            row["confidence"] = c.confidence
        if c.similarity is not None:
            row["similarity"] = round(c.similarity, 4)
        if admitted and c.named:  # its lead is counted gates.NAMED_LEAD times: the prompt is mostly its name
            row["named"] = True
        if admitted and c.said:  # its lead is counted gates.NAMED_LEAD times: the prompt says most of its own words
            row["said"] = True
        if c.blocked_by:
            row["blocked_by"] = c.blocked_by
        if c.picked:  # injected by recall's semantic pick or agreement pick, when the word gates passed nothing
            row["picked"] = c.picked
        elif c.decision == INJECTED and failed_gate(c.lead, c.coverage, c.margin, s) is not None:
            row["group"] = True  # under a gate, injected with cards that fit about as well (`recall._group`)
        rows.append(row)
    return rows


# What explain's reason column says of a card one of recall's picks injected (`Candidate.picked`).
_PICKED = {
    SEMANTIC_PICKED: "semantic pick",
    AGREEMENT_PICKED: "both channels",
    FRAGMENT_PICKED: "one sentence",
    PHRASE_PICKED: "rare phrase",
}

# How many of the first candidates `cairn explain` follows with the terms they matched and lack.
EXPLAIN_TERMS = 5
_TERMS_SHOWN = 8


def prompt_words(query: str) -> dict[str, str]:
    """Each of the prompt's terms that recall stems (`spr`, `rebas`) with the prompt's word it came from (`spring`,
    `rebased`): explain's term lists in words an author can type into a card's aliases. Chinese is read as character
    pairs, which name no word: left as they are. An identifier's parts (`GitHub`: github, git, hub) are terms of
    their own, shown as they are, and so is a term the prompt also says as a word."""
    words: dict[str, str] = {}
    said: set[str] = set()
    for word in re.findall(r"[^\W_]+", query):
        if not any(map(is_cjk, word)):
            terms = tokenize(word)
            if len(terms) == 1 and terms[0] != word.lower():  # a stem
                words.setdefault(terms[0], word.lower())
            else:  # the word itself, or an identifier and its parts
                said.update(terms)
    return {term: word for term, word in words.items() if term not in said}


def _terms_line(row: dict[str, Any], words: dict[str, str] | None = None) -> str:
    """`matched: a, b, c; missing: x, y; lead x1.5 (the prompt names it); similarity 2.87 (z-score ...)` (the parts
    that apply); `words`: the prompt's words for its stemmed terms (`prompt_words`), shown in their place."""
    words = words or {}
    matched = [words.get(t, t) for t in row["matched"]]
    shown = ", ".join(clean_line(t) for t in matched[:_TERMS_SHOWN]) or "nothing"
    if len(matched) > _TERMS_SHOWN:
        shown += f" (+{len(matched) - _TERMS_SHOWN})"
    parts = [f"matched: {shown}"]
    if row.get("missing"):
        parts.append("missing: " + ", ".join(clean_line(words.get(t, t)) for t in row["missing"]))
    if row.get("named"):
        parts.append(f"lead x{NAMED_LEAD:g} (the prompt names it)")
    if row.get("said"):
        parts.append(f"lead x{NAMED_LEAD:g} (the prompt says more of its own words than of the next card's)")
    if row.get("group") and row["decision"] == INJECTED:  # not when the merge across vaults left it out
        parts.append(
            f"injected under a gate as one of related cards that fit about as well: each scores {GROUP_SPREAD:g} of the "
            "first or more and passes coverage, and the last of them clears the lead and margin gates"
        )
    evidence = (row.get("gates") or {}).get("evidence")
    if row.get("reason") == LITTLE_EVIDENCE and evidence:
        parts.append(f"evidence {evidence['value']:.2f} rare words, under {evidence['threshold']:g}")
    if row.get("similarity") is not None:
        # the semantic channel's z-score (`daemon.similarities(z=True)`), not a cosine: say so
        shown = f"similarity {row['similarity']:.2f} (z-score over the vault's cards)"
        if row.get("reason") == SEMANTIC_VETO:  # the figure the veto judged, beside the floor it fell under
            shown += f", under {SEMANTIC_MIN_Z:g} (the semantic veto)"
        parts.append(shown)
    return "; ".join(parts)


_STATUS_SHOWN = 40


def _shown_status(status: str) -> str:
    """A card's status as one short line: it is the card author's text."""
    text = clean_line(status)
    return text if len(text) <= _STATUS_SHOWN else text[: _STATUS_SHOWN - 1] + "…"


def _status_hint(status: str) -> str:
    """What to do about a card refused for its status: lint's status-value finding, in the same words."""
    return (
        f"status '{_shown_status(status)}' is not one of {', '.join(STATUSES)}; only active cards are injected "
        "(`cairn lint`: status-value)"
    )


def _expired_hint(expires_on: str, superseded_by: list[str]) -> str:
    """What to do about a card refused as expired: the review date it passed and the fields that move it, or that
    moving them would not serve it while an active card supersedes it."""
    if superseded_by:
        return (
            f"its review date {clean_line(expires_on)} (review_after) has passed, and it is superseded by "
            f"{', '.join(clean_line(i) for i in superseded_by)}: a later review date would not serve it"
        )
    return (
        f"its review date {clean_line(expires_on)} (review_after) has passed; once someone re-checks the lesson, bump "
        "verified_at (and review_after when it is a date) and commit"
    )


def _not_when_hint(word: str) -> str:
    """What to do about a card refused for a `not_when` word: the word, and the rule."""
    return (
        f"not_when '{clean_line(word)}' is in the prompt: a card never goes to a prompt that says one of its not_when "
        "words; remove the word from the card if the lesson holds here too"
    )


def render_explain(
    result: Result,
    rows: list[dict[str, Any]],
    injected: Sequence[str] | None = None,
    foreign: Sequence[str] = (),
    veto: str | None = None,
    query: str = "",
    scope: str | None = None,
) -> str:
    """The table `explain` prints; `injected`: the ids the hook gives (after the merge across vaults and its context
    limit), else recall's own;
    `foreign`: the prompt's terms weighed a tenth, said only in sentences the vault hardly knows; `veto`: why the
    semantic veto did not judge the prompt (`_veto_note`), when it did not; `query`: the prompt, for the word of it
    a `not_when` word was found in; `scope`: the scope asked (`_scope_note`), when one was."""
    s = result.settings
    if injected is None:
        outcome = (
            "Abstained: nothing fits."
            if result.abstained
            else f"Injected: {', '.join(c.card.id for c in result.injected)}"
        )
    elif injected:
        outcome = f"Injected: {', '.join(injected)}"
    elif result.abstained:
        outcome = "Abstained: nothing fits."
    elif all(row["reason"] != "context_limit" for row in rows):
        outcome = "Injected: none after the merge across vaults."
    else:  # recall chose cards whose block the hook's limit does not hold (a vault alone has no merge to blame)
        outcome = "Injected: none: the agent's context block (`[hook] max_context_chars`) holds none of them."
    lines = [
        f"Thresholds: lead >= {s.min_lead:g}, coverage >= {s.min_coverage:g}, margin >= {s.min_margin:g}, "
        f"evidence >= {s.min_evidence:g} rare words; at most {s.max_cards} cards.",
        *([scope] if scope else []),
        outcome,
    ]
    if result.fragment is not None:  # `recall._fragment_pick`
        lines.append(
            f"Injected on one sentence of the prompt, asked alone (the whole prompt ranks the card first): "
            f"{clean_line(result.fragment)}"
        )
    if result.phrases:  # `recall._phrase_step`
        shown = ", ".join(f'"{clean_line(p)}"' for p in result.phrases[:_TERMS_SHOWN])
        lines.append(
            f"Injected with the lead and margin gates at {PHRASE_SCALE:g} of theirs: the card holds words of the prompt "
            f"side by side that at most {PHRASE_RARE} cards hold (phrases, words sorted): {shown}"
        )
    if veto is not None:
        lines.append(veto)
    words = prompt_words(query)
    if foreign:  # `recall.FOREIGN_WEIGHT`: an agent wrapper's repo and stack, in words no card uses
        shown = ", ".join(clean_line(words.get(t, t)) for t in foreign[:_TERMS_SHOWN])
        more = f" (+{len(foreign) - _TERMS_SHOWN})" if len(foreign) > _TERMS_SHOWN else ""
        lines.append(f"Weighed a tenth, said only in sentences about something the vault does not know: {shown}{more}")
    if not rows:
        lines.append("No card shares a word with the query.")
        return "\n".join(lines)
    lines.append("")
    lines.append(
        f"{'#':>3}  {'score':>7}  {'lead':>5}  {'coverage':>8}  {'margin':>6}  {'decision':8}  {'reason':16}  card"
    )
    for row in rows:
        gates = row["gates"]
        values = (
            f"{gates['lead']['value']:5.2f}  {gates['coverage']['value']:8.2f}  {gates['margin']['value']:6.2f}"
            if gates
            else f"{'-':>5}  {'-':>8}  {'-':>6}"
        )
        reason = row["reason"] or _PICKED.get(row.get("picked") or "", "") or ("group" if row.get("group") else "")
        if reason == UNKNOWN_STATUS:
            reason = f"unknown status '{_shown_status(row['status'])}'"
        if row.get("not_when"):
            reason = f"not_when '{_shown_status(row['not_when'])}'"
        if row.get("blocked_by"):
            reason += f" (below {row['blocked_by']})"
        if row.get("same_as"):
            reason += f" (as {row['same_as']})"
        lines.append(f"{row['rank']:>3}  {row['score']:7.3f}  {values}  {row['decision']:8}  {reason:16}  {row['id']}")
        if gates and row["rank"] <= EXPLAIN_TERMS:
            lines.append(f"{'':5}{_terms_line(row, words)}")
        if row["reason"] == UNKNOWN_STATUS:
            lines.append(f"{'':5}{_status_hint(row['status'])}")
        if row.get("expires_on"):
            lines.append(f"{'':5}{_expired_hint(row['expires_on'], row.get('superseded_by') or [])}")
        if row.get("not_when"):
            lines.append(f"{'':5}{_not_when_hint(row['not_when'])}")
    refused = sum(1 for row in rows if row["decision"] == REJECTED and row["gates"] is None)
    if refused:
        lines += [
            "",
            f"{refused} card(s) refused before the gates (status, expiry, supersedes, scope, not_when, another language).",
        ]
    return "\n".join(lines)
