"""MCP servers as a source of tools: `create_agent(mcp_servers=[StdioServer(...), ...])`.

Each server's tools are listed when the agent is built (schemas as the server gives them) and
called through the official `mcp` SDK like any other tool: the same time limit, offloading of
large results, errors as text for the model. A server that dies, hangs, answers with malformed
JSON-RPC or sends more than `max_result_bytes` makes that call an error for the model and an
`mcp` event in the store, and is started again for the next call. `Agent.close()` stops them
(so does the end of the process).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from harness.errors import MCPServerError
from harness.mcp.servers import HttpServer, MCPServer, StdioServer

if TYPE_CHECKING:
    from harness.mcp.connection import Connection
    from harness.tools import Tool

__all__ = ["HttpServer", "MCPServer", "MCPServerError", "StdioServer", "open_servers"]


def open_servers(
    servers: Sequence[MCPServer], taken: Collection[str] = ()
) -> tuple[list[Connection], list[Tool]]:
    """Start (or reach) each server and list its tools; on a failure the servers already
    started are stopped and `MCPServerError` names the one that failed. A tool named as one
    in `taken` (the agent's own and built-in tools) or another server's is refused: a
    filesystem server's `read_file` must not hide the one offloaded results are read with."""
    from harness.mcp.connection import Connection
    from harness.mcp.tools import mcp_tools

    names = [s.name for s in servers]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise MCPServerError(f"two MCP servers are named {twice[0]!r}")
    connections: list[Connection] = []
    tools: list[Tool] = []
    owner = dict.fromkeys(taken, "the agent's own tools")
    try:
        for server in servers:
            connection = Connection(server)
            connections.append(connection)
            for tool in mcp_tools(connection, connection.list_tools()):
                if tool.name in owner:
                    raise MCPServerError(
                        f"MCP server {server.name!r} has a tool named {tool.name!r}, as "
                        f"{owner[tool.name]} have; give the server a tool_prefix (e.g. "
                        f"tool_prefix={server.name + '_'!r})"
                    )
                owner[tool.name] = f"MCP server {server.name!r}'s tools"
                tools.append(tool)
    except BaseException:
        for connection in connections:
            connection.close()
        raise
    return connections, tools
