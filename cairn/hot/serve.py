"""Serving a prompt: the one way the hook, `cairn recall` and the MCP server ask recall, so the three cannot drift.

`serve_prompt` runs recall with the index's stored settings and, given an agent session, skips the cards that session
already got and records the ones it gets now (under the session's lock). `card_json` is the card shape all three
print, and `scope_tags` reads a scope flag or `$CAIRN_SCOPE` the same way everywhere.
"""

import os

from cairn.hot.paths import state_folder
from cairn.hot.recall import recall
from cairn.hot.record import Record
from cairn.hot.settings import hook_settings, stored_settings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from cairn.hot.index import IndexReader
    from cairn.hot.recall import Candidate, Result


class Served(Record):
    """What a prompt got: recall's whole result, and the cards given (recall's injected cards, trimmed by `fit`)."""

    __slots__ = ("result", "given")
    result: "Result"
    given: "tuple[Candidate, ...]"

    def __init__(self, result: "Result", given: "tuple[Candidate, ...]") -> None:
        self._init(result, given)


def serve_prompt(
    index: "IndexReader",
    query: str,
    *,
    vault_root: str,
    scope: "Sequence[str] | None" = None,
    session_id: str | None = None,
    fit: "Callable[[Sequence[Candidate]], Sequence[Candidate]] | None" = None,
    decide_first: int | None = None,
) -> Served:
    """Recall for `query`; with a session id, each card at most once per session (recorded as given).

    fit: trims recall's injected cards to what the caller can show (the hook's context limit); default all.
    decide_first: only the first n candidates are wanted (`recall`'s argument; the hook logs 20).
    """
    config = index.config
    settings = stored_settings(config)
    if session_id is None:
        result = recall(index, query, scope=scope, settings=settings, decide_first=decide_first)
        return Served(result, tuple(fit(result.injected) if fit else result.injected))
    from cairn.hot import session as sessions  # only agents with a session id pay for the import

    state = state_folder()
    with sessions.open_session(state, session_id) as current:
        result = recall(
            index, query, scope=scope, already_injected=current.injected, settings=settings, decide_first=decide_first
        )
        given = tuple(fit(result.injected) if fit else result.injected)
        if given:
            current.record([c.card.id for c in given], vault_root, index.commit)
    sessions.prune(state, hook_settings(config)[1])
    return Served(result, given)


def card_json(candidate: "Candidate") -> "dict[str, Any]":
    """A given card as every interface prints it: `{id, name, summary, path, score}`."""
    card = candidate.card
    return {"id": card.id, "name": card.name, "summary": card.summary, "path": card.path, "score": candidate.score}


def scope_tags(flag: "str | Sequence[str] | None") -> tuple[str, ...]:
    """Scope tags from a comma-separated flag (or a list of tags), else from `$CAIRN_SCOPE`; empty means all."""
    if flag is None:
        flag = os.environ.get("CAIRN_SCOPE", "")
    items = flag.split(",") if isinstance(flag, str) else flag
    return tuple(s.strip() for s in items if s.strip())
