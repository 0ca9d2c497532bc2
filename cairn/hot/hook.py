"""`cairn hook`: the agent prompt hook. Reads the agent's hook JSON on stdin, prints what that agent expects.

It fails open: whatever goes wrong, it exits 0 with nothing on stdout and writes the error to the log (to stderr
only when the log cannot be written). It never writes into the vault, and never writes the prompt anywhere: the
log holds its sha256 and length.

The hook log: one JSON line per prompt in `<state_dir>/hook.jsonl`. Never the prompt text. Each line: time, format,
hashed session id, the prompt's sha256 and length, the vaults in play (`vaults`: each one's name, folder, served
ref, indexed commit, whether its index was stale, why it was skipped, its error and the ids it gave), each vault's
first three candidates with score and gate decision (`cairn explain` shows them all), the injected ids (as shown:
`name:id` for a configured vault), and the error (or null). `vault`, `commit` and `stale` at the top are those of
the one vault when the hook serves a single vault given by path (`--vault`, `CAIRN_VAULT`), else null (`stale`:
any vault's index was).
"""

import os
import sys

from cairn.hot import (
    CHILD_FLAGS,
    CLEAN_PATH,
    build_name,
    child_env,
    dumps,
    index_key,
    loads,
    open_log,
    open_private,
    private_folder,
    sha256_hex,
    stamped_within,
    state_folder,
    utc_now,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import BinaryIO

    from cairn.hot.index import IndexReader
    from cairn.hot.recall import Candidate, Result
    from cairn.hot.serve import Layer, Pick
    from cairn.hot.vault import ServedVault, VaultDirs

FORMATS = ("claude-code", "codex", "gemini", "text", "json")
MAX_STDIN_BYTES = 8 * 1024 * 1024
# An agent writes its payload at once and closes stdin; one that keeps it open would hold the prompt until its own
# timeout ends the hook (`cairn install` gives it 10 s), with no line in the log to say why.
STDIN_SECONDS = 5
MAX_QUERY_CHARS = 8000  # a pasted log beyond this adds cost, not meaning
# The longest working folder an agent can have: Linux's getcwd(2) gives none longer (PATH_MAX), macOS's 1,024 bytes.
# A payload's `cwd` past it names no folder, and `os.path.realpath` (`serves_folder`, `vault_encloses`) takes time
# quadratic in a path's parts (Python 3.11): a `cwd` of 1 MB held a prompt that got a card for over a minute.
MAX_CWD_BYTES = 4096
CONTEXT_HARD_LIMIT = 9999
# `[hook] max_context_chars` below it reads as this: the frame (about 475 characters) and one card of lint's default
# lengths (a 300-character summary, its id, path and `cairn show` line) fit. At 500, no card ever did, and since
# layered vaults share the smallest limit, one vault set to it silenced them all.
CONTEXT_MIN = 1200
REINDEX_EVERY_SECONDS = 30
LOG_FILE = "hook.jsonl"
MAX_LOG_BYTES = 32 * 1024 * 1024  # then hook.jsonl becomes hook.jsonl.1 and a new file starts (`open_log`)
MAX_LOGGED_CANDIDATES = 20
# Each vault's first candidates the log shows: as many as a prompt can get. Recall settles no more than the log
# shows (`decide_first`), and each candidate more costs every prompt (card rows read and sealed, a deeper top-k:
# in-process on 1,000 cards, 16.8M instructions a prompt with 20, 11.1M with 3); `cairn explain` shows them all.
LOGGED_PER_VAULT = 3

HELP = """\
Usage: cairn hook --format FORMAT [--vault PATH] [--scope TAGS]

  The agent prompt hook: reads the agent's hook input on stdin and prints the
  cards that fit the prompt in the form that agent expects (nothing when none
  fits). Whatever its input holds it exits 0, so it never blocks a prompt;
  errors go to the log ($CAIRN_STATE_DIR/hook.jsonl). A command line it
  cannot understand (a misspelt --format) exits 1 with the error on stderr,
  which the agent shows, and in the log.

Options:
  --format FORMAT  claude-code | codex | gemini | text | json
                   (claude-code, codex: UserPromptSubmit JSON in and out;
                   gemini: BeforeAgent JSON; text: the prompt as plain text in,
                   the context block out; json: {"prompt", "session_id"} in,
                   {"cards": [...], "abstained": bool} out)
  --vault PATH     Serve this vault only: a folder, or the name of a vault in
                   the user configuration (default: $CAIRN_VAULT, else every
                   vault of the user configuration, in its order; see `cairn
                   vault list`). The hook never serves a vault found around
                   the agent's working directory, nor a folder without
                   cairn.toml.
  --scope TAGS     Comma-separated scope tags (default: $CAIRN_SCOPE).
  -h, --help       Show this message and exit.

  The cards are quoted as data inside a frame that tells the agent they are
  teammates' notes, not instructions, and that any command in them needs the
  user's confirmation.

Example:
  echo '{"session_id": "s1", "cwd": ".", "hook_event_name": "UserPromptSubmit",
         "prompt": "git pull --rebase after a force-push"}' |
    cairn hook --format claude-code --vault ~/team-lessons
"""


class UsageError(Exception):
    pass


class HookInputError(Exception):
    """The input on stdin is not what the format promises; logged, never shown to the agent."""


class Options:
    """The parsed command line. problem: a usage error that must not block the prompt (an option given twice): the
    hook logs it and serves nothing."""

    __slots__ = ("fmt", "vault", "scope", "help", "problem")

    def __init__(
        self, fmt: str | None, vault: str | None, scope: str | None, help: bool, problem: str | None = None
    ) -> None:
        self.fmt = fmt
        self.vault = vault
        self.scope = scope
        self.help = help
        self.problem = problem


class Payload:
    """What the hook needs from its input: the prompt, the agent's session id and working directory. block: the
    last context block made for it (nonce, picks, text): `fit_context` makes the block the output then prints."""

    __slots__ = ("prompt", "session_id", "cwd", "block")

    def __init__(self, prompt: str, session_id: str | None, cwd: str | None) -> None:
        self.prompt = prompt
        self.session_id = session_id
        self.cwd = cwd
        self.block: tuple[str, tuple[Pick, ...], str] | None = None


def main(argv: list[str]) -> int:
    """Run the hook; returns the exit status (0 always, except 1 for a command line that cannot be understood)."""
    try:
        options = parse_args(argv)
    except UsageError as exc:
        return _refuse_command_line(exc)
    if options.help:
        return _print_help()
    fmt = options.fmt or "text"
    entry = new_entry(fmt)
    output = ""
    prompt: str | None = None
    try:
        if sys.stdin is None:  # fd 0 closed (`cairn hook <&-`): said as an empty stdin is, not as a crash
            raise HookInputError("no stdin (it is closed); the agent gives the hook its payload on stdin")
        raw = _read_stdin(sys.stdin.buffer)
        payload = parse_payload(fmt, raw)
        prompt = payload.prompt
        if options.problem is not None:  # never block the prompt for the hook's own command line: log it
            raise UsageError(f"{options.problem}; fix the hook command in the agent's settings")
        output = _serve(options, fmt, payload, entry)
    except Exception as exc:  # fail open: the agent's prompt goes on without cards
        entry["error"] = _error_text(exc, prompt)
        entry["injected"] = []
        output = ""
    try:
        append_log(_state_dir(), entry)
    except Exception as exc:
        said = f"cairn hook: cannot write the hook log: {_error_text(exc, prompt)}; {_log_fix()}\n"
        if entry["error"] and not output:  # why nothing was served, which the lost log line held: stderr is all
            said = f"cairn hook: {entry['error']}\n{said}"
        sys.stderr.write(said)
    if output:
        try:  # UTF-8 whatever the locale: agents read it so, and an ASCII locale's stdout would refuse any card in CJK
            sys.stdout.buffer.write(output.encode("utf-8", "replace"))
            sys.stdout.flush()
        except (OSError, ValueError, AttributeError):  # AttributeError: no stdout at all (`>&-`: sys.stdout is None)
            pass
    return 0


def _print_help() -> int:
    """`cairn hook --help`: 0. With stdout closed (`>&-`: sys.stdout is None) there is nothing to print to, as for
    the cards; a stdout that refuses the write (`> /dev/full`) is one line and exit 1. Both were tracebacks. A reader
    gone away (`| true`) stops it quietly with 141, as every command (`cli.common.PIPE_CLOSED`)."""
    try:
        sys.stdout.write(HELP)
        sys.stdout.flush()
    except AttributeError:
        return 0
    except BrokenPipeError:  # it said "Error: cannot print the help: Broken pipe" and exited 1
        return 141
    except (OSError, ValueError) as exc:
        try:
            sys.stderr.write(f"Error: cannot print the help: {getattr(exc, 'strerror', None) or exc}\n")
        except (OSError, ValueError, AttributeError):
            pass
        return 1
    return 0


def _log_fix() -> str:
    """What to do when the hook log cannot be written: move the log when it is in the way (`log_in_the_way`), else
    make the folder writable."""
    try:
        folder = _state_dir()
    except Exception:  # no home folder to name one in
        return "set CAIRN_STATE_DIR to a folder you can write"
    log = log_in_the_way(folder)
    if log is not None:
        return f"move {log} away (the hook starts a new log), or set CAIRN_STATE_DIR to another folder"
    return f"make {folder} a folder you can write, or set CAIRN_STATE_DIR to one"


def log_in_the_way(folder: str) -> str | None:
    """The hook log's path when, in a state folder the hook can write, the log itself cannot be written (a folder, a
    FIFO or a symlink in its place, a read-only file): the folder is fine, the log is to be moved; else None."""
    log = os.path.join(folder, LOG_FILE)
    try:
        mode = os.lstat(log).st_mode
    except OSError:  # no log yet
        return None
    if not os.access(folder, os.W_OK | os.X_OK):
        return None
    import stat  # loaded already (`cairn.hot`)

    return log if not stat.S_ISREG(mode) or not os.access(log, os.W_OK) else None


def _refuse_command_line(exc: UsageError) -> int:
    """A command line the hook cannot understand (a misspelt --format in the agent's settings): the error on stderr,
    which the agent shows, and in the log, for `cairn doctor`; exit 1, which no agent takes as blocking the prompt.
    stdin is read and dropped first: a hook that exits with it unread fails the agent's write (Codex then reports
    "failed to write hook stdin", not the typo)."""
    entry = new_entry("none")
    entry["error"] = f"UsageError: {exc}; fix the hook command in the agent's settings"
    try:
        if sys.stdin is not None and not sys.stdin.isatty():  # at a terminal, nobody is writing a payload
            _read_stdin(sys.stdin.buffer)
    except Exception:  # stdin never closed, or unreadable: the error below is what matters
        pass
    try:
        append_log(_state_dir(), entry)
    except Exception:  # nowhere to log: stderr still says it
        pass
    try:
        sys.stderr.write(f"Error: {exc}\nTry `cairn hook --help`.\n")
    except (OSError, ValueError, AttributeError):
        pass
    return 1


class _StdinOpen(Exception):
    pass


def _stdin_open(signum: int, frame: object) -> None:
    raise _StdinOpen


def _read_stdin(stream: "BinaryIO") -> bytes:
    """stdin, up to MAX_STDIN_BYTES + 1 bytes (the rest read and dropped, `_drain`), within STDIN_SECONDS unless it is
    a terminal (someone typing a prompt): HookInputError when the writer keeps it open longer. The bound is SIGALRM's
    (`_signal`, loaded by every interpreter: `signal` would import `enum`), so only in the main thread."""
    import _signal  # type: ignore[import-not-found]

    timed, previous, pending = False, None, 0
    try:
        if not stream.isatty():
            previous, timed = _signal.signal(_signal.SIGALRM, _stdin_open), True
            pending = _signal.alarm(STDIN_SECONDS)  # an alarm set before (the hook run in-process) is set again
    except (OSError, ValueError):  # a closed stdin, or not the main thread: read as before
        pass
    try:
        raw = stream.read(MAX_STDIN_BYTES + 1)
        if len(raw) > MAX_STDIN_BYTES:
            _drain(stream)
        return raw
    except _StdinOpen:
        raise HookInputError(
            f"stdin was not closed within {STDIN_SECONDS} s; the agent must close it after writing the payload"
        ) from None
    finally:
        if timed:
            _signal.alarm(0)
            _signal.signal(_signal.SIGALRM, _signal.SIG_DFL if previous is None else previous)
            if pending:
                _signal.alarm(pending)


def _drain(stream: "BinaryIO") -> None:
    """Read what is left of an input too large to serve, and drop it: a hook that exits with its stdin unread fails
    the agent's write (EPIPE), and Codex then reports the hook as failed ("failed to write hook stdin") instead of
    going on silently."""
    try:
        while stream.read(1 << 20):
            pass
    except (OSError, ValueError):
        pass


def _prefetch_semantic(prompt: str, index_files: "Sequence[str]") -> None:
    """Hand the prompt to the semantic channel's warm encoder when it is up (its socket exists) and one of the
    vaults served has card vectors, so it encodes the prompt while the hook opens the indexes and ranks by words
    (`cairn.hot.semantic.prefetch`); without the warm encoder, one stat and no import."""
    if not index_files:
        return
    try:
        os.stat(os.path.join(state_folder(), "semantic.sock"))
    except OSError:
        return
    from cairn.hot.semantic import prefetch

    prefetch(prompt, index_files)


def parse_args(argv: list[str]) -> Options:
    values: dict[str, str] = {}
    twice: list[str] = []
    help_wanted = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            help_wanted = True
            i += 1
            continue
        if not arg.startswith("-"):  # a value cut off its option: a path with a space, unquoted
            raise UsageError(f"unexpected argument {arg!r}: the hook takes options only (quote a value with spaces)")
        name, eq, value = arg.partition("=")
        if name not in ("--format", "--vault", "--scope"):
            raise UsageError(f"unknown option {arg!r}")
        if not eq:
            if i + 1 >= len(argv):
                raise UsageError(f"{name} needs a value")
            value = argv[i + 1]
            i += 1
        if name[2:] in values and name not in twice:
            twice.append(name)
        values[name[2:]] = value
        i += 1
    fmt = values.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if fmt is None and not help_wanted:
        raise UsageError(f"--format is required ({', '.join(FORMATS)})")
    problem = f"{' and '.join(twice)} given more than once (the hook takes one of each)" if twice else None
    if values.get("vault") == "":  # `--vault "$TEAM"` with TEAM unset: it would serve every configured vault
        problem = "--vault is empty (a shell variable that is not set?); name a vault or leave the option out"
    return Options(fmt, values.get("vault"), values.get("scope"), help_wanted, problem)


def parse_payload(fmt: str, raw: bytes) -> Payload:
    """The prompt, session id and cwd from stdin; raises HookInputError for input the format does not allow."""
    if len(raw) > MAX_STDIN_BYTES:
        raise HookInputError(f"stdin is over {MAX_STDIN_BYTES // 1048576} MiB")
    if not raw.strip():
        raise HookInputError("stdin is empty")
    if b"\0" in raw:
        raise HookInputError("stdin is binary (holds NUL bytes)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HookInputError(f"stdin is not UTF-8 (byte {exc.start})") from None
    if text.startswith("\ufeff"):  # a byte-order mark (a wrapper script on Windows, a text editor): not the input
        text = text[1:]
    if fmt == "text":
        return Payload(text, None, None)
    try:
        data = loads(text)
    except ValueError as exc:
        raise HookInputError(f"stdin is not JSON ({type(exc).__name__} at char {getattr(exc, 'pos', '?')})") from None
    except RecursionError:  # `[[[...` thousands deep: the parser's recursion, not a payload any agent writes
        raise HookInputError("stdin JSON is nested too deeply") from None
    if not isinstance(data, dict):
        raise HookInputError("stdin JSON is not an object")
    prompt = data.get("prompt")
    if not isinstance(prompt, str):
        raise HookInputError("stdin JSON has no 'prompt' string")
    session_id = data.get("session_id")
    cwd = data.get("cwd")
    return Payload(
        prompt,
        session_id if isinstance(session_id, str) and session_id else None,
        cwd if isinstance(cwd, str) and cwd and _names_a_path(cwd) else None,  # else none given
    )


def _names_a_path(text: str) -> bool:
    """Whether a payload's `cwd` can name a folder: no path holds a NUL, and one with a lone UTF-16 surrogate (JSON's
    `"\\ud800"`) has no bytes to give the system; either failed `os.path.realpath`, and the prompt got no card. Nor
    is one over MAX_CWD_BYTES a working folder."""
    if "\0" in text or len(text) > MAX_CWD_BYTES:
        return False
    try:
        return len(os.fsencode(text)) <= MAX_CWD_BYTES
    except UnicodeEncodeError:
        return False


def _serve(options: Options, fmt: str, payload: Payload, entry: dict[str, object]) -> str:
    from cairn.hot.serve import Layer, layer_scope, scope_tags, serve_layers
    from cairn.hot.vault import hook_vaults

    prompt_bytes = payload.prompt.encode("utf-8", "surrogatepass")
    entry["prompt_sha256"] = sha256_hex(prompt_bytes)
    entry["prompt_len"] = len(payload.prompt)
    if payload.session_id is not None:
        from cairn.hot.session import session_key

        entry["session"] = session_key(payload.session_id)

    if payload.cwd is None or not os.path.isabs(payload.cwd):
        # text input, or a JSON payload without a usable cwd: the hook's own folder stands in; a relative cwd is in
        # it (read later, by `os.path.realpath`, it failed every vault's cards when that folder had been deleted)
        try:
            here = os.getcwd()
        except OSError:  # that folder was deleted: no folder, so a vault limited to projects serves nothing
            payload.cwd = None
        else:
            payload.cwd = here if payload.cwd is None else os.path.join(here, payload.cwd)
    vaults, skipped = hook_vaults(options.vault)  # never the vault around payload.cwd: trust is explicit
    declared = scope_tags(options.scope)
    logged: list[dict[str, object]] = []
    entry["vaults"] = logged
    layers: list[Layer] = []
    errors: list[str] = []
    key = index_key() if vaults else None  # the cache key, read once for every vault's index
    from cairn.hot import index_file as index_file_of

    chosen: list[tuple[ServedVault, dict[str, object], tuple[str, ...], str]] = []
    for vault in vaults:
        line = vault_entry(vault.name, vault.dirs.root)
        logged.append(line)
        if not vault.serves_cwd(payload.cwd):
            line["skipped"] = "project"  # the agent works outside the folders this vault is limited to
            continue
        scope = layer_scope(declared, vault.scopes)
        if scope is None:
            line["skipped"] = "scope"  # the prompt's scope and the vault's share no tag
            continue
        chosen.append((vault, line, scope, index_file_of(vault.dirs.root, real=True)))  # real: `hook_vaults`
    # Only to a warm encoder one of these vaults can use (its index has card vectors), before any index is opened
    _prefetch_semantic(payload.prompt[:MAX_QUERY_CHARS], [index_file for *_, index_file in chosen])
    try:
        for vault, line, scope, index_file in chosen:
            try:
                index = _open_fresh_index(vault, line, key, index_file)
            except Exception as exc:
                line["error"] = _error_text(exc, payload.prompt)
                errors.append(str(line["error"]))
                continue
            if index is not None:
                layers.append(Layer(vault.name, vault.dirs.root, index, scope))
        for name, why in skipped:
            line = vault_entry(name, None)
            line["skipped"] = "unusable"
            line["error"] = why[:500]
            logged.append(line)
        if len(vaults) == 1 and vaults[0].name is None:  # one vault given by path: the log's old, flat fields
            entry["vault"] = logged[0]["vault"]
            entry["commit"] = logged[0]["commit"]
            entry["stale"] = logged[0]["stale"]
        else:
            entry["stale"] = any(line["stale"] for line in logged)
        if not layers:
            if errors:
                entry["error"] = errors[0]
            entry["injected"] = []
            # No vault serves this prompt (outside a vault's projects, a stale index): the `json` shape of a prompt
            # with a session still says none of its cards is withheld as already given, as every other answer does
            return _render(fmt, [], payload, "", already=[] if payload.session_id is not None else None)
        nonce = os.urandom(4).hex()  # the frame's delimiter: no card can know it
        max_context_chars = min(layer.index.hook_settings()[0] for layer in layers)
        served = serve_layers(
            layers,
            payload.prompt[:MAX_QUERY_CHARS],
            session_id=payload.session_id,
            fit=lambda picks: fit_context(picks, payload, max_context_chars, nonce),
            decide_first=LOGGED_PER_VAULT,  # the log shows these; recall settles no more
            want_already=fmt == "json" and payload.session_id is not None,
            serve_without_session=True,  # a session that cannot be kept costs the prompt none of its cards
        )
    finally:
        for layer in layers:
            layer.index.close()
    given = served.given
    kept = {id(p.candidate) for p in given}
    candidates: list[dict[str, object]] = []
    for layer, result in zip(layers, served.results, strict=True):
        shown = result.candidates[:LOGGED_PER_VAULT]
        candidates += [_logged(layer.qualified(c.card.id), c, id(c) in kept, served.dropped) for c in shown]
        line = next(x for x in logged if x["vault"] == layer.root)
        line["injected"] = [p.candidate.card.id for p in given if p.layer is layer]
    entry["candidates"] = candidates[:MAX_LOGGED_CANDIDATES]
    entry["injected"] = [p.qid for p in given]
    if served.session_error is not None:
        entry["error"] = served.session_error
    already = list(served.already) if payload.session_id is not None else None
    return _render(fmt, given, payload, nonce, already=already)


def _logged(shown_id: str, candidate: "Candidate", kept: bool, dropped: dict[str, str]) -> dict[str, object]:
    decision, reason = candidate.decision, candidate.reason
    if decision == "injected" and not kept:  # its vault's recall chose it; the merge or the context limit did not
        decision, reason = "rejected", dropped.get(shown_id, "context_limit")
    logged: dict[str, object] = {"id": shown_id, "score": candidate.score, "decision": decision, "reason": reason}
    if candidate.picked:  # the rule that injected it when the word gates passed nothing (never the prompt's text)
        logged["picked"] = candidate.picked
    return logged


def _open_fresh_index(
    vault: "ServedVault", line: dict[str, object], key: bytes | None, index_file: str
) -> "IndexReader | None":
    """The vault's cached index (`index_file`) when it was built from the commit the vault serves now; else None
    (the vault serves nothing for this prompt) and a background update starts. Raises for a missing or damaged
    index."""
    from cairn.hot.index import SECURITY_RULES_VERSION, IndexReader
    from cairn.hot.vault import served_ref

    dirs = vault.dirs
    if dirs.git_root is None:
        raise HookInputError("the vault is not in a git repository; Cairn serves committed cards only")
    ref, served = served_ref(dirs.git_root, vault.ref)
    line["ref"] = ref
    try:
        index = IndexReader(index_file, key)
    except Exception as exc:
        # Imported only here: a hook that reads its index never needs them.
        from cairn.hot.errors import IndexCorrupt, IndexMissing

        if isinstance(exc, IndexMissing):
            line["stale"] = True
            if served is None:  # no commit to index: say why, not "building", which would fail so on every prompt
                from cairn.hot.vault import missing_ref

                advice = missing_ref(dirs.git_root, ref, vault.ref, vault_root=dirs.root)
                raise HookInputError(f"{advice.problem}; {advice.fix}; serving nothing from this vault") from None
            _start_background_index(dirs, index_file)
            raise HookInputError(
                "no index for this vault yet; building it in the background (`cairn index`)" + _last_failure(index_file)
            ) from None
        if isinstance(exc, IndexCorrupt):
            line["stale"] = True
            _start_background_index(dirs, index_file)
        raise
    index.on_damage = lambda: _start_background_index(dirs, index_file)  # a seal that fails while serving
    commit = index.meta.get("commit")
    line["commit"] = commit
    # Two vaults of one repository share its commits: an index must also name this vault (a swapped cache file)
    other = index.meta.get("vault_root") != dirs.root
    withdrawn = False
    if index.meta.get("security_allowed"):  # only a vault that switched a security rule off reads the user's leave
        from cairn.hot.userconfig import leave_withdrawn

        withdrawn = leave_withdrawn(str(index.meta["security_allowed"]))
    old_rules = index.meta.get("security_rules") != SECURITY_RULES_VERSION
    if served is None:  # no commit to index: a background `cairn index` would fail the same way each time
        line["stale"] = True
    elif commit != served or other or withdrawn or old_rules or index.meta.get("cairn_version") != build_name():
        line["stale"] = True
        _start_background_index(dirs, index_file)
    problem = None
    if served is None:
        from cairn.hot.vault import missing_ref

        advice = missing_ref(dirs.git_root, ref, vault.ref, vault_root=dirs.root)
        problem = f"{advice.problem}; {advice.fix}; serving nothing from this vault"
    elif other:
        problem = "the index names another vault; serving nothing from this vault until it is rebuilt"
    elif commit != served:
        # Cards of another commit: one may be gone, changed or never reviewed. Nothing until the index catches up.
        problem = f"the index is of {str(commit)[:12]}, {ref} is at {served[:12]}; serving nothing until it is rebuilt"
        problem += _last_failure(index_file)
    elif withdrawn:
        problem = (
            "the index was built while your configuration let the vault switch security rules off "
            "([security] allow_disabled_rules), and it no longer does; serving nothing until it is rebuilt"
        )
    elif old_rules:
        # Cards a new security rule refuses may be in it (after an upgrade of Cairn): nothing until it is re-read.
        problem = "the index was checked by older security rules; serving nothing until it is rebuilt"
    elif index.meta.get("config_error"):
        problem = f"the vault's cairn.toml cannot be read; serving nothing: {index.meta.get('config_error')}"
    if problem is not None:
        index.close()
        line["error"] = problem[:1000]
        return None
    return index


# How the background `cairn index` starts (`CLEAN_PATH`: it runs in the vault, not as `python -m cairn`).
INDEX_CODE = CLEAN_PATH + "sys.argv[0] = 'cairn'; from cairn.cli import main; main()"


def _start_background_index(vault: "VaultDirs", index_file: str) -> None:
    """Run `cairn index` detached (`INDEX_CODE`), at most once per REINDEX_EVERY_SECONDS per vault, and not while
    another index of the vault runs; never waits.

    Hooks that find the stamp old at the same moment (an agent's burst of prompts, many agents) take turns on a
    lock of the vault's cache folder and look again, so one starts the index; and none starts one while another
    `cairn index` holds the vault's writer lock (a long full build): it would only wait behind it, a whole
    `cairn index` process queued per REINDEX_EVERY_SECONDS for as long as the build runs. The prompt after that
    index ends sees whether the index is still stale."""
    if vault.git_root is None:
        return
    import time

    stamp = index_file + ".reindex"
    now = time.time()
    if stamped_within(stamp, now, REINDEX_EVERY_SECONDS):
        return
    import fcntl  # here only: a prompt that starts no index never loads it

    folder = os.path.dirname(stamp)
    private_folder(folder)
    claim = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        try:
            fcntl.flock(claim, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # another hook of this vault is deciding right now
        except OSError:
            pass  # a file system without flock: as before, the stamp alone
        if stamped_within(stamp, now, REINDEX_EVERY_SECONDS):
            return  # started by the hook that held the claim before this one
        if _index_running(index_file + ".lock"):
            return
        # The stamp, emptied, takes the index's stderr: its `Error: ...` is what `_last_failure` logs.
        errors = open_private(stamp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)  # OSError for a FIFO, a symlink: logged
        try:
            os.utime(stamp, (now, now))
            spawn_index(vault.root, errors=errors)
        finally:
            os.close(errors)
    finally:
        os.close(claim)  # the claim goes with it


def _last_failure(index_file: str) -> str:
    """Why the last background `cairn index` of the vault failed, as a clause for the log (its `Error: ...` line,
    which `_start_background_index` keeps in the stamp), else "": without it, a build that fails each time (git
    refusing a repository another user owns, a cache folder it cannot write) reads as one still to come."""
    try:
        fd = open_private(index_file + ".reindex", os.O_RDONLY)
    except OSError:
        return ""
    try:
        said = os.read(fd, 4096).decode("utf-8", "replace")
    except OSError:
        return ""
    finally:
        os.close(fd)
    failures = [line for line in said.splitlines() if line.startswith("Error: ")]
    return f"; the last background `cairn index` failed: {failures[-1][7:]}" if failures else ""


def _index_running(lock_file: str) -> bool:
    """Whether a `cairn index` holds the writer lock (`cairn.index.store.writer_lock`, a `flock`) of an index."""
    import fcntl

    try:
        fd = open_private(lock_file, os.O_RDONLY)  # never through a symlink, never waiting on a FIFO
    except OSError:
        return False  # no lock file: no index has run (one just starting takes the lock before it reads anything)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # a shared lock: refused while a writer holds its own
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


def spawn_index(root: str, *options: str, errors: int | None = None) -> None:
    """Start `cairn index --vault ROOT OPTIONS` detached (`INDEX_CODE`, in its own session, git's per-hook
    environment left out) and return at once: the hook's background update, and the git hooks' when another index
    holds the vault's lock (`cairn index --wait`). `errors`: a descriptor for its stderr (else none)."""
    import subprocess

    subprocess.Popen(
        [sys.executable, *CHILD_FLAGS, "-c", INDEX_CODE, "index", "--vault", root, *options],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL if errors is None else errors,
        cwd=root,
        env=child_env(),
        start_new_session=True,
        close_fds=True,
    )


def fit_context(picks: "Sequence[Pick]", payload: Payload, max_chars: int, nonce: str) -> "list[Pick]":
    """The cards whose context block stays under the character limit (best first). A card whose block alone is over
    it is left out, not the cards after it: the first card of a vault with long summaries silenced every other
    vault's card with it (and a vault's own next card), though their block fitted."""
    limit = min(max(int(max_chars), CONTEXT_MIN), CONTEXT_HARD_LIMIT)
    if not picks or len(context_block(picks, payload, nonce)) <= limit:
        return list(picks)  # all of them: the block made once, as a prompt's usually is
    chosen: list[Pick] = []
    for pick in picks:
        if len(context_block([*chosen, pick], payload, nonce)) <= limit:
            chosen.append(pick)
    return chosen


def context_trim(layers: "Sequence[Layer]") -> "Callable[[Sequence[Pick]], list[Pick]]":
    """The hook's trim of the cards it gives from `layers` (`fit_context` under their smallest `[hook]
    max_context_chars`), the block made as for an agent working in the current folder, for `cairn recall`, `explain`
    and the MCP tools, which show what the hook would give: with a small limit, the hook gives fewer cards than
    recall injects."""
    try:
        cwd: str | None = os.getcwd()
    except OSError:  # a removed folder: the block names each vault, as for a project outside it
        cwd = None
    max_chars = min((layer.index.hook_settings()[0] for layer in layers), default=CONTEXT_HARD_LIMIT)
    payload = Payload("", None, cwd)
    nonce = "0" * 8  # the block's length is the same for every nonce
    return lambda picks: fit_context(picks, payload, max_chars, nonce)


def hook_gives(layers: "Sequence[Layer]", results: "Sequence[Result]", dropped: dict[str, str]) -> "list[Pick]":
    """The cards the prompt hook gives from `results` (`merge`, then `context_trim`); `dropped` gets the shown id of
    each card a vault's recall injected that is not given, and why (`merge`'s reasons, or `context_limit`)."""
    from cairn.hot.serve import MAX_CARDS, merge

    merged = merge(layers, results, MAX_CARDS, dropped)
    given = list(context_trim(layers)(merged))
    kept = {id(pick) for pick in given}
    for pick in merged:
        if id(pick) not in kept:
            dropped[pick.qid] = "context_limit"
    return given


# Characters that are not printable: a line or paragraph separator, a control character, a format character
# (zero-width, bidi controls, the invisible tag characters U+E0000..), a private-use or unassigned code point.
# White space becomes a space; everything else is dropped, so what the agent reads is what a reviewer sees.
def _plain(text: str, limit: int) -> str:
    if not text.isprintable():
        text = "".join(c if c.isprintable() else " " if c.isspace() else "" for c in text)
    from cairn.hot.serve import clip

    return clip(" ".join(text.split()), limit)


FRAME_TAG = "cairn-notes"


def _data(text: str, limit: int) -> str:
    """Card text as data: one line, invisible characters dropped, the frame's tag neutralised, as a JSON string
    (quotes and backslashes escaped), so no card can end the frame or start a line of its own."""
    text = _plain(text, limit)
    if FRAME_TAG in text.casefold():
        text = _neutralised(text)
    return dumps(text, ensure_ascii=False)


def _neutralised(text: str) -> str:
    folded = text.casefold()
    if len(folded) != len(text):  # casefold changed lengths (e.g. "ß"): neutralise every hyphen instead
        return text.replace("-", "\u2010")
    out, start = [], 0
    while True:
        at = folded.find(FRAME_TAG, start)
        if at < 0:
            break
        out.append(text[start:at] + text[at : at + 5] + "\u2010" + text[at + 6 : at + len(FRAME_TAG)])
        start = at + len(FRAME_TAG)
    return "".join(out) + text[start:]


def _code(text: str) -> str | None:
    """Text for inside a Markdown code span, or None when it cannot be shown as one (a backtick, a newline)."""
    return None if "`" in text or not text.isprintable() else text


def context_block(picks: "Sequence[Pick]", payload: Payload, nonce: str) -> str:
    """The text an agent gets: a fixed frame saying what the notes are, then each card's name, summary, id and path
    as quoted data between two delimiter lines that carry a random nonce, and how to read the whole card."""
    made = payload.block
    if made is not None and made[0] == nonce and len(made[1]) == len(picks):
        if all(a is b for a, b in zip(made[1], picks, strict=True)):
            return made[2]  # the block `fit_context` measured: the same cards, the same nonce
    from cairn.hot.serve import NAME_CHARS, NOTICE, SUMMARY_CHARS, served_file

    roots = {p.layer.root for p in picks}
    count = "1 note" if len(picks) == 1 else f"{len(picks)} notes"
    verb = "matches" if len(picks) == 1 else "match"
    where = "the team's lesson vault" if len(roots) == 1 else f"{len(roots)} lesson vaults"
    opening, closing = f'<{FRAME_TAG} nonce="{nonce}">', f'</{FRAME_TAG} nonce="{nonce}">'
    lines = [
        f"Cairn: {count} from {where} {verb} this prompt. {NOTICE} The notes are between the lines {opening} and"
        f" {closing}; every value in them is a JSON string.",
        opening,
    ]
    for n, pick in enumerate(picks, 1):
        card, root = pick.candidate.card, pick.layer.root
        lines += [
            f"{n}. name: {_data(card.name, NAME_CHARS)}",
            f"   summary: {_data(card.summary, SUMMARY_CHARS)}",
            f"   id: {_data(pick.qid, 300)}",
        ]
        if served_file(root, card):  # else the file is not what was reviewed: the command below reads the card
            lines.append(f"   path: {_data(os.path.join(root, card.path), 600)}")
        vault_arg = "" if vault_encloses(root, payload.cwd) else f" --vault {_quote(root)}"
        command = _code(show_command(card.id, vault_arg))
        if command is not None:
            lines.append(f"   whole card: `{command}`")
    lines.append(closing)
    text = "\n".join(lines) + "\n"
    payload.block = (nonce, tuple(picks), text)
    return text


def show_command(card_id: str, vault_arg: str = "") -> str:
    """`cairn show ID` with `vault_arg` (` --vault X`, quoted) as a command to run. An id that starts with "-" (lint
    warns of it, and serves it) would be read as an option: it comes after `--`."""
    shown = _quote(card_id)
    return f"cairn show{vault_arg} -- {shown}" if shown[:1] == "-" else f"cairn show {shown}{vault_arg}"


def _render(fmt: str, picks: "Sequence[Pick]", payload: Payload, nonce: str, already: "list[str] | None") -> str:
    if fmt == "json":
        from cairn.hot.serve import NOTICE, card_json

        cards = []
        for p in picks:
            card = card_json(p.candidate, p.qid, p.layer.root)
            if p.layer.name is not None:
                card["vault"] = p.layer.name
            cards.append(card)
        out: dict[str, object] = {"cards": cards, "abstained": not picks}
        if already is not None:
            out["already_injected"] = already
        if picks:
            out["notice"] = NOTICE
        return dumps(out, ensure_ascii=False) + "\n"
    if not picks:
        return ""
    text = context_block(picks, payload, nonce)
    if fmt == "text":
        return text
    event = "BeforeAgent" if fmt == "gemini" else "UserPromptSubmit"
    return dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}) + "\n"


def vault_encloses(root: str, cwd: str | None) -> bool:
    """Whether `cairn show ID` run in `cwd` opens the vault at `root`: `cwd` is in it, no other vault (a folder with
    `cairn.toml`) lies between them (a personal vault nested in the team's was opened in its place, its card of the
    same id read as the injected one), and no `$CAIRN_VAULT` names another (`cairn show` reads it first)."""
    if not cwd:
        return False
    root_s = os.path.realpath(root)
    here = os.path.realpath(cwd)
    if not (here == root_s or here.startswith(root_s.rstrip(os.sep) + os.sep)):
        return False
    named = os.environ.get("CAIRN_VAULT")
    if named and os.path.realpath(os.path.expanduser(named)) != root_s:
        return False
    from cairn.hot.vault import MARKER  # loaded already: the hook found its vaults with it

    while here != root_s:
        if os.path.exists(os.path.join(here, MARKER)):
            return False
        here = os.path.dirname(here)
    return True


_SAFE_ARG = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-"


def _quote(arg: str) -> str:
    """`shlex.quote(arg)` (shlex imports re): as it is when every character is safe, else in single quotes."""
    if arg and not arg.strip(_SAFE_ARG):
        return arg
    return "'" + arg.replace("'", "'\"'\"'") + "'"


def _state_dir() -> str:
    return state_folder()


def new_entry(fmt: str) -> dict[str, object]:
    """A log entry with every field present; the hook fills it in as it goes."""
    return {
        "time": utc_now(),
        "format": fmt,
        "session": None,
        "prompt_sha256": None,
        "prompt_len": None,
        "vault": None,
        "commit": None,
        "stale": False,
        "vaults": [],
        "candidates": [],
        "injected": [],
        "error": None,
    }


def vault_entry(name: str | None, root: str | None) -> dict[str, object]:
    """One vault's part of a log line: every field present, filled in as the hook serves it."""
    return {
        "name": name,
        "vault": root,
        "ref": None,
        "commit": None,
        "stale": False,
        "skipped": None,
        "error": None,
        "injected": [],
    }


def append_log(state_dir: str, entry: dict[str, object]) -> None:
    """Append one line to the hook log; a single `write` on an O_APPEND descriptor, so concurrent hooks never
    interleave lines. Past MAX_LOG_BYTES, hook.jsonl becomes hook.jsonl.1 and a new file starts (`open_log`)."""
    private_folder(state_dir)  # made 0700 when missing
    path = os.path.join(state_dir, LOG_FILE)
    line = (dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8", "replace")
    fd = open_log(path, MAX_LOG_BYTES)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _error_text(exc: BaseException, prompt: str | None) -> str:
    """What the log says of an error: the message of a file's error (`OSError`) or of one of Cairn's own classes,
    which the system or Cairn wrote; of any other, only its type and where it was raised (a `KeyError`'s message is
    the key, which can be a word of the prompt)."""
    if not isinstance(exc, OSError) and not type(exc).__module__.startswith("cairn."):
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        where = f"{os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}" if tb is not None else "?"
        return f"{type(exc).__name__} at {where} (its message is not logged: it may quote the prompt)"
    text = f"{type(exc).__name__}: {exc}"
    if prompt and len(prompt) >= 4 and prompt in text:  # never let the prompt reach the log through a message
        text = text.replace(prompt, "<prompt>")
    return text[:500]  # cut after the prompt is out: a cut could keep the start of a long prompt
