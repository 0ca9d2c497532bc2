"""Lint: contract and policy checks on cards, one rule per module behind an ordered registry.

Its names load on first use: the index imports `cairn.lint.security` on every read-only command (`list`, `recall`,
`explain`), and a current index needs only the security rules' version, not the registry's ~230 compiled patterns.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cairn.lint.registry import RULES, UnknownRule, select
    from cairn.lint.runner import LintReport, lint_files, lint_vault
    from cairn.lint.snapshot import STAGED, WORKTREE, in_git_hook, run_by_pre_commit

_HOMES = {
    "RULES": "registry",
    "UnknownRule": "registry",
    "select": "registry",
    "LintReport": "runner",
    "lint_files": "runner",
    "lint_vault": "runner",
    "STAGED": "snapshot",
    "WORKTREE": "snapshot",
    "in_git_hook": "snapshot",
    "run_by_pre_commit": "snapshot",
}

__all__ = [
    "RULES",
    "STAGED",
    "WORKTREE",
    "LintReport",
    "UnknownRule",
    "in_git_hook",
    "lint_files",
    "lint_vault",
    "run_by_pre_commit",
    "select",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
