"""Commits and refs of a git work tree, read from `.git` files with the standard library alone.

`head_commit` is what HEAD names; `served_ref` is the ref a vault serves to agents (the reviewed branch, not
whatever is checked out). Handles a `.git` folder or a `.git` file (worktrees, submodules), symbolic and detached
HEAD, loose refs and packed-refs, and a worktree's `commondir`. Anything it cannot read (an unborn branch, a
reftable repository, a damaged file) gives None: callers treat that as "unknown" and never fail because of it.
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


def served_ref(work_tree: str | os.PathLike[str], configured: str | None = None) -> tuple[str, str | None]:
    """The ref a vault serves and the commit it names now: (full ref name, commit or None).

    `configured` (a vault's `ref` in the user configuration) is taken as git takes a name: `HEAD`, a full
    `refs/...` name, a commit id, else the first of `refs/X`, `refs/tags/X`, `refs/heads/X`, `refs/remotes/X`,
    `refs/remotes/X/HEAD` that exists. Without it: the remote-tracking branch `refs/remotes/origin/HEAD` points at
    (what the team reviewed and merged), else the local default branch (`refs/heads/main`, else
    `refs/heads/master`, else the branch HEAD is on).
    """
    gdir = git_dir(work_tree)
    if gdir is None:
        return (_full_name(configured) if configured else "HEAD", None)
    common = _common_dir(gdir)
    if configured:
        name = configured.strip()
        if name == "HEAD":
            return "HEAD", head_commit(work_tree)
        if _is_object_id(name):
            return name.lower(), name.lower()
        for candidate in _candidates(name):
            commit = _resolve(gdir, common, candidate)
            if commit is not None:
                return candidate, commit
        return _full_name(name), None
    origin_head = _symbolic_target(os.path.join(common, "refs", "remotes", "origin", "HEAD"))
    if origin_head is not None:
        return origin_head, _resolve(gdir, common, origin_head)
    for branch in ("refs/heads/main", "refs/heads/master"):
        commit = _resolve(gdir, common, branch)
        if commit is not None:
            return branch, commit
    target = _symbolic_target(os.path.join(gdir, "HEAD"))
    if target is not None:
        return target, _resolve(gdir, common, target)
    return "HEAD", head_commit(work_tree)


def _candidates(name: str) -> tuple[str, ...]:
    if name.startswith("refs/"):
        return (name,)
    return (
        f"refs/{name}",
        f"refs/tags/{name}",
        f"refs/heads/{name}",
        f"refs/remotes/{name}",
        f"refs/remotes/{name}/HEAD",
    )


def _full_name(name: str) -> str:
    return name if name.startswith("refs/") or name == "HEAD" else f"refs/heads/{name}"


def _symbolic_target(path: str) -> str | None:
    """The ref a symbolic ref file (`ref: refs/...`) names, or None when the file is missing or not symbolic."""
    text = _read_text(path)
    if text is None or not text.startswith("ref:"):
        return None
    target = text[len("ref:") :].strip()
    return target if target.startswith("refs/") and _is_safe_ref(target) else None


def _resolve(gdir: str, common: str, ref: str) -> str | None:
    """The commit a ref names, following symbolic refs; a tag is peeled when packed-refs records its commit."""
    if not _is_safe_ref(ref):
        return None
    value = _read_ref(gdir, common, ref)
    for _ in range(_MAX_REF_HOPS):
        if value is None:
            return None
        value = value.strip()
        if not value.startswith("ref:"):
            if not _is_object_id(value):
                return None
            peeled = _peeled(common, ref) if ref.startswith("refs/tags/") else None
            return (peeled or value).lower()
        ref = value[len("ref:") :].strip()
        if not _is_safe_ref(ref):
            return None
        value = _read_ref(gdir, common, ref)
    return None


def _peeled(common: str, ref: str) -> str | None:
    text = _read_text(os.path.join(common, "packed-refs"))
    if text is None:
        return None
    found = False
    for line in text.splitlines():
        if found:
            return line[1:].strip() if line.startswith("^") and _is_object_id(line[1:].strip()) else None
        if line and line[0] not in "#^" and line.partition(" ")[2].strip() == ref:
            found = True
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
