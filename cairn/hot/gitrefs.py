"""The commit a git work tree's HEAD names, read from `.git` files with the standard library alone.

Handles a `.git` folder or a `.git` file (worktrees, submodules), symbolic and detached HEAD, loose refs and
packed-refs, and a worktree's `commondir`. Anything it cannot read (an unborn branch, a reftable repository,
a damaged file) gives None: callers treat that as "unknown" and never fail because of it.
"""

import os

_MAX_REF_HOPS = 5
_HEX = frozenset("0123456789abcdef")


def git_dir(work_tree: str | os.PathLike[str]) -> str | None:
    """The git directory of a work tree: `.git` itself, or where a `.git` file's `gitdir:` line points."""
    dot_git = os.path.join(os.fspath(work_tree), ".git")
    if os.path.isdir(dot_git):
        return dot_git
    text = _read_text(dot_git)
    if text is None or not text.startswith("gitdir:"):
        return None
    target = text[len("gitdir:") :].strip()
    if not target:
        return None
    if not os.path.isabs(target):
        target = os.path.join(os.fspath(work_tree), target)
    return os.path.normpath(target) if os.path.isdir(target) else None


def head_commit(work_tree: str | os.PathLike[str]) -> str | None:
    """The full commit id HEAD resolves to, or None when it cannot be told from the files."""
    gdir = git_dir(work_tree)
    if gdir is None:
        return None
    common = _common_dir(gdir)
    value = _read_text(os.path.join(gdir, "HEAD"))
    for _ in range(_MAX_REF_HOPS):
        if value is None:
            return None
        value = value.strip()
        if not value.startswith("ref:"):
            return value.lower() if _is_object_id(value) else None
        ref = value[len("ref:") :].strip()
        if not _is_safe_ref(ref):
            return None
        value = _read_ref(gdir, common, ref)
    return None


def _read_ref(gdir: str, common: str, ref: str) -> str | None:
    # Per-worktree refs (HEAD-like names) live in the worktree's git dir; branches and tags in the common dir.
    for base in (gdir, common) if gdir != common else (gdir,):
        loose = _read_text(os.path.join(base, *ref.split("/")))
        if loose is not None and loose.strip():
            return loose
    return _packed_ref(common, ref)


def _packed_ref(common: str, ref: str) -> str | None:
    text = _read_text(os.path.join(common, "packed-refs"))
    if text is None:
        return None
    for line in text.splitlines():
        if not line or line[0] in "#^":
            continue
        object_id, _, name = line.partition(" ")
        if name.strip() == ref:
            return object_id
    return None


def _common_dir(gdir: str) -> str:
    text = _read_text(os.path.join(gdir, "commondir"))
    if text is None or not text.strip():
        return gdir
    target = text.strip()
    if not os.path.isabs(target):
        target = os.path.join(gdir, target)
    return os.path.normpath(target)


def _is_object_id(value: str) -> bool:
    return len(value) in (40, 64) and set(value.lower()) <= _HEX


def _is_safe_ref(ref: str) -> bool:
    parts = ref.split("/")
    return bool(ref) and ".." not in parts and "" not in parts and not os.path.isabs(ref) and "\\" not in ref


def _read_text(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(1 << 26)
    except OSError:
        return None
    return data.decode("utf-8", "replace")
