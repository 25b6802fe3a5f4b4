"""Anthropic Messages: `system` (a string or text blocks) and `messages` of user/assistant
whose content is a string or blocks: `text`, `tool_use {id, name, input}`, `tool_result
{tool_use_id, content (string or blocks), is_error}` (each its own `tool` message),
`thinking`/`redacted_thinking` (skipped: not context the next call sees as text),
`compaction` blocks (the provider's summary, kept as a `Compaction`), and server and MCP
tools (`server_tool_use`/`mcp_tool_use` calls, `*_tool_result` blocks in the assistant's
own content, each its own `tool` message)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals.sources.formats.openai_chat import ground_truth
from evals.sources.formats.source import (
    content_text,
    conversations,
    numbered,
    tool_call,
    tool_defs,
    trace_id,
    usage_of,
)
from evals.sources.trace import Compaction, Skipped, Trace, TraceMessage, TraceToolCall, Where

NAME = "anthropic"
SKIPPED_BLOCKS = ("thinking", "redacted_thinking")
CALL_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")  # client, server and MCP tools


def is_message(value: Any) -> bool:
    return isinstance(value, dict) and value.get("role") in ("user", "assistant", "system")


def read(path: Path) -> Iterator[Trace]:
    skipped: list[Skipped] = []
    for conv, number, several in numbered(conversations(path, skipped, is_message)):
        record = conv.record
        trace = Trace(trace_id(path, record, number, several), NAME, str(path))
        trace.skipped.extend(skipped)
        skipped.clear()
        trace.system = content_text(record.get("system"))
        trace.tools = tool_defs(record.get("tools"))
        trace.model = record.get("model") if isinstance(record.get("model"), str) else None
        trace.metadata = {k: v for k, v in record.items() if k not in ("system", "tools")}
        trace.ground_truth = ground_truth(record)
        for raw, where in zip(conv.items, conv.wheres, strict=True):
            role = raw.get("role") if isinstance(raw, dict) else None
            if role == "system":  # some logs keep it as a first message
                trace.system = "\n\n".join(filter(None, (trace.system, content_text(raw))))
                continue
            if role not in ("user", "assistant"):
                trace.skipped.append(Skipped(where, f"unknown role {role!r}"))
                continue
            add_content(trace, role, raw.get("content"), where, usage_of(raw.get("usage")))
        yield trace
    if skipped:
        yield Trace(path.stem, NAME, str(path), skipped=skipped)


def add_content(
    trace: Trace,
    role: str,
    content: Any,
    where: Where,
    usage: Any = None,
    model: str | None = None,
) -> None:
    """One Anthropic message's content as `trace` messages: an assistant's text and calls
    in one message; a user's tool results each a `tool` message, then its text. A server
    tool's result (web search, code execution, MCP) sits in the assistant's own content
    after its call: the assistant message ends there, the result follows as a `tool`
    message, and the text after it starts the next assistant message."""
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        trace.skipped.append(
            Skipped(where, f"content that is neither text nor blocks: {content!r:.40}")
        )
        return
    texts: list[str] = []
    calls: list[TraceToolCall] = []
    made = False  # an assistant message of this content is in `trace` (it carries the usage)

    def flush() -> None:
        nonlocal texts, calls, made
        text = "\n".join(t for t in texts if t)
        if text or calls or (usage and not made):
            trace.messages.append(
                TraceMessage("assistant", text, calls, usage=None if made else usage,
                        model=model, where=where)
            )  # fmt: skip
            made = True
        texts, calls = [], []

    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind in SKIPPED_BLOCKS:
            continue
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind in CALL_BLOCKS and role == "assistant":
            calls.append(tool_call(block.get("id"), block.get("name"), block.get("input")))
        elif kind == "tool_result" and role == "user":
            trace.messages.append(
                TraceMessage(
                    "tool",
                    content_text(block.get("content")),
                    tool_call_id=str(block.get("tool_use_id")),
                    is_error=bool(block.get("is_error")),
                    where=where,
                )
            )
        elif isinstance(kind, str) and kind.endswith("_tool_result") and role == "assistant":
            flush()
            text, failed = _server_result(block.get("content"))
            trace.messages.append(
                TraceMessage("tool", text, tool_call_id=str(block.get("tool_use_id")),
                        is_error=failed or bool(block.get("is_error")), where=where)
            )  # fmt: skip
        elif kind == "compaction":
            trace.compactions.append(
                Compaction(len(trace.messages), content_text(block.get("content")), where)
            )
        elif kind in ("image", "document"):
            texts.append(f"[{kind}]")
        else:
            trace.skipped.append(Skipped(where, f"a {kind!r} block in a {role} message"))
    if role == "assistant":
        flush()
        return
    text = "\n".join(t for t in texts if t)
    if role == "user" and text:
        trace.messages.append(TraceMessage("user", text, where=where))


def _server_result(content: Any) -> tuple[str, bool]:
    """A server tool result's text, and whether it is an error: search results by title
    and address, output blocks by their text and stdout, an error by its code."""
    if isinstance(content, dict):
        kind = str(content.get("type", ""))
        if kind.endswith("_error"):
            return str(content.get("error_code") or kind), True
        content = [content]
    if not isinstance(content, list):
        return content_text(content), False
    lines = []
    for item in content:
        if not isinstance(item, dict):
            lines.append(str(item))
            continue
        found = [item.get(k) for k in ("title", "url", "text", "stdout", "stderr")]
        words = [str(v) for v in found if isinstance(v, str) and v]
        lines.append(" ".join(words) if words else f"[{item.get('type', 'part')}]")
    return "\n".join(lines), False
