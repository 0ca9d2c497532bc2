"""The command line: a click group whose commands live in small modules, imported only when run."""

from __future__ import annotations

import difflib
import importlib
import os
import signal
import sys
from typing import Any

import click

from cairn.hot import build_name

# name -> "module:function"; each module under cairn.cli holds one concept's commands.
COMMANDS: dict[str, str] = {
    "init": "cairn.cli.vault_cmds:init",
    "add": "cairn.cli.vault_cmds:add",
    "index": "cairn.cli.vault_cmds:index",
    "show": "cairn.cli.vault_cmds:show",
    "hook": "cairn.cli.hook_cmd:hook",
    "demo": "cairn.cli.demo_cmd:demo",
    "recall": "cairn.cli.recall_cmds:recall_cmd",
    "explain": "cairn.cli.recall_cmds:explain",
    "eval": "cairn.cli.recall_cmds:eval_cmd",
    "audit": "cairn.cli.provenance_cmds:audit",
    "sanitize": "cairn.cli.provenance_cmds:sanitize",
    "import": "cairn.cli.import_cmd:import_",
    "lint": "cairn.cli.lint_cmd:lint_command",
    "install": "cairn.cli.install_cmds:install_cmd",
    "uninstall": "cairn.cli.install_cmds:uninstall_cmd",
    "serve": "cairn.cli.serve_cmd:serve",
    "bench": "cairn.cli.bench_cmd:bench",
    "review": "cairn.cli.review_cmds:review_cmd",
    "calibrate": "cairn.cli.review_cmds:calibrate_cmd",
    "completion": "cairn.cli.completion_cmd:completion",
    "vault": "cairn.cli.registry_cmds:vault_group",
    "sync": "cairn.cli.sync_cmd:sync",
    "doctor": "cairn.cli.doctor_cmd:doctor",
    "list": "cairn.cli.list_cmd:list_cards",
}


# Words a newcomer types for a command Cairn names otherwise: `cairn new` is `cairn add`, `cairn mcp` is `cairn serve`.
OTHER_WORDS: dict[str, str] = {
    "new": "add",
    "create": "add",
    "write": "add",
    "mcp": "serve",
    "server": "serve",
    "search": "recall",
    "query": "recall",
    "find": "recall",
    "why": "explain",
    "reindex": "index",
    "fetch": "sync",
    "pull": "sync",
    "check": "doctor",
}


INTERRUPTED = 130  # 128 + SIGINT: what a shell reports for a command stopped by Ctrl-C


class Terminated(KeyboardInterrupt):
    """SIGTERM (`timeout`, `kill`, a service manager or an editor stopping a task) or SIGHUP (its terminal closed),
    raised where the command stands as Ctrl-C is: the default action ended the process there, so a `cairn init`
    stopped before its first commit left a half-made vault, and no temp file was removed. Every cleanup a Ctrl-C
    runs now runs for it too; the command ends as the shell reports that signal (128 + its number)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.status = 128 + signum
        self.line = "Hangup." if signum == signal.SIGHUP else "Terminated."


def _terminate(signum: int, frame: object) -> None:
    raise Terminated(signum)


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and name not in COMMANDS and not ctx.resilient_parsing:
            meant = OTHER_WORDS.get(name.lower()) or next(iter(difflib.get_close_matches(name, COMMANDS, 1)), None)
            if meant is not None:
                ctx.fail(f"No such command {name!r}. Did you mean {meant!r}?")
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        """Ctrl-C ends a command with one line and exit code 130, as a shell reports SIGINT, not click's "Aborted!"
        and exit 1, which reads like a failure of the command. Every write Cairn makes is atomic (a temp file, then
        a rename), so an interrupted command leaves each file as it was or as it was meant to be."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # a command's --help (`cairn list --help | true`): its commands' own errors_to_exit
            from cairn.cli.common import exit_pipe_closed  # stands around their bodies only

            exit_pipe_closed()
        except Terminated as stopped:
            click.echo(stopped.line, err=True)
            raise click.exceptions.Exit(stopped.status) from None
        except KeyboardInterrupt:
            click.echo("\nInterrupted.", err=True)  # the newline closes the terminal's ^C echo
            raise click.exceptions.Exit(INTERRUPTED) from None
        except click.exceptions.Abort as abort:
            if not isinstance(abort.__context__, KeyboardInterrupt):
                # end of input at a question (piped answers that run out): one line, not click's bare "Aborted!"
                where = ctx.invoked_subcommand or ctx.info_name or "cairn"
                click.echo("", err=True)  # the question's line stays open
                raise click.ClickException(
                    f"the input ended before a question was answered; give the answers as options instead "
                    f"(`cairn {where} --help` lists them)"
                ) from None
            if isinstance(abort.__context__, Terminated):
                click.echo(abort.__context__.line, err=True)
                raise click.exceptions.Exit(abort.__context__.status) from None
            click.echo("Interrupted.", err=True)  # click.prompt has closed the ^C echo
            raise click.exceptions.Exit(INTERRUPTED) from None

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        """`cairn --help | true`, `cairn --version | true`: the reader gone away stops cairn with 141, as it stops
        every command, not click's exit 1."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except BrokenPipeError:
            from cairn.cli.common import exit_pipe_closed

            exit_pipe_closed()

    def _main_shell_completion(self, ctx_args: Any, prog_name: str, complete_var: str | None = None) -> None:
        """A Tab (`_CAIRN_COMPLETE=<shell>_source` prints the script): Cairn's scripts, which complete `team:id`."""
        if os.environ.get(complete_var or "_CAIRN_COMPLETE"):
            from cairn.cli.completion_cmd import register_shells

            register_shells()
        super()._main_shell_completion(ctx_args, prog_name, complete_var)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, attr = target.partition(":")
        command: click.Command = getattr(importlib.import_module(module), attr)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(build_name(), "--version", prog_name="cairn", message="%(prog)s %(version)s")
def cli() -> None:
    """Cairn: a team's lessons as experience cards in git, recalled into coding agents' prompts.

    \b
    Examples, to start here:
      cairn demo                        the main job on the bundled example vault
      cairn init my-vault               a new vault (git repository) to fill with cards
      cairn vault add PATH              serve a vault in every project (`cairn vault list`)
      cairn install claude-code --user  the prompt hook (or codex, gemini)
      cairn recall "how do I ..."       which cards a prompt would get
      cairn doctor                      check the whole setup
    """


def _open_standard_streams() -> None:
    """A command started with stdin, stdout or stderr closed (`cairn lint 2>&-`, `cairn add <&-`, a job runner's bare
    descriptors) gets /dev/null in its place, as git does at its start: Python leaves such a stream None, which
    every read, write and `isatty()` tripped over (`unexpected AttributeError`), and the next file opened would take
    the free descriptor, where a child process (git) would write its output."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)  # the lowest free descriptor: this one, unless a lower one is free
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", encoding="utf-8", closefd=False))  # noqa: SIM115


def main(args: list[str] | None = None) -> Any:
    _open_standard_streams()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) == signal.SIG_DFL:  # one its parent set to be ignored (`nohup`) stays ignored
            signal.signal(signum, _terminate)
    try:
        return cli.main(args=args, prog_name="cairn")
    except OSError as exc:
        # what click writes before any command runs (`--help`, `--version`) into a full disk or a broken device
        # (`cairn --help > /dev/full`): click turns EPIPE alone into an exit, and this was a traceback
        from cairn.cli.common import os_error_text
        from cairn.terminal import clean_line

        click.echo(f"Error: {clean_line(os_error_text(exc))}", err=True)
        sys.exit(1)
