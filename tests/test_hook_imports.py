"""The hot path imports the standard library and Cairn's own hot modules only: checked with `python -X importtime`."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from conftest import VaultRepo, cairn_executable
from test_hook_payloads import FITTING_PROMPT, REBASE_ID, make_vault, payload_for

FORBIDDEN = {"click", "git", "yaml", "frontmatter", "markdown_it", "gitdb", "smmap", "mdurl", "tomli"}
COLD_CAIRN = {
    "cairn.cli",
    "cairn.indexer",
    "cairn.card",
    "cairn.gitrepo",
    "cairn.safeyaml",
    "cairn.install",
    "cairn.authoring",
    "cairn.catalog",
    "cairn.atomic",
}


def imported(args: list[str], **kwargs: object) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *args], capture_output=True, text=True, check=False, **kwargs
    )  # type: ignore[call-overload]
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert names, done.stderr
    return names


def offenders(names: set[str], baseline: set[str]) -> set[str]:
    bad = set()
    for name in names - baseline:
        top = name.split(".")[0]
        if importlib.util.find_spec(top) is None:
            continue  # an optional import that failed (`copy` tries org.python.core): nothing was loaded
        if top in FORBIDDEN or any(name == c or name.startswith(c + ".") for c in COLD_CAIRN):
            bad.add(name)
        elif top != "cairn" and top not in sys.stdlib_module_names:
            bad.add(name)  # any third-party module
    return bad


def test_importing_the_hook_pulls_in_no_third_party_module() -> None:
    baseline = imported(["-c", "pass"])
    names = imported(["-c", "import cairn.hook"])
    assert "cairn.hook" in names
    assert offenders(names, baseline) == set()


def test_a_real_hook_run_imports_stdlib_and_hot_modules_only(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    baseline = imported(["-c", "pass"])
    names = imported(
        [cairn_executable(), "hook", "--format", "claude-code"],
        input=payload_for("claude-code", FITTING_PROMPT, vault_repo.root),
        cwd=vault_repo.root,
    )
    assert {"cairn.recall", "cairn.store", "cairn.session", "cairn.hooklog", "cairn.gitrefs"} <= names
    assert offenders(names, baseline) == set()


def test_the_installed_executable_is_what_runs(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    assert Path(cairn_executable()).exists()
    done = vault_repo.cairn("hook", "--format", "text", input=FITTING_PROMPT)
    assert REBASE_ID in done.stdout
