"""The hot path imports the standard library and Cairn's own hot modules only: checked with `python -X importtime`.

A real hook run (vault found, index read, recall, session file, log line, output) is run as `cairn` runs it
(`cairn.entry.main`), under `python -S` with Cairn's folder as the only path: nothing a `.pth` file or the install
imports at startup hides what the hook imports, and the hook cannot reach a third-party package. Then through the
launcher `cairn install` writes (`PYTHON -S .../cairn/__main__.py`: nothing is imported before `cairn.entry`).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import cairn
from cairn import install
from helpers.payloads import FITTING_PROMPT, log_entries, payload_for
from helpers.vaults import REBASE_ID, VaultRepo, cairn_executable, make_vault

# The hook may import only these standard library modules (and what they import themselves) beyond what the
# interpreter loads for `python -S -c pass`, and only Cairn's hot modules. Anything else fails: a new import on the
# hot path is a decision (it costs every prompt), made here.
HOT_STDLIB = (
    "os",
    "gc",
    "sys",
    "stat",
    "time",
    "_thread",  # built in: the sessions' in-process lock (cairn.hot.session)
    "_json",  # the C accelerator: cairn.hot.jsonc drives it as `json` does
    "_bisect",  # the C modules behind `bisect` and `heapq`, without their Python wrappers
    "_heapq",
    "_blake2",  # the index seals' keyed BLAKE2b (cairn.hot.index.Sealer)
)
# Cairn's own modules the hook may import: the hot package, and the executable's entry point.
HOT_CAIRN_PREFIX = "cairn.hot."
HOT_CAIRN_ROOTS = {"cairn", "cairn.entry", "cairn.hot"}
# Never on the hot path, whatever imports them: third-party parsers and git, and the standard library modules the
# hot path was freed of: `re` (and the `enum`, `functools`, `collections` it brings; the tokenizer, the JSON
# module, the shell quoting and the vault key do without), the `json` package, `pathlib` (`urllib.parse`,
# `ipaddress`, `fnmatch`), `dataclasses` (`inspect`, `ast`: +8 ms), `datetime`, `hashlib`, SQLite (the `sqlite3`
# package, and `_sqlite3`: loading its library cost 3.7M instructions a prompt, a tenth of the interpreter's start;
# the index is read with `os.pread`), `contextlib`, `array`, `mmap` (a file truncated under a mapping would end
# the hook with SIGBUS, not fail open), `struct`, and the `bisect`/`heapq` wrappers, and `__future__` (0.25 ms: hot
# modules quote the annotations that name type-checking-only names instead), `math` and `fcntl`.
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
    "re",
    "enum",
    "functools",
    "collections",
    "collections.abc",
    "operator",
    "json",
    "json.decoder",
    "pathlib",
    "urllib",
    "urllib.parse",
    "ipaddress",
    "fnmatch",
    "shlex",
    "typing",
    "dataclasses",
    "inspect",
    "datetime",
    "hashlib",
    "sqlite3",
    "_sqlite3",
    "contextlib",
    "tempfile",
    "subprocess",
    "array",
    "mmap",
    "struct",
    "_struct",
    "bisect",
    "heapq",
    "__future__",
    "cairn.config",
    # shared libraries a prompt does not need (about 0.2 ms each to load): the IDF's logarithm is `cairn.hot.ln`,
    # the session lock `os.lockf`
    "math",
    "fcntl",
}
CAIRN_HOME = str(Path(cairn.__file__).resolve().parent.parent)
# `cairn hook ...` as the executable runs it, without the wrapper script pip writes around it.
RUN_HOOK = "import sys; sys.argv[0] = 'cairn'; from cairn.entry import main; main()"


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


def _isolated_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = CAIRN_HOME
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def imported(args: list[str], *, isolated: bool = True, **kwargs: object) -> set[str]:
    """The modules `python -X importtime ARGS` imports (with `-S` and only Cairn on the path when isolated)."""
    flags = ["-S"] if isolated else []
    env = _isolated_env() if isolated else dict(os.environ)
    done = subprocess.run(
        [sys.executable, *flags, "-X", "importtime", *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        **kwargs,
    )  # type: ignore[call-overload]
    assert done.returncode == 0, done.stderr[-2000:]
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert names, done.stderr
    names.discard("imported package")
    return names


def allowed(isolated: bool = True) -> set[str]:
    """`python -c pass`'s modules, the hot standard library modules with everything they import, the built-in
    sha256 module (`_sha2` or `_sha256`, by version), the built-in sha1 module (`_sha1`: git's object ids, which
    `serve.served_file` compares a card's file with), and the hot Cairn modules."""
    stdlib = imported(["-c", "import " + ", ".join(HOT_STDLIB)], isolated=isolated)
    sha = imported(["-c", "from cairn.hot.paths import sha256_hex; import _sha1"], isolated=isolated)
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
