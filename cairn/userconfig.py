"""Writing the user configuration: `cairn vault add|remove` edit the `[[vaults]]` list the prompt hook serves.

The reader (and the file's format) is `cairn/hot/userconfig.py`. Edits are textual, so the user's comments and
layout stay: `add` appends one `[[vaults]]` table, `remove` cuts one table out (the comment lines just above the
next table stay with it). Every new text is parsed and validated with the reader's own checks before it replaces
the file, atomically, 0600 in a 0700 folder: a write never leaves a config the hook cannot read.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from cairn.atomic import named, read_only_refusal
from cairn.hot import userconfig as reader
from cairn.hot.errors import ConfigError
from cairn.hot.userconfig import UserConfig, VaultEntry, add_again, config_file, load_config, load_vaults
from cairn.hot.vault import MARKER_IS_FOLDER, find_vault

MARKER = "cairn.toml"
HEADER = "# Cairn's user configuration: the vaults the prompt hook serves, in order of precedence.\n"


def add_vault(
    path: str | os.PathLike[str],
    *,
    name: str | None = None,
    ref: str | None = None,
    scopes: Sequence[str] = (),
    projects: Sequence[str] = (),
    first: bool = False,
    replace: bool = False,
    env: Mapping[str, str] | None = None,
) -> VaultEntry:
    """Register the vault at `path`, last in precedence (first with `first`); raises ConfigError when it cannot
    (the file is untouched). With `replace`, the vault configured under `name` is registered again in its place
    (path, ref, scopes and projects as given), keeping its precedence.

    The name defaults to the vault folder's name made into a valid one (`Team Lessons` -> `team-lessons`).
    """
    env = os.environ if env is None else env
    vault = find_vault(os.path.abspath(os.path.expanduser(os.fspath(path))))
    root = str(vault.root)
    if os.path.isdir(os.path.join(root, MARKER)):
        raise ConfigError(f"{os.path.join(root, MARKER)}: {MARKER_IS_FOLDER}")
    if not os.path.isfile(os.path.join(root, MARKER)):
        raise ConfigError(
            f"{root} has no {MARKER}, Cairn's marker: the prompt hook serves no folder without it; create one (an "
            f"empty file will do), commit it, then run this again"
        )
    file = config_file(env)
    with _editing(file, env):
        return _add(file, root, name, ref, scopes, projects, first, replace, env)


def _add(
    file: str,
    root: str,
    name: str | None,
    ref: str | None,
    scopes: Sequence[str],
    projects: Sequence[str],
    first: bool,
    replace: bool,
    env: Mapping[str, str],
) -> VaultEntry:
    current = load_config(env)  # a broken file is reported, never appended to
    if replace and name is None:
        raise ConfigError("--replace needs --name: the name of the configured vault to register again in its place")
    names = [e.name for e in current.vaults]
    if replace and name not in names:
        known = ", ".join(names) or "none"
        raise ConfigError(
            f"no vault named {name!r} is configured to replace (configured: {known}); leave --replace out"
        )
    name = name if name is not None else default_name(root, set(names))
    if not reader.is_vault_name(name):
        raise ConfigError(
            f"{name!r} is not a vault name: 1 to {reader.MAX_NAME_CHARS} characters of a-z, 0-9, '_' and '-', "
            "starting with a letter or digit (e.g. --name team)"
        )
    for entry in current.vaults:
        if entry.name == name:
            if replace:
                continue
            raise ConfigError(
                f"a vault named {name!r} is already configured ({entry.path}); pick another --name, or add --replace "
                "to register it again in its place"
            )
        if os.path.realpath(entry.path) == os.path.realpath(root):
            raise ConfigError(
                f"{root} is already configured as {entry.name!r}, nothing to add (`cairn vault list` shows it); to "
                f"change its ref, scopes or projects, add it again with `--name {entry.name} --replace`"
            )
    lines = ["[[vaults]]", f"name = {toml_string(name)}", f"path = {toml_string(root)}"]
    if ref:
        lines.append(f"ref = {toml_string(ref)}")
    if scopes:
        lines.append(f"scopes = {toml_list(scopes)}")
    if projects:
        lines.append(f"projects = {toml_list([os.path.abspath(os.path.expanduser(p)) for p in projects])}")
    old = _read(file)
    _refuse_other_layout(file, old, len(current.vaults))
    base = old if old.strip() else HEADER
    newline = "\r\n" if "\r\n" in base else "\n"  # a file with CRLF line ends (a Windows editor) keeps them
    table = newline.join(lines) + newline
    if replace:  # in its place: the same precedence
        text, expect = _with_table(base, names.index(name), table), names
    else:
        at = _first_table(base) if first else None
        if at is None:
            text = base + ("" if base.endswith("\n") else newline) + newline + table
        else:
            text = base[:at] + table + newline + base[at:]
        expect = _order(current.vaults, name, first)
    written = _write_checked(file, text, env, expect=expect)
    return next(e for e in written.vaults if e.name == name)


def remove_vault(name: str, env: Mapping[str, str] | None = None) -> VaultEntry:
    """Remove the vault named `name` from the configuration (its folder and cards are not touched)."""
    env = os.environ if env is None else env
    file = config_file(env)
    with _editing(file, env):
        entries = _entries_over_any_limit(file, env)
        position = next((n for n, e in enumerate(entries) if e.name == name), None)
        if position is None:
            known = ", ".join(e.name for e in entries) or "none"
            raise ConfigError(f"no vault named {name!r} is configured (configured: {known}); see `cairn vault list`")
        text = _read(file)
        _refuse_other_layout(file, text, len(entries))
        left = [e.name for e in entries if e.name != name]
        _write_checked(file, _without_table(text, position), env, expect=left, max_vaults=len(entries))
        return entries[position]


def _entries_over_any_limit(file: str, env: Mapping[str, str]) -> list[VaultEntry]:
    """The configured vaults, read as `load_vaults` reads them but with no limit on their number: `cairn vault
    remove` is how a file over the limit (written by hand), which every other command refuses, is brought under it."""
    try:
        data = reader._parse_toml(file, _read(file).encode("utf-8"), env, max_vaults=sys.maxsize)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return list(reader._from_data(file, data).vaults)


def configured_ref(vault_root: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> str | None:
    """The `ref` the user configured for the vault at `vault_root`, or None (none configured, or the file cannot be
    read: `cairn doctor` reports that)."""
    entry = entry_for(vault_root, env)
    return entry.ref if entry is not None else None


def served_scope(
    vault_root: str | os.PathLike[str], declared: Sequence[str], env: Mapping[str, str] | None = None
) -> tuple[tuple[str, ...] | None, VaultEntry | None]:
    """The scope recall uses for the vault at `vault_root` asked alone, as the prompt hook uses it for that vault:
    the declared tags met with the configured entry's `scopes` (None when both are given and share no tag: the hook
    serves nothing from it), and that entry (None for a vault the configuration does not list)."""
    from cairn.hot.serve import layer_scope

    entry = entry_for(vault_root, env)
    if entry is None:
        return tuple(declared), None
    return layer_scope(declared, entry.scopes), entry


def outside_projects(entry: VaultEntry | None, cwd: str) -> str | None:
    """A note when the configured vault `entry` is limited to projects that `cwd` is outside of (the prompt hook
    serves it nothing there), else None."""
    from cairn.hot.vault import serves_folder

    if entry is None or serves_folder(entry.projects, cwd):
        return None
    return (
        f"the prompt hook serves vault {entry.name!r} only to agents working under {', '.join(entry.projects)}; "
        "the current folder is outside them"
    )


def entry_for(vault_root: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> VaultEntry | None:
    """The configured entry whose path is the vault at `vault_root`, or None."""
    try:
        entries = load_vaults(env)
    except ConfigError:
        return None
    real = os.path.realpath(vault_root)
    return next((e for e in entries if os.path.realpath(e.path) == real), None)


def serve_another(entry: VaultEntry) -> str:
    """The command by which the configured vault `entry` comes to serve another ref (BRANCH), for the fix `hot.vault`
    gives for a served ref that is missing or unreviewed: with its name, path, scopes and projects, which the
    placeholders' `cairn vault remove NAME` and `cairn vault add PATH --ref BRANCH` lost (served in every project, every
    scope, after the others)."""
    return add_again(entry, entry.path, ref="BRANCH")


def default_name(root: str, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """A valid, unused vault name from a folder's name: lower case, other characters folded into `-`."""
    base = "".join(c if c in reader._NAME_REST else "-" for c in os.path.basename(root).lower())
    base = "-".join(part for part in base.split("-") if part).lstrip("_")[: reader.MAX_NAME_CHARS] or "vault"
    if not reader.is_vault_name(base):
        base = "vault"
    name, n = base, 1
    while name in taken:
        n += 1
        suffix = f"-{n}"
        name = base[: reader.MAX_NAME_CHARS - len(suffix)] + suffix
    return name


def toml_string(value: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, but for DEL, which TOML wants escaped too."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(f"{value!r} is not valid UTF-8 text; rename it") from None
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_list(values: Sequence[str]) -> str:
    return "[" + ", ".join(toml_string(v) for v in values) + "]"


# -- internals ----------------------------------------------------------------------------------------------------


def _read(file: str) -> str:
    """The file's text with its line ends as they are (CRLF kept, never made LF)."""
    try:
        with open(file, encoding="utf-8", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        return ""
    except NotADirectoryError as exc:
        raise reader.unreadable(file, exc) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file}: cannot read the user configuration ({exc})") from None


@contextlib.contextmanager
def _editing(file: str, env: Mapping[str, str]) -> Iterator[None]:
    """Hold the configuration's edit lock, so two commands editing it at once each see the other's edit instead of
    writing over it. The lock file is Cairn's state folder's (beside the file's cached copy, keyed by the file's
    real path: never a stray file in a dotfiles repository the config links into); in the config's own folder when
    the state folder cannot be written."""
    from cairn.hot import private_folder
    from cairn.index.store import file_lock

    real = os.path.realpath(file)
    lock = Path(reader._cache_file(real, env)).with_suffix(".lock")
    try:
        private_folder(str(lock.parent))
        writable = os.access(lock.parent, os.W_OK)
    except OSError:
        writable = False
    if not writable:
        folder = os.path.dirname(real)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        lock = Path(folder) / f".{os.path.basename(real)}.lock"
    with file_lock(lock, f"editing the user configuration {file}"):
        yield


def _order(current: Sequence[VaultEntry], name: str, first: bool) -> list[str]:
    names = [e.name for e in current]
    return [name, *names] if first else [*names, name]


def _write_checked(
    file: str, text: str, env: Mapping[str, str], expect: Sequence[str], max_vaults: int = reader.MAX_VAULTS
) -> UserConfig:
    """Validate `text` as the reader would, check it holds the vaults `expect` names in that order (a textual edit
    that hit another table than meant is refused), then replace `file` with it atomically (0600; its folder 0700);
    the configuration it holds. A symlink at `file` stays one: its target is what is replaced (a config kept in a
    dotfiles repository). `max_vaults`: the most vaults it may list (`remove` passes the number it read, so a file
    over the limit can be shortened one vault at a time)."""
    raw = text.encode("utf-8")
    try:
        data = reader._parse_toml(file, raw, env, max_vaults)
    except ValueError as exc:
        raise ConfigError(f"{exc} (nothing was written)") from None
    written = reader._from_data(file, data)
    if [e.name for e in written.vaults] != list(expect):
        raise ConfigError(
            f"{file}: its layout is one Cairn cannot edit safely (a [[vaults]] table it could not find by its "
            "header); nothing was written: edit the file by hand"
        )
    file = os.path.realpath(file)
    _refuse_read_only(file)
    folder = os.path.dirname(file)
    if not os.path.isdir(folder):
        os.makedirs(folder, mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)
    fd, tmp = tempfile.mkstemp(prefix=".config.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, file)
    except OSError as exc:
        raise named(exc, file) from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return written


def _refuse_other_layout(file: str, text: str, vaults: int) -> None:
    """Refuse to edit a configuration whose vaults are not all `[[vaults]]` tables (an inline array, `vaults = [{...},
    ...]`, valid TOML the reader takes): the edit, made table by table, would say the file changed while it was read,
    or make TOML that redefines `vaults`."""
    tables = sum(1 for line in text.splitlines() if _is_vaults_header(line))
    if tables != vaults:
        raise ConfigError(
            f"{file} lists its vaults in a form Cairn does not edit (an inline array, `vaults = [...]`?): write each "
            "as a [[vaults]] table (name = ..., path = ...), or edit the file by hand; nothing was written"
        )


def _refuse_read_only(file: str) -> None:
    """Refuse to replace a configuration its owner made read-only, or one on a read-only file system, as for the
    agents' settings files (`atomic.read_only_refusal`)."""
    why = read_only_refusal(file, file)
    if why is not None:
        raise ConfigError(why)


def _first_table(text: str) -> int | None:
    """The offset of the first `[[vaults]]` table, with the comment lines right above it (they describe it)."""
    lines = text.splitlines(keepends=True)
    starts = [n for n, line in enumerate(lines) if _is_vaults_header(line)]
    if not starts:
        return None
    start = starts[0]
    while start > 0 and lines[start - 1].lstrip().startswith("#") and lines[start - 1].strip():
        start -= 1
    return sum(len(line) for line in lines[:start])


_VAULTS_HEADER = re.compile(r"""\s*\[\[\s*(?:vaults|"vaults"|'vaults')\s*\]\]\s*(?:#.*)?""")


def _is_vaults_header(line: str) -> bool:
    """A `[[vaults]]` table header as TOML allows it: spaces inside the brackets, a quoted key, a comment after."""
    return _VAULTS_HEADER.fullmatch(line.rstrip("\r\n")) is not None


def _is_header(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith("[") and not stripped.startswith("#")


def _with_table(text: str, position: int, table: str) -> str:
    """`text` with the `position`-th `[[vaults]]` table replaced by `table` (header to its last key; the comment and
    blank lines around it stay)."""
    lines = text.splitlines(keepends=True)
    start, end = _table_lines(lines, position)
    return "".join(lines[:start]) + table + "".join(lines[end:])


def _table_lines(lines: list[str], position: int) -> tuple[int, int]:
    """The lines of the `position`-th `[[vaults]]` table: its header, to its last line that is not blank or a comment
    (those describe the next table)."""
    starts = [n for n, line in enumerate(lines) if _is_vaults_header(line)]
    if position >= len(starts):
        raise ConfigError("the configuration file changed while it was read; run the command again")
    start = starts[position]
    end = next((n for n in range(start + 1, len(lines)) if _is_header(lines[n])), len(lines))
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
        end -= 1
    return start, end


def _without_table(text: str, position: int) -> str:
    """`text` without the `position`-th `[[vaults]]` table; comment and blank lines right above the next table
    stay (they describe that table)."""
    lines = text.splitlines(keepends=True)
    start, end = _table_lines(lines, position)
    # The blank line that separated the table from what came before goes with it (from what follows, for the first).
    if start > 0 and not lines[start - 1].strip():
        start -= 1
    elif start == 0 and end < len(lines) and not lines[end].strip():
        end += 1
    return "".join(lines[:start] + lines[end:])
