"""`cairn demo`: the main job, start to end, on a temporary copy of the bundled example vault."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from cairn import authoring, indexer
from cairn.cli.common import echo, errors_to_exit
from cairn.vault import find_vault


@click.command()
@click.option("--keep", type=click.Path(path_type=Path), default=None, help="Make the demo vault here and keep it.")
@errors_to_exit
def demo(keep: Path | None) -> None:
    """Make a vault from the template, index it, and show what Cairn does with it.

    \b
    Example:
      cairn demo
    """
    with tempfile.TemporaryDirectory(prefix="cairn-demo-") as scratch:
        root = keep or Path(scratch) / "vault"
        commit = authoring.init_vault(root)
        vault = find_vault(root)
        echo(f"1. Made a vault from the template at {root} (commit {commit[:8]}).")
        report = indexer.build_index(vault)
        echo(f"2. Indexed {report.n_cards} committed cards in {report.seconds:.2f}s.")
