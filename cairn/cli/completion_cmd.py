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


# click's zsh script, but for a word `--vault=te`: click completes the part after the `=` (a word that starts with `-`
# and holds `=`), and zsh put each reply in place of the whole word (`compadd -U`), so `cairn show --vault=te<Tab>`
# gave `cairn show team`, the option lost. compset moves the `--vault=` out of the word first, as zsh's own functions
# do, so that a reply replaces only the part after it: _path_files keeps it, and compadd -U, which replaces the whole
# word, is given it back as the prefix to insert (-i).
_SOURCE_ZSH = r"""#compdef %(prog_name)s

%(complete_func)s() {
    local -a completions
    local -a completions_with_descriptions
    local -a response
    (( ! $+commands[%(prog_name)s] )) && return 1

    response=("${(@f)$(env COMP_WORDS="${words[*]}" COMP_CWORD=$((CURRENT-1)) \
%(complete_var)s=zsh_complete %(prog_name)s)}")

    if [[ $PREFIX == -*=* ]]; then
        compset -P 1 '*='
    fi

    for type key descr in ${response}; do
        if [[ "$type" == "plain" ]]; then
            if [[ "$descr" == "_" ]]; then
                completions+=("$key")
            else
                completions_with_descriptions+=("$key":"$descr")
            fi
        elif [[ "$type" == "dir" ]]; then
            _path_files -/
        elif [[ "$type" == "file" ]]; then
            _path_files -f
        fi
    done

    if [ -n "$completions_with_descriptions" ]; then
        _describe -V unsorted completions_with_descriptions -U -i "$IPREFIX"
    fi

    if [ -n "$completions" ]; then
        compadd -U -i "$IPREFIX" -V unsorted -a completions
    fi
}

if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    # autoload from fpath, call function directly
    %(complete_func)s "$@"
else
    # eval/source/. command, register function for later
    compdef %(complete_func)s %(prog_name)s
fi
"""

# click's fish script, but for two things. Each reply was split at every comma, for the `TYPE,VALUE` click sends, so
# a card id holding one (id-text takes it) was offered cut at it: it is split at the first comma only. And fish keeps
# the replies that start with the whole word, so the value click completes after the `=` of `--vault=te` (as for
# zsh above) was never offered: the `--vault=` goes back in front of each reply, folders and files too.
_SOURCE_FISH = r"""function %(complete_func)s;
    set -l token (commandline -t);
    set -l option (string match -r -- '^-[^=]*=' "$token");
    set -l response (env %(complete_var)s=fish_complete COMP_WORDS=(commandline -cp) \
COMP_CWORD=(commandline -t) %(prog_name)s);

    for completion in $response;
        set -l metadata (string split -m 1 "," $completion);

        if test $metadata[1] = "dir";
            __fish_complete_directories $metadata[2] | string replace -r -- '^' "$option";
        else if test $metadata[1] = "file";
            __fish_complete_path $metadata[2] | string replace -r -- '^' "$option";
        else if test $metadata[1] = "plain";
            printf '%%s\n' "$option$metadata[2]";
        end;
    end;
end;

complete --no-files --command %(prog_name)s --arguments \
"(%(complete_func)s)";
"""


def register_shells() -> None:
    """Make `_CAIRN_COMPLETE=<shell>_source cairn` (and `cairn completion SHELL`) print Cairn's scripts, and
    `_CAIRN_COMPLETE=<shell>_complete` answer them, for bash, zsh and fish."""
    from click.shell_completion import BashComplete, FishComplete, ZshComplete, add_completion_class

    class CairnBashComplete(BashComplete):
        source_template = _SOURCE_BASH

    class CairnZshComplete(ZshComplete):
        source_template = _SOURCE_ZSH

    class CairnFishComplete(FishComplete):
        source_template = _SOURCE_FISH

    add_completion_class(CairnBashComplete, "bash")
    add_completion_class(CairnZshComplete, "zsh")
    add_completion_class(CairnFishComplete, "fish")


def completion_script(shell: str) -> str:
    """The script, made in-process by the same click class that `_CAIRN_COMPLETE=<shell>_source cairn` uses."""
    from click.shell_completion import get_completion_class

    from cairn.cli import cli

    register_shells()
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
      eval "$(cairn completion zsh)"           # in ~/.zshrc, after compinit
      cairn completion fish > $__fish_config_dir/completions/cairn.fish   # in fish
    """
    click.echo(completion_script(shell), nl=False)
