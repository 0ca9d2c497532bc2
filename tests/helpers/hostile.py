"""Hostile inputs: the corpus folder, the installed `cairn` fed raw bytes, and the "clean refusal" contract."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from helpers.vaults import cairn_executable

HOSTILE = Path(__file__).resolve().parent.parent / "fixtures" / "hostile"
ESC = "\x1b"


def assert_clean_exit(done: subprocess.CompletedProcess[str], *codes: int) -> None:
    """Exit 0/1/2 (or one of `codes`), no traceback, no internal-error line, no terminal escapes in human output."""
    allowed = codes or (0, 1, 2)
    assert done.returncode in allowed, (done.returncode, done.stdout[-500:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "a bug in Cairn" not in done.stderr, done.stderr
    assert ESC not in done.stdout and ESC not in done.stderr
    if done.returncode == 1:
        assert done.stderr.strip(), "exit 1 says why on stderr"


def run_bytes(
    args: list[str], data: bytes, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    """The installed cairn with exactly these bytes on stdin."""
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.run(
        [cairn_executable(), *args], input=data, capture_output=True, cwd=cwd, env=full, check=False, timeout=timeout
    )
