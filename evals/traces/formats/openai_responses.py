"""OpenAI Responses items: `message` (content parts `input_text`/`output_text`, or a plain
string), `function_call {call_id, name, arguments}`, `function_call_output {call_id,
output}`, `reasoning` (skipped), and `compaction` items where the provider compacted. A file
holds a list of items, an object with `input`/`output` lists (a request or a response, or
both), or JSONL of either."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals.traces.formats.openai_chat import ROLES, ground_truth
from evals.traces.formats.source import (
    Conversation,
    content_text,
    conversations,
    numbered,
    tool_call,
    tool_defs,
    trace_id,
    usage_of,
)
from evals.traces.model import Compaction, Message, Skipped, Trace

NAME = "openai-responses"
ITEM_TYPES = ("message", "function_call", "function_call_output", "reasoning", "compaction")


def is_item(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    kind = value.get("type")
    return kind in ITEM_TYPES or (kind is None and isinstance(value.get("role"), str))


def read(path: Path) -> Iterator[Trace]:
    skipped: list[Skipped] = []
    convs = conversations(path, skipped, is_item, ("input", "output", "items", "messages"))
    for conv, number, several in numbered(convs):
        record = conv.record
        trace = Trace(trace_id(path, record, number, several), NAME, str(path))
        trace.skipped.extend(skipped)
        skipped.clear()
        items = _with_output(conv)
        if isinstance(record.get("instructions"), str):
            trace.system = record["instructions"]
        trace.tools = tool_defs(record.get("tools"))
        trace.model = record.get("model") if isinstance(record.get("model"), str) else None
        trace.metadata = {
            k: v for k, v in record.items() if k not in ("instructions", "tools", "output")
        }
        trace.ground_truth = ground_truth(record)
        usage = usage_of(record.get("usage"))
        for raw, where in items:
            kind = raw.get("type") if isinstance(raw, dict) else None
            if kind == "reasoning":
                continue
            if kind == "function_call":
                call = tool_call(
                    raw.get("call_id", raw.get("id")), raw.get("name"), raw.get("arguments")
                )
                last = trace.messages[-1] if trace.messages else None
                if last is not None and last.role == "assistant":
                    last.tool_calls.append(call)  # the text and the calls of one turn
                else:
                    trace.messages.append(Message("assistant", tool_calls=[call], where=where))
            elif kind == "function_call_output":
                output = raw.get("output")
                trace.messages.append(
                    Message(
                        "tool",
                        content_text(output),
                        tool_call_id=str(raw.get("call_id")),
                        where=where,
                    )
                )
            elif kind == "compaction":
                summary = content_text(raw.get("summary", raw.get("content")))
                trace.compactions.append(Compaction(len(trace.messages), summary, where))
            elif kind in ("message", None) and isinstance(raw, dict):
                role = ROLES.get(str(raw.get("role")))
                text = content_text(raw.get("content"))
                if role is None:
                    trace.skipped.append(Skipped(where, f"unknown role {raw.get('role')!r}"))
                elif role == "system" and not trace.messages:
                    trace.system = "\n\n".join(filter(None, (trace.system, text)))
                else:
                    trace.messages.append(Message(role, text, where=where))
            else:
                trace.skipped.append(Skipped(where, f"an item of unknown type {kind!r}"))
        if usage is not None:  # a response's usage: the call that wrote its last message
            for message in reversed(trace.messages):
                if message.role == "assistant":
                    message.usage = usage
                    break
        yield trace
    if skipped:
        yield Trace(path.stem, NAME, str(path), skipped=skipped)


def _with_output(conv: Conversation) -> list[tuple[Any, Any]]:
    """The conversation's items, and after a request's `input` its response's `output`."""
    items = list(zip(conv.items, conv.wheres, strict=True))
    output = conv.record.get("output")
    if conv.field == "input" and isinstance(output, list):
        items += [(item, conv.where) for item in output]
    return items
