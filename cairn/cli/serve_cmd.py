"""`cairn serve`: the vault as an MCP server over stdio (stdout is the protocol; logs go to stderr)."""

from __future__ import annotations

import logging
import os
import shlex
import sys
from pathlib import Path

import click

from cairn.cli.common import errors_to_exit, resolve_vault, vault_option
from cairn.hot.vault import locate_served


@click.command()
@vault_option
@click.option("--verbose", is_flag=True, help="Log each request on stderr.")
@errors_to_exit
def serve(vault_path: str | None, verbose: bool) -> None:
    """Serve the vault to MCP clients over stdio: tools recall, show, explain and add_draft.

    Needs the optional MCP SDK, the mcp extra (from a clone of Cairn: pipx install --force '.[mcp]'; without it,
    `cairn serve` prints the pip command for this install). add_draft commits a `status: draft` card on a new
    branch and never touches the checked-out branch or the working tree. Without --vault (or $CAIRN_VAULT): the
    configured vault around the current folder, else the one configured vault; never an unregistered repository the
    agent happens to start in, whose cards no one on your side reviewed.

    \b
    Example:
      cairn serve --vault /path/to/team-lessons

    \b
    As an MCP client's server entry:
      {"command": "cairn", "args": ["serve", "--vault", "/path/to/team-lessons"]}
    """
    from cairn import mcp_server
    from cairn.userconfig import entry_for

    mcp_server.server_class()  # fail with the install hint before anything else
    vault, reason = resolve_vault(vault_path)
    if reason == "current folder":
        _require_configured(vault.root)
    locate_served(str(vault.root))  # a folder the prompt hook refuses (no cairn.toml) is served to no agent
    # chosen through the configuration (a name, the one configured vault, the configured vault here): served while
    # the configuration names it; a path given is served as the hook serves `--vault PATH`
    entry = None if reason in ("--vault", "CAIRN_VAULT") else entry_for(vault.root)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO if verbose else logging.WARNING, format="%(message)s")
    mcp_server.serve(vault, None if entry is None else entry.name)


def _require_configured(root: Path) -> None:
    """The vault around the current folder is served only when it is a configured one. An agent starts its MCP
    server in whatever project it works in: a server registered without `--vault` would serve a cloned repository's
    own cards (a `cairn.toml` and `cards/` it committed) to the agent as the team's lessons, which the prompt hook
    never does (it serves configured vaults alone, README "Trust is explicit"). A configuration that cannot be read
    is its own error (the file, the entry, the fix), not "not a configured vault" with a `cairn vault add` that fails
    on the same file."""
    from cairn.hot.errors import VaultNotFound
    from cairn.hot.userconfig import load_vaults

    entries = load_vaults()
    if any(os.path.realpath(entry.path) == os.path.realpath(root) for entry in entries):
        return
    raise VaultNotFound(
        f"the vault around the current folder ({root}) is not a configured vault, and `cairn serve` started without "
        f"--vault serves configured vaults only (an agent starts it in any project); name it: "
        f"cairn serve --vault {shlex.quote(str(root))}, or register it: cairn vault add {shlex.quote(str(root))}"
    )
