"""`cairn list`: the cards of the served ref, with status, scope, verified_at and review-due date."""

from __future__ import annotations

import click

from cairn.cli.common import echo, echo_json, errors_to_exit, json_option, open_vault, vault_option


@click.command(name="list")
@click.option("--due", is_flag=True, help="Only the cards due for review (past their date, or never verified).")
@click.option("--scope", "scopes", multiple=True, help="Only cards with this scope tag (repeatable: any of them).")
@vault_option
@json_option
@errors_to_exit
def list_cards(due: bool, scopes: tuple[str, ...], vault_path: str | None, as_json: bool) -> None:
    """List the cards agents are served (the served ref's commit), with status, scope, verified_at and the date
    each is due for review: its review_after, else verified_at plus `[lint] max_age_days`.

    \b
    Example:
      cairn list --due
      cairn list --scope git --json
    """
    from cairn.cards.listing import list_cards as listing

    ref, commit, cards = listing(open_vault(vault_path))
    wanted = {s.lower() for s in scopes}
    cards = [c for c in cards if (not due or c.due) and (not wanted or wanted & {s.lower() for s in c.scope})]
    if as_json:
        echo_json({"ref": ref, "commit": commit, "cards": [c.to_dict() for c in cards]})
        return
    if not cards:
        echo(f"No card{' is due' if due else ''}{' with that scope' if wanted else ''} at {ref} {commit[:8]}.")
        return
    width = max(len(c.id) for c in cards)
    for card in cards:
        scope = ",".join(card.scope) or "-"
        mark = "  DUE" if card.due else ""
        echo(
            f"{card.id.ljust(width)}  {card.status:<7}  verified {card.verified_at or 'never':<10}  "
            f"review by {card.due_on or 'now':<10}  {scope}{mark}"
        )
    echo(f"{len(cards)} card(s) at {ref} {commit[:8]}; `cairn show ID` prints one.")


__all__ = ["list_cards"]
