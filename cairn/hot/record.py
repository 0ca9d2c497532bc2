"""`Record`, the base of the hot path's immutable records: `cairn.hot` holds it (every hot module needs it, and the
hook imports one module for all of them); this module keeps its name for the code that imports it from here."""

from cairn.hot import Record

__all__ = ["Record"]
