"""Lint inside git's hooks: the staged content (git's staging area, as GIT_INDEX_FILE names it) is checked, not the
working tree; the rest of the vault comes from the staging area too; a vault in a subfolder of a repository works."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from helpers.vaults import VaultRepo, cairn_executable

SECRET = "export GH_TOKEN=ghp_Q7w2E9r4T1y6U3i8O5p0A2s7D4f9G1h6J3k8"
SECRET_LINE = "cards/ci/token.md:8: secret this looks like a GitHub token"


def _hook(repo: VaultRepo, script: str) -> None:
    """A plain git pre-commit hook (no pre-commit framework): what git itself hands a hook is all it sees."""
    hook = repo.root / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(f"#!/bin/sh\n{script}\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)


def _commit(repo: VaultRepo, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "commit", *args], cwd=repo.root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def test_staged_content_is_checked_not_the_working_tree(vault_repo: VaultRepo) -> None:
    vault_repo.write("ci/token", "Tokens in CI", "Set GH_TOKEN in the job.", body=f"# Tokens\n\n{SECRET}")
    vault_repo.git("add", "-A")
    vault_repo.write("ci/token", "Tokens in CI", "Set GH_TOKEN in the job.", body="# Tokens\n\nUse a secret store.")
    staged = vault_repo.invoke("lint", "--staged", "cards/ci/token.md")
    assert staged.returncode == 1
    assert staged.stdout.startswith(SECRET_LINE)
    assert "from git's staging area" in staged.stderr
    worktree = vault_repo.invoke("lint", "--worktree", "cards/ci/token.md")
    assert worktree.returncode == 0, worktree.stdout
    assert worktree.stdout == ""


def test_linting_the_staging_area_runs_nothing_the_repository_configures(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: `git ls-files -s`, which reads the staging area, ran the repository's `core.fsmonitor`: `cairn
    lint --staged` in a project downloaded with its `.git` ran a command of the project's choosing."""
    vault_repo.write("ci/token", "Tokens in CI", "Set GH_TOKEN in the job.", body=f"# Tokens\n\n{SECRET}")
    vault_repo.git("add", "-A")
    ran = tmp_path / "ran"
    vault_repo.git("config", "core.fsmonitor", f"touch {ran}; false")
    staged = vault_repo.cairn("lint", "--staged")
    assert staged.returncode == 1 and staged.stdout.startswith(SECRET_LINE), staged.stdout + staged.stderr
    assert not ran.exists()


def test_the_rest_of_the_vault_comes_from_the_staging_area(vault_repo: VaultRepo) -> None:
    vault_repo.write("git/rebase", "Rebase before you push", "Run git pull --rebase so history stays linear.")
    vault_repo.git("add", "-A")
    # an untracked draft with the same name is not part of the commit
    vault_repo.write("git/draft", "Rebase before you push", "A draft nobody staged.")
    staged = vault_repo.invoke("lint", "--staged", "cards/git/rebase.md")
    assert staged.returncode == 0, staged.stdout
    worktree = vault_repo.invoke("lint", "--worktree", "cards/git/rebase.md")
    assert worktree.returncode == 1
    assert "name-unique the name is also used by cards/git/draft.md" in worktree.stdout


def test_a_plain_git_hook_reads_the_staging_area_git_names(vault_repo: VaultRepo) -> None:
    vault_repo.write("ci/token", "Tokens in CI", "Set GH_TOKEN in the job.", body="# Tokens\n\nUse a secret store.")
    vault_repo.commit("a clean card")
    _hook(vault_repo, f'exec "{cairn_executable()}" lint $(git diff --cached --name-only --diff-filter=ACMR)')
    vault_repo.write("ci/token", "Tokens in CI", "Set GH_TOKEN in the job.", body=f"# Tokens\n\n{SECRET}")
    # `git commit -a` stages into a temporary staging area (GIT_INDEX_FILE=.git/index.lock); .git/index holds no secret
    done = _commit(vault_repo, "-a", "-m", "leak")
    assert done.returncode == 1, done.stdout
    assert SECRET_LINE in done.stdout
    assert "from git's staging area" in done.stdout
    # a plain `git commit` records .git/index, where the card is still clean (the edit is not staged)
    vault_repo.write("ci/other", "Other", "Another lesson.", body="# Other\n\nText.")
    vault_repo.git("add", "cards/ci/other.md")
    done = _commit(vault_repo, "-m", "other card")
    assert done.returncode == 0, done.stdout


def test_a_vault_in_a_subfolder_of_the_repository(tmp_path: Path) -> None:
    repo = VaultRepo(tmp_path / "monorepo")
    (repo.root / "cards").rmdir()
    vault = repo.root / "docs" / "lessons"
    (vault / "cards" / "ci").mkdir(parents=True)
    (vault / "cairn.toml").write_text('[lint]\nscopes = ["ci"]\n')
    (repo.root / "README.md").write_text("A project with a vault in docs/lessons.\n")
    repo.commit("start")
    _hook(repo, f'exec "{cairn_executable()}" lint $(git diff --cached --name-only --diff-filter=ACMR -- "*.md")')
    card = vault / "cards" / "ci" / "token.md"
    card.write_text(
        f"---\nname: Tokens\nsummary: Keep tokens in the CI secret store.\nscope: [ci, k8s]\n---\n\n"
        f"# Tokens\n\n{SECRET}\n"
    )
    repo.git("add", "-A")
    done = _commit(repo, "-m", "card")
    assert done.returncode == 1, done.stdout
    lines = [line for line in done.stdout.splitlines() if line.startswith("docs/")]
    assert lines == [
        "docs/lessons/cards/ci/token.md:4: scope-vocabulary scope 'k8s' is not in the vault's vocabulary "
        "(cairn.toml [lint] scopes)",
        "docs/lessons/cards/ci/token.md:9: secret this looks like a GitHub token; remove it and rotate it "
        "(git history keeps it), or use a placeholder",
    ]


def test_git_variables_of_another_repository_are_not_applied_to_the_vault(tmp_path: Path) -> None:
    other = VaultRepo(tmp_path / "other")
    other.write("a/one", "One", "The first card.")
    other.commit("one")
    vault = VaultRepo(tmp_path / "vault")
    vault.write("ci/token", "Tokens in CI", "Set GH_TOKEN in the job.", body=f"# Tokens\n\n{SECRET}")
    vault.git("add", "-A")
    # as if run from the other repository's hook: its staging area, its git dir, its folder
    env = {"GIT_INDEX_FILE": ".git/index", "GIT_DIR": ".git"}
    done = vault.cairn("lint", "--vault", str(vault.root), env=env, cwd=other.root)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith(SECRET_LINE)
    assert "from git's staging area" in done.stderr
    assert os.environ.get("GIT_INDEX_FILE") is None


def test_deleting_a_superseded_card_gives_one_verdict_everywhere(vault_repo: VaultRepo) -> None:
    """Pre-commit (`cairn lint --staged` with the changed files, or none), `cairn review` and a whole-vault
    `cairn lint` in CI agree: deleting a card another card supersedes leaves a dangling `supersedes`, an error."""
    vault_repo.write("git/old-rebase", "Old rebase advice", "Pull with --rebase before every push to main.")
    vault_repo.write(
        "git/new-rebase",
        "Rebase after a force-push",
        "After a force-push compare git reflog before you pull --rebase.",
        supersedes=["git/old-rebase"],
    )
    vault_repo.write("docs/changelog", "Changelog lines", "Add one line per user-visible change under Unreleased.")
    base = vault_repo.commit("cards")
    vault_repo.git("rm", "-q", "cards/git/old-rebase.md")
    vault_repo.write("docs/changelog", "Changelog lines", "Add one line per user-visible change, newest first.")
    vault_repo.git("add", "-A")
    dangling = "cards/git/new-rebase.md:4: supersedes-missing supersedes 'git/old-rebase', but no card has that id"

    with_files = vault_repo.cairn("lint", "--staged", "cards/docs/changelog.md")
    assert with_files.returncode == 1, with_files.stdout + with_files.stderr
    assert dangling in with_files.stdout
    no_files = vault_repo.cairn("lint", "--staged")
    assert no_files.returncode == 1 and dangling in no_files.stdout

    vault_repo.git("commit", "-q", "--no-verify", "-m", "drop the old card")
    ci = vault_repo.cairn("lint")
    assert ci.returncode == 1 and dangling in ci.stdout
    review = vault_repo.cairn("review", f"{base}..HEAD")
    assert review.returncode == 1, review.stdout + review.stderr
    assert "supersedes-missing" in review.stdout


def test_a_clean_deletion_passes_everywhere(vault_repo: VaultRepo) -> None:
    vault_repo.write("git/old-rebase", "Old rebase advice", "Pull with --rebase before every push to main.")
    vault_repo.write("docs/changelog", "Changelog lines", "Add one line per user-visible change under Unreleased.")
    base = vault_repo.commit("cards")
    vault_repo.git("rm", "-q", "cards/git/old-rebase.md")
    staged = vault_repo.cairn("lint", "--staged", "cards/docs/changelog.md")
    assert staged.returncode == 0, staged.stdout + staged.stderr
    vault_repo.git("commit", "-q", "--no-verify", "-m", "drop the old card")
    assert vault_repo.cairn("lint").returncode == 0
    review = vault_repo.cairn("review", f"{base}..HEAD")
    assert "supersedes-missing" not in review.stdout


def test_a_git_hook_lints_its_own_repository_whatever_cairn_vault_names(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: with $CAIRN_VAULT naming another vault (set for the agents' hooks or daily commands), the hook linted
    that vault's file of the same path, and a commit of a card holding a secret went in; a commit of files only
    deleted linted that vault instead of this one."""
    other = VaultRepo(tmp_path / "other")
    other.write_raw("cairn.toml", "")
    other.write("ci/token", "Tokens in CI", "Set GH_TOKEN in the job.", body="# Tokens\n\nUse a secret store.")
    other.commit("the other vault")
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("ci/clean", "A clean card", "Nothing to see here.")
    vault_repo.commit("a clean card")
    _hook(vault_repo, f'exec "{cairn_executable()}" lint $(git diff --cached --name-only --diff-filter=ACMR)')
    vault_repo.write("ci/token", "Tokens in CI", "Set GH_TOKEN in the job.", body=f"# Tokens\n\n{SECRET}")
    vault_repo.git("add", "-A")
    done = subprocess.run(
        ["git", "commit", "-m", "leak"],
        cwd=vault_repo.root,
        env=dict(os.environ, CAIRN_VAULT=str(other.root)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert done.returncode == 1, done.stdout
    assert SECRET_LINE in done.stdout
