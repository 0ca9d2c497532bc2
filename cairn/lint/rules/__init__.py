"""Lint rules, one per module; each module defines `RULE` (see cairn.lint.registry for their order)."""
