"""A finding: one problem in one file, printed as `path:line: rule-id message`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem in one file.

    path: vault-relative path (or the path as given on the command line).
    line: 1-based line number; 0 when the problem belongs to the whole file.
    rule: a stable rule id such as `frontmatter-parse` or `summary-length`.
    severity: `error` (the card breaks the contract or policy fails the commit) or `warning`.
    """

    path: str
    line: int
    rule: str
    message: str
    severity: str = ERROR

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule} {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
