"""`cairn hook`: the agent prompt hook. Reads the agent's hook JSON on stdin, prints what that agent expects.

It fails open: whatever goes wrong, it exits 0 with nothing on stdout and writes the error to the log (to stderr
only when the log cannot be written). It never writes into the vault, and never writes the prompt anywhere: the
log holds its sha256 and length.
"""

import os
import sys

from cairn.hot import hooklog, jsonc

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from cairn.hot.index import IndexReader
    from cairn.hot.recall import Candidate
    from cairn.hot.vault import VaultDirs

FORMATS = ("claude-code", "codex", "gemini", "text", "json")
MAX_STDIN_BYTES = 8 * 1024 * 1024
MAX_QUERY_CHARS = 8000  # a pasted log beyond this adds cost, not meaning
CONTEXT_HARD_LIMIT = 9999
REINDEX_EVERY_SECONDS = 30

HELP = """\
Usage: cairn hook --format FORMAT [--vault PATH] [--scope TAGS]

  The agent prompt hook: reads the agent's hook input on stdin and prints the
  cards that fit the prompt in the form that agent expects (nothing when none
  fits). It always exits 0 so it never blocks a prompt; errors go to the log
  ($CAIRN_STATE_DIR/hook.jsonl).

Options:
  --format FORMAT  claude-code | codex | gemini | text | json
                   (claude-code, codex: UserPromptSubmit JSON in and out;
                   gemini: BeforeAgent JSON; text: the prompt as plain text in,
                   the context block out; json: {"prompt", "session_id"} in,
                   {"cards": [...], "abstained": bool} out)
  --vault PATH     The vault (default: $CAIRN_VAULT, else the vault around the
                   prompt's working directory).
  --scope TAGS     Comma-separated scope tags (default: $CAIRN_SCOPE).
  -h, --help       Show this message and exit.

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
    __slots__ = ("fmt", "vault", "scope", "help")

    def __init__(self, fmt: str | None, vault: str | None, scope: str | None, help: bool) -> None:
        self.fmt = fmt
        self.vault = vault
        self.scope = scope
        self.help = help


class Payload:
    """What the hook needs from its input: the prompt, the agent's session id and working directory."""

    __slots__ = ("prompt", "session_id", "cwd")

    def __init__(self, prompt: str, session_id: str | None, cwd: str | None) -> None:
        self.prompt = prompt
        self.session_id = session_id
        self.cwd = cwd


def main(argv: list[str]) -> int:
    """Run the hook; returns the exit status (0 always, except 1 for a command line that cannot be understood)."""
    try:
        options = parse_args(argv)
    except UsageError as exc:
        sys.stderr.write(f"Error: {exc}\nTry `cairn hook --help`.\n")
        return 1
    if options.help:
        sys.stdout.write(HELP)
        return 0
    fmt = options.fmt or "text"
    entry = hooklog.new_entry(fmt)
    output = ""
    prompt: str | None = None
    try:
        raw = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
        payload = parse_payload(fmt, raw)
        prompt = payload.prompt
        output = _serve(options, fmt, payload, entry)
    except Exception as exc:  # fail open: the agent's prompt goes on without cards
        entry["error"] = _error_text(exc, prompt)
        entry["injected"] = []
        output = ""
    try:
        hooklog.append(_state_dir(), entry)
    except Exception as exc:
        sys.stderr.write(f"cairn hook: cannot write the hook log: {_error_text(exc, prompt)}\n")
    if output:
        try:
            sys.stdout.write(output)
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
    return 0


def parse_args(argv: list[str]) -> Options:
    values: dict[str, str] = {}
    help_wanted = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            help_wanted = True
            i += 1
            continue
        name, eq, value = arg.partition("=")
        if name not in ("--format", "--vault", "--scope"):
            raise UsageError(f"unknown option {arg!r}")
        if not eq:
            if i + 1 >= len(argv):
                raise UsageError(f"{name} needs a value")
            value = argv[i + 1]
            i += 1
        values[name[2:]] = value
        i += 1
    fmt = values.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if fmt is None and not help_wanted:
        raise UsageError(f"--format is required ({', '.join(FORMATS)})")
    return Options(fmt, values.get("vault"), values.get("scope"), help_wanted)


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
    if fmt == "text":
        return Payload(text, None, None)
    try:
        data = jsonc.loads(text)
    except ValueError as exc:
        raise HookInputError(f"stdin is not JSON ({type(exc).__name__} at char {getattr(exc, 'pos', '?')})") from None
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
        cwd if isinstance(cwd, str) and cwd else None,
    )


def _serve(options: Options, fmt: str, payload: Payload, entry: dict[str, object]) -> str:
    from cairn.hot.serve import scope_tags, serve_prompt
    from cairn.hot.settings import hook_settings
    from cairn.hot.vault import locate_vault

    prompt_bytes = payload.prompt.encode("utf-8", "surrogatepass")
    entry["prompt_sha256"] = hooklog.sha256_hex(prompt_bytes)
    entry["prompt_len"] = len(payload.prompt)
    if payload.session_id is not None:
        from cairn.hot.session import session_key

        entry["session"] = session_key(payload.session_id)

    if payload.cwd is None:  # text and json input carry no cwd: the hook's own folder stands in
        payload.cwd = os.getcwd()
    vault = locate_vault(options.vault, cwd=payload.cwd)
    entry["vault"] = vault.root
    index = _open_fresh_index(vault, entry)
    try:
        max_context_chars = hook_settings(index.config)[0]
        served = serve_prompt(
            index,
            payload.prompt[:MAX_QUERY_CHARS],
            vault_root=vault.root,
            scope=scope_tags(options.scope),
            session_id=payload.session_id,
            fit=lambda injected: _fit(injected, vault, payload, max_context_chars),
            decide_first=hooklog.MAX_LOGGED_CANDIDATES,  # the log shows these; recall settles no more
        )
    finally:
        index.close()
    chosen = served.given
    kept = {c.card.id for c in chosen}
    entry["candidates"] = [_logged(c, kept) for c in served.result.candidates[: hooklog.MAX_LOGGED_CANDIDATES]]
    entry["injected"] = [c.card.id for c in chosen]
    return _render(fmt, chosen, vault, payload, abstained=not chosen)


def _logged(candidate: "Candidate", kept: set[str]) -> dict[str, object]:
    decision, reason = candidate.decision, candidate.reason
    if decision == "injected" and candidate.card.id not in kept:  # recall chose it; the context limit did not
        decision, reason = "rejected", "context_limit"
    return {"id": candidate.card.id, "score": candidate.score, "decision": decision, "reason": reason}


def _open_fresh_index(vault: "VaultDirs", entry: dict[str, object]) -> "IndexReader":
    """The cached index, checked against the vault's HEAD; a stale or missing one starts a background update."""
    from cairn.hot import gitrefs, paths
    from cairn.hot.index import IndexReader

    index_file = paths.index_file(vault.root)
    head = gitrefs.head_commit(vault.git_root) if vault.git_root is not None else None
    try:
        index = IndexReader(index_file)
    except Exception as exc:
        # Imported only here: a hook that reads its index never needs them.
        from cairn.hot.errors import IndexCorrupt, IndexMissing

        if isinstance(exc, IndexMissing):
            entry["stale"] = True
            _start_background_index(vault, index_file)
            raise HookInputError("no index for this vault yet; building it in the background (`cairn index`)") from None
        if isinstance(exc, IndexCorrupt):
            entry["stale"] = True
            _start_background_index(vault, index_file)
        raise
    entry["commit"] = index.meta.get("commit")
    from cairn import __version__

    if head is None or index.meta.get("commit") != head or index.meta.get("cairn_version") != __version__:
        entry["stale"] = True
        _start_background_index(vault, index_file)
    return index


def _start_background_index(vault: "VaultDirs", index_file: str) -> None:
    """Run `python -m cairn index` detached, at most once per REINDEX_EVERY_SECONDS per vault; never waits."""
    if vault.git_root is None:
        return
    import time

    stamp = index_file + ".reindex"
    now = time.time()
    try:
        if now - os.stat(stamp).st_mtime < REINDEX_EVERY_SECONDS:
            return
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(stamp), exist_ok=True)
    with open(stamp, "ab"):
        pass
    os.utime(stamp, (now, now))
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE")}
    subprocess.Popen(
        [sys.executable, "-m", "cairn", "index", "--vault", vault.root],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=vault.root,
        env=env,
        start_new_session=True,
        close_fds=True,
    )


def _fit(injected: "Sequence[Candidate]", vault: "VaultDirs", payload: Payload, max_chars: int) -> "list[Candidate]":
    """The injected candidates whose context block stays under the character limit (best first)."""
    limit = min(max(int(max_chars), 500), CONTEXT_HARD_LIMIT)
    chosen = list(injected)
    while chosen and len(context_block(chosen, vault, payload)) > limit:
        if len(chosen) == 1:
            return []
        chosen.pop()
    return chosen


# Control characters and bidirectional overrides, each to a space (runs of spaces then become one). None of them
# is printable, so text that is (most is) needs no translation, which is slow for text beyond ASCII.
_CONTROL = dict.fromkeys([*range(0x00, 0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)], " ")


def _plain(text: str, limit: int) -> str:
    text = " ".join((text if text.isprintable() else text.translate(_CONTROL)).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def context_block(chosen: "Sequence[Candidate]", vault: "VaultDirs", payload: Payload) -> str:
    """The text an agent gets: each card's name, summary, id and path, and how to read the whole card."""
    vault_arg = "" if _vault_encloses(vault.root, payload.cwd) else f" --vault {_quote(vault.root)}"
    count, verb = ("1 card", "matches") if len(chosen) == 1 else (f"{len(chosen)} cards", "match")
    lines = [f"Cairn: {count} from the team's lesson vault at {vault.root} {verb} this prompt."]
    for n, candidate in enumerate(chosen, 1):
        card = candidate.card
        lines += [
            "",
            f"{n}. {_plain(card.name, 200)}",
            f"   Summary: {_plain(card.summary, 2000)}",
            f"   Id: {_plain(card.id, 300)}",
            f"   Path: {_plain(os.path.join(vault.root, card.path), 600)}",
            f"   The whole card: `cairn show {_quote(card.id)}{vault_arg}`",
        ]
    return "\n".join(lines) + "\n"


def _render(fmt: str, chosen: "Sequence[Candidate]", vault: "VaultDirs", payload: Payload, abstained: bool) -> str:
    if fmt == "json":
        from cairn.hot.serve import card_json

        cards = [card_json(c) for c in chosen]
        return jsonc.dumps({"cards": cards, "abstained": abstained}, ensure_ascii=False) + "\n"
    if not chosen:
        return ""
    text = context_block(chosen, vault, payload)
    if fmt == "text":
        return text
    event = "BeforeAgent" if fmt == "gemini" else "UserPromptSubmit"
    return jsonc.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}) + "\n"


def _vault_encloses(root: str, cwd: str | None) -> bool:
    if not cwd:
        return False
    root_s = os.path.realpath(root)
    here = os.path.realpath(cwd)
    return here == root_s or here.startswith(root_s.rstrip(os.sep) + os.sep)


_SAFE_ARG = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-"


def _quote(arg: str) -> str:
    """`shlex.quote(arg)` (shlex imports re): as it is when every character is safe, else in single quotes."""
    if arg and not arg.strip(_SAFE_ARG):
        return arg
    return "'" + arg.replace("'", "'\"'\"'") + "'"


def _state_dir() -> str:
    from cairn.hot.paths import state_folder

    return state_folder()


def _error_text(exc: BaseException, prompt: str | None) -> str:
    text = f"{type(exc).__name__}: {exc}"[:500]
    if prompt and len(prompt) >= 4 and prompt in text:  # never let the prompt reach the log through a message
        text = text.replace(prompt, "<prompt>")
    return text
