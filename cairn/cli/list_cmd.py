"""`cairn list`: the cards of the served ref, with status, scope, verified_at and review-due date."""

from __future__ import annotations

import functools
import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from cairn.cli.common import (
    echo,
    echo_json,
    error_text,
    errors_to_exit,
    indexing,
    json_option,
    open_vault,
    utf8_flag,
    vault_option,
    warn,
)
from cairn.hot.serve import split_tags
from cairn.terminal import clean_line, columns, pad

if TYPE_CHECKING:
    from cairn.cards.listing import ListedCard


@click.command(name="list")
@click.option(
    "--due",
    is_flag=True,
    help="Only the cards due for review (their review date reached, or never verified).",
)
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    help="Only cards with this scope tag (repeatable, or comma-separated as recall takes it: any of them).",
)
@vault_option
@json_option
@errors_to_exit
def list_cards(due: bool, scopes: tuple[str, ...], vault_path: str | None, as_json: bool) -> None:
    """List the cards agents are served (the served ref's commit), with status, scope, verified_at and the date
    each is due for review: its review_after, else verified_at plus `[lint] max_age_days`.

    Outside any vault, with no --vault and no $CAIRN_VAULT and several vaults configured, it lists every
    configured vault's cards, ids as `name:id`.

    \b
    Example:
      cairn list --due
      cairn list --scope git --json
    """
    from cairn.cards.listing import list_cards as listing
    from cairn.cli.recall_cmds import serves_configured
    from cairn.hot.userconfig import load_vaults

    wanted = _scope_filter(scopes)

    def chosen(cards: list[ListedCard]) -> list[ListedCard]:
        return [c for c in cards if (not due or c.due) and (not wanted or wanted & {s.lower() for s in c.scope})]

    if serves_configured(vault_path) and len(load_vaults()) > 1:  # one configured vault: listed as any one vault
        _list_configured(chosen, due, bool(wanted), as_json)
        return
    vault = open_vault(vault_path)
    with indexing(vault.root) as progress:
        ref, commit, cards, left_out = listing(vault, warn=warn, progress=progress)
    cards = chosen(cards)
    if as_json:
        echo_json({"ref": ref, "commit": commit, "cards": [c.to_dict() for c in cards]})
        return
    asked = f" --vault {shlex.quote(vault_path)}" if vault_path else ""  # listed from another folder: show asks it too
    if left_out:  # committed, refused by the index, so never served: the count alone would hide them
        echo(f"Note: {left_out} card file(s) left out of the index, not listed (see `cairn lint{asked}`).", err=True)
    if not cards:
        echo(f"No card{_which(due, bool(wanted))} at {ref} {commit[:8]}.")
        return
    _print_rows([(c.id, c) for c in cards])
    echo(f"{len(cards)} card(s) at {ref} {commit[:8]}; `cairn show ID{asked}` prints one.")


def _warn_of(name: str, text: str) -> None:
    warn(f"vault {name!r}: {text}")


def _list_configured(
    chosen: Callable[[list[ListedCard]], list[ListedCard]], due: bool, scoped: bool, as_json: bool
) -> None:
    """Outside any vault with several configured (no --vault, no $CAIRN_VAULT): every configured vault's served
    cards, in the configuration's order, ids as `name:id` as recall, explain and the hook show them. A vault that
    cannot be read (a moved folder, one the system refuses to open) is one warning line; the others are listed."""
    from cairn.cards.listing import list_cards as listing
    from cairn.hot.errors import CairnError, VaultNotFound
    from cairn.hot.userconfig import load_vaults
    from cairn.hot.vault import find_configured_vault

    listed: list[dict[str, Any]] = []
    failed: list[tuple[str, str, str]] = []  # name, folder, why
    entries = load_vaults()
    for entry in entries:
        try:
            with indexing(entry.path) as progress:
                ref, commit, cards, left_out = listing(
                    find_configured_vault(entry),
                    warn=functools.partial(_warn_of, entry.name),
                    progress=progress,
                )
        except (CairnError, OSError) as exc:  # OSError: a folder the system refuses to read (no permission)
            failed.append((entry.name, entry.path, error_text(exc)))
            continue
        if left_out and not as_json:
            echo(
                f"Note: vault {entry.name!r}: {left_out} card file(s) left out of the index, not listed (see "
                f"`cairn lint --vault {shlex.quote(entry.name)}`).",
                err=True,
            )
        listed.append({"name": entry.name, "vault": entry.path, "ref": ref, "commit": commit, "cards": chosen(cards)})
    if not listed:  # nothing to list is a failure, as recall and explain say it
        raise VaultNotFound(
            f"none of the {len(entries)} configured vaults can be listed "
            f"({'; '.join(f'{name}: {why}' for name, _, why in failed)}); `cairn vault list` shows them"
        )
    for name, folder, why in failed:
        echo(f"Warning: vault {name!r} ({folder}) is not listed: {why}", err=True)
    if as_json:
        for one in listed:
            one["cards"] = [{**c.to_dict(), "id": f"{one['name']}:{c.id}", "vault": one["name"]} for c in one["cards"]]
        echo_json({"vaults": listed})
        return
    rows = [(f"{one['name']}:{c.id}", c) for one in listed for c in one["cards"]]
    if rows:
        _print_rows(rows)
    for one in listed:
        count = len(one["cards"])
        what = f"{count} card(s)" if count else f"no card{_which(due, scoped)}"
        echo(f"{one['name']}: {what} at {one['ref']} {one['commit'][:8]}")
    if rows:
        echo("`cairn show NAME:ID` prints one.")


def _scope_filter(scopes: tuple[str, ...]) -> set[str]:
    """The scope tags asked for, lowercase: each --scope is one tag or several, comma-separated (as `recall --scope`
    takes them); a --scope with no tag (`--scope ""`: an unset variable) is a usage error, not "no card"."""
    wanted: set[str] = set()
    for given in scopes:
        given = utf8_flag(given, "--scope")  # read as `recall --scope` reads it, in an ASCII locale too
        tags = {tag.lower() for tag in split_tags(given)}
        if not tags:
            raise click.BadParameter(f"{given!r} holds no tag; give one such as --scope git", param_hint="--scope")
        wanted |= tags
    return wanted


def _which(due: bool, scoped: bool) -> str:
    return f"{' is due' if due else ''}{' with that scope' if scoped else ''}"


def _print_rows(rows: list[tuple[str, ListedCard]]) -> None:
    """One line a card: its id, status and scope are vault text (a file name, a tag, an unknown status), so a line
    break in them is shown as `?` and cannot start a line of its own."""
    rows = [(clean_line(shown), card) for shown, card in rows]
    width = max(columns(shown) for shown, _ in rows)
    # "superseded", which list prints as a status of its own, is longer than "active" and "retired"
    status_width = max(columns(clean_line(card.status)) for _, card in rows)
    for shown, card in rows:
        scope = clean_line(",".join(card.scope)) or "-"
        mark = "  DUE" if card.due else ""
        echo(
            f"{pad(shown, width)}  {pad(clean_line(card.status), status_width)}  "
            f"verified {card.verified_at or 'never':<10}  "
            f"review by {card.due_on or 'now':<10}  {scope}{mark}"
        )


__all__ = ["list_cards"]
