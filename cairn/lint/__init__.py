"""Lint: contract and policy checks on cards, one rule per module behind an ordered registry."""

from __future__ import annotations

from cairn.lint.registry import RULES, UnknownRule, select
from cairn.lint.runner import LintReport, lint_files, lint_vault
from cairn.lint.snapshot import STAGED, WORKTREE, in_git_hook, run_by_pre_commit

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
