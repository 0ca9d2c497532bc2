"""What the hook imports, as `python -X importtime` shows it, against the modules it may import (the hot path).

Used by test_hook_imports (the hook's runs without the semantic channel) and test_semantic (a run the warm encoder
serves).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import cairn

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
    "unicodedata",  # only for a prompt that is not all ASCII (`tokens.fold_letters`), about 0.3 ms
    "zlib",  # only for a vault served at a tag packed-refs does not peel: its loose tag object (`vault._peel_loose`)
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


# What a hook run the warm encoder serves may import beyond HOT_STDLIB: the built-in socket module, which
# `cairn.hot.semantic` drives itself (never the `socket` package: `selectors`, `enum`, `array`).
SEMANTIC_STDLIB = ("_socket",)


def allowed(isolated: bool = True, also: tuple[str, ...] = ()) -> set[str]:
    """`python -c pass`'s modules, the hot standard library modules (and `also`) with everything they import, the
    built-in sha256 module (`_sha2` or `_sha256`, by version), the built-in sha1 module (`_sha1`: git's object ids,
    which `serve.served_file` compares a card's file with), and the hot Cairn modules."""
    stdlib = imported(["-c", "import " + ", ".join((*HOT_STDLIB, *also))], isolated=isolated)
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
