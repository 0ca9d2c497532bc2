"""`cairn completion SHELL`: the shell completion script click writes for `_CAIRN_COMPLETE=<shell>_source cairn`."""

from __future__ import annotations

import click

from cairn.cli.common import errors_to_exit

SHELLS = ("bash", "zsh", "fish")
COMPLETE_VAR = "_CAIRN_COMPLETE"  # the variable click's completion reads for the program name "cairn"


def completion_script(shell: str) -> str:
    """The script, made in-process by the same click class that `_CAIRN_COMPLETE=<shell>_source cairn` uses."""
    from click.shell_completion import get_completion_class

    from cairn.cli import cli

    completion_class = get_completion_class(shell)
    if completion_class is None:  # SHELLS are click's built-in shells; a click without one is not supported
        raise click.ClickException(f"click has no completion for {shell}")
    return completion_class(cli, {}, "cairn", COMPLETE_VAR).source()


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
@errors_to_exit
def completion(shell: str) -> None:
    """Print the shell completion script for bash, zsh or fish: commands, options and choices complete on Tab.

    Evaluate it in the shell's startup file to enable it; it calls `cairn` each time you press Tab.

    \b
    Example:
      eval "$(cairn completion bash)"          # in ~/.bashrc (bash 4.4 or newer)
      eval "$(cairn completion zsh)"           # in ~/.zshrc
      cairn completion fish > ~/.config/fish/completions/cairn.fish
    """
    click.echo(completion_script(shell), nl=False)
