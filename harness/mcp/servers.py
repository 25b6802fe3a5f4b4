"""The MCP servers an agent may use: how to reach each, and the limits its tools run under.

These are plain values (no SDK import): `create_agent(mcp_servers=[...])` and an agent spec
name them; `harness.mcp.connection` opens them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from harness.errors import MCPServerError

# What one tool result may weigh, as sent: past it the call is an error for the model, so a
# 100 MB answer never reaches the window (offloading takes over well below it).
DEFAULT_MAX_RESULT_BYTES = 8 * 1024 * 1024
DEFAULT_START_TIMEOUT_S = 30.0
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,40}$")


@dataclass(frozen=True)
class _Server:
    name: str
    # Prepended to each tool's name: two servers may both have a `search`.
    tool_prefix: str = ""
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
    # Starting the server (or reaching it) and listing its tools.
    start_timeout_s: float = DEFAULT_START_TIMEOUT_S

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise MCPServerError(f"MCP server name {self.name!r} must match {_NAME.pattern}")
        if self.max_result_bytes < 1 or not self.start_timeout_s > 0:
            raise MCPServerError(
                f"MCP server {self.name!r}: max_result_bytes and start_timeout_s must be "
                f"positive, got {self.max_result_bytes!r} and {self.start_timeout_s!r}"
            )


@dataclass(frozen=True)
class StdioServer(_Server):
    """A server ctxlab starts as a subprocess and speaks to over its stdin and stdout. It sees
    only `env` and a few basics (PATH, HOME, USER, ...), not the harness's secrets."""

    command: str = ""
    args: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.command:
            raise MCPServerError(f"MCP server {self.name!r}: give the command that starts it")
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "env", dict(self.env))


@dataclass(frozen=True)
class HttpServer(_Server):
    """A running server reached over streamable HTTP at `url` (e.g. http://127.0.0.1:8000/mcp)."""

    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not re.match(r"^https?://[^/\s]+", self.url):
            raise MCPServerError(
                f"MCP server {self.name!r}: url must be an http:// or https:// URL, got "
                f"{self.url!r}"
            )
        object.__setattr__(self, "headers", dict(self.headers))


MCPServer = StdioServer | HttpServer
