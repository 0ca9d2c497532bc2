"""The hot path imports the standard library and Cairn's own hot modules only: checked with `python -X importtime`."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from helpers.payloads import FITTING_PROMPT, payload_for
from helpers.vaults import REBASE_ID, VaultRepo, cairn_executable, make_vault

# The hook may import only these standard library modules (and what they import themselves) beyond what the
# interpreter loads for `python -c pass`, and only these Cairn modules. Anything else fails: a new import on the
# hot path is a decision (it costs every prompt), made here.
HOT_STDLIB = (
    "os",
    "gc",
    "sys",
    "re",
    "time",
    "math",
    "json",
    "array",
    "bisect",
    "heapq",
    "fcntl",
    "pathlib",
    "_sqlite3",  # the C module: the `sqlite3` package adds datetime adapters the index never uses
)
# Cairn's own modules the hook may import: the hot package, and the executable's entry point.
HOT_CAIRN_PREFIX = "cairn.hot."
HOT_CAIRN_ROOTS = {"cairn", "cairn.entry", "cairn.hot"}
# Never on the hot path, whatever imports them: third-party parsers and git, and the standard library modules the
# hot path was freed of (dataclasses pulls in inspect and ast: +8 ms; datetime; the sqlite3 package; contextlib).
NEVER = {
    "click",
    "git",
    "yaml",
    "frontmatter",
    "markdown_it",
    "gitdb",
    "smmap",
    "mdurl",
    "tomli",
    "tomllib",
    "dataclasses",
    "inspect",
    "typing",
    "datetime",
    "sqlite3",
    "hashlib",
    "tempfile",
    "cairn.config",
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


def allowed() -> set[str]:
    """`python -c pass`'s modules, the hot standard library modules with everything they import, the built-in
    sha256 module (`_sha2` or `_sha256`, by version), and the hot Cairn modules."""
    stdlib = imported(["-c", "import " + ", ".join(HOT_STDLIB)])
    sha = imported(["-c", "from cairn.hot.paths import sha256_hex"]) - imported(["-c", "import os, re, pathlib"])
    return stdlib | {name for name in sha if not name.startswith("cairn")} | HOT_CAIRN_ROOTS


def is_hot(name: str) -> bool:
    return name in HOT_CAIRN_ROOTS or name.startswith(HOT_CAIRN_PREFIX)


def offenders(names: set[str], allow: set[str]) -> set[str]:
    bad = set()
    for name in names - allow:
        if is_hot(name):
            continue
        if importlib.util.find_spec(name.split(".")[0]) is None:
            continue  # an optional import that failed (`copy` tries org.python.core): nothing was loaded
        bad.add(name)
    return bad


def test_importing_the_hook_imports_only_the_allowed_modules() -> None:
    names = imported(["-c", "import cairn.hot.hook"])
    assert "cairn.hot.hook" in names
    assert offenders(names, allowed()) == set()


def test_a_real_hook_run_imports_stdlib_and_hot_modules_only(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    names = imported(
        [cairn_executable(), "hook", "--format", "claude-code"],
        input=payload_for("claude-code", FITTING_PROMPT, vault_repo.root),
        cwd=vault_repo.root,
    )
    assert {
        "cairn.hot.recall",
        "cairn.hot.index",
        "cairn.hot.session",
        "cairn.hot.hooklog",
        "cairn.hot.gitrefs",
    } <= names
    assert offenders(names, allowed()) == set()


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
