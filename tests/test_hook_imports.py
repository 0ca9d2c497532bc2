"""The hot path imports the standard library and Cairn's own hot modules only: checked with `python -X importtime`.

A real hook run (vault found, index read, recall, session file, log line, output) is run as `cairn` runs it
(`cairn.entry.main`), under `python -S` with Cairn's folder as the only path: nothing a `.pth` file or the install
imports at startup hides what the hook imports, and the hook cannot reach a third-party package. Then through the
launcher `cairn install` writes (`PYTHON -S .../cairn/__main__.py`: nothing is imported before `cairn.entry`).
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

import cairn
from cairn import install
from helpers.hotimports import NEVER, RUN_HOOK, allowed, imported, is_hot, offenders
from helpers.payloads import FITTING_PROMPT, log_entries, payload_for
from helpers.vaults import REBASE_ID, VaultRepo, cairn_executable, make_vault

SHOWN_ID = f"team:{REBASE_ID}"  # the vault is served from the user configuration, under the name "team"


@pytest.fixture(autouse=True)
def configured_vault(vault_repo: VaultRepo, isolated_env: Path) -> None:
    """The user configuration lists the test's vault as "team", and its cached JSON copy is already written (by
    `cairn vault add`, in real life): the hook reads the copy, never the TOML."""
    from cairn.hot.userconfig import config_file, load_vaults

    path = Path(config_file())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[[vaults]]\nname = "team"\npath = "{vault_repo.root}"\n', encoding="utf-8")
    assert [v.name for v in load_vaults()] == ["team"]


def hook_run(repo: VaultRepo, fmt: str, session: str | None) -> set[str]:
    """The modules a real hook run imports that injects the rebase card."""
    if fmt == "text":
        stdin = FITTING_PROMPT
    elif fmt == "json":
        stdin = json.dumps({"prompt": FITTING_PROMPT, **({"session_id": session} if session else {})})
    else:
        stdin = payload_for(fmt, FITTING_PROMPT, repo.root, session=session or "")
    names = imported(["-c", RUN_HOOK, "hook", "--format", fmt], input=stdin, cwd=repo.root)
    entry = log_entries()[-1]
    assert entry["error"] is None and entry["injected"] == [SHOWN_ID] and entry["stale"] is False, entry
    return names


RUNS = [("claude-code", "session-1"), ("json", "session-2"), ("json", None), ("text", None)]
# Modules whose code the hook imports from elsewhere (each module costs every prompt its import): they keep their
# names for cold code, re-exported from `cairn.hot` (records, JSON, paths, settings), `cairn.hot.vault` (the served
# ref) and `cairn.hot.gates` (the confidence model). A hook run that imports one of them pays for nothing.
MERGED = {
    "cairn.hot.record",
    "cairn.hot.jsonc",
    "cairn.hot.paths",
    "cairn.hot.settings",
    "cairn.hot.gitrefs",
    "cairn.hot.confidence",
}


@pytest.mark.parametrize(("fmt", "session"), RUNS)
def test_a_real_hook_run_imports_stdlib_and_hot_modules_only(
    vault_repo: VaultRepo, fmt: str, session: str | None
) -> None:
    make_vault(vault_repo)
    names = hook_run(vault_repo, fmt, session)
    expected = {
        "cairn.hot.recall",
        "cairn.hot.index",
        "cairn.hot.vault",
        "cairn.hot.userconfig",
    }
    assert expected <= names
    assert ("cairn.hot.session" in names) == (session is not None)
    assert "cairn.hot.errors" not in names  # imported where an error is raised, and none was
    assert names & MERGED == set()
    assert offenders(names, allowed()) == set()
    assert names & NEVER == set()


def test_importing_the_hook_imports_only_the_allowed_modules() -> None:
    names = imported(["-c", "import cairn.hot.hook"])
    assert "cairn.hot.hook" in names
    assert offenders(names, allowed()) == set()
    assert names & NEVER == set()


def test_the_hook_as_the_agents_run_it_imports_only_what_the_hook_does(vault_repo: VaultRepo) -> None:
    """`cairn install`'s launcher (`PYTHON -I -S .../cairn/__main__.py hook`), not the `cairn` command: pip's launcher
    for that imports `re` (before pip 25), and the agents never run it."""
    make_vault(vault_repo)
    python, *launcher = install.hook_launcher()
    assert python == sys.executable and launcher[:2] == ["-I", "-S"]
    names = imported(
        [*launcher, "hook", "--format", "claude-code"],
        isolated=False,
        input=payload_for("claude-code", FITTING_PROMPT, vault_repo.root),
        cwd=vault_repo.root,
    )
    assert log_entries()[-1]["injected"] == [SHOWN_ID]
    own = names - imported(["-c", "pass"], isolated=False)  # less what any start imports here (site, .pth files)
    assert offenders(own, allowed(isolated=False)) == set()
    assert own & NEVER == set()


def test_the_allow_list_catches_a_new_import() -> None:
    names = imported(["-c", "import cairn.hot.hook, dataclasses, xml.dom.minidom"])
    bad = offenders(names, allowed())
    assert {"dataclasses", "xml.dom.minidom"} <= bad
    assert not {name for name in bad if is_hot(name)}


def test_the_allowed_standard_modules_do_not_bring_in_what_the_hot_path_was_freed_of() -> None:
    assert allowed() & NEVER == set()


def test_the_installed_executable_is_what_runs(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    assert Path(cairn_executable()).exists()
    done = vault_repo.cairn("hook", "--format", "text", input=FITTING_PROMPT)
    assert REBASE_ID in done.stdout


def test_no_module_but_gitrepo_imports_gitpython() -> None:
    """ARCHITECTURE: `cairn/gitrepo.py` is the only module that imports `git` (it quiets gitpython's check for a git
    executable before the import). An import under `if TYPE_CHECKING:` runs for the type checker alone."""
    package = Path(cairn.__file__).resolve().parent
    found = []
    for path in sorted(package.rglob("*.py")):
        if path == package / "gitrepo.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {
            id(node)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
            for statement in block.body
            for node in ast.walk(statement)
        }
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            if any(name == "git" or name.startswith("git.") for name in names):
                found.append(f"{path.relative_to(package)}:{node.lineno}")
    assert found == []


# What a read-only command run on a current index must not import: the lint registry (its ~230 patterns compiled;
# the index compares the security rules' version, `SECURITY_RULES_VERSION`, and checks no card), what only its
# rules read (markdown-it, the card body's parser), the YAML parser (no card is parsed), and eval's measuring.
READ_ONLY_NEVER = {
    "cairn.lint.registry",
    "cairn.lint.model",
    "cairn.lint.runner",
    "cairn.cards.body",
    "markdown_it",
    "cairn.cards.safeyaml",
    "yaml",
    "frontmatter",
    "cairn.quality.evaluate",
    "cairn.quality.metrics",
}
READ_ONLY_RUNS = [["list"], ["recall", FITTING_PROMPT], ["explain", FITTING_PROMPT]]


@pytest.mark.parametrize("args", READ_ONLY_RUNS, ids=lambda args: args[0])
def test_a_read_only_command_on_a_current_index_loads_no_lint_rule(vault_repo: VaultRepo, args: list[str]) -> None:
    make_vault(vault_repo)
    names = imported(["-c", RUN_HOOK, *args], isolated=False, cwd=vault_repo.root)
    assert "cairn.index.build" in names  # the index was checked, as the command checks it
    assert names & READ_ONLY_NEVER == set()


def test_a_vault_that_disables_a_security_rule_is_still_checked_by_it(vault_repo: VaultRepo) -> None:
    """The read that loads no rule sees the same switched-off rules the index recorded: a vault whose `[lint]
    disable` names a security rule the user does not allow is indexed with the rule on, and read as current."""
    vault_repo.write_raw("cairn.toml", '[lint]\ndisable = ["secret"]\n')
    make_vault(vault_repo)
    done = vault_repo.invoke("index")
    assert done.returncode == 0 and "up to date" in done.stdout, done.stdout + done.stderr


def test_show_loads_the_security_rules_but_no_parser(vault_repo: VaultRepo) -> None:
    """`cairn show` checks the authors it names with the security rules (`security.refused_text`): it loads the
    rules, but no card is parsed and none written, so neither markdown-it, PyYAML nor `cairn add`'s authoring."""
    make_vault(vault_repo)
    names = imported(["-c", RUN_HOOK, "show", REBASE_ID], isolated=False, cwd=vault_repo.root)
    assert "cairn.cards.catalog" in names
    never = READ_ONLY_NEVER - {"cairn.lint.registry", "cairn.lint.model", "cairn.cards.body"} | {
        "cairn.cards.authoring"
    }
    assert names & never == set()


def test_the_command_list_loads_no_lint_rule_parser_or_benchmark(vault_repo: VaultRepo) -> None:
    """`cairn --help` imports every command's module for its line of help: what a command needs only when it runs
    (the lint runner, PyYAML, markdown-it, the benchmark suites) stays out of it."""
    names = imported(["-c", RUN_HOOK, "--help"], isolated=False, cwd=vault_repo.root)
    # (the command modules themselves are loaded by `importlib.import_module`, which importtime does not list)
    assert {"cairn.cards.catalog", "cairn.doctor"} <= names  # what `show` and `install` import: they were loaded
    assert names & (READ_ONLY_NEVER | {"cairn.cards.authoring", "cairn.membench"}) == set()


def test_a_chinese_prompt_is_read_without_unicodedata(vault_repo: VaultRepo) -> None:
    """The tokens read non-ASCII text NFC, which needs `unicodedata` (a shared library, about 1.4 ms of the hook's
    start); a prompt whose characters NFC leaves alone (Chinese, kana, Hangul, typographic quotes, full-width
    punctuation) skips it (`tokens.read_as_is`). One with an accent typed as a separate mark still loads it."""
    make_vault(vault_repo)

    def run(prompt: str) -> set[str]:
        stdin = json.dumps({"prompt": prompt, "session_id": "s-zh"})
        return imported(["-c", RUN_HOOK, "hook", "--format", "json"], input=stdin, cwd=vault_repo.root)

    assert "unicodedata" not in run("切换分支前，为什么要先 git stash 暂存未提交的修改？“急”——ひらがな 한국어")
    assert "unicodedata" in run("git rebase went wrong, the cafe\u0301 branch is gone")


def test_chinese_scope_tags_names_and_not_when_words_are_read_without_unicodedata(vault_repo: VaultRepo) -> None:
    """Scope tags, the layered merge's lesson keys and `not_when` words are compared in NFKC (`tokens.nfkc`), which
    imports `unicodedata` only for text NFKC may change beyond full-width ASCII: a scope typed in Chinese, with the
    full-width comma, and Chinese card names cost a Chinese prompt nothing. Text NFKC changes (`…`) still loads it."""
    make_vault(vault_repo)
    stdin = json.dumps({"prompt": "为什么要先 git stash 暂存未提交的修改？", "session_id": "s-zh"})
    hook = ["-c", RUN_HOOK, "hook", "--format", "json", "--scope", "运维，git、日志"]
    assert "unicodedata" not in imported(hook, input=stdin, cwd=vault_repo.root)
    assert "unicodedata" in imported([*hook[:-1], "运维，git…"], input=stdin, cwd=vault_repo.root)

    def folds(text: str) -> set[str]:
        code = (
            "from cairn.hot.serve import split_tags, _fold; from cairn.hot.recall import caseless; "
            f"split_tags({text!r}); _fold({text!r}); caseless({text!r})"
        )
        return imported(["-c", code])

    assert "unicodedata" not in folds("提交前先暂存：“未提交的修改”（ｇｉｔ）——ひらがな 한국어 café")
    for changed in ("ﾃｽﾄ", "提交…", "提交\u3000修改", "cafe\u0301"):
        assert "unicodedata" in folds(changed), changed
