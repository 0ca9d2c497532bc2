"""The lint hooks through real pre-commit: the manifest, `try-repo`, and `pre-commit install` + `git commit` in
vaults made by `cairn init`, where bad cards are rejected with their exact findings and good cards go in.

pre-commit installs this repository (with pip) into an environment keyed by repository and revision; every test
here uses the same pair (see `hook_repo`) and the session-wide PRE_COMMIT_HOME, so it is built once per session.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import cairn
from cairn.lint import RULES
from helpers.lintcases import TODAY, Case, cases, expected, lay_context, place, rules
from helpers.vaults import cairn_executable, card_text

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / ".pre-commit-hooks.yaml"
TEMPLATE_CONFIG = ROOT / "cairn" / "templates" / "vault" / ".pre-commit-config.yaml"
SEVERITY = {name: rule.severity for rule in RULES for name in (rule.id, *rule.emits)}
_LINE = re.compile(r"^(.+?):(\d+): (\S+) ")


def _git(*args: str, cwd: Path, env: dict[str, str] | None = None, check: bool = True) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {done.stderr}")
    return done.stdout.strip()


def _env() -> dict[str, str]:
    """The environment for pre-commit and git: dates as of TODAY, and one pip cache for the session so the
    environments pre-commit builds (its own, and try-repo's) download each package once."""
    pip_cache = Path(os.environ["PRE_COMMIT_HOME"]).with_name("pip-cache")
    return dict(os.environ, CAIRN_TODAY=TODAY, PIP_CACHE_DIR=str(pip_cache))


def _pre_commit(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = _env()
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """The Cairn repository and revision pre-commit installs the hooks from.

    A clean checkout (CI's fresh clone) is used as it is, at HEAD. A checkout with uncommitted changes to tracked
    files is copied the way `pre-commit try-repo` does it: cloned, with those changes committed on top.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    head = _git("rev-parse", "HEAD", cwd=ROOT, env=env)
    if not _git("status", "--porcelain", "--untracked-files=no", cwd=ROOT, env=env):
        return str(ROOT), head
    shadow = tmp_path_factory.mktemp("hook-repo") / "cairn"
    _git("clone", "-q", "--no-checkout", str(ROOT), str(shadow), cwd=ROOT, env=env)
    _git("checkout", "-q", head, cwd=shadow, env=env)
    staged = _git("diff", "--cached", "--name-only", "-z", cwd=ROOT, env=env).split("\0")
    shadow_env = dict(
        env, GIT_INDEX_FILE=str(shadow / ".git" / "index"), GIT_OBJECT_DIRECTORY=str(shadow / ".git" / "objects")
    )
    if any(staged):
        _git("add", "--", *[s for s in staged if s], cwd=ROOT, env=shadow_env)
    _git("add", "-u", cwd=ROOT, env=shadow_env)
    _git("commit", "-q", "--no-verify", "-m", "uncommitted changes under test", cwd=shadow, env=env)
    return str(shadow), _git("rev-parse", "HEAD", cwd=shadow, env=env)


def _files_pattern() -> re.Pattern[str]:
    hooks = yaml.safe_load(MANIFEST.read_text())
    return re.compile(next(h for h in hooks if h["id"] == "cairn-lint")["files"])


def _new_vault(tmp_path: Path, hook_repo: tuple[str, str], rule: str | None = None) -> Path:
    """`cairn init`, the template's pre-commit config pointed at the repository under test, `pre-commit install`.

    With a rule, the example cards make way for the rule's context, committed without hooks.
    """
    vault = tmp_path / "vault"
    done = subprocess.run(  # its cards are verified on CAIRN_TODAY, the day the hooks judge dates as of
        [cairn_executable(), "init", str(vault)], capture_output=True, text=True, check=False, env=_env()
    )
    assert done.returncode == 0, done.stderr
    # The pinned form the template documents, pointed at the repository under test: the manifest's hooks, installed
    # by pre-commit in its own environment.
    config = vault / ".pre-commit-config.yaml"
    config.write_text(
        f"repos:\n  - repo: {hook_repo[0]}\n    rev: {hook_repo[1]}\n    hooks:\n      - id: cairn-lint\n"
    )
    _git("add", ".pre-commit-config.yaml", cwd=vault)
    if rule is not None:
        _git("rm", "-rq", "cards", cwd=vault)
        (vault / "cards").mkdir()
        lay_context(rule, vault)
        _git("add", "-A", cwd=vault)
    _git("commit", "-q", "--no-verify", "-m", "the vault under test", cwd=vault)
    installed = _pre_commit("install", cwd=vault)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return vault


def _commit(vault: Path, message: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`git commit -m MESSAGE` in `vault` (in `env`, else the tests' own environment)."""
    # git runs hooks with their output on stderr; merged here, in the order the user sees it
    return subprocess.run(
        ["git", "commit", "-m", message],
        cwd=vault,
        env=_env() if env is None else env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=900,
    )


def test_manifest_validates() -> None:
    done = _pre_commit("validate-manifest", str(MANIFEST), cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    hooks = {h["id"]: h for h in yaml.safe_load(MANIFEST.read_text())}
    assert set(hooks) == {"cairn-lint", "cairn-scope", "cairn-verified-at"}
    assert hooks["cairn-lint"]["entry"] == "cairn lint"
    assert hooks["cairn-scope"]["entry"] == "cairn lint --rules scope"
    assert hooks["cairn-verified-at"]["entry"] == "cairn lint --rules verified-at"
    assert all(h["language"] == "python" and h["pass_filenames"] for h in hooks.values())


def test_hooks_see_cards_and_cairn_toml_only() -> None:
    pattern = _files_pattern()
    for path in ("cards/git/x.md", "team/vault/cards/a/b/c.md", "cairn.toml", "team/vault/cairn.toml", "cards/a\nb.md"):
        assert pattern.search(path), path
    for path in ("cards/git/x.MD", "cards/git/x.Md"):  # ignored by the index: lint says so (card-path)
        assert pattern.search(path), path
    for path in ("cards", "team/vault/cards"):  # cards/ made a symlink or a file: lint refuses it (file-symlink)
        assert pattern.search(path), path
    for path in ("README.md", "evals/cases.yaml", "cards/notes.txt", "mycards/x.md", "cairn.toml.bak"):
        assert not pattern.search(path), path


def test_template_config_mirrors_the_manifest() -> None:
    done = _pre_commit("validate-config", str(TEMPLATE_CONFIG), cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    config = yaml.safe_load(TEMPLATE_CONFIG.read_text())
    (repo,) = config["repos"]
    assert repo["repo"] == "local"  # works offline, right after `cairn init`; no placeholder URL to trust
    manifest = {h["id"]: h for h in yaml.safe_load(MANIFEST.read_text())}
    for hook in repo["hooks"]:
        assert hook["entry"] == manifest[hook["id"]]["entry"]
        assert hook["files"] == manifest[hook["id"]]["files"]
        assert hook["require_serial"] is True
    # the commented alternatives name real hooks too, and the pinned form names this release
    assert set(re.findall(r"id: (cairn-[\w-]+)", TEMPLATE_CONFIG.read_text())) == set(manifest)
    assert f"rev: v{cairn.__version__}" in TEMPLATE_CONFIG.read_text()


def _template_vault(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """`cairn init` a vault and `pre-commit install` its shipped config: the vault, and the environment its commits
    run in (this install's `cairn` first on PATH, as the shipped local hooks run the `cairn` on PATH)."""
    vault = tmp_path / "vault"
    assert subprocess.run([cairn_executable(), "init", str(vault)], capture_output=True, env=_env()).returncode == 0
    env = dict(_env(), PATH=f"{Path(cairn_executable()).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    installed = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install"], cwd=vault, env=env, capture_output=True, text=True
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return vault, env


def test_the_template_config_as_shipped_rejects_a_bad_card(tmp_path: Path) -> None:
    """`cairn init`, `pre-commit install`, commit: the shipped local hooks run the cairn on PATH."""
    vault, env = _template_vault(tmp_path)
    (vault / "cards" / "bad.md").write_text("---\nname: [broken\n---\n")
    _git("add", "cards/bad.md", cwd=vault)
    done = _commit(vault, "bad", env)
    assert done.returncode == 1, done.stdout
    assert "cards/bad.md:" in done.stdout and "frontmatter-parse" in done.stdout
    (vault / "cards" / "bad.md").write_text(
        "---\nname: Fixed\nsummary: A card that keeps the contract.\n---\n\n# Fixed\n\nBody.\n"
    )
    _git("add", "cards/bad.md", cwd=vault)
    done = _commit(vault, "fixed", env)
    assert done.returncode == 0, done.stdout


def test_a_commit_that_makes_cards_a_symlink_is_refused(tmp_path: Path) -> None:
    """Bug fixed: a commit replacing cards/ with a symlink to a folder outside the vault passes no card file, so the
    hooks said "0 file(s)" and let it in; the vault then served nothing (the index reads no card through a symlink),
    which `cairn review` and `cairn index` did report."""
    vault, env = _template_vault(tmp_path)
    shutil.move(vault / "cards", tmp_path / "elsewhere")
    (vault / "cards").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    _git("add", "-A", cwd=vault)
    done = _commit(vault, "cards elsewhere", env)
    assert done.returncode == 1, done.stdout
    said = "cards:0: file-symlink cards/ must be a folder in the commit, not a symlink or a file; no card is read through it"
    assert [line for line in done.stdout.splitlines() if _LINE.match(line)] == [said], done.stdout


def test_a_commit_that_makes_cards_a_file_is_refused(tmp_path: Path) -> None:
    """Bug fixed: a commit replacing cards/ with a regular file passed the hooks ("cards: skipped, in no Cairn vault
    (no cairn.toml above it)", with cairn.toml beside it), and the vault then served nothing: lint found no vault
    once cards/ was gone. It is refused as the index and review say of it, and so is `pre-commit run --all-files`."""
    vault, env = _template_vault(tmp_path)
    _git("rm", "-rq", "cards", cwd=vault)
    (vault / "cards").write_text("the cards moved to the wiki\n")
    _git("add", "cards", cwd=vault)
    said = "cards:0: file-symlink cards/ must be a folder in the commit, not a symlink or a file; no card is read through it"
    done = _commit(vault, "cards a file", env)
    assert done.returncode == 1, done.stdout
    assert [line for line in done.stdout.splitlines() if _LINE.match(line)] == [said], done.stdout
    run = [sys.executable, "-m", "pre_commit", "run", "--all-files", "cairn-lint"]
    every = subprocess.run(run, cwd=vault, env=env, capture_output=True, text=True, timeout=900)
    assert every.returncode == 1 and said in every.stdout.splitlines(), every.stdout


def test_a_commit_to_a_vault_whose_cards_folder_is_cards_capitalised_names_the_rename(tmp_path: Path) -> None:
    """Bug fixed: in a vault whose folder is `Cards/`, which the index and the hook never read, the hooks said only
    "no Cairn vault in this repository" and the commit passed; they now fail it with the rename the commands name,
    and the rename, run as printed, commits."""
    vault, env = _template_vault(tmp_path)
    _git("mv", "cards", "Cards", cwd=vault)
    done = _commit(vault, "Cards", env)
    command = f"mv {vault / 'Cards'} {vault / 'cards'}"
    said = (
        f"Error: {vault}: its cards are in Cards/, not cards/: git, the index and the hook read cards/ alone, "
        f"lowercase; rename the folder (`{command}`) and commit, then run this again"
    )
    assert done.returncode == 1 and said in done.stdout.splitlines(), done.stdout
    subprocess.run(shlex.split(command), check=True)
    _git("add", "-A", cwd=vault)
    assert _git("status", "--porcelain", cwd=vault) == ""  # the rename undone: nothing left to commit
    (vault / "NOTES.md").write_text("team notes\n")
    _git("add", "NOTES.md", cwd=vault)
    done = _commit(vault, "notes", env)
    assert done.returncode == 0, done.stdout


def test_the_template_config_stays_out_of_the_post_hooks_another_tool_installs(tmp_path: Path) -> None:
    """A team that runs a tool of its own after each checkout and commit (`pre-commit install -t post-checkout -t
    post-commit`) gets that tool alone there: cairn-lint, always_run, linted every card after each `git switch`."""
    vault, env = _template_vault(tmp_path)
    config = vault / ".pre-commit-config.yaml"
    config.write_text(
        config.read_text()
        + "  - repo: local\n    hooks:\n      - id: say-moved\n        name: say moved\n"
        + "        entry: echo moved\n        language: system\n        always_run: true\n"
        + "        pass_filenames: false\n        verbose: true\n        stages: [post-checkout, post-commit]\n"
    )
    _git("commit", "-qam", "a tool of the team's after each checkout", cwd=vault, env=env)
    installed = _pre_commit("install", "-t", "post-checkout", "-t", "post-commit", cwd=vault)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    switched = subprocess.run(
        ["git", "switch", "-c", "topic"],
        cwd=vault,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert switched.returncode == 0, switched.stdout
    assert "say moved" in switched.stdout and "cairn lint" not in switched.stdout, switched.stdout
    (vault / "NOTES.md").write_text("team notes\n")
    _git("add", "NOTES.md", cwd=vault)
    done = _commit(vault, "notes", env)
    assert done.returncode == 0, done.stdout
    assert done.stdout.count("cairn lint (every rule)") == 1, done.stdout  # the commit's own, not once more after it


@pytest.mark.slow
def test_try_repo_rejects_a_bad_card_and_passes_a_good_one(tmp_path: Path, hook_repo: tuple[str, str]) -> None:
    vault = _new_vault(tmp_path, hook_repo)
    bad = Case("secret", "bad", cases("bad", "secret")[0].file)
    good = cases("good", "secret")[0]
    place(bad, vault)
    place(good, vault)
    _git("add", "-A", cwd=vault)
    repo, rev = hook_repo
    done = _pre_commit("try-repo", repo, "cairn-lint", "--ref", rev, "--files", bad.rel_path, good.rel_path, cwd=vault)
    assert done.returncode == 1, done.stdout + done.stderr
    for line in expected(bad):
        assert line in done.stdout.splitlines()
    assert good.rel_path not in done.stdout
    passing = _pre_commit("try-repo", repo, "cairn-scope", "--ref", rev, "--files", good.rel_path, cwd=vault)
    assert passing.returncode == 0, passing.stdout + passing.stderr


@pytest.mark.slow
def test_a_fresh_vault_commits_its_first_card(tmp_path: Path, hook_repo: tuple[str, str]) -> None:
    vault = _new_vault(tmp_path, hook_repo)
    everything = _pre_commit("run", "--all-files", cwd=vault)
    assert everything.returncode == 0, everything.stdout
    assert "cairn lint: 0 errors, 0 warnings" in everything.stdout
    add = subprocess.run(
        [
            cairn_executable(),
            "add",
            "--name",
            "Pin CI images by digest",
            "--id",
            "ci/pin-images-by-digest",
            "--summary",
            "A moving image tag changed under a passing pipeline; pin base images by sha256 digest.",
            "--scope",
            "ci",
            "--verified-at",
            TODAY,  # the day the hooks judge dates as of (CAIRN_TODAY): the card is checked that day, not in the future
            "--body",
            "# Pin CI images by digest\n\nUse `image@sha256:...` and bump it on purpose.",
        ],
        cwd=vault,
        capture_output=True,
        text=True,
        check=False,
    )
    assert add.returncode == 0, add.stderr
    _git("add", "cards", cwd=vault)
    done = _commit(vault, "lesson: pin CI images")
    assert done.returncode == 0, done.stdout  # the hooks' stderr is merged into stdout (`_commit`)
    assert "cairn lint (every rule)" in done.stdout and "Passed" in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("rule", rules())
def test_commits_through_the_hooks(rule: str, tmp_path: Path, hook_repo: tuple[str, str]) -> None:
    """Every bad card: its exact findings; rejected when one is an error, accepted (findings shown) otherwise."""
    vault = _new_vault(tmp_path, hook_repo, rule)
    pattern = _files_pattern()
    for case in cases("bad", rule):
        if not pattern.search(case.rel_path):
            continue  # not a file the hooks look at (e.g. a .txt under cards/)
        want = expected(case)
        place(case, vault)
        _git("add", "-A", cwd=vault)
        done = _commit(vault, f"try {case.id}")
        printed = [line for line in done.stdout.splitlines() if _LINE.match(line)]
        assert printed == want, done.stdout
        if any(SEVERITY[_LINE.match(line).group(3)] == "error" for line in want):  # type: ignore[union-attr]
            assert done.returncode == 1, f"{case.id} was committed: {done.stdout}"
            _git("rm", "-q", "--cached", "--", case.rel_path, cwd=vault)
            (vault / case.rel_path).unlink()
        else:
            assert done.returncode == 0, f"{case.id} (warnings only) was rejected: {done.stdout}"
            assert "warnings do not fail" in done.stdout
            _git("rm", "-q", "--", case.rel_path, cwd=vault)
            _git("commit", "-q", "--no-verify", "-m", f"drop {case.id}", cwd=vault)
    for case in cases("good", rule):
        place(case, vault)
    _git("add", "-A", cwd=vault)
    done = _commit(vault, f"good cards for {rule}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not [line for line in done.stdout.splitlines() if _LINE.match(line)], done.stdout
    assert _git("status", "--porcelain", cwd=vault) == ""


@pytest.mark.slow
def test_a_vault_in_a_subfolder_leaves_another_projects_cards_folder_alone(
    tmp_path: Path, hook_repo: tuple[str, str]
) -> None:
    """A repository that holds a vault in `lessons/` and a web app with its own `web/cards/` folder: the manifest's
    file pattern matches both, and `web/cards/README.md` (no `cairn.toml` above it) failed the commit."""
    repo = tmp_path / "mono"
    vault = _new_vault(tmp_path, hook_repo)
    repo.mkdir()
    _git("init", "-q", cwd=repo)
    (vault / ".git").rename(tmp_path / "vault-git")
    vault.rename(repo / "lessons")
    (repo / "web" / "cards").mkdir(parents=True)
    (repo / "web" / "cards" / "README.md").write_text("# Card components\n\nThe React cards of the shop.\n")
    (repo / "tools").mkdir()
    (repo / "tools" / "cards").write_text("#!/bin/sh\necho the shop's cards\n")  # the pattern matches `cards` too
    _git("add", "-A", cwd=repo)
    files = [p for p in _git("ls-files", cwd=repo).splitlines() if _files_pattern().search(p)]
    assert {"web/cards/README.md", "tools/cards"} <= set(files) and any(p.startswith("lessons/cards/") for p in files)
    done = _pre_commit("try-repo", hook_repo[0], "cairn-lint", "--ref", hook_repo[1], "--files", *files, cwd=repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "web/cards/README.md: skipped, in no Cairn vault (no cairn.toml above it)" in done.stdout
    assert "tools/cards: skipped, in no Cairn vault (no cairn.toml above it)" in done.stdout
    assert "cairn lint: 0 errors" in done.stdout


def test_the_template_config_rejects_a_symlinked_card_committed_with_another_card(tmp_path: Path) -> None:
    """pre-commit passes only files tagged `file` unless a hook says otherwise (its default `types: [file]`), so a
    symlinked card committed beside a regular one was never seen, and went in."""
    vault, env = _template_vault(tmp_path)
    (vault / "cards" / "git" / "linked.md").symlink_to("../../README.md")
    (vault / "cards" / "git" / "plain.md").write_text(
        "---\nname: A plain card\nsummary: A card that keeps the contract.\n---\n\n# A plain card\n\nBody.\n"
    )
    _git("add", "cards", cwd=vault)
    done = _commit(vault, "a link", env)
    assert done.returncode == 1, done.stdout
    assert "cards/git/linked.md:0: file-symlink a card must be a regular file, not a symlink" in done.stdout
    assert "in 2 file(s) from git's staging area" in done.stdout


def test_the_template_config_rejects_a_card_whose_name_holds_a_newline(tmp_path: Path) -> None:
    """The hooks' file pattern (`.*`) did not match a name holding a newline, so such a card committed beside
    another card was never linted and went in; the index then refused it (file-name): it must fail the commit."""
    vault, env = _template_vault(tmp_path)
    (vault / "cards" / "git" / "two\nlines.md").write_text(card_text("Two lines", "A name that holds a newline."))
    (vault / "cards" / "git" / "plain.md").write_text(card_text("A plain card", "A card that keeps the contract."))
    _git("add", "cards", cwd=vault)
    done = _commit(vault, "a newline", env)
    assert done.returncode == 1, done.stdout
    assert "cards/git/two?lines.md:0: file-name" in done.stdout
    assert "in 2 file(s) from git's staging area" in done.stdout


def test_the_template_config_rejects_a_submodule_under_a_cards_name(tmp_path: Path) -> None:
    """A submodule at `cards/git/sub.md` committed beside a card passed the hooks (pre-commit passed no directory,
    and lint read no submodule), then the index refused it (path-outside-cards) and said to see `cairn lint`,
    which said nothing of it."""
    vault, env = _template_vault(tmp_path)
    other = tmp_path / "other"
    _git("init", "-q", "-b", "main", str(other), cwd=tmp_path)
    _git("commit", "-q", "--allow-empty", "-m", "x", cwd=other, env=env)
    _git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(other), "cards/git/sub.md", cwd=vault)
    (vault / "cards" / "git" / "plain.md").write_text(card_text("A plain card", "A card that keeps the contract."))
    _git("add", "cards", cwd=vault)
    done = _commit(vault, "a submodule", env)
    assert done.returncode == 1, done.stdout
    assert "cards/git/sub.md:0: path-outside-cards a submodule cannot hold cards" in done.stdout
    worktree = subprocess.run([cairn_executable(), "lint"], cwd=vault, env=env, capture_output=True, text=True)
    assert worktree.returncode == 1
    assert "cards/git/sub.md:0: path-outside-cards a submodule cannot hold cards" in worktree.stdout.splitlines()
    assert "sub.md/" not in worktree.stdout  # the submodule's own files are no cards of the vault


@pytest.mark.slow
def test_try_repo_rejects_a_symlinked_card(tmp_path: Path, hook_repo: tuple[str, str]) -> None:
    vault = _new_vault(tmp_path, hook_repo)
    (vault / "cards" / "git" / "linked.md").symlink_to("/etc/hostname")
    _git("add", "-A", cwd=vault)
    repo, rev = hook_repo
    # Every hook of the manifest in one try-repo (each try-repo builds its own environment: 40-60 s), each judged on
    # its own part of the output, which pre-commit opens with the hook's id and exit code.
    done = _pre_commit("try-repo", repo, "--ref", rev, cwd=vault)
    assert done.returncode == 1, done.stdout + done.stderr
    parts = {part.split("\n", 1)[0]: part for part in done.stdout.split("- hook id: ")[1:]}
    assert set(parts) == {"cairn-lint", "cairn-scope", "cairn-verified-at"}, done.stdout
    for hook, part in parts.items():
        assert "- exit code: 1\n" in part, hook + done.stdout
        assert "cards/git/linked.md:0: file-symlink" in part, hook + done.stdout


@pytest.mark.slow
def test_the_manifests_hook_fails_a_commit_that_deletes_a_superseded_card(
    tmp_path: Path, hook_repo: tuple[str, str]
) -> None:
    """pre-commit passes no deleted file, so a hook without always_run was skipped on a commit that only deletes
    cards: the manifest's cairn-lint let through what the template's hook, `cairn review` and CI fail."""
    vault = _new_vault(tmp_path, hook_repo)
    (vault / "cards" / "git" / "old-rebase.md").write_text(
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
    _git("add", "cards", cwd=vault)
    _git("commit", "-q", "--no-verify", "-m", "two cards", cwd=vault)
    _git("rm", "-q", "cards/git/old-rebase.md", cwd=vault)
    done = _commit(vault, "drop the old card")
    assert done.returncode == 1, done.stdout
    assert "cards/git/new-rebase.md:" in done.stdout and "supersedes-missing" in done.stdout


def test_the_template_config_leaves_files_the_index_does_not_read_alone(tmp_path: Path) -> None:
    """A vault at the repository's root with `docs/cards/howto.md` (no card: the index reads only the vault's own
    `cards/`) and `examples/cairn.toml`: the hook's file pattern matches both and lint failed the commit
    (path-outside-cards, config-invalid). They are skipped now, and a card the commit deletes is still judged."""
    vault, env = _template_vault(tmp_path)
    (vault / "docs" / "cards").mkdir(parents=True)
    (vault / "docs" / "cards" / "howto.md").write_text("# How we write cards\n\nOne lesson a card.\n")
    (vault / "examples").mkdir()
    (vault / "examples" / "cairn.toml").write_text("[example]\nshown = true\n")
    _git("add", "docs", "examples", cwd=vault)

    done = _commit(vault, "docs", env)
    assert done.returncode == 0, done.stdout
    assert "docs/cards/howto.md: skipped, not in the vault's cards/ folder (the index reads no card there)" in (
        done.stdout
    )
    assert "examples/cairn.toml: skipped, not the vault's cairn.toml (the index reads no setting there)" in done.stdout
    # Deleting a card another card supersedes, beside a docs change, still fails as it fails `cairn review`.
    superseded = "cards/git/force-with-lease.md"
    assert "git/force-with-lease" in (vault / "cards" / "git" / "force-push-safely.md").read_text()
    _git("rm", "-q", superseded, cwd=vault)
    (vault / "docs" / "cards" / "howto.md").write_text("# How we write cards\n\nOne lesson a card, always.\n")
    _git("add", "docs", cwd=vault)
    done = _commit(vault, "drop a card", env)
    assert done.returncode == 1, done.stdout
    assert "cards/git/force-push-safely.md:11: supersedes-missing" in done.stdout


def test_the_template_config_warns_of_a_card_file_ending_in_upper_case_md(tmp_path: Path) -> None:
    """`cards/git/x.MD`, as Windows and macOS tools may write it, is no card: the index ignores it. The file pattern
    matched `.md` alone, so the commit passed with "0 file(s)" and nothing said the lesson would never be served."""
    vault, env = _template_vault(tmp_path)
    (vault / "cards" / "git" / "upper.MD").write_text(
        "---\nname: Upper case extension\nsummary: A card whose file name ends in upper case.\n---\n\nBody.\n"
    )
    _git("add", "cards", cwd=vault)
    done = _commit(vault, "upper", env)
    assert done.returncode == 0, done.stdout  # a warning, as card-path is
    assert "cards/git/upper.MD:0: card-path not a card: card files end in `.md`, lowercase" in done.stdout
    assert "rename it to cards/git/upper.md" in done.stdout


def test_pre_commit_run_over_a_range_fails_a_deleted_superseded_card(tmp_path: Path) -> None:
    """CI's `pre-commit run --from-ref BASE --to-ref HEAD` after a `git commit --no-verify` that deletes a card
    another card supersedes and edits a third: pre-commit passes the edited card only, and lint, reading the working
    tree, knew of no deletion, so the range passed what the commit's own hook, `cairn review` and `cairn lint`
    fail."""
    vault, env = _template_vault(tmp_path)
    base = _git("rev-parse", "HEAD", cwd=vault)
    _git("rm", "-q", "cards/git/force-with-lease.md", cwd=vault)
    pipefail = vault / "cards" / "shell" / "pipefail-hides-failures.md"
    pipefail.write_text(pipefail.read_text() + "\nOne more line.\n")
    _git("add", "-A", cwd=vault)
    _git("commit", "-q", "--no-verify", "-m", "drop a card, edit another", cwd=vault)
    ci = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--from-ref", base, "--to-ref", "HEAD"],
        cwd=vault,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert ci.returncode == 1, ci.stdout
    assert "cards/git/force-push-safely.md:11: supersedes-missing" in ci.stdout


def _repository_with_vaults(tmp_path: Path, *folders: str) -> tuple[Path, dict[str, str]]:
    """A repository holding an app (`app.py`) and a vault made by `cairn init` in each folder, committed, with the
    template's pre-commit config at its root: the repository, and the environment the shipped hooks run in."""
    repo = tmp_path / "mono"
    repo.mkdir()
    _git("init", "-q", cwd=repo)
    for folder in folders:
        done = subprocess.run(
            [cairn_executable(), "init", str(repo / folder), "--no-register"],
            capture_output=True,
            text=True,
            env=_env(),
        )
        assert done.returncode == 0, done.stderr
        shutil.rmtree(repo / folder / ".git")
        (repo / folder / ".pre-commit-config.yaml").replace(repo / ".pre-commit-config.yaml")
    env = dict(_env(), PATH=f"{Path(cairn_executable()).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    (repo / "app.py").write_text("print(1)\n")
    _git("add", "-A", cwd=repo)
    _git("commit", "-q", "--no-verify", "-m", "an app and its lessons", cwd=repo)
    return repo, env


def test_pre_commit_run_with_no_card_changed_lints_a_vault_in_a_subfolder(tmp_path: Path) -> None:
    """A repository holding its vault in `lessons/`, the template's config at its root: `pre-commit run` outside
    `git commit` (CI's `--from-ref/--to-ref` over a range that touches no card, a manual run) called `cairn lint`
    with no file, which looked for the vault around the repository's root: "Error: no vault here" failed every such
    range, and with one vault configured (another repository's) lint judged that vault's cards instead."""
    repo, env = _repository_with_vaults(tmp_path, "lessons")

    def ci() -> subprocess.CompletedProcess[str]:
        (repo / "app.py").write_text((repo / "app.py").read_text() + "print(2)\n")
        _git("commit", "-q", "--no-verify", "-am", "the app only", cwd=repo)
        run = [sys.executable, "-m", "pre_commit", "run", "--from-ref", "HEAD~1", "--to-ref", "HEAD"]
        return subprocess.run(run, cwd=repo, env=env, capture_output=True, text=True, timeout=900)

    clean = ci()
    assert clean.returncode == 0, clean.stdout
    assert "cairn lint: 0 errors, 0 warnings in 14 file(s) from the working tree" in clean.stdout
    _git("rm", "-q", "lessons/cards/git/force-with-lease.md", cwd=repo)
    _git("commit", "-q", "--no-verify", "-m", "drop a card another supersedes", cwd=repo)
    broken = ci()
    assert broken.returncode == 1, broken.stdout
    assert "lessons/cards/git/force-push-safely.md:11: supersedes-missing" in broken.stdout


def test_a_commit_to_one_vault_is_judged_on_what_it_deletes_in_another(tmp_path: Path) -> None:
    """A repository with two vaults: a commit that edits a card of `docs/lessons` and deletes a card `team/lessons`
    supersedes passed, since pre-commit passed the edited card alone and lint judged only its vault; the deletion
    alone failed, as `cairn lint` and `cairn review` of that vault do."""
    repo, env = _repository_with_vaults(tmp_path, "docs/lessons", "team/lessons")
    installed = subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=repo, env=env, capture_output=True)
    assert installed.returncode == 0, installed.stderr
    _git("rm", "-q", "team/lessons/cards/git/force-with-lease.md", cwd=repo)
    edited = repo / "docs" / "lessons" / "cards" / "shell" / "pipefail-hides-failures.md"
    edited.write_text(edited.read_text() + "\nOne more line.\n")
    _git("add", "-A", cwd=repo)
    done = _commit(repo, "edit one vault, delete in the other", env)
    assert done.returncode == 1, done.stdout
    assert "team/lessons/cards/git/force-push-safely.md:11: supersedes-missing" in done.stdout
