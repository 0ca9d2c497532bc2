"""The hot path: everything `cairn hook` may import, on every prompt an agent receives.

The rule: modules in `cairn.hot` import the standard library and each other, nothing else (no click, no
gitpython, no YAML, no `cairn.config`, and none of the heavier standard modules: `dataclasses`, `datetime`,
`hashlib`, the `sqlite3` package). A prompt waits for the hook, so each import is a cost every prompt pays; the
records here are plain `__slots__` classes (`cairn.hot.record`) and settings are read from the index as stored
(`cairn.hot.settings`). Cold code may import from here; hot code imports cold code only lazily, on a path the
hook does not take (an index from another version, a type checker). `tests/test_hook_imports.py` holds the
rule: a real hook run imports `cairn.hot.*` and a short list of standard modules, nothing more.
"""
