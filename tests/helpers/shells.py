"""zsh and fish run as a user runs them, to see what Cairn's completion scripts complete: fish answers `complete -C`
without a terminal; zsh completes only inside its line editor, so it runs interactive in a pseudo-terminal and a
Tab is typed. No startup file of the user's is read (HOME and XDG_CONFIG_HOME are the test's); the installed `cairn`
comes first on PATH."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
from pathlib import Path
from typing import NamedTuple

from helpers.vaults import cairn_executable

WAIT = 120  # seconds for the shell to answer one step: a guard against a hang, never a measure
_DONE = "\x1etab-done\x1e"  # printed by the shell after each Tab; no typed line holds it

# Read by the interactive zsh once it starts: no prompt, compinit with no dump file, Cairn's script as a user
# enables it, and Tab bound to a widget that completes the word, writes the matches that reached compadd and the line
# as it then stands to $CAIRN_TAB_LOG, empties the line and prints _DONE.
_ZSH_SETUP = r"""
PROMPT='' RPROMPT='' PS2=''
unset zle_bracketed_paste
unsetopt auto_list
autoload -U compinit && compinit -u -D
eval "$(cairn completion zsh)"
compadd() {
    local -a added
    builtin compadd -O added "$@"
    (( $#added )) && print -rl -- "${added[@]/#/match:}" >> $CAIRN_TAB_LOG
    builtin compadd "$@"
}
_cairn_test_tab() {
    zle complete-word
    print -r -- "line:$BUFFER" >> $CAIRN_TAB_LOG
    BUFFER=''
    print -n -- $'\x1etab-done\x1e'
}
zle -N _cairn_test_tab
bindkey '^I' _cairn_test_tab
print -n -- $'\x1etab-done\x1e'
"""


class Tab(NamedTuple):
    """One Tab at the end of a line: the matches the shell was given (in order, once each) and the line after it."""

    matches: list[str]
    line: str


def shell_env() -> dict[str, str]:
    """A user's shell's environment: this one, with the installed `cairn` first on PATH."""
    return {**os.environ, "PATH": f"{Path(cairn_executable()).parent}{os.pathsep}{os.environ['PATH']}"}


def fish_tab(lines: list[str], cwd: Path, *, installed: bool = False) -> list[list[str]]:
    """What fish offers for a Tab at the end of each line (`complete -C`), each `VALUE` or `VALUE<tab>DESCRIPTION`:
    with the script sourced (`cairn completion fish | source`) and no configuration read, or, `installed`, with
    fish's configuration (under the test's $XDG_CONFIG_HOME) and the completion file the README has the user write."""
    ask = "for line in $argv; complete -C $line; echo; end"
    command = (
        ["fish", "-c", ask] if installed else ["fish", "--no-config", "-c", f"cairn completion fish | source; {ask}"]
    )
    done = subprocess.run(
        [*command, *lines],
        capture_output=True,
        text=True,
        env=shell_env(),
        cwd=cwd,
        check=False,
        timeout=WAIT,
    )
    assert done.returncode == 0, done.stderr
    assert not done.stderr, done.stderr
    offered = done.stdout.split("\n")[:-1]
    answers: list[list[str]] = [[]]
    for value in offered:
        if value:
            answers[-1].append(value)
        else:
            answers.append([])
    return answers[: len(lines)]


def zsh_tab(lines: list[str], cwd: Path, scratch: Path) -> list[Tab]:
    """What one Tab at the end of each line does in an interactive `zsh -f` with compinit and Cairn's script."""
    scratch.mkdir(parents=True, exist_ok=True)
    setup, log = scratch / "setup.zsh", scratch / "tab.log"
    setup.write_text(_ZSH_SETUP)
    log.write_text("")
    main, child = pty.openpty()
    shell = subprocess.Popen(
        ["zsh", "-f", "-i"],
        stdin=child,
        stdout=child,
        stderr=child,
        env={**shell_env(), "CAIRN_TAB_LOG": str(log), "TERM": "dumb"},
        cwd=cwd,
        start_new_session=True,
    )
    os.close(child)
    seen = b""

    def wait_for_done() -> None:
        nonlocal seen
        while _DONE.encode() not in seen:
            ready, _, _ = select.select([main], [], [], WAIT)
            assert ready, f"zsh did not answer in {WAIT} s; it wrote {seen!r}"
            seen += os.read(main, 65536)
        seen = seen.split(_DONE.encode(), 1)[1]

    try:
        os.write(main, f". '{setup}'\n".encode())
        wait_for_done()
        for line in lines:
            os.write(main, f"{line}\t".encode())
            wait_for_done()
    finally:
        os.killpg(shell.pid, signal.SIGKILL)
        shell.wait()
        os.close(main)
    tabs: list[Tab] = []
    matches: list[str] = []
    for record in log.read_text().splitlines():
        kind, _, value = record.partition(":")
        if kind == "match" and value not in matches:
            matches.append(value)
        elif kind == "line":
            tabs.append(Tab(matches, value))
            matches = []
    return tabs
