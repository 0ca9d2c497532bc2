"""What every command shares: the --vault and --json options, the error funnel, progress and output helpers."""

from __future__ import annotations

import codecs
import errno
import functools
import json
import os
import shlex
import shutil
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TextIO, TypeVar, cast

import click

from cairn.hot.errors import CairnError
from cairn.hot.paths import file_in_the_way
from cairn.hot.vault import Vault, find_configured_vault, find_vault, is_url
from cairn.terminal import clean, clean_line, columns

F = TypeVar("F", bound=Callable[..., Any])


def _one_vault(ctx: click.Context, param: click.Parameter, given: tuple[str, ...]) -> str | None:
    """The one `--vault` given, or None; given twice is a usage error (click alone would silently take the last)."""
    if len(given) > 1:
        raise click.BadParameter(f"given {len(given)} times ({', '.join(given)}); give one vault")
    if given and not given[0]:  # `--vault "$TEAM"` with TEAM unset: not "no vault", which may mean every vault
        raise click.BadParameter("is empty (a shell variable that is not set?); name a vault or leave the option out")
    if given:  # not "is not a folder; create one with `cairn init URL`", which refuses a URL
        _refuse_url(given[0], "folder")
    return given[0] if given else None


def complete_vault_name(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Tab completion of a configured vault's name (`cairn sync NAME`, `cairn vault remove NAME`)."""
    from cairn.hot.userconfig import load_vaults

    try:
        return [e.name for e in load_vaults() if e.name.startswith(incomplete)]
    except CairnError:
        return []


def complete_vault(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Tab completion of --vault: the configured vaults' names that match, else folders (the option takes both)."""
    from click.shell_completion import CompletionItem

    return complete_vault_name(ctx, param, incomplete) or [CompletionItem(incomplete, type="dir")]


def complete_card_id(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Tab completion of a card id from the indexes Cairn already built: the vault --vault names (or
    $CAIRN_VAULT, the vault around the current folder, the one configured vault), else every configured vault's
    ids as NAME:ID. A Tab reads the cache only: no git, no index build, nothing of the vault's is run."""
    from cairn.hot.index import IndexReader
    from cairn.hot.paths import index_file
    from cairn.hot.userconfig import load_vaults

    try:
        named = [] if ctx.params.get("vault_path") or ":" not in incomplete else load_vaults()
        name = incomplete.partition(":")[0]
        roots = [(f"{e.name}:", e.path) for e in named if e.name == name]  # NAME:ID as typed, one vault or several
        if not roots:
            try:
                roots = [("", str(open_vault(ctx.params.get("vault_path")).root))]
            except CairnError:  # several vaults configured, none chosen: each one's ids as `show` takes them
                roots = [(f"{e.name}:", e.path) for e in load_vaults()]
    except (CairnError, OSError):
        return []
    found: list[str] = []
    for prefix, root in roots:
        try:
            with IndexReader(index_file(os.path.realpath(root))) as reader:
                found += [prefix + card_id for card_id in reader.ids() if (prefix + card_id).startswith(incomplete)]
        except (CairnError, OSError):  # no index yet, or one Cairn cannot read: nothing to offer from it
            continue
    return found


# What stands where a folder was given, when it is neither a folder nor a regular file (click refuses those itself).
_NOT_A_FOLDER = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a device", stat.S_IFBLK: "a device", stat.S_IFSOCK: "a socket"}


def _special_kind(value: Any) -> str | None:
    """What stands at `value` when it is neither a folder nor a regular file ("a FIFO", ...), else None."""
    try:
        return _NOT_A_FOLDER.get(stat.S_IFMT(os.stat(value).st_mode))
    except (OSError, TypeError, ValueError):  # missing, or no path at all: click's own checks say so
        return None


class Folder(click.Path):
    """click's Path for a folder. click refuses a regular file where a folder goes but lets a FIFO, a device or a
    socket through, so `cairn doctor --cwd PIPE` checked a folder no agent works in and `cairn vault add --project
    /dev/null` registered one: such a path is a usage error here, in one line."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        kind = _special_kind(value)
        if kind is not None:
            self.fail(f"{os.fsdecode(value)!r} is {kind}, not a folder", param, ctx)
        return super().convert(value, param, ctx)


class File(click.Path):
    """click's Path for a file read whole. click lets a FIFO, a device or a socket through, so `cairn add --body-file
    PIPE` waited for a writer that never came: such a path is a usage error here, in one line. The process's own
    descriptors stay readable as given (`-`, `/dev/stdin`, `/dev/fd/N`, which `<(command)` passes)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = os.fsdecode(value) if isinstance(value, (str, bytes)) else ""
        own = text == "-" or text == "/dev/stdin" or os.path.dirname(text) in ("/dev/fd", "/proc/self/fd")
        kind = None if own else _special_kind(value)
        if kind is not None:
            self.fail(f"{text!r} is {kind}, not a regular file", param, ctx)
        return super().convert(value, param, ctx)


def folder_given(
    ctx: click.Context, param: click.Parameter, value: str | tuple[str, ...] | None
) -> Path | tuple[Path, ...] | None:
    """A folder (or folders) as Paths (None: an option left out); one given as "" (`"$DIR"` with DIR unset) is a usage
    error, since click's Path reads it as the current folder, which would then be registered, be the only project
    served, or get a vault, without a word."""
    return _given(value, "folder")


def file_given(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    """A file as a Path (None: left out); "" is a usage error, as for `folder_given` (click's Path read it as the
    current folder, and the error then named `.`)."""
    given = _given(value, "file")
    assert not isinstance(given, tuple)
    return given


def _refuse_url(value: str, kind: str) -> None:
    """A usage error for a URL given as a local `kind` ("folder" or "file"), saying how to get it."""
    if is_url(value):
        fetch = f"git clone {shlex.quote(value)} FOLDER" if kind == "folder" else "curl -fsSLo FILE URL"
        raise click.BadParameter(
            f"{value!r} is a URL; Cairn reads local {kind}s and fetches nothing: get it first (`{fetch}`), then "
            f"give that {kind}"
        )


def _given(value: str | tuple[str, ...] | None, kind: str) -> Path | tuple[Path, ...] | None:
    if value is None:
        return None
    given = value if isinstance(value, tuple) else (value,)
    if "" in given:
        raise click.BadParameter(f"is empty (a shell variable that is not set?); give the {kind}")
    # Read as a path, `https://host/x.git` made the folder `https:/host/x.git` (`cairn init`), or was "not a folder;
    # create one with `cairn init ...`" (`cairn vault add`), a command that made that folder.
    for each in given:
        _refuse_url(each, kind)
    return tuple(Path(v) for v in given) if isinstance(value, tuple) else Path(value)


vault_option = click.option(
    "--vault",
    "vault_path",
    type=Folder(file_okay=False, path_type=str),
    multiple=True,
    callback=_one_vault,
    shell_complete=complete_vault,
    help="The vault: a folder, or the NAME of a configured vault (default: $CAIRN_VAULT, else the vault around the "
    "current folder, else the one configured vault; see `cairn vault list`).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
ref_option = click.option(
    "--ref",
    default=None,
    help="Read this ref instead of the served one (e.g. HEAD: your branch before it is merged; indexed apart).",
)

worktree_option = click.option(
    "--worktree",
    is_flag=True,
    help="Read the working tree, uncommitted cards too, instead of the served ref (for authors; the hook never does).",
)


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange, refusing nan and infinity (no comparison with nan is true, so it passed every bound)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if number != number or number in (float("inf"), float("-inf")):
            low = "" if self.min is None else f" from {self.min:g}"
            high = "" if self.max is None else f" to {self.max:g}"
            self.fail(f"{value!r} is not a finite number; give one{low}{high}", param, ctx)
        return number


class Day(click.DateTime):
    """A day, YYYY-MM-DD (`--today`). A bad one from the option's variable ($CAIRN_TODAY, left set in a shell or a
    CI job) says so: "Invalid value for '--today'" sent the user to an option they never gave."""

    def __init__(self) -> None:
        super().__init__(formats=["%Y-%m-%d"])

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            source = ctx.get_parameter_source(param.name) if ctx and param and param.name else None
            if source is not click.core.ParameterSource.ENVIRONMENT or param is None or not param.envvar:
                raise
            variable = param.envvar if isinstance(param.envvar, str) else param.envvar[0]
            self.fail(f"{value!r} (from ${variable}) is not a day; set it to YYYY-MM-DD, or unset it", param, ctx)


def checked_scope(value: str, also: str = "") -> tuple[str, ...]:
    """The tags of a --scope as the hook reads them (`git,ci`, `hot.serve.scope_tags`). One with no tag (`--scope
    "$SCOPE"`, unset) would mean every scope, and a tag with a line break or a control character one no card can
    have: both usage errors (`also`: what else the message says to do)."""
    from cairn.hot.serve import scope_tags

    tags = scope_tags(
        utf8_flag(value, "--scope")
    )  # an ASCII locale's escapes of `--scope 运维` were "control characters"
    if not tags:
        raise click.BadParameter(f"{value!r} holds no tag; give one such as --scope git{also}")
    odd = next((tag for tag in tags if not tag.isprintable()), None)
    if odd is not None:
        raise click.BadParameter(f"the tag {odd!r} holds a line break or a control character; give tags such as git")
    return tags


def where_to_read(ref: str | None, worktree: bool) -> None:
    """--ref and --worktree name two things to read instead of the served ref: one at most."""
    if ref and worktree:
        raise click.UsageError("give --ref or --worktree, not both")


# What to do about the operating system's refusals that a user can fix.
_OS_HINTS = {
    errno.EFBIG: "a file size limit (`ulimit -f`) or the file system stopped the write; raise the limit or free some "
    "space, then run this again",
    errno.EACCES: "permission denied; check the folder's owner and mode",
    errno.ENOTDIR: "a file stands where a folder should be; move it away",
    errno.EISDIR: "a folder stands where a file should be; move it away",
    errno.ENAMETOOLONG: "a file name is too long; use a shorter id or path",
    errno.EMFILE: "this process may open no more files at once; raise its limit (`ulimit -n`, 256 or more), then run "
    "this again",
    errno.ENFILE: "the system may open no more files at once; close some programs, then run this again",
}


# The exit status of a command whose reader went away (`cairn list | head -1`): a shell's for a process SIGPIPE ended.
PIPE_CLOSED = 141
# Output is written in pieces of this many characters: one write of a larger text to a pipe whose reader has gone
# away is cut short without an error, and the command exited 0 having printed part of it (`cairn list --json`).
_PIECE = 8192


def errors_to_exit(func: F) -> F:
    """Translate Cairn's exceptions into `Error: ...` on stderr and exit 1, once, at the edge.

    Anything else that escapes a command is a bug in Cairn: it, too, becomes one line and exit 1 (never a traceback
    on the user's terminal); CAIRN_DEBUG=1 lets it through with its traceback.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except CairnError as exc:
            raise click.ClickException(clean_line(str(exc))) from None
        except BrokenPipeError:
            exit_pipe_closed()
        except OSError as exc:
            raise click.ClickException(clean_line(os_error_text(exc))) from None
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except UnicodeEncodeError as exc:
            if not _is_file_name_encoding(exc.encoding):
                raise click.ClickException(clean_line(_unexpected(exc))) from None
            locale_named = sys.getfilesystemencoding()
            raise click.ClickException(
                clean_line(
                    f"a path holds {exc.object[exc.start : exc.end]!r}, which this locale's encoding ({locale_named}) "
                    "cannot name; run Cairn in a UTF-8 locale (LC_ALL=C.UTF-8) or with PYTHONUTF8=1"
                )
            ) from None
        except RecursionError:
            raise click.ClickException("the input is nested too deeply to read") from None
        except MemoryError:
            # a memory limit (`ulimit -v`, a container's) stops a 25-card vault's index too, whose input is small
            raise click.ClickException(
                "out of memory: the input is too large, or this process's memory limit (`ulimit -v`) too low; raise "
                "the limit or free some memory, then run this again"
            ) from None
        except Exception as exc:
            raise click.ClickException(clean_line(_unexpected(exc))) from None

    return wrapper  # type: ignore[return-value]


def exit_pipe_closed() -> NoReturn:
    """The reader went away (`cairn lint | head`): stop quietly, as the Python docs advise for SIGPIPE, with the
    status git and coreutils give there (128 + SIGPIPE), beside 130 (SIGINT) and 143 (SIGTERM)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(PIPE_CLOSED)


def _unexpected(exc: Exception) -> str:
    """An exception that escaped a command: a bug in Cairn (CAIRN_DEBUG=1 raises it with its traceback; 0, false,
    no or off, as a shell or CI job sets a switch off, do not)."""
    if os.environ.get("CAIRN_DEBUG", "").strip().lower() not in ("", "0", "false", "no", "off"):
        raise exc
    text = str(exc).splitlines()[0][:300] if str(exc) else ""
    return f"unexpected {type(exc).__name__}: {text} (a bug in Cairn; CAIRN_DEBUG=1 shows where)"


def _is_file_name_encoding(encoding: str) -> bool:
    """Whether `encoding` is the one Python names files in here when that is not UTF-8 (LANG=en_US.ISO-8859-1,
    zh_CN.GB18030): the paths of a vault or configuration written in UTF-8 may hold what it cannot encode."""
    named = codecs.lookup(sys.getfilesystemencoding()).name
    try:
        return named != "utf-8" and codecs.lookup(encoding).name == named
    except LookupError:
        return False


def error_text(exc: Exception) -> str:
    """One line for an error a command reports and goes on past: Cairn's message, or the system's (`os_error_text`)."""
    return os_error_text(exc) if isinstance(exc, OSError) else str(exc)


def os_error_text(exc: OSError) -> str:
    """One line for an OSError: what failed, where, and what to do when the user can fix it."""
    # a relative path (`cairn init x`) is looked up in the current folder too
    relative = not (isinstance(exc.filename, str) and os.path.isabs(exc.filename))
    if isinstance(exc, FileNotFoundError) and relative and not _cwd_exists():
        return "the current folder no longer exists (removed?); cd into one that does and run this again"
    where = f" ({exc.filename})" if exc.filename else ""
    hint = _OS_HINTS.get(exc.errno or 0)
    if exc.errno in (errno.EROFS, errno.ENOSPC, errno.EDQUOT):
        hint = _disk_hint(exc.errno, exc.filename)
    if exc.errno == errno.ENOTDIR and isinstance(exc.filename, str):
        in_the_way = file_in_the_way(exc.filename)
        if in_the_way is not None:  # the error names the path asked for, which lies under it and is not there
            hint = f"{hint} ({in_the_way} is a file)"
    return f"{exc.strerror or exc}{where}" + (f": {hint}" if hint else "")


def _disk_hint(code: int, filename: object) -> str:
    """What to do about a read-only file system, a full disk or a used-up quota: the variable that moves Cairn's own
    folder elsewhere (the cache, the state, the user configuration) when the write was there; elsewhere (a vault's
    cards, a project's agent settings) no variable helps, and naming one sent the user to move a folder the write
    never touched."""
    from cairn.hot import cache_folder, state_folder
    from cairn.hot.userconfig import config_file

    path = os.path.abspath(filename) if isinstance(filename, str) else ""

    def on_the_way(folder: Callable[[], str]) -> bool:  # the path is in that folder, or on the way to it
        try:
            mine = folder()
        except CairnError:  # no home folder to tell it by
            return False
        return bool(path and mine) and (path == mine or path.startswith(mine + "/") or mine.startswith(path + "/"))

    # the state; its fix; the fix when the write was in Cairn's folder ({} its variable), and where to point it
    state, fix, ours, folder_there, file_there = {
        errno.EROFS: (
            "that file system is read-only",
            "make it writable (or work on a copy elsewhere)",
            "point {}",
            "a writable folder",
            "a file in a writable folder",
        ),
        errno.ENOSPC: (
            "the disk is full",
            "free some space there",
            "free some space, or point {}",
            "another disk",
            "a file on another disk",
        ),
        errno.EDQUOT: (
            "the disk quota is used up",
            "free some space",
            "free some space, or point {}",
            "a folder elsewhere",
            "a file elsewhere",
        ),
    }[code]
    for folder, variable in ((cache_folder, "CAIRN_CACHE_DIR"), (state_folder, "CAIRN_STATE_DIR")):
        if on_the_way(folder):
            return f"{state}; {ours.format(variable)} at {folder_there}"
    if on_the_way(lambda: os.path.dirname(config_file())):
        return f"{state}; {ours.format('CAIRN_CONFIG')} at {file_there}"
    return f"{state}; {fix}, then run this again"


def _cwd_exists() -> bool:
    try:
        os.getcwd()  # fails in a folder removed while the shell stood in it (a stat of "." does not)
    except FileNotFoundError:
        return False
    return True


def open_vault(vault_path: str | None) -> Vault:
    """The vault a command works on: `--vault` (a folder, or a configured vault's name), else `$CAIRN_VAULT`, else
    the vault around the current folder, else the configured vault when there is exactly one."""
    return resolve_vault(vault_path)[0]


def resolve_vault(vault_path: str | None, cwd: str | None = None) -> tuple[Vault, str]:
    """`open_vault` with the reason it chose that vault (`--vault`, `CAIRN_VAULT`, `current folder`, `config`)."""
    from cairn.hot.errors import ConfigError, VaultLeftOut, VaultNotFound
    from cairn.hot.userconfig import load_vaults

    given, reason = (vault_path, "--vault") if vault_path else (os.environ.get("CAIRN_VAULT"), "CAIRN_VAULT")
    if given:
        if "/" not in given and os.sep not in given and not is_url(given):  # `git@host:x`: a URL, no vault's name
            try:
                entries = load_vaults()
            except ConfigError:
                if not os.path.isdir(os.path.expanduser(given)):
                    raise  # "none is configured" would hide what to fix: the configuration
                entries = []
            named = next((e for e in entries if e.name == given), None)
            if named is not None:
                return find_configured_vault(named), f"{reason} (configured vault {named.name!r})"
            if not os.path.isdir(os.path.expanduser(given)):
                configured = f"configured: {', '.join(e.name for e in entries)}" if entries else "none is configured"
                raise VaultNotFound(
                    f"{reason} {given!r} is neither a configured vault ({configured}) nor a folder; see "
                    "`cairn vault list`, or register one with `cairn vault add PATH --name NAME`"
                )
        return find_vault(vault_path), reason
    try:
        return find_vault(None, None if cwd is None else Path(cwd)), "current folder"
    except VaultLeftOut:  # the vault here, its cards/ left out of the work tree: never another vault in its place
        raise
    except VaultNotFound:
        entries = load_vaults()
        if len(entries) == 1:
            only = entries[0]
            return find_configured_vault(only), f"config (the one configured vault, {only.name!r})"
        below = _below_note(cwd)
        if entries:
            names = ", ".join(e.name for e in entries)
            raise VaultNotFound(
                f"no vault around the current folder and {len(entries)} are configured ({names}); "
                f"pick one with --vault NAME{below}"
            ) from None
        if below:
            raise VaultNotFound(f"no vault around the current folder{below}") from None
        raise


def vaults_below(cwd: str | None = None, refuse_misnamed: bool = False) -> list[Vault]:
    """The vaults git's index holds below `cwd` (the current folder): each folder with a tracked `cairn.toml` beside a
    `cards/` folder (a vault in a subfolder of a monorepo, whose root is no vault); [] outside git. With
    `refuse_misnamed`, CardsMisnamed for such a folder whose cards are in `Cards/` (the pre-commit hooks refuse it,
    as they do at the repository's root)."""
    import subprocess

    from cairn.config import CONFIG_FILE
    from cairn.hot.errors import CardsMisnamed
    from cairn.hot.vault import CARDS_DIR

    try:  # in any repository the user stands in: its `core.fsmonitor`, a command git starts to read the index, is off
        listed = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", "ls-files", "-z", "--", CONFIG_FILE, f"*/{CONFIG_FILE}"],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
            check=True,
            cwd=cwd,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    vaults: list[Vault] = []
    for rel in sorted(os.fsdecode(p) for p in listed.split(b"\0") if p):
        folder = Path(cwd or ".", rel).parent
        if (folder / CARDS_DIR).is_symlink() or not ((folder / CARDS_DIR).is_dir() or refuse_misnamed):
            continue
        try:
            vaults.append(find_vault(folder.absolute()))
        except CardsMisnamed:
            if refuse_misnamed:
                raise
        except CairnError:
            continue
    return vaults


def _below_note(cwd: str | None) -> str:
    """`; the repository holds vaults below it: …` (the first five), or "" when it holds none below `cwd`."""
    from cairn.hot.vault import shell_word

    found = vaults_below(cwd)[:5]
    if not found:
        return ""
    shown = ", ".join(shell_word(os.path.relpath(v.root, cwd)) for v in found)
    held = "a vault" if len(found) == 1 else "vaults"
    return f"; the repository holds {held} below it: {shown} (pass --vault FOLDER, or cd there)"


def argv_text(value: str) -> str:
    """A word of the command line as the terminal sent it. In a locale whose encoding is not UTF-8 (`LC_ALL=POSIX`
    without Python's UTF-8 mode) Python decodes argv in that encoding, each byte it lacks escaped: a prompt or an id
    in Chinese, UTF-8 from the terminal, arrives unreadable. Its bytes are read as UTF-8 again; a word that is not
    UTF-8 either is given back as it came (the command then says so)."""
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        pass
    try:
        return os.fsencode(value).decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return value


def utf8_flag(value: str, flag: str) -> str:
    """An option's text as `argv_text` reads it; one that is not UTF-8 either (a terminal sending GBK) is a usage
    error, as QUERY's is: a tag of escapes matched no card and said nothing."""
    value = argv_text(value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise click.BadParameter(
            "is not UTF-8 text (a terminal set to another encoding?); give it in UTF-8", param_hint=flag
        ) from None
    return value


def split_named_id(card_id: str, vault_path: str | None) -> tuple[str | None, str]:
    """(vault, id) for an id as recall, explain and the hook show a configured vault's card, `NAME:ID`: the vault
    NAME and the bare id. An id whose part before the colon is no configured vault's name (or not the --vault
    given) is left whole, as is every id when the configuration cannot be read."""
    from cairn.hot.errors import ConfigError
    from cairn.hot.userconfig import load_vaults

    name, colon, rest = card_id.partition(":")
    if not colon or "/" in name or vault_path not in (None, name):
        return vault_path, card_id
    try:
        names = {entry.name for entry in load_vaults()}
    except ConfigError:
        return vault_path, card_id
    return (name, rest) if name in names else (vault_path, card_id)


def unknown_vault_name(card_id: str) -> CairnError | None:
    """For an id `NAME:ID` whose NAME has a vault name's form but is no configured vault's (a typo, a vault since
    removed), the error to give when that id names no card; else None (`split_named_id` left such an id whole,
    since a card's id may hold a colon)."""
    from cairn.hot.errors import ConfigError
    from cairn.hot.userconfig import is_vault_name, load_vaults

    name, colon, rest = card_id.partition(":")
    if not colon or not rest or not is_vault_name(name):
        return None
    try:
        entries = load_vaults()
    except ConfigError as exc:  # "none is configured" would hide what to fix: the configuration
        return exc
    if any(entry.name == name for entry in entries):
        return None
    known = f"configured: {', '.join(e.name for e in entries)}" if entries else "none is configured"
    return CairnError(
        f"no configured vault is named {name!r} ({known}); see `cairn vault list`, or give the id without {name + ':'!r}"
    )


def echo_json(data: Any) -> None:
    """JSON exactly as the data holds it (never cleaned); strings that are not valid Unicode (a file name's
    undecodable bytes), or that stdout's encoding cannot carry (a Latin-1 locale), are written as \\u escapes."""
    text = json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False)
    try:
        text.encode("utf-8")
        text.encode(_encoding(sys.stdout))
    except (UnicodeEncodeError, LookupError):
        text = json.dumps(data, ensure_ascii=True, indent=2, sort_keys=False)
    _write(text, err=False)


def echo(text: str = "", err: bool = False) -> None:
    """Human output: card text is cleaned of terminal escapes; a character the stream's encoding cannot carry (a
    Chinese card on a Latin-1 terminal) is shown as `?`, as Python's own `replace` gives it."""
    text = clean(text)
    encoding = _encoding(sys.stderr if err else sys.stdout)
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        text = text.encode(encoding, "replace").decode(encoding)
    except LookupError:
        pass
    _write(text, err)


def _write(text: str, err: bool) -> None:
    """`click.echo(text, err=err)`, in pieces of `_PIECE` characters, so that a reader gone away mid-text raises
    BrokenPipeError (`errors_to_exit`) rather than the rest being dropped in silence."""
    pieces = [text[at : at + _PIECE] for at in range(0, len(text), _PIECE)] or [""]
    for piece in pieces[:-1]:
        click.echo(piece, err=err, nl=False)
    click.echo(pieces[-1], err=err)


def _encoding(stream: Any) -> str:
    return str(getattr(stream, "encoding", None) or "utf-8")


def warn(text: str) -> None:
    """A warning on stderr, which `--json` output on stdout leaves alone (`open_index`'s `warn`)."""
    echo(f"Warning: {text}", err=True)


def warn_unreadable_config(applied: str) -> None:
    """A warning when the user configuration cannot be read: the prompt hook serves nothing, and a command run in a
    vault finds no configured entry for it (`entry_for`), so `applied` says what it did without one."""
    from cairn.hot.errors import ConfigError
    from cairn.hot.userconfig import load_vaults

    try:
        load_vaults()
    except ConfigError as exc:
        warn(f"{exc}; the prompt hook serves nothing until it is fixed, and {applied}")


@contextmanager
def progress_bar(label: str) -> Iterator[Callable[[int, int], None]]:
    """A progress callback drawing a bar on a terminal (stderr) and nothing elsewhere."""
    with progress_stages() as stage:
        yield stage(label)


@contextmanager
def indexing(root: object) -> Iterator[Callable[[int, int], None]]:
    """`progress_bar` for a command that reads a vault's index: a bar on a terminal while the index is built or
    brought up to date (a large vault's first build takes seconds), nothing when it is current."""
    with progress_bar(f"Indexing {clean_line(str(root))}") as progress:
        yield progress


def _bar_layout(label: str, total: int) -> tuple[str, int]:
    """The label and bar width that keep a progress line within the terminal: a wider line wraps, and each redraw
    (a carriage return) then starts a row of its own, leaving a trail of bars (`Indexing /home/alice/team-lessons`
    with click's 36-column bar passed 80 columns). The bar takes 10 to 36 columns, fewer on a terminal too narrow for
    10 and a cut label (30 columns: `…  [##########]  1000/2000  00:00:01` wrapped); a label with no room is cut."""
    room = shutil.get_terminal_size().columns - 1  # a line that fills the last column wraps on some terminals
    info = len(f"{total}/{total}") + len("  00:00:00")  # the position, and the time left click adds to it
    free = room - len("  []  ") - info
    width = max(min(10, free - 1), min(36, free - columns(label)), 1)  # 0 is click's "the whole terminal"
    if columns(label) <= free - width:
        return label, width
    while label and columns(label) > free - width - 1:
        label = label[:-1]
    return label + "…", width


@contextmanager
def progress_stages() -> Iterator[Callable[[str], Callable[[int, int], None]]]:
    """A progress callback per stage of one long job (`stage(label)`): on a terminal (stderr) one bar, each stage's
    drawn over the last one's, and nothing elsewhere."""
    if not sys.stderr.isatty():
        yield lambda label: lambda done, total: None
        return
    dumb = os.environ.get("TERM") == "dumb"
    state: dict[str, Any] = {}

    def stage(label: str) -> Callable[[int, int], None]:
        def update(done: int, total: int) -> None:
            bar = state.get("bar")
            if bar is None or state["label"] != label:
                if bar is not None:
                    # the last stage's bar, cleared: the next one takes its line (a dumb terminal shows an escape
                    # sequence as text: there the next bar starts a line of its own)
                    sys.stderr.write("\n" if dumb else "\r\x1b[K")
                shown, width = _bar_layout(label, total)
                file = cast(TextIO, _NoCursorEscapes(sys.stderr)) if dumb else sys.stderr
                bar = click.progressbar(length=total, label=shown, file=file, show_pos=True, width=width)
                bar.__enter__()
                state.update(bar=bar, label=label, pos=0)
            bar.update(done - state["pos"])
            state["pos"] = done

        return update

    try:
        yield stage
    finally:
        if "bar" in state:
            state["bar"].__exit__(None, None, None)


class _NoCursorEscapes:
    """stderr on a dumb terminal (TERM=dumb: Emacs' shell, an editor's task pane), which shows escape sequences as
    text: click's bar hides the cursor before each redraw and shows it at the end with them, and every redraw
    printed `^[[?25l` in front of the bar. They are left out; the bar is still redrawn with a carriage return."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return int(self._stream.write(text.replace("\x1b[?25l", "").replace("\x1b[?25h", "")))

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return True
