"""Atomic file writes: a temp file beside the target, fsync, then rename; new files are never overwritten."""

from __future__ import annotations

import errno
import os
import shlex
import stat
import tempfile
import time
from pathlib import Path

from cairn.hot.errors import CardExists, RefusedWrite


def write_atomic(target: Path, data: bytes, *, overwrite: bool = True, mode: int | None = None) -> None:
    """Write `data` to `target` so readers see the old file or the new one, never half of either.

    With overwrite=False an existing target raises CardExists and is left untouched. mode: the new file's; by
    default the mode the user's umask gives a new file, as an editor's or git's would have (a fixed 0644 made a
    card of a user whose umask is 077 readable by everyone).
    """
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):  # a file, or a symlink to nothing, where a folder of the path goes
        blocker = next((p for p in (target.parent, *target.parent.parents) if _not_a_folder(p)), None)
        if blocker is None:
            raise
        if blocker.is_symlink():  # `~/.claude -> ~/dotfiles/claude` before that folder is there: said "File exists"
            raise RefusedWrite(
                f"{blocker} is a symlink to {os.readlink(blocker)}, which leads to no folder, where the folder for "
                f"{target} goes; make the folder it names, or remove the link, and run this again (nothing was written)"
            ) from None
        raise RefusedWrite(
            f"{blocker} is a file where the folder for {target} goes; move it away and run this again "
            "(nothing was written)"
        ) from None
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name[:40]}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:  # the folder takes no new file (read-only, /proc): name the target, not a temp name
        raise type(exc)(exc.errno, exc.strerror, str(target)) from None
    tmp = Path(tmp_name)
    try:
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            raise named(exc, target) from None
        os.chmod(tmp, _new_file_mode() if mode is None else mode)
        if overwrite:
            os.replace(tmp, target)
        else:
            try:
                os.link(tmp, target)  # fails if target exists: no window in which it could be overwritten
            except FileExistsError:
                raise CardExists(f"{target} already exists; nothing was written") from None
            except OSError:  # file systems without hard links
                if target.exists() or target.is_symlink():
                    raise CardExists(f"{target} already exists; nothing was written") from None
                os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _not_a_folder(path: Path) -> bool:
    """Whether something other than a folder stands at `path`: a file, or a symlink that leads to no folder (to
    nothing, or in a loop), at which no folder can be made."""
    return (path.exists() or path.is_symlink()) and not path.is_dir()


def _new_file_mode() -> int:
    """The mode `open()` gives a new file under the process's umask."""
    return 0o666 & ~_umask()


def new_folder_mode() -> int:
    """The mode `mkdir` gives a new folder under the process's umask."""
    return 0o777 & ~_umask()


def _umask() -> int:
    """The process's umask (which can only be read by setting it)."""
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def named(exc: OSError, target: str | os.PathLike[str]) -> OSError:
    """`exc` with the file it was writing named: a write through a descriptor (a full disk, a file size limit) names
    none, and the error said only "File too large"."""
    if exc.filename is not None:
        return exc
    return type(exc)(exc.errno, exc.strerror, os.fspath(target))


def disk_fix(exc: OSError, otherwise: str) -> str:
    """What to do about a write `exc` stopped: free space on a full disk or a used-up quota, or raise a file size
    limit, which no folder's mode or owner can help, else `otherwise` (a permission to check, another folder to
    choose)."""
    if exc.errno == errno.ENOSPC:
        return "free some space on that disk, then run this again"
    if exc.errno == errno.EDQUOT:
        return "the disk quota is used up: free some space, then run this again"
    if exc.errno == errno.EFBIG:  # no folder's mode or owner helps either: "check that you can write there" misled
        return "a file size limit (`ulimit -f`) stopped the write: raise it, then run this again"
    return otherwise


def leads_outside(path: str | Path, folder: str | Path) -> str | None:
    """The real path `path` leads to when that is outside `folder` (a symlink on the way: a cloned repository's
    `.claude/settings.local.json -> ~/x`, a vault's `cairn.toml -> /elsewhere`), else None."""
    real, top = os.path.realpath(path), os.path.realpath(folder)
    return None if real == top or real.startswith(top.rstrip("/") + "/") else real


def ensure_inside(folder: Path, target: Path) -> None:
    """Refuse a write whose target would land outside `folder` through a symlinked folder (existing or not yet).

    The nearest folder of `target` that exists is resolved: a symlink anywhere on the way out of `folder`
    (`cards/topic -> /elsewhere`, with `cards/topic/new/x.md` to write) shows there.
    """
    inside = Path(os.path.abspath(folder))
    if inside.is_symlink():  # a committed `cards -> /elsewhere`: everything under it is elsewhere
        raise RefusedWrite(f"{folder} is a symlink; cards are written only into a real folder (nothing was written)")
    probe = Path(os.path.abspath(target)).parent
    while not probe.exists() and not probe.is_symlink() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_relative_to(inside) or not probe.resolve().is_relative_to(inside.resolve()):
        raise RefusedWrite(f"{target} would be written outside {folder} (a symlinked folder?); nothing was written")


def read_only_refusal(target: str | Path, shown: str | Path) -> str | None:
    """Why a write must leave `target` (named `shown`) alone, or None: its owner made it read-only (`chmod 444`: kept
    as it is on purpose, a managed or locked setup), or it is on a read-only file system. An atomic write would
    replace a read-only file all the same (a rename needs only the folder's permission), and root may write any
    file: so the file's own mode decides, not `os.access` alone. A missing file: None."""
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        return None
    if mode & 0o222 and os.statvfs(target).f_flag & os.ST_RDONLY:  # `chmod` cannot help there
        return (
            f"{shown} is on a read-only file system; nothing was written: make that file system writable and run "
            "this again, or edit the file where it is managed"
        )
    if mode & 0o222 == 0 or not os.access(target, os.W_OK):
        return (
            f"{shown} is read-only (mode {mode:o}); nothing was written: make it writable (`chmod u+w "
            f"{shlex.quote(str(target))}`) and run this again, or edit it by hand"
        )
    return None


def write_backup(path: Path, old: bytes, mode: int) -> Path:
    """Write a file's old bytes to a new `<name>.bak-TIME` beside `path` (never over another); the backup's path.
    Another process in the same second may take a name between the look and the write: the next name is tried."""
    stamp, n = time.strftime("%Y%m%dT%H%M%S"), 1
    while True:
        saved = path.with_name(f"{path.name}.bak-{stamp}" + (f"-{n}" if n > 1 else ""))
        if not saved.exists() and not saved.is_symlink():
            try:
                write_atomic(saved, old, overwrite=False, mode=mode)
                return saved
            except CardExists:
                pass
        n += 1
