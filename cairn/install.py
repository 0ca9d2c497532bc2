"""Registering `cairn hook` with coding agents (Claude Code, Codex CLI, Gemini CLI); git hooks: `cairn.githooks`.

Agent settings are JSON files that users also edit by hand: Cairn edits its one hook entry in, keeps every other
byte of the file as it was (`cairn.jsontext`), writes a timestamped backup of the old file and then the new file atomically, and does
nothing at all when the file already says what it should. Uninstalling removes only Cairn's entries, and deletes a
file only when install created it (`MADE_RECORD`).
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import shlex
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from cairn.atomic import leads_outside, read_only_refusal, write_atomic, write_backup
from cairn.hot import DISTRIBUTION
from cairn.hot.errors import CairnError, RefusedWrite
from cairn.jsontext import without_comments as _without_comments

if TYPE_CHECKING:
    from collections.abc import Sequence


@dataclass(frozen=True, slots=True)
class Agent:
    """How one agent configures a prompt hook.

    settings: the settings file under the project or home folder. event: the hook event Cairn registers for.
    timeout: the handler's timeout in the agent's own unit (seconds, or milliseconds for Gemini CLI).
    """

    name: str
    settings: str
    event: str
    timeout: int
    extra: tuple[tuple[str, str], ...] = ()
    note: str = ""
    comments: bool = False  # the agent reads its settings file with // and /* */ comments stripped
    personal: str = ""  # the agent's personal (git-ignored) settings file under a project, when it reads one


AGENTS = {
    "claude-code": Agent(
        "claude-code", ".claude/settings.json", "UserPromptSubmit", 10, personal=".claude/settings.local.json"
    ),
    "codex": Agent(
        "codex",
        ".codex/hooks.json",
        "UserPromptSubmit",
        10,
        extra=(("statusMessage", "Cairn: recalling team lessons"),),
        note=(
            "Codex runs hooks by default in recent versions; older ones need `codex_hooks = true` under "
            "`[features]` in {config}. Codex asks you to review and trust a new hook once."
        ),
    ),
    "gemini": Agent(
        "gemini",
        ".gemini/settings.json",
        "BeforeAgent",
        10000,
        extra=(("name", "cairn"),),
        note="Gemini CLI needs a version with hooks (see `gemini --version` and geminicli.com/docs/hooks).",
        comments=True,
    ),
}

# The variable naming the folder of an agent's own settings, in place of the one under the home folder.
AGENT_HOMES = {"codex": "CODEX_HOME", "claude-code": "CLAUDE_CONFIG_DIR"}

# The words of a shell command that join or redirect commands: a command holding one is a user's own script.
_SHELL_OPERATORS = frozenset("&|;<>()")
# What ends a hook command that runs Cairn by its full path: with Cairn uninstalled (`pip uninstall`, a removed venv)
# Python exits 2 ("can't open file"), and 2 is what every agent reads as "block this prompt". So any failure exits 1,
# which the agents show as an error and let the prompt through, as the hook itself does with a bad command line.
NEVER_BLOCKS = ("||", "exit", "1")


@dataclass(frozen=True, slots=True)
class SettingsChange:
    """What install or uninstall did to one file. action: `installed`, `updated`, `unchanged`, `removed`,
    `deleted` (install created it and uninstall left nothing else in it, so the file is gone), `absent`. backup: the copy of the previous
    file, when one was written (install only, and only when the file held anything besides Cairn's hook)."""

    path: Path
    action: str
    command: str | None = None
    backup: Path | None = None
    note: str = ""


class UnreadableSettings(RefusedWrite):
    """An agent's settings file Cairn cannot read as settings (not UTF-8, not JSON, not an object, not a file).
    problem: what is wrong with it, naming the file, as `cairn doctor` says it; the message adds what to do."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem}; {fix}")
        self.problem = problem


class HomeNotAbsolute(CairnError):
    """HOME, or the agent's own folder variable (CODEX_HOME, CLAUDE_CONFIG_DIR), is set but not an absolute folder
    path: no one place Cairn can write the user's settings. variable: which of them."""

    def __init__(self, variable: str, message: str) -> None:
        super().__init__(message)
        self.variable = variable


def settings_path(agent: str, base: Path, user: bool) -> Path:
    """The agent's settings file in a project folder, or in the user's home (honouring CODEX_HOME and
    CLAUDE_CONFIG_DIR)."""
    spec = _agent(agent)
    if user:
        variable = AGENT_HOMES.get(agent, "")
        folder = os.environ.get(variable, "") if variable else ""
        if folder and not os.path.isabs(folder):  # the folder the agent was started in: no one place Cairn can write
            raise HomeNotAbsolute(
                variable,
                f"{variable} is {folder!r}, not an absolute folder path; set {variable} to the agent's folder by its "
                "full path, or unset it (nothing was written)",
            )
        if folder:
            return Path(folder) / Path(spec.settings).name
        base = _home()
    return base / spec.settings


@dataclass(frozen=True, slots=True)
class SettingsFile:
    """Where `cairn install AGENT` writes the hook. shared: a project's settings file the team commits (Codex's
    `.codex/hooks.json`, Gemini CLI's `.gemini/settings.json`), read on every teammate's machine, so its hook runs
    `cairn` from each one's PATH, never this machine's path; else a file only this user reads (the user's own, or
    Claude Code's `.claude/settings.local.json`), whose hook runs this installation's `cairn` by its full path."""

    path: Path
    shared: bool


def is_home_project(agent: str, base: Path) -> bool:
    """Whether the project folder `base` is where the agent keeps the user's own settings (the home folder): its
    project file there is the user's, read in every project and committed nowhere."""
    try:
        user_file = settings_path(agent, base, True)
    except CairnError:  # a relative CODEX_HOME: the user install says so
        return False
    return (base / _agent(agent).settings).resolve() == user_file.resolve()


def install_target(agent: str, base: Path, user: bool) -> SettingsFile:
    """The settings file `cairn install AGENT` writes: the user's, else the project's personal file where the
    agent reads one (Claude Code), else the project's shared file."""
    spec = _agent(agent)
    if user:
        return SettingsFile(settings_path(agent, base, True), shared=False)
    path = base / (spec.personal or spec.settings)
    # A settings file (or its folder) that is a symlink out of the project: a cloned repository can commit
    # `.claude/settings.local.json` pointing at any file of the user's, and install would write there.
    real = leads_outside(path, base)
    if real is not None:
        raise RefusedWrite(
            f"{path} leads out of the project, to {real} (a symlink); nothing was written: remove the link and run "
            "this again, or install for every project with --user"
        )
    return SettingsFile(path, shared=not spec.personal)


def move_out_of_shared(agent: str, target: SettingsFile, base: Path) -> SettingsChange | None:
    """Before Cairn's hook goes into a project's personal file, take it out of the project's shared one, where an
    older Cairn wrote it with this machine's path (and where the agent would run it a second time). None when the
    hook is not going into a personal project file, or the shared file cannot be read (not Cairn's to judge)."""
    spec = _agent(agent)
    shared = base / spec.settings
    if not spec.personal or target.path != base / spec.personal or not cairn_commands(agent, shared):
        return None
    refuse_outside(shared, base, "Cairn's hook in it")
    # The personal file must take the hook before the shared one loses it: a personal file Cairn cannot write
    # (invalid JSON, read-only) stopped the install after the shared file was rewritten, leaving no hook at all.
    _merged(agent, target.path, hook_command(agent))
    if target.path.exists() or target.path.is_symlink():
        _refuse_read_only(target.path, _link_target(target.path))
    return uninstall_agent(agent, shared)


def refuse_outside(path: Path, base: Path, what: str = "") -> None:
    """Refuse to change a project's settings file that is a symlink out of the project (a cloned repository's
    `.claude/settings.json -> ~/.claude/settings.json`: the user's own file would change)."""
    real = leads_outside(path, base)
    if real is not None:
        held = f", and holds {what}" if what else ""
        raise RefusedWrite(
            f"{path} leads out of the project, to {real} (a symlink){held}; nothing was written: remove the link "
            "and run this again"
        )


def project_files(agent: str, folder: Path) -> list[Path]:
    """Every file of a project folder where the agent reads hooks, and so where Cairn's may be: the personal
    settings file (Claude Code), the shared one, and Codex's `.codex/config.toml`, whose `[hooks]` tables Codex
    reads as it reads hooks.json."""
    spec = _agent(agent)
    files = [folder / spec.personal] if spec.personal else []
    files.append(folder / spec.settings)
    if agent == "codex":
        files.append(folder / ".codex" / "config.toml")
    return files


def user_files(agent: str) -> list[Path]:
    """The user's files where the agent reads hooks: its settings file, and Codex's config.toml beside it."""
    path = settings_path(agent, Path("."), True)
    return [path, path.with_name("config.toml")] if agent == "codex" else [path]


def is_shared(agent: str, path: Path) -> bool:
    """Whether `path` is a project's shared (committed) settings file of the agent, read on teammates' machines."""
    spec = _agent(agent)
    return path.name == Path(spec.settings).name and path.parent.name == Path(spec.settings).parent.name


def names_this_machine(command: str) -> str:
    """The absolute path a hook command runs `cairn` (or its interpreter) by: one machine's ("" when none: `cairn
    hook ...` found on the PATH)."""
    try:
        words = command_words(command)
    except ValueError:
        return ""
    head = words[: words.index("hook")] if "hook" in words else words[:1]
    return next((w for w in head if os.path.isabs(w)), "")


def _home() -> Path:
    """The user's home folder. A HOME that is set but not an absolute path ("" makes `~` the file system's root or
    the current folder) would put the user's settings where no agent reads them: refused. Unset, the password
    database says, as it does for the agents."""
    home = os.environ.get("HOME")
    if home is not None and not os.path.isabs(home):
        raise HomeNotAbsolute(
            "HOME",
            f"HOME is {home!r}, not an absolute folder path; set HOME to your home folder, or give --project DIR "
            "(nothing was written)",
        )
    return Path.home()


def hook_command(
    agent: str, vault: str | None = None, scope: str | None = None, executable: str | Sequence[str] | None = None
) -> str:
    """The shell command an agent runs: `cairn hook --format AGENT`, plus --vault/--scope when given. `executable`:
    what runs `cairn` (one path, or a launcher's words: `hook_launcher`)."""
    launcher = [executable or "cairn"] if executable is None or isinstance(executable, str) else list(executable)
    parts = [*(shlex.quote(word) for word in launcher), "hook", "--format", _agent(agent).name]
    if vault:
        parts += ["--vault", shlex.quote(vault)]
    if scope:
        parts += ["--scope", shlex.quote(scope)]
    if os.path.isabs(launcher[0]):  # a file this machine may lose: its failure must not block the agent's prompts
        parts += NEVER_BLOCKS
    return " ".join(parts)


def command_words(command: str) -> list[str]:
    """A hook command's words as the shell splits them, without the `|| exit 1` that `hook_command` ends a full
    path's command with; ValueError when they cannot be split (an unclosed quote)."""
    words = shlex.split(command)
    return words[: -len(NEVER_BLOCKS)] if tuple(words[-len(NEVER_BLOCKS) :]) == NEVER_BLOCKS else words


def hook_launcher() -> list[str]:
    """What the agents' hook runs `cairn` with: `PYTHON -I -S /path/to/cairn/__main__.py`, this interpreter and this
    install's package (`cairn/__main__.py` says why: no `site` start-up work on every prompt). `-I`: no `PYTHON*`
    variable counts; the hook starts in the agent's project, and a PYTHONPATH with an empty or relative entry (what
    `export PYTHONPATH=$PYTHONPATH:/x` makes of an unset one) would import that project's `cairn/` (or `encodings/`)
    in Cairn's place.

    Not the `cairn` command: pip's launcher for it needs `site` to find Cairn, and imports modules of its own (`re`,
    before pip 25) first. `PYTHON` is kept as given (a venv's `bin/python` is a link whose target is outside the
    venv); it is `cairn_executable()` alone when the interpreter is unknown."""
    main = Path(__file__).resolve().with_name("__main__.py")
    if sys.executable and main.is_file():
        return [sys.executable, "-I", "-S", str(main)]
    return [cairn_executable()]


def cairn_script() -> Path | None:
    """This installation's `cairn` script, when it exists: the one running, else the one pip recorded beside this
    package, else the one beside the interpreter (a venv's; an editable install's record lies elsewhere)."""
    if Path(sys.argv[0]).name.startswith("cairn"):
        here = Path(sys.argv[0])
    elif (recorded := _recorded_script()) is not None:
        here = recorded
    elif sys.executable:
        here = Path(sys.executable).with_name("cairn")
    else:
        return None
    return here if here.is_file() else None


def _recorded_script() -> Path | None:
    """The `cairn` script the `RECORD` of this package's `.dist-info` lists: `python -m cairn` of a `pip install
    --user` (or system) install has its script in `~/.local/bin` (`/usr/local/bin`), not beside `/usr/bin/python3`."""
    from importlib import metadata

    from cairn import __version__

    info = Path(__file__).resolve().parent.parent / f"{DISTRIBUTION.replace('-', '_')}-{__version__}.dist-info"
    for file in metadata.Distribution.at(info).files or ():
        if file.name == "cairn" and file.parent.name in ("bin", "Scripts"):
            return Path(file.locate()).resolve()
    return None


def cairn_executable() -> str:
    """`cairn` when that name on PATH is this installation, else the full path of this installation's `cairn`."""
    here = cairn_script()
    on_path = shutil.which("cairn")
    if here is not None and on_path and os.path.realpath(on_path) == os.path.realpath(here):
        return "cairn"
    return str(here.resolve()) if here is not None else "cairn"


def hook_entry(agent: str, command: str) -> dict[str, Any]:
    """One matcher group holding Cairn's handler, as the agent's settings file spells it."""
    spec = _agent(agent)
    handler: dict[str, Any] = {"type": "command", "command": command, "timeout": spec.timeout}
    handler.update(dict(spec.extra))
    return {"hooks": [handler]}


def install_agent(agent: str, path: Path, command: str) -> SettingsChange:
    """Merge Cairn's hook into the settings file at `path` (created when missing); idempotent."""
    spec = _agent(agent)
    data, had_cairn, entry = _merged(agent, path, command)
    action = "updated" if had_cairn else "installed"
    existed = path.exists() or path.is_symlink()
    ours = existed and _made_by_cairn(path)  # read before the write changes the file
    changed, backup = _write_if_changed(path, data, spec, hook_entry(agent, command), by_hand=entry)
    if not changed:
        return SettingsChange(path, "unchanged", command, note=_note(spec))
    _record_made(path, not existed or ours)
    return SettingsChange(path, action, command, backup, note=_note(spec))


def _note(spec: Agent) -> str:
    """The agent's note after an install, naming the configuration file it reads for its own switches: Codex's
    `config.toml` is in CODEX_HOME when that is set (the note said ~/.codex/config.toml, which Codex then never
    reads)."""
    if "{config}" not in spec.note:
        return spec.note
    try:
        config = str(settings_path(spec.name, Path(), user=True).with_name("config.toml"))
    except CairnError:  # a relative CODEX_HOME or HOME: the user install says so
        config = f"the config.toml of {AGENT_HOMES.get(spec.name, 'its folder')}"
    return spec.note.format(config=config)


def _merged(agent: str, path: Path, command: str) -> tuple[dict[str, Any], bool, str]:
    """The settings file's data with Cairn's hook in place (any earlier one of Cairn's taken out), whether it had one,
    and the entry as JSON for a user to merge by hand; RefusedWrite when the file cannot take it."""
    spec = _agent(agent)
    entry = json.dumps({"hooks": {spec.event: [hook_entry(agent, command)]}}, ensure_ascii=False)
    data = _load_settings(path, spec, f"merge this into it by hand: {entry}")
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise RefusedWrite(f"{path}: 'hooks' is not an object; fix the file by hand, then run this again")
    groups = hooks.setdefault(spec.event, [])
    if not isinstance(groups, list):
        raise RefusedWrite(f"{path}: 'hooks.{spec.event}' is not a list; fix the file by hand, then run this again")
    had_cairn = _strip_cairn(groups)
    groups.append(hook_entry(agent, command))
    return data, had_cairn, entry


def uninstall_agent(agent: str, path: Path) -> SettingsChange:
    """Remove Cairn's hook entries (and only those) from the settings file at `path`."""
    spec = _agent(agent)
    if not path.exists() or cairn_commands(agent, path) == []:  # nothing of Cairn's, comments or not: nothing to do
        return SettingsChange(path, "absent")
    by_hand = f"remove the `cairn hook` entry from hooks.{spec.event} by hand"
    data = _load_settings(path, spec, by_hand)
    hooks = data.get("hooks")
    if not isinstance(hooks, dict) or not isinstance(hooks.get(spec.event), list):
        return SettingsChange(path, "absent")
    if not _strip_cairn(hooks[spec.event]):
        return SettingsChange(path, "absent")
    if not hooks[spec.event]:
        del hooks[spec.event]
    if not hooks:
        del data["hooks"]
    _refuse_read_only(path, _link_target(path))
    made = _made_by_cairn(path)
    _record_made(path, False)
    if not data and made and not path.is_symlink() and not _has_comments(path, spec):
        # Nothing but Cairn's hook was in it and install created it: take the file away, and its folder when
        # empty. A file the user made (`{}` with Cairn's hook added) stays, holding what it held before.
        path.unlink()
        if path.parent.name == Path(spec.settings).parent.name:  # `.claude/` and the like; never CODEX_HOME itself
            try:
                path.parent.rmdir()
            except OSError:  # not empty: the agent keeps other files there
                pass
        return SettingsChange(path, "deleted")
    # Only Cairn's own entries go: the rest of the file is exactly as it was, so no backup is needed.
    _write_if_changed(path, data, spec, None, by_hand=by_hand, backup=False)
    return SettingsChange(path, "removed")


def settings_data(agent: str, path: Path) -> dict[str, Any] | None:
    """An agent's settings file as the agent reads it (Gemini CLI past its comments); None when it cannot be read
    or is not a JSON object."""
    try:
        text = _settings_bytes(path).decode("utf-8")
        data = json.loads((_without_comments(text) if _agent(agent).comments else text) or "{}")
    except (OSError, ValueError, RecursionError, RefusedWrite):  # RecursionError: nested past the parser
        return None
    return data if isinstance(data, dict) else None


def settings_problem(agent: str, path: Path) -> str:
    """Why an agent's settings file cannot be read as settings (not UTF-8, not JSON, not an object), as install
    says it; "" when it can."""
    try:
        _load_settings(path, _agent(agent), "")
    except UnreadableSettings as exc:
        return exc.problem
    except OSError as exc:
        return f"{path} cannot be read ({exc.strerror or exc})"
    return ""


def cairn_commands(agent: str, path: Path) -> list[str] | None:
    """The commands of Cairn's hook handlers in an agent's settings file, or in the `[hooks]` tables of Codex's
    config.toml (empty: none); None when the file is not a JSON object (or TOML)."""
    spec = _agent(agent)
    data = toml_data(path) if path.suffix == ".toml" else settings_data(agent, path)
    if data is None:
        return None
    groups = data.get("hooks", {}).get(spec.event, []) if isinstance(data.get("hooks"), dict) else []
    if not isinstance(groups, list):
        return []
    return [
        h["command"]
        for g in groups
        if isinstance(g, dict) and isinstance(g.get("hooks"), list)
        for h in g["hooks"]
        if _is_cairn_handler(h)
    ]


def toml_data(path: Path) -> dict[str, Any] | None:
    """A TOML file as a table (Codex's config.toml: its `[[hooks.UserPromptSubmit]]` groups and their
    `[[hooks.UserPromptSubmit.hooks]]` handlers have hooks.json's shape); None when it cannot be read."""
    from cairn.config import toml_loads

    try:
        return toml_loads(_settings_bytes(path).decode("utf-8"))
    except (OSError, ValueError, RefusedWrite):
        return None


def enclosing_vault(folder: Path) -> Path | None:
    """The vault `folder` is in, found from the folder alone (never `$CAIRN_VAULT`): the folder or one above it in
    its repository that holds `cards/` and `cairn.toml` (or is the repository's root)."""
    for candidate in (folder, *folder.parents):
        is_root = (candidate / ".git").exists()
        if (candidate / "cards").is_dir() and ((candidate / "cairn.toml").is_file() or is_root):
            return candidate
        if is_root:
            return None
    return None


WORKFLOW = ".github/workflows/cairn.yml"


def pin_workflow_version(vault_root: Path, version: str) -> None:
    """Make the vault's CI workflow install the Cairn release that made the vault (`cairn-lessons==VERSION`)."""
    path = vault_root / WORKFLOW
    if not path.is_file():
        return
    text = path.read_text("utf-8")
    pinned = re.sub(
        rf'^(\s*CAIRN_REQUIREMENT:\s*"){re.escape(DISTRIBUTION)}==[^"]*(")',
        lambda m: f"{m.group(1)}{DISTRIBUTION}=={version}{m.group(2)}",
        text,
        count=1,
        flags=re.MULTILINE,
    )
    if pinned != text:
        write_atomic(path, pinned.encode("utf-8"), overwrite=True, mode=stat.S_IMODE(path.stat().st_mode))


# -- internals ----------------------------------------------------------------------------------------------------

# The settings files install created, each with the sha256 of the bytes it last wrote there: uninstall deletes a file
# only when it is listed and still holds exactly those bytes. The file alone cannot say who made it (a user's `{}`
# with Cairn's hook added reads byte for byte as a file install created), and a file the user wrote must never be
# lost; a record that is missing or out of date (another state folder, a file edited since) only leaves the file in
# place, holding `{}`.
MADE_RECORD = "settings-made.json"


def _made_record() -> Path:
    from cairn.hot import state_dir

    return state_dir() / MADE_RECORD


def _made_files() -> dict[str, str]:
    try:
        data = json.loads(_made_record().read_bytes())
    except (OSError, ValueError, RecursionError):  # a record nested thousands deep is one that cannot be read
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def _made_by_cairn(path: Path) -> bool:
    """Whether install created the settings file at `path` and it holds exactly what install last wrote there."""
    from cairn.hot import sha256_hex

    recorded = _made_files().get(os.path.abspath(path))
    if recorded is None or path.is_symlink():
        return False
    try:
        return sha256_hex(path.read_bytes()) == recorded
    except OSError:
        return False


def _record_made(path: Path, made: bool) -> None:
    """Record that install made the file at `path` (with its bytes now), or take it off the record. A record that
    cannot be written costs only the deletion of that file at uninstall. Under a lock: installs of several agents
    at once each read the record and wrote it back, and all but the last one's entries were lost."""
    from cairn.hot import private_folder, sha256_hex
    from cairn.index.store import file_lock

    key = os.path.abspath(path)
    record = _made_record()
    try:
        private_folder(str(record.parent))
        with file_lock(record.with_name(MADE_RECORD + ".lock"), "recording the settings files install made", 30):
            files = _made_files()
            if made:
                files[key] = sha256_hex(path.read_bytes())
            elif files.pop(key, None) is None:
                return
            write_atomic(record, json.dumps(files, indent=1, sort_keys=True).encode("utf-8"), mode=0o600)
    except (OSError, CairnError):
        pass


def _agent(name: str) -> Agent:
    try:
        return AGENTS[name]
    except KeyError:
        raise CairnError(f"unknown agent {name!r}; choose one of {', '.join(AGENTS)}") from None


def _is_cairn_handler(handler: object) -> bool:
    return (
        isinstance(handler, dict) and isinstance(handler.get("command"), str) and is_cairn_command(handler["command"])
    )


def is_cairn_command(command: str) -> bool:
    """Whether a hook command is Cairn's: one command that runs `cairn hook` (`cairn`, any path to it, or a Python
    with flags running it or the launcher's `.../cairn/__main__.py`; any words after `hook`; the `|| exit 1` that ends
    `hook_command`'s full-path command). A user's own script that mentions or wraps it (`redact && cairn hook ...`,
    `echo "cairn hook" >> log`) is not: install and uninstall leave it as it is (they replaced it, and wrote no
    backup, when any `cairn hook` in the text counted)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:  # an unclosed quote
        return False
    if tuple(words[-len(NEVER_BLOCKS) :]) == NEVER_BLOCKS:  # `hook_command`'s own ending
        words = words[: -len(NEVER_BLOCKS)]
    if "hook" not in words or any(word and set(word) <= _SHELL_OPERATORS for word in words):
        return False
    launcher = words[: words.index("hook")]
    if not launcher or not all(word.startswith("-") for word in launcher[1:-1]):
        return False
    program = PurePath(launcher[-1].replace("\\", "/"))
    return program.name.lower() in ("cairn", "cairn.exe") or (
        len(launcher) > 1 and (program.name, program.parent.name) == ("__main__.py", "cairn")
    )


def _strip_cairn(groups: list[Any]) -> bool:
    """Remove Cairn's handlers from a list of matcher groups in place (and groups left empty); True if any."""
    found = False
    for group in list(groups):
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            continue
        kept = [h for h in group["hooks"] if not _is_cairn_handler(h)]
        if len(kept) != len(group["hooks"]):
            found = True
            if kept:
                group["hooks"] = kept
            else:
                groups.remove(group)
    return found


def _load_settings(path: Path, spec: Agent, by_hand: str) -> dict[str, Any]:
    """The settings file's JSON object ({} when missing or blank). A file this agent reads but Cairn could only
    rewrite by losing something (its comments) is refused, with what to do by hand."""
    if not path.exists():
        return {}
    try:
        text = _settings_bytes(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableSettings(
            f"{path} is not UTF-8 text (byte {exc.start})", "save it as UTF-8 by hand, nothing was written"
        ) from None
    if not text.strip():
        return {}
    try:
        data = _finite_json(text, path)
    except ValueError as exc:
        if not spec.comments:
            raise UnreadableSettings(
                f"{path} is not valid JSON ({exc})", "fix it by hand, nothing was written"
            ) from None
        try:  # the agent reads past its comments; the edit keeps them
            data = _finite_json(_without_comments(text), path)
        except ValueError as past:  # the error past the comments: the raw text's named the first comment's place
            raise UnreadableSettings(
                f"{path} is not valid JSON ({past})", "fix it by hand, nothing was written"
            ) from None
    if not isinstance(data, dict):
        raise UnreadableSettings(f"{path} does not hold a JSON object", "fix it by hand, nothing was written")
    return data


def _settings_bytes(path: Path) -> bytes:
    """The bytes of a settings file, which must be a regular file (or a link to one). A FIFO in its place would
    keep the read waiting for ever, and a device (a link to /dev/zero) never end it: refused at once. A folder
    raises IsADirectoryError, as reading it would."""
    from cairn.hot import open_regular

    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    try:
        fd = open_regular(path)
    except OSError as exc:
        if exc.errno is not None:  # no such file, no permission: said as any file's error is
            raise
        raise UnreadableSettings(
            f"{path} is not a regular file (a FIFO or a device?), so it holds no settings",
            "remove it (an agent reads its settings from a file), then run this again (nothing was written)",
        ) from None
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def _finite_json(text: str, path: Path) -> Any:
    """`json.loads(text)`, refusing what it would read but could not write back as JSON: NaN and Infinity (Python
    reads them, JSON and the agents do not) and a number too large for a float (1e999 reads as inf, and would be
    written back as Infinity)."""

    def constant(name: str) -> float:
        raise UnreadableSettings(
            f"{path} holds {name}, which is not valid JSON (the agent cannot read it either)",
            "replace it by hand, nothing was written",
        )

    def number(literal: str) -> float:
        value = float(literal)
        if math.isinf(value):
            raise UnreadableSettings(
                f"{path} holds the number {literal[:40]}, too large to write back as JSON (it would become Infinity)",
                "replace it by hand, nothing was written",
            )
        return value

    try:
        return json.loads(text, parse_constant=constant, parse_float=number)
    except RecursionError:  # `[[[[...` thousands deep: the parser's own limit, said as any JSON that is not valid
        raise ValueError("nested too deeply to read") from None


def _write_if_changed(
    path: Path, data: dict[str, Any], spec: Agent, entry: dict[str, Any] | None, by_hand: str, backup: bool = True
) -> tuple[bool, Path | None]:
    """Write `data` unless the file already holds exactly it. Returns (written, backup of the old file). The old
    file's text is edited where Cairn's hook is (`entry` added to `hooks.EVENT`, or Cairn's handlers taken out),
    every other byte kept; a file that cannot be edited so is written out whole as JSON, but for one with comments,
    which would lose them: it is refused, with `by_hand`, what to do instead.

    A backup is written only when the old file holds something besides Cairn's own hook entries: a file Cairn made
    needs none. A symlinked settings file (a dotfiles repository) is written where the link points, the link kept;
    its backup goes beside the link.
    """
    target = _link_target(path)
    if target.exists():
        old = _settings_bytes(target)
        comments = _has_comments(target, spec)
        try:
            old_data = json.loads(_without_comments(old.decode("utf-8")) if comments else old)
            if old_data == data:
                return False, None
        except (ValueError, RecursionError):
            old_data = None
        indent = _indent_of(old)
        new = _edited_bytes(old, data, spec.event, entry, indent, comments)
        if new is None and comments:
            raise RefusedWrite(
                f"{path} holds comments ({spec.name} reads past them) that rewriting it would lose; nothing was "
                f"written: {by_hand}"
            )
        new = new or _json_bytes(data, indent, crlf=b"\r\n" in old)
        _refuse_read_only(path, target)  # only now: a read-only file that already says it all is left unchanged
        mode = stat.S_IMODE(target.stat().st_mode)
        saved = write_backup(path, old, mode) if backup and old.strip() and not _only_cairn(old_data) else None
        write_atomic(target, new, overwrite=True, mode=mode)
        return True, saved
    write_atomic(target, _json_bytes(data, 2), overwrite=False)
    return True, None


def _has_comments(path: Path, spec: Agent) -> bool:
    """Whether the settings file holds comments the agent reads past (none for an agent that reads plain JSON)."""
    if not spec.comments:
        return False
    try:
        text = _settings_bytes(path).decode("utf-8")
    except (OSError, UnicodeDecodeError, RefusedWrite):
        return False
    return _without_comments(text) != text


def _edited_bytes(
    old: bytes, data: dict[str, Any], event: str, entry: dict[str, Any] | None, indent: int | str, comments: bool
) -> bytes | None:
    """The old file's bytes with Cairn's hook edited in or out and nothing else changed; None when they cannot be."""
    from cairn import jsontext

    try:
        text = jsontext.edited(old.decode("utf-8"), data, event, _is_cairn_handler, entry, indent, comments)
        return None if text is None else text.encode("utf-8")
    except UnicodeError:
        return None


def _json_bytes(data: dict[str, Any], indent: int | str, crlf: bool = False) -> bytes:
    """The settings as the file's bytes: UTF-8 JSON, its lines ended as the old file's were (a file with CRLF line
    ends, as Windows editors and `core.autocrlf` leave them, is not rewritten line by line). A string holding half
    of a surrogate pair (`"\\ud800"`, valid JSON that a tool cut an emoji in two) has no UTF-8 form: then every
    character beyond ASCII is written as a `\\u` escape, which every JSON reader decodes to the same text."""
    text = json.dumps(data, indent=indent, ensure_ascii=False) + "\n"
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        raw = (json.dumps(data, indent=indent) + "\n").encode("ascii")
    return raw.replace(b"\n", b"\r\n") if crlf else raw  # JSON strings hold no raw line break: only line ends


def _indent_of(text: bytes) -> int | str:
    """The indentation a JSON file already uses (its first indented line: a tab, or N spaces), so rewriting a
    user's settings keeps their style; 2 when the file shows none."""
    for line in text.splitlines()[1:]:
        lead = line[: len(line) - len(line.lstrip(b" \t"))]
        if lead.strip(b"\t") == b"" and lead:
            return "\t"
        if lead and lead.strip(b" ") == b"" and len(lead) <= 8:
            return len(lead)
    return 2


def _refuse_read_only(path: Path, target: Path) -> None:
    """Refuse to change a settings file its owner made read-only, or one on a read-only file system
    (`atomic.read_only_refusal`)."""
    why = read_only_refusal(target, path if target == path else f"{path} (a link to {target})")
    if why is not None:
        raise RefusedWrite(why)


def _link_target(path: Path) -> Path:
    """The file to write for `path`: itself, or the file its symlink points to (replacing the link with a file
    would cut a dotfiles setup loose). A link to nothing is refused: where it points is the user's to create."""
    if not path.is_symlink():
        return path
    real = Path(os.path.realpath(path))
    if not real.exists():
        raise RefusedWrite(
            f"{path} is a symlink to {real}, which does not exist; create that file (`{{}}` will do) or remove the "
            "link, then run this again (nothing was written)"
        )
    return real


def _only_cairn(data: object) -> bool:
    """Whether settings data holds nothing but Cairn's hook entries (or nothing at all)."""
    if not isinstance(data, dict) or set(data) - {"hooks"}:
        return False
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        return False
    for groups in hooks.values():
        if not isinstance(groups, list):
            return False
        rest = json.loads(json.dumps(groups))
        _strip_cairn(rest)
        if rest:
            return False
    return True
