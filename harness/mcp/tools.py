"""MCP tools as harness tools: the server's schema shown to the model, its arguments checked
against that schema, and every call run like any other tool (time limit, offloading, errors
as text), with what went wrong on the server's side recorded as an `mcp` event.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types as types
import pydantic

from harness.mcp.connection import Connection
from harness.tools import Tool, ToolArgumentError, ToolContext, ToolError

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


class MCPCallError(ToolError):
    """An MCP call that brought no usable result: the server failed, hung or sent too much."""


class _NoFields(pydantic.BaseModel):
    """Unused: an MCP tool's arguments are checked against its JSON schema instead."""


@dataclass(frozen=True)
class MCPTool(Tool):
    """A tool of an MCP server. `validate` checks arguments against the server's schema."""

    validator: Any = None

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        if self.validator is not None:
            problems = sorted(self.validator.iter_errors(arguments), key=lambda e: list(e.path))
            if problems:
                said = "; ".join(
                    f"{'.'.join(map(str, e.path)) or 'arguments'}: {e.message}" for e in problems
                )
                raise ToolArgumentError(
                    f"invalid arguments for tool '{self.name}': {said}. Expected parameters: "
                    f"{json.dumps(self.parameters.get('properties', {}))}"
                )
        return {"arguments": arguments}


def mcp_tools(connection: Connection, specs: Sequence[types.Tool]) -> list[Tool]:
    """The harness tools for the tools `connection`'s server listed."""
    return [_tool(connection, spec) for spec in specs]


def _tool(connection: Connection, spec: types.Tool) -> Tool:
    from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]
    from jsonschema.validators import validator_for  # type: ignore[import-untyped]

    server = connection.server
    name = _UNSAFE.sub("_", f"{server.tool_prefix}{spec.name}")[:64]
    schema = {"type": "object", **dict(spec.input_schema)}
    schema.setdefault("properties", {})
    try:
        checker = validator_for(schema)
        checker.check_schema(schema)
        validator = checker(schema)
    except SchemaError:
        validator = None  # a schema we cannot read: the server checks its own arguments

    async def call(arguments: dict[str, Any], ctx: ToolContext) -> str:
        return await _call(connection, spec.name, arguments, ctx)

    return MCPTool(
        name=name,
        description=spec.description or spec.title or spec.name,
        parameters=schema,
        fn=call,
        args_model=_NoFields,
        context_param="ctx",
        validator=validator,
    )


async def _call(
    connection: Connection, tool: str, arguments: dict[str, Any], ctx: ToolContext
) -> str:
    server = connection.server
    reopened = connection.reopened
    start = time.perf_counter()

    def event(action: str, **detail: Any) -> None:
        ctx.state.event(
            "mcp", "tool", action,
            detail={"server": server.name, "tool": tool, "call_id": ctx.call.id, **detail},
            ms=(time.perf_counter() - start) * 1000,
        )  # fmt: skip

    try:
        result = await connection.call(tool, arguments)
    except asyncio.CancelledError:
        # The tool's time limit (or the run ending): the server is left to be reopened.
        event("no_answer", waited_s=round(time.perf_counter() - start, 3))
        raise
    except Exception as exc:
        why = _reason(exc)
        event("call_failed", error=why)
        raise MCPCallError(
            f"MCP server '{server.name}' failed on '{tool}': {why}. It is restarted for the "
            "next call; try again, differently, or without this tool."
        ) from None
    finally:
        if connection.reopened != reopened:
            event("reopened", times=connection.reopened)
    text = result_text(result)
    size = len(text.encode())
    if size > server.max_result_bytes:
        event("result_too_large", bytes=size, limit=server.max_result_bytes)
        raise MCPCallError(
            f"MCP tool '{tool}' returned {size:,} bytes, over the {server.max_result_bytes:,}-"
            "byte limit; the result was dropped. Ask for less (a narrower query, a page)."
        )
    if result.is_error:
        raise ToolError(f"MCP tool '{tool}' reported an error: {text or '(no text)'}")
    return text


def result_text(result: types.CallToolResult) -> str:
    """What the model reads of a result: its text blocks, an embedded text resource, a note
    for each block it cannot read (images, audio, binary resources); the structured content
    when there is nothing else."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.EmbeddedResource) and hasattr(block.resource, "text"):
            parts.append(block.resource.text)
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource: {block.uri}]")
        else:
            parts.append(f"[{block.type} content not shown: only text reaches the model]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, default=str))
    return "\n".join(parts)


def _reason(exc: BaseException) -> str:
    """One line for the model and the event: the MCP error's message, or the failure's type."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    message = str(getattr(exc, "message", None) or exc)
    first = message.strip().splitlines()[0][:500] if message.strip() else ""
    return first or type(exc).__name__
