"""`cairn serve`: the vault as an MCP server over stdio (stdout is the protocol; logs go to stderr)."""

from __future__ import annotations

import logging
import sys

import click

from cairn.cli.common import errors_to_exit, open_vault, vault_option


@click.command()
@vault_option
@click.option("--verbose", is_flag=True, help="Log each request on stderr.")
@errors_to_exit
def serve(vault_path: str | None, verbose: bool) -> None:
    """Serve the vault to MCP clients over stdio: tools recall, show, explain and add_draft.

    Needs the optional MCP SDK, the mcp extra (from a clone of Cairn: pipx install --force '.[mcp]'; without it,
    `cairn serve` prints the pip command for this install). add_draft commits a `status: draft` card on a new
    branch and never touches the checked-out branch or the working tree.

    \b
    Example:
      cairn serve --vault /path/to/team-lessons

    \b
    As an MCP client's server entry:
      {"command": "cairn", "args": ["serve", "--vault", "/path/to/team-lessons"]}
    """
    from cairn import mcp_server

    mcp_server.server_class()  # fail with the install hint before anything else
    vault = open_vault(vault_path)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO if verbose else logging.WARNING, format="%(message)s")
    mcp_server.serve(vault)
