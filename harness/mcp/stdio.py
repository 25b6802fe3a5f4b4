"""The stdio transport: a server subprocess, newline-delimited JSON-RPC on its pipes, every
message capped in size and every request answered, whatever the server does.

Not the SDK's `stdio_client`: it joins a long line by string concatenation (quadratic: a
100 MB line takes minutes of CPU) and has no size limit. Here a line past the limit is
dropped as it streams in, and the request it answered fails at once; a line that is not
JSON-RPC fails its request (or, when its id cannot be read, every request in flight); a
server that exits fails every request in flight with its exit code and the end of its
stderr. So a call never waits on an answer that cannot come.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from harness.mcp.servers import StdioServer

if TYPE_CHECKING:
    from mcp.client._transport import TransportStreams

# What a server inherits of ours besides its own `env`.
_INHERITED = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR")
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
_STDERR_TAIL = 2_000
_EXIT_GRACE_S = 2.0


class StdioTransport:
    """One server process; `alive` says whether it still runs."""

    def __init__(self, server: StdioServer, max_message_bytes: int) -> None:
        self.server = server
        self.limit = max_message_bytes
        self.process: anyio.abc.Process | None = None
        self._pending: set[Any] = set()  # ids of our requests not yet answered
        self._stderr: deque[bytes] = deque(maxlen=64)

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None

    def stderr_tail(self) -> str:
        return b"".join(self._stderr)[-_STDERR_TAIL:].decode(errors="replace").strip()

    @asynccontextmanager
    async def open(self) -> AsyncIterator[TransportStreams]:
        env = {k: os.environ[k] for k in _INHERITED if k in os.environ} | dict(self.server.env)
        self.process = await anyio.open_process(
            [self.server.command, *self.server.args],
            env=env,
            cwd=self.server.cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](16)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._read, to_session)
            tg.start_soon(self._write, from_session, to_session)
            tg.start_soon(self._drain_stderr)
            try:
                yield read_stream, write_stream
            finally:
                with anyio.CancelScope(shield=True):
                    await self._stop()
                tg.cancel_scope.cancel()
        for stream in (read_stream, write_stream):
            await stream.aclose()

    # -- the pipes ---------------------------------------------------------------------

    async def _read(self, to_session: Any) -> None:
        assert self.process is not None and self.process.stdout is not None
        line = bytearray()
        dropping = False  # inside a line already over the limit
        try:
            async for chunk in self.process.stdout:
                start = 0
                while True:
                    end = chunk.find(b"\n", start)
                    if not dropping:
                        line += chunk[start : len(chunk) if end < 0 else end]
                        if len(line) > self.limit:
                            await self._fail(to_session, bytes(line[:4096]), self._too_large())
                            line.clear()
                            dropping = True
                    if end < 0:
                        break
                    if not dropping and line.strip():
                        await self._deliver(to_session, bytes(line))
                    line.clear()
                    dropping = False
                    start = end + 1
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            pass
        finally:
            with anyio.CancelScope(shield=True), suppress(Exception):
                await self._fail_all(to_session, await self._exit_message())
                await to_session.aclose()

    async def _deliver(self, to_session: Any, line: bytes) -> None:
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError as exc:
            detail = str(exc).splitlines()[0][:200]
            await self._fail(to_session, line[:4096], f"sent malformed JSON-RPC ({detail})")
            return
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self._pending.discard(message.id)
        await to_session.send(SessionMessage(message))

    async def _write(self, from_session: Any, to_session: Any) -> None:
        assert self.process is not None and self.process.stdin is not None
        try:
            async for item in from_session:
                message = item.message
                if isinstance(message, types.JSONRPCRequest):
                    self._pending.add(message.id)
                data = message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await self.process.stdin.send(data.encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            with suppress(Exception):
                await self._fail_all(to_session, "stopped reading its input")

    async def _drain_stderr(self) -> None:
        # Read always: a server blocked on a full stderr pipe would look hung.
        assert self.process is not None and self.process.stderr is not None
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            async for chunk in self.process.stderr:
                self._stderr.append(chunk)

    # -- answers that cannot come --------------------------------------------------------

    def _too_large(self) -> str:
        return f"sent a message over the {self.limit:,}-byte limit (dropped unread)"

    async def _fail(self, to_session: Any, head: bytes, why: str) -> None:
        """Fail the request `head` (the start of a bad line) answered, or, when its id cannot
        be read, every request in flight: none of them can trust the stream now."""
        found = _ID.search(head)
        if found is not None:
            key: Any = found.group(1)
            key = key.decode()[1:-1] if key.startswith(b'"') else int(key)
            if key in self._pending:
                await self._answer(to_session, key, why)
                return
        await self._fail_all(to_session, why)

    async def _fail_all(self, to_session: Any, why: str) -> None:
        for key in list(self._pending):
            await self._answer(to_session, key, why)

    async def _answer(self, to_session: Any, key: Any, why: str) -> None:
        self._pending.discard(key)
        error = types.ErrorData(code=types.INTERNAL_ERROR, message=f"the MCP server {why}")
        answer = SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=key, error=error))
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await to_session.send(answer)

    async def _exit_message(self) -> str:
        assert self.process is not None
        with anyio.move_on_after(0.5):
            await self.process.wait()
        code = self.process.returncode
        said = self.stderr_tail()
        return (
            f"closed its output{'' if code is None else f' and exited with code {code}'}"
            f"{f'; its stderr ends: {said[-500:]}' if said else ''}"
        )

    async def _stop(self) -> None:
        """Close its input, then terminate, then kill: each step waits a bounded time."""
        process = self.process
        assert process is not None and process.stdin is not None
        with suppress(Exception):
            await process.stdin.aclose()
        for escalate in (None, process.terminate, process.kill):
            if escalate is not None and process.returncode is None:
                with suppress(ProcessLookupError):
                    escalate()
            with anyio.move_on_after(_EXIT_GRACE_S):
                await process.wait()
            if process.returncode is not None:
                return
