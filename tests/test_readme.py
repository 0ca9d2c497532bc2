"""The README cannot go stale: its test command is what CI runs, and its first command's `cairn demo` works."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from helpers.vaults import cairn_executable

ROOT = Path(__file__).resolve().parent.parent


def _commands(readme: str) -> list[str]:
    return re.findall(r"```sh\n(.+?)\n```", readme)


def test_readme_starts_with_two_commands_and_ci_runs_the_second() -> None:
    for name in ("README.md", "README.zh-CN.md"):
        commands = _commands((ROOT / name).read_text(encoding="utf-8"))
        install_and_demo, tests = commands[0], commands[1]
        assert install_and_demo.endswith("cairn demo"), name
        assert "pytest" in tests, name
        ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
        assert tests in ci.splitlines(), f"{name}'s test command is not what .ci/run runs"


def test_demo_runs_on_the_bundled_vault(tmp_path: Path) -> None:
    done = subprocess.run([cairn_executable(), "demo"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Indexed" in done.stdout
