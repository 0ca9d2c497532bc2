"""The settings an index stores, read the hook's way (without `cairn.config`): `cairn.hot` holds them (every hot
module needs them, and the hook imports one module for all of them); this module keeps their names for the code
that imports them from here."""

from cairn.hot import SETTING_NAMES, StoredSettings, hook_settings, settings_of, stored_settings

__all__ = ["SETTING_NAMES", "StoredSettings", "hook_settings", "settings_of", "stored_settings"]
