"""A folder made read-only as a whole file system (a bind mount remounted read-only): running as root, chmod cannot
show what a read-only mount does. Skips the test where this namespace allows no mount."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers.vaults import run_cairn


def cairn_on_read_only(folder: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed `cairn ARGS` run while `folder` is a read-only file system; the mount is undone after."""
    if subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True, check=False).returncode:
        pytest.skip("needs a bind mount (root in a namespace that allows it)")
    try:
        remounted = subprocess.run(
            ["mount", "-o", "remount,bind,ro", str(folder)], capture_output=True, text=True, check=False
        )
        assert remounted.returncode == 0, remounted.stderr
        return run_cairn(*args, cwd=cwd)
    finally:
        subprocess.run(["umount", str(folder)], check=True)
