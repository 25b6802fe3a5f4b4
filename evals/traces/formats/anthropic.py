"""Anthropic Messages: `system` (a string or text blocks) and `messages` of user/assistant
whose content is a string or blocks: `text`, `tool_use {id, name, input}`, `tool_result
{tool_use_id, content (string or blocks), is_error}` (each its own `tool` message),
`thinking`/`redacted_thinking` (skipped: not context the next call sees as text), and
`compaction` blocks (the provider's summary, kept as a `Compaction`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals.traces.formats.openai_chat import ground_truth
from evals.traces.formats.source import (
    content_text,
    conversations,
    numbered,
    tool_call,
    tool_defs,
    trace_id,
    usage_of,
)
from evals.traces.model import Compaction, Message, Skipped, Trace, Where

NAME = "anthropic"
SKIPPED_BLOCKS = ("thinking", "redacted_thinking")


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
    in one message; a user's tool results each a `tool` message, then its text."""
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        trace.skipped.append(
            Skipped(where, f"content that is neither text nor blocks: {content!r:.40}")
        )
        return
    texts: list[str] = []
    calls = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind in SKIPPED_BLOCKS:
            continue
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "tool_use" and role == "assistant":
            calls.append(tool_call(block.get("id"), block.get("name"), block.get("input")))
        elif kind == "tool_result" and role == "user":
            trace.messages.append(
                Message(
                    "tool",
                    content_text(block.get("content")),
                    tool_call_id=str(block.get("tool_use_id")),
                    is_error=bool(block.get("is_error")),
                    where=where,
                )
            )
        elif kind == "compaction":
            trace.compactions.append(
                Compaction(len(trace.messages), content_text(block.get("content")), where)
            )
        elif kind in ("image", "document"):
            texts.append(f"[{kind}]")
        else:
            trace.skipped.append(Skipped(where, f"a {kind!r} block in a {role} message"))
    text = "\n".join(t for t in texts if t)
    if role == "assistant" and (text or calls or usage):
        trace.messages.append(
            Message("assistant", text, calls, usage=usage, model=model, where=where)
        )
    elif role == "user" and text:
        trace.messages.append(Message("user", text, where=where))
