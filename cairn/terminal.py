"""Text bound for a terminal: control characters and escape sequences from card files are made harmless."""

from __future__ import annotations

import re

# CSI/OSC/other ESC sequences and every C0/C1 control character except tab and newline.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]?")
# Lone surrogates (undecodable bytes in file names) cannot be written to a UTF-8 terminal at all.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def clean(text: str) -> str:
    """Remove escape sequences and show other control characters as `?`; JSON output never goes through this."""
    return _CONTROLS.sub("?", _ESCAPES.sub("", text))


def clean_line(text: str) -> str:
    """`clean` for a line that must stay one line (a finding, a file name): newlines and tabs become `?` too."""
    return clean(text).replace("\n", "?").replace("\t", " ")
