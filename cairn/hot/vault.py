"""Finding vaults. Interactive commands: `--vault`, else `CAIRN_VAULT`, else the enclosing vault of the current
directory (`locate_vault`, `find_vault`), then the configured vaults (`cairn/cli/common.py`).

The prompt hook never discovers: trust is explicit. `hook_vaults` gives the vaults named by `--vault` or
`CAIRN_VAULT` (a configured vault's name, or a folder by its absolute path), else every vault of the user configuration
(`cairn.hot.userconfig`), and each must hold Cairn's marker, `cairn.toml`, beside `cards/`. A repository with a
`cards/` folder that the agent happens to work in is never served.

`locate_vault` finds a vault with path strings (the hook's way: `pathlib` would cost every prompt its imports);
`find_vault` gives cold code the same vault as a `Vault` of `Path`s.

The served ref (`served_ref`, `head_commit`, `git_dir`): commits and refs of a git work tree, read from `.git`
files with the standard library alone (here rather than in a module of their own: the hook needs both on every
prompt, and each module it imports costs every prompt). `head_commit` is what HEAD names; `served_ref` is the ref a
vault serves to agents (the reviewed branch, not whatever is checked out). Handles a `.git` folder or a `.git` file
(worktrees, submodules), symbolic and detached HEAD, loose refs and packed-refs, and a worktree's `commondir`.
Anything it cannot read (an unborn branch, a reftable repository, a damaged file) gives None: callers treat that as
"unknown" and never fail because of it.
"""

import os

from cairn.hot import Record, exists, is_dir, is_file, open_regular, path_text, read_regular, resolve

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence
    from pathlib import Path

    from cairn.hot.errors import VaultNotFound
    from cairn.hot.userconfig import VaultEntry

CARDS_DIR = "cards"
MARKER = "cairn.toml"
# What every reader of a vault says when its cairn.toml is a folder (committed, staged or in the working tree), after
# the file's path.
MARKER_IS_FOLDER = (
    "a folder, not a file: a vault's settings are one TOML file; move the folder away and put a cairn.toml file in "
    "its place (an empty one will do)"
)


def is_url(value: str) -> bool:
    """Whether `value` names something remote rather than a local path: a URL (`https://host/team/lessons.git`) or
    git's scp-like address (`ann@host:team/lessons.git`), and no such file here. Cairn fetches nothing it is given.
    Read without `re`: the hook reads CAIRN_VAULT too."""
    scheme, sep, _ = value.partition("://")
    url = bool(sep) and scheme[:1].isalpha() and all(c.isascii() and (c.isalnum() or c in "+.-") for c in scheme)
    user, at, rest = value.partition("@")
    host, colon, _ = rest.partition(":")
    scp = bool(at and colon) and all(part and all(c.isalnum() or c in "_.-" for c in part) for part in (user, host))
    return (url or scp) and not os.path.lexists(value)


class Vault(Record):
    """A vault on disk (a plain record: the hook finds vaults too, without `dataclasses`).

    root: the folder that holds `cards/` (absolute, symlinks resolved).
    git_root: the enclosing git work tree, or None when the vault is not in one.
    prefix: the vault's path inside the git tree, `` or `sub/dir/` (always with a trailing slash).
    """

    __slots__ = ("root", "git_root", "prefix")
    root: "Path"
    git_root: "Path | None"
    prefix: str

    def __init__(self, root: "Path", git_root: "Path | None", prefix: str) -> None:
        self._init(root, git_root, prefix)

    @property
    def cards_dir(self) -> "Path":
        return self.root / CARDS_DIR

    def card_path(self, card_id: str) -> "Path":
        return self.root / CARDS_DIR / f"{card_id}.md"


class VaultDirs(Record):
    """Where a vault is, as path strings (`locate_vault`); the same fields as `Vault`."""

    __slots__ = ("root", "git_root", "prefix")
    root: str
    git_root: str | None
    prefix: str

    def __init__(self, root: str, git_root: str | None, prefix: str) -> None:
        self._init(root, git_root, prefix)


class ServedVault(Record):
    """A vault the hook may serve: where it is, and what the user configured for it.

    name: the configured name (ids are shown as `name:id`), or None for a vault given by path that the user
    configuration does not list (ids shown bare). source: `--vault`, `CAIRN_VAULT` or `config`.
    ref, scopes, projects: from the configuration entry (None / empty for an unlisted vault).
    """

    __slots__ = ("name", "dirs", "ref", "scopes", "projects", "source")
    name: str | None
    dirs: VaultDirs
    ref: str | None
    scopes: tuple[str, ...]
    projects: tuple[str, ...]
    source: str

    def __init__(
        self,
        name: str | None,
        dirs: VaultDirs,
        ref: str | None,
        scopes: tuple[str, ...],
        projects: tuple[str, ...],
        source: str,
    ) -> None:
        self._init(name, dirs, ref, tuple(scopes), tuple(projects), source)

    def serves_cwd(self, cwd: str | None) -> bool:
        """Whether this vault applies to an agent working in `cwd` (always when it lists no projects)."""
        return serves_folder(self.projects, cwd)


def serves_folder(projects: "Sequence[str]", cwd: str | None) -> bool:
    """Whether a vault limited to `projects` (none: no limit) applies to an agent working in `cwd`."""
    if not projects:
        return True
    if not cwd:
        return False
    # In bytes, as the system names folders: a project `/srv/项目` read from the UTF-8 configuration has no name in
    # an ASCII locale's encoding (`LC_ALL=POSIX`), where the hook failed with UnicodeEncodeError and served nothing
    here = os.path.realpath(os.fsencode(cwd))
    return any(_within(here, os.path.realpath(p.encode("utf-8", "surrogateescape"))) for p in projects)


def hook_vaults(
    explicit: str | None = None, env: "Mapping[str, str] | None" = None
) -> tuple[list[ServedVault], list[tuple[str, str]]]:
    """The vaults the prompt hook serves, in order of precedence, and the configured ones it must skip.

    `explicit` (`--vault`) or `$CAIRN_VAULT`: that one vault (a configured vault's name when it has no slash, else a
    folder by its absolute path: a relative one would be the agent's); VaultNotFound when the configuration lists no
    vault of that name, or the folder is not a vault with `cairn.toml`. Otherwise every
    `[[vaults]]` entry of the user configuration; an entry that is not a usable vault is skipped, as
    (name, why), so one moved folder does not silence the others. No configuration: VaultNotFound with the fix.
    A configuration that cannot be read raises ConfigError whichever way the vault is given (the hook logs it and
    serves nothing): a vault it lists, named by path, would be served without its ref, scopes and projects.
    The agent's working directory is never searched.
    """
    from cairn.hot.userconfig import config_file, load_vaults

    env = os.environ if env is None else env
    given, source = (explicit, "--vault") if explicit else (env.get("CAIRN_VAULT") or None, "CAIRN_VAULT")
    if given:
        if is_url(given):  # not "a relative path" (`https://host/x`) nor "names no vault" (`ann@host:x`)
            raise _url_given(f"{source} {given!r}", given)
        if os.sep not in given and "/" not in given and given[:1] != "~":
            # A name: the configured vault's, or nothing. Read as a folder it would be one in the hook's own folder,
            # the agent's project (a vault removed from the configuration, or a configuration that does not parse,
            # made `--vault team` serve the `team/` folder of whatever repository the agent works in).
            entries = load_vaults(env)  # ConfigError: the hook logs it and serves nothing
            named = next((e for e in entries if e.name == given), None)
            if named is None:
                known = ", ".join(e.name for e in entries) or "none"
                raise _not_found(
                    f"{source} {given!r} names no vault configured in {config_file(env)} (configured: {known}); give"
                    " a configured vault's name or a vault's absolute path (`cairn vault add PATH --name NAME`)"
                )
            return [_served(named, source, strict=True)], []
        if not os.path.isabs(_expanduser(path_text(given))):
            raise _not_found(
                f"{source} {given!r} is a relative path, which the hook would read from the agent's folder; give the"
                " vault's absolute path or a configured vault's name"
            )
        listed = load_vaults(env)  # ConfigError: as below (its limits on this vault are unknown)
        dirs = locate_served(given)  # a folder given: never the agent's folder, never a search
        real = os.path.realpath(dirs.root)
        match = next((e for e in listed if os.path.realpath(e.path) == real), None)
        if match is not None:
            return [ServedVault(match.name, dirs, match.ref, match.scopes, match.projects, source)], []
        return [ServedVault(None, dirs, None, (), (), source)], []
    entries = load_vaults(env)  # ConfigError: the hook logs it and serves nothing
    if not entries:
        raise _not_found(
            f"no vault to serve: none is configured in {config_file(env)}; add one with `cairn vault add PATH`"
            " (the hook never serves a vault found from the agent's folder)"
        )
    served: list[ServedVault] = []
    skipped: list[tuple[str, str]] = []
    for entry in entries:
        try:
            served.append(_served(entry, "config", strict=False))
        except Exception as exc:  # VaultNotFound, an unreadable folder: skip this one, serve the others
            skipped.append((entry.name, str(exc)))
    return served, skipped


def _served(entry: "VaultEntry", source: str, strict: bool) -> ServedVault:
    root = entry.path
    if not is_dir(os.path.join(root, CARDS_DIR)):
        left_out = left_out_of_work_tree(root)
        if left_out is not None:
            problem, command = left_out
            raise _not_found(
                f"configured vault {entry.name!r} at {root}: {problem}; check it out (`{command}`) and the hook serves it"
            )
        misnamed = misnamed_cards(root)
        if misnamed is not None:  # not gone: `vault add NEW_PATH` would refuse the folder for the same reason
            problem, command = misnamed
            raise _not_found(
                f"configured vault {entry.name!r} at {root}: {problem}; rename the folder (`{command}`) and commit, "
                "and the hook serves it"
            )
        if is_file(os.path.join(root, MARKER)):  # not moved: a vault with no card yet (git records no empty folder)
            raise _not_found(
                f"configured vault {entry.name!r} at {root}: it has {MARKER} but no cards/ folder; make it "
                f"(`{make_cards_folder(root)}`) and the hook serves it"
            )
        raise _not_found(configured_vault_gone(entry))
    _require_marker(root, entry.name)
    return ServedVault(entry.name, _vault_at(resolve(root)), entry.ref, entry.scopes, entry.projects, source)


def configured_vault_gone(entry: "VaultEntry") -> str:
    """What to say of a configured vault whose folder is not there or holds no cards/ (moved, deleted): the
    configuration is what to fix, never `cairn init` at the old path, which would make a new, empty vault. The vault
    added again keeps its ref, scopes and projects (`add_again`)."""
    from cairn.hot.userconfig import add_again

    why = "is not a folder" if not is_dir(entry.path) else "has no cards/ folder"
    return (
        f"configured vault {entry.name!r} at {entry.path} {why} (moved or deleted?); if it moved: "
        f"`{add_again(entry, 'NEW_PATH')}`; if it is gone: `cairn vault remove {entry.name}`"
    )


def find_configured_vault(entry: "VaultEntry") -> Vault:
    """`find_vault` for the configured vault `entry`; a folder that is gone says how to fix the configuration."""
    if not is_dir(entry.path):
        raise _not_found(configured_vault_gone(entry))
    return find_vault(entry.path)


def locate_served(given: str) -> VaultDirs:
    """The vault folder `given` as the prompt hook serves one: `locate_vault`'s (its cards/ a folder in the work
    tree), with Cairn's marker beside it; else VaultNotFound saying what to do. Every way an agent is served (the
    hook, the MCP tools) and every command that says what it gets (`cairn recall`, `explain`) asks this, so none
    serves a folder another refuses."""
    dirs = locate_vault(given)
    _require_marker(dirs.root, given)
    return dirs


def _require_marker(root: str, given: str) -> None:
    marker = os.path.join(root, MARKER)
    if not is_file(marker):
        if is_dir(marker):  # asked only when the file is not there: one stat a prompt, as before
            raise _not_found(f"{marker}: {MARKER_IS_FOLDER}")
        # not `cairn init`, which refuses a folder that is not empty
        raise _not_found(
            f"{given!r} has no {MARKER}: the hook serves only vaults with Cairn's marker file; make it, an empty file "
            f"will do (`{make_marker(root)}`)"
        )


def make_marker(root: str) -> str:
    """The command that gives the vault folder `root` Cairn's marker: an empty cairn.toml, committed (so a clone
    has it too)."""
    git = f"git -C {shell_word(root)}"
    return f"touch {shell_word(os.path.join(root, MARKER))} && {git} add {MARKER} && {git} commit -m 'Cairn marker'"


def _within(here: bytes, root: bytes) -> bool:
    sep = os.sep.encode()
    return here == root or here.startswith(root.rstrip(sep) + sep)


def find_vault(explicit: "str | os.PathLike[str] | None" = None, cwd: "Path | None" = None) -> Vault:
    """Locate the vault; raises VaultNotFound with what to do next."""
    return _as_vault(locate_vault(explicit, cwd))


def vault_in(folder: "str | os.PathLike[str]") -> Vault:
    """The vault whose marker is in `folder`, whatever stands at its cards/ (`find_vault` wants a folder there): a
    commit that makes cards/ a file leaves none, and lint, which refuses that commit, judges it in this vault."""
    return _as_vault(_vault_at(resolve(os.fspath(folder))))


def _as_vault(found: VaultDirs) -> Vault:
    from pathlib import Path

    return Vault(Path(found.root), None if found.git_root is None else Path(found.git_root), found.prefix)


def locate_vault(
    explicit: "str | os.PathLike[str] | None" = None, cwd: "str | os.PathLike[str] | None" = None
) -> VaultDirs:
    """`find_vault` with path strings; raises VaultNotFound with what to do next."""
    given = explicit or os.environ.get("CAIRN_VAULT")
    if given:
        root = _expanduser(path_text(os.fspath(given)))
        if not is_dir(os.path.join(root, CARDS_DIR)):
            _raise_if_left_out(root, repr(str(given)))
        if not is_dir(root):
            shown = f"vault {str(given)!r}" if explicit else f"CAIRN_VAULT {str(given)!r}"
            if is_url(str(given)):  # as `--vault` refuses it (`user@host:path` is no list of vaults); `cairn init` too
                raise _url_given(shown, str(given))
            if not explicit and os.pathsep in str(given):
                raise _not_found(
                    f"CAIRN_VAULT names one vault, not a list: {str(given)!r}; set it to a single vault's folder"
                )
            if exists(root):  # a file, a FIFO, a device: `cairn init` refuses each, so that is no fix
                parent = os.path.dirname(resolve(root))
                fix = f"pass the vault itself: {parent}" if _holds_a_vault(parent) else "give a vault's folder"
                raise _not_found(f"{shown} is a file, not a folder; {fix}")
            raise _not_found(f"{shown} is not a folder; create one with `cairn init {shell_word(given)}`")
        if not is_dir(os.path.join(root, CARDS_DIR)):
            _raise_if_cards_misnamed(root, repr(str(given)))
            if is_file(os.path.join(root, MARKER)):  # `cairn init PATH`, the fix said below, refuses the folder
                _raise_if_no_cards(root, repr(str(given)))
            real = resolve(root)
            parent = os.path.dirname(real)
            if os.path.basename(real) == CARDS_DIR and _holds_a_vault(parent):
                raise _not_found(f"{str(given)!r} is a vault's cards/ folder; pass the vault itself: {parent}")
            if os.path.basename(real) == ".git" and _holds_a_vault(parent):  # not bare: its work tree is the vault
                raise _not_found(f"{str(given)!r} is a vault's .git folder; pass the vault itself: {parent}")
            if is_bare_repository(real):  # a mirror or a server's copy: its commits hold cards, no folder does
                raise _not_found(
                    f"{str(given)!r} is a bare git repository, with no work tree to hold cards/; clone it "
                    f"(`git clone {shell_word(real)} FOLDER`) and give the clone's folder"
                )
            raise _not_found(f"{str(given)!r} has no cards/ folder; create a vault with `cairn init PATH`")
        return _vault_at(resolve(root))
    folder = start = resolve(os.getcwd() if cwd is None else os.fspath(cwd))
    while True:
        if _holds_a_vault(folder):
            return _vault_at(folder)
        parent = os.path.dirname(folder)
        if _is_git_root(folder) or parent == folder:
            break
        folder = parent
    _raise_if_sparse_vault(start, folder)
    raise _not_found("no vault here; pass --vault PATH, set CAIRN_VAULT, or create one with `cairn init PATH`")


def _raise_if_sparse_vault(start: str, top: str) -> None:
    """A vault (its `cairn.toml`) between `start` and `top` whose cards/ git's sparse checkout leaves out, is named
    `Cards/`, or is missing is a vault all the same: raise what `--vault` would say of it, not "no vault here"."""
    folder = start
    while True:
        if is_file(os.path.join(folder, MARKER)):
            _raise_if_left_out(folder, folder)
            _raise_if_cards_misnamed(folder, folder)
            _raise_if_no_cards(folder, folder)
        parent = os.path.dirname(folder)
        if folder == top or parent == folder:
            return
        folder = parent


def shell_word(path: "str | os.PathLike[str]") -> str:
    """`path` as one word of a command to paste (a space, a quote, a leading dash: `my lessons`, `-notes`), for every
    command Cairn tells a user to run."""
    import shlex  # an error's text only, never on the hook's way

    text = os.fspath(path)
    return shlex.quote(f"./{text}" if text.startswith("-") else text)


def _url_given(shown: str, url: str) -> "VaultNotFound":
    """The error for a URL given where a vault's folder goes (`shown`: what gave it, `vault 'URL'`)."""
    return _not_found(
        f"{shown} is a URL; Cairn reads local folders and fetches nothing: get it first (`git clone "
        f"{shell_word(url)} FOLDER`), then give that folder"
    )


def _not_found(message: str) -> "VaultNotFound":
    from cairn.hot.errors import VaultNotFound  # imported when raised: a hook that finds its vault never needs it

    return VaultNotFound(message)


def _expanduser(path: str) -> str:
    """`str(Path(path).expanduser())` of a path as `path_text` gives it."""
    if path[:1] != "~":
        return path
    if os.name != "posix":  # pragma: no cover - pathlib knows Windows paths
        from pathlib import Path

        return str(Path(path).expanduser())
    first, _, rest = path.partition("/")
    home = os.path.expanduser(first)
    if home[:1] == "~":
        raise RuntimeError("Could not determine home directory.")
    return path_text(home, rest) if rest else path_text(home)


def _holds_a_vault(folder: str) -> bool:
    """Whether discovery takes `folder` for a vault: it has `cards/`, and `cairn.toml` or is a git work tree."""
    return is_dir(os.path.join(folder, CARDS_DIR)) and (
        is_file(os.path.join(folder, "cairn.toml")) or _is_git_root(folder)
    )


def _raise_if_left_out(root: str, shown: str) -> None:
    """Raise VaultNotFound when git's sparse checkout leaves the vault `root` (given as `shown`) or its cards/ out."""
    left_out = left_out_of_work_tree(root)
    if left_out is not None:
        from cairn.hot.errors import VaultLeftOut

        problem, command = left_out
        raise VaultLeftOut(f"{shown}: {problem}; check it out (`{command}`), then run this again")


def _raise_if_cards_misnamed(root: str, shown: str) -> None:
    """Raise CardsMisnamed when the folder `root` (given as `shown`) holds its cards in a folder named in another case
    (`misnamed_cards`): on a file system that tells case apart the vault was none, and a command went on to the one
    configured vault, `cairn add` writing into it."""
    misnamed = misnamed_cards(root)
    if misnamed is not None:
        from cairn.hot.errors import CardsMisnamed

        problem, command = misnamed
        raise CardsMisnamed(f"{shown}: {problem}; rename the folder (`{command}`) and commit, then run this again")


def misnamed_cards(root: str) -> tuple[str, str] | None:
    """When the folder `root`, which has no cards/, holds its cards in a folder named in another case (`Cards/`, as
    macOS, which opens it as cards/, lets a user name it): (what is wrong, the command that renames it); else None."""
    try:
        names = sorted(n for n in os.listdir(root) if n.lower() == CARDS_DIR and is_dir(os.path.join(root, n)))
    except OSError:
        return None
    if not names:
        return None
    command = f"mv {shell_word(os.path.join(root, names[0]))} {shell_word(os.path.join(root, CARDS_DIR))}"
    return (
        f"its cards are in {names[0]}/, not cards/: git, the index and the hook read cards/ alone, lowercase",
        command,
    )


def _raise_if_no_cards(root: str, shown: str) -> None:
    """Raise VaultLeftOut when the folder `root` (given as `shown`) holds Cairn's marker but no cards/ (a clone of a
    vault with no card yet: git records no empty folder): a command run there went on to the one configured vault,
    unnamed (`cairn index` said "20 cards" of it, `cairn add` wrote into it), and `--vault` told to `cairn init` it,
    which refuses a folder that is not empty."""
    if not is_dir(os.path.join(root, CARDS_DIR)):
        from cairn.hot.errors import VaultLeftOut

        if os.path.lexists(os.path.join(root, CARDS_DIR)):
            raise VaultLeftOut(
                f"{shown}: its cards/ is not a folder (a file or a symlink), so it is no vault; move it away and make "
                f"the folder (`{make_cards_folder(root)}`), then restore the cards from git if a commit replaced them"
            )
        raise VaultLeftOut(
            f"{shown}: it has {MARKER} but no cards/ folder, so it is no vault (git records no empty folder: a vault "
            f"with no card yet has none in a clone); make it (`{make_cards_folder(root)}`), "
            "or pass --vault NAME to work on another vault"
        )


def make_cards_folder(root: str) -> str:
    """The command that makes the vault folder `root`'s cards/: `mkdir`, after moving away a file or a symlink that
    stands in its place (`mkdir` alone fails there: "File exists")."""
    cards = os.path.join(root, CARDS_DIR)
    make = f"mkdir {shell_word(cards)}"
    return f"mv {shell_word(cards)} {shell_word(cards + '.not-a-folder')} && {make}" if os.path.lexists(cards) else make


def left_out_of_work_tree(root: str) -> tuple[str, str] | None:
    """When the vault folder `root`, or its cards/, is missing because git's sparse checkout leaves it out of the
    work tree, or `root` is a submodule git has not checked out: (what is wrong, the command that checks it out);
    else None. Its cards are in its commits all the same, but a vault is found by its folder (and `cairn init` in
    an empty submodule's folder would make a second repository in its place)."""
    if is_dir(root) and not is_dir(os.path.join(root, CARDS_DIR)):
        unchecked = _submodule_update(root)
        if unchecked is not None:
            return unchecked
    missing = root if not is_dir(root) else os.path.join(root, CARDS_DIR)
    if is_dir(missing):
        return None
    folder = os.path.abspath(missing)
    while not is_dir(folder):
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
    found = _git_root_of(folder)
    if found is None:
        return None
    folder = found
    if not sparse_checkout(folder):
        return None
    from shlex import quote  # only here, when a vault's folder is missing: the command runs as printed

    rel = os.path.relpath(os.path.abspath(missing), folder).replace(os.sep, "/")
    command = f"git -C {quote(folder)} sparse-checkout add {quote(rel)}"
    return f"{rel} is left out of the work tree by git's sparse checkout", command


def sparse_checkout(work_tree: "str | os.PathLike[str]") -> bool:
    """Whether git's sparse checkout is on in `work_tree`: some committed files may be left out of its folders."""
    gdir = git_dir(work_tree)
    if gdir is None or not is_file(os.path.join(gdir, "info", "sparse-checkout")):
        return False
    on = False  # `git sparse-checkout` writes the setting to the work tree's own config.worktree, else to config
    for config in (os.path.join(_common_dir(gdir), "config"), os.path.join(gdir, "config.worktree")):
        for section, key, value in _config_entries(config):
            if section == "core" and key == "sparsecheckout":
                on = value is None or value.lower() in ("true", "yes", "on", "1")
    return on


def _config_entries(path: str) -> "list[tuple[str, str, str | None]]":
    """The variables of a git config file (a repository's `config`, a `.gitmodules`) as git reads them: (section, key,
    value), the section `core` or `remote.NAME` (its name in lower case, a subsection's as written), the key in lower
    case, the value unquoted and its comment left out (None for a key without `=`, which git reads as true). Lines
    continued with a backslash, and included files, are not followed."""
    entries: list[tuple[str, str, str | None]] = []
    section = ""
    for line in (_read_text(path) or "").splitlines():
        line = line.strip()
        if line.startswith("["):  # `[core]`, `[remote "origin"]`, a variable may follow on the line
            head, _, line = line[1:].partition("]")
            name, quote, sub = head.partition('"')
            section = head.strip().lower()
            if quote:
                subsection = _config_value(sub.rpartition('"')[0])
                section = f"{name.strip().lower()}.{subsection}"
            line = line.strip()
        if line and line[0] not in "#;":
            key, eq, value = line.partition("=")
            entries.append((section, key.strip().lower(), _config_value(value) if eq else None))
    return entries


def _config_value(raw: str) -> str:
    """A git config value as git reads it: quotes taken off, escapes read, a comment (`#`, `;`) out of quotes cut."""
    out: list[str] = []
    quoted = escaped = False
    for ch in raw.strip():
        if escaped:
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(ch, ch))
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == '"':
            quoted = not quoted
        elif ch in "#;" and not quoted:
            break
        else:
            out.append(ch)
    return "".join(out).strip()


def _git_root_of(folder: str) -> str | None:
    """The work tree `folder` is in (the first folder up from it that holds `.git`), or None."""
    while not _is_git_root(folder):
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
    return folder


def _submodule_update(folder: str) -> tuple[str, str] | None:
    """When `folder` is a submodule its repository's `.gitmodules` names and git has not checked it out (a clone
    without --recurse-submodules leaves it an empty folder): (what is wrong, the command that checks it out)."""
    if _is_git_root(folder):
        return None
    outer = _git_root_of(os.path.dirname(folder))
    if outer is None:
        return None
    rel = os.path.relpath(folder, outer).replace(os.sep, "/")
    for section, key, value in _config_entries(os.path.join(outer, ".gitmodules")):
        if section.startswith("submodule.") and key == "path" and value == rel:
            return f"{rel} is a git submodule that is not checked out", (
                f"git -C {shell_word(outer)} submodule update --init -- {shell_word(rel)}"
            )
    return None


def is_bare_repository(folder: str) -> bool:
    """Whether `folder` is a git directory itself (`git clone --bare`), not a work tree."""
    return is_file(os.path.join(folder, "HEAD")) and all(is_dir(os.path.join(folder, d)) for d in ("objects", "refs"))


def _is_git_root(folder: str) -> bool:
    return exists(os.path.join(folder, ".git"))


def _vault_at(root: str) -> VaultDirs:
    folder = root
    while True:
        if _is_git_root(folder):
            rel = root[len(folder) :].lstrip(os.sep).replace(os.sep, "/")
            return VaultDirs(root=root, git_root=folder, prefix=rel + "/" if rel else "")
        parent = os.path.dirname(folder)
        if parent == folder:
            return VaultDirs(root=root, git_root=None, prefix="")
        folder = parent


def worktree_card_files(vault: Vault) -> "Iterator[Path]":
    """Every file under the vault's `cards/` in the working tree; symlinks are listed, never followed."""
    from pathlib import Path

    if os.path.islink(vault.cards_dir):  # `cards` itself a symlink: listed, not walked (git holds no card under it)
        yield vault.cards_dir
        return
    for dirpath, dirnames, filenames in os.walk(vault.cards_dir, followlinks=False):
        dirnames.sort()
        folder = Path(dirpath)
        for name in sorted(filenames):
            yield folder / name
        for name in dirnames:
            if (folder / name).is_symlink():
                yield folder / name


def worktree_rel(vault: Vault, file: "Path") -> str:
    """`file`'s path in the vault, `/`-separated, named as git names it (UTF-8). In a locale whose file name encoding
    is not UTF-8 (`LC_ALL=POSIX`), Python names `cards/数据库/` with escaped bytes, which read as a name that is not
    UTF-8 text, held invisible characters and was not the id the index gives the same card."""
    return os.fsencode(file.relative_to(vault.root).as_posix()).decode("utf-8", "surrogateescape")


# The served ref: commits and refs from `.git` files (see the module docstring).

_MAX_REF_HOPS = 5
_HEX = frozenset("0123456789abcdef")


def git_dir(work_tree: str | os.PathLike[str]) -> str | None:
    """The git directory of a work tree: `.git` itself, or where a `.git` file's `gitdir:` line points."""
    dot_git = os.path.join(os.fspath(work_tree), ".git")
    if os.path.isdir(dot_git):
        return dot_git
    text = _read_text(dot_git)
    if text is None or not text.startswith("gitdir:"):
        return None
    target = text[len("gitdir:") :].strip()
    if not target:
        return None
    if not os.path.isabs(target):
        target = os.path.join(os.fspath(work_tree), target)
    return os.path.normpath(target) if os.path.isdir(target) else None


def common_git_dir(work_tree: str | os.PathLike[str]) -> str | None:
    """The git directory every work tree of the repository shares (a linked worktree's `commondir`), or None."""
    gdir = git_dir(work_tree)
    return None if gdir is None else _common_dir(gdir)


def head_commit(work_tree: str | os.PathLike[str]) -> str | None:
    """The full commit id HEAD resolves to, or None when it cannot be told from the files."""
    gdir = git_dir(work_tree)
    if gdir is None:
        return None
    common = _common_dir(gdir)
    value = _read_text(os.path.join(gdir, "HEAD"))
    for _ in range(_MAX_REF_HOPS):
        if value is None:
            return None
        value = value.strip()
        if not value.startswith("ref:"):
            return value.lower() if _is_object_id(value) else None
        ref = value[len("ref:") :].strip()
        if not _is_safe_ref(ref):
            return None
        value = _read_ref(gdir, common, ref)
    return None


def served_ref(work_tree: str | os.PathLike[str], configured: str | None = None) -> tuple[str, str | None]:
    """The ref a vault serves and the commit it names now: (full ref name, commit or None).

    `configured` (a vault's `ref` in the user configuration) is taken as git takes a name: `HEAD`, a full
    `refs/...` name, a commit id, else the first of `refs/X`, `refs/tags/X`, `refs/heads/X`, `refs/remotes/X`,
    `refs/remotes/X/HEAD` that exists. Without it: the remote-tracking branch `refs/remotes/origin/HEAD` points at
    (what the team reviewed and merged), else the local default branch (`refs/heads/main`, else
    `refs/heads/master`, else the branch HEAD is on, which `checked_out_branch` says is not reviewed).
    """
    gdir = git_dir(work_tree)
    if gdir is None:
        return (_full_name(configured) if configured else "HEAD", None)
    common = _common_dir(gdir)
    if configured:
        name = configured.strip()
        if name == "HEAD":
            return "HEAD", head_commit(work_tree)
        if _is_object_id(name):
            return name.lower(), name.lower()
        for candidate in _candidates(name):
            commit = _resolve(gdir, common, candidate)
            if commit is not None:
                return candidate, commit
        return _full_name(name), None
    origin_head = _symbolic_target(os.path.join(common, "refs", "remotes", "origin", "HEAD"))
    if origin_head is not None:
        return origin_head, _resolve(gdir, common, origin_head)
    for branch in ("refs/heads/main", "refs/heads/master"):
        commit = _resolve(gdir, common, branch)
        if commit is not None:
            return branch, commit
    target = _symbolic_target(os.path.join(gdir, "HEAD"))
    if target is not None:
        return target, _resolve(gdir, common, target)
    return "HEAD", head_commit(work_tree)


class Advice(Record):
    """What is wrong with a vault's served ref and what to do, said alike by the hook's log, `cairn index`, `cairn
    vault add` and `cairn doctor` (a plain record: the hook says it too, without `typing`).

    problem: what is wrong, in words.
    command: the one shell command that fixes it, run as printed, or "" (commands to choose from, or none).
    note: what to do, in words: what `command` does, else the whole advice, its commands in backticks.
    """

    __slots__ = ("problem", "command", "note")
    problem: str
    command: str
    note: str

    def __init__(self, problem: str, command: str, note: str) -> None:
        self._init(problem, command, note)

    @property
    def fix(self) -> str:
        """What to do, as one phrase of prose: the note, its command after it in backticks."""
        return f"{self.note} (`{self.command}`)" if self.command else self.note

    def __str__(self) -> str:
        return f"{self.problem}: {self.fix}"


def missing_ref(
    work_tree: str | os.PathLike[str],
    ref: str,
    configured: str | None,
    set_ref: str | None = None,
    vault_root: str | os.PathLike[str] | None = None,
) -> Advice:
    """Why the served ref `ref` (as `served_ref` named it) gives no commit, and what to do. A repository whose HEAD
    has no commit has no commits yet; one that has commits lost the served ref (a deleted branch, a configured ref that
    never existed, an origin/HEAD left pointing at a branch the remote dropped). set_ref: the command that serves
    another ref, when the caller knows the vault's configured entry (`userconfig.serve_another`), else said with
    placeholders. The git commands name the repository (and the vault's folder, `vault_root`, when it is a folder
    inside it), so they run as printed from any folder."""
    root = os.fspath(work_tree)
    another = _serve_another(set_ref)
    git = f"git -C {shell_word(root)}"
    if head_commit(work_tree) is None:
        folder = shell_word(vault_root if vault_root is not None else root)
        return Advice(
            f"the vault has no commits yet on {ref}",
            f"cd {folder} && git add cards && git commit -m 'First cards'",
            "commit your cards first",
        )
    if not configured and ref.startswith("refs/remotes/origin/"):
        return Advice(
            f"{ref}, the branch origin/HEAD names in {root}, does not exist",
            "",
            f"fetch it (`{git} fetch origin`) or point origin/HEAD at the remote's default branch "
            f"(`{git} remote set-head origin --auto`)",
        )
    if ref.startswith("refs/heads/"):
        branch = ref[len("refs/heads/") :]
        remote = branch.split("/", 1)[0] if "/" in branch else ""
        remotes = _remote_names(root)
        if remote in remotes:  # `--ref origin/main` the remote dropped: `git branch origin/main` would shadow it
            return Advice(
                f"{branch}, the remote branch {root} serves, does not exist (dropped on the remote?)",
                "",
                f"fetch it (`{git} fetch {shell_word(remote)}`) or serve another ref ({another})",
            )
        if remote in ("origin", "upstream") and remote not in remotes:
            return Advice(
                f"{branch}, the remote branch {root} serves, names the remote {remote}, which {root} no longer has "
                "(renamed or removed?)",
                "",
                f"serve the branch by its remote's name now ({another}; `{git} remote` lists the remotes)",
            )
        return Advice(
            f"the branch {branch} that {root} serves does not exist (deleted?)",
            "",
            f"recreate it (`{git} branch {branch} COMMIT`) or serve another ref ({another})",
        )
    return _serving_another(
        f"{ref}, the ref {root} serves, does not exist (deleted?)", "recreate it or serve another ref", set_ref
    )


def _remote_names(work_tree: str) -> frozenset[str]:
    """The names of the repository's remotes, as its config's `[remote "NAME"]` sections give them."""
    common = common_git_dir(work_tree)
    entries = _config_entries(os.path.join(common, "config")) if common else []
    return frozenset(section[len("remote.") :] for section, _, _ in entries if section.startswith("remote."))


def detached_head(work_tree: str | os.PathLike[str], commit: str, set_ref: str | None = None) -> Advice:
    """What to say of a vault that serves HEAD because HEAD is detached and there is no branch to serve (`main`
    deleted after `git checkout --detach`): whatever is checked out is served, not what was reviewed."""
    return Advice(
        f"{os.fspath(work_tree)} has no main or master branch and HEAD is detached, so it serves whatever is checked "
        f"out (HEAD at {commit[:8]})",
        "",
        f"recreate the branch (`git -C {shell_word(work_tree)} branch main {commit[:8]}`) or serve another ref "
        f"({_serve_another(set_ref)})",
    )


def checked_out_branch(
    work_tree: str | os.PathLike[str], ref: str, configured: str | None, set_ref: str | None = None
) -> Advice | None:
    """What to say of a vault that serves the branch HEAD is on (`served_ref`'s last resort: no ref configured, no
    origin/HEAD, no main or master): a checkout of an unreviewed branch would serve its cards. None when the vault
    serves a branch chosen otherwise."""
    if configured or not ref.startswith("refs/heads/") or ref in ("refs/heads/main", "refs/heads/master"):
        return None
    branch = ref[len("refs/heads/") :]
    return _serving_another(
        f"{os.fspath(work_tree)} has no main or master branch and no origin/HEAD, so it serves the branch checked "
        f"out, {branch}: a checkout of an unreviewed branch would serve its cards",
        "name the reviewed branch",
        set_ref,
    )


def local_branch_served(work_tree: str | os.PathLike[str], ref: str, configured: str | None) -> Advice | None:
    """What to say of a vault that serves its local branch while origin holds that branch too: a repository made
    with `git init` and pushed (`git push -u origin main`) has no origin/HEAD, which only `git clone` and `git remote
    set-head` write, so cards committed locally, never pushed nor reviewed, are served. None otherwise."""
    gdir = git_dir(work_tree)
    if configured or gdir is None or not ref.startswith("refs/heads/"):
        return None
    branch = ref[len("refs/heads/") :]
    if _resolve(gdir, _common_dir(gdir), f"refs/remotes/origin/{branch}") is None:
        return None
    root = os.fspath(work_tree)
    return Advice(
        f"{root} has no origin/HEAD, so it serves its local {branch}, not origin/{branch}: cards committed there are "
        "served before they are pushed or reviewed",
        f"git -C {shell_word(root)} remote set-head origin --auto",
        "point origin/HEAD at the remote's default branch, so the vault serves what was pushed",
    )


def _serving_another(problem: str, words: str, set_ref: str | None) -> Advice:
    """Advice whose one fix is to serve another ref: `set_ref`, the command, else the placeholders in the words."""
    return Advice(problem, set_ref, words) if set_ref else Advice(problem, "", f"{words} ({_SET_REF})")


def _serve_another(set_ref: str | None) -> str:
    """How to serve another ref, in words: `set_ref`, the command, in backticks, else the placeholders."""
    return f"`{set_ref}`" if set_ref else _SET_REF


# How a user sets the ref a vault serves (`--replace`: one configured already, in its place).
_SET_REF = "`cairn vault add PATH --ref BRANCH`, with `--name NAME --replace` if it is configured"


def unreadable_ref_file(work_tree: str | os.PathLike[str], ref: str) -> str | None:
    """The path of a loose file of `ref` (in the git dir or the common dir) that is neither a regular file nor a
    folder (a FIFO, a device, `/dev/zero` through a symlink), or None: git, and gitpython, would open it and wait,
    or read without end (the hook's own reads refuse it: `read_regular`)."""
    import stat

    gdir = git_dir(work_tree)
    if gdir is None or not _is_safe_ref(ref):
        return None
    common = _common_dir(gdir)
    for base in dict.fromkeys((gdir, common)):
        path = os.path.join(base, *ref.split("/"))
        try:
            mode = os.stat(path).st_mode
        except (OSError, ValueError):
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            return path
    return None


def _candidates(name: str) -> tuple[str, ...]:
    if name.startswith("refs/"):
        return (name,)
    return (
        f"refs/{name}",
        f"refs/tags/{name}",
        f"refs/heads/{name}",
        f"refs/remotes/{name}",
        f"refs/remotes/{name}/HEAD",
    )


def _full_name(name: str) -> str:
    return name if name.startswith("refs/") or name == "HEAD" else f"refs/heads/{name}"


def _symbolic_target(path: str) -> str | None:
    """The ref a symbolic ref file (`ref: refs/...`) names, or None when the file is missing or not symbolic."""
    text = _read_text(path)
    if text is None or not text.startswith("ref:"):
        return None
    target = text[len("ref:") :].strip()
    return target if target.startswith("refs/") and _is_safe_ref(target) else None


def _resolve(gdir: str, common: str, ref: str) -> str | None:
    """The commit a ref names, following symbolic refs; a tag is peeled from packed-refs' record of its commit, else
    from its loose tag object (`_peel_loose`)."""
    if not _is_safe_ref(ref):
        return None
    value = _read_ref(gdir, common, ref)
    for _ in range(_MAX_REF_HOPS):
        if value is None:
            return None
        value = value.strip()
        if not value.startswith("ref:"):
            if not _is_object_id(value):
                return None
            if not ref.startswith("refs/tags/"):
                return value.lower()
            return (_peeled(common, ref, value) or _peel_loose(common, value.lower())).lower()
        ref = value[len("ref:") :].strip()
        if not _is_safe_ref(ref):
            return None
        value = _read_ref(gdir, common, ref)
    return None


def _peeled(common: str, ref: str, value: str) -> str | None:
    """The commit packed-refs peels the tag `ref` to, when its record names `value`: a tag moved after `git pack-refs`
    (`git tag -f`) is a loose file that names the new tag, and the packed record's peel is the old tag's commit."""
    found = _packed(common, ref)
    return found[1] if found is not None and found[0].lower() == value.lower() else None


def _peel_loose(common: str, oid: str) -> str:
    """What the object `oid` peels to (an annotated tag's commit, through tags of tags) when its tag objects are
    loose files, as `git tag -a` writes them: a tag's own id is no commit, and the index, `vault list` and the hook's
    log named it as the served commit. A packed or unreadable object is given as it is: the hook and `cairn index`
    read the same id (git peels it for what it runs)."""
    for _ in range(_MAX_REF_HOPS):
        try:
            # the header and the `object` line open the object: its first 8 KB hold them whatever the message
            data = read_regular(os.path.join(common, "objects", oid[:2], oid[2:]), 8192)
            import zlib  # only for a served tag that packed-refs does not peel

            text = zlib.decompressobj().decompress(data, 4096)
        except Exception:  # not a loose object (packed), unreadable, or not zlib's data: git peels it
            return oid
        if not text.startswith(b"tag "):
            return oid
        head = text.partition(b"\0")[2]
        if not head.startswith(b"object "):
            return oid
        target = head[len(b"object ") :].partition(b"\n")[0].decode("ascii", "replace").strip().lower()
        if not _is_object_id(target):
            return oid
        oid = target
    return oid


def _read_ref(gdir: str, common: str, ref: str) -> str | None:
    # Per-worktree refs (HEAD-like names) live in the worktree's git dir; branches and tags in the common dir.
    for base in (gdir, common) if gdir != common else (gdir,):
        loose = _read_text(os.path.join(base, *ref.split("/")))
        if loose is not None and loose.strip():
            return loose
    return _packed_ref(common, ref)


def _packed_ref(common: str, ref: str) -> str | None:
    found = _packed(common, ref)
    return None if found is None else found[0]


# packed-refs: a line per ref (`OID NAME`), each peeled tag followed by `^OID`. git writes it sorted by name and says
# so in its header (`# pack-refs with: peeled fully-peeled sorted `), so a ref is found by bisection in a few small
# reads: the hook resolves the served ref on every prompt, and a repository of 100,000 tags (a 6 MB file) cost it
# 15 ms a prompt read whole, 90 ms for a configured short name (each of `_candidates` read it again).
_LINE_MAX = 4096  # a longer line is no ref of git's: the file reads as unknown
_LINE_GUESS = 160  # what is read first around a line: most ref lines are shorter


def _packed(common: str, ref: str) -> tuple[str, str | None] | None:
    """(object id, peeled object id or None) of `ref` in packed-refs, or None when it is not there (or unreadable)."""
    try:
        fd = open_regular(os.path.join(common, "packed-refs"))  # a FIFO or a device in its place is not read
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        first = _line_at(fd, 0, size)
        if first is None:
            return None
        traits = first.split()[3:] if first.startswith(b"# pack-refs with:") else []
        if b"sorted" not in traits:  # an older git's file, or written by hand: read it through
            return _packed_scan(os.path.join(common, "packed-refs"), ref)
        return _packed_search(fd, len(first) + 1, size, ref.encode("utf-8", "surrogateescape"))
    except OSError:
        return None
    finally:
        os.close(fd)


def _packed_search(fd: int, low: int, high: int, wanted: bytes) -> tuple[str, str | None] | None:
    """Bisect the sorted records between `low` and `high` (both the starts of lines) for the ref `wanted`."""
    size = high
    while low < high:
        start = _line_start(fd, (low + high) // 2, low)
        line = None if start is None else _line_at(fd, start, size)
        while line is not None and line[:1] == b"^" and start is not None and start > low:  # a peel line: its ref's
            start = _line_start(fd, start - 1, low)
            line = None if start is None else _line_at(fd, start, size)
        if line is None or start is None or line[:1] == b"^":
            return None  # not the file git writes
        object_id, _, name = line.partition(b" ")
        name = name.rstrip()
        end = start + len(line) + 1
        peel = _line_at(fd, end, size) if end < size else b""
        if name == wanted:
            oid = object_id.decode("ascii", "replace")
            peeled = peel[1:].strip().decode("ascii", "replace") if peel and peel[:1] == b"^" else ""
            return (oid, peeled if _is_object_id(peeled) else None) if _is_object_id(oid) else None
        if name < wanted:
            while peel and peel[:1] == b"^":  # the records after this one start past its peel lines
                end += len(peel) + 1
                peel = _line_at(fd, end, size) if end < size else b""
            if peel is None:
                return None
            low = end
        else:
            high = start
    return None


def _line_start(fd: int, at: int, low: int) -> int | None:
    """Where the line holding the byte at `at` starts (never before `low`, a line's start); None past _LINE_MAX."""
    for reach in (_LINE_GUESS, _LINE_MAX):
        start = max(low, at - reach)
        newline = os.pread(fd, at - start, start).rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        if start == low:
            return low
    return None


def _line_at(fd: int, at: int, size: int) -> bytes | None:
    """The line that starts at `at`, without its newline; None when it is longer than _LINE_MAX."""
    for reach in (_LINE_GUESS, _LINE_MAX + 1):
        data = os.pread(fd, min(reach, size - at), at)
        end = data.find(b"\n")
        if end >= 0:
            return data[:end]
        if at + len(data) >= size:
            return data if len(data) <= _LINE_MAX else None
    return None


def _packed_scan(path: str, ref: str) -> tuple[str, str | None] | None:
    """`_packed` for a file git did not say is sorted: every line read."""
    text = _read_text(path)
    if text is None:
        return None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line or line[0] in "#^":
            continue
        object_id, _, name = line.partition(" ")
        if name.strip() == ref:
            after = lines[i + 1] if i + 1 < len(lines) else ""
            peeled = after[1:].strip() if after.startswith("^") else ""
            return object_id, peeled if _is_object_id(peeled) else None
    return None


def _common_dir(gdir: str) -> str:
    text = _read_text(os.path.join(gdir, "commondir"))
    if text is None or not text.strip():
        return gdir
    target = text.strip()
    if not os.path.isabs(target):
        target = os.path.join(gdir, target)
    return os.path.normpath(target)


def _is_object_id(value: str) -> bool:
    return len(value) in (40, 64) and set(value.lower()) <= _HEX


def _is_safe_ref(ref: str) -> bool:
    parts = ref.split("/")
    return bool(ref) and ".." not in parts and "" not in parts and not os.path.isabs(ref) and "\\" not in ref


def _read_text(path: str) -> str | None:
    try:
        data = read_regular(path, 1 << 26)  # a FIFO or a device in a `.git` file's place is not read
    except OSError:
        return None
    return data.decode("utf-8", "replace")
