"""A YAML loader for card frontmatter that is bounded in time and memory and never constructs objects."""

from __future__ import annotations

from typing import Any

import yaml

try:  # libyaml is ten times faster; the pure-Python loader behaves the same.
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _BaseLoader

MAX_FRONTMATTER_BYTES = 64 * 1024
MAX_DEPTH = 64
MAX_NODES = 20_000


class YamlRejected(ValueError):
    """The frontmatter is valid YAML in principle but too deep, too large or ambiguous to accept."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.line = line


class _Loader(_BaseLoader):  # type: ignore[misc]
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor` would also repeat keys on purpose
                raise YamlRejected(
                    "a YAML merge key (`<<`) is not supported; write the merged keys out",
                    key_node.start_mark.line,
                )
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:
                raise YamlRejected("a mapping key is not a plain value", key_node.start_mark.line) from None
            if duplicate:
                raise YamlRejected(f"duplicate key {key!r}", key_node.start_mark.line)
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


_Loader.add_constructor("tag:yaml.org,2002:map", _Loader.construct_yaml_map)

MAX_INT_CHARS = 1000  # `0x` and 4,000 hex digits is an int Python cannot print (over 4,300 decimal digits)


def _construct_int(loader: _Loader, node: yaml.ScalarNode) -> Any:
    """An int, refused when it is written longer than `MAX_INT_CHARS`: one past Python's limit on an int's decimal
    digits read (`0xfff...`) and then failed every index write and `cairn show --json` that printed it."""
    if len(str(node.value)) > MAX_INT_CHARS:
        raise YamlRejected(
            f"a number longer than {MAX_INT_CHARS} characters; quote it to keep it as text", node.start_mark.line
        )
    return loader.construct_yaml_int(node)


_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def _construct_bool(loader: _Loader, node: yaml.ScalarNode) -> Any:
    """A boolean, refused when a `!!bool` tag is put on a word YAML has no truth value for (`!!bool active`): PyYAML
    looked the word up and raised a KeyError, which failed every `cairn lint` and `cairn index` of the vault."""
    if isinstance(node.value, str) and node.value.lower() not in loader.bool_values:  # a list: YAML says it
        raise YamlRejected(f"`!!bool {node.value}` is not true or false; drop the tag", node.start_mark.line)
    return loader.construct_yaml_bool(node)


_Loader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)
# Dates stay text so that a bad one (2026-13-01) is the card's finding, not the parser's crash.
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _Loader.construct_yaml_str)


def _max_nesting(text: str) -> int:
    """An upper bound on the nesting depth, cheap enough to run before any parser recurses."""
    depth = deepest = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
    indent = max((len(line) - len(line.lstrip(" ")) for line in text.splitlines()), default=0)
    return max(deepest, indent // 2)


def _measure(value: Any, budget: int) -> tuple[int, int]:
    """(values, deepest nesting) as a consumer would see them, with aliases expanded, stopping at the budget. The
    depth is measured on what was built: block sequences opened on one line (`- - - x`) nest with no bracket and
    one indent, which `_max_nesting` cannot see, and every reader of a card recurses into it."""
    stack = [(value, 0)]
    count = deepest = 0
    while stack:
        item, depth = stack.pop()
        count += 1
        deepest = max(deepest, depth)
        if count > budget or deepest > MAX_DEPTH:
            break
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in (*item.keys(), *item.values()))
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend((child, depth + 1) for child in item)
    return count, deepest


def load(
    text: str, *, max_bytes: int = MAX_FRONTMATTER_BYTES, max_nodes: int = MAX_NODES, what: str = "frontmatter"
) -> Any:
    """Parse one YAML document safely; raises yaml.YAMLError or YamlRejected.

    The limits and the name used in messages default to card frontmatter; case files pass larger ones.
    """
    if len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise YamlRejected(f"{what} is larger than {max_bytes // 1024} KiB")
    if _max_nesting(text) > MAX_DEPTH:
        raise YamlRejected(f"{what} is nested deeper than {MAX_DEPTH} levels")
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except RecursionError:
        raise YamlRejected(f"{what} is nested deeper than {MAX_DEPTH} levels") from None
    except YamlRejected:
        raise
    except (ValueError, TypeError, OverflowError, LookupError) as exc:  # LookupError: `!!float ''` (IndexError)
        raise YamlRejected(f"{what} holds a value YAML cannot read: {exc}") from None
    count, deepest = _measure(data, max_nodes)
    if deepest > MAX_DEPTH:
        raise YamlRejected(f"{what} is nested deeper than {MAX_DEPTH} levels")
    if count > max_nodes:
        raise YamlRejected(f"{what} expands to more than {max_nodes} values (alias bomb?)")
    return data
