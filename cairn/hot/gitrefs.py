"""Commits and refs of a git work tree, read from `.git` files: `cairn.hot.vault` holds them (the hook imports one
module for both), and this module keeps their names for the code that imports them from here."""

from cairn.hot.vault import git_dir, head_commit, served_ref

__all__ = ["git_dir", "head_commit", "served_ref"]
