"""The MCP server: the vault's recall, show, explain and draft-writing as tools for agents that speak MCP (stdio).

Stdout is the protocol; everything else (logs, warnings) goes to stderr. Needs the optional `mcp` package
(the `mcp` extra, `cairn.extras`); mcp 2.x calls the server class `MCPServer`, 1.x called it `FastMCP`: both work.
"""

from __future__ import annotations

import functools
import gc
import importlib
import inspect
import io
import json
import logging
import os
import re
import shlex
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from cairn import __version__, gitrepo
from cairn.cards import catalog
from cairn.cards.authoring import (
    LintRefused,
    NewCard,
    lint_pending,
    named_alike,
    render_card,
    resolve_card_id,
)
from cairn.cards.card import parse_card
from cairn.finding import ERROR
from cairn.hot import is_dir
from cairn.hot.errors import (
    CairnError,
    CardExists,
    CardNotFound,
    ConfigError,
    InvalidCard,
    RefusedWrite,
    VaultNotFound,
)
from cairn.hot.hook import MAX_QUERY_CHARS, context_trim, hook_gives
from cairn.hot.recall import GATE_REASONS, REJECTED, Candidate, not_when_found, recall
from cairn.hot.serve import (
    NAME_CHARS,
    NOTICE,
    Layer,
    ask_similarities,
    card_json,
    clip,
    scope_tags,
    serve_prompt,
)
from cairn.hot.userconfig import is_vault_name, load_vaults
from cairn.hot.vault import Vault, configured_vault_gone, locate_served
from cairn.index import build as indexer
from cairn.userconfig import entry_for, outside_projects, served_scope

log = logging.getLogger("cairn.mcp")
_NAMING = threading.Lock()  # held while a draft takes a free branch name and creates the branch

SERVER_NAME = "cairn"
DRAFT_BRANCH_PREFIX = "cairn/draft/"
MAX_SUBJECT_CHARS = 100  # the draft commit's one-line message
MAX_BRANCH_CHARS = 200  # git keeps a branch as a file: a longer name fails on most file systems
EXPLAIN_CANDIDATES = 20  # as many as the hook logs and `cairn explain` details (the rest are counted)
ECHO_CHARS = MAX_QUERY_CHARS  # the prompt as explain echoes it: the hook's own cut
INSTRUCTIONS = (
    "Cairn holds a team's lessons as experience cards. Call `recall` with the task at hand to get the few cards "
    "that fit (or none); `show` reads a whole card with who wrote it; `explain` tells why cards were or were not "
    "chosen; `add_draft` proposes a new lesson as a draft card on a new git branch for the team to review."
)


class McpMissing(CairnError):
    """The optional `mcp` package is not installed, or cannot be imported."""


def server_class() -> Any:
    """The SDK's high-level server class: `MCPServer` (mcp 2.x) or `FastMCP` (mcp 1.x)."""
    return _sdk_attr(("mcp.server.mcpserver", "MCPServer"), ("mcp.server.fastmcp", "FastMCP"))


def tool_error_class() -> type[Exception]:
    """The SDK's "expected tool failure" exception: its message reaches the client (others are hidden)."""
    found: type[Exception] = _sdk_attr(
        ("mcp.server.mcpserver.exceptions", "ToolError"), ("mcp.server.fastmcp.exceptions", "ToolError")
    )
    return found


def _sdk_attr(*candidates: tuple[str, str]) -> Any:
    broken: ImportError | None = None  # the SDK is there but fails to import (mcp 1.2 under a newer pydantic)
    for module, attr in candidates:
        try:
            return getattr(importlib.import_module(module), attr)
        except AttributeError:
            continue
        except ImportError as exc:
            missing = isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == "mcp"
            broken = broken if missing else exc  # a module of the SDK missing: the other version's layout
    from cairn.extras import install_command

    if broken is not None:  # "not installed" sent the user to a pip command that finds it installed and does nothing
        reason = " ".join(str(broken).split())[:200] or type(broken).__name__
        raise McpMissing(
            f"`cairn serve` needs the MCP SDK, the mcp extra, installed beside this Cairn but it cannot be imported "
            f"({reason}); reinstall it: {install_command('mcp', reinstall=True)}"
        )
    raise McpMissing(
        f"`cairn serve` needs the MCP SDK, the mcp extra, not installed beside this Cairn: {install_command('mcp')}"
    )


def build_server(vault: Vault, configured_as: str | None = None) -> Any:
    """An MCP server whose tools read (and draft into) `vault`, the configured vault `configured_as` when it was
    chosen by its name; call `.run("stdio")` on it."""
    cls = server_class()
    if "version" in inspect.signature(cls).parameters:
        server = cls(SERVER_NAME, instructions=INSTRUCTIONS, version=__version__)
    else:  # mcp 1.x's FastMCP takes no version (its low-level server then reports mcp's own): set it there
        server = cls(SERVER_NAME, instructions=INSTRUCTIONS)
        server._mcp_server.version = __version__
    tools = VaultTools(vault, configured_as)
    tool_error = tool_error_class()
    for method in (tools.recall, tools.show, tools.explain, tools.add_draft):
        server.add_tool(_reporting(method, tool_error), name=method.__name__)
    return server


def _reporting(method: Callable[..., Any], tool_error: type[Exception]) -> Callable[..., Any]:
    """The tool with Cairn's own errors (a user's mistake, said in one line) passed to the client as tool errors."""

    @functools.wraps(method)
    def tool(*args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            result = method(*args, **kwargs)
            # `cairn serve --verbose`: one line a call, its outcome, never the agent's text (the hook logs none)
            log.info("%s: %s (%.0f ms)", method.__name__, _outcome(result), 1000 * (time.monotonic() - started))
            return result
        except Exception as exc:  # the SDK would hide anything but its ToolError's text: say what `cairn` says
            message = _error_text(method.__name__, exc)  # the SDK logs it as the tool's failure
        finally:
            # GitPython's repositories sit in reference cycles: without a collection, each call's `git cat-file`
            # helpers (two processes, six pipes) live on in a long-running server until the cycle collector runs.
            # (Raised only after it, so that no traceback keeps the call's frames, and their repositories, alive.)
            gc.collect()
        raise tool_error(message)

    return tool


def _outcome(result: Any) -> str:
    """A tool's result in a few words for the log: the cards given or the card shown (ids: the vault's own file
    names), or that it abstained."""
    if not isinstance(result, dict):
        return "done"
    if "cards" in result:  # recall
        return "gave " + ", ".join(str(c.get("id")) for c in result["cards"]) if result["cards"] else "abstained"
    if "injected" in result:  # explain
        given = ", ".join(str(i) for i in result["injected"]) or "nothing"
        return f"{len(result.get('candidates', []))} candidate(s), would give {given}"
    if "branch" in result:  # add_draft (its own line says where)
        return f"drafted {result.get('id')}"
    return f"showed {result.get('id')}"


def _error_text(tool: str, exc: Exception) -> str:
    """One line for a failed call, as `cairn`'s error funnel says it (`cli.common.errors_to_exit`): a user's mistake
    as Cairn words it, an OSError with what to do, anything else as a bug (its traceback logged on stderr)."""
    if isinstance(exc, CairnError):
        return str(exc)
    if isinstance(exc, OSError):
        from cairn.cli.common import os_error_text

        return os_error_text(exc)
    log.exception("%s failed", tool)
    text = str(exc).splitlines()[0][:300] if str(exc) else ""
    return f"unexpected {type(exc).__name__}: {text} (a bug in Cairn; the server's stderr has the traceback)"


def serve(vault: Vault, configured_as: str | None = None) -> None:
    """Run the server on stdin/stdout until the client closes the connection."""
    server = build_server(vault, configured_as)
    # What is loaded by now lives as long as the server: out of the collector's way, the collection after each call
    # (`_reporting`) looks at that call's objects alone (a tenth of a millisecond, not forty).
    gc.collect()
    gc.freeze()
    log.info("cairn %s serving %s over stdio", __version__, vault.root)
    note = outside_projects(entry_for(vault.root), os.getcwd())
    if note is not None:  # served all the same: the client named this vault; the hook would not serve it here
        log.warning("Note: %s (this server's folder).", note)
    _read_requests_through_filter()
    server.run("stdio")


def _read_requests_through_filter() -> None:
    """Hand the SDK a stdin whose lines are `_wire_line`'s, and point fd 0 at /dev/null (as mcp 2.x does for its own
    reader) so that no child process (git) reads the protocol. The SDK reads `sys.stdin.buffer` (1.x, 2.x); one that
    is no file descriptor it reads in place."""
    wire = os.fdopen(os.dup(0), "rb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = io.TextIOWrapper(io.BufferedReader(_FilteredLines(wire)), encoding="utf-8")


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _wire_line(line: bytes) -> bytes:
    """One line of the protocol as the SDK can parse it: undecodable bytes as U+FFFD (whatever the SDK's version
    does with them), no byte-order mark before it, and a string's lone UTF-16 surrogate (`"\\ud800"`, half an emoji a client's cut left) as
    U+FFFD too: the SDK's parser rejects such a line without a word, so the client waited for an answer for ever."""
    text = line.decode("utf-8", "replace")
    if text.startswith("\ufeff"):  # a byte-order mark (a client on Windows): not JSON, so dropped without a word
        text = text[1:]
    if text.lstrip().startswith("["):
        return _batch_lines(text)
    refused = _malformed_request(text)
    if refused is not None:
        return refused
    if text.count("[") + text.count("{") > MAX_DEPTH:
        text = _shallow(text)
    if _SURROGATE_ESCAPE.search(text):
        try:
            message = json.loads(text)
        except (ValueError, RecursionError):  # not JSON (or nested past the parser): the SDK says so
            return text.encode("utf-8")
        dumped = json.dumps(message, ensure_ascii=False)  # surrogate pairs are one character by now
        if _SURROGATE.search(dumped):
            return _SURROGATE.sub("\ufffd", dumped).encode("utf-8") + b"\n"
    return text.encode("utf-8")


def _batch_lines(text: str) -> bytes:
    """A JSON-RPC batch (an array of requests, which MCP 2025-03-26 has servers take) as its requests, one a line,
    each through `_wire_line`: the SDK reads one message a line and dropped the whole array without a word, so the
    client waited for ever. Each request is answered on its own line, for its id."""
    try:
        batch = json.loads(text)
    except (ValueError, RecursionError):  # not JSON (or nested past the parser): no id to answer
        return text.encode("utf-8")
    if not isinstance(batch, list):
        return text.encode("utf-8")
    # ASCII: a lone surrogate stays an escape for `_wire_line` to read; an empty batch is an empty line (not EOF)
    return b"".join(_wire_line(json.dumps(m).encode() + b"\n") for m in batch if isinstance(m, dict)) or b"\n"


def _malformed_request(text: str) -> bytes | None:
    """For a request with an id that the SDK would drop without a word (a line that is not JSON, its id read before
    its first nested value or as its last key; params that are no object, as `[]` or `"x"`; no `"jsonrpc": "2.0"`;
    a method that is no string), the line the SDK answers for that id with an error saying what is wrong (the client
    waited for ever); None for any other line, handed on as it is."""
    if '"id"' not in text:  # a notification, or no JSON-RPC at all: nothing to answer
        return None
    try:
        message = json.loads(text)
    except RecursionError:  # nested past the parser: no id to answer
        return None
    except ValueError as exc:  # the SDK dropped it without a word too: answered when its id can be read
        found = _HEAD_ID.match(text) or _TAIL_ID.search(text)
        try:
            request_id = None if found is None else json.loads(found.group(1))
        except ValueError:  # an id string with a bad escape: none to answer
            return None
        if request_id is None:
            return None
        said = f"parse error: the line is not JSON ({exc}); send each request as one JSON object on one line"
        return _refusal(json.dumps(request_id), f"{said}; cairn serve did not run it")
    if not isinstance(message, dict) or "result" in message or "error" in message:  # a batch, or a client's answer
        return None
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):  # no id the SDK answers
        return None
    params = message.get("params")
    if message.get("jsonrpc") != "2.0":
        said = 'invalid request: it must say "jsonrpc": "2.0"'
    elif not isinstance(message.get("method"), str):
        said = 'invalid request: "method" must be a string, the name of the method'
    elif params is not None and not isinstance(params, dict):
        kind = {list: "an array", str: "a string", bool: "true or false"}.get(type(params), "a number")
        said = f'invalid params: "params" must be a JSON object (named values), not {kind}'
    else:
        return None
    return _refusal(json.dumps(request_id), f"{said}; cairn serve did not run it")


def _refusal(request_id: str, said: str) -> bytes:
    """A line the SDK answers for the id `request_id` (as JSON text) with a JSON-RPC error whose data is `said`: a
    request whose method is `said` (the SDK answers "Method not found" with the method as its data)."""
    return f'{{"jsonrpc": "2.0", "id": {request_id}, "method": {json.dumps(said)}}}\n'.encode()


# The deepest request the SDK is handed: its validation gives up, without a word, on arguments nested about 200 deep.
MAX_DEPTH = 64


def _shallow(text: str) -> str:
    """A request nested deeper than MAX_DEPTH with its params left out, so the SDK answers its id with an error
    (the client waited for ever); any other line as it is."""
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or too deep for this parser too: no id to answer
        return text
    if not isinstance(message, dict) or "params" not in message or _depth(message) <= MAX_DEPTH:
        return text
    message["params"] = {"name": "", "arguments": {}} if message.get("method") == "tools/call" else {}
    return json.dumps(message) + "\n"


def _depth(value: object) -> int:
    """How deep lists and objects nest in a parsed JSON value (1 for a flat one), without recursion."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            pending.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


# The longest request line read: far above any real one (add_draft of a card near its 1 MiB limit, every character
# escaped as JSON's `\uXXXX`, is 6 MiB; the SDK's HTTP transport takes 4 MiB), and a bound on what a client that
# never ends its line can make the server hold.
MAX_REQUEST_BYTES = 16 * 1024 * 1024
_TAIL_BYTES = 4096  # of a line too long, the end kept: where a request's id is when the client writes it last
_TOP_ID = r'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")'
_HEAD_ID = re.compile(r"\s*\{[^{}\[\]]*?" + _TOP_ID)  # among the keys before the first nested value
# the last key of the outer object (a comma left after it); one `\s*` before the comma and one after it, never two
# in a row: a long run of spaces would be split every way (a line of 200,000 spaces kept the server busy for minutes)
_TAIL_ID = re.compile(_TOP_ID + r"\s*(?:,\s*)?\}\s*$")


def _too_long(head: bytes, tail: bytes) -> bytes:
    """The line the SDK is handed for a request over MAX_REQUEST_BYTES: one that it answers, for the request's id,
    with a JSON-RPC error saying so (the client would wait for ever), or an empty line when no id is found."""
    found = _HEAD_ID.match(head.decode("utf-8", "replace")) or _TAIL_ID.search(tail.decode("utf-8", "replace"))
    if found is None:
        return b"\n"
    said = (
        f"request too large: over {MAX_REQUEST_BYTES // (1024 * 1024)} MiB on one line, so cairn serve did not "
        "read it; send a smaller one (a card must be under 1 MiB)"
    )
    return _refusal(found.group(1), said)


class _FilteredLines(io.RawIOBase):
    """A binary stream of `wire`'s lines, each through `_wire_line`; one over MAX_REQUEST_BYTES is read on to its
    end without being kept (`_too_long`)."""

    def __init__(self, wire: io.BufferedReader) -> None:
        self._wire = wire
        self._line = memoryview(b"")

    def readable(self) -> bool:
        return True

    def _next_line(self) -> bytes:
        line = self._wire.readline(MAX_REQUEST_BYTES + 1)
        if len(line) <= MAX_REQUEST_BYTES or line.endswith(b"\n"):
            return _wire_line(line)
        head, tail = line[:_TAIL_BYTES], b""
        del line
        while not tail.endswith(b"\n"):
            chunk = self._wire.readline(1 << 16)
            if not chunk:
                break
            tail = (tail + chunk)[-_TAIL_BYTES:]
        return _too_long(head, tail)

    def readinto(self, buffer: Any) -> int:
        if not self._line:
            self._line = memoryview(self._next_line())
        n = min(len(buffer), len(self._line))
        buffer[:n] = self._line[:n]
        self._line = self._line[n:]
        return n


class VaultTools:
    """The tools, as plain methods over one vault (the SDK derives each tool's schema from its signature)."""

    def __init__(self, vault: Vault, configured_as: str | None = None) -> None:
        self.vault = vault
        self.configured_as = configured_as  # the configured vault's name it was chosen by (not a path)

    def _require_vault(self) -> None:
        """VaultNotFound, saying what to do, when the vault's folder went away under the running server (moved or
        deleted): every tool failed as "not a readable git repository", which sends the agent to git. A server
        started for a configured vault by its name serves it while the configuration names it so, as `cairn recall
        --vault NAME` and the prompt hook do: one `cairn vault remove` left agents served its cards until a restart."""
        root = str(self.vault.root)
        # A configuration that cannot be read: ConfigError, as the prompt hook serves nothing then, however the vault
        # is given (by its path, it would lose the ref, scopes and projects the configuration may set for it)
        entries = load_vaults()
        if self.configured_as is not None:
            name = self.configured_as
            entry = next((e for e in entries if e.name == name), None)
            if entry is None:
                raise VaultNotFound(
                    f"the vault {name!r} this server was started for is no longer configured (`cairn vault remove`?), "
                    f"so it serves none of its cards, as the prompt hook serves none; register it again (`cairn vault "
                    f"add {shlex.quote(root)} --name {name}`), or start the server on another vault"
                )
            if os.path.realpath(entry.path) != os.path.realpath(root):
                raise VaultNotFound(
                    f"the configured vault {name!r} is now {entry.path}, and this server serves the folder it started "
                    f"on, {root}: restart it to serve {entry.path}"
                )
        if is_dir(root):
            locate_served(root)  # its cairn.toml or cards/ gone since the start: the hook serves nothing from it
            return
        entry = entry_for(root)
        if entry is not None:  # the configuration to fix, as `cairn recall --vault NAME` says it
            raise VaultNotFound(
                f"{configured_vault_gone(entry)} (then restart this server: it serves the folder it started on)"
            )
        raise VaultNotFound(
            f"the vault this server serves, {root}, is not a folder any more (moved or deleted?); if it moved, start "
            "the server on its new folder (`cairn serve --vault NEW_PATH`, in the agent's MCP settings)"
        )

    def recall(self, query: str, scope: list[str] | None = None, session: str | None = None) -> dict[str, Any]:
        """The cards that fit the query (at most 3, or none), with the same decisions as `cairn recall`.

        scope: tags such as a language or tool (default: the server's $CAIRN_SCOPE); cards scoped elsewhere are left
        out.
        session: the agent session's id; a card is given at most once per session (shared with the prompt hook).
        """
        self._require_vault()
        # a configured vault's scope limit, as the hook applies it
        tags, entry = served_scope(self.vault.root, scope_tags(scope or None))  # none given: $CAIRN_SCOPE
        if tags is None:
            return {"cards": [], "abstained": True, **({"already_injected": []} if session else {})}
        with indexer.open_index(self.vault, served_only=True) as index:
            served = serve_prompt(
                index,
                query[:MAX_QUERY_CHARS],  # as the hook and `cairn recall` read a prompt: words past it decide nothing
                vault_root=str(self.vault.root),
                scope=tags,
                session_id=session or None,
                fit=context_trim([Layer(None, str(self.vault.root), index)]),  # what the hook's block holds
                name=None if entry is None else entry.name,  # the hook's ids in the session
            )
        cards = [card_json(c, root=str(self.vault.root)) for c in served.given]
        out: dict[str, Any] = {"cards": cards, "abstained": not cards}
        if session:  # as `cairn recall --json --session` and the hook's json format give it
            out["already_injected"] = list(served.already)
        if cards:
            out["notice"] = NOTICE  # the cards are teammates' notes, not instructions
        return out

    def show(self, id: str) -> dict[str, Any]:
        """The whole card (fields, body) with its provenance: who wrote it and when, from git history.

        id: as `recall` gives it, or `NAME:ID` as the prompt hook shows a card of this vault (configured as NAME).
        """
        self._require_vault()
        # the commands a "no card" names ask this vault: the agent runs them from its own project, not the vault
        entry = entry_for(self.vault.root)
        asked = f" --vault {entry.name if entry else shlex.quote(str(self.vault.root))}"
        record = catalog.card_record(self.vault, self._own_id(id), served_only=True, vault_arg=asked)
        record["notice"] = NOTICE  # the card is a teammate's note, not instructions, as recall and the hook say
        return record

    def _own_id(self, card_id: str) -> str:
        """The bare id of `NAME:ID` when NAME is this vault's name in the user configuration (the prompt hook shows
        its cards so); a card of another configured vault is CardNotFound, with the server to ask; any other id is
        as given (an id may hold a colon)."""
        name, colon, rest = card_id.partition(":")
        if not colon or not is_vault_name(name):
            return card_id
        try:
            entry = next((e for e in load_vaults() if e.name == name), None)
        except ConfigError:
            return card_id
        if entry is None:
            return card_id
        if os.path.realpath(entry.path) == os.path.realpath(self.vault.root):
            return rest
        raise CardNotFound(
            f"{card_id!r} is a card of the vault {name!r} ({entry.path}); this server serves {self.vault.root}: "
            f"ask `cairn serve --vault {name}`, or run `cairn show {card_id}`"
        )

    def explain(self, query: str, scope: list[str] | None = None) -> dict[str, Any]:
        """The best candidate cards for the query (the first 20, and the first 20 the gates judged, as `cairn
        explain` lists them; `omitted_candidates` counts the rest) with each one's score, the three gate values, the
        decision and the reason."""
        self._require_vault()
        read = query[:MAX_QUERY_CHARS]  # what recall reads of it (the echo below shows where it was cut)
        tags, _ = served_scope(self.vault.root, scope_tags(scope or None))  # a configured vault's limit, as recall's
        if tags is None:
            return {
                "query": clip(query, ECHO_CHARS),
                "abstained": True,
                "injected": [],
                "candidates": [],
                "skipped": "scope",
            }
        with indexer.open_index(self.vault, served_only=True) as index:
            asked = ask_similarities(index, read)  # the similarities `recall` gets, so the two decide alike
            result = recall(index, read, scope=tags or None, semantic=asked() if asked else None)
            commit = index.commit
            dropped: dict[str, str] = {}  # as `recall` and the hook give them: at most MAX_CARDS, as many as fit
            given = [p.qid for p in hook_gives([Layer(None, str(self.vault.root), index, tags)], [result], dropped)]
        shown = _shown_candidates(result.candidates)
        out: dict[str, Any] = {
            "query": clip(query, ECHO_CHARS),
            "commit": commit,
            "abstained": result.abstained,
            "injected": given,
            "candidates": [_candidate_dict(c, given, dropped, read) for c in shown],
            "fragment": None if result.fragment is None else clip(result.fragment, ECHO_CHARS),
            "phrases": list(result.phrases),
            "thresholds": {
                "min_lead": result.settings.min_lead,
                "min_score": result.settings.min_lead,  # the old name, kept until 0.3 (CHANGELOG)
                "min_coverage": result.settings.min_coverage,
                "min_margin": result.settings.min_margin,
                "min_evidence": result.settings.min_evidence,
                "max_cards": result.settings.max_cards,
            },
        }
        if len(shown) < len(result.candidates):
            out["omitted_candidates"] = len(result.candidates) - len(shown)
        if shown:
            out["notice"] = NOTICE  # the candidates' names are teammates' text, as recall's and show's cards are
        return out

    def add_draft(
        self,
        name: str,
        summary: str,
        body: str = "",
        scope: list[str] | None = None,
        id: str | None = None,
        branch: str | None = None,
    ) -> dict[str, Any]:
        """Propose a new lesson: a card with `status: draft`, committed on a NEW branch for review.

        The branch starts at the commit the vault serves (its reviewed branch), whatever is checked out; the
        checked-out branch, the working tree and HEAD are left untouched; drafts are never injected. The card is
        linted as `cairn add` lints it, beside the cards of the commit it starts from and by that commit's
        cairn.toml (as a commit on the branch is linted): a lint error refuses it, warnings are returned.
        id: topic/slug, or a slug put under the first scope's folder (default: <first scope>/<slug of the name>,
        as `cairn add` names it). branch: the new branch, under cairn/draft/ (default: cairn/draft/<id>).
        """
        self._require_vault()
        # `["git,ci"]` is two tags, as recall's scope and `cairn add --scope git,ci` read it
        tags = scope_tags(scope or ())
        new = NewCard(name=name, summary=summary, scope=tags, card_id=id or None, body=body, status="draft")
        card_id = resolve_card_id(new)  # the id and folder `cairn add` gives the same name and scope
        rel = f"cards/{card_id}.md"
        data = render_card(new).encode("utf-8")
        parsed, findings = parse_card(rel, data)
        if parsed is None:
            said = "; ".join(f.message for f in findings)
            raise InvalidCard(
                f"{rel} was not drafted: {said}; change that and call add_draft again (nothing was written)"
            )
        if branch is not None:
            draft_branch(branch)  # refused before anything is read or written
        with gitrepo.open_repo(self.vault) as repo:
            return self._draft(repo, card_id, name, rel, data, branch)

    def _draft(self, repo: Any, card_id: str, name: str, rel: str, data: bytes, branch: str | None) -> dict[str, Any]:
        served, base = indexer.served_commit(self.vault, repo)  # the branch agents read, not whatever is checked out
        there = gitrepo.read_path(repo, base, rel, self.vault)
        if there is not None:
            alike = named_alike(rel, there, name)
            if alike is not None:  # another id would only meet name-unique
                raise CardExists(
                    f"{rel} already holds a card named {alike!r} on {served} (names are unique): give this lesson "
                    "another name, or leave that card for the team to edit (nothing was written)"
                )
            raise CardExists(f"{rel} already exists on {served}; choose another id (nothing was written)")
        parts = rel.split("/")[:-1]  # a file where the card's folder goes: git refused it in words of its own
        for folder in ("/".join(parts[: end + 1]) for end in range(len(parts))):
            if gitrepo.read_path(repo, base, folder, self.vault, limit=0) is not None:
                raise RefusedWrite(
                    f"{folder} is a file on {served}, not a folder, so {rel} cannot be drafted; choose another id "
                    "(nothing was written)"
                )
        linted = lint_pending(self.vault, {rel: data}, commit=base)[rel]  # beside the cards it is committed on
        errors = [f for f in linted if f.severity == ERROR]
        if errors:
            # each finding once: one in the name, the summary and the body said it three times, and hid the rest
            said = "; ".join(list(dict.fromkeys(f"{f.rule}: {f.message}" for f in errors))[:3])
            raise LintRefused(f"{rel} was not drafted: {len(errors)} lint error(s): {said} (nothing was written)")
        subject = commit_subject(f"Draft lesson: {name}")
        for above in ("cairn", DRAFT_BRANCH_PREFIX.rstrip("/")):  # git keeps a branch as a file: none can go below it
            if gitrepo.branch_exists(repo, above):
                raise RefusedWrite(
                    f"the branch {above!r} leaves git no room for branches under {DRAFT_BRANCH_PREFIX}, where drafts "
                    f"go; rename it with `git branch -m {above} <new name>` in {self.vault.root} (nothing was written)"
                )
        targets = [draft_branch(branch)] if branch is not None else _free_branches(repo, card_id)
        # The SDK runs each call on a worker thread: two drafts of one id at once found the same free name, and the
        # one that lost the race failed. One draft of this server names its branch at a time (another process's
        # draft can still take a name first: the next free one is taken, a few times).
        with _NAMING:
            for attempt, target in enumerate(targets):
                try:
                    commit = gitrepo.commit_file_to_new_branch(
                        repo, base, target, f"{self.vault.prefix}{rel}", data, subject
                    )
                    break
                except CairnError:
                    # A name Cairn chose can still clash with a draft branch below it (cairn/draft/ops/x exists, so
                    # cairn/draft/ops cannot be made): take the next free name, a few times.
                    if branch is not None or attempt >= 2:
                        raise
        log.info("drafted %s on branch %s (%s)", card_id, target, commit[:8])
        return {
            "id": card_id,
            "path": rel,
            "branch": target,
            "commit": commit,
            "base": base,
            "status": "draft",
            "warnings": [f"{f.rule}: {f.message}" for f in linted if f.severity != ERROR],
        }


def draft_branch(branch: str) -> str:
    """The branch a draft may go on: a new branch named `cairn/draft/<something>`, given without `refs/heads/`.
    Anything else (`main`, `origin/main`, `refs/heads/main`, a tag) is RefusedWrite: a draft never lands where the
    team reads cards from, and never shadows a remote-tracking branch."""
    name = branch.strip()
    rest = name[len(DRAFT_BRANCH_PREFIX) :] if name.startswith(DRAFT_BRANCH_PREFIX) else ""
    shown = branch if len(branch) <= 80 else branch[:77] + "..."
    if not rest.strip("/") or name != branch or any(c.isspace() or not c.isprintable() for c in name):
        raise RefusedWrite(
            f"branch {shown!r} is refused: drafts go on a new branch under {DRAFT_BRANCH_PREFIX} "
            f"(for example {DRAFT_BRANCH_PREFIX}my-lesson); nothing was written"
        )
    if len(name) > MAX_BRANCH_CHARS:
        raise RefusedWrite(
            f"branch {shown!r} is refused: it is {len(name)} characters long; give one of at most "
            f"{MAX_BRANCH_CHARS} (for example {DRAFT_BRANCH_PREFIX}my-lesson); nothing was written"
        )
    return name


def commit_subject(text: str) -> str:
    """A commit message of one line: control characters and line breaks become spaces (so no second line, and no
    trailer such as `Reviewed-by:` can be forged), runs of spaces one, at most MAX_SUBJECT_CHARS characters."""
    flat = "".join(c if c.isprintable() else " " for c in text)
    flat = " ".join(flat.split())
    return flat if len(flat) <= MAX_SUBJECT_CHARS else flat[: MAX_SUBJECT_CHARS - 1].rstrip() + "…"


def _shown_candidates(candidates: tuple[Candidate, ...]) -> list[Candidate]:
    """The first EXPLAIN_CANDIDATES candidates, the first EXPLAIN_CANDIDATES the gates judged and every injected card,
    by score: 20 drafts of a lesson that outscore its active card no longer hide the card recall decided on."""
    shown: list[Candidate] = []
    judged = 0
    for n, c in enumerate(candidates):
        gated = c.reason in GATE_REASONS
        judged += gated
        if n < EXPLAIN_CANDIDATES or (gated and judged <= EXPLAIN_CANDIDATES) or c.decision == "injected":
            shown.append(c)
    return shown


def _candidate_dict(c: Candidate, given: list[str], dropped: dict[str, str], query: str) -> dict[str, Any]:
    """One candidate as explain shows it; a card recall injected that the hook does not give is rejected, as
    `cairn explain` says it: `context_limit` past what the hook's block holds, `over_total` past the hook's
    `MAX_CARDS` (a vault's `max_cards` above it). As `cairn explain --json`'s rows: the prompt's terms it matched,
    and for a card refused at admission the `not_when` word found in the query or the review date it passed (and
    the active cards that supersede it, when they do)."""
    over = c.decision == "injected" and c.card.id not in given
    out = {
        "id": c.card.id,
        "name": clip(c.card.name, NAME_CHARS),  # a card's text is untrusted: cut as every interface cuts it
        "score": c.score,
        "lead": c.lead,
        "norm_score": c.lead,  # the old name, kept until 0.3 (CHANGELOG)
        "coverage": c.coverage,
        "margin": c.margin,
        "decision": REJECTED if over else c.decision,
        "reason": dropped.get(c.card.id, "over_total") if over else c.reason,
        "picked": c.picked,  # which of recall's picks injected it when the word gates passed nothing (or None)
        "similarity": c.similarity,  # its z-score with the semantic extra (None without it), as `cairn explain` shows
        "matched": list(c.matched),  # the query's own terms: nothing of the card's text
    }
    if c.reason == "not_when":
        word = not_when_found(c.card, query)
        out["not_when"] = None if word is None else clip(word, NAME_CHARS)  # the card's text: cut as its name is
    if c.reason == "expired":
        out["expires_on"] = c.card.expires_on
        if c.card.superseded_by:  # a new review date would not serve it: the card superseding it keeps it out too
            out["superseded_by"] = list(c.card.superseded_by)
    return out


def _branch_safe(card_id: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9/_-]+", "-", card_id).strip("-/")
    cleaned = re.sub(r"/+", "/", cleaned)
    return "/".join(part.strip(".-") or "card" for part in cleaned.split("/")) or "card"


def _free_branches(repo: Any, card_id: str) -> Iterator[str]:
    """Free names for a draft of `card_id`, best first: cairn/draft/<id>, then <id>-2, -3... When a draft branch
    is named like one of the id's folders (cairn/draft/ops for ops/cron), git cannot make a branch below it: the
    id's parts are then joined by `-` (cairn/draft/ops-cron). A name a remote's branch holds (a teammate's draft,
    fetched) is taken too: the new branch could not be pushed beside it."""
    parts = _branch_safe(card_id).split("/")
    if any(gitrepo.branch_taken(repo, DRAFT_BRANCH_PREFIX + "/".join(parts[:i])) for i in range(1, len(parts))):
        parts = ["-".join(parts)]
    wanted = DRAFT_BRANCH_PREFIX + "/".join(parts)
    n = 1
    while True:
        name = wanted if n == 1 else f"{wanted}-{n}"
        if not gitrepo.branch_taken(repo, name):
            yield name
        n += 1
