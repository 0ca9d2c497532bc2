"""The hook log: one JSON line per prompt in `<state_dir>/hook.jsonl`. Never the prompt text.

Each line: time, format, hashed session id, the prompt's sha256 and length, the vaults in play (`vaults`: each
one's name, folder, served ref, indexed commit, whether its index was stale, why it was skipped, its error and the
ids it gave), the candidates with score and gate decision, the injected ids (as shown: `name:id` for a configured
vault), and the error (or null). `vault`, `commit` and `stale` at the top are those of the one vault when the hook
serves a single vault given by path (`--vault`, `CAIRN_VAULT`), else null (`stale`: any vault's index was).
"""

import os
import time

from cairn.hot import jsonc
from cairn.hot.paths import private_folder, sha256_hex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["append", "new_entry", "sha256_hex", "utc_now"]


LOG_FILE = "hook.jsonl"
MAX_LOG_BYTES = 32 * 1024 * 1024  # then hook.jsonl becomes hook.jsonl.1 and a new file starts
MAX_LOGGED_CANDIDATES = 20


def utc_now() -> str:
    """ISO-8601 UTC time to the second, e.g. `2026-05-01T12:00:00Z`."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def new_entry(fmt: str) -> "dict[str, Any]":
    """A log entry with every field present; the hook fills it in as it goes."""
    return {
        "time": utc_now(),
        "format": fmt,
        "session": None,
        "prompt_sha256": None,
        "prompt_len": None,
        "vault": None,
        "commit": None,
        "stale": False,
        "vaults": [],
        "candidates": [],
        "injected": [],
        "error": None,
    }


def vault_entry(name: str | None, root: str | None) -> "dict[str, Any]":
    """One vault's part of a log line: every field present, filled in as the hook serves it."""
    return {
        "name": name,
        "vault": root,
        "ref": None,
        "commit": None,
        "stale": False,
        "skipped": None,
        "error": None,
        "injected": [],
    }


def append(state_dir: str, entry: "dict[str, Any]") -> None:
    """Append one line; a single `write` on an O_APPEND descriptor, so concurrent hooks never interleave lines."""
    private_folder(state_dir)  # 0700, a looser state folder tightened
    path = os.path.join(state_dir, LOG_FILE)
    line = (jsonc.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8", "replace")
    _rotate_if_large(path)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _rotate_if_large(path: str) -> None:
    try:
        if os.stat(path).st_size < MAX_LOG_BYTES:
            return
        os.replace(path, path + ".1")
    except OSError:
        pass
