"""The settings an index stores (its commit's cairn.toml), read the hook's way: without `cairn.config`.

`cairn.config` validates cairn.toml into dataclasses (and `import dataclasses` alone costs the hook ~8 ms), so the
hook reads the values the index stored as plain records; when a stored section is incomplete or oddly typed (an
index from another version), the validating path decides. Tests hold both readings equal.
"""

from cairn.hot.record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from cairn.config import RecallSettings
    from cairn.hot.index import IndexReader


def settings_of(index: "IndexReader") -> "RecallSettings":
    """The `[recall]` settings the index was built with, validated into `config.RecallSettings` (cold path)."""
    from cairn.config import config_from_dict

    return config_from_dict(index.config).recall


# The [recall] settings the ranking and gates read (see `stored_settings`).
SETTING_NAMES = (
    "max_cards",
    "k1",
    "b",
    "weight_name",
    "weight_summary",
    "weight_body",
    "instruction_weight",
    "unknown_weight",
    "min_lead",
    "min_coverage",
    "min_margin",
    "min_confidence",
    "semantic",
)
# The type each stored setting must have for the fast path (bool is checked exactly: `type(True) is not int`).
_TYPES = (int,) + (float,) * (len(SETTING_NAMES) - 2) + (bool,)


class StoredSettings(Record):
    """The `[recall]` settings as stored in an index, read without `cairn.config` (the hook's path): the same
    attributes as `config.RecallSettings`, for recall and the gates."""

    __slots__ = SETTING_NAMES
    max_cards: int
    k1: float
    b: float
    weight_name: float
    weight_summary: float
    weight_body: float
    instruction_weight: float
    unknown_weight: float
    min_lead: float
    min_coverage: float
    min_margin: float
    min_confidence: float
    semantic: bool

    def __init__(self, *values: "Any") -> None:
        self._init(*values)


def stored_settings(config: "dict[str, Any]") -> "RecallSettings":
    """The `[recall]` settings from an index's stored config (`IndexReader.config`), the same values
    `settings_of` gives; when the stored section lacks a setting or has an odd type (an index from another
    version), `settings_of`'s validating path decides."""
    section = config.get("recall")
    if isinstance(section, dict):
        values = [section.get(name) for name in SETTING_NAMES]
        if all(type(v) is t for v, t in zip(values, _TYPES, strict=True)) and set(section) == set(SETTING_NAMES):
            return StoredSettings(*values)  # type: ignore[return-value]
    from cairn.config import config_from_dict

    return config_from_dict(config).recall


def hook_settings(config: dict[str, object]) -> tuple[int, int]:
    """(max_context_chars, session_ttl_days) of the index's stored config, read without `cairn.config`
    (dataclasses); an index from another version with the section incomplete goes through the validating path."""
    section = config.get("hook")
    if isinstance(section, dict):
        chars, ttl = section.get("max_context_chars"), section.get("session_ttl_days")
        if type(chars) is int and type(ttl) is int:
            return chars, ttl
    from cairn.config import config_from_dict

    hook = config_from_dict(config).hook
    return hook.max_context_chars, hook.session_ttl_days
