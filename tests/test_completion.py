"""`cairn completion SHELL` prints the script click's `_CAIRN_COMPLETE=<shell>_source cairn` prints."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.cli import invoke_cli
from helpers.vaults import cairn_executable


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, env={**os.environ, **env}, cwd=cwd, check=False)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_clicks_script_for_the_shell(shell: str, tmp_path: Path) -> None:
    cairn = cairn_executable()
    printed = _run([cairn, "completion", shell], {}, tmp_path)
    assert printed.returncode == 0, printed.stderr
    assert "_CAIRN_COMPLETE" in printed.stdout and f"{shell}_complete" in printed.stdout
    by_env = _run([cairn], {"_CAIRN_COMPLETE": f"{shell}_source"}, tmp_path)
    assert by_env.returncode == 0, by_env.stderr
    assert printed.stdout == by_env.stdout
    assert invoke_cli(["completion", shell]).stdout == printed.stdout  # made in-process, not by a second cairn


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_bash_script_completes_a_command(tmp_path: Path) -> None:
    cairn = cairn_executable()
    script = (
        f'eval "$("{cairn}" completion bash)"; COMP_WORDS=(cairn revi); COMP_CWORD=1; '
        'PATH="$CAIRN_DIR:$PATH" _cairn_completion cairn; echo "${COMPREPLY[@]}"'
    )
    done = _run(["bash", "-c", script], {"CAIRN_DIR": str(Path(cairn).parent)}, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["review"]


def test_completion_help_and_a_shell_it_does_not_know() -> None:
    helped = invoke_cli(["completion", "--help"])
    assert helped.returncode == 0
    assert 'eval "$(cairn completion bash)"' in helped.stdout
    unknown = invoke_cli(["completion", "tcsh"])
    assert unknown.returncode == 2
    assert "'tcsh' is not one of 'bash', 'zsh', 'fish'" in unknown.stderr
