"""LangChain messages (deepagents, LangGraph agents), in the three shapes `langchain_core`
writes: serialized constructors (`{"lc": 1, "type": "constructor", "id": [..., "AIMessage"],
"kwargs": {...}}`), `messages_to_dict` (`{"type": "ai", "data": {...}}`) and plain dicts
carrying `type` (`human|ai|system|tool`) or `role`.

An AI message's calls are its `tool_calls` (`{name, args, id}`), the OpenAI spelling in
`additional_kwargs.tool_calls`, or provider blocks in its content (Anthropic `tool_use`,
LangChain's own `tool_call`), one call per id; `usage_metadata` gives its usage (cache reads
and writes in `input_token_details`). A `ToolMessage` answers `tool_call_id`; `status:
"error"` marks a failure. deepagents' markers: its summary message (`lc_source:
"summarization"`) is a `Compaction`, not a user turn; a result it evicted to a file (the
message names a `/large_tool_results/` path) is listed in `metadata["evicted"]`.

A file holds a list of messages, an object with `messages` (a graph's state), JSONL one
message or one such object a line, or a JSON array of such objects (one trace each).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals.sources.formats.source import (
    content_text,
    conversations,
    int_or_none,
    numbered,
    obj,
    tool_call,
    tool_defs,
    trace_id,
)
from evals.sources.trace import (
    Compaction,
    Role,
    Skipped,
    Trace,
    TraceMessage,
    TraceToolCall,
    TraceUsage,
    Where,
)

NAME = "langchain"
# Class names and `type` values -> roles; chunks are what a stream wrote.
TYPES: dict[str, Role] = {
    "human": "user",
    "HumanMessage": "user",
    "HumanMessageChunk": "user",
    "user": "user",
    "ai": "assistant",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "assistant": "assistant",
    "system": "system",
    "SystemMessage": "system",
    "developer": "system",
    "tool": "tool",
    "ToolMessage": "tool",
    "ToolMessageChunk": "tool",
    "function": "tool",
    "FunctionMessage": "tool",
}
CALL_BLOCKS = ("tool_use", "tool_call", "server_tool_use")
SKIPPED_BLOCKS = ("thinking", "redacted_thinking", "reasoning")
EVICTED = re.compile(r"/large_tool_results/[\w.\-/]+")
SUMMARY_SOURCE = "summarization"


def unwrap(value: Any) -> tuple[str | None, dict[str, Any]] | None:
    """The type (or class name) and fields of a LangChain message in any of its shapes,
    or None when `value` is none."""
    if not isinstance(value, dict):
        return None
    if value.get("lc") == 1 and isinstance(value.get("id"), list) and value["id"]:
        return str(value["id"][-1]), obj(value.get("kwargs"))
    kind = value.get("type")
    if isinstance(kind, str) and isinstance(value.get("data"), dict):
        return kind, value["data"]
    if isinstance(kind, str) and kind in TYPES and "content" in value:
        return kind, value
    if isinstance(value.get("role"), str) and "content" in value:
        return str(value["role"]), value
    return None


def is_message(value: Any) -> bool:
    found = unwrap(value)
    return found is not None and found[0] in TYPES


def is_summary(fields: dict[str, Any]) -> bool:
    """deepagents' summary message: `lc_source` in its fields or its `additional_kwargs`."""
    extra = obj(fields.get("additional_kwargs"))
    return SUMMARY_SOURCE in (fields.get("lc_source"), extra.get("lc_source"))


def read(path: Path) -> Iterator[Trace]:
    skipped: list[Skipped] = []
    convs = conversations(path, skipped, is_message, ("messages", "history"))
    for conv, number, several in numbered(convs):
        trace = Trace(trace_id(path, conv.record, number, several), NAME, str(path))
        trace.skipped.extend(skipped)
        skipped.clear()
        trace.tools = tool_defs(conv.record.get("tools"))
        trace.metadata = {k: v for k, v in conv.record.items() if k != "tools"}
        add_messages(trace, conv.items, conv.wheres)
        yield trace
    if skipped:
        yield Trace(path.stem, NAME, str(path), skipped=skipped)


def add_messages(trace: Trace, items: list[Any], wheres: list[Where]) -> None:
    """Each LangChain message of `items` into `trace`: a leading system message becomes
    `trace.system`, a summary message a `Compaction`, an evicted result is listed."""
    for raw, where in zip(items, wheres, strict=True):
        found = unwrap(raw)
        if found is None or found[0] not in TYPES:
            kind = found[0] if found else type(raw).__name__
            trace.skipped.append(Skipped(where, f"not a LangChain message ({kind!r})"))
            continue
        kind, fields = found
        if is_summary(fields):
            trace.compactions.append(
                Compaction(len(trace.messages), content_text(fields.get("content")), where)
            )
            continue
        message = to_message(kind or "", fields, where, trace.skipped)
        if message.role == "system" and not any(m.role != "system" for m in trace.messages):
            trace.system = "\n\n".join(t for t in (trace.system, message.text) if t)
            continue
        if message.role == "tool":
            evicted = EVICTED.search(message.text)
            if evicted:
                trace.metadata.setdefault("evicted", []).append(
                    {"tool_call_id": message.tool_call_id, "path": evicted.group(0)}
                )
        if message.model and trace.model is None:
            trace.model = message.model
        trace.messages.append(message)


def to_message(
    kind: str, fields: dict[str, Any], where: Where, skipped: list[Skipped]
) -> TraceMessage:
    """One message's fields (the constructor's `kwargs`, the dict's `data`, or the dict)."""
    role = TYPES[kind]
    text, calls = _content(fields.get("content"), role, where, skipped)
    if role == "tool":
        cid = fields.get("tool_call_id")
        return TraceMessage(
            "tool",
            text,
            tool_call_id=None if cid is None else str(cid),
            tool_name=fields["name"] if isinstance(fields.get("name"), str) else None,
            is_error=fields.get("status") == "error",
            where=where,
        )
    message = TraceMessage(role, text, where=where)
    if role != "assistant":
        return message
    seen = {c.id for c in calls}
    listed = fields.get("tool_calls")
    if listed is not None and not isinstance(listed, list):
        skipped.append(Skipped(where, f"tool_calls that are not a list: {listed!r:.40}"))
        listed = []
    for call in listed or []:
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            skipped.append(Skipped(where, "a tool call with no name"))
            continue
        if str(call.get("id")) not in seen:
            calls.append(tool_call(call.get("id"), call["name"], call.get("args")))
            seen.add(str(call.get("id")))
    for call in _list(fields.get("invalid_tool_calls")):  # arguments that were no JSON object
        if isinstance(call, dict) and isinstance(call.get("name"), str):
            calls.append(tool_call(call.get("id"), call["name"], call.get("args")))
    if not listed:  # older messages kept the provider's calls in additional_kwargs
        for call in _list(obj(fields.get("additional_kwargs")).get("tool_calls")):
            fn = obj(call.get("function")) if isinstance(call, dict) else {}
            if fn.get("name") and str(call.get("id")) not in seen:
                calls.append(tool_call(call.get("id"), fn["name"], fn.get("arguments")))
    message.tool_calls = calls
    message.usage = usage(fields)
    meta = obj(fields.get("response_metadata"))
    model = meta.get("model_name", meta.get("model"))
    message.model = model if isinstance(model, str) else None
    return message


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _content(
    content: Any, role: Role, where: Where, skipped: list[Skipped]
) -> tuple[str, list[TraceToolCall]]:
    """A message's text and, for an AI message, the calls its provider blocks hold."""
    if not isinstance(content, list):
        return content_text(content), []
    texts: list[str] = []
    calls: list[TraceToolCall] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if isinstance(block, str):
            texts.append(block)
        elif kind in SKIPPED_BLOCKS:
            continue
        elif kind in CALL_BLOCKS and role == "assistant" and isinstance(block, dict):
            args = block.get("input", block.get("args"))
            calls.append(tool_call(block.get("id"), block.get("name"), args))
        elif isinstance(block, dict):
            texts.append(content_text(block))
        else:
            skipped.append(Skipped(where, f"a content block that is not an object: {block!r:.40}"))
    return "\n".join(t for t in texts if t), calls


def usage(fields: dict[str, Any]) -> TraceUsage | None:
    """`usage_metadata` (with `input_token_details` cache reads and writes), else the
    provider's token usage in `response_metadata`."""
    raw = obj(fields.get("usage_metadata"))
    if not raw:
        meta = obj(fields.get("response_metadata"))
        raw = obj(meta.get("usage", meta.get("token_usage")))
    if not raw:
        return None
    details = obj(raw.get("input_token_details"))
    found = TraceUsage(
        input_tokens=int_or_none(raw.get("input_tokens", raw.get("prompt_tokens"))),
        output_tokens=int_or_none(raw.get("output_tokens", raw.get("completion_tokens"))),
        cache_read_tokens=int_or_none(
            details.get("cache_read", raw.get("cache_read_input_tokens"))
        ),
        cache_creation_tokens=int_or_none(
            details.get("cache_creation", raw.get("cache_creation_input_tokens"))
        ),
    )
    return found if any(v is not None for v in vars(found).values()) else None
