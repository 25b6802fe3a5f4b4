"""Connections to MCP servers, each held open on one event loop of their own.

The SDK's sessions live in anyio task groups bound to the loop that opened them, while the
harness calls tools from whatever loop runs the agent: a new one per `run_sync`, Prefect's,
a test's. So every session lives on one daemon thread's loop (`_sessions_loop`), and a call
from any loop is handed over to it and awaited there (`Connection.call`). Cancelling the
awaiting call (the tool's time limit, the run ending) cancels the request on the sessions
loop. A connection whose call failed other than by the tool's own error (the server died,
hung, answered nonsense) is reopened before its next call: a stdio server is started again.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import threading
import weakref
from collections.abc import AsyncIterator, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from harness.errors import MCPServerError
from harness.mcp.servers import HttpServer, MCPServer, StdioServer

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import CallToolResult
    from mcp_types import Tool as MCPToolSpec

T = TypeVar("T")
_MAX_PAGES = 100  # of a tool listing: a server that pages forever cannot hang the start
_CLOSE_TIMEOUT_S = 10.0


class _SessionsLoop:
    """An event loop on a daemon thread, where every MCP session of the process lives."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="mcp-sessions", daemon=True).start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)


_LOOP: _SessionsLoop | None = None
_LOOP_LOCK = threading.Lock()
_OPEN: weakref.WeakSet[Connection] = weakref.WeakSet()


def _sessions_loop() -> _SessionsLoop:
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None:
            _LOOP = _SessionsLoop()
            atexit.register(_close_all)
        return _LOOP


def _close_all() -> None:
    """At exit, stop every server still open (a stdio server's process included)."""
    for connection in list(_OPEN):
        connection.close()


class Connection:
    """One MCP server, opened on first use and reopened after a failure."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self.reopened = 0
        self._client: Client | None = None
        self._transport: Any = None
        self._stop: asyncio.Event | None = None
        self._holder: asyncio.Task[None] | None = None
        self._retiring: set[asyncio.Task[None]] = set()  # sessions still shutting down
        self._stale = False
        _OPEN.add(self)

    def __repr__(self) -> str:
        return f"Connection({self.server.name!r})"

    # -- from the caller's side ----------------------------------------------------------

    def list_tools(self) -> list[MCPToolSpec]:
        """The server's tools, starting it if need be; `MCPServerError` if it does not start
        or list them within its `start_timeout_s`."""
        future = _sessions_loop().submit(self._list_tools())
        try:
            return future.result(timeout=self.server.start_timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise MCPServerError(
                f"MCP server {self.server.name!r} did not list its tools within "
                f"{self.server.start_timeout_s:g} s{self._said()}"
            ) from None
        except Exception as exc:
            raise MCPServerError(
                f"MCP server {self.server.name!r} could not be started or listed: "
                f"{_describe(exc)}{self._said()}"
            ) from exc

    async def call(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call tool `name` from any event loop; cancelling this cancels the request."""
        try:
            return await asyncio.wrap_future(_sessions_loop().submit(self._call(name, arguments)))
        except asyncio.CancelledError:
            self._stale = True  # now, not when the sessions loop sees the cancellation
            raise

    def close(self) -> None:
        """Close the session (and stop a stdio server); safe to call twice."""
        if (self._holder is None and not self._retiring) or _LOOP is None:
            return
        future = _LOOP.submit(self._close())
        try:
            future.result(timeout=_CLOSE_TIMEOUT_S)
        except (concurrent.futures.TimeoutError, RuntimeError):
            future.cancel()

    # -- on the sessions loop --------------------------------------------------------------

    async def _list_tools(self) -> list[MCPToolSpec]:
        client = await self._ready()
        tools: list[MCPToolSpec] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def _call(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        client = await self._ready()
        try:
            return await client.call_tool(name, arguments)
        except BaseException:
            self._stale = True  # died, hung or garbled: start afresh next time
            raise

    async def _ready(self) -> Client:
        dead = self._transport is not None and not getattr(self._transport, "alive", True)
        if self._client is not None and not self._stale and not dead:
            return self._client
        if self._holder is not None:
            self._retire()
            self.reopened += 1
        loop = asyncio.get_running_loop()
        opened: asyncio.Future[Client] = loop.create_future()
        self._stop = asyncio.Event()
        self._holder = loop.create_task(self._hold(opened, self._stop))
        self._client = await opened
        self._stale = False
        return self._client

    async def _hold(self, opened: asyncio.Future[Client], stop: asyncio.Event) -> None:
        """Enter the client and keep it open until `stop`, in one task, as anyio needs."""
        from mcp import Client

        try:
            async with Client(self._open_transport(), cache=None) as client:
                opened.set_result(client)
                await stop.wait()
        except BaseException as exc:
            if not opened.done():
                opened.set_exception(exc)
            elif not isinstance(exc, Exception):
                raise

    def _open_transport(self) -> AbstractAsyncContextManager[Any]:
        server = self.server
        if isinstance(server, StdioServer):
            from harness.mcp.stdio import StdioTransport

            self._transport = StdioTransport(server, server.max_result_bytes)
            return self._transport.open()
        assert isinstance(server, HttpServer)
        self._transport = None
        return _http_streams(server)

    def _retire(self) -> None:
        """Let the current session end in the background: a hung stdio server takes seconds
        to stop, which the call that reopens it must not wait for."""
        holder, stop = self._holder, self._stop
        self._client, self._holder, self._stop = None, None, None
        if holder is not None and stop is not None:
            stop.set()
            self._retiring.add(holder)
            holder.add_done_callback(self._retiring.discard)

    async def _close(self) -> None:
        self._retire()
        ending = list(self._retiring)
        if not ending:
            return
        _done, late = await asyncio.wait(ending, timeout=_CLOSE_TIMEOUT_S)
        for holder in late:
            holder.cancel()

    def _said(self) -> str:
        tail = self._transport.stderr_tail() if self._transport is not None else ""
        return f"; its stderr ends: {tail[-500:]}" if tail else ""


@asynccontextmanager
async def _http_streams(server: HttpServer) -> AsyncIterator[Any]:
    """Streamable HTTP with the server's headers. An SSE event over the size limit fails its
    request at once (the SDK's own cap); a plain JSON answer is read whole, then refused by
    its size (`harness.mcp.tools`). No read timeout: each call has its own time limit."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    timeout = httpx2.Timeout(30.0, read=None)
    async with (
        httpx2.AsyncClient(headers=dict(server.headers), timeout=timeout) as http,
        streamable_http_client(
            server.url, http_client=http, max_sse_event_size=server.max_result_bytes
        ) as streams,
    ):
        yield streams


def _describe(exc: BaseException) -> str:
    """An exception group's first leaf, which says what went wrong."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"
