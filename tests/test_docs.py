"""The documents cannot go stale: the README's command table lists every command, and every module path that
ARCHITECTURE.md, CONTRIBUTING.md and the benchmarks' README name exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cairn.cli import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ("ARCHITECTURE.md", "CONTRIBUTING.md", "benchmarks/README.md")


@pytest.mark.parametrize("readme", ["README.md", "README.zh-CN.md"])
def test_the_readme_table_lists_every_command(readme: str) -> None:
    text = (ROOT / readme).read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `cairn ([a-z-]+)", text, re.M)) | set(re.findall(r" / `cairn ([a-z-]+)", text))
    assert listed == set(COMMANDS), (
        f"{readme}'s command table and COMMANDS in cairn/cli/__init__.py differ: add a row for "
        f"{sorted(set(COMMANDS) - listed)}, remove {sorted(listed - set(COMMANDS))}"
    )


@pytest.mark.parametrize("doc", DOCS)
def test_every_path_a_document_names_exists(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:cairn|tests|benchmarks|\.ci)/[\w./-]*?)`", text))
    named |= {f"cairn/{pkg}/{mod}" for pkg, mod in re.findall(r"`cairn/(\w+)/[\w.]+`, `\1/([\w.]+)`", text)}
    assert named, f"{doc} names no paths: the check would test nothing"
    missing = sorted(p for p in named if "*" not in p and "<" not in p and not (ROOT / p.rstrip("/")).exists())
    assert missing == [], f"{doc} names paths that do not exist"


def test_no_document_or_module_cites_a_design_document_the_repository_lacks() -> None:
    cited = [
        str(path.relative_to(ROOT))
        for folder in ("cairn", "benchmarks", "tests")
        for path in (ROOT / folder).rglob("*.py")
        if "DESIGN.md" in path.read_text(encoding="utf-8") and path.name != "test_docs.py"
    ]
    assert cited == []
