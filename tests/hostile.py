"""Helpers for the hostile-input tests: the corpus folder, the hook tests' two-card vault and the "clean refusal"
contract."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import cairn_executable
from test_hook_payloads import make_vault  # the same two-card vault the hook tests use

HOSTILE = Path(__file__).parent / "fixtures" / "hostile"
ESC = "\x1b"
FITTING = "git pull --rebase dropped my local commits after someone force-pushed the shared branch"

__all__ = ["make_vault"]


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


def state_dir() -> Path:
    return Path(os.environ["CAIRN_STATE_DIR"])


def cache_dir() -> Path:
    return Path(os.environ["CAIRN_CACHE_DIR"])
