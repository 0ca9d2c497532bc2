"""Cairn's click commands run in this process (click's CliRunner), with the result a subprocess would give."""

from __future__ import annotations

import os
import select
import subprocess
import time
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path

from click.testing import CliRunner

from cairn.cli import cli


def invoke_cli(
    args: Sequence[str], input: str | bytes | None = None, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`cairn ARGS` through the click group, from `cwd`, with `env` added to the environment for the call.

    Returns a CompletedProcess (exit code, stdout, stderr) so a test reads the same either way. An exception that
    escapes the command (what the executable would print as a traceback) is appended to stderr with its traceback.
    """
    runner = CliRunner()
    with _working_directory(cwd):
        result = runner.invoke(cli, list(args), input=input, env=env, prog_name="cairn", catch_exceptions=True)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess(["cairn", *args], result.exit_code, result.stdout, stderr)


@contextmanager
def _working_directory(path: Path | None) -> Iterator[None]:
    """The commands find the vault around the current folder, as a process started there would."""
    if path is None:
        yield
        return
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def run_on_terminal(
    args: Sequence[str],
    cwd: Path,
    timeout: float = 120,
    env: dict[str, str] | None = None,
    typed: bytes | None = None,
    stdout: Path | None = None,
) -> tuple[int, bytes]:
    """The installed `cairn ARGS` with stdout and stderr on a pseudo-terminal, as a user at a terminal runs it, `env`
    added to the environment: (exit code, everything it wrote there). `typed`: stdin is the terminal too, and this is
    typed on it; `stdout`: the output goes to that file instead (`cairn ... > FILE` typed at a terminal). A command
    still running, or its terminal still open, after `timeout` seconds is killed and the call raises TimeoutExpired."""
    import pty

    from helpers.vaults import cairn_executable

    primary, secondary = pty.openpty()
    full = {**os.environ, **(env or {})}
    out = stdout.open("wb") if stdout is not None else None
    with (
        out if out is not None else nullcontext(),
        subprocess.Popen(
            [cairn_executable(), *args],
            stdin=secondary if typed is not None else None,
            stdout=out if out is not None else secondary,
            stderr=secondary,
            cwd=cwd,
            env=full,
        ) as process,
    ):
        os.close(secondary)
        deadline = time.monotonic() + timeout
        try:
            if typed is not None:
                os.write(primary, typed)
            output = b""
            while True:
                # a command stuck at a question would block a plain read, and the test with it, for ever
                if not select.select([primary], [], [], max(deadline - time.monotonic(), 0))[0]:
                    raise subprocess.TimeoutExpired(process.args, timeout, output)
                try:
                    chunk = os.read(primary, 65536)
                except OSError:  # the terminal closed: the command is done
                    break
                if not chunk:
                    break
                output += chunk
            code = process.wait(timeout=max(deadline - time.monotonic(), 0))
        finally:
            if process.poll() is None:  # killed, or leaving `with Popen` would wait for it with no timeout
                process.kill()
            os.close(primary)
    return code, output
