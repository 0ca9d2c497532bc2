"""`cairn import`: notes and lesson lists become cards; frontmatter kept; never overwrites; atomic; no commit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from cairn.cards.card import parse_card
from cairn.cards.importer import trim_summary
from helpers.vaults import VaultRepo

FIXTURES = Path(__file__).parent / "fixtures" / "import"


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    copy = tmp_path / "notes"
    shutil.copytree(FIXTURES / "notes", copy)
    return copy


def _start(vault_repo: VaultRepo) -> str:
    vault_repo.write("git/existing", "Existing card", "Already here.")
    return vault_repo.commit("Start")


def _card(vault_repo: VaultRepo, card_id: str) -> tuple[dict[str, Any], str]:
    text = (vault_repo.root / "cards" / f"{card_id}.md").read_text()
    card, findings = parse_card(f"cards/{card_id}.md", text.encode())
    assert card is not None, findings
    meta = yaml.safe_load(text.split("---\n")[1])
    return meta, card.body


def _import(vault_repo: VaultRepo, *args: str) -> tuple[int, dict[str, Any]]:
    done = vault_repo.invoke("import", *args, "--json")
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def test_a_folder_of_notes_becomes_cards(vault_repo: VaultRepo, notes: Path) -> None:
    head = _start(vault_repo)
    code, report = _import(vault_repo, str(notes))
    assert code == 1  # one note could not be imported, so the import is incomplete
    statuses = {Path(c["source"]).name: (c["id"], c["status"]) for c in report["cards"]}
    assert statuses == {
        "create-index.md": ("postgres/create-index", "written"),
        "lock-timeout.md": ("postgres/lock-timeout", "written"),
        "no-summary.md": (None, "invalid"),
        "shell.md": ("imported/shell", "written"),
    }
    assert (report["imported"], report["skipped"]) == (3, 1)

    meta, body = _card(vault_repo, "postgres/lock-timeout")
    assert meta["name"] == "Set lock_timeout before migrations"  # frontmatter name wins over title and heading
    assert meta["summary"] == "Migrations that wait on a lock block every query queued behind them."
    assert meta["owner"] == {"team": "platform", "reviewers": ["ann", "bob"]}  # nested values kept
    assert meta["tags"] == ["postgres", "migrations"] and meta["title"] == "ignored because name wins"
    assert str(meta["verified_at"]) == "2026-01-15"
    assert body.startswith("# A heading that is not the name")
    assert "Migrations that wait" not in body  # the paragraph became the summary whole
    assert "Set `lock_timeout`" in body

    meta, body = _card(vault_repo, "postgres/create-index")
    assert meta["name"] == "CREATE INDEX locks writes"
    assert meta["summary"] == (
        "Plain `CREATE INDEX` takes a lock that blocks writes for the whole build. "
        "On a big table that is minutes of downtime."
    )
    assert body.startswith("Plain `CREATE INDEX`")  # trimmed, so the whole paragraph stays in the body
    assert "## Details" in body and "# CREATE INDEX locks writes" not in body

    meta, body = _card(vault_repo, "imported/shell")
    assert (meta["name"], meta["summary"]) == ("shell", "Pipelines hide failures unless you set pipefail.")
    assert body == "More text about `set -o pipefail`."

    invalid = next(c for c in report["cards"] if c["status"] == "invalid")
    assert "no paragraph" in invalid["message"]
    assert vault_repo.git("rev-parse", "HEAD") == head  # nothing committed
    assert "?? cards/postgres/" in vault_repo.git("status", "--porcelain")


def test_existing_cards_are_never_overwritten(vault_repo: VaultRepo, notes: Path) -> None:
    _start(vault_repo)
    target = vault_repo.root / "cards" / "databases" / "create-index.md"
    target.parent.mkdir(parents=True)
    target.write_text("---\nname: Mine\nsummary: Mine.\n---\n")
    code, report = _import(vault_repo, str(notes / "postgres"), "--topic", "databases")
    assert code == 1
    outcome = {c["id"]: c for c in report["cards"]}
    assert outcome["databases/create-index"]["status"] == "exists"
    assert "left untouched" in outcome["databases/create-index"]["message"]
    assert outcome["databases/lock-timeout"]["status"] == "written"
    assert target.read_text() == "---\nname: Mine\nsummary: Mine.\n---\n"

    again = vault_repo.invoke("import", str(notes / "postgres" / "lock-timeout.md"), "--topic", "databases")
    assert again.returncode == 1
    assert "skipped (exists): cards/databases/lock-timeout.md already exists" in again.stderr


def test_dry_run_writes_nothing(vault_repo: VaultRepo, notes: Path) -> None:
    _start(vault_repo)
    before = sorted(p.as_posix() for p in (vault_repo.root / "cards").rglob("*"))
    done = vault_repo.invoke("import", str(notes / "postgres"), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "would write cards/imported/create-index.md" in done.stdout  # notes at the top of SRC: `imported/`
    assert "Would import 2 card(s); skipped 0." in done.stdout
    assert sorted(p.as_posix() for p in (vault_repo.root / "cards").rglob("*")) == before


def test_lessons_one_bullet_one_card(vault_repo: VaultRepo, tmp_path: Path) -> None:
    _start(vault_repo)
    src = tmp_path / "app"
    shutil.copytree(FIXTURES / "lessons", src)
    (src / "README.md").write_text("- not a lesson file\n")
    code, report = _import(vault_repo, str(src), "--lessons")
    assert code == 0, report
    ids = [c["id"] for c in report["cards"]]
    assert ids[:2] == ["git/never-force-push-main", "git/run-git-fetch-before-you-rebase"]
    assert ids[2] == "testing/tests-share-a-tmp-dir-and-flake-when-run-in-parallel"  # first clause, under its heading
    assert len(ids) == 3  # README.md is not a lesson file; the intro paragraph is not a bullet

    meta, body = _card(vault_repo, "git/never-force-push-main")
    assert meta["name"] == "Never force-push main"
    assert meta["summary"] == "Never force-push main: use `--force-with-lease` on your own branches only."
    assert meta["source"] == "CLAUDE.md:7"

    meta, body = _card(vault_repo, "git/run-git-fetch-before-you-rebase")
    assert meta["name"] == "Run `git fetch` before you rebase"
    assert meta["summary"] == (
        "Run `git fetch` before you rebase. Otherwise you rebase onto a stale base and the push is rejected."
    )
    assert "- nested detail stays in the body" in body
    assert meta["source"] == "CLAUDE.md:8"

    code, report = _import(vault_repo, str(src / "CLAUDE.md"), "--lessons", "--topic", "app")
    assert code == 0 and all(c["id"].startswith("app/") for c in report["cards"])


def test_summary_trimming() -> None:
    assert trim_summary("One. Two. Three.") == "One. Two."
    long = "word " * 100
    trimmed = trim_summary(long)
    assert len(trimmed) <= 300 and trimmed.endswith("…")
    assert trim_summary("Short   and\nsweet.") == "Short and sweet."


def test_importing_from_inside_the_cards_folder_is_refused(vault_repo: VaultRepo) -> None:
    _start(vault_repo)
    done = vault_repo.invoke("import", str(vault_repo.root / "cards" / "git"))
    assert done.returncode == 1 and done.stderr.startswith("Error: ") and "inside the vault's cards/" in done.stderr
