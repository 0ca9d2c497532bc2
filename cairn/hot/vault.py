"""Finding the vault: `--vault`, else `CAIRN_VAULT`, else the enclosing vault of the current directory."""

from __future__ import annotations

import os
from pathlib import Path

from cairn.hot.errors import VaultNotFound
from cairn.hot.record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

CARDS_DIR = "cards"


class Vault(Record):
    """A vault on disk (a plain record: the hook finds vaults too, without `dataclasses`).

    root: the folder that holds `cards/` (absolute, symlinks resolved).
    git_root: the enclosing git work tree, or None when the vault is not in one.
    prefix: the vault's path inside the git tree, `` or `sub/dir/` (always with a trailing slash).
    """

    __slots__ = ("root", "git_root", "prefix")
    root: Path
    git_root: Path | None
    prefix: str

    def __init__(self, root: Path, git_root: Path | None, prefix: str) -> None:
        self._init(root, git_root, prefix)

    @property
    def cards_dir(self) -> Path:
        return self.root / CARDS_DIR

    def card_path(self, card_id: str) -> Path:
        return self.root / CARDS_DIR / f"{card_id}.md"


def find_vault(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Vault:
    """Locate the vault; raises VaultNotFound with what to do next."""
    given = explicit or os.environ.get("CAIRN_VAULT")
    if given:
        root = Path(given).expanduser()
        if not root.is_dir():
            raise VaultNotFound(f"vault {str(given)!r} is not a folder; create one with `cairn init {given}`")
        if not (root / CARDS_DIR).is_dir():
            raise VaultNotFound(f"{str(given)!r} has no cards/ folder; create a vault with `cairn init PATH`")
        return _vault_at(root.resolve())
    start = (cwd or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / CARDS_DIR).is_dir() and ((folder / "cairn.toml").is_file() or _is_git_root(folder)):
            return _vault_at(folder)
        if _is_git_root(folder):
            break
    raise VaultNotFound("no vault here; pass --vault PATH, set CAIRN_VAULT, or create one with `cairn init PATH`")


def _is_git_root(folder: Path) -> bool:
    return (folder / ".git").exists()


def _vault_at(root: Path) -> Vault:
    for folder in (root, *root.parents):
        if _is_git_root(folder):
            rel = root.relative_to(folder).as_posix()
            return Vault(root=root, git_root=folder, prefix="" if rel == "." else rel + "/")
    return Vault(root=root, git_root=None, prefix="")


def worktree_card_files(vault: Vault) -> Iterator[Path]:
    """Every file under the vault's `cards/` in the working tree; symlinks are listed, never followed."""
    for dirpath, dirnames, filenames in os.walk(vault.cards_dir, followlinks=False):
        dirnames.sort()
        folder = Path(dirpath)
        for name in sorted(filenames):
            yield folder / name
        for name in dirnames:
            if (folder / name).is_symlink():
                yield folder / name
