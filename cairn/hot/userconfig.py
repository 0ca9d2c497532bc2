"""The user configuration: which vaults the prompt hook serves, in order of precedence, and the security choices
only the user may make.

The file is `$CAIRN_CONFIG` (a full path), else `$XDG_CONFIG_HOME/cairn/config.toml`, else `~/.config/cairn/config.toml`:

    [[vaults]]
    name = "team"                     # required; [a-z0-9][a-z0-9_-]{0,31}; unique
    path = "/home/me/team-lessons"    # required; absolute (~ expanded)
    ref = "refs/remotes/origin/main"  # optional; the served ref (default resolved at serve time)
    scopes = ["python", "git"]        # optional; the vault serves only cards whose scope meets these
    projects = ["/home/me/work/acme"] # optional; the vault serves only when the agent's cwd is under one of these

    [security]
    allow_disabled_rules = []         # lint rule ids the user allows a vault's cairn.toml to disable

The hook must not import `tomllib` (nor `re`): it reads a JSON copy of the parsed file kept in Cairn's state folder
(`config/<hash of the path>.json`, 0600), keyed by the TOML file's path, size, mtime, ctime, inode and device, and
by the Cairn build that read it (`cairn.hot.build_name`: an upgraded Cairn may read a file an older one refused).
Whoever finds that copy missing or stale parses the TOML (importing `tomllib` then, and only then) and writes the
copy; a file that does not parse is cached too, as its error, so a broken config costs every prompt a stat and a
small read, not a TOML parse. The copy is checked like the file (the same validation runs on it); a damaged copy is
re-made.
"""

import os
import sys

from cairn.hot import (
    Record,
    dumps,
    file_in_the_way,
    loads,
    path_text,
    private_folder,
    read_regular,
    sha256_hex,
    xdg_is_set,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from cairn.hot.errors import ConfigError

CACHE_DIR = "config"
CACHE_VERSION = 1
MAX_CONFIG_BYTES = 1 << 20  # a user config is a few lines; a larger file is a mistake, not a config
MAX_VAULTS = 32
MAX_NAME_CHARS = 32
_NAME_FIRST = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_NAME_REST = _NAME_FIRST | frozenset("_-")
_ENTRY_KEYS = ("name", "path", "ref", "scopes", "projects")
_TOP_KEYS = ("vaults", "security")
_SECURITY_KEYS = ("allow_disabled_rules",)


class VaultEntry(Record):
    """One `[[vaults]]` entry, validated.

    name: the vault's name, shown in `name:card-id`.
    path: the vault's folder, absolute, `~` expanded, normalised (symlinks not resolved).
    ref: the served ref as configured, or None (resolved at serve time).
    scopes: the vault serves only cards whose scope meets these tags (empty: no limit).
    projects: absolute folders; the vault serves only when the agent's cwd is in one of them (empty: everywhere).
    """

    __slots__ = ("name", "path", "ref", "scopes", "projects")
    name: str
    path: str
    ref: str | None
    scopes: tuple[str, ...]
    projects: tuple[str, ...]

    def __init__(
        self, name: str, path: str, ref: str | None, scopes: tuple[str, ...], projects: tuple[str, ...]
    ) -> None:
        self._init(name, path, ref, tuple(scopes), tuple(projects))

    def serves_cwd(self, cwd: str | None) -> bool:
        """Whether this vault applies to an agent working in `cwd` (always when `projects` is empty)."""
        from cairn.hot.vault import serves_folder

        return serves_folder(self.projects, cwd)


def add_again(
    entry: VaultEntry, path: str = "PATH", ref: str | None = None, more_projects: "tuple[str, ...]" = ()
) -> str:
    """The command that registers `entry` again at `path` (with `ref`, else its own) in its place, keeping its name,
    precedence, scopes and projects (and adding `more_projects`): a fix that dropped them served a vault limited to
    one project's agents in every project, renamed it under every `--vault NAME` and `NAME:id`, and (`vault remove`
    then `add`) put it after the others. PATH and BRANCH stay as placeholders for the user to fill in."""
    import shlex  # an error's text only, never on the hook's way

    words = ["cairn", "vault", "add", path, "--name", entry.name]
    if ref or entry.ref:
        words += ["--ref", ref or entry.ref or ""]
    for scope in entry.scopes:
        words += ["--scope", scope]
    for project in (*entry.projects, *more_projects):
        words += ["--project", project]
    return shlex.join([*words, "--replace"])


class UserConfig(Record):
    """The whole user configuration: the vaults in order of precedence, and the rules a vault may disable."""

    __slots__ = ("file", "vaults", "allow_disabled_rules")
    file: str
    vaults: tuple[VaultEntry, ...]
    allow_disabled_rules: frozenset[str]

    def __init__(self, file: str, vaults: tuple[VaultEntry, ...], allow_disabled_rules: frozenset[str]) -> None:
        self._init(file, tuple(vaults), frozenset(allow_disabled_rules))


def config_file(env: "Mapping[str, str] | None" = None) -> str:
    """`$CAIRN_CONFIG`, else `$XDG_CONFIG_HOME/cairn/config.toml`, else `~/.config/cairn/config.toml`."""
    env = os.environ if env is None else env
    if env.get("CAIRN_CONFIG"):
        given = _expand_home(env["CAIRN_CONFIG"], env)
        if not os.path.isabs(given):  # the hook runs in the agent's project: a relative one names that project's file
            raise _error(
                f"CAIRN_CONFIG is {env['CAIRN_CONFIG']!r}, a relative path, which the prompt hook would read in the "
                "agent's project folder; set it to the configuration file's full path (~ is expanded)"
            )
        return path_text(given)
    if xdg_is_set("XDG_CONFIG_HOME", env):  # a relative one is ignored: the hook's own folder is the agent's project
        return path_text(env["XDG_CONFIG_HOME"], "cairn", "config.toml")
    return path_text(_home(env), ".config", "cairn", "config.toml")


def load_vaults(env: "Mapping[str, str] | None" = None) -> list[VaultEntry]:
    """The configured vaults in order of precedence; `[]` when there is no config file.

    Raises ConfigError naming the file, the entry and what to fix when the file or an entry is malformed.
    """
    return list(load_config(env).vaults)


def allowed_disabled_rules(env: "Mapping[str, str] | None" = None) -> frozenset[str]:
    """The lint rule ids the user explicitly allows a vault's own `cairn.toml` to disable (empty by default)."""
    return load_config(env).allow_disabled_rules


def leave_withdrawn(stored: str) -> bool:
    """Whether `[security] allow_disabled_rules` is not the one an index was built under (`stored`, its JSON list, kept
    only for an index whose vault switched a security rule off with it): cards those rules refuse may be in it, so
    the hook serves nothing from it until it is rebuilt."""
    try:
        now = sorted(allowed_disabled_rules())
    except Exception:  # a configuration that cannot be read allows nothing (as `cairn index` reads it)
        now = []
    try:
        return bool(loads(stored) != now)
    except ValueError:
        return True


def load_config(env: "Mapping[str, str] | None" = None) -> UserConfig:
    """The whole user configuration, from the cached JSON copy when it is fresh, else from the TOML file."""
    env = os.environ if env is None else env
    file = config_file(env)
    try:
        st = os.stat(file)
    except FileNotFoundError:
        return UserConfig(file, (), frozenset())
    except OSError as exc:
        raise unreadable(file, exc) from None
    key = _cache_key(file, st)
    cached = _read_cache(_cache_file(file, env), key)
    data = cached if cached is not None else _parse_and_cache(file, key, env)
    return _from_data(file, data)


def _cache_key(file: str, st: os.stat_result) -> list[object]:
    """What the cached copy must have been made from: this file as it is now, read by this build of Cairn. The change
    time too: a copy that keeps the file's times (`cp -p`, `rsync -a --inplace`, a restored backup) sets its mtime
    back, never its ctime, and may keep its size and inode with other vaults in it."""
    from cairn.hot import build_name

    return [file, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev, build_name()]


def _parse_and_cache(file: str, key: list[object], env: "Mapping[str, str]") -> "dict[str, Any]":
    cache = _cache_file(file, env)
    try:
        raw = read_regular(file, MAX_CONFIG_BYTES + 1)  # a FIFO in its place must not block the hook
    except OSError as exc:
        raise unreadable(file, exc) from None
    try:
        data = _parse_toml(file, raw, env)
    except Exception as exc:  # ValueError from the checks; anything else from the parser is still a bad file
        message = str(exc) if isinstance(exc, ValueError) else f"{file}: cannot be read ({type(exc).__name__})"
        _write_cache(cache, {"version": CACHE_VERSION, "key": key, "error": message})
        raise _error(message) from None
    _write_cache(cache, {"version": CACHE_VERSION, "key": key, "data": data})
    return data


def _parse_toml(file: str, raw: bytes, env: "Mapping[str, str]", max_vaults: int = MAX_VAULTS) -> "dict[str, Any]":
    if len(raw) > MAX_CONFIG_BYTES:
        raise ValueError(f"{file}: over {MAX_CONFIG_BYTES // 1024} KiB; a user configuration is a few lines")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{file}: not UTF-8 (byte {exc.start}); save it as UTF-8") from None
    text = text.removeprefix("\ufeff")  # a byte order mark (Windows editors write one): unseen, and tomllib refuses it
    # Cold: only when the cached copy is missing or stale. Python 3.10 has no tomllib: its backport is a dependency.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # "at end of document" names no line: an entry the file ends inside (`path = [`, a string left open)
        fix = "complete its last entry, which the file ends inside" if "end of document" in str(exc) else None
        raise ValueError(f"{file}: not valid TOML: {exc}; {fix or 'fix the line it names'}") from None
    data = _validated(file, document, env, max_vaults)
    return data


def _validated(file: str, document: object, env: "Mapping[str, str]", max_vaults: int = MAX_VAULTS) -> "dict[str, Any]":
    """The configuration as plain JSON-ready data, or ValueError naming the file, the entry and the fix. `max_vaults`:
    `cairn vault remove` lifts it, so that a file over the limit can be brought under it."""
    if not isinstance(document, dict):
        raise ValueError(f"{file}: not a TOML document")
    for key in document:
        if key not in _TOP_KEYS:
            raise ValueError(f"{file}: unknown key {key!r}; known: [[vaults]] and [security]")
    vaults = document.get("vaults", [])
    if not isinstance(vaults, list) or not all(isinstance(v, dict) for v in vaults):
        raise ValueError(f'{file}: vaults must be [[vaults]] tables (name = "...", path = "...")')
    if len(vaults) > max_vaults:
        raise ValueError(
            f"{file}: {len(vaults)} vaults; at most {MAX_VAULTS}: take one out with `cairn vault remove NAME`"
        )
    entries: list[dict[str, Any]] = []
    names: set[str] = set()
    paths: dict[str, str] = {}
    for n, raw_entry in enumerate(vaults, 1):
        entry = _validated_entry(file, n, raw_entry, env)
        where = f"{file}: [[vaults]] entry {n} ({entry['name']})"
        if entry["name"] in names:
            raise ValueError(f"{where}: the name {entry['name']!r} is used twice; give each vault its own name")
        names.add(entry["name"])
        try:
            folder = os.path.realpath(entry["path"])  # a symlink to a listed vault is that vault (`vault add` agrees)
        except ValueError:  # a path this locale cannot name (`文` under LANG=en_US.ISO-8859-1): the environment's
            folder = entry["path"]  # failure, not the file's, which the copy would keep for every later prompt
        if folder in paths:
            raise ValueError(
                f"{where}: the path {entry['path']!r} is already vault {paths[folder]!r}; list a vault once"
            )
        paths[folder] = entry["name"]
        entries.append(entry)
    security = document.get("security", {})
    if not isinstance(security, dict):
        raise ValueError(f"{file}: [security] must be a table")
    for key in security:
        if key not in _SECURITY_KEYS:
            raise ValueError(f"{file}: unknown key {key!r} in [security]; known: {', '.join(_SECURITY_KEYS)}")
    allowed = security.get("allow_disabled_rules", [])
    if not isinstance(allowed, list) or not all(isinstance(r, str) and r.strip() for r in allowed):
        raise ValueError(f'{file}: [security] allow_disabled_rules must be a list of rule ids, e.g. ["secret"]')
    return {"vaults": entries, "allow_disabled_rules": sorted({r.strip() for r in allowed})}


def _validated_entry(file: str, n: int, entry: "dict[str, Any]", env: "Mapping[str, str]") -> "dict[str, Any]":
    name = entry.get("name")
    label = f"{file}: [[vaults]] entry {n}" + (f" ({name})" if isinstance(name, str) and is_vault_name(name) else "")
    for key in entry:
        if key not in _ENTRY_KEYS:
            raise ValueError(f"{label}: unknown key {key!r}; known: {', '.join(_ENTRY_KEYS)}")
    if not isinstance(name, str) or not is_vault_name(name):
        given = "is required:" if name is None else "must be"  # TOML has no None: the entry has no name at all
        raise ValueError(
            f"{label}: name {given} 1 to {MAX_NAME_CHARS} characters of a-z, 0-9, '_' and '-', starting with a"
            f' letter or digit (e.g. name = "team"){"" if name is None else f", not {name!r}"}'
        )
    path = entry.get("path")
    if not isinstance(path, str) or not path.strip():
        given = "is required" if path is None or isinstance(path, str) else f"must be a folder's path, not {path!r}"
        raise ValueError(f'{label}: path {given}: the vault\'s folder, e.g. path = "~/team-lessons"')
    path = _absolute(label, "path", path, env)
    ref = entry.get("ref")
    if ref is not None and not _is_ref(ref):
        raise ValueError(f'{label}: ref must be a ref name such as "refs/remotes/origin/main", not {ref!r}')
    scopes = _scope_tags(entry.get("scopes", []))
    if scopes is None:
        raise ValueError(f'{label}: scopes must be a list of scope tags, e.g. scopes = ["python", "git"]')
    projects = entry.get("projects", [])
    if not isinstance(projects, list) or not all(isinstance(p, str) and p.strip() for p in projects):
        raise ValueError(f'{label}: projects must be a list of folders, e.g. projects = ["~/work/acme"]')
    return {
        "name": name,
        "path": path,
        "ref": ref,
        "scopes": scopes,
        "projects": [_absolute(label, "projects", p, env) for p in projects],
    }


def _from_data(file: str, data: "dict[str, Any]") -> UserConfig:
    vaults = tuple(
        VaultEntry(e["name"], e["path"], e["ref"], tuple(e["scopes"]), tuple(e["projects"])) for e in data["vaults"]
    )
    return UserConfig(file, vaults, frozenset(data["allow_disabled_rules"]))


def is_vault_name(name: str) -> bool:
    """Whether `name` has a vault name's form (it may name no configured vault)."""
    return 0 < len(name) <= MAX_NAME_CHARS and name[0] in _NAME_FIRST and all(c in _NAME_REST for c in name)


def _scope_tags(scopes: object) -> "list[str] | None":
    """The tags of a `scopes` list, each item read as `cairn vault add --scope` reads one (`serve.split_tags`: NFKC,
    so `ｇｉｔ`, as an input method types it, is the cards' `git`; read as it was, the vault served nothing); None
    when it is no list of printable tags."""
    if not isinstance(scopes, list) or not all(isinstance(s, str) and _printable(s) for s in scopes):
        return None
    if not scopes:
        return []
    from cairn.hot.serve import split_tags  # a vault limited to scopes only

    tags = [split_tags(s) for s in scopes]
    return [tag for item in tags for tag in item] if all(tags) else None


def _printable(text: str) -> bool:
    return text.isprintable() and len(text) <= 200


def _is_ref(ref: object) -> bool:
    """A ref name git could hold: printable, no spaces, no `..`, no empty or dot-leading part, not absolute."""
    if not isinstance(ref, str) or not ref or len(ref) > 255 or not ref.isprintable():
        return False
    if any(c in ref for c in " ~^:?*[\\") or ".." in ref or ref.startswith("/") or ref.endswith((".", "/", ".lock")):
        return False
    return all(part and not part.startswith(".") for part in ref.split("/"))


def _absolute(label: str, key: str, path: str, env: "Mapping[str, str]") -> str:
    if not path.isprintable():
        raise ValueError(f"{label}: {key} {path!r} holds control characters")
    expanded = _expand_home(path.strip(), env)
    if not os.path.isabs(expanded):
        raise ValueError(f"{label}: {key} {path!r} is not absolute; write the full path (~ is expanded)")
    return path_text(os.path.normpath(expanded))


def _expand_home(path: str, env: "Mapping[str, str]") -> str:
    if path == "~" or path.startswith("~/"):
        return _home(env) + path[1:]
    return path


def _home(env: "Mapping[str, str]") -> str:
    home = env.get("HOME") or os.path.expanduser("~")
    if not home or home[:1] == "~":
        raise _error("cannot tell the home folder (HOME is not set); set CAIRN_CONFIG to the config file")
    return home


def _state_folder(env: "Mapping[str, str]") -> str:
    """`cairn.hot.state_folder` for `env`: a relative CAIRN_STATE_DIR is ignored (a folder of the agent's project,
    whose parsed-configuration file would choose the vaults served)."""
    if xdg_is_set("CAIRN_STATE_DIR", env):
        return path_text(env["CAIRN_STATE_DIR"])
    if xdg_is_set("XDG_STATE_HOME", env):
        return path_text(env["XDG_STATE_HOME"], "cairn")
    return path_text(_home(env), ".local", "state", "cairn")


def _cache_file(file: str, env: "Mapping[str, str]") -> str:
    digest = sha256_hex(file.encode("utf-8", "surrogateescape"))[:24]
    return os.path.join(_state_folder(env), CACHE_DIR, f"{digest}.json")


def _read_cache(cache: str, key: list[object]) -> "dict[str, Any] | None":
    """The cached data for this key; raises the cached error; None when missing, stale or damaged."""
    try:
        # Only a copy this user wrote: one another user wrote, in a state folder they own, would choose the vaults
        # served (the TOML file is read instead, and the copy made again where the folder lets this user write).
        stored = loads(read_regular(cache, 4 * MAX_CONFIG_BYTES, own=True))
    except (OSError, ValueError, RecursionError):  # RecursionError: nested past the parser (`[[[...`)
        return None
    if not isinstance(stored, dict) or stored.get("version") != CACHE_VERSION or stored.get("key") != key:
        return None
    error = stored.get("error")
    if isinstance(error, str) and error:
        raise _error(error)
    data: Any = stored.get("data")
    try:  # the copy gets the file's own checks: a damaged or hand-edited copy is re-made from the TOML
        file = str(key[0])
        checked = _validated(file, {"vaults": data["vaults"], "security": _security_of(data)}, {"HOME": "/"})
    except Exception:
        return None
    return checked if checked == data else None


def _security_of(data: "dict[str, Any]") -> "dict[str, Any]":
    return {"allow_disabled_rules": data["allow_disabled_rules"]}


def _write_cache(cache: str, stored: "dict[str, Any]") -> None:
    """Write the cached copy (0600, atomically); a state folder that cannot be written is no error."""
    from cairn.hot.session import write_private

    try:
        private_folder(os.path.dirname(cache))  # the state folder too, when this makes it: 0700, as every path makes it
        write_private(cache, dumps(stored, ensure_ascii=False, sort_keys=True).encode("utf-8"))
    except OSError:
        pass


def unreadable(file: str, exc: OSError) -> "ConfigError":
    """The error for a configuration `file` that cannot be read; a file where a folder of its path goes (`~/.config/
    cairn` made a file) is named, with the fix: "Not a directory" alone named no file to move."""
    in_the_way = file_in_the_way(file) if isinstance(exc, NotADirectoryError) else None
    if in_the_way is not None:
        return _error(
            f"{file}: cannot read the user configuration: {in_the_way} is a file, not a folder; move it away, or set "
            "CAIRN_CONFIG to a file elsewhere"
        )
    return _error(f"{file}: cannot read the user configuration ({exc.strerror or exc})")


def _error(message: str) -> "ConfigError":
    from cairn.hot.errors import ConfigError  # imported when raised: a hook with a good config never needs it

    return ConfigError(message)
