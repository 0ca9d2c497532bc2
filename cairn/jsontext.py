"""Editing an agent's JSON settings file as text: Cairn's hook handlers taken out of `hooks.EVENT`, or its entry
added there, and every other byte of the file kept (the user's layout, one-line arrays, escapes, number spellings,
the last line's end), so an install and uninstall leave the file as it was.

A file the agent reads with comments (Gemini CLI: `//` and `/* */`, outside strings) keeps them: the text is read
with its comments blanked (`without_comments`: the same length, so every place found in it is the original's place).

`edited` returns None when the text cannot be edited so (not one JSON object, or an edit that would not read back
as the data the caller computed): the caller then writes the data out whole, as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_SPACE = " \t\r\n"


@dataclass(slots=True)
class _Node:
    """A JSON value's place in the text: [start, end). An object's members are (key, key's start, value); an
    array's items are its values; a scalar has neither."""

    start: int
    end: int
    kind: str  # "object", "array" or "scalar"
    members: list[tuple[str, int, _Node]] = field(default_factory=list)
    items: list[_Node] = field(default_factory=list)

    def member(self, key: str) -> _Node | None:
        """The value of `key` (the last one, as JSON readers take a key given twice)."""
        found = [value for name, _, value in self.members if name == key]
        return found[-1] if found else None


def edited(
    text: str,
    data: dict[str, Any],
    event: str,
    is_cairn: Callable[[object], bool],
    entry: dict[str, Any] | None,
    indent: int | str,
    comments: bool = False,
) -> str | None:
    """`text` with every handler `is_cairn` accepts taken out of `hooks.EVENT` (a group left with none goes too),
    then `entry` appended to `hooks.EVENT` when given, else `hooks.EVENT` and `hooks` removed when left empty; None
    when the result does not read as `data`. `comments`: the file may hold comments, which stay."""
    read = without_comments if comments else _same
    try:
        new = _strip(text, event, is_cairn, read)
        new = _append(new, event, entry, indent, read) if entry is not None else _drop_empty(new, event, read)
        if json.loads(read(new)) != data or _comments(new, read) != _comments(text, read):
            return None
        return new
    except (ValueError, TypeError, IndexError, KeyError):
        return None


def without_comments(text: str) -> str:
    """JSON text with its // and /* */ comments outside strings blanked, as Gemini CLI reads its settings
    (strip-json-comments): line breaks stay, and every other character becomes a space, so the text keeps its
    length and a parse error still names the right line."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            step = 2 if c == "\\" else 1
            out.append(text[i : i + step])
            in_string = c != '"'
            i += step
        elif text.startswith("//", i) or text.startswith("/*", i):
            if text[i + 1] == "/":
                end = text.find("\n", i)
                end = n if end < 0 else end
            else:
                end = text.find("*/", i + 2)
                end = n if end < 0 else end + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:end]))
            i = end
        else:
            in_string = c == '"'
            out.append(c)
            i += 1
    return "".join(out)


def _same(text: str) -> str:
    return text


def _comments(text: str, read: Callable[[str], str]) -> str:
    """The characters of the text's comments, in order (an edit must keep every one)."""
    return "".join(c for c, blank in zip(text, read(text), strict=True) if c != blank)


def _strip(text: str, event: str, is_cairn: Callable[[object], bool], read: Callable[[str], str]) -> str:
    while True:
        plain = read(text)
        groups = _groups(_parse(plain), event)
        if groups is None:
            return text
        for n, group in enumerate(groups.items):
            handlers = group.member("hooks") if group.kind == "object" else None
            if handlers is None or handlers.kind != "array":
                continue
            cairn = [h for h in handlers.items if is_cairn(json.loads(plain[h.start : h.end]))]
            if not cairn:
                continue
            if len(cairn) == len(handlers.items):
                text = _cut(text, plain, groups, n)
            else:
                text = _cut(text, plain, handlers, handlers.items.index(cairn[0]))
            break
        else:
            return text


def _drop_empty(text: str, event: str, read: Callable[[str], str]) -> str:
    plain = read(text)
    top = _parse(plain)
    hooks = top.member("hooks")
    groups = _groups(top, event)
    if hooks is None or groups is None or groups.items:
        return text
    text = _cut(text, plain, hooks, _index_of(hooks, event))
    plain = read(text)
    top = _parse(plain)
    hooks = top.member("hooks")
    if hooks is not None and hooks.kind == "object" and not hooks.members:
        text = _cut(text, plain, top, _index_of(top, "hooks"))
    return text


def _append(text: str, event: str, entry: dict[str, Any], indent: int | str, read: Callable[[str], str]) -> str:
    plain = read(text)
    top = _parse(plain)
    hooks = top.member("hooks")
    if hooks is None:
        return _insert(text, plain, top, {event: [entry]}, indent, key="hooks")
    groups = hooks.member(event)
    if groups is None:
        return _insert(text, plain, hooks, [entry], indent, key=event)
    return _insert(text, plain, groups, entry, indent)


def _groups(top: _Node, event: str) -> _Node | None:
    hooks = top.member("hooks")
    groups = hooks.member(event) if hooks is not None and hooks.kind == "object" else None
    return groups if groups is not None and groups.kind == "array" else None


def _index_of(node: _Node, key: str) -> int:
    return max(n for n, (name, _, _) in enumerate(node.members) if name == key)


def _spans(node: _Node) -> list[tuple[int, int]]:
    if node.kind == "object":
        return [(at, value.end) for _, at, value in node.members]
    return [(item.start, item.end) for item in node.items]


def _cut(text: str, plain: str, node: _Node, n: int) -> str:
    """`text` without the `n`-th member or item of `node`, and the comma and space that separated it (a comment
    beside it stays: it may be about its neighbour). `plain`: the text with its comments blanked."""
    spans = _spans(node)
    if len(spans) == 1:
        if plain[node.start + 1 : node.end - 1] == text[node.start + 1 : node.end - 1]:
            return text[: node.start + 1] + text[node.end - 1 :]
        # Comments inside stay, each on its line: only the value, its indentation and what follows it go.
        return text[: spans[0][0]].rstrip(" \t") + text[spans[0][1] :].lstrip(_SPACE)
    if n + 1 < len(spans):
        comma = plain.index(",", spans[n][1])
        end = comma + 1
        while end < spans[n + 1][0] and text[end] in _SPACE:
            end += 1
        return text[: spans[n][0]] + text[end:]
    comma = plain.index(",", spans[n - 1][1])
    return text[:comma] + text[spans[n][1] :]


def _insert(text: str, plain: str, node: _Node, value: object, indent: int | str, key: str | None = None) -> str:
    """`text` with `value` (under `key` in an object) appended to `node`, laid out as its siblings are."""
    newline = "\r\n" if "\r\n" in text else "\n"
    unit = indent if isinstance(indent, str) else " " * indent
    head = "" if key is None else json.dumps(key, ensure_ascii=False) + ": "
    spans = _spans(node)
    if spans:
        last_start, last_end = spans[-1]
        prefix = plain[plain.rfind("\n", 0, last_start) + 1 : last_start]
        if prefix.strip(" \t"):  # siblings on one line: the new one joins them there
            piece = ", " + head + json.dumps(value, ensure_ascii=False)
        else:
            piece = "," + newline + prefix + head + _rendered(value, indent, newline + prefix)
        return text[:last_end] + piece + text[last_end:]
    line = plain[plain.rfind("\n", 0, node.start) + 1 : node.start]
    base = line[: len(line) - len(line.lstrip(" \t"))]
    kept = text[node.start + 1 : node.end - 1].rstrip(_SPACE)  # its comments, when it holds any
    inner = kept + newline + base + unit + head + _rendered(value, indent, newline + base + unit) + newline + base
    return text[: node.start + 1] + inner + text[node.end - 1 :]


def _rendered(value: object, indent: int | str, line_start: str) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=False).replace("\n", line_start)


def _parse(text: str) -> _Node:
    """The text's top-level JSON object, with the places of its values; ValueError when it is not one."""
    node, end = _value(text, _skip(text, 0))
    if node.kind != "object" or _skip(text, end) != len(text):
        raise ValueError("not one JSON object")
    return node


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in _SPACE:
        at += 1
    return at


def _value(text: str, at: int) -> tuple[_Node, int]:
    if text[at] == "{":
        node = _Node(at, at, "object")
        at = _skip(text, at + 1)
        while text[at] != "}":
            key_at = at
            if text[at] != '"':
                raise ValueError("a key is not a string")
            end = _string_end(text, at)
            key = json.loads(text[at:end])
            at = _skip(text, end)
            if text[at] != ":":
                raise ValueError("no colon after a key")
            value, at = _value(text, _skip(text, at + 1))
            node.members.append((key, key_at, value))
            at = _after_item(text, at, "}")
        node.end = at + 1
        return node, at + 1
    if text[at] == "[":
        node = _Node(at, at, "array")
        at = _skip(text, at + 1)
        while text[at] != "]":
            value, at = _value(text, at)
            node.items.append(value)
            at = _after_item(text, at, "]")
        node.end = at + 1
        return node, at + 1
    end = _string_end(text, at) if text[at] == '"' else _scalar_end(text, at)
    if end == at:
        raise ValueError("no value")
    return _Node(at, end, "scalar"), end


def _after_item(text: str, at: int, close: str) -> int:
    at = _skip(text, at)
    if text[at] == ",":
        return _skip(text, at + 1)
    if text[at] != close:
        raise ValueError("no comma between values")
    return at


def _string_end(text: str, at: int) -> int:
    at += 1
    while text[at] != '"':
        at += 2 if text[at] == "\\" else 1
    return at + 1


def _scalar_end(text: str, at: int) -> int:
    while at < len(text) and text[at] not in _SPACE + ",]}":
        at += 1
    return at
