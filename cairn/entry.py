"""The `cairn` executable: `cairn hook` runs on the standard library alone; everything else goes through click."""

from __future__ import annotations

import sys


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "hook":
        from cairn.hook import main as hook_main

        sys.exit(hook_main(sys.argv[2:]))
    from cairn.cli import main as cli_main

    cli_main()
