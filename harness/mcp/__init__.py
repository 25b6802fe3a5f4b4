"""MCP servers as a source of tools: `create_agent(mcp_servers=[StdioServer(...), ...])`.

Each server's tools are listed when the agent is built (schemas as the server gives them) and
called through the official `mcp` SDK like any other tool: the same time limit, offloading of
large results, errors as text for the model. A server that dies, hangs, answers with malformed
JSON-RPC or sends more than `max_result_bytes` makes that call an error for the model and an
`mcp` event in the store, and is started again for the next call. `Agent.close()` stops them
(so does the end of the process).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.errors import MCPServerError
from harness.mcp.servers import HttpServer, MCPServer, StdioServer

if TYPE_CHECKING:
    from harness.mcp.connection import Connection
    from harness.tools import Tool

__all__ = ["HttpServer", "MCPServer", "MCPServerError", "StdioServer", "open_servers"]


def open_servers(servers: Sequence[MCPServer]) -> tuple[list[Connection], list[Tool]]:
    """Start (or reach) each server and list its tools; on a failure the servers already
    started are stopped and `MCPServerError` names the one that failed."""
    from harness.mcp.connection import Connection
    from harness.mcp.tools import mcp_tools

    names = [s.name for s in servers]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise MCPServerError(f"two MCP servers are named {twice[0]!r}")
    connections: list[Connection] = []
    tools: list[Tool] = []
    try:
        for server in servers:
            connection = Connection(server)
            connections.append(connection)
            tools += mcp_tools(connection, connection.list_tools())
    except BaseException:
        for connection in connections:
            connection.close()
        raise
    return connections, tools
