"""`cairn doctor`: the whole setup checked from one folder, one line per check with the command that fixes it.

Which vaults the prompt hook serves there and why, each vault's served ref and whether its index is at that
commit (and, with the semantic extra, whether its card vectors are this encoder's and current), its git hooks and
pre-commit, the cache folders of vaults that are gone, each agent's settings and the `cairn` they run, Python and git. The library only
looks; it never changes anything.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cairn import agent_switches, githooks, install
from cairn.extras import reinstall_command
from cairn.hot import build_name, index_key_file
from cairn.hot.errors import CairnError, ConfigError
from cairn.hot.gitrefs import git_dir, served_ref
from cairn.hot.index import SECURITY_RULES_VERSION, IndexReader
from cairn.hot.paths import INDEX_NAME, cache_folder, file_in_the_way, index_file, path_text
from cairn.hot.userconfig import VaultEntry, add_again, config_file, is_vault_name, leave_withdrawn, load_vaults
from cairn.hot.vault import (
    MARKER_IS_FOLDER,
    checked_out_branch,
    detached_head,
    find_vault,
    hook_vaults,
    left_out_of_work_tree,
    local_branch_served,
    make_cards_folder,
    make_marker,
    misnamed_cards,
    missing_ref,
)
from cairn.userconfig import serve_another

if TYPE_CHECKING:
    from cairn.hot.hook import Options

MARKER = "cairn.toml"
# The notes of fixes with a placeholder doctor cannot fill, and of an `rmdir` that refuses a folder holding files.
_VAULT_PATH = "PATH: the vault's folder"
_EMPTY_FIRST = "rmdir removes only an empty folder: look at what is in it first"


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the report. ok: passes (None: information, never a failure). fix: the shell command that fixes it,
    run as printed (a placeholder in capitals only where doctor cannot know the value: the note says so), or "";
    note: what else to know or do, in words (what fixes it when no command can)."""

    area: str
    subject: str
    ok: bool | None
    detail: str
    fix: str = ""
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "area": self.area,
            "subject": self.subject,
            "ok": self.ok,
            "detail": self.detail,
            "fix": self.fix,
            "note": self.note,
        }


def run_checks(cwd: Path, env: dict[str, str] | None = None) -> list[Check]:
    """Every check, in the order a user fixes things: Python and git, the configuration, the vaults, the agents."""
    env = dict(os.environ) if env is None else env
    checks = [_python(), _git(), *_relative_folders(env), *_shared_folders(), *_low_space(), *_state_check()]
    read, config_check = _config(env)
    entries = read or []
    checks.append(config_check)
    checks += _shell_only_config(env, entries) if config_check.ok else []
    checks += _allowed_rules(env) if config_check.ok else []
    checks += _resolution(cwd, entries, env, config_read=read is not None)
    semantic, encodes = _semantic_check(env)
    from cairn.semantic.encoder import available

    installed = available()
    for entry in entries:
        try:
            checks += _vault_checks(entry, encodes, installed)
        except OSError as exc:  # the hook skips a vault it cannot read and serves the others: say so, check on
            checks.append(_unreadable_vault(entry, exc))
    checks.append(semantic)
    checks += _semantic_variables(env)
    checks += _caches_of_vaults_gone()
    checks += _agent_checks(cwd, entries)
    return checks


def _python() -> Check:
    version = ".".join(str(n) for n in sys.version_info[:3])
    ok = sys.version_info >= (3, 10)
    return Check("python", sys.executable, ok, version, note="" if ok else "install Python 3.10 or newer")


def _git() -> Check:
    """The `git` every command but the hook reads vaults through (an IDE's or a job's PATH may lack it)."""
    found = shutil.which("git")
    if found is None:
        return Check("git", "PATH", False, "git was not found on PATH", note="install git, or add its folder to PATH")
    try:
        said = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        said = ""
    return Check("git", found, True, said.strip().removeprefix("git version ") or "found")


def _relative_folders(env: dict[str, str]) -> list[Check]:
    """A relative `CAIRN_CACHE_DIR` or `CAIRN_STATE_DIR`, or XDG folder, which Cairn ignores (`cairn.hot.cache_folder`,
    `xdg_is_set`): in the hook it would name a folder of the agent's project."""
    return [
        Check(
            "folders",
            name,
            False,
            f"{name}={env[name]} is relative, so Cairn ignores it (the hook would read it in the agent's project)",
            f"unset {name}",  # what Cairn does with it already; which absolute path was meant, doctor cannot know
            f"or set {name} to an absolute path",
        )
        for name in ("CAIRN_CACHE_DIR", "CAIRN_STATE_DIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME")
        if env.get(name) and not os.path.isabs(env[name])
    ]


def _own_folders() -> list[tuple[str, str, str]]:
    """Cairn's cache and state folders: (what, the variable that moves it, its path)."""
    from cairn.hot import cache_folder, state_folder

    return [("cache", "CAIRN_CACHE_DIR", cache_folder()), ("state", "CAIRN_STATE_DIR", state_folder())]


def _shared_folders() -> list[Check]:
    """A cache or state folder that others may write, or read: one that was there before Cairn (a CAIRN_STATE_DIR
    naming the home folder, say), whose mode Cairn never changes (`cairn.hot.private_folder`). Others able to write it
    can swap the files in it; to read it, see which vaults and cards this user's agents are served."""
    checks = []
    for what, variable, folder in _own_folders():
        try:
            mode = os.stat(folder).st_mode & 0o777
        except OSError:
            continue  # made 0700 when Cairn first writes there
        if not os.path.isdir(folder):
            continue  # a file where the folder goes: `_unwritable` fails it, and no chmod would help
        if not mode & 0o077:
            continue
        writable = bool(mode & 0o022)
        fix = f"chmod go-rwx {shlex.quote(folder)}"
        note = f"if it is Cairn's alone, else set {variable} to a folder of its own"
        detail = f"{folder} (mode {mode:o}) may be {'written' if writable else 'read'} by other users; Cairn leaves the mode of a folder it did not make"
        if _owner_is_another(folder):  # only its owner may chmod it
            fix, note = "", f"it is another user's: set {variable} to a folder of your own"
        checks.append(Check("folders", what, False if writable else None, detail, fix, note))
    return checks


# Free space under which the cache and state folders are warned of: a 10,000-card index and its vectors take about
# 60 MB, each rebuild writes a new file beside the old one, and a full state folder keeps no session (every card is
# given again on every prompt) and no hook log.
LOW_SPACE_BYTES = 200 * 1024 * 1024
# Free files (inodes) under which they are warned of too: a disk out of them refuses every new file, however many
# bytes it has free (a session is a file, and each index write a temp file beside the index).
LOW_SPACE_FILES = 1000


def _low_space() -> list[Check]:
    """A warning for a cache or state folder on a disk nearly full: what fails there (an index that cannot be
    written, sessions not kept) fails one prompt at a time, and the fixes doctor prints fail the same way."""
    checks = []
    for what, variable, folder in _own_folders():
        there = folder
        while not os.path.isdir(there) and os.path.dirname(there) != there:
            there = os.path.dirname(there)  # the nearest folder there is: where Cairn makes it
        try:
            stats = os.statvfs(there)
        except (OSError, AttributeError):  # no statvfs (Windows), or nothing to ask
            continue
        free = stats.f_bavail * stats.f_frsize
        files = stats.f_favail if stats.f_files else LOW_SPACE_FILES  # no files in all: no limit on them (btrfs)
        if free >= LOW_SPACE_BYTES and files >= LOW_SPACE_FILES:
            continue
        if free < LOW_SPACE_BYTES:
            low = (
                f"{free // (1024 * 1024)} MB free on the disk of {folder} (under {LOW_SPACE_BYTES // (1024 * 1024)} MB)"
            )
            fix = "free some space there"
        else:
            low = f"room for {files} more files on the disk of {folder} (under {LOW_SPACE_FILES}: its inodes are used)"
            fix = "remove files there"
        detail = (
            f"{low}: an index that cannot be written serves nothing, and a state folder that cannot be written keeps "
            "no session"
        )
        checks.append(Check("folders", what, None, detail, note=f"{fix}, or set {variable} to another disk"))
    return checks


def _config(env: dict[str, str]) -> tuple[list[VaultEntry] | None, Check]:
    """The configured vaults (None when the configuration cannot be read) and the check that says so."""
    try:
        file = config_file(env)
    except CairnError as exc:  # a relative CAIRN_CONFIG: a failed check like any other, and the checks go on
        return None, Check("config", "CAIRN_CONFIG", False, str(exc), "set CAIRN_CONFIG to a full path, or unset it")
    try:
        entries = load_vaults(env)
    except CairnError as exc:
        said = str(exc).removeprefix(f"{file}: ")  # the line names the file already
        if os.path.lexists(file) and not os.path.isfile(file):  # a folder, a FIFO: no line of it to fix
            if env.get("CAIRN_CONFIG"):  # the variable names the wrong thing; what it names is not Cairn's to move
                fix = f"set CAIRN_CONFIG to a file's full path, such as {shlex.quote(path_text(file, 'config.toml'))}"
                return None, Check("config", file, False, said, fix)
            moved = shlex.quote(file + ".not-a-file")
            fix = f"mv {shlex.quote(file)} {moved} && cairn vault add PATH"
            return None, Check("config", file, False, said, fix, _VAULT_PATH)
        in_the_way = None if os.path.lexists(file) else file_in_the_way(file)
        if in_the_way is not None:  # a file where a folder of its path goes: the file has no line to fix either
            moved = shlex.quote(in_the_way + ".old")
            fix = f"mv {shlex.quote(in_the_way)} {moved} && cairn vault add PATH"
            return None, Check("config", file, False, said, fix, _VAULT_PATH)
        return None, Check("config", file, False, said, note=f"fix {file} as the error says")
    if not entries:
        return [], Check("config", file, False, "no vault configured", "cairn vault add PATH", _VAULT_PATH)
    return entries, Check("config", file, True, f"{len(entries)} vault(s): {', '.join(e.name for e in entries)}")


def _shell_only_config(env: dict[str, str], entries: list[VaultEntry]) -> list[Check]:
    """A note when this shell's `CAIRN_CONFIG` (set in a shell's profile, which a desktop launcher, an IDE, a service
    or cron does not read) names a configuration whose vaults are not those of the one an agent started without it
    reads: that agent's hook serves those (or nothing), while every check here passes."""
    if not env.get("CAIRN_CONFIG"):
        return []
    bare = {name: value for name, value in env.items() if name != "CAIRN_CONFIG"}
    try:
        file = config_file(bare)
    except CairnError as exc:
        file, serves = "", f"finds no configuration ({exc}): its hook serves nothing"
    else:
        try:
            theirs = load_vaults(bare)
        except (CairnError, OSError) as exc:
            theirs, serves = [], f"reads {file}, which it cannot use ({exc}): its hook serves nothing"
        else:
            names = ", ".join(entry.name for entry in theirs) or "no vault"
            serves = f"reads {file}, which configures {names}: its hook serves {'those' if theirs else 'nothing'}"
        if file == config_file(env) or theirs == entries:
            return []
    detail = (
        f"CAIRN_CONFIG={env['CAIRN_CONFIG']} is set here; an agent started without it (from a desktop launcher, an "
        f"IDE, a service) {serves}"
    )
    note = f"set CAIRN_CONFIG in the agents' environment too, or move the configuration to {file}" if file else ""
    return [Check("config", "CAIRN_CONFIG", None, detail, note=note)]


def _allowed_rules(env: dict[str, str]) -> list[Check]:
    """A failing check for each entry of `[security] allow_disabled_rules` that names no security rule or group (a
    typo such as `secrets` allows nothing, silently: the rule it meant still runs)."""
    from cairn.hot.userconfig import load_config
    from cairn.lint.security import SECURITY, security_rules

    try:
        allowed = load_config(env).allow_disabled_rules
    except (CairnError, OSError, ValueError):
        return []
    known = {SECURITY, *(name for rule in security_rules() for name in (rule.id, *rule.emits, *rule.groups))}
    file = config_file(env)
    return [
        Check(
            "config",
            file,
            False,
            f"[security] allow_disabled_rules names {entry!r}, which is no security rule, so it allows nothing "
            f"(the security rules: {', '.join(sorted(rule.id for rule in security_rules()))})",
            note=f"fix {file}: name a security rule (or `security` for them all)",
        )
        for entry in sorted(allowed - known)
    ]


def _resolution(cwd: Path, entries: list[VaultEntry], env: dict[str, str], config_read: bool) -> list[Check]:
    """Which vaults the hook serves to an agent working in `cwd`, and which vault the commands use there (whether
    the configuration lists the one around `cwd` is unknown when it cannot be read: `config_read`)."""
    checks: list[Check] = []
    if env.get("CAIRN_VAULT"):
        given = f"CAIRN_VAULT={env['CAIRN_VAULT']}"
        try:
            [alone], _ = hook_vaults(None, env)
        except CairnError as exc:  # the hook of an agent started with it serves nothing
            detail = f"{given} (this shell only): an agent's hook started with it serves nothing: {exc}"
            if isinstance(exc, ConfigError):  # unset, the hook serves nothing either: the config check names the fix
                note = "fix the user configuration as its check says; without CAIRN_VAULT the hook serves nothing too"
                checks.append(Check("resolve", str(cwd), False, detail, note=note))
            else:
                checks.append(Check("resolve", str(cwd), False, detail, "unset CAIRN_VAULT"))
        else:
            alone_here = "serves that vault alone"
            if not alone.serves_cwd(str(cwd)):  # a configured vault keeps its --project limit, as the hook applies it
                alone_here = (
                    f"serves nothing in {cwd}: vault {alone.name!r} serves only agents working under "
                    f"{', '.join(alone.projects)}"
                )
            detail = f"{given} (this shell only): an agent's hook started with it {alone_here}"
            checks.append(Check("resolve", str(cwd), None, detail))
    served = [e for e in entries if e.serves_cwd(str(cwd))]
    for entry in entries:
        if entry in served:
            limit = f", scopes {', '.join(entry.scopes)}" if entry.scopes else ""
            checks.append(Check("resolve", entry.name, True, f"served in {cwd} (configured{limit})"))
        else:
            checks.append(
                Check("resolve", entry.name, None, f"not served in {cwd} (projects: {', '.join(entry.projects)})")
            )
    if entries and not served:
        # Every configured vault is limited to other projects: the fix serves the first here too, in its place and
        # with its other projects. `vault add PATH --project` failed as printed on a vault already configured.
        first = entries[0]
        checks.append(
            Check(
                "resolve",
                str(cwd),
                False,
                "no configured vault applies here",
                add_again(first, first.path, more_projects=(str(cwd),)),
                f"that serves vault {first.name!r} here too; for a vault of its own: "
                + shlex.join(["cairn", "vault", "add", "PATH", "--project", str(cwd)]),
            )
        )
    around = install.enclosing_vault(cwd)
    if around is not None and config_read:  # else `cairn vault add` fails on the same file, which may list it
        real = os.path.realpath(around)
        if not any(os.path.realpath(e.path) == real for e in entries):
            # Information, not a failure: a cloned project may commit a vault of its own, whose cards no one on the
            # user's side reviewed; doctor must not press every project's vault on the user as a fix.
            checks.append(
                Check(
                    "resolve",
                    str(around),
                    None,
                    "the vault around this folder is not configured: commands use it, the prompt hook does not; "
                    "register it only if you trust its cards (a cloned project's vault is its authors')",
                    f"cairn vault add {shlex.quote(str(around))}",
                )
            )
    return checks


def _vault_checks(entry: VaultEntry, encodes: bool = False, installed: bool = True) -> list[Check]:
    name = entry.name
    root = entry.path
    if not os.path.isdir(os.path.join(root, "cards")):
        left_out = left_out_of_work_tree(root)
        if left_out is not None:  # the folder is right: the work tree leaves it out
            return [Check("vault", name, False, f"{root}: {left_out[0]}", left_out[1])]
        misnamed = misnamed_cards(root)
        if misnamed is not None:  # the folder is right: its cards/ is named in another case
            return [Check("vault", name, False, f"{root}: {misnamed[0]}", misnamed[1], "then commit the rename")]
        if os.path.isfile(os.path.join(root, MARKER)):  # a vault with no card yet (git records no empty folder)
            return [
                Check(
                    "vault",
                    name,
                    False,
                    f"{root} has {MARKER} but no cards/ folder",
                    make_cards_folder(root),
                    f"if the vault moved instead: {add_again(entry)} ({_VAULT_PATH})",
                )
            ]
        why = "is not a folder" if not os.path.isdir(root) else "has no cards/ folder"
        # as the hook's log says it: a vault deleted by hand is removed from the configuration, not added again
        gone = f"{_VAULT_PATH}; if the vault is gone for good: `cairn vault remove {name}`"
        return [Check("vault", name, False, f"{root} {why}", add_again(entry), gone)]
    checks: list[Check] = []
    if os.path.isdir(os.path.join(root, MARKER)):
        marker = os.path.join(root, MARKER)
        checks.append(
            Check(
                "vault",
                name,
                False,
                f"{marker}: {MARKER_IS_FOLDER}",
                f"mv {shlex.quote(marker)} {shlex.quote(marker + '.folder')} && touch {shlex.quote(marker)}",
            )
        )
    elif not os.path.isfile(os.path.join(root, MARKER)):
        checks.append(
            Check(
                "vault",
                name,
                False,
                f"{root} has no {MARKER}: the hook serves no folder without Cairn's marker",
                make_marker(root),
            )
        )
    try:
        vault = find_vault(root)
    except CairnError as exc:
        return [*checks, Check("vault", name, False, str(exc), f"cairn vault remove {name}")]
    if vault.git_root is None:
        return [
            *checks,
            Check(
                "vault",
                name,
                False,
                f"{root} is not in a git repository, so none of its cards is served; if its .git was moved or deleted, "
                "put it back or clone the vault there again, else the fix makes it one",
                # `git init` alone left an empty repository: still no commit to serve
                f"git -C {shlex.quote(root)} init && git -C {shlex.quote(root)} add -A && "
                f"git -C {shlex.quote(root)} commit -q -m 'A Cairn vault'",
            ),
        ]
    unreadable = _unsupported_repository(vault)
    if unreadable:  # the files name its served commit, but no command can read it: `cairn index` would fail
        return [*checks, Check("vault", name, False, *unreadable)]
    ref, commit = served_ref(str(vault.git_root), entry.ref)
    if commit is None:  # what the files cannot tell, git may (a reftable repository, a loose annotated tag)
        from cairn.index.build import served_commit

        try:
            ref, commit = served_commit(vault, ref=entry.ref)
        except CairnError:
            commit = None
    if commit is None:
        advice = missing_ref(vault.git_root, ref, entry.ref, serve_another(entry), vault_root=vault.root)
        checks.append(Check("ref", name, False, advice.problem, advice.command, advice.note))
        return checks
    lost = _lost_commit(vault, ref, commit, entry)
    if lost is not None:  # one finding: the index cannot be judged against a commit that is not there
        checks.append(Check("ref", name, False, *lost))
        return checks
    checked_out = checked_out_branch(vault.git_root, ref, entry.ref, serve_another(entry))
    if ref == "HEAD" and not entry.ref:  # no branch to serve: whatever is checked out is served
        advice = detached_head(vault.git_root, commit, serve_another(entry))
        checks.append(Check("ref", name, False, advice.problem, advice.command, advice.note))
    elif checked_out is not None:
        checks.append(Check("ref", name, False, checked_out.problem, checked_out.command, checked_out.note))
    elif (unpushed := local_branch_served(vault.git_root, ref, entry.ref)) is not None:
        checks.append(Check("ref", name, False, unpushed.problem, unpushed.command, unpushed.note))
    else:
        checks.append(Check("ref", name, True, f"serves {ref} at {commit[:8]}"))
    indexed = _cache_can_take(_index_check(name, root, commit, vault), index_file(os.path.realpath(root)))
    checks.append(indexed)
    from cairn import gitrepo

    ignored = gitrepo.ignored_cards_note(vault)  # in the folder, never in a commit: "N cards" said nothing of them
    if ignored is not None:
        checks.append(Check("cards", name, None, ignored))
    if encodes:  # also when the index check fails for a card left out: the index may still be served, vectors and all
        checks.append(_vectors_check(name, index_file(os.path.realpath(root))))
    elif not installed:
        checks += _left_vectors_check(name, index_file(os.path.realpath(root)))
    checks += _git_hook_checks(name, vault)
    return checks


def _unreadable_vault(entry: VaultEntry, exc: OSError) -> Check:
    """The failing check of a configured vault a file of which the system refuses to read (its folder, its index:
    no permission, a name too long): the hook serves nothing from it. The file named is the one refused."""
    where = exc.filename if isinstance(exc.filename, str) else entry.path
    detail = f"{where} cannot be read ({exc.strerror or exc}): the hook serves nothing from this vault"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return Check("vault", entry.name, False, detail, note=f"check the owner and mode of {shlex.quote(where)}")
    return Check("vault", entry.name, False, detail, add_again(entry), _VAULT_PATH)


def _semantic_check(env: dict[str, str]) -> tuple[Check, bool]:
    """The semantic extra: installed or not, which engine encodes, switched off here or not; and whether vaults'
    card vectors should be checked (installed and on)."""
    from cairn.extras import install_command
    from cairn.semantic import encoder as enc
    from cairn.semantic import vectors

    if not enc.available():
        detail = f"not installed (optional): prompts are served by words alone; {install_command('semantic')}"
        return Check("semantic", "extra", None, detail), False
    if vectors.off_here(env):
        return Check("semantic", "extra", None, "installed, switched off here by CAIRN_SEMANTIC"), False
    try:  # load it and encode a word, as the warm encoder does: a package found is not an engine that runs
        enc.Encoder().queries(["cairn doctor"])
    except Exception as exc:
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
        detail = f"installed but cannot encode here ({reason}): prompts are served by words alone"
        if isinstance(exc, (MemoryError, enc.EncoderOutOfMemory)):  # a higher limit helps, not a reinstall
            return Check("semantic", "extra", False, detail, note="raise the memory limit or free some memory"), False
        return Check("semantic", "extra", False, detail, install_command("semantic", reinstall=True)), False
    from cairn.hot import state_folder
    from cairn.hot.semantic import MAX_SOCKET_PATH, SOCKET_NAME, socket_blocked, socket_fits

    given = env.get("CAIRN_STATE_DIR", "")
    state = given if os.path.isabs(given) else state_folder()  # a relative one is ignored (`_relative_folders`)
    if not socket_fits(state):
        detail = (
            f"the warm encoder cannot listen: its socket path in {state} is over {MAX_SOCKET_PATH} bytes, so every "
            "prompt is served by words alone"
        )
        return Check("semantic", "extra", False, detail, note="set CAIRN_STATE_DIR to a shorter folder"), False
    if socket_blocked(state):
        where = os.path.join(state, SOCKET_NAME)
        detail = f"the warm encoder cannot listen: a folder stands at {where}, so every prompt is served by words alone"
        return Check("semantic", "extra", False, detail, f"rmdir {shlex.quote(where)}", _EMPTY_FIRST), False
    from cairn.hot.semantic import STALL_SECONDS, stall_age

    stalled = stall_age(state)
    if stalled is not None:  # a client waited for the warm encoder in vain: prompts go by words for a while
        detail = (
            f"the warm encoder did not answer a prompt in time {stalled:.0f} s ago: prompts are served by words "
            f"alone for {STALL_SECONDS:.0f} s after that, then it is asked again (see {state}/semantic.log)"
        )
        return Check("semantic", "extra", None, detail), True
    if enc.MODEL != enc.MODEL_I8:
        detail = (
            f"installed without onnxruntime: the numpy engine encodes ({enc.MODEL}), about 3x slower a prompt; "
            f"{install_command('semantic')} (then each vault's cards are encoded once more)"
        )
        return Check("semantic", "extra", None, detail), True
    return Check("semantic", "extra", True, f"installed: integer products in onnxruntime ({enc.MODEL})"), True


def _semantic_variables(env: dict[str, str]) -> list[Check]:
    """A failing check for each `CAIRN_SEMANTIC*` variable set to a value Cairn does not read: the hook, the warm
    encoder and `cairn index` use the default in its place without a word (a prompt never fails over one)."""
    from cairn.hot.semantic import switch_known
    from cairn.semantic.daemon import IDLE_SECONDS, idle_given
    from cairn.semantic.encoder import threads_given
    from cairn.semantic.vectors import FOREGROUND_CARDS, foreground_cards_given

    variables = (
        ("CAIRN_SEMANTIC", switch_known, "0, false, off or no to switch it off", "the channel stays on"),
        (
            "CAIRN_SEMANTIC_IDLE",
            lambda v: idle_given(v) is not None,
            "a number of seconds above 0",
            f"the default {IDLE_SECONDS:g} is used",
        ),
        (
            "CAIRN_SEMANTIC_THREADS",
            lambda v: threads_given(v) is not None,
            "a whole number of 1 or more",
            "the default (the cores) is used",
        ),
        (
            "CAIRN_SEMANTIC_FOREGROUND_CARDS",
            lambda v: foreground_cards_given(v) is not None,
            "a whole number of 0 or more",
            f"the default {FOREGROUND_CARDS} is used",
        ),
        (
            "CAIRN_SEMANTIC_FOREGROUND",
            lambda v: v in ("0", "1"),
            "1 (`cairn index` encodes every card itself) or 0",
            "`cairn index` leaves a large encoding to a background process",
        ),
    )
    return [
        Check(
            "semantic",
            name,
            False,
            f"{name}={shlex.quote(env[name][:40])} is not a value Cairn reads, so {fallback}",
            f"unset {name}",
            f"or set it to {allowed}",
        )
        for name, reads, allowed, fallback in variables
        if env.get(name, "").strip() and not reads(env[name])
    ]


def _vectors_check(name: str, path: str) -> Check:
    """A vault's card vectors (the semantic extra): there, of this encoder, of the indexed commit, sealed."""
    from cairn.semantic import encoder as enc
    from cairn.semantic import vectors

    fix = f"cairn index --vault {name}"
    try:
        with IndexReader(path) as reader:
            configured = vectors.configured(reader.config)
            n_cards = reader.n_cards
            config_error = reader.meta.get("config_error")
    except CairnError as exc:  # a damaged one is not "no index yet": the index line says what, with its fix
        from cairn.hot.errors import IndexMissing

        what = "no index yet" if isinstance(exc, IndexMissing) else "no usable index (see the index line)"
        return Check("semantic", name, None, f"{what}: its card vectors come with it")
    if config_error:  # an index of no card, which `cairn index` writes again until cairn.toml is fixed
        return Check("semantic", name, None, "the index holds no card (see the index line): no card vectors either")
    if not configured:
        return Check("semantic", name, None, "switched off by the vault's cairn.toml ([recall] semantic = false)")
    side = vectors.vectors_path(path)
    header = vectors.read_header(side)
    current = header is not None and header.get("model") == enc.MODEL and vectors.current(Path(path))
    # a side file cut short or whose seal fails keeps its header: it is being encoded again all the same
    whole = current and vectors.sealed(side)
    if not whole and vectors.encoding_now(Path(path)):
        detail = f"card vectors of {n_cards} cards being encoded in the background now (semantic.log); words meanwhile"
        return Check("semantic", name, None, detail)
    if header is None:
        if os.path.lexists(side):  # something is there, but no side file's header: damaged, or not a file at all
            kind = "a file" if side.is_file() and not side.is_symlink() else "not a regular file"
            detail = f"card vectors damaged ({kind} Cairn cannot read at {side}): the hook serves by words alone"
            if not side.is_file() or side.is_symlink():  # a link or a FIFO: `rm`; a folder: `rmdir`
                remove = "rmdir" if side.is_dir() and not side.is_symlink() else "rm"
                note = _EMPTY_FIRST if remove == "rmdir" else ""
                return Check("semantic", name, False, detail, f"{remove} {shlex.quote(str(side))} && {fix}", note)
            return Check("semantic", name, False, detail, fix)
        detail = "no card vectors: the hook serves this vault by words alone"
        return Check("semantic", name, False, detail, fix)
    if header.get("model") != enc.MODEL:
        model = str(header.get("model"))[:80]
        detail = f"card vectors of another encoder ({model}): the warm encoder encodes them again after a prompt"
        return Check("semantic", name, False, detail, fix)
    if not vectors.current(Path(path)):
        detail = "card vectors of another commit (a fresh `cairn index` encodes in the background: semantic.log)"
        return Check("semantic", name, False, detail, fix)
    if not whole:
        return Check("semantic", name, False, f"card vectors damaged ({side})", fix)
    return Check("semantic", name, True, f"card vectors of {n_cards} cards, current")


def _left_vectors_check(name: str, path: str) -> list[Check]:
    """Card vectors the semantic extra wrote before it was uninstalled: while they are there, the hook starts the warm
    encoder at a prompt every few seconds, in vain (a process and a line in semantic.log each time), until the
    vault's next index removes them."""
    from cairn.semantic.vectors import vectors_path

    side = vectors_path(path)
    if not os.path.lexists(side):
        return []
    detail = (
        f"card vectors left at {side} by the semantic extra, which is not installed now: the hook tries to start "
        "its warm encoder at each prompt (10 s apart at most), in vain (semantic.log)"
    )
    return [Check("semantic", name, False, detail, f"cairn index --vault {name}")]


def left_out_note(problems: int, vault_arg: str) -> str:
    """What follows an index's card count when it left card files out (a contract or a security rule refused them):
    said by doctor, and by `vault add` and `install` after they build the index."""
    return f"; {problems} card file(s) left out (see `cairn lint --vault {vault_arg}`)" if problems else ""


def _index_check(name: str, root: str, commit: str, vault: Any) -> Check:
    fix = f"cairn index --vault {name}"
    path = index_file(os.path.realpath(root))
    try:
        with IndexReader(path) as reader:
            indexed = reader.commit
            n_cards = reader.n_cards
            problems = len(reader.problems())
            ref = reader.meta.get("ref") or "HEAD"
            config_error = reader.meta.get("config_error") or ""
            rules = reader.meta.get("security_rules")
            allowed = reader.meta.get("security_allowed")
            off, off_now = reader.meta.get("security_off") or "[]", _switched_off_now(reader.meta.get("config"))
            damage = _damage(reader)
    except CairnError as exc:
        key = index_key_file()
        note = ""
        if os.path.isdir(key):  # `cairn index` cannot replace it (`IndexReader` says so)
            fix, note = f"rmdir {shlex.quote(key)} && {fix}", _EMPTY_FIRST
        return Check("index", name, False, f"no usable index ({exc})", fix, note)
    if damage:  # bytes changed since `cairn index` wrote them: the hook's seal checks refuse what they read
        return Check("index", name, False, f"damaged: {damage} ({path})", fix)
    if config_error:
        return Check(
            "index", name, False, f"serves nothing: {config_error}", note=f"commit a fix to cairn.toml in {root}"
        )
    if rules != SECURITY_RULES_VERSION:  # an older Cairn's: a card a newer rule refuses may be in it (`hot.hook`)
        detail = (
            f"serves nothing until rebuilt: checked by an older Cairn's security rules ({rules!r}, this Cairn's are "
            f"{SECURITY_RULES_VERSION!r})"
        )
        return Check("index", name, False, detail, fix)
    if allowed and leave_withdrawn(str(allowed)):  # the hook serves nothing from it either (`hot.hook`)
        detail = (
            "serves nothing until rebuilt: built while your configuration let the vault switch security rules off "
            f"([security] allow_disabled_rules: {allowed}), and it no longer does"
        )
        return Check("index", name, False, detail, fix)
    if off_now is not None and json.loads(off) != off_now:  # `cairn index` reads every card again (`build`)
        was, now = (", ".join(rules) or "no security rule" for rules in (json.loads(off), off_now))
        detail = (
            f"stale: built when the vault's cairn.toml could switch off {was}, and your [security] "
            f"allow_disabled_rules now lets it switch off {now}: it leaves out other cards than a rebuilt one would"
        )
        return Check("index", name, False, detail, fix)
    left_out = left_out_note(problems, name)
    if indexed != commit:
        if not _descends(vault, indexed, commit):  # `cairn index` refuses to follow a rewritten history by itself
            return Check(
                "index",
                name,
                False,
                f"diverged: {ref} at {commit[:8]} does not descend from the indexed {indexed[:8]} (history was "
                f"rewritten); agents get nothing from this vault until it is rebuilt; if the new history is right, "
                f"rebuild{left_out}",
                f"cairn index --vault {name} --rebuild",
            )
        return Check("index", name, False, f"stale: indexed {ref} {indexed[:8]}, serving {commit[:8]}{left_out}", fix)
    return Check(
        "index",
        name,
        not problems,
        f"{n_cards} cards at {commit[:8]}{left_out}",
        f"cairn lint --vault {name}" if problems else "",
    )


def _switched_off_now(config: str | None) -> list[str] | None:
    """The security rules an index's stored vault settings switch off under the user's leave as it is now
    (`security.switched_off`, what `cairn index` compares with the meta's `security_off`); None when unreadable."""
    from cairn.lint.security import switched_off

    try:
        disable = json.loads(config or "")["lint"]["disable"]
    except (ValueError, TypeError, KeyError):
        return None
    return list(switched_off(disable)) if isinstance(disable, list) else None


def _cache_can_take(check: Check, index: str) -> Check:
    """`check` as is, unless its fix is to run `cairn index` and the cache cannot take the index: then the fix is
    what makes it writable (`cairn index` would only fail with the same read-only error)."""
    if check.ok is not False or not check.fix.startswith("cairn index"):
        return check
    unwritable = _unwritable(os.path.dirname(index), "cache", "CAIRN_CACHE_DIR", cache_folder())
    if unwritable is None:
        return check
    why, fix, note = unwritable
    detail = check.detail.replace("; run `cairn index`", "")  # the index error's own advice, which cannot work here
    if not fix:  # no command makes it writable: the note says what to do, then the index command
        return Check(
            check.area,
            check.subject,
            False,
            f"{detail}; {why}, so `{check.fix}` cannot write it",
            note=f"{note}, then `{check.fix}`",
        )
    return Check(
        check.area,
        check.subject,
        False,
        f"{detail}; {why}, so `{check.fix}` cannot write it",
        f"{fix} && {check.fix}",
        note,
    )


def _unwritable(folder: str, what: str, variable: str, root: str | None = None) -> tuple[str, str, str] | None:
    """(why, fix, note) when Cairn cannot write in `folder`, or make it (the nearest folder there is, when it is not
    yet): on a read-only file system, not writable, or a file in the way of the folder; None when it can (or nothing
    can tell). root: the folder `variable` names, `folder` or one above it; what stands above it is named apart from
    it, never as the folder itself."""
    root = root or folder
    while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
        if os.path.lexists(folder):  # a file (or a dangling link) where Cairn would make the folder
            quoted = shlex.quote(folder)
            why = (
                f"a file stands where Cairn keeps its {what} folder {folder}"
                if _within(folder, root)
                else f"a file stands at {folder}, in the way of Cairn's {what} folder {root}"
            )
            return why, f"mv {quoted} {quoted}.old", ""
        folder = os.path.dirname(folder)  # the nearest folder there is: Cairn makes the rest
    named = (
        f"the {what} folder {folder}" if _within(folder, root) else f"the {what} folder {root} cannot be made: {folder}"
    )
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return None
    if read_only:
        return f"{named} is on a read-only file system", "", f"point {variable} at a writable folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        if _owner_is_another(folder):  # `chmod` of another user's folder fails: "Operation not permitted"
            return f"{named} is another user's and not writable", "", f"point {variable} at a folder of your own"
        fix = f"chmod u+wx {shlex.quote(folder)}"
        return f"{named} is not writable", fix, f"or point {variable} at a writable folder"
    return None


def _within(path: str, root: str) -> bool:
    """Whether `path` is `root` or inside it."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _owner_is_another(folder: str) -> bool:
    """Whether another user owns `folder`, so that this user (not root) cannot change its mode."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    try:
        return uid != 0 and os.stat(folder).st_uid != uid
    except OSError:
        return False


def _caches_of_vaults_gone() -> list[Check]:
    """An information line for each folder of the cache whose vault is gone (deleted or moved by hand, a removed
    `git worktree`): its indexes and card vectors are kept under the vault's old path, and nothing else removes them.
    The vault is the folder its indexes were built from (meta `vault_root`: the served ref's, else a `--worktree` or
    `--ref` one's, which a vault indexed only so also leaves); a folder without a readable index is left alone."""
    folder = os.path.join(cache_folder(), "vaults")
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    checks = []
    for name in names:
        path = os.path.join(folder, name)
        root = _indexed_root(path)
        if root and not os.path.isdir(root):
            detail = f"the index of {root}, which is not a folder any more (deleted or moved)"
            note = "nothing else removes it; were the vault to come back, `cairn index` would build it again"
            checks.append(Check("cache", name, None, detail, f"rm -rf {shlex.quote(path)}", note))
    return checks


def _indexed_root(path: str) -> str:
    """The vault folder the indexes in the cache folder `path` were built from: the served ref's index first, then
    the others (`worktree.cairn`, `ref-*.cairn`); "" when none can be read."""
    try:
        others = sorted(name for name in os.listdir(path) if name.endswith(".cairn") and name != INDEX_NAME)
    except OSError:
        return ""
    for name in (INDEX_NAME, *others):
        try:
            with IndexReader(os.path.join(path, name)) as reader:
                root = reader.meta.get("vault_root") or ""
        except (CairnError, OSError):
            continue
        if root:
            return str(root)
    return ""


def _state_check() -> list[Check]:
    """A failing check when the hook cannot write in the state folder: it still serves, but keeps no log, no record
    of the cards each agent session already got (so they come again on every prompt), and the warm encoder of the
    semantic extra has no socket there."""
    from cairn.hot import state_folder

    unwritable = _unwritable(state_folder(), "state", "CAIRN_STATE_DIR")
    if unwritable is None:
        return _log_check(state_folder())
    why, fix, note = unwritable
    detail = (
        f"{why}: the hook keeps no log there, nor which cards each agent session already got (they are injected "
        "again on every prompt), and the warm encoder cannot listen there"
    )
    return [Check("folders", "state", False, detail, fix, note)]


def _log_check(folder: str) -> list[Check]:
    """A failing check when the hook log is in the way in a state folder the hook can write (`log_in_the_way`): each
    prompt is served, but leaves no line in the log and writes one on the agent's stderr."""
    from cairn.hot.hook import log_in_the_way

    log = log_in_the_way(folder)
    if log is None:
        return []
    detail = f"the hook log {log} is not a file the hook can write: no prompt is logged (each says so on stderr)"
    return [Check("folders", "state", False, detail, f"mv {shlex.quote(log)} {shlex.quote(log + '.old')}")]


def _damage(reader: IndexReader) -> str:
    """The first thing wrong with a whole index file ("" when nothing): `cairn audit`'s check of its bytes."""
    from cairn.index.store import verify

    problems = verify(reader, row_seals=False)  # the file's seal first; every record only when it fails
    return problems[0] if problems else ""


def _unsupported_repository(vault: Any) -> tuple[str, str, str] | None:
    """(why, fix, note) when Cairn cannot read the vault's repository (a SHA-256 one; another user's, which git refuses:
    an agent or a job run as another user, the vault's files owned by root), else None. Every `cairn index`, and the
    git hooks, fail there: the checks below would give fixes that fail the same way."""
    from cairn import gitrepo
    from cairn.hot.errors import RepositoryNotOwned, UnsupportedRepository

    try:
        with gitrepo.open_repo(vault):
            return None
    except UnsupportedRepository as exc:
        return str(exc), "", "move its cards/ and cairn.toml to a sha1 repository"
    except RepositoryNotOwned as exc:
        return str(exc), gitrepo.trust_command(vault.git_root), ""
    except CairnError:  # another reason (damage): the checks below say it
        return None


def _lost_commit(vault: Any, ref: str, commit: str, entry: VaultEntry) -> tuple[str, str, str] | None:
    """(problem, fix, note) when the served ref names an object the repository does not hold as a commit (a damaged or
    incomplete clone; a configured ref that is a tree's id), else None. The files alone cannot tell: git is asked."""
    from cairn import gitrepo

    root = shlex.quote(str(vault.git_root))
    try:
        with gitrepo.open_repo(vault) as repo:
            if gitrepo.commit_exists(repo, commit):
                return None
    except CairnError:
        return None  # git cannot read the repository: the checks after this say so
    elsewhere = gitrepo.elsewhere_variables()
    if elsewhere:  # not the repository's damage: git was told to read its commits from another folder
        names = " ".join(v.split("=")[0] for v in elsewhere)
        return (
            f"{ref} names {commit[:8]}, which git does not find: {' and '.join(elsewhere)} in the environment has "
            "git read the commits from there, so no index of this vault can be built while it is set",
            f"unset {names}",
            "",
        )
    if ref.lower() == commit:  # a configured object id
        return (
            f"the configured ref {commit[:8]} is not a commit this repository holds (a tree's or a blob's id?), so "
            "agents get nothing from this vault",
            add_again(entry, str(vault.root), ref="BRANCH"),
            "BRANCH: the reviewed branch it is to serve",
        )
    what = "the branch" if ref.startswith("refs/heads/") else "it"
    return (
        f"{ref} names {commit[:8]}, which is not a commit this repository holds (damaged or incomplete?), so agents "
        f"get nothing from this vault; point {what} at a commit again (`git branch -f`, `git fetch`)",
        f"git -C {root} fsck",
        "",
    )


def _descends(vault: Any, indexed: str, commit: str) -> bool:
    """Whether the served commit descends from the indexed one (an index that only lags behind: stale)."""
    from cairn import gitrepo

    try:
        with gitrepo.open_repo(vault) as repo:
            return gitrepo.commit_exists(repo, indexed) and gitrepo.is_ancestor(repo, indexed, commit)
    except CairnError:
        return True  # git cannot tell: call it stale, whose fix is tried first


def _git_hook_checks(name: str, vault: Any) -> list[Check]:
    from cairn import gitrepo

    try:
        hooks = gitrepo.hooks_dir(vault)
    except CairnError as exc:  # git cannot read the repository (a damaged .git/config): the message says what to fix
        return [Check("git-hooks", name, False, str(exc), f"git -C {shlex.quote(str(vault.git_root))} status")]
    missing = githooks.missing_git_hooks(hooks)
    detail, fix = f"{', '.join(githooks.GIT_HOOKS)} in {hooks}", ""
    if missing:
        detail, fix = f"missing: {', '.join(missing)} in {hooks}", f"cairn install git-hooks --vault {name}"
        held = [hook for hook in githooks.foreign_git_hooks(hooks) if hook in missing]
        husky = [hook for hook in githooks.husky_git_hooks(hooks) if hook in missing]
        if husky:  # install refuses them, --chain too: no command fixes it
            one = len(husky) == 1
            vault_dir = vault.prefix.rstrip("/") or "."
            detail += f"; the {', '.join(husky)} there {'is' if one else 'are'} husky's: " + githooks.husky_advice(
                husky, vault_dir
            )
            fix = ""
        elif held:  # install refuses to write over them without --chain
            one = len(held) == 1
            detail += (
                f"; the {', '.join(held)} there {'is' if one else 'are'} not Cairn's: --chain keeps "
                f"{'it' if one else 'them'} (as <name>.local, run first)"
            )
            fix += " --chain"
    checks = [Check("git-hooks", name, not missing, detail, fix)]
    executable = install.cairn_executable()
    outdated = githooks.outdated_git_hooks(vault, hooks, executable) if not missing else []
    # Whether or not they look up to date: after `mv venv venv2` and `cairn install git-hooks` run with `venv2/bin/python
    # -m cairn`, they run `venv2/bin/cairn`, which is there but cannot start.
    idle = githooks.idle_git_hooks(vault, hooks) if not missing else None
    if idle is not None:  # they look installed, but every commit leaves the index stale
        detail, fix = f"{', '.join(outdated or githooks.GIT_HOOKS)} in {hooks} {idle}", _git_hooks_fix(name, executable)
        other = githooks.hooks_work_tree(hooks)
        own = _own_hooks_dir(vault) if other and os.path.isdir(other) else None
        if own is not None and own != hooks.resolve():  # a folder core.hooksPath shares with the repository of `other`
            detail += (
                f"; {hooks} (core.hooksPath) is shared, and installing them there again would take them from "
                f"{other}: the fix gives this repository its own hooks folder, {own}; the hooks in {hooks} then no "
                "longer run in it"
            )
            fix = f"git -C {shlex.quote(str(vault.git_root))} config core.hooksPath {shlex.quote(str(own))} && {fix}"
        checks[0] = Check("git-hooks", name, False, detail, fix)
    elif outdated:
        detail = (
            f"{', '.join(outdated)} in {hooks} were written by another Cairn (or for another `cairn`): "
            f"`cairn install git-hooks --vault {name}` brings them up to date"
        )
        checks.append(Check("git-hooks", name, None, detail))
    has_config = os.path.isfile(os.path.join(vault.root, ".pre-commit-config.yaml"))
    if has_config:
        # pre-commit's own line: another tool's hook there (a global core.hooksPath's, init.templateDir's) says
        # "pre-commit" too, and runs no card lint
        ok = _has(hooks / "pre-commit", githooks.PRE_COMMIT_MARKER)
        detail = "installed" if ok else "the vault has .pre-commit-config.yaml but its hook is not installed"
        lost = _missing_precommit_config(hooks / "pre-commit", vault.git_root) if ok else None
        if lost is not None:
            ok = False
            detail = (
                f"its hook reads {lost}, which is not there, so every commit in {vault.git_root} fails; install it "
                "again from the vault's folder, whose .pre-commit-config.yaml it then reads"
            )
        # From the vault's own folder: pre-commit records the config's path from there (`--config=lessons/...`),
        # while one installed at the top of a repository the vault is a folder of reads a config that is not there.
        own = None if ok else _own_hooks_dir(vault)
        fix = "" if ok else pre_commit_install(shlex.quote(str(vault.root)), own)
        if own is not None:
            detail += f"; pre-commit refuses to install while core.hooksPath is set ({hooks})"
            if own != hooks.resolve():
                detail += (
                    f": the fix gives this repository its own hooks folder, {own}; the hooks in {hooks} then no "
                    "longer run in it"
                )
        script = install.cairn_script()
        if ok and script and shutil.which("cairn") is None and _runs_cairn_from_path(Path(vault.root)):
            ok, fix = False, _path_export(script)
            if githooks.cannot_start(str(script)) is not None:  # the PATH would find a `cairn` that does not start
                fix = f"{reinstall_command()} && {fix}"
            detail = (
                "installed, but its hook runs `cairn` from the PATH, which finds none here, so every commit fails "
                "(\"Executable `cairn` not found\"); the fix puts this Cairn's folder there (in your shell's profile too)"
            )
        checks.append(Check("pre-commit", name, ok, detail, fix))
    return checks


def _runs_cairn_from_path(root: Path) -> bool:
    """Whether the vault's .pre-commit-config.yaml has a hook running `cairn` from the PATH (`language: system`, as
    the template's), not from an environment pre-commit makes."""
    import yaml

    from cairn.cards import safeyaml

    try:
        config = safeyaml.load(
            (root / ".pre-commit-config.yaml").read_text("utf-8"), max_bytes=1 << 20, what=".pre-commit-config.yaml"
        )
    except (OSError, ValueError, yaml.YAMLError):  # UnicodeDecodeError and YamlRejected are ValueErrors
        return False
    repos = config.get("repos") if isinstance(config, dict) else None
    for repo in repos if isinstance(repos, list) else ():
        for hook in (repo.get("hooks") if isinstance(repo, dict) else None) or ():
            if not isinstance(hook, dict) or hook.get("language") != "system":
                continue
            entry = hook.get("entry")
            if isinstance(entry, str) and entry.split()[:1] == ["cairn"]:
                return True
    return False


def _git_hooks_fix(name: str, executable: str) -> str:
    """The command that writes the vault's git hooks again, running this Cairn's `cairn`; when that script cannot start
    either (its venv moved), Cairn installed again in place first, which `install git-hooks` would otherwise refuse."""
    if githooks.cannot_start(executable) is None:
        return f"cairn install git-hooks --vault {name}"
    # This interpreter's Cairn, not a `cairn` the PATH may find elsewhere, or not at all
    return f"{reinstall_command()} && {shlex.quote(sys.executable)} -m cairn install git-hooks --vault {name}"


def _path_export(script: Path) -> str:
    """The shell command that puts the folder of this install's `cairn` script on the PATH."""
    return f"export PATH={shlex.quote(os.path.dirname(os.path.abspath(script)))}:$PATH"


def pre_commit_install(at: str, own: Path | None) -> str:
    """The command that installs pre-commit's hook from the folder `at` (a shell word: the vault's, whose
    .pre-commit-config.yaml the hook then reads). `own`: the repository's own hooks folder when core.hooksPath is set
    (`gitrepo.own_hooks_dir`), where pre-commit refuses to install whatever its value: the setting is emptied for the
    install, then names that folder, so the repository keeps one where git runs the hook."""
    pre_commit = _pre_commit_command()
    if own is None:
        return f"cd {at} && {pre_commit} install"
    return (
        f"cd {at} && git config core.hooksPath '' && {pre_commit} install && "
        f"git config core.hooksPath {shlex.quote(str(own))}"
    )


def _pre_commit_command() -> str:
    """`pre-commit` when the PATH finds it, else the one installed beside this Cairn's script (a dependency of
    Cairn's: in its venv, or pipx's, which puts only `cairn` on the PATH), by its full path."""
    script = install.cairn_script()
    beside = script.with_name("pre-commit") if script is not None else None
    if shutil.which("pre-commit") is None and beside is not None and beside.is_file():
        return shlex.quote(str(beside))
    return "pre-commit"


def _own_hooks_dir(vault: Any) -> Path | None:
    """`gitrepo.own_hooks_dir`, or None when git cannot tell (the git-hooks check says why)."""
    from cairn import gitrepo

    try:
        return gitrepo.own_hooks_dir(vault)
    except CairnError:
        return None


def _missing_precommit_config(hook: Path, work_tree: Path | None) -> str | None:
    """The config file pre-commit's installed hook reads (`--config=PATH`, from the top of the work tree) when it is
    not there, else None. pre-commit then refuses every commit: "No .pre-commit-config.yaml file was found"."""
    try:
        found = re.search(r"hook-impl --config=(\S+)", hook.read_text("utf-8", "replace"))
    except OSError:
        return None
    if found is None or work_tree is None:
        return None
    config = found.group(1).strip("'\"")
    return None if os.path.isfile(os.path.join(work_tree, config)) else config


def _has(path: Path, text: str) -> bool:
    try:
        return os.access(path, os.X_OK) and text in path.read_text("utf-8", "replace")
    except OSError:
        return False


def _agent_checks(cwd: Path, entries: list[VaultEntry]) -> list[Check]:
    checks: list[Check] = []
    found = False
    for agent in install.AGENTS:
        try:
            places = _places(agent, cwd)
        except CairnError as exc:  # a HOME (or CODEX_HOME, CLAUDE_CONFIG_DIR) no agent could use either
            places = [("project", p) for p in _project_settings(agent, cwd)]
            fix, note = "export HOME=/path/to/your/home", "/path/to/your/home: your home folder's full path"
            if isinstance(exc, install.HomeNotAbsolute) and exc.variable != "HOME":
                fix, note = f"unset {exc.variable}", f"or export {exc.variable}=/full/path/of/its/folder"
            checks.append(Check("agent", f"{agent} (user)", False, str(exc), fix, note))
        runs_cairn = False
        cairns: list[str] = []
        runs: list[tuple[str, Path, str]] = []
        for where, path in places:
            if not path.is_file():
                continue
            commands = install.cairn_commands(agent, path)
            if commands is None:
                why = f"{path} is not valid TOML" if path.suffix == ".toml" else install.settings_problem(agent, path)
                checks.append(
                    Check("agent", f"{agent} ({where})", False, why or f"{path} is not valid JSON", note=f"fix {path}")
                )
                continue
            if not commands:
                continue
            runs_cairn = True
            cairns += commands
            for command in commands:
                checks.append(_command_check(agent, where, path, command))
                runs.append((where, path, command))
        if runs_cairn:
            checks += _switched_off(agent, places, cairns)
            checks += _served_twice(agent, runs, entries)
        found = found or runs_cairn
    if not found:
        checks.append(
            Check("agent", "any", False, "no agent's settings run `cairn hook`", "cairn install claude-code --user")
        )
    return checks


def _places(agent: str, cwd: Path) -> list[tuple[str, Path]]:
    """Each settings file the agent reads when started in `cwd`: the user's, then the project's (`_project_settings`)."""
    places = [("user", path) for path in install.user_files(agent)]
    return places + [("project", p) for p in _project_settings(agent, cwd) if all(p != q for _, q in places)]


def served_twice(agent: str, cwd: Path) -> Check | None:
    """The failing check of `_served_twice` for an agent started in `cwd`, or None (`cairn install` says it at once)."""
    try:
        places, entries = _places(agent, cwd), load_vaults()
    except CairnError:  # doctor names a broken HOME or configuration
        return None
    runs = [
        (where, path, command)
        for where, path in places
        if path.is_file()
        for command in install.cairn_commands(agent, path) or []
    ]
    found = _served_twice(agent, runs, entries)
    return found[0] if found else None


def _served_twice(agent: str, runs: list[tuple[str, Path, str]], entries: list[VaultEntry]) -> list[Check]:
    """A failing check when two of an agent's Cairn hooks (its user and project settings merge, and each hook runs)
    serve the same vault: the first to take the session's lock gives the cards, the other what is left (a card
    comes twice only when the state folder keeps no session). Identical commands count once (Claude Code
    runs a command that two files hold once); hooks that bake in different vaults are a deliberate split."""
    configured = {os.path.realpath(e.path) for e in entries}
    served: list[tuple[str, Path, set[str]]] = []  # each distinct runnable hook and the vault folders it serves
    seen: set[str] = set()
    for where, path, command in runs:
        try:
            argv = install.command_words(command)
        except ValueError:
            continue
        problem, options = _hook_arguments(agent, argv)
        if problem or options is None or command in seen:
            continue
        seen.add(command)
        folders = configured if options.vault is None else _baked_folder(options.vault)
        if options.vault is None and not folders:  # no configuration: each finds the same vault from the cwd
            folders = {""}
        served.append((where, path, folders))
    for i, (where, path, folders) in enumerate(served):
        for other_where, other_path, other_folders in served[i + 1 :]:
            if not folders & other_folders:
                continue
            project = next((p for w, p in ((where, path), (other_where, other_path)) if w == "project"), None)
            toml = next((p for p in (path, other_path) if p.suffix == ".toml"), None)
            if toml is not None:  # Cairn never rewrites TOML: installing again would keep both
                event = install.AGENTS[agent].event
                fix, note = "", f"remove Cairn's [[hooks.{event}]] entry from {toml} by hand"
            elif project is not None:
                fix, note = shlex.join(["cairn", "uninstall", agent, "--project", str(project.parent.parent)]), ""
            else:
                fix, note = shlex.join(["cairn", "install", agent, "--user"]), ""
            detail = (
                f"Cairn's hook runs twice on each prompt ({where}: {path}; {other_where}: {other_path}) and both "
                "serve the same vault: the two race for the agent's session, which gives each card once, so the "
                "cards a prompt gets depend on which hook runs first (each comes twice when no session can be kept); "
                "keep one"
            )
            return [Check("agent", f"{agent} (twice)", False, detail, fix, note)]
    return []


def _baked_folder(given: str) -> set[str]:
    """The folder a hook's baked `--vault` serves: a configured vault's (its own checks say when it is unusable), else
    what the hook finds (`hook_vaults`: a vault's absolute path; another name, or a relative path doctor would read
    from its own folder, serves nothing); empty when it serves none."""
    try:
        named = next((e.path for e in load_vaults() if e.name == given), None)
        return {os.path.realpath(named or hook_vaults(given)[0][0].dirs.root)}
    except (CairnError, OSError):
        return set()


def _switched_off(agent: str, places: list[tuple[str, Path]], commands: list[str]) -> list[Check]:
    """A failing check for each of the agent's own settings that keeps Cairn's installed hook from running."""
    if agent == "claude-code":
        found = agent_switches.claude_hooks_switched_off(places)
    elif agent == "codex":
        user = [path for where, path in places if where == "user"]
        found = agent_switches.codex_hooks_switched_off(user[0].with_name("config.toml")) if user else []
    else:
        found = agent_switches.gemini_hooks_switched_off(places, commands)
    return [Check("agent", f"{off.agent} ({off.where})", False, off.detail, note=off.fix) for off in found]


def _project_settings(agent: str, cwd: Path) -> list[Path]:
    """The agent's project files that may hold hooks for `cwd` (`install.project_files`: Claude Code's personal
    settings.local.json and shared settings.json, Codex's config.toml beside its hooks.json): in `cwd` itself
    (where Claude Code and Gemini CLI started there read them, and where `cairn install` run there writes them) and
    in each folder above it up to the git work tree's root (where Codex also looks, and an agent started at the
    root reads them)."""
    folder = cwd.resolve()
    paths: list[Path] = []
    for candidate in (folder, *folder.parents):
        paths += install.project_files(agent, candidate)
        if git_dir(str(candidate)) is not None:
            return paths
    return install.project_files(agent, folder)


def _command_check(agent: str, where: str, path: Path, command: str) -> Check:
    subject = f"{agent} ({where})"
    fix = _install_fix(agent, where, path)
    hand = _by_hand(path)
    note = f"{hand} first" if hand else ""  # the install writes hooks.json, and leaves the TOML entry
    try:
        argv = install.command_words(command)
    except ValueError:
        return Check("agent", subject, False, f"{path}: cannot read the hook command {command!r}", fix, note)
    problem, options = _hook_arguments(agent, argv)
    if problem:
        return Check("agent", subject, False, f"{path}: the hook command {command!r} {problem}", fix, note)
    baked = options.vault if options is not None else None
    if baked is not None and not _baked_folder(baked):
        if where == "project" and install.is_shared(agent, path) and is_vault_name(baked):
            # The team's committed file names the vault as each teammate registers it: installing again here would
            # rewrite that file for everyone, and serve them what this machine has configured instead.
            detail = (
                f"{path}: the hook's --vault {baked!r} names no vault configured here; this file is the project's "
                f"shared settings, so register the team's vault under that name (one configured under another name: "
                f"`cairn vault remove` it first)"
            )
            return Check("agent", subject, False, detail, f"cairn vault add PATH --name {baked}", _VAULT_PATH)
        return Check("agent", subject, False, f"{path}: the hook's --vault {baked!r} is no vault", fix, note)
    if options is not None:  # the install that fixes this hook serves what it serves now
        fix = _install_fix(agent, where, path, options.vault, options.scope)
    if where == "project" and install.is_shared(agent, path) and install.names_this_machine(command):
        detail = (
            f"{path} is the project's shared settings (committed), and its hook runs "
            f"{install.names_this_machine(command)}, a path of this machine that teammates do not have"
        )
        return Check("agent", subject, False, detail, fix, note)
    executable = shutil.which(argv[0]) if argv else None
    words = argv[: argv.index("hook", 1)] if "hook" in argv[1:] else argv[:1]
    runs = [executable or argv[0], *words[1:]]
    if where == "project" and not _cairn_launcher(runs, _project_tree(path)):
        detail = (
            f"{path}: the hook command {command!r} runs {shlex.join(runs)}, not Cairn as `cairn install` writes it "
            "(`cairn`, or a Python with Cairn's script, from outside the project); a project's settings may be "
            "anyone's (a cloned repository's), so doctor does not run it"
        )
        return Check("agent", subject, False, detail, fix, note)
    if executable is None:
        script = install.cairn_script()
        if argv and argv[0] == "cairn" and where == "project" and install.is_shared(agent, path) and script:
            # a shared file's portable hook: this machine's PATH lacks the folder of its `cairn` command (a file only
            # this user reads is fixed by installing again, which writes this machine's full path)
            fix, note = _path_export(script), "in your shell's profile, where the agent starts"
        return Check("agent", subject, False, f"{path}: {argv[0] if argv else command!r} is not found", fix, note)
    # What runs `cairn`, as the hook runs it: `cairn`, or `PYTHON -I -S /path/to/cairn` (`install.hook_launcher`).
    launcher = [executable, *argv[1 : argv.index("hook", 1)]] if "hook" in argv[1:] else [executable]
    shown = shlex.join(launcher)
    try:
        done = subprocess.run(
            [*launcher, "--version"], capture_output=True, text=True, timeout=20, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return Check("agent", subject, False, f"{shown} does not run ({exc})", fix, note)
    if done.returncode != 0 or not done.stdout.startswith("cairn "):
        return Check("agent", subject, False, f"{shown} --version failed (exit {done.returncode})", fix, note)
    # A baked --vault serves that vault alone, whatever the `resolve` lines above say of the configured vaults.
    only = f"; it serves --vault {baked} only, not the configured vaults" if baked is not None else ""
    portable = where == "project" and install.is_shared(agent, path)  # runs `cairn` from the PATH, by design
    said = done.stdout.strip()
    other = ""
    if said != f"cairn {build_name()}":  # an older or newer Cairn than this one serves the agent's prompts
        here = install.cairn_script()
        other = f"; not this Cairn (cairn {build_name()}{f', {here}' if here else ''})"
    flags = [word for word in install.hook_launcher()[1:] if word.startswith("-")]  # -I -S
    if not portable and flags and not set(flags) <= set(launcher[1:]):  # an older install
        # a config.toml entry goes by hand first: then the command, in its own code span
        again = f"{hand}, then `{fix}`" if hand else f"`{fix}` again"
        return Check(
            "agent",
            subject,
            True,
            f"{path} runs {shown} ({said}){only}{other}; {again} starts {'this one' if other else 'it'} without "
            "`site`, faster on every prompt, and isolated (`-I`): a PYTHONPATH naming the agent's folder can no "
            "longer put its code in Cairn's place",
        )
    if other:
        other += ": the `cairn` first on the agent's PATH" if portable else f": `{fix}` to run this one"
    return Check("agent", subject, True, f"{path} runs {shown} ({said}){only}{other}")


_PYTHON_FLAGS = frozenset({"-I", "-S", "-E", "-s"})  # the flags a launcher of `cairn install`'s has carried


def _cairn_launcher(words: list[str], project: Path) -> bool:
    """Whether the words before `hook` are a launcher `cairn install` writes (`install.hook_launcher`, an older
    Cairn's too) from outside the `project` tree: `cairn` from the PATH or by its full path, or a Python with those
    flags and Cairn's script or `cairn/__main__.py` by its full path. Doctor runs a hook's launcher (`--version`); in
    a project's settings, which a cloned repository commits, anything else (`sh -c '...' cairn hook`, `./x cairn
    hook`, a `cairn` of the repository's own) is never run."""
    inside = str(project.resolve()).rstrip("/") + "/"
    own = {os.path.realpath(p) for p in (*install.hook_launcher(), install.cairn_executable()) if os.path.isabs(p)}
    for word in words:
        if "/" not in word:
            continue
        if not os.path.isabs(word):  # a relative path names a file of the current folder
            return False
        real = os.path.realpath(word)
        if real.startswith(inside) and real not in own:  # the project's own file (this Cairn may live there too)
            return False
    if not words:
        return False
    head, *rest = words
    if not rest:
        return os.path.basename(head) in ("cairn", "cairn.exe")
    script = rest[-1]
    is_cairn = os.path.basename(script) in ("cairn", "cairn.exe") or script.endswith("/cairn/__main__.py")
    is_python = os.path.basename(head).rstrip("0123456789.").removesuffix(".exe") == "python"
    return is_python and set(rest[:-1]) <= _PYTHON_FLAGS and os.path.isabs(script) and is_cairn


def _project_tree(settings: Path) -> Path:
    """The folder whose files come with a project's settings file: its git work tree (`<project>/.claude/x.json`
    in a repository), else the project folder."""
    project = settings.parent.parent
    for candidate in (project, *project.parents):
        if git_dir(str(candidate)) is not None:
            return candidate
    return project


# The hook formats each agent reads: claude-code and codex print the same UserPromptSubmit JSON.
_READS = {"claude-code": ("claude-code", "codex"), "codex": ("codex", "claude-code"), "gemini": ("gemini",)}


def _hook_arguments(agent: str, argv: list[str]) -> tuple[str, Options | None]:
    """What is wrong with a hook command's arguments, as `cairn hook` itself parses them ("" when nothing), and
    those arguments (the vault and scope it bakes in). A command the hook refuses exits 1 on every prompt; another
    agent's format is output this agent rejects or ignores."""
    from cairn.hot.hook import UsageError, parse_args

    if "hook" not in argv[1:]:  # a wrapper (`sh -c '...'`): the executable's own check judges it
        return "", None
    try:
        options = parse_args(argv[argv.index("hook", 1) + 1 :])
    except UsageError as exc:
        return f"cannot run: {exc}", None
    if options.problem:
        return f"serves nothing: {options.problem}", None
    if options.fmt not in _READS[agent]:
        return f"prints --format {options.fmt} output, which {agent} does not read", None
    return "", options


def _install_fix(agent: str, where: str, path: Path, vault: str | None = None, scope: str | None = None) -> str:
    """The `cairn install` that rewrites the hook in `path` (after `_by_hand`, for a TOML file), run from the current folder: a project's settings found
    in a folder above it (or under `doctor --cwd`) are named by --project, since a bare install writes the current
    folder's; a hook's --vault and --scope are kept, so the fix serves what the hook served."""
    words = ["cairn", "install", agent]
    if where == "user":
        words.append("--user")
    else:
        project = path.parent.parent  # <project>/.claude/settings.json, <project>/.codex/hooks.json, ...
        try:
            here: Path | None = Path.cwd().resolve()
        except OSError:  # the current folder was removed
            here = None
        if here != project.resolve():
            words += ["--project", str(project)]
    if vault:
        words += ["--vault", vault]
    if scope:
        words += ["--scope", scope]
    return shlex.join(words)


def _by_hand(path: Path) -> str | None:
    """What goes by hand before an install can replace the hook in `path`: Codex's [hooks] tables, since Cairn never
    rewrites TOML (the install writes hooks.json); None for a JSON settings file."""
    return f"remove Cairn's [[hooks.UserPromptSubmit]] entry from {path} by hand" if path.suffix == ".toml" else None
