"""`cairn serve` driven by the real MCP client SDK over stdio (needs the `mcp` extra: import this module only in
tests that need it, after `pytest.importorskip("mcp")` where the SDK may be missing)."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from helpers.vaults import cairn_executable

Step = tuple[str, dict[str, Any]] | Callable[[], object]

STARTUP_SECONDS = 120
"""How long `cairn serve` may take to answer a request, initialize first: a hang guard, not a budget (two shared
cores under a parallel run took over 20 s to start one). Without one, a server that never answered hung the test."""


def drive_serve(
    vault: Path, calls: Sequence[Step], name: str | None = None, timeout: float = STARTUP_SECONDS
) -> tuple[Any, list[str], list[Any]]:
    """Start the installed `cairn serve` on `vault` (`--vault name` when given, a configured vault's name), make each
    tool call in one session; returns the server's initialize result, the names of the tools it lists, and each
    call's result. A function among `calls` is run there, between the calls before it and those after it, while the
    server runs (a change made under it). A request not answered within `timeout` seconds raises TimeoutError (in an
    exception group, from the SDK's task group), and the server is killed as the SDK's client ends the session."""
    return anyio.run(_session_calls, vault, calls, name, timeout)


def drive_serve_at_once(vault: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Start the installed `cairn serve` on `vault` and make every tool call at once (each sent before any answer
    is read, as a client with parallel tool calls does); returns each call's result, in the order of `calls`."""
    return anyio.run(_calls_at_once, vault, calls)


async def _calls_at_once(vault: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    params = StdioServerParameters(
        command=cairn_executable(), args=["serve", "--vault", str(vault)], env=dict(os.environ), cwd=str(vault)
    )
    results: list[Any] = [None] * len(calls)

    async def call(session: ClientSession, n: int, name: str, args: dict[str, Any]) -> None:
        results[n] = await session.call_tool(name, args)

    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        with anyio.fail_after(STARTUP_SECONDS):
            await session.initialize()
        with anyio.fail_after(STARTUP_SECONDS):
            async with anyio.create_task_group() as group:
                for n, (name, args) in enumerate(calls):
                    group.start_soon(call, session, n, name, args)
    return results


def is_error(result: Any) -> bool:
    """Whether a tool call's result is an error (the SDK spells the field isError or is_error by version)."""
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


def exchange_lines(
    vault: Path,
    lines: list[bytes],
    timeout: float = 120,
    options: tuple[str, ...] = (),
    errlog: Path | None = None,
    peaks: list[int] | None = None,
) -> list[Any]:
    """Start the installed `cairn serve` on `vault` (with `options`, its stderr into the file `errlog`), initialise,
    then write each of `lines` (one raw JSON-RPC request of id 1, 2, 3... each, for what the client SDK will not
    send) and wait for its answer; returns the answers (None for a request not answered within `timeout` seconds).
    `peaks` (Linux) gets the server's highest resident memory in KiB once initialised and after the last answer.
    A server that has not ended `timeout` seconds after its stdin closed is killed, and the call fails."""
    opening = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    err = subprocess.DEVNULL if errlog is None else os.open(errlog, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        server = subprocess.Popen(
            [cairn_executable(), "serve", "--vault", str(vault), *options],
            cwd=vault,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
        )
    finally:
        if errlog is not None:
            os.close(err)  # the server has its own
    assert server.stdin is not None and server.stdout is not None
    try:
        reader = _Answers(server.stdout.fileno())
        server.stdin.write(json.dumps(opening).encode() + b"\n")
        server.stdin.flush()
        assert reader.answer(0, max(timeout, STARTUP_SECONDS)) is not None, "cairn serve never answered initialize"
        if peaks is not None:
            peaks.append(_peak_kib(server.pid))
        server.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        answers = []
        for n, line in enumerate(lines, 1):
            server.stdin.write(line)
            server.stdin.flush()
            answers.append(reader.answer(n, timeout))
        if peaks is not None:
            peaks.append(_peak_kib(server.pid))
        return answers
    finally:
        server.stdin.close()
        try:
            server.wait(timeout)
        finally:
            # a server stuck past its stdin's end is killed here: left running, it outlived the test
            if server.poll() is None:
                server.kill()
                server.wait()
            server.stdout.close()


def _peak_kib(pid: int) -> int:
    """A process's highest resident memory so far, in KiB (Linux's `VmHWM`)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^VmHWM:\s*(\d+) kB", status, re.M).group(1))  # type: ignore[union-attr]


class _Answers:
    """The server's answers, read from its stdout as they come."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pending = b""

    def answer(self, wanted: int, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self.pending:
                line, self.pending = self.pending.split(b"\n", 1)
                message = json.loads(line)
                if message.get("id") == wanted:
                    return message
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                return None
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return None
            self.pending += chunk


async def _session_calls(
    vault: Path, calls: Sequence[Step], name: str | None, timeout: float
) -> tuple[Any, list[str], list[Any]]:
    params = StdioServerParameters(
        command=cairn_executable(), args=["serve", "--vault", name or str(vault)], env=dict(os.environ), cwd=str(vault)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        with anyio.fail_after(max(timeout, STARTUP_SECONDS)):
            init = await session.initialize()
        with anyio.fail_after(timeout):
            listed = await session.list_tools()
        results = []
        for step in calls:
            if callable(step):
                step()
            else:
                with anyio.fail_after(timeout):
                    results.append(await session.call_tool(*step))
    return init, [t.name for t in listed.tools], results
