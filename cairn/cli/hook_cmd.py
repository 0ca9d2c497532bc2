"""`cairn hook` as the command list shows it; the executable runs the real hook before click is ever imported."""

from __future__ import annotations

import sys

import click


@click.command(
    name="hook",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook(args: tuple[str, ...]) -> None:
    """The agent prompt hook: the cards that fit the prompt on stdin, in the agent's format (`cairn hook --help`).

    \b
    Example:
      cairn hook --format claude-code --vault ~/team-lessons < payload.json
    """
    # Reached only when a program calls the click group itself (`cairn.cli.main`, click's CliRunner): the `cairn`
    # executable and `python -m cairn` hand `hook` to cairn.hot.hook in cairn.entry, so the prompt hook never pays
    # for click.
    from cairn.hot.hook import main

    sys.exit(main(list(args)))
