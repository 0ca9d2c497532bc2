"""`cairn doctor`: is the setup whole? One line per check, pass or fail, and the command that fixes it."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cairn.cli.common import Folder, echo, echo_json, errors_to_exit, json_option


@click.command()
@click.option(
    "--cwd",
    "cwd",
    type=Folder(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Check as an agent working in this folder would be served (default: the current folder).",
)
@json_option
@errors_to_exit
def doctor(cwd: Path | None, as_json: bool) -> None:
    """Check the setup: which vaults the prompt hook serves from a folder and why, each vault's served ref and
    index (and its card vectors, with the semantic extra), the card files git ignores in its folder (never
    committed, so never served), its git hooks and pre-commit, each agent's settings and the `cairn` they run, and
    Python.

    The prompt hook serves the vault its --vault names, else $CAIRN_VAULT, else every configured vault (`cairn vault
    list`) whose --project limits let it serve that folder; never a vault it merely finds around the folder (a
    vault there that is not configured is named, with the `cairn vault add` that would serve it). Other commands take
    --vault, else $CAIRN_VAULT, else the vault around the current folder, else the configured vaults.

    Exit 1 when a check fails; each failing line ends with the command that fixes it, as does an information line
    that has one (a folder others may read): a shell command that runs as printed (a placeholder such as PATH only
    where doctor cannot know the value, and its note says so), then in brackets a note of what else to know; where no
    command can fix it, the note alone says what to do. --json gives them as `fix` ("" when none) and `note`.

    \b
    Example:
      cairn doctor
      cairn doctor --cwd ~/work/acme --json
    """
    from cairn.doctor import run_checks
    from cairn.terminal import clean_line

    checks = run_checks((cwd or Path.cwd()).resolve())
    failed = [c for c in checks if c.ok is False]
    if as_json:
        echo_json({"ok": not failed, "checks": [c.to_dict() for c in checks]})
    else:
        for check in checks:
            mark = "ok  " if check.ok else "FAIL" if check.ok is False else "info"
            said = [check.fix] * bool(check.fix) + [f"({check.note})"] * bool(check.note)
            fix = f"  -> {' '.join(said)}" if said and check.ok is not True else ""
            echo(
                clean_line(f"{mark} {check.area} {check.subject}: {check.detail}{fix}")
            )  # one line whatever a path holds
        echo(f"{len(failed)} check(s) failed." if failed else "Everything checks out.")
    if failed:
        sys.exit(1)


__all__ = ["doctor"]
