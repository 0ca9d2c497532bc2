"""Where Cairn keeps what is not in the vault: the index cache and the state (hook log, sessions)."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path


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
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", os.path.basename(real))[:40] or "vault"
    return f"{base}-{digest}"


def index_path(vault_root: Path) -> Path:
    return cache_dir() / "vaults" / vault_key(vault_root) / "index.sqlite"
