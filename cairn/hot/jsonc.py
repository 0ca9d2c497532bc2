"""JSON for the hot path on the C accelerator `_json` alone: `cairn.hot` holds `loads` and `dumps` (every hot module
needs them, and the hook imports one module for all of them); this module keeps their names for the code that
imports them from here."""

from cairn.hot import dumps, loads

__all__ = ["dumps", "loads"]
