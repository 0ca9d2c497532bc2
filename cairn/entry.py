"""The `cairn` executable: `cairn hook` runs on the standard library alone; everything else goes through click."""

import sys


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "hook":
        _hook(sys.argv[2:])
    try:
        from cairn.cli import main as cli_main
    except KeyboardInterrupt:  # Ctrl-C while click and the commands' group load, before the group's own handling:
        sys.stderr.write("\nInterrupted.\n")  # as the group says it, not a traceback of the imports
        sys.exit(130)
    cli_main()


def _hook(argv: list[str]) -> None:
    """Run the hook and end the process: it runs on every prompt, so it skips what a short-lived process does not
    need. No garbage collection passes (it frees nearly nothing before it exits), and no interpreter teardown
    (freeing every module costs ~3 ms, more than ranking a 1,000-card vault): the hook closes its files and writes
    with `os.write`, so once stdout and stderr are flushed nothing is left to do."""
    import gc
    import os

    gc.disable()
    try:
        from cairn.hot.hook import main as hook_main

        status = hook_main(argv)
    except KeyboardInterrupt:  # Ctrl-C (or an agent's SIGINT): one line and 130, as every other command says it
        sys.stderr.write("\nInterrupted.\n")
        status = 130
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # a closed pipe (the agent went away), or no stream at all
            pass  # (`>&-`: Python makes it None): nothing to report to
    os._exit(status)
