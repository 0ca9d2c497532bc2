"""`cairn serve` driven by the real MCP client SDK over stdio (needs the `mcp` extra: import this module only in
tests that need it, after `pytest.importorskip("mcp")` where the SDK may be missing)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from helpers.vaults import cairn_executable


def drive_serve(vault: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[Any, list[str], list[Any]]:
    """Start the installed `cairn serve` on `vault`, make each tool call in one session; returns the server's
    initialize result, the names of the tools it lists, and each call's result."""
    return anyio.run(_session_calls, vault, calls)


def is_error(result: Any) -> bool:
    """Whether a tool call's result is an error (the SDK spells the field isError or is_error by version)."""
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


async def _session_calls(vault: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[Any, list[str], list[Any]]:
    params = StdioServerParameters(
        command=cairn_executable(), args=["serve", "--vault", str(vault)], env=dict(os.environ), cwd=str(vault)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        listed = await session.list_tools()
        results = [await session.call_tool(name, args) for name, args in calls]
    return init, [t.name for t in listed.tools], results
