"""Where Cairn keeps what is not in the vault: the index cache and the state (hook log, sessions)."""

from __future__ import annotations

import os
import re
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def sha256_hex(data: bytes) -> str:
    """sha256 of data in hex, with the interpreter's built-in hash (no OpenSSL load on the hook's path)."""
    digest: str = _SHA256(data).hexdigest()
    return digest


def _builtin_sha256() -> Callable[[bytes], Any]:
    for name in ("_sha2", "_sha256"):  # Python >= 3.12, <= 3.11
        try:
            found: Callable[[bytes], Any] = __import__(name).sha256
            return found
        except (ImportError, AttributeError):
            continue
    from hashlib import sha256  # pragma: no cover - a build without the built-in module

    return sha256  # pragma: no cover


_SHA256 = _builtin_sha256()


def cache_dir() -> Path:
    """`$CAIRN_CACHE_DIR`, else `$XDG_CACHE_HOME/cairn`, else `~/.cache/cairn`."""
    if os.environ.get("CAIRN_CACHE_DIR"):
        return Path(os.environ["CAIRN_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "cairn"
    return Path.home() / ".cache" / "cairn"


def state_dir() -> Path:
    """`$CAIRN_STATE_DIR`, else `$XDG_STATE_HOME/cairn`, else `~/.local/state/cairn`."""
    if os.environ.get("CAIRN_STATE_DIR"):
        return Path(os.environ["CAIRN_STATE_DIR"])
    if os.environ.get("XDG_STATE_HOME"):
        return Path(os.environ["XDG_STATE_HOME"]) / "cairn"
    return Path.home() / ".local" / "state" / "cairn"


def vault_key(vault_root: Path) -> str:
    """A readable, collision-free folder name for one vault: its base name and a hash of its real path."""
    real = os.path.realpath(vault_root)
    digest = sha256_hex(real.encode("utf-8", "surrogateescape"))[:16]
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", os.path.basename(real))[:40] or "vault"
    return f"{base}-{digest}"


def index_path(vault_root: Path) -> Path:
    return cache_dir() / "vaults" / vault_key(vault_root) / "index.sqlite"
