"""The vault template's pre-commit config, run by pre-commit itself: a commit that only deletes cards is linted too."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from helpers.vaults import cairn_executable, card_text


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300
    )


def _env() -> dict[str, str]:
    """This installation's `cairn` on PATH (as pre-commit's hook runs it) and one author for every commit."""
    return dict(
        os.environ,
        PATH=f"{Path(cairn_executable()).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        GIT_AUTHOR_NAME="Ann",
        GIT_AUTHOR_EMAIL="ann@example.com",
        GIT_COMMITTER_NAME="Ann",
        GIT_COMMITTER_EMAIL="ann@example.com",
    )


def test_deleting_a_card_another_supersedes_fails_the_commit(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    env = _env()
    assert _run([cairn_executable(), "init", str(vault), "--no-register"], tmp_path, env).returncode == 0
    old = vault / "cards" / "git" / "old-rebase.md"
    old.write_text(
        card_text("Old rebase advice", "Pull with --rebase before every push to a shared branch.", "Why: x.")
    )
    (vault / "cards" / "git" / "new-rebase.md").write_text(
        card_text(
            "Rebase onto the fetched branch",
            "Fetch first, then rebase onto origin's branch; a stale local main hides teammates' commits.",
            "Why: a stale local main hides teammates' commits.",
            supersedes=["git/old-rebase"],
        )
    )
    assert _run(["git", "add", "cards"], vault, env).returncode == 0
    assert _run(["git", "commit", "-q", "--no-verify", "-m", "two cards"], vault, env).returncode == 0
    installed = _run([sys.executable, "-m", "pre_commit", "install"], vault, env)
    assert installed.returncode == 0, installed.stdout

    assert _run(["git", "rm", "-q", "cards/git/old-rebase.md"], vault, env).returncode == 0
    done = _run(["git", "commit", "-m", "drop the old card"], vault, env)
    assert done.returncode == 1, done.stdout
    assert "cards/git/new-rebase.md" in done.stdout and "supersedes-missing" in done.stdout

    # a commit that touches no card still passes
    assert _run(["git", "checkout", "-q", "HEAD", "--", "cards/git/old-rebase.md"], vault, env).returncode == 0
    (vault / "NOTES.md").write_text("team notes\n")
    assert _run(["git", "add", "NOTES.md"], vault, env).returncode == 0
    done = _run(["git", "commit", "-m", "notes"], vault, env)
    assert done.returncode == 0, done.stdout


def test_a_commit_of_no_card_lints_what_it_deletes_not_every_card(tmp_path: Path) -> None:
    """A commit of an eval case or a README passes no file to the always_run hook: it lints the cards the commit's
    deletions concern, not every card of the vault (seconds a thousand cards, on every such commit). A card broken
    before, committed past the hooks, fails the commits that touch it, as it did, not every other commit."""
    vault = tmp_path / "vault"
    env = _env()
    assert _run([cairn_executable(), "init", str(vault), "--no-register"], tmp_path, env).returncode == 0
    broken = vault / "cards" / "git" / "broken.md"
    broken.write_text("---\nname: Broken\n---\n\nNo summary.\n")
    assert _run(["git", "add", "cards"], vault, env).returncode == 0
    assert _run(["git", "commit", "-q", "--no-verify", "-m", "a broken card"], vault, env).returncode == 0
    installed = _run([sys.executable, "-m", "pre_commit", "install"], vault, env)
    assert installed.returncode == 0, installed.stdout

    with (vault / "evals" / "cases.yaml").open("a") as cases:
        cases.write('\n- id: extra\n  query: "How do I keep my lunch warm?"\n  expect: []\n')
    assert _run(["git", "add", "evals"], vault, env).returncode == 0
    done = _run(["git", "commit", "-m", "a negative case"], vault, env)
    assert done.returncode == 0, done.stdout
    assert "in 0 file(s) from git's staging area" in done.stdout, done.stdout

    broken.write_text(broken.read_text() + "More.\n")
    assert _run(["git", "add", "cards"], vault, env).returncode == 0
    done = _run(["git", "commit", "-m", "touch the broken card"], vault, env)
    assert done.returncode == 1, done.stdout
    assert "cards/git/broken.md" in done.stdout and "required-field" in done.stdout


def _monorepo(tmp_path: Path, folder: str) -> tuple[Path, dict[str, str]]:
    """A git repository holding a vault made by `cairn init` in `folder` (its own .git removed: the monorepo's
    history holds it) with the template's pre-commit config at the root; and the environment to commit in it."""
    repo = tmp_path / "mono"
    env = _env()
    repo.mkdir()
    assert _run(["git", "init", "-q"], repo, env).returncode == 0
    made = _run([cairn_executable(), "init", str(repo / folder), "--no-register", "--no-git-hooks"], repo, env)
    assert made.returncode == 0, made.stdout
    shutil.rmtree(repo / folder / ".git")
    (repo / folder / ".pre-commit-config.yaml").rename(repo / ".pre-commit-config.yaml")
    return repo, env


def test_a_vault_in_a_subfolder_of_a_monorepo_commits_and_still_lints_deletions(tmp_path: Path) -> None:
    """The template's config at a monorepo's root (the vault in `lessons/`): `cairn-lint` runs on every commit
    (always_run) with no files for a commit that touches no card, and `cairn lint` at the root found no vault:
    every commit of the monorepo failed with `Error: no vault here`."""
    repo, env = _monorepo(tmp_path, "lessons")
    (repo / "lessons" / "cards" / "git" / "old-rebase.md").write_text(
        card_text("Old rebase advice", "Pull with --rebase before every push to a shared branch.", "Why: x.")
    )
    (repo / "lessons" / "cards" / "git" / "new-rebase.md").write_text(
        card_text(
            "Rebase onto the fetched branch",
            "Fetch first, then rebase onto origin's branch; a stale local main hides teammates' commits.",
            "Why: a stale local main hides teammates' commits.",
            supersedes=["git/old-rebase"],
        )
    )
    assert _run(["git", "add", "-A"], repo, env).returncode == 0
    assert _run(["git", "commit", "-q", "--no-verify", "-m", "the monorepo"], repo, env).returncode == 0
    installed = _run([sys.executable, "-m", "pre_commit", "install"], repo, env)
    assert installed.returncode == 0, installed.stdout

    (repo / "app.py").write_text("print('hello')\n")
    assert _run(["git", "add", "app.py"], repo, env).returncode == 0
    done = _run(["git", "commit", "-m", "the app"], repo, env)
    assert done.returncode == 0, done.stdout
    assert "cairn lint: 0 errors" in done.stdout

    assert _run(["git", "rm", "-q", "lessons/cards/git/old-rebase.md"], repo, env).returncode == 0
    done = _run(["git", "commit", "-m", "drop the old card"], repo, env)
    assert done.returncode == 1, done.stdout
    assert "lessons/cards/git/new-rebase.md:" in done.stdout and "supersedes-missing" in done.stdout


def test_a_vault_in_a_folder_whose_name_starts_with_a_dash_is_linted_not_read_as_options(tmp_path: Path) -> None:
    """pre-commit appends the staged files' paths to the hook's entry (`cairn lint -lessons/cards/x.md`): a vault
    in a monorepo folder named `-lessons` failed every commit with `No such option '-l'`. Such a path is read as
    the file it names: a good card goes in, a bad one is named by its path, and an option is still an option."""
    repo, env = _monorepo(tmp_path, "-lessons")
    assert _run(["git", "add", "-A"], repo, env).returncode == 0
    assert _run(["git", "commit", "-q", "--no-verify", "-m", "the monorepo"], repo, env).returncode == 0
    installed = _run([sys.executable, "-m", "pre_commit", "install"], repo, env)
    assert installed.returncode == 0, installed.stdout

    card = repo / "-lessons" / "cards" / "shell" / "dash-paths.md"
    card.write_text(card_text("Paths that start with a dash", "Put -- before a path that starts with a dash.", "x"))
    assert _run(["git", "add", "-A"], repo, env).returncode == 0
    done = _run(["git", "commit", "-m", "a card"], repo, env)
    assert done.returncode == 0, done.stdout
    assert "cairn lint: 0 errors, 0 warnings in 1 file(s) from git's staging area" in done.stdout

    card.write_text("---\nname: [broken\n---\n")
    assert _run(["git", "add", "-A"], repo, env).returncode == 0
    done = _run(["git", "commit", "-m", "a broken card"], repo, env)
    assert done.returncode == 1, done.stdout
    assert "\n-lessons/cards/shell/dash-paths.md:3: frontmatter-parse " in done.stdout  # the path as pre-commit gave it
    assert "No such option" not in done.stdout
    # the command's own options are read as options still, beside such a path
    listed = _run([cairn_executable(), "lint", "--rules", "contract", "--strict", "-lessons/cards/shell"], repo, env)
    assert listed.returncode == 1 and "frontmatter-parse" in listed.stdout, listed.stdout
