"""What the MCP bridge costs per call: the SDK's own client awaited in one loop, against a call
through a harness `Connection` (handed to the sessions loop thread and back) and through the
whole tool (schema check, time limit, result as text), all on one stdio test server.

Run with `uv run pytest tests/benchmarks/test_mcp_bench.py --benchmark-only`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from harness.mcp import StdioServer, open_servers
from harness.messages import ToolCall
from harness.tools import ToolContext

ROUNDS = 200


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def time_rounds(benchmark: Any, loop: Any, one_call: Callable[[], Awaitable[object]]) -> None:
    """Time `ROUNDS` awaits of `one_call` in `loop`, three times."""

    async def calls() -> None:
        for _ in range(ROUNDS):
            await one_call()

    benchmark.pedantic(lambda: loop.run_until_complete(calls()), rounds=3, iterations=1)


def test_sdk_client_call(benchmark: Any, mcp_stdio: StdioServer, loop: Any) -> None:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=mcp_stdio.command, args=list(mcp_stdio.args))
    opened: asyncio.Future[Any] = loop.create_future()
    stop = asyncio.Event()

    async def hold() -> None:  # the client stays open in a task of its own, as ours does
        async with Client(params, cache=None) as client:
            opened.set_result(client)
            await stop.wait()

    holder = loop.create_task(hold())
    client = loop.run_until_complete(opened)

    try:
        time_rounds(benchmark, loop, lambda: client.call_tool("add", {"a": 1, "b": 2}))
    finally:
        stop.set()
        loop.run_until_complete(holder)


def test_connection_call(benchmark: Any, mcp_stdio: StdioServer, loop: Any) -> None:
    (connection,), _tools = open_servers([mcp_stdio])

    try:
        time_rounds(benchmark, loop, lambda: connection.call("add", {"a": 1, "b": 2}))
    finally:
        connection.close()


def test_tool_call(benchmark: Any, mcp_stdio: StdioServer, loop: Any) -> None:
    (connection,), tools = open_servers([mcp_stdio])
    add = next(t for t in tools if t.name == "add")
    ctx = ToolContext(state=None, call=ToolCall("c", "add", {}))  # type: ignore[arg-type]

    async def one_call() -> None:
        assert await add.run({"a": 1, "b": 2}, ctx) == "3"

    try:
        time_rounds(benchmark, loop, one_call)
    finally:
        connection.close()
