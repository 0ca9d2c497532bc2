"""The index files of other refs than the served one (`cairn index --ref`, `recall --ref`): how many are kept.

Each `--ref` gets its own file in the vault's cache folder (`ref-<hash>.cairn`, with its seal, lock and card
vectors), as big as the served index. Without a bound, every branch or commit an author ever asked about stayed. At
each index run of the vault, the others are removed when they were last used over `IDLE_SECONDS` ago and either are
not among the `KEEP` used last, or name a ref the repository no longer has (a merged, deleted branch).

A file is never removed from under another process: its writer lock is taken without waiting (a writer, or a reader
between its build and its first read, since a build takes the lock, keeps it), and one whose card vectors a
detached encoder is writing is left. A reader that opened the file reads on: the file goes when it closes it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from cairn.hot import VECTORS_SUFFIX
from cairn.hot.errors import CairnError
from cairn.hot.index import IndexReader
from cairn.hot.vault import served_ref
from cairn.index import store

PREFIX, SUFFIX = "ref-", ".cairn"
KEEP = 4  # the ref indexes used last, the one of this run included
# What "used" means is the last build or check of the file (each takes its lock, which writes the lock file): a
# reader opens the file right after, so one used this recently may be about to be read.
IDLE_SECONDS = 600.0


def prune(folder: Path, used: Path | None, git_root: Path | None, now: float | None = None) -> list[Path]:
    """Remove the ref index files of `folder` that are idle and beyond `KEEP`, or whose ref is gone; `used` (the
    file this run built) stays. Returns the files removed; never raises for a file it could not remove."""
    now = time.time() if now is None else now
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = sorted(
        ((_last_used(folder / name), folder / name) for name in names if _is_ref_index(name)),
        reverse=True,
    )
    others = [(at, path) for at, path in found if path != used]
    room = KEEP - (1 if used is not None else 0)
    removed: list[Path] = []
    kept = 0
    for at, path in others:
        if now - at < IDLE_SECONDS or (kept < room and _ref_exists(path, git_root)):
            kept += 1
        elif _remove(path, now):
            removed.append(path)
    return removed


def _is_ref_index(name: str) -> bool:
    return name.startswith(PREFIX) and name.endswith(SUFFIX) and len(name) > len(PREFIX) + len(SUFFIX)


def _last_used(path: Path) -> float:
    """When the file was last built or checked: its lock file's time (every build takes the lock and writes its pid
    there), or the file's own."""
    times = []
    for each in (path, _lock(path)):
        try:
            times.append(os.lstat(each).st_mtime)
        except OSError:
            pass
    return max(times, default=0.0)


def _lock(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def _ref_exists(path: Path, git_root: Path | None) -> bool:
    """Whether the ref the file was built from still names a commit (an unreadable file names none)."""
    try:
        reader = IndexReader(path)
    except (CairnError, OSError, ValueError):
        return False
    try:
        ref = reader.meta.get("ref") or ""
    finally:
        reader.close()
    if not ref or git_root is None:
        return bool(ref)
    return served_ref(git_root, ref)[1] is not None


def _remove(path: Path, now: float) -> bool:
    """Remove one ref index and the files beside it under its writer lock, taken without waiting; False when its lock
    is held, it was used meanwhile, or a detached encoder writes its card vectors."""
    from cairn.semantic.vectors import encoding_now

    try:
        # unmarked: the lock file's time still says when a build last took it
        with store.file_lock(_lock(path), f"removing the unused index {path}", wait=0, mark=False):
            if now - _last_used(path) < IDLE_SECONDS or encoding_now(path):
                return False
            vectors = path.with_name(path.name + VECTORS_SUFFIX)
            for each in (path, store.seal_path(path), vectors, vectors.with_name(vectors.name + ".lock")):
                try:
                    each.unlink()
                except FileNotFoundError:
                    pass
            _lock(path).unlink()  # last, still held: a writer that waited on it checks its lock is the file's
            return True
    except (CairnError, OSError):
        return False
