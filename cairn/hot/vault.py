"""Finding the vault: `--vault`, else `CAIRN_VAULT`, else the enclosing vault of the current directory.

`locate_vault` finds it with path strings (the hook's way: `pathlib` would cost every prompt its imports);
`find_vault` gives cold code the same vault as a `Vault` of `Path`s.
"""

import os

from cairn.hot.paths import exists, is_dir, is_file, path_text, resolve
from cairn.hot.record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from cairn.hot.errors import VaultNotFound

CARDS_DIR = "cards"


class Vault(Record):
    """A vault on disk (a plain record: the hook finds vaults too, without `dataclasses`).

    root: the folder that holds `cards/` (absolute, symlinks resolved).
    git_root: the enclosing git work tree, or None when the vault is not in one.
    prefix: the vault's path inside the git tree, `` or `sub/dir/` (always with a trailing slash).
    """

    __slots__ = ("root", "git_root", "prefix")
    root: "Path"
    git_root: "Path | None"
    prefix: str

    def __init__(self, root: "Path", git_root: "Path | None", prefix: str) -> None:
        self._init(root, git_root, prefix)

    @property
    def cards_dir(self) -> "Path":
        return self.root / CARDS_DIR

    def card_path(self, card_id: str) -> "Path":
        return self.root / CARDS_DIR / f"{card_id}.md"


class VaultDirs(Record):
    """Where a vault is, as path strings (`locate_vault`); the same fields as `Vault`."""

    __slots__ = ("root", "git_root", "prefix")
    root: str
    git_root: str | None
    prefix: str

    def __init__(self, root: str, git_root: str | None, prefix: str) -> None:
        self._init(root, git_root, prefix)


def find_vault(explicit: "str | os.PathLike[str] | None" = None, cwd: "Path | None" = None) -> Vault:
    """Locate the vault; raises VaultNotFound with what to do next."""
    from pathlib import Path

    found = locate_vault(explicit, cwd)
    return Vault(Path(found.root), None if found.git_root is None else Path(found.git_root), found.prefix)


def locate_vault(
    explicit: "str | os.PathLike[str] | None" = None, cwd: "str | os.PathLike[str] | None" = None
) -> VaultDirs:
    """`find_vault` with path strings; raises VaultNotFound with what to do next."""
    given = explicit or os.environ.get("CAIRN_VAULT")
    if given:
        root = _expanduser(path_text(os.fspath(given)))
        if not is_dir(root):
            if not explicit and os.pathsep in str(given):
                raise _not_found(
                    f"CAIRN_VAULT names one vault, not a list: {str(given)!r}; set it to a single vault's folder"
                )
            raise _not_found(f"vault {str(given)!r} is not a folder; create one with `cairn init {given}`")
        if not is_dir(os.path.join(root, CARDS_DIR)):
            real = resolve(root)
            parent = os.path.dirname(real)
            if os.path.basename(real) == CARDS_DIR and _holds_a_vault(parent):
                raise _not_found(f"{str(given)!r} is a vault's cards/ folder; pass the vault itself: {parent}")
            raise _not_found(f"{str(given)!r} has no cards/ folder; create a vault with `cairn init PATH`")
        return _vault_at(resolve(root))
    folder = resolve(os.getcwd() if cwd is None else os.fspath(cwd))
    while True:
        if _holds_a_vault(folder):
            return _vault_at(folder)
        parent = os.path.dirname(folder)
        if _is_git_root(folder) or parent == folder:
            break
        folder = parent
    raise _not_found("no vault here; pass --vault PATH, set CAIRN_VAULT, or create one with `cairn init PATH`")


def _not_found(message: str) -> "VaultNotFound":
    from cairn.hot.errors import VaultNotFound  # imported when raised: a hook that finds its vault never needs it

    return VaultNotFound(message)


def _expanduser(path: str) -> str:
    """`str(Path(path).expanduser())` of a path as `path_text` gives it."""
    if path[:1] != "~":
        return path
    if os.name != "posix":  # pragma: no cover - pathlib knows Windows paths
        from pathlib import Path

        return str(Path(path).expanduser())
    first, _, rest = path.partition("/")
    home = os.path.expanduser(first)
    if home[:1] == "~":
        raise RuntimeError("Could not determine home directory.")
    return path_text(home, rest) if rest else path_text(home)


def _holds_a_vault(folder: str) -> bool:
    """Whether discovery takes `folder` for a vault: it has `cards/`, and `cairn.toml` or is a git work tree."""
    return is_dir(os.path.join(folder, CARDS_DIR)) and (
        is_file(os.path.join(folder, "cairn.toml")) or _is_git_root(folder)
    )


def _is_git_root(folder: str) -> bool:
    return exists(os.path.join(folder, ".git"))


def _vault_at(root: str) -> VaultDirs:
    folder = root
    while True:
        if _is_git_root(folder):
            rel = root[len(folder) :].lstrip(os.sep).replace(os.sep, "/")
            return VaultDirs(root=root, git_root=folder, prefix=rel + "/" if rel else "")
        parent = os.path.dirname(folder)
        if parent == folder:
            return VaultDirs(root=root, git_root=None, prefix="")
        folder = parent


def worktree_card_files(vault: Vault) -> "Iterator[Path]":
    """Every file under the vault's `cards/` in the working tree; symlinks are listed, never followed."""
    from pathlib import Path

    for dirpath, dirnames, filenames in os.walk(vault.cards_dir, followlinks=False):
        dirnames.sort()
        folder = Path(dirpath)
        for name in sorted(filenames):
            yield folder / name
        for name in dirnames:
            if (folder / name).is_symlink():
                yield folder / name
