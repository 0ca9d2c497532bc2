"""Every command of click's tree, the root and each group's subcommands included, has --help with an example of
itself: the walk finds commands added later, which a hand-kept list would miss."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from cairn.cli import cli
from helpers.cli import invoke_cli
from helpers.vaults import run_cairn


def _paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    ctx = click.Context(group, info_name="cairn")
    found: list[tuple[str, ...]] = [prefix]
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            found += _paths(command, (*prefix, name))
        else:
            found.append((*prefix, name))
    return found


COMMAND_PATHS = _paths(cli)


def test_the_walk_reaches_subcommands() -> None:
    assert ("vault", "add") in COMMAND_PATHS and ("bench", "locomo") in COMMAND_PATHS
    assert () in COMMAND_PATHS


@pytest.mark.parametrize("path", COMMAND_PATHS, ids=lambda p: " ".join(("cairn", *p)))
def test_every_command_in_the_tree_has_help_with_an_example_of_itself(path: tuple[str, ...]) -> None:
    done = invoke_cli([*path, "--help"])
    assert done.returncode == 0, done.stderr
    assert "Example" in done.stdout, f"`cairn {' '.join(path)} --help` has no Example section"
    example = done.stdout.split("Example", 1)[1]
    assert re.search(re.escape(" ".join(("cairn", *path))) + r"(\s|$)", example), example


@pytest.mark.parametrize("path", COMMAND_PATHS, ids=lambda p: " ".join(("cairn", *p)))
def test_the_help_text_before_its_examples_wraps_to_the_terminal(path: tuple[str, ...]) -> None:
    """Bug fixed: `cairn show --help` printed its NAME:ID sentence as one 104-column line (a stray `\\b` kept click
    from wrapping it); the prose wraps at 80 columns like every other command's."""
    done = invoke_cli([*path, "--help"])
    prose = done.stdout.split("Example", 1)[0]
    assert [line for line in prose.splitlines() if len(line) > 80] == []


def test_the_installed_cairn_help_shows_examples(tmp_path: object) -> None:
    """`cairn --help`, the first thing a new user runs, had only a "Start here" list and no Example section."""
    done = run_cairn("--help", cwd=tmp_path)  # type: ignore[arg-type]
    assert done.returncode == 0
    assert "Examples" in done.stdout and "cairn demo" in done.stdout.split("Examples", 1)[1]


@pytest.mark.parametrize(
    ("typed", "meant"), [("new", "add"), ("mcp", "serve"), ("search", "recall"), ("recal", "recall"), ("Add", "add")]
)
def test_a_command_by_another_name_says_which_one_is_meant(tmp_path: Path, typed: str, meant: str) -> None:
    """Bug fixed: `cairn new` (for `cairn add`) and `cairn mcp` (for `cairn serve`) said only "No such command",
    with nothing to say which command does it; a near miss (`recal`) named none either."""
    done = run_cairn(typed, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.endswith(f"Error: No such command {typed!r}. Did you mean {meant!r}?\n")
    unknown = run_cairn("frobnicate", cwd=tmp_path)
    assert unknown.returncode == 2 and unknown.stderr.endswith("Error: No such command 'frobnicate'.\n")
    assert run_cairn(meant, "--help", cwd=tmp_path).returncode == 0
