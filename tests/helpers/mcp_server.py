"""A real MCP server for the tests, on the official SDK: `python mcp_server.py stdio`, or
`python mcp_server.py http PORT` (streamable HTTP on 127.0.0.1), or `... broken` (says why
on stderr and exits 2, as a misconfigured server does).

Its tools behave well (`add`, `market_news`, whose result is large enough to be offloaded)
and badly: `fail` reports an error, `die` kills the server, `hang` never answers, `huge`
answers with N MB, `garble` writes a line that is not JSON-RPC where the answer goes.
"""

from __future__ import annotations

import os
import sys

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("ctxlab-test")

# The one line a reader must find in the offloaded news: the rest is filler.
KEY_FACT = "Acme raised list prices by 7% on 2026-03-02."


@server.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@server.tool()
def market_news(company: str) -> str:
    """This week's market news about a company: long, as real search results are."""
    items = [f"- {company} item {i}: analysts repeat last quarter's view." for i in range(800)]
    items.insert(613, f"- {KEY_FACT}")
    return "\n".join(items)


@server.tool()
def fail(reason: str) -> str:
    """Fail with the reason given."""
    raise ToolError(reason)


@server.tool()
def die() -> str:
    """Kill the server mid-call."""
    print("dying on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answer."""
    await anyio.sleep(3600)
    return "too late"


@server.tool(structured_output=False)  # the text once, not twice
def huge(megabytes: int) -> str:
    """Answer with `megabytes` MB of text."""
    return "x" * (megabytes * 1024 * 1024)


@server.tool()
def garble() -> str:
    """Write a line that is not JSON-RPC where the answer should go, then answer."""
    from mcp.server import stdio as wire  # the SDK moves the wire off fd 1: find it

    os.write(wire._claims[1].private_fd, b'{"jsonrpc": "2.0", "id": oops this is not JSON\n')
    return "answered after the garbage"


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "broken":
        print("ctxlab-test: no API token configured", file=sys.stderr, flush=True)
        sys.exit(2)
    if mode == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
