"""`cairn review --json` on a range that adds, renames, edits and removes cards, against a golden output: the
review's caches and batched reads (base cards read in one git call, each card's similarity profile and HEAD parse
made once) must leave what it reports byte for byte as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers.vaults import ANN, BOB, VaultRepo

GOLDEN = Path(__file__).parent / "fixtures" / "review" / "adds_renames_edits.json"
TOPICS = ("rebase", "docker", "python", "shell", "kubernetes", "cache", "signal", "timeout")


def _card(repo: VaultRepo, card_id: str, i: int, word: str) -> None:
    other = TOPICS[(i + 3) % len(TOPICS)]
    repo.write(
        card_id,
        f"Lesson {i} on {word} and {other} handling in {word} jobs",
        f"When {word} meets {other}, check the {word} settings before the {other} step runs; "
        f"it fails quietly otherwise.",
        f"The {word} step and the {other} step share state. " * 3 + f"Check {word} {i}.",
        scope=[word],
    )


def test_review_json_is_unchanged_on_adds_renames_and_edits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2026-11-01T12:00:00Z")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-11-01T12:00:00Z")
    repo = VaultRepo(tmp_path / "vault", marker=True)
    for i, word in enumerate(TOPICS * 2):
        _card(repo, f"{word}/c{i:02d}", i, word)
    base = repo.commit("Start the vault", author=ANN)
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2026-11-02T12:00:00Z")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-11-02T12:00:00Z")
    for i, word in enumerate(TOPICS * 3):
        _card(repo, f"new/{word}-{i:02d}", 100 + i % 5, word)  # near-copies of one another: similar pairs
    (repo.root / "cards" / "git").mkdir()
    repo.git("mv", "cards/rebase/c00.md", "cards/git/c00.md")
    repo.git("mv", "cards/docker/c01.md", "cards/docker/renamed.md")
    edited = repo.root / "cards" / "python" / "c02.md"
    edited.write_text(edited.read_text(encoding="utf-8").replace("fails quietly", "never fails loudly"), "utf-8")
    os.remove(repo.root / "cards" / "shell" / "c03.md")
    repo.commit("Add, move, edit and remove cards", author=BOB)
    done = repo.cairn("review", f"{base}..HEAD", "--json")
    assert done.returncode in (0, 1, 3), done.stderr
    if os.environ.get("CAIRN_WRITE_GOLDEN"):
        GOLDEN.write_text(done.stdout, encoding="utf-8")
    assert done.stdout == GOLDEN.read_text(encoding="utf-8")
