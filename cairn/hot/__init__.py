"""The hot path: everything `cairn hook` may import, on every prompt an agent receives.

The rule: modules in `cairn.hot` import the standard library and each other, nothing else (no click, no
gitpython, no YAML, no `cairn.config`), and of the standard library only what costs little: `os`, `sys`, `time`,
`math`, `fcntl`, `gc` and a few C modules (`_json`, `_sqlite3`, `_bisect`, `_heapq`, the built-in sha256, and
`_blake2` for the index seals). Not `re` (with the `enum`, `functools` and `collections` it brings), the `json`
package, `pathlib`, `shlex`,
`dataclasses`, `datetime`, `hashlib`, the `sqlite3` package, `contextlib`, `array` or `typing`: together they
once cost the hook more than twice what the interpreter's own start costs. So the tokenizer is written with
`str` and `bytes` operations (held equal to its regexes by tests), JSON goes through `cairn.hot.jsonc`, paths are
strings (`cairn.hot.paths`, `cairn.hot.vault.locate_vault`; cold code gets `Path`s built from them), records are
plain `__slots__` classes (`cairn.hot.record`) and settings are read from the index as stored
(`cairn.hot.settings`). Hot modules do not use `from __future__ import annotations` either (importing
`__future__` costs 0.25 ms): an annotation naming a type-checking-only name is quoted.

Cold code may import from here; hot code imports cold code only lazily, on a path the hook does not take (an index
from another version, a type checker, an error). `tests/test_hook_imports.py` holds the rule: a real hook run
imports `cairn.hot.*` and a short list of standard modules, nothing more.
"""
