"""`cairn sync [NAME]`: fetch each configured vault's served branch (fast-forward only) and index it."""

from __future__ import annotations

import sys

import click

from cairn.cli.common import (
    FiniteFloatRange,
    complete_vault_name,
    echo,
    echo_json,
    error_text,
    errors_to_exit,
    json_option,
    progress_bar,
)
from cairn.hot.errors import CairnError, VaultNotFound
from cairn.hot.userconfig import config_file, load_vaults
from cairn.hot.vault import find_configured_vault
from cairn.terminal import clean_line


@click.command()
@click.argument("name", required=False, shell_complete=complete_vault_name)
@click.option(
    "--timeout",
    type=FiniteFloatRange(min=1, max=86400),  # a day: a larger one overflowed the clock's arithmetic
    default=120,
    show_default=True,
    help="Seconds one vault's fetch may take; past it the vault fails (exit 1) and keeps serving what it served.",
)
@json_option
@errors_to_exit
def sync(name: str | None, timeout: float, as_json: bool) -> None:
    """Fetch each configured vault's served branch from its remote and index it (or only the vault NAME).

    The vaults are those of the user configuration (`cairn vault list`), in its order; a folder that is not
    configured is not synced (register it with `cairn vault add PATH`). A served branch that is checked out (the
    vault you commit to) is never moved: when its remote is ahead, the line says to `git pull --ff-only` there.

    Fast-forward only: a remote branch that was rewritten (force-pushed) is refused, and the vault keeps serving
    what it served; the line says what to do. Your working tree and current branch are never touched. Exit 1 when
    a vault could not be synced. Run from a script, cron or an agent (stdin not a terminal, or --json), a remote
    that asks for a password or an ssh host key fails at once instead of waiting for an answer.

    \b
    Example:
      cairn sync
      cairn sync team --json
    """
    from cairn.sync import Fetching, SyncResult, sync_vault

    entries = load_vaults()
    if name is not None:
        entries = [e for e in entries if e.name == name]
        if not entries:
            names = ", ".join(e.name for e in load_vaults()) or "none"
            raise VaultNotFound(f"no vault named {name!r} is configured (configured: {names}); see `cairn vault list`")
    if not entries:
        raise VaultNotFound(f"no vault is configured in {config_file()}; add one with `cairn vault add PATH`")
    show = sys.stderr.isatty() and not as_json
    # Only a person at a terminal can answer git's credential or ssh questions; anywhere else one waits for ever.
    fetching = Fetching(prompt=show and sys.stdin.isatty(), timeout=timeout)
    results: list[SyncResult] = []
    for entry in entries:
        try:
            with progress_bar(f"  {entry.name}: indexing") as progress:  # a large vault's first index takes seconds
                result = sync_vault(
                    find_configured_vault(entry),
                    entry.name,
                    say=lambda text: _progress(text, show),
                    fetching=fetching,
                    progress=progress if show else None,
                )
        except (CairnError, OSError) as exc:  # OSError: a folder the system refuses to read (no permission)
            result = SyncResult(entry.name, entry.path, entry.ref or "", "error", message=error_text(exc))
        results.append(result)
        if not as_json:
            echo(clean_line(_line(result)))  # one line per vault, whatever a message quotes (a key, git's stderr)
    if as_json:
        echo_json({"vaults": [r.to_dict() for r in results]})
    if any(r.status in ("diverged", "error") for r in results):
        sys.exit(1)


def _progress(text: str, show: bool) -> None:
    if show:
        click.echo(clean_line(f"  {text} ..."), err=True)


def _line(result: object) -> str:
    from cairn.sync import SyncResult

    assert isinstance(result, SyncResult)
    note = f"; note: {result.message}" if result.message else ""
    if result.status == "updated":
        before = f"{result.before[:8]} -> " if result.before else ""
        return f"{result.name}: {result.ref} {before}{(result.after or '')[:8]}, {result.cards} cards indexed{note}"
    if result.status == "unchanged":
        fetched = "" if result.fetched else "; no remote branch to fetch"
        return (
            f"{result.name}: {result.ref} up to date at {(result.after or '')[:8]} ({result.cards} cards{fetched})"
            f"{note}"
        )
    return f"{result.name}: {result.status}: {result.message}"


__all__ = ["sync"]
