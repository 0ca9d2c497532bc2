"""The optional extras (`mcp`, `semantic`): the command that installs one beside the Cairn that is running, and the
command that installs that Cairn again in place."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from importlib import metadata
from urllib.parse import unquote, urlparse

from cairn.hot import DISTRIBUTION

_EXTRA_MARKER = re.compile(r"""^extra\s*==\s*["']([A-Za-z0-9_.-]+)["']$""")


def install_command(extra: str, *, reinstall: bool = False) -> str:
    """`PYTHON -m pip install REQUIREMENTS`: the extra's requirements, as this install's metadata lists them, for the
    interpreter running Cairn.

    Not `pip install 'cairn-lessons[EXTRA]'`: Cairn is installed from a clone (`pipx install .`, `pip install .`), so
    a package index has no cairn-lessons to take the extra from, and the `pip` on PATH may serve another Python than
    the one running Cairn (pipx's venv). Without metadata (Cairn run from a source tree), the extra by name.
    """
    requirements = extra_requirements(extra)
    if not requirements:
        return f"pip install '{DISTRIBUTION}[{extra}]'"
    flags = "--force-reinstall " if reinstall else ""
    return f"{shlex.quote(sys.executable)} -m pip install {flags}" + " ".join(shlex.quote(r) for r in requirements)


def extra_requirements(extra: str) -> list[str]:
    """The requirements `extra` adds (`mcp>=1.25`), from the installed distribution's metadata; [] when not found."""
    try:
        lines = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return []
    found: list[str] = []
    for line in lines:
        requirement, _, marker = line.partition(";")
        match = _EXTRA_MARKER.match(marker.strip())
        if match and match.group(1) == extra:
            found.append(requirement.strip())
    return found


def reinstall_command() -> str:
    """`PYTHON -m pip install --force-reinstall --no-deps SOURCE`: Cairn installed again in place, for the interpreter
    running it, so pip writes its `cairn` script again, starting from that interpreter (after `mv venv venv2`, the
    script still names `venv/bin/python`). SOURCE is where pip installed it from (`direct_url.json`: a clone, `-e` for
    an editable install, or a wheel) while that is still there, else the distribution by name."""
    source = shlex.quote(DISTRIBUTION)
    try:
        recorded = json.loads(metadata.distribution(DISTRIBUTION).read_text("direct_url.json") or "{}")
    except (metadata.PackageNotFoundError, ValueError):
        recorded = {}
    url = recorded.get("url") if isinstance(recorded, dict) else None
    if isinstance(url, str) and url.startswith("file://"):
        path = unquote(urlparse(url).path)
        if os.path.exists(path):
            info = recorded.get("dir_info")
            editable = isinstance(info, dict) and info.get("editable") is True
            source = f"-e {shlex.quote(path)}" if editable else shlex.quote(path)
    return f"{shlex.quote(sys.executable)} -m pip install --force-reinstall --no-deps {source}"
