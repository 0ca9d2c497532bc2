"""`cairn import` as a user sees it: a CLAUDE.md read as lessons (instructions dropped, each with why), --section,
--scope, --dry-run and --json, block-style dated cards with short ids, every card linted before it is written, and
Markdown notes (one note, one card, frontmatter kept). Never overwrites without --force; atomic; no commit."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from cairn.cards.authoring import card_slug
from cairn.cards.card import parse_card
from cairn.cards.importer import plan_lessons, trim_summary
from cairn.cards.lessons import judge, lesson_name
from helpers.vaults import VaultRepo

FIXTURES = Path(__file__).parent / "fixtures" / "import"
ZH_ID = "lessons/" + card_slug("定时任务在夏令时切换那天会执行两次或者跳过")


def _git(folder: Path, *args: str, date: str | None = None) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="Ann", GIT_AUTHOR_EMAIL="ann@example.com")
    env.update(GIT_COMMITTER_NAME="Ann", GIT_COMMITTER_EMAIL="ann@example.com")
    if date:
        env.update(GIT_AUTHOR_DATE=f"{date}T12:00:00+00:00", GIT_COMMITTER_DATE=f"{date}T12:00:00+00:00")
    done = subprocess.run(["git", *args], cwd=folder, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def app(tmp_path: Path) -> Path:
    """A project repository whose CLAUDE.md was committed ten days ago, in two commits."""
    folder = tmp_path / "app"
    folder.mkdir()
    _git(folder, "init", "-q", "-b", "main")
    text = (FIXTURES / "claude" / "CLAUDE.md").read_text("utf-8")
    (folder / "CLAUDE.md").write_text(text.split("## Testing")[0], "utf-8")
    _git(folder, "add", "CLAUDE.md")
    _git(folder, "commit", "-q", "-m", "Agent notes", date=_days_ago(40))
    (folder / "CLAUDE.md").write_text(text, "utf-8")
    _git(folder, "commit", "-q", "-am", "More agent notes", date=_days_ago(10))
    return folder


def _days_between(start: str) -> set[str]:
    """The days from `start` (ISO) to today: what a command run since `start` may write as today (a test run can
    cross midnight, as CI's did)."""
    day, out = dt.date.fromisoformat(start), set()
    while day <= dt.date.today():
        out.add(day.isoformat())
        day += dt.timedelta(days=1)
    return out


def _days_ago(days: int) -> str:
    return (dt.date.today() - dt.timedelta(days=days)).isoformat()


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    copy = tmp_path / "notes"
    shutil.copytree(FIXTURES / "notes", copy)
    lock = copy / "postgres" / "lock-timeout.md"  # a recent verified_at, so verified-at-stale never fires
    lock.write_text(lock.read_text().replace("2026-01-15", _days_ago(30)))
    return copy


def _start(vault_repo: VaultRepo) -> str:
    vault_repo.write("git/existing", "Existing card", "Already here.", body="The whole lesson.")
    return vault_repo.commit("Start")


def cards_on_disk(vault: VaultRepo) -> list[str]:
    return sorted(p.relative_to(vault.root).as_posix() for p in (vault.root / "cards").rglob("*.md"))


def _card(vault_repo: VaultRepo, card_id: str) -> tuple[dict[str, Any], str]:
    text = (vault_repo.root / "cards" / f"{card_id}.md").read_text()
    card, findings = parse_card(f"cards/{card_id}.md", text.encode())
    assert card is not None, findings
    meta = yaml.safe_load(text.split("---\n")[1])
    return meta, card.body


def _import(vault_repo: VaultRepo, *args: str, cwd: Path | None = None) -> tuple[int, dict[str, Any]]:
    done = vault_repo.invoke("import", *args, "--json", "--vault", str(vault_repo.root), cwd=cwd)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


INJECTION_FINDING = (
    "cards/testing/deploys-fail-when-the-cache-is-cold.md:3: prompt-injection the text tells the agent to ignore its "
    "instructions; cards state lessons, they do not instruct the agent (prompt injection)"
)
INJECTION_REFUSED = (
    "CLAUDE.md:29: refused cards/testing/deploys-fail-when-the-cache-is-cold.md: 1 lint error (prompt-injection); "
    "fix the source and import again"
)


def test_a_claude_md_is_read_as_lessons_and_the_dry_run_shows_every_card_and_drop(
    vault_repo: VaultRepo, app: Path
) -> None:
    _start(vault_repo)
    done = vault_repo.invoke("import", "CLAUDE.md", "--dry-run", "--vault", str(vault_repo.root), cwd=app)
    assert done.returncode == 1  # one lesson would be refused
    assert done.stdout.splitlines() == [
        'CLAUDE.md:3: dropped paragraph "Notes for coding agents working in this repository.": a paragraph; lessons '
        "are read from top-level bullets",
        'CLAUDE.md:5: dropped section "Commands": the section\'s heading names instructions, not lessons '
        '(3 bullets; --section "Commands" takes it)',
        'CLAUDE.md:11: dropped section "Code style": the section\'s heading names instructions, not lessons '
        '(2 bullets; --section "Code style" takes it)',
        'CLAUDE.md:18: dropped "Never force-push main: use `--force-with-lease` on your…": an instruction or style '
        "rule with no reason or failure",
        "CLAUDE.md:19: would write cards/git/run-git-fetch-before-you-rebase.md | scope: git | "
        "name: Run `git fetch` before you rebase | summary: Run `git fetch` before you rebase. Otherwise you rebase "
        "onto a stale base and the push is rejected.",
        'CLAUDE.md:25: dropped "`pytest -q`": a command, not a lesson',
        'CLAUDE.md:26: dropped "tox -e py311": a command, not a lesson',
        "CLAUDE.md:27: would write cards/testing/tests-share-one-tmp-payments-folder-and-flake-when-run-in.md | "
        "scope: testing | name: Tests share one `/tmp/payments` folder and flake when run in parallel | "
        "summary: Tests share one `/tmp/payments` folder and flake when run in parallel; give each test its own "
        "`tmp_path`.",
        "CLAUDE.md:28: would write cards/testing/the-freezegun-fixture-leaks-into-later-tests.md | "
        "scope: testing | name: The `freezegun` fixture leaks into later tests | "
        "summary: The `freezegun` fixture leaks into later tests unless you stop it in a `finally` block, so their "
        "dates go wrong.",
        f"CLAUDE.md:33: would write cards/{ZH_ID}.md | scope: none | "
        "name: 定时任务在夏令时切换那天会执行两次或者跳过 | "
        "summary: 定时任务在夏令时切换那天会执行两次或者跳过，因为调度器按本地时间计算；调度器一律使用协调世界时。",
        'CLAUDE.md:34: dropped "使用 UTC 时间": an instruction or style rule with no reason or failure',
        "Would import 4 card(s); dropped 7 (not lessons); skipped 1.",
    ]
    assert done.stderr.splitlines() == [INJECTION_FINDING, INJECTION_REFUSED]
    assert cards_on_disk(vault_repo) == ["cards/git/existing.md"]
    assert re.fullmatch(r"lessons/zh-[0-9a-f]{6}", ZH_ID)  # a Chinese lesson's id: short, ASCII
    helped = " ".join(vault_repo.invoke("import", "--help").stdout.split())
    assert (
        'A lesson states a situation and its consequence or fix, with a reason or a failure: "X happens when Y; '
        in (helped)
    )


def test_the_import_writes_dated_block_style_cards_that_pass_lint(vault_repo: VaultRepo, app: Path) -> None:
    head = _start(vault_repo)
    done = vault_repo.invoke("import", "CLAUDE.md", "--vault", str(vault_repo.root), cwd=app)
    assert done.returncode == 1  # the injection-looking bullet was refused; the others were written
    assert done.stderr.splitlines() == [INJECTION_FINDING, INJECTION_REFUSED]
    assert done.stdout.splitlines()[-1] == (
        "Imported 4 card(s); dropped 7 (not lessons); skipped 1. Review them, then commit."
    )
    assert "CLAUDE.md:19: wrote cards/git/run-git-fetch-before-you-rebase.md | scope: git | " in done.stdout
    assert cards_on_disk(vault_repo) == [
        "cards/git/existing.md",
        "cards/git/run-git-fetch-before-you-rebase.md",
        f"cards/{ZH_ID}.md",
        "cards/testing/tests-share-one-tmp-payments-folder-and-flake-when-run-in.md",
        "cards/testing/the-freezegun-fixture-leaks-into-later-tests.md",
    ]
    committed = _days_ago(10)  # the CLAUDE.md's last commit day, not today
    assert (vault_repo.root / "cards/git/run-git-fetch-before-you-rebase.md").read_text() == (
        "---\n"
        "name: Run `git fetch` before you rebase\n"
        "summary: Run `git fetch` before you rebase. Otherwise you rebase onto a stale base and the push is rejected.\n"
        "scope:\n- git\n"
        f"verified_at: {committed}\n"
        "source: CLAUDE.md:19\n"
        "---\n\n"
        "Run `git fetch` before you rebase. Otherwise you rebase onto a stale base\n"
        "and the push is rejected.\n"
        "- nested detail stays in the body\n"
    )
    assert (vault_repo.root / f"cards/{ZH_ID}.md").read_text() == (
        "---\n"
        "name: 定时任务在夏令时切换那天会执行两次或者跳过\n"
        "summary: 定时任务在夏令时切换那天会执行两次或者跳过，因为调度器按本地时间计算；调度器一律使用协调世界时。\n"
        f"verified_at: {committed}\n"
        "source: CLAUDE.md:33\n"
        "---\n\n"
        "定时任务在夏令时切换那天会执行两次或者跳过，因为调度器按本地时间计算；调度器一律使用协调世界时。\n"
    )
    linted = vault_repo.cairn("lint")  # the installed command, as a user runs it next
    assert linted.returncode == 0, linted.stdout + linted.stderr
    assert linted.stderr.strip() == "cairn lint: 0 errors, 0 warnings in 5 file(s) from the working tree"
    assert vault_repo.git("rev-parse", "HEAD") == head  # nothing committed

    (app / "CLAUDE.md").write_text((app / "CLAUDE.md").read_text() + "\n", "utf-8")  # edited since its commit
    before = dt.date.today().isoformat()
    _code, report = _import(vault_repo, "CLAUDE.md", "--dry-run", "--force", "--section", "Git", cwd=app)
    assert [c["status"] for c in report["cards"]] == ["would-replace"]
    assert report["cards"][0]["verified_at"] in _days_between(before)  # the day it ran (a run may cross midnight)


def test_section_scope_and_json(vault_repo: VaultRepo, app: Path) -> None:
    _start(vault_repo)
    code, report = _import(vault_repo, "CLAUDE.md", "--section", "testing", "--scope", "python, ci", cwd=app)
    assert code == 1
    assert [(c["id"], c["status"], c["scope"]) for c in report["cards"]] == [
        ("python/tests-share-one-tmp-payments-folder-and-flake-when-run-in", "written", ["python", "ci"]),
        ("python/the-freezegun-fixture-leaks-into-later-tests", "written", ["python", "ci"]),
        ("python/deploys-fail-when-the-cache-is-cold", "refused", ["python", "ci"]),
    ]
    refused = report["cards"][2]
    assert refused["message"] == "1 lint error (prompt-injection); fix the source and import again"
    assert [(f["rule"], f["severity"]) for f in refused["findings"]] == [("prompt-injection", "error")]
    assert report["dropped"] == [
        {"source": "CLAUDE.md:25", "kind": "bullet", "text": "`pytest -q`", "why": "a command, not a lesson"},
        {"source": "CLAUDE.md:26", "kind": "bullet", "text": "tox -e py311", "why": "a command, not a lesson"},
    ]
    assert (report["imported"], report["skipped"], report["ok"]) == (2, 1, False)

    # --section takes a section whose heading names instructions; each bullet is still judged
    done = vault_repo.invoke("import", "CLAUDE.md", "--section", "Commands", "--vault", str(vault_repo.root), cwd=app)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        'CLAUDE.md:7: dropped "`make lint` runs ruff and mypy": a command with a note, but no reason or failure',
        'CLAUDE.md:8: dropped "`make test` runs the unit tests": a command with a note, but no reason or failure',
        'CLAUDE.md:9: dropped "Run `make e2e` before you push": an instruction or style rule with no reason or failure',
        "Imported 0 card(s); dropped 3 (not lessons); skipped 0.",
    ]
    missing = vault_repo.invoke("import", "CLAUDE.md", "--section", "Deploy", "--vault", str(vault_repo.root), cwd=app)
    assert missing.returncode == 1
    assert missing.stderr == (
        'Error: no section "Deploy" in CLAUDE.md; its sections: "Commands", "Code style", "Git", "Testing", '
        '"数据库" (nothing was written)\n'
    )


def test_an_import_into_a_folder_git_ignores_names_the_rule(vault_repo: VaultRepo, app: Path) -> None:
    """Bug fixed: `cairn import --scope python` with cards/python/ in the vault's .gitignore said "Review them, then
    commit", and `git add` refused every card it wrote, so no commit held them and no agent got them. It now names
    the cards git ignores, the rule and the file it is in, and `git add -f`; a card it did not write is not named.
    `--json` gives the note as `ignored` (null when none), where it gave none."""
    vault_repo.write_raw(".gitignore", "cards/python/\n")
    _start(vault_repo)
    vault_repo.write("python/older", "An older ignored card", "Written before.")
    done = vault_repo.invoke(
        "import", "CLAUDE.md", "--section", "testing", "--scope", "python", "--vault", str(vault_repo.root), cwd=app
    )
    [note] = [line for line in done.stderr.splitlines() if line.startswith("Note:")]
    assert note == (
        "Note: cards/python/tests-share-one-tmp-payments-folder-and-flake-when-run-in.md and 1 more card files in the "
        "vault's folder are ignored by git (the rule `cards/python/` in "
        f"{vault_repo.root.resolve() / '.gitignore'}, line 1), so no commit holds them and agents "
        "never get them: `git add -f` them and commit, or take them out of that rule."
    ), note
    # --json says it too (its text output did alone): the JSON a script reads held no word of it
    vault_repo.git("clean", "-qfx", "cards/python")
    _, report = _import(vault_repo, "CLAUDE.md", "--section", "testing", "--scope", "python", cwd=app)
    assert report["ignored"] == note.removeprefix("Note: ").removesuffix("."), report
    _, clean = _import(vault_repo, "CLAUDE.md", "--section", "Git", cwd=app)
    assert clean["imported"] and clean["ignored"] is None, clean


def test_a_reimport_is_refused_unless_force_and_a_different_card_gets_a_suffix(
    vault_repo: VaultRepo, app: Path
) -> None:
    _start(vault_repo)
    vault_repo.write("git/run-git-fetch-before-you-rebase", "Fetch first", "Another lesson.", body="Body.")
    code, report = _import(vault_repo, "CLAUDE.md", "--section", "Git", cwd=app)
    assert code == 0
    assert [(c["id"], c["status"]) for c in report["cards"]] == [("git/run-git-fetch-before-you-rebase-2", "written")]
    again = vault_repo.invoke("import", "CLAUDE.md", "--section", "Git", "--vault", str(vault_repo.root), cwd=app)
    assert again.returncode == 1
    assert again.stderr.splitlines() == [
        "CLAUDE.md:19: skipped (exists): cards/git/run-git-fetch-before-you-rebase-2.md already exists with this "
        "name; it was left untouched (--force replaces it)"
    ]
    path = vault_repo.root / "cards/git/run-git-fetch-before-you-rebase-2.md"
    path.write_text(path.read_text().replace("- nested detail stays in the body", "my edit"))
    code, report = _import(vault_repo, "CLAUDE.md", "--section", "Git", "--force", cwd=app)
    assert code == 0 and report["cards"][0]["status"] == "replaced"
    assert "- nested detail stays in the body" in path.read_text()
    assert (vault_repo.root / "cards/git/run-git-fetch-before-you-rebase.md").read_text().count("Fetch first") == 1


def test_an_import_beside_a_card_named_in_another_case_gets_a_suffix(vault_repo: VaultRepo, app: Path) -> None:
    # Bug fixed: beside `cards/git/Run-Git-Fetch-Before-You-Rebase.md` (another lesson), the import wrote
    # `run-git-fetch-before-you-rebase.md`, one file with it on macOS and Windows: lint's card-path refused it and the
    # import skipped the lesson, "fix the source, or pass --force", where a suffix gives the card a name of its own.
    _start(vault_repo)
    vault_repo.write("git/Run-Git-Fetch-Before-You-Rebase", "Fetch first", "Another lesson.", body="Body.")
    code, report = _import(vault_repo, "CLAUDE.md", "--section", "Git", cwd=app)
    assert code == 0
    assert [(c["id"], c["status"]) for c in report["cards"]] == [("git/run-git-fetch-before-you-rebase-2", "written")]


def test_a_reimport_after_a_card_was_moved_says_it_is_there(vault_repo: VaultRepo, app: Path) -> None:
    """Bug fixed: a lesson imported, then moved to another folder (or put elsewhere by --topic), was on the next
    import "refused ...: 1 lint error (name-unique); fix the source and import again", though the source needed no
    fix: the lesson was in the vault already. It is skipped as existing, with where it is."""
    _start(vault_repo)
    code, _report = _import(vault_repo, "CLAUDE.md", "--section", "Git", cwd=app)
    assert code == 0
    (vault_repo.root / "cards/vcs").mkdir()
    moved = "cards/vcs/fetch-before-rebase.md"
    (vault_repo.root / "cards/git/run-git-fetch-before-you-rebase.md").rename(vault_repo.root / moved)
    again = vault_repo.invoke("import", "CLAUDE.md", "--section", "Git", "--vault", str(vault_repo.root), cwd=app)
    assert again.returncode == 1
    assert again.stderr.splitlines()[-1] == (
        f"CLAUDE.md:19: skipped (exists): {moved} already has this name (imported before?); it was left untouched"
    )
    assert cards_on_disk(vault_repo) == ["cards/git/existing.md", moved]


def test_a_reimport_beside_a_card_git_checks_out_in_utf_16_finds_it(vault_repo: VaultRepo, app: Path) -> None:
    """Bug fixed: a card `.gitattributes` checks out in UTF-16 (`working-tree-encoding`, stored as UTF-8) was read
    as its raw bytes, not a card, so a re-import of its lesson took the id `-2` and was skipped on that id's lint
    (name-unique of a file never written, "imported before?"). It finds the card, as one checked out in UTF-8."""
    _start(vault_repo)
    code, _report = _import(vault_repo, "CLAUDE.md", "--section", "Git", cwd=app)
    assert code == 0
    vault_repo.write_raw(".gitattributes", "cards/git/run-*.md text working-tree-encoding=UTF-16\n")
    card = vault_repo.root / "cards/git/run-git-fetch-before-you-rebase.md"
    card.write_bytes(card.read_text("utf-8").encode("utf-16"))
    vault_repo.commit("Cards checked out in UTF-16")
    original = card.read_bytes()
    again = vault_repo.invoke("import", "CLAUDE.md", "--section", "Git", "--vault", str(vault_repo.root), cwd=app)
    assert again.returncode == 1
    assert again.stderr.splitlines() == [
        "CLAUDE.md:19: skipped (exists): cards/git/run-git-fetch-before-you-rebase.md already exists with this name; "
        "it was left untouched (--force replaces it)"
    ]
    assert card.read_bytes() == original
    assert cards_on_disk(vault_repo) == ["cards/git/existing.md", "cards/git/run-git-fetch-before-you-rebase.md"]


def test_a_lint_warning_refuses_a_card_unless_force(vault_repo: VaultRepo, app: Path) -> None:
    summary = "Run `git fetch` before you rebase. Otherwise you rebase onto a stale base and the push is rejected."
    vault_repo.write("git/stale-base", "Stale rebase base", summary, body="Seen twice.", scope=["git"])
    vault_repo.commit("A near-duplicate")
    code, report = _import(vault_repo, "CLAUDE.md", "--section", "Git", cwd=app)
    assert code == 1
    card = report["cards"][0]
    assert (card["status"], card["message"]) == (
        "refused",
        "1 lint warning (near-duplicate); fix the source, or pass --force to write it anyway",
    )
    assert cards_on_disk(vault_repo) == ["cards/git/stale-base.md"]
    code, report = _import(vault_repo, "CLAUDE.md", "--section", "Git", "--force", cwd=app)
    assert code == 0 and report["cards"][0]["status"] == "written"
    assert [f["rule"] for f in report["cards"][0]["findings"]] == ["near-duplicate"]


def test_a_scope_outside_the_vaults_vocabulary_is_refused_and_scope_fixes_it(vault_repo: VaultRepo, app: Path) -> None:
    vault_repo.write_raw("cairn.toml", '[lint]\nscopes = ["git", "python"]\n')
    _start(vault_repo)
    done = vault_repo.invoke("import", "CLAUDE.md", "--section", "Testing", "--vault", str(vault_repo.root), cwd=app)
    assert done.returncode == 1
    assert (
        "cards/testing/tests-share-one-tmp-payments-folder-and-flake-when-run-in.md:5: scope-vocabulary scope "
        "'testing' is not in the vault's vocabulary (cairn.toml [lint] scopes)" in done.stderr.splitlines()
    )
    assert cards_on_disk(vault_repo) == ["cards/git/existing.md"]
    code, _report = _import(vault_repo, "CLAUDE.md", "--section", "Testing", "--scope", "python", cwd=app)
    assert cards_on_disk(vault_repo) == [
        "cards/git/existing.md",
        "cards/python/tests-share-one-tmp-payments-folder-and-flake-when-run-in.md",
        "cards/python/the-freezegun-fixture-leaks-into-later-tests.md",
    ]


@pytest.mark.parametrize(
    ("bullet", "lesson", "why"),
    [
        ("`make lint`", False, "a command, not a lesson"),
        ("$ npm run build", False, "a command, not a lesson"),
        ("npm run build", False, "a command, not a lesson"),
        ("Use black and ruff", False, "an instruction or style rule with no reason or failure"),
        ("Prefer `pathlib` over `os.path`", False, "an instruction or style rule with no reason or failure"),
        ("The API lives in `src/api`", False, "a statement with no reason or failure"),
        ("Code style", False, "too short to state a situation and its consequence"),
        ("Use `pathlib`, because `os.path` breaks on Windows drive letters", True, ""),
        ("The cache goes stale after a schema change; run `make clean`", True, ""),
        ("多个进程同时写入会导致数据库被锁住", True, ""),
        ("使用 UTC 时间", False, "an instruction or style rule with no reason or failure"),
        ("Error handling: wrap all async handlers in `asyncHandler`", False, "a statement with no reason or failure"),
        ("When adding a dependency, update `requirements.lock` too or CI fails", True, ""),
        ("`uv run pytest` - runs the test suite", False, "a command with a note, but no reason or failure"),
        # Bug fixed: Japanese and Korean lessons were dropped as "no reason or failure" (only English and Chinese
        # words were read), so a Japanese or Korean team's CLAUDE.md gave almost no card.
        ("`npm ci` を使うこと。`npm install` だと package-lock.json が書き換わるため、CI が失敗する。", True, ""),
        ("マイグレーションは `--fake` なしで実行する。さもないとスキーマがずれる。", True, ""),
        ("`git push --force` 대신 `--force-with-lease`를 쓰세요. 커밋이 사라질 수 있기 때문입니다.", True, ""),
        ("빌드 전에 `.dockerignore`에 node_modules를 넣으세요. 그렇지 않으면 빌드가 느려집니다.", True, ""),
        ("エラーハンドリングは共通の関数で行う", False, "a statement with no reason or failure"),
        ("커밋 메시지는 한국어로 작성하세요", False, "a statement with no reason or failure"),
    ],
)
def test_the_lesson_rule(bullet: str, lesson: bool, why: str) -> None:
    verdict = judge(bullet)
    assert (verdict.lesson, verdict.why) == (lesson, why)


def test_a_chinese_lesson_is_kept_where_its_english_twin_is(vault_repo: VaultRepo) -> None:
    """Bug fixed: the Chinese reason words lacked silently (悄悄), no longer (不再), not reproducible (不可复现) and
    won't (不会), and an English word glued to Chinese ("会被OOMKilled") met no word boundary; English lacked "not
    reproducible" and "OOMKilled". So a team's Chinese lessons were dropped where the same lessons in English were
    kept, or both were dropped."""
    _start(vault_repo)
    kept = {}
    for language in ("en", "zh"):
        src = FIXTURES / "twins" / language / "AGENTS.md"
        done = vault_repo.invoke("import", str(src), "--dry-run", "--json")
        assert done.returncode == 0, done.stdout + done.stderr
        report = json.loads(done.stdout)
        kept[language] = [int(c["source"].rsplit(":", 1)[1]) for c in report["cards"]]
        assert [d["text"][:2] for d in report["dropped"]] == [{"en": "Fo", "zh": "使用"}[language]]
    assert kept["zh"] == kept["en"] == list(range(5, 12))


@pytest.mark.parametrize(
    ("bullet", "name"),
    [
        ("IMPORTANT: the `db/migrations` folder is generated; edits are lost, because `make migrate` overwrites it",
         "The `db/migrations` folder is generated"),
        ("The `freezegun` fixture leaks into later tests unless you stop it in a `finally` block, so dates go wrong.",
         "The `freezegun` fixture leaks into later tests"),
        ("注意：定时任务在夏令时切换那天会执行两次或者跳过，因为调度器按本地时间计算；调度器一律使用协调世界时。",
         "定时任务在夏令时切换那天会执行两次或者跳过"),
        ("Short and failing.", "Short and failing"),
        # Bug fixed: a sentence was cut inside a code span (`SELECT` alone, id database/select), or a clause was
        ("`SELECT ... FOR UPDATE` deadlocks; sort the ids first.", "`SELECT ... FOR UPDATE` deadlocks; sort the ids first"),
        ("Running `set -e; make deploy` on the old runners fails silently because they run sh, not bash.",
         "Running `set -e; make deploy` on the old runners fails silently"),
        # Bug fixed: a label's colon (`Rust:`) kept the clause rule from cutting, so the name ran on to 80 columns
        ("Rust: `cargo test` runs doc tests serially and they time out on CI; run `cargo test --lib` in the fast job.",
         "Rust: `cargo test` runs doc tests serially and they time out on CI"),
        # Bug fixed: a quoted error message was cut at its colon (`Xcode 15 archives fail with "Sandbox`)
        ('Xcode 15 archives fail with "Sandbox: rsync denied" because `ENABLE_USER_SCRIPT_SANDBOXING` is on; turn '
         "it off for the Pods target.", 'Xcode 15 archives fail with "Sandbox: rsync denied"'),
        ("用 JDK 11 构建会报“Unsupported class file major version: 61”；换成 JDK 17。",
         "用 JDK 11 构建会报“Unsupported class file major version: 61”"),
        # Bug fixed: a Korean sentence was not ended by `. ` before a Hangul word, and Hangul counted one column,
        # so a Korean lesson was named by its whole text cut at 80 characters (about 150 columns)
        ("`git push --force` 대신 `--force-with-lease`를 쓰세요. 다른 사람의 커밋이 사라질 수 있기 때문입니다.",
         "`git push --force` 대신 `--force-with-lease`를 쓰세요"),
        ("배포 스크립트가 운영 서버의 환경 변수를 덮어써서 장애가 났고 롤백에도 한참 걸렸으며 모니터링 알림도 오지 않았다",
         "배포 스크립트가 운영 서버의 환경 변수를 덮어써서 장애가 났고 롤백에도 한참…"),
    ],
)  # fmt: skip
def test_a_lesson_is_named_by_its_situation(bullet: str, name: str) -> None:
    assert lesson_name(bullet) == name


def test_a_lesson_opening_with_emoji_or_a_link_is_named_by_its_words(vault_repo: VaultRepo) -> None:
    """Bug fixed: `🚨 **pnpm hoisting**: ...` was named by its whole first sentence, emoji and all, not by its bold
    lead, `⚠️ Turbo ...` kept its emoji, and a link was named by its markup (`[Renovate](https://...)`)."""
    _start(vault_repo)
    done = vault_repo.invoke("import", str(FIXTURES / "monorepo" / "CLAUDE.md"), "--dry-run", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    cards = json.loads(done.stdout)["cards"]
    assert [(c["name"], c["id"].split("/")[-1]) for c in cards] == [
        ("pnpm hoisting", "pnpm-hoisting"),
        (
            "Turbo cache hits are wrong after you change an env var that is not listed in…",
            "turbo-cache-hits-are-wrong-after-you-change-an-env-var-that",
        ),
        (
            "The `web` Storybook build times out on CI runners with 2 GB RAM",
            "the-web-storybook-build-times-out-on-ci-runners-with-2-gb",
        ),
        ("Renovate bumps the lockfile only", "renovate-bumps-the-lockfile-only"),
    ]
    # The summary keeps the text as written.
    assert cards[0]["summary"].startswith("🚨 pnpm hoisting: packages that import undeclared deps")


def test_short_ids() -> None:
    assert re.fullmatch(r"zh-[0-9a-f]{6}", card_slug("定时任务在夏令时切换那天会执行两次"))
    assert card_slug("定时任务") != card_slug("定时任务会失败")
    assert re.fullmatch(r"ja-[0-9a-f]{6}", card_slug("テストは並列で失敗する"))
    assert re.fullmatch(r"ko-[0-9a-f]{6}", card_slug("테스트가 실패한다"))
    assert re.fullmatch(r"git-rebase-[0-9a-f]{6}", card_slug("git rebase 会丢失提交"))
    assert card_slug("Café crème breaks déjà vu") == "cafe-creme-breaks-deja-vu"
    long = card_slug("Tests share one folder and flake when they are run in parallel on the CI machines")
    assert long == "tests-share-one-folder-and-flake-when-they-are-run-in"
    assert len(long) <= 60
    assert card_slug("!!!") == "card"


def test_a_folder_of_notes_becomes_cards(vault_repo: VaultRepo, notes: Path) -> None:
    head = _start(vault_repo)
    before = dt.date.today().isoformat()
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

    text = (vault_repo.root / "cards/postgres/lock-timeout.md").read_text()
    assert text.startswith(
        "---\nname: Set lock_timeout before migrations\n"
        "summary: Migrations that wait on a lock block every query queued behind them.\n"
        f"verified_at: {_days_ago(30)}\n"  # the note's own date wins
        "title: ignored because name wins\n"
        "tags:\n- postgres\n- migrations\n"
        "owner:\n  team: platform\n  reviewers:\n  - ann\n  - bob\n"  # nested values kept, block style
        "---\n"
    )
    meta, body = _card(vault_repo, "postgres/lock-timeout")
    assert body.startswith("# A heading that is not the name")
    assert "Migrations that wait" not in body  # the paragraph became the summary whole
    assert "Set `lock_timeout`" in body

    meta, body = _card(vault_repo, "postgres/create-index")
    assert meta["name"] == "CREATE INDEX locks writes"
    assert meta["summary"] == (
        "Plain `CREATE INDEX` takes a lock that blocks writes for the whole build. "
        "On a big table that is minutes of downtime."
    )
    assert str(meta["verified_at"]) in _days_between(before)  # the notes folder is not a git repository: the day it ran
    assert body.startswith("Plain `CREATE INDEX`")  # trimmed, so the whole paragraph stays in the body
    assert "## Details" in body and "# CREATE INDEX locks writes" not in body

    meta, body = _card(vault_repo, "imported/shell")
    assert (meta["name"], meta["summary"]) == ("shell", "Pipelines hide failures unless you set pipefail.")
    assert body == "More text about `set -o pipefail`."

    invalid = next(c for c in report["cards"] if c["status"] == "invalid")
    assert "no paragraph" in invalid["message"]
    assert vault_repo.git("rev-parse", "HEAD") == head  # nothing committed
    assert "?? cards/postgres/" in vault_repo.git("status", "--porcelain")
    assert vault_repo.cairn("lint").returncode == 0


def test_notes_take_scope_and_topic(vault_repo: VaultRepo, notes: Path) -> None:
    _start(vault_repo)
    code, report = _import(vault_repo, str(notes / "postgres"), "--scope", "postgres,migrations")
    assert code == 0, report
    assert [(c["id"], c["scope"]) for c in report["cards"]] == [
        ("postgres/create-index", ["postgres", "migrations"]),
        ("postgres/lock-timeout", ["postgres", "migrations"]),
    ]
    code, report = _import(vault_repo, str(notes / "shell.md"), "--topic", "ops/shell")
    assert [c["id"] for c in report["cards"]] == ["ops/shell/shell"]


def test_dry_run_writes_nothing(vault_repo: VaultRepo, notes: Path) -> None:
    _start(vault_repo)
    before = sorted(p.as_posix() for p in (vault_repo.root / "cards").rglob("*"))
    done = vault_repo.invoke("import", str(notes / "postgres"), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert f"{notes}/postgres/create-index.md: would write cards/imported/create-index.md | scope: none | " in (
        done.stdout
    )  # notes at the top of SRC: `imported/`
    assert done.stdout.splitlines()[-1] == "Would import 2 card(s); dropped 0 (not lessons); skipped 0."
    assert sorted(p.as_posix() for p in (vault_repo.root / "cards").rglob("*")) == before


def test_a_note_with_toml_frontmatter_is_skipped_as_lint_refuses_it(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: a note opened by TOML frontmatter (Hugo's `+++`) was read as Markdown with no frontmatter: it was
    written as a card named after its file whose summary began `+++ title = "..." +++`, which lint passed and agents
    were served. It is skipped now with lint's own words for such a card."""
    _start(vault_repo)
    note = tmp_path / "rsync.md"
    note.write_text('+++\ntitle = "Rsync trailing slash"\n+++\n\nA trailing slash copies the contents, because...\n')
    code, report = _import(vault_repo, str(note))
    assert code == 1, report
    assert [(c["status"], c["message"]) for c in report["cards"]] == [
        ("invalid", "TOML (+++) frontmatter is not supported; use YAML between `---` lines")
    ]
    assert cards_on_disk(vault_repo) == ["cards/git/existing.md"]


def test_a_notes_last_key_ending_in_a_no_break_space_keeps_its_meaning(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: the card writer stripped its frontmatter's text, and with it a no-break space (pasted from a web
    page) that ended the last value: a note's `source: "2026\u00a0"` was written `source: 2026`, and the note was
    skipped as "'source' must be text, not a number"."""
    _start(vault_repo)
    note = tmp_path / "stash.md"
    note.write_text(
        '---\ntitle: Stash leaves untracked files\nsource: "2026\u00a0"\n---\n\n'
        "git stash keeps tracked changes only, because untracked files are not in the index.\n",
        encoding="utf-8",
    )
    code, report = _import(vault_repo, str(note))
    assert code == 0, report
    written = (vault_repo.root / f"{report['cards'][0]['path']}").read_text("utf-8")
    assert "source: 2026\u00a0\n---\n" in written, written  # YAML reads a no-break space as text, not a blank


def test_lessons_reads_any_file_and_a_folder_only_its_lesson_files(vault_repo: VaultRepo, tmp_path: Path) -> None:
    _start(vault_repo)
    src = tmp_path / "docs"
    src.mkdir()
    (src / "notes.md").write_text("# Notes\n\n- Builds fail when the lockfile is stale, so commit it.\n")
    (src / "README.md").write_text("A readme paragraph.\n")
    code, report = _import(vault_repo, str(src / "notes.md"), "--lessons")
    assert code == 0 and [c["id"] for c in report["cards"]] == [
        "lessons/builds-fail-when-the-lockfile-is-stale-so-commit-it"
    ]
    done = vault_repo.invoke("import", str(src), "--lessons", "--dry-run", "--vault", str(vault_repo.root))
    assert (done.returncode, done.stdout) == (1, "")  # neither file is a CLAUDE.md / AGENTS.md
    assert done.stderr.strip() == (
        f"Error: {src} holds no CLAUDE.md, AGENTS.md or GEMINI.md outside hidden folders; give a Markdown file or a "
        "folder of them (nothing was written)"
    )


def test_a_folder_with_no_markdown_file_is_an_error_not_an_import_of_nothing(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed: `cairn import DIR` of a folder holding no Markdown file (the wrong folder, or notes in a hidden
    one) said "Imported 0 card(s); dropped 0 (not lessons); skipped 0." and exited 0, as if it had read something.
    It is now one error line naming the folder, exit 1, and nothing is written."""
    _start(vault_repo)
    src = tmp_path / "notes"
    (src / ".hidden").mkdir(parents=True)
    (src / ".hidden" / "lesson.md").write_text("# Builds\n\nBuilds fail when the lockfile is stale, so commit it.\n")
    (src / "todo.txt").write_text("Builds fail when the lockfile is stale.\n")
    done = vault_repo.invoke("import", str(src), "--vault", str(vault_repo.root))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.strip() == (
        f"Error: {src} holds no Markdown file (.md, .markdown) outside hidden folders; give a Markdown file or a "
        "folder of them (nothing was written)"
    )
    assert cards_on_disk(vault_repo) == ["cards/git/existing.md"]


def test_a_cursorrules_file_is_read_as_lessons_not_as_one_note(vault_repo: VaultRepo, tmp_path: Path) -> None:
    _start(vault_repo)
    rules = tmp_path / "app" / ".cursorrules"
    rules.parent.mkdir()
    rules.write_text(
        "You are an expert in TypeScript and React.\n\n"
        "- Always use functional components.\n"
        "- The build fails when a barrel file re-exports a type with `export *`, because isolatedModules is on.\n"
    )
    code, report = _import(vault_repo, str(rules), "--dry-run")
    assert [c["name"] for c in report["cards"]] == [
        "The build fails when a barrel file re-exports a type with `export *`"
    ]
    assert [d["text"] for d in report["dropped"]] == [
        "You are an expert in TypeScript and React.",
        "Always use functional components.",
    ]


def test_a_folder_reads_its_agents_md_as_lessons_and_other_files_as_notes(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    _start(vault_repo)
    src = tmp_path / "repo"
    src.mkdir()
    (src / "AGENTS.md").write_text(
        "## Deploys\n\n- Deploys hang when the registry is down, so pin the image digest.\n- Use tabs\n"
    )
    (src / "vacuum.md").write_text("# Vacuum\n\nAutovacuum stalls on long transactions, so keep them short.\n")
    code, report = _import(vault_repo, str(src))
    assert code == 0, report
    assert [(c["id"], c["name"]) for c in report["cards"]] == [
        ("deploys/deploys-hang-when-the-registry-is-down", "Deploys hang when the registry is down"),
        ("imported/vacuum", "Vacuum"),
    ]
    # Bug fixed: a note of one paragraph, taken for the summary, left the card no body, so lint's body-present
    # refused it unless --force; the paragraph is its body too, as a lesson bullet's text is.
    note = (vault_repo.root / "cards/imported/vacuum.md").read_text()
    assert note.endswith("---\n\nAutovacuum stalls on long transactions, so keep them short.\n")
    assert [(Path(d["source"]).name, d["text"]) for d in report["dropped"]] == [("AGENTS.md:4", "Use tabs")]
    (src / "svc").mkdir()
    (src / "svc" / "CLAUDE.md").write_text("- The worker leaks memory when a job is retried.\n")
    code, report = _import(vault_repo, str(src), "--lessons", "--force", "--dry-run")
    assert [(c["id"], c["status"]) for c in report["cards"]] == [
        ("deploys/deploys-hang-when-the-registry-is-down", "would-replace"),  # --force replaces a re-import
        ("lessons/the-worker-leaks-memory-when-a-job-is-retried", "would-write"),
    ]
    meta = {c["id"]: c for c in report["cards"]}
    assert meta["lessons/the-worker-leaks-memory-when-a-job-is-retried"]["source"].endswith("svc/CLAUDE.md:1")
    code, report = _import(vault_repo, str(src), "--lessons", "--force")
    text = (vault_repo.root / "cards/lessons/the-worker-leaks-memory-when-a-job-is-retried.md").read_text()
    assert "source: svc/CLAUDE.md:1\n" in text  # the file's path inside SRC


def test_a_note_named_by_its_title_keeps_its_one_paragraph_as_its_body(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: a note of a heading and one paragraph, named by its frontmatter's `title:`, kept the heading and
    gave its paragraph to the summary alone, so the card's body was only the heading and body-present refused it
    ("fix the source, or pass --force"), with nothing wrong in the source. The paragraph is its body too."""
    _start(vault_repo)
    note = tmp_path / "pool.md"
    note.write_text(
        "---\ntitle: 连接池耗尽\n---\n\n# 连接池耗尽\n\n高峰期连接池被占满，因为每个请求都新开连接。改用 pgbouncer。\n"
    )
    code, report = _import(vault_repo, str(note))
    assert code == 0, report
    assert [(c["id"], c["status"]) for c in report["cards"]] == [("imported/pool", "written")]
    text = (vault_repo.root / "cards/imported/pool.md").read_text()
    assert text.endswith("---\n\n# 连接池耗尽\n\n高峰期连接池被占满，因为每个请求都新开连接。改用 pgbouncer。\n"), text


def test_an_empty_bullet_never_takes_the_next_bullets_text() -> None:
    read = plan_lessons("N.md", "N.md", "-\n- The worker leaks memory when a job is retried.\n", dt.date(2026, 1, 2))
    assert [(d.source, d.why) for d in read.dropped] == [("N.md:1", "the bullet has no text")]
    assert [p.source for p in read.planned] == ["N.md:2"]


def test_summary_trimming() -> None:
    assert trim_summary("One. Two. Three.") == "One. Two."
    long = "word " * 100
    trimmed = trim_summary(long)
    assert len(trimmed) <= 300 and trimmed.endswith("…")
    assert trim_summary("Short   and\nsweet.") == "Short and sweet."
    assert trim_summary("第一句。第二句。第三句。") == "第一句。第二句。"
    assert trim_summary("换行\n不加空格") == "换行不加空格"
    # a code span ends no sentence: the second sentence was lost to `DELETE ... WHERE` counted as two
    assert trim_summary("A `DELETE ... WHERE` locks the table, so it times out. Add the index. Then delete.") == (
        "A `DELETE ... WHERE` locks the table, so it times out. Add the index."
    )


def test_importing_from_inside_the_cards_folder_is_refused(vault_repo: VaultRepo) -> None:
    _start(vault_repo)
    done = vault_repo.invoke("import", str(vault_repo.root / "cards" / "git"))
    assert done.returncode == 1 and done.stderr.startswith("Error: ") and "inside the vault's cards/" in done.stderr


def test_a_symlink_at_the_cards_path_is_never_replaced(vault_repo: VaultRepo, app: Path, tmp_path: Path) -> None:
    _start(vault_repo)
    outside = tmp_path / "outside.md"
    outside.write_text("---\nname: Run `git fetch` before you rebase\nsummary: Mine.\n---\n\nMine.\n")
    (vault_repo.root / "cards" / "git" / "run-git-fetch-before-you-rebase.md").symlink_to(outside)
    code, report = _import(vault_repo, "CLAUDE.md", "--section", "Git", "--force", "--dry-run", cwd=app)
    assert [(c["id"], c["status"]) for c in report["cards"]] == [
        ("git/run-git-fetch-before-you-rebase-2", "would-write")
    ]
    code, report = _import(vault_repo, "CLAUDE.md", "--section", "Git", "--force", cwd=app)
    assert [(c["id"], c["status"]) for c in report["cards"]] == [("git/run-git-fetch-before-you-rebase-2", "written")]
    assert outside.read_text().endswith("Mine.\n")
    assert (vault_repo.root / "cards" / "git" / "run-git-fetch-before-you-rebase.md").is_symlink()


def test_a_notes_folder_never_reads_a_symlink_to_a_file_outside_it(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """A notes folder (a cloned repository) holding `creds.md -> ../secret.md`: the file outside it is not read
    into the vault, where it would be committed and shared; the import names it and says how to import it."""
    _start(vault_repo)
    secret = tmp_path / "secret.md"
    secret.write_text("---\nname: Deploy token\nsummary: The token is hunter2-secret.\n---\n\nhunter2-secret\n")
    folder = tmp_path / "notes"
    folder.mkdir()
    shutil.copy(FIXTURES / "notes" / "shell.md", folder / "shell.md")
    (folder / "creds.md").symlink_to(secret)
    code, report = _import(vault_repo, str(folder))
    assert code == 1  # the import is incomplete
    statuses = {Path(c["source"]).name: (c["id"], c["status"], c["message"]) for c in report["cards"]}
    assert statuses == {
        "creds.md": (None, "invalid", f"a symlink to a file outside {folder}; not read (import that file by name)"),
        "shell.md": ("imported/shell", "written", ""),
    }
    assert not any("hunter2" in (vault_repo.root / card).read_text() for card in cards_on_disk(vault_repo))


def test_two_notes_of_one_id_in_one_import_each_get_a_card(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """`shell.md` and `shell.markdown` of one notes folder both want `imported/shell`: the second takes
    `imported/shell-2`, and neither card is written over the other."""
    _start(vault_repo)
    folder = tmp_path / "notes"
    folder.mkdir()
    for file, name in (("shell.md", "Set pipefail in scripts"), ("shell.markdown", "Quote every shell variable")):
        (folder / file).write_text(f"---\nname: {name}\nsummary: {name}, or the script fails.\n---\n\n{name}.\n")
    code, report = _import(vault_repo, str(folder))
    assert code == 0
    written = {Path(c["source"]).name: (c["id"], c["status"]) for c in report["cards"]}
    assert written == {"shell.markdown": ("imported/shell", "written"), "shell.md": ("imported/shell-2", "written")}
    assert _card(vault_repo, "imported/shell")[0]["name"] == "Quote every shell variable"
    assert _card(vault_repo, "imported/shell-2")[0]["name"] == "Set pipefail in scripts"


def test_a_long_import_reports_its_progress(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """`cairn import` of a folder of many notes ran for seconds in silence; it now reports the files read, then the
    cards made (`import_notes(progress=)`, a bar on a terminal), ending at its total."""
    from cairn.cards.importer import import_notes
    from cairn.hot.vault import find_vault

    vault_repo.write_raw("cairn.toml", "# defaults\n")
    vault_repo.commit("A vault")
    notes = tmp_path / "notes"
    notes.mkdir()
    for n in range(60):
        (notes / f"n{n}.md").write_text(f"# Lesson {n} on service{n}\n\nSet timeout{n} on service{n}, or it hangs.\n")
    heard: list[tuple[int, int]] = []
    report = import_notes(
        find_vault(vault_repo.root), notes, dry_run=True, topic="ops", progress=lambda d, t: heard.append((d, t))
    )
    assert len(report.outcomes) == 60
    assert heard[0] == (0, 120) and heard[-1] == (120, 120) and len(heard) >= 4
    assert [d for d, _ in heard] == sorted(d for d, _ in heard) and {t for _, t in heard} == {120}
    piped = vault_repo.cairn("import", str(notes), "--dry-run", "--topic", "ops")  # no terminal: no bar
    assert "import  [" not in piped.stderr and "Would import" in piped.stdout, piped


def test_a_signed_notes_commit_dates_the_cards_under_log_show_signature(
    vault_repo: VaultRepo, app: Path, tmp_path: Path
) -> None:
    """With `log.showSignature = true`, git printed its verdict on the notes' signed commit before the day Cairn read
    from it, so imported cards were dated today instead of the day the notes were last committed."""
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen is not installed; cannot make a signed commit")
    key = tmp_path / "signing-key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ann", "-f", str(key)], check=True)
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f"ann@example.com {key.with_suffix('.pub').read_text().strip()}\n")
    for name, value in (("gpg.format", "ssh"), ("user.signingkey", str(key)), ("log.showSignature", "true")):
        _git(app, "config", name, value)
    _git(app, "config", "gpg.ssh.allowedSignersFile", str(allowed))
    _git(app, "commit", "-q", "--amend", "--no-edit", "-S", date=_days_ago(10))
    assert "signature" in _git(app, "log", "-1")  # git does print its verdict here
    _code, report = _import(vault_repo, "CLAUDE.md", "--dry-run", "--section", "Git", cwd=app)
    assert [c["verified_at"] for c in report["cards"]] == [_days_ago(10)]


def test_notes_committed_with_a_date_ahead_are_dated_today(vault_repo: VaultRepo, app: Path) -> None:
    """Bug fixed: notes last committed on a day still to come (a wrong clock) dated their cards that day, so lint's
    verified-at-future refused every card and the import wrote none, saying "fix the source and import again" of a
    commit's date. A card is now dated today then."""
    _start(vault_repo)
    before = dt.date.today().isoformat()
    _git(app, "commit", "-q", "--amend", "--no-edit", date=(dt.date.today() + dt.timedelta(days=400)).isoformat())
    code, report = _import(vault_repo, "CLAUDE.md", "--section", "Git", cwd=app)
    assert code == 0, report
    assert [(c["status"], c["verified_at"] in _days_between(before)) for c in report["cards"]] == [("written", True)]


def _staging_bullets(tmp_path: Path, second_ends: str) -> Path:
    """A CLAUDE.md of two like deploy lessons, the second's summary ending `second_ends`."""
    src = tmp_path / "CLAUDE.md"
    src.write_text(
        "# App\n\n## Deploy\n\n"
        "- **Staging deploy and the signing key**: the staging deploy fails because the signing key rotated "
        "overnight; fetch the new key from vault first.\n"
        f"- **Staging deploys with the old key**: the staging deploy fails because the signing key {second_ends}\n"
    )
    return src


def test_a_card_is_not_refused_for_resembling_a_bullet_lint_refuses(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Two like bullets, one holding an AWS key: that one is refused (an error) and never written, so the other,
    whose only finding was resembling it, is written without --force. Before, both were refused."""
    _start(vault_repo)
    src = _staging_bullets(tmp_path, "AKIA2Q5XJ7RPLMN4ZK8W rotated overnight; fetch the new key from vault first.")
    code, report = _import(vault_repo, str(src))
    assert code == 1
    assert [(c["id"], c["status"], [f["rule"] for f in c["findings"]]) for c in report["cards"]] == [
        ("deploy/staging-deploy-and-the-signing-key", "written", []),
        ("deploy/staging-deploys-with-the-old-key", "refused", ["near-duplicate", "secret", "secret"]),
    ]
    assert cards_on_disk(vault_repo) == ["cards/deploy/staging-deploy-and-the-signing-key.md", "cards/git/existing.md"]


def test_two_near_duplicate_bullets_are_both_refused_without_force(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Each resembles the other and neither has an error: leaving one out must not let the other pass."""
    _start(vault_repo)
    src = _staging_bullets(tmp_path, "rotated overnight; fetch the new key from the vault first.")
    code, report = _import(vault_repo, str(src))
    assert code == 1
    assert [(c["status"], [f["rule"] for f in c["findings"]]) for c in report["cards"]] == [
        ("refused", ["near-duplicate"]),
        ("refused", ["near-duplicate"]),
    ]
    assert cards_on_disk(vault_repo) == ["cards/git/existing.md"]


def test_a_lesson_led_by_punctuation_alone_is_named_by_its_words(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """A bold lead of punctuation (`**---**`) or a Chinese bullet opening with `。。。` gave an empty name: the first
    was skipped as "'name' is empty", and every other such bullet as a duplicate of it ("has the same name")."""
    _start(vault_repo)
    src = tmp_path / "CLAUDE.md"
    src.write_text(
        "# App\n\n## Build\n\n"
        "- **---**: the build fails because the cache is stale; clear it before each run.\n"
        "- **...**: the deploy fails because the token expired; rotate the token weekly.\n"
        "- 。。。因为缓存过期，构建会失败；先清理缓存。\n",
        "utf-8",
    )
    code, report = _import(vault_repo, str(src))
    assert code == 0, report
    assert [(c["status"], c["name"], c["summary"]) for c in report["cards"]] == [
        (
            "written",
            "---: the build fails because the cache is stale",
            "---: the build fails because the cache is stale; clear it before each run.",
        ),
        (
            "written",
            "...: the deploy fails because the token expired",
            "...: the deploy fails because the token expired; rotate the token weekly.",
        ),
        ("written", "因为缓存过期，构建会失败；先清理缓存", "。。。因为缓存过期，构建会失败；先清理缓存。"),
    ]
    assert trim_summary("。。。" + "缓存过期会导致构建失败。" * 30).startswith("缓存过期会导致构建失败。")


def test_dating_a_lesson_file_runs_nothing_its_repository_configures(
    vault_repo: VaultRepo, app: Path, tmp_path: Path
) -> None:
    """A project downloaded with its `.git` is anyone's: `git status`, which dated the file, ran the repository's
    `core.fsmonitor` and the clean filter its `.gitattributes` names, so `cairn import CLAUDE.md --dry-run` ran a
    command of the project's choosing. The file is still dated by its last commit, and nothing runs."""
    _start(vault_repo)
    ran = tmp_path / "ran"
    (app / ".gitattributes").write_text("CLAUDE.md filter=tidy\n", "utf-8")
    _git(app, "add", ".gitattributes")
    _git(app, "commit", "-q", "-m", "Attributes", date=_days_ago(10))
    _git(app, "config", "core.fsmonitor", f"touch {ran}/fsmonitor; false")
    _git(app, "config", "filter.tidy.clean", f"sh -c 'touch {ran}/filter; cat'")
    ran.mkdir()
    os.utime(app / "CLAUDE.md")  # as an unpacked archive: the index's file times no longer match
    code, report = _import(vault_repo, "CLAUDE.md", "--dry-run", "--section", "Git", cwd=app)
    assert code == 0
    assert list(ran.iterdir()) == []
    assert [c["verified_at"] for c in report["cards"]] == [_days_ago(10)]


def test_a_scope_that_is_not_utf8_is_one_error(vault_repo: VaultRepo, app: Path) -> None:
    """`--scope café` from a Latin-1 terminal: every card was skipped for "the frontmatter is not valid YAML"."""
    _start(vault_repo)
    scope = os.fsdecode(b"caf\xe9")
    done = vault_repo.cairn("import", "CLAUDE.md", "--scope", scope, "--vault", str(vault_repo.root), cwd=app)
    assert done.returncode == 1
    assert done.stderr == "Error: --scope is not UTF-8 text (a terminal set to another encoding?); give it in UTF-8\n"
    assert cards_on_disk(vault_repo) == ["cards/git/existing.md"]


def test_a_heading_inside_a_quote_or_a_bullet_opens_no_section(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """`> ### Note` under `## Gotchas` made "Note" the section: the lesson after it was scoped `note`; and under
    `## Commands` a quoted heading ended that section, so its bullets were read as lessons."""
    _start(vault_repo)
    src = tmp_path / "CLAUDE.md"
    src.write_text(
        "# App\n\n## Gotchas\n\n> ### Note\n> These are from 2024.\n\n"
        "- The staging deploy fails because the signing key rotated; fetch the new key first.\n\n"
        "## Commands\n\n> ## Deprecated\n\n"
        "- Run the linter before you push, otherwise CI fails on formatting.\n",
        "utf-8",
    )
    code, report = _import(vault_repo, str(src), "--dry-run")
    assert code == 0
    assert [(c["id"], c["scope"]) for c in report["cards"]] == [
        ("lessons/the-staging-deploy-fails-because-the-signing-key-rotated", [])
    ]
    assert [(d["kind"], d["text"]) for d in report["dropped"]] == [("section", "Commands")]


def test_a_heading_that_only_says_lessons_gives_no_scope(vault_repo: VaultRepo) -> None:
    """Bug fixed: `## Gotchas` scoped its cards `gotchas` (`## Known issues`: `known-issues`), a tag no agent
    declares, which a vault's scope vocabulary refuses, while `## 踩坑` gave none. A heading's lesson words are left
    out of its scope, as Chinese headings' are: `## Git gotchas` scopes `git`."""
    vault_repo.write_raw("cairn.toml", '[lint]\nscopes = ["git"]\n')
    _start(vault_repo)
    code, report = _import(vault_repo, str(FIXTURES / "headings" / "CLAUDE.md"))
    assert code == 0, report
    assert [(c["id"], c["status"], c["scope"]) for c in report["cards"]] == [
        ("lessons/deploys-fail-because-the-cache-is-stale-so-clear-it-first", "written", []),
        ("lessons/the-staging-queue-drops-messages-over-256-kib", "written", []),
        ("git/a-shallow-clone-breaks-git-describe", "written", ["git"]),
    ]


def test_a_task_lists_box_is_not_part_of_the_lesson(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """`- [ ] The deploy fails...` became the card "[ ] The deploy fails..." (its summary too, which agents get),
    and `- [x] **Name**: ...` lost its bold name."""
    _start(vault_repo)
    src = tmp_path / "AGENTS.md"
    src.write_text(
        "# App\n\n## Gotchas\n\n"
        "- [ ] The staging deploy fails because the signing key rotated; fetch the new key first.\n"
        "- [x] **Shared tmp folders flake**: tests flake because workers share one tmp dir; use tmp_path.\n",
        "utf-8",
    )
    code, report = _import(vault_repo, str(src), "--dry-run")
    assert code == 0
    assert [(c["id"], c["name"], c["summary"]) for c in report["cards"]] == [
        (
            "lessons/the-staging-deploy-fails-because-the-signing-key-rotated",
            "The staging deploy fails because the signing key rotated",
            "The staging deploy fails because the signing key rotated; fetch the new key first.",
        ),
        (
            "lessons/shared-tmp-folders-flake",
            "Shared tmp folders flake",
            "Shared tmp folders flake: tests flake because workers share one tmp dir; use tmp_path.",
        ),
    ]


@pytest.mark.parametrize("topic", ["../../x", "/etc", "~/x", "git/../../x"])
def test_a_topic_outside_cards_is_a_usage_error(vault_repo: VaultRepo, app: Path, topic: str) -> None:
    """`--topic ../../x` was slugged part by part into cards/card/card/x/: never outside the vault, but nowhere the
    user asked. A topic names a folder under cards/; one that climbs out or is absolute is refused, nothing made."""
    _start(vault_repo)
    done = vault_repo.cairn("import", "CLAUDE.md", "--topic", topic, "--vault", str(vault_repo.root), cwd=app)
    assert (done.returncode, done.stdout) == (2, "")
    assert f"Error: Invalid value for '--topic': {topic!r} is not a folder under cards/" in done.stderr
    assert vault_repo.git("status", "--porcelain", "--untracked-files=all") == ""


def test_a_url_or_a_missing_source_is_a_usage_error_that_says_what_to_do(vault_repo: VaultRepo) -> None:
    """A URL was refused as a path that "does not exist", which did not say that import reads local files only."""
    url = "https://raw.githubusercontent.com/org/app/main/CLAUDE.md"
    done = vault_repo.cairn("import", url)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        f"Error: Invalid value for 'SRC': {url!r} is a URL; cairn import reads local files: download it first "
        "(`curl -fsSLo CLAUDE.md URL`), then import that file"
    )
    missing = vault_repo.cairn("import", "notes/CLAUDE.md")
    assert missing.returncode == 2
    assert missing.stderr.splitlines()[-1] == (
        "Error: Invalid value for 'SRC': 'notes/CLAUDE.md' does not exist; give a Markdown file or a folder of them"
    )
    assert list((vault_repo.root / "cards").iterdir()) == []


def test_an_empty_source_is_a_usage_error_not_the_current_folder(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: `cairn import "$NOTES"` with NOTES unset imported every Markdown file of the current folder (click
    reads "" as it), a README and all. It is now a usage error, and nothing is written."""
    _start(vault_repo)
    (tmp_path / "README.md").write_text("# Our app\n\nDeploys fail because the cache is stale, so clear it first.\n")
    done = vault_repo.cairn("import", "", "--vault", str(vault_repo.root), cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[-1] == (
        "Error: Invalid value for 'SRC': is empty (a shell variable that is not set?); give a Markdown file or a "
        "folder of them"
    )
    assert cards_on_disk(vault_repo) == ["cards/git/existing.md"]


def test_section_may_name_a_documents_one_h1(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: a document's one H1 is its title, not a section, so `--section Gotchas` on a file whose only
    heading is `# Gotchas` found the heading and took nothing from it: "Would import 0 card(s)", exit 0. The section
    it names is now the whole document."""
    _start(vault_repo)
    (tmp_path / "CLAUDE.md").write_text("# Gotchas\n\n- Deploys fail because the cache is stale, so clear it first.\n")
    code, report = _import(vault_repo, "CLAUDE.md", "--section", "Gotchas", "--dry-run", cwd=tmp_path)
    assert code == 0
    assert [(c["id"], c["status"], c["scope"]) for c in report["cards"]] == [
        ("lessons/deploys-fail-because-the-cache-is-stale-so-clear-it-first", "would-write", [])
    ]


@pytest.mark.parametrize("written", ["20261002", "2026-W40-5"])
def test_a_notes_date_in_another_iso_form_is_refused_on_every_python(
    vault_repo: VaultRepo, tmp_path: Path, written: str
) -> None:
    """Bug fixed: import read a note's `verified_at` with `date.fromisoformat`, which on Python 3.11 takes `20261002`
    and `2026-W40-5` and on 3.10 does not: the same note became a card dated 2026-10-02 on one and a card lint
    refuses on the other. A note's date now reads as a card's does, `YYYY-MM-DD` only, and lint names the rest."""
    _start(vault_repo)
    notes = tmp_path / "dated"
    notes.mkdir()
    (notes / "pool.md").write_text(
        f'---\nname: Pool size\nsummary: The pool holds ten connections.\nverified_at: "{written}"\n---\n\nBody.\n'
    )
    code, report = _import(vault_repo, str(notes))
    assert code == 1
    [card] = report["cards"]
    assert card["status"] == "invalid"
    assert "verified_at" in json.dumps(card)
    assert cards_on_disk(vault_repo) == ["cards/git/existing.md"]


def test_a_bullet_of_backticks_or_spaces_is_judged_and_named_in_time_the_text_allows() -> None:
    """Bug fixed: the code span pattern read a run of backticks from each of its backticks and back again, so a bullet
    of 4,000 backticks took 3 s to judge and one of 40,000 about an hour (`cairn import` reads notes up to 4 MiB); the
    clause patterns read a run of spaces from each space (40,000 took 35 s to name). The spans and clauses found are
    those CommonMark and the name rule give; each call returns here on a text of 200,000 such characters."""
    from cairn.cards import lessons

    assert lessons._CODE_SPAN.findall("Prefer `pathlib` over ``os.path``, not ```a``b```") == [
        ("`", "pathlib"),
        ("``", "os.path"),
        ("```", "a``b"),
    ]
    assert lessons._CODE_SPAN.findall("`a``b`") == [("`", "a``b")]  # a run of another length does not close
    ticks = "Always quote the variable because the shell splits it " + "`" * 200_000
    assert lessons.judge(ticks).lesson
    assert lessons.lesson_name(ticks) == "Always quote the variable"
    assert [m.group() for m in lessons._CLAUSE.finditer("a ; b: c - d" + " " * 200_000 + "x")] == [" ;", ": ", " - "]
    spaced = "The cache goes stale" + " " * 200_000 + "because nothing clears it"
    assert [m.group() for m in lessons._SITUATION.finditer(spaced)] == [" " * 200_000 + "because "]


def test_imported_cards_are_written_in_the_working_tree_encoding_git_checks_them_out_in(
    vault_repo: VaultRepo, app: Path
) -> None:
    """Bug fixed: where `.gitattributes` check cards out in UTF-16 (`working-tree-encoding`), `cairn import` wrote
    them as UTF-8 and `git add` refused them ("BOM is required"); they are now written as git checks them out."""
    _start(vault_repo)
    vault_repo.write_raw(".gitattributes", "cards/testing/*.md working-tree-encoding=UTF-16\n")
    vault_repo.commit("Testing cards checked out in UTF-16")
    vault_repo.invoke("import", "CLAUDE.md", "--vault", str(vault_repo.root), cwd=app)
    card = "cards/testing/the-freezegun-fixture-leaks-into-later-tests.md"
    assert (vault_repo.root / card).read_bytes()[:2] in (b"\xff\xfe", b"\xfe\xff")
    vault_repo.git("add", "cards")
    vault_repo.commit("Imported")
    assert vault_repo.git("show", f"HEAD:{card}").startswith("---\nname: The `freezegun` fixture leaks")


def test_an_import_asks_git_once_for_the_encoding_of_every_card_it_writes(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed: `cairn import` ran one `git check-attr` per card it wrote, a quarter of the time an import of 3,500
    lessons took; one now answers for all of them, and each card is still written in its own folder's encoding."""
    _start(vault_repo)
    vault_repo.write_raw(
        ".gitattributes",
        "cards/testing/*.md working-tree-encoding=UTF-16\ncards/docker/*.md working-tree-encoding=UTF-16LE-BOM\n",
    )
    vault_repo.commit("Testing and docker cards checked out in UTF-16")
    src = tmp_path / "LESSONS.md"
    src.write_text(
        "## Testing gotchas\n\n- The freezegun fixture leaks into later tests because it patches time globally.\n"
        "- Parallel tests fail on the shared port because each worker binds 8080.\n\n"
        "## Git gotchas\n\n- A shallow clone breaks git describe because the tags are missing.\n\n"
        "## Docker gotchas\n\n- The build cache is lost because COPY . comes before the dependency install.\n",
        "utf-8",
    )
    trace = tmp_path / "git-trace.log"
    done = vault_repo.invoke("import", str(src), "--lessons", env={"GIT_TRACE": str(trace)})
    assert done.returncode == 0, done.stderr
    assert trace.read_text().count("check-attr") == 1
    cards = vault_repo.root / "cards"
    testing = sorted((cards / "testing").glob("*.md"))
    assert len(testing) == 2
    for card in testing:
        assert card.read_bytes()[:2] in (b"\xff\xfe", b"\xfe\xff")
        assert card.read_text("utf-16").startswith("---\nname: ")
    [docker] = (cards / "docker").glob("*.md")
    assert docker.read_bytes().startswith(b"\xff\xfe-\x00-\x00-\x00")
    [shallow] = (cards / "git").glob("a-shallow-clone*.md")
    assert shallow.read_bytes().startswith(b"---\nname: A shallow clone breaks git describe")
    vault_repo.git("add", "cards")
    assert "A shallow clone" in vault_repo.git("show", f":cards/git/{shallow.name}")
    assert vault_repo.git("show", f":cards/docker/{docker.name}").startswith("---\nname: The build cache is lost")


def test_a_card_refused_for_crowding_its_scope_is_not_told_to_fix_the_source(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Bug fixed: importing a CLAUDE.md's 30 Python lessons into a small vault refused every card for scope-crowding
    ("scope 'python' is on 31 of 32 cards") with "fix the source", which no edit of a lesson fixes; the refusal now
    says what does: --force, or turning the rule off for a vault about one tool."""
    _start(vault_repo)
    words = (
        "alembic asyncio boto celery django fastapi flask gunicorn httpx jinja kombu lxml mock numpy pandas pillow "
        "psycopg pydantic pytest redis requests scipy sqlalchemy starlette tornado twisted urllib3 uvicorn wheel yaml "
        "attrs black click coverage cython dask greenlet hypothesis isort jedi kafka lark mypy nox orjson paramiko "
        "poetry pyarrow pyodbc ruff sentry setuptools six structlog tox trio typer ujson uvloop virtualenv websockets "
        "xdist zope arrow babel cffi chardet cryptography dill docutils gevent grpc h11 idna msgpack"
    ).split()
    bullets = "".join(
        f"- {' '.join(words[3 * n : 3 * n + 3])} upgrades break {words[(5 * n + 40) % len(words)]} because of it.\n"
        for n in range(25)
    )
    src = tmp_path / "LESSONS.md"
    src.write_text(f"## Python gotchas\n\n{bullets}", "utf-8")
    code, report = _import(vault_repo, str(src), "--lessons", "--dry-run")
    assert code == 1
    crowded = [c for c in report["cards"] if {f["rule"] for f in c["findings"]} == {"scope-crowding"}]
    assert len(crowded) > 20, report["cards"]
    for card in crowded:
        assert card["status"] == "refused"
        assert "fix the source" not in card["message"], card["message"]
        assert "--force" in card["message"] and 'disable = ["scope-crowding"]' in card["message"], card["message"]


def test_an_agents_md_that_links_to_the_claude_md_beside_it_is_read_once(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: a project that keeps AGENTS.md as a symlink to its CLAUDE.md (as many do, for Codex and Claude
    Code) had each lesson read twice: the cards named the symlink as their source and every lesson was skipped once
    more as a duplicate, so the import exited 1. The file is read once, by its own name."""
    _start(vault_repo)
    project = tmp_path / "project"
    project.mkdir()
    (project / "CLAUDE.md").write_text(
        "## Git gotchas\n\n- A shallow clone breaks git describe because the tags are missing.\n"
        "- Rebasing a pushed branch loses review comments because the commits change.\n",
        "utf-8",
    )
    (project / "AGENTS.md").symlink_to("CLAUDE.md")
    code, report = _import(vault_repo, str(project))
    assert code == 0, report
    assert [c["status"] for c in report["cards"]] == ["written", "written"]
    assert all(c["source"].startswith(str(project / "CLAUDE.md")) for c in report["cards"]), report["cards"]
    meta, _ = _card(vault_repo, "git/a-shallow-clone-breaks-git-describe")
    assert meta["source"] == "CLAUDE.md:3"


def test_a_bullet_that_opens_with_an_html_comment_is_not_said_to_have_no_text(vault_repo: VaultRepo) -> None:
    """Bug fixed: `- <!-- note --> Docker builds are slow because...` was dropped as "the bullet has no text": Markdown
    reads a line that opens with `<!--` as raw HTML, so the bullet held no paragraph, yet its text is there. The drop
    now says so and what to do; a bullet of a comment alone still has no text."""
    notes = vault_repo.root.parent / "AGENTS.md"
    notes.write_text(
        "# Gotchas\n\n"
        "- <!-- note --> Docker builds are slow because the layer cache is invalidated by the copied source.\n"
        "- <!-- a comment only -->\n"
    )
    done = vault_repo.cairn("import", str(notes), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [
        f'{notes}:3: dropped "<!-- note --> Docker builds are slow because the layer…": the bullet opens with '
        "HTML (a comment or a tag), which Markdown reads as raw HTML, not as its text; delete the HTML from the "
        "bullet, then import again",
        f'{notes}:4: dropped "<!-- a comment only -->": the bullet has no text',
    ], done.stdout
