"""`cairn completion SHELL`: the shell completion script click writes for `_CAIRN_COMPLETE=<shell>_source cairn`."""

from __future__ import annotations

import click

from cairn.cli.common import errors_to_exit

SHELLS = ("bash", "zsh", "fish")
COMPLETE_VAR = "_CAIRN_COMPLETE"  # the variable click's completion reads for the program name "cairn"


# click's bash script, but for the words: bash splits them at COMP_WORDBREAKS (`:` and `=` among them), so
# `cairn show team:<Tab>` reached cairn as `team` and `:`, and nothing completed. The words the line holds with no
# blank between are joined again before cairn sees them (what bash-completion's `_get_comp_words_by_ref -n :` does),
# and each reply loses what comes before the last word-break character, the part bash keeps (its
# `__ltrim_colon_completions`); neither needs the bash-completion package. Replies are quoted: a card id holding `*`
# or `[` is not a pattern to expand.
_SOURCE_BASH = r"""%(complete_func)s() {
    local IFS=$'\n'
    local response words=() word rest line="${COMP_LINE:0:COMP_POINT}" typed prefix="" c i

    for ((i = 0; i <= COMP_CWORD; i++)); do
        word="${COMP_WORDS[i]}"
        rest="${line#"${line%%%%[![:blank:]]*}"}"
        if ((i > 1)) && [[ -n $line && $rest == "$line" ]]; then
            words[${#words[@]}-1]+="$word"
        else
            words+=("$word")
        fi
        line="${rest#"$word"}"
    done
    typed="${words[${#words[@]}-1]}"
    for ((i = 0; i < ${#typed}; i++)); do
        c="${typed:i:1}"
        if [[ $c != [[:space:]\"\'] && $COMP_WORDBREAKS == *"$c"* ]]; then
            prefix="${typed:0:i+1}"
        fi
    done

    response=$(env COMP_WORDS="${words[*]}" COMP_CWORD=$((${#words[@]} - 1)) %(complete_var)s=bash_complete $1)

    for completion in $response; do
        IFS=',' read type value <<< "$completion"

        if [[ $type == 'dir' ]]; then
            COMPREPLY=()
            compopt -o dirnames
        elif [[ $type == 'file' ]]; then
            COMPREPLY=()
            compopt -o default
        elif [[ $type == 'plain' ]]; then
            COMPREPLY+=("${value#"$prefix"}")
        fi
    done

    return 0
}

%(complete_func)s_setup() {
    complete -o nosort -F %(complete_func)s %(prog_name)s
}

%(complete_func)s_setup;
"""


def register_bash() -> None:
    """Make `_CAIRN_COMPLETE=bash_source cairn` (and `cairn completion bash`) print Cairn's bash script."""
    from click.shell_completion import BashComplete, add_completion_class

    class CairnBashComplete(BashComplete):
        source_template = _SOURCE_BASH

    add_completion_class(CairnBashComplete, "bash")


def completion_script(shell: str) -> str:
    """The script, made in-process by the same click class that `_CAIRN_COMPLETE=<shell>_source cairn` uses."""
    from click.shell_completion import get_completion_class

    from cairn.cli import cli

    register_bash()
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
