"""The optional extras (`mcp`, `semantic`): the command that installs one beside the Cairn that is running."""

from __future__ import annotations

import re
import shlex
import sys
from importlib import metadata

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
