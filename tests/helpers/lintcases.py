"""The lint fixtures as data: tests/fixtures/lint/<rule>/{good,bad,context}/ and the findings each bad card gives.

A case is one card placed at `cards/<rule>/<file>` in a vault holding the rule's context (cards and cairn.toml);
EXPECTED lists the exact `path:line: rule-id message` lines of every bad card. Dates are checked as of TODAY.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "lint"
TODAY = "2026-12-01"


@dataclass(frozen=True)
class Case:
    rule: str
    kind: str  # good | bad
    file: Path

    @property
    def rel_path(self) -> str:
        return f"cards/{self.rule}/{self.file.name}"

    @property
    def id(self) -> str:
        return f"{self.rule}/{self.kind}/{self.file.name}"


def rules() -> list[str]:
    return sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())


def cases(kind: str, rule: str | None = None) -> list[Case]:
    found = []
    for name in [rule] if rule else rules():
        folder = FIXTURES / name / kind
        if folder.is_dir():
            found += [Case(name, kind, f) for f in sorted(folder.iterdir())]
    return found


def expected(case: Case) -> list[str]:
    """The exact lines a bad case gives (none for a good one)."""
    listing = FIXTURES / case.rule / "EXPECTED"
    if case.kind == "good" or not listing.is_file():
        return []
    prefix = f"{case.rel_path}:"
    return [line for line in listing.read_text("utf-8").splitlines() if line.startswith(prefix)]


def lay_context(rule: str, vault: Path) -> None:
    """Copy the rule's context (cards, cairn.toml) into a vault."""
    context = FIXTURES / rule / "context"
    if context.is_dir():
        shutil.copytree(context, vault, dirs_exist_ok=True)


def place(case: Case, vault: Path) -> Path:
    target = vault / case.rel_path
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(case.file, target)
    return target
