"""OpenAI Responses items: `message` (content parts `input_text`/`output_text`, or a plain
string), `function_call {call_id, name, arguments}`, `function_call_output {call_id,
output}`, the custom-tool and local-shell calls and outputs, `reasoning` (skipped), and
`compaction` items where the provider compacted. A file holds a list of items, an object
with `input`/`output` lists (a request or a response, or both), or JSONL of either.

A Codex CLI session (`rollout-*.jsonl`) is Responses items too, each line wrapping one:
`response_item` lines hold the items, `session_meta` the instructions, `turn_context` the
model, `compacted` a compaction's summary and `event_msg` `token_count` each call's usage;
its other event lines repeat what the items say and are left out.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals.errors import TraceFormatError
from evals.sources.formats.openai_chat import ROLES, ground_truth
from evals.sources.formats.records import read_records
from evals.sources.formats.source import (
    Conversation,
    content_text,
    conversations,
    int_or_none,
    numbered,
    obj,
    tool_call,
    tool_defs,
    trace_id,
    usage_of,
)
from evals.sources.trace import Compaction, Skipped, Trace, TraceMessage, TraceUsage, Where

NAME = "openai-responses"
CALLS = ("function_call", "custom_tool_call", "local_shell_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
ITEM_TYPES = ("message", "reasoning", "compaction", *CALLS, *OUTPUTS)
CODEX_LINES = ("session_meta", "response_item", "turn_context", "event_msg", "compacted")


def is_item(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    kind = value.get("type")
    return kind in ITEM_TYPES or (kind is None and isinstance(value.get("role"), str))


def read(path: Path) -> Iterator[Trace]:
    skipped: list[Skipped] = []
    if _is_codex(path):
        yield _codex(path)
        return
    convs = conversations(path, skipped, is_item, ("input", "output", "items", "messages"))
    for conv, number, several in numbered(convs):
        record = conv.record
        trace = Trace(trace_id(path, record, number, several), NAME, str(path))
        trace.skipped.extend(skipped)
        skipped.clear()
        if isinstance(record.get("instructions"), str):
            trace.system = record["instructions"]
        trace.tools = tool_defs(record.get("tools"))
        trace.model = record.get("model") if isinstance(record.get("model"), str) else None
        trace.metadata = {
            k: v for k, v in record.items() if k not in ("instructions", "tools", "output")
        }
        trace.ground_truth = ground_truth(record)
        for raw, where in _with_output(conv):
            _add_item(trace, raw, where)
        usage = usage_of(record.get("usage"))
        if usage is not None:  # a response's usage: the call that wrote its last message
            for message in reversed(trace.messages):
                if message.role == "assistant":
                    message.usage = usage
                    break
        yield trace
    if skipped:
        yield Trace(path.stem, NAME, str(path), skipped=skipped)


def _add_item(trace: Trace, raw: Any, where: Where) -> None:
    """One item as `trace` messages: a call joins the assistant turn before it."""
    kind = raw.get("type") if isinstance(raw, dict) else None
    if kind == "reasoning":
        return
    if kind in CALLS:
        cid = raw.get("call_id", raw.get("id"))
        if kind == "custom_tool_call":  # free-form input, no JSON schema: kept as written
            call = tool_call(cid, raw.get("name"), raw.get("input"))
        elif kind == "local_shell_call":
            call = tool_call(cid, "local_shell", raw.get("action"))
        else:
            call = tool_call(cid, raw.get("name"), raw.get("arguments"))
        last = trace.messages[-1] if trace.messages else None
        if last is not None and last.role == "assistant":
            last.tool_calls.append(call)  # the text and the calls of one turn
        else:
            trace.messages.append(TraceMessage("assistant", tool_calls=[call], where=where))
    elif kind in OUTPUTS:
        cid = raw.get("call_id", raw.get("id"))
        trace.messages.append(
            TraceMessage(
                "tool", content_text(raw.get("output")), tool_call_id=str(cid), where=where
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
            trace.messages.append(TraceMessage(role, text, where=where))
    else:
        trace.skipped.append(Skipped(where, f"an item of unknown type {kind!r}"))


def _is_codex(path: Path) -> bool:
    """True when the file's first record is a Codex rollout line (`{type, payload}`)."""
    records = read_records(path, [])
    try:
        first = next(records, None)
    except TraceFormatError:
        return False
    finally:
        records.close()
    value = first.value if first is not None else None
    return isinstance(value, dict) and value.get("type") in CODEX_LINES and "payload" in value


def _codex(path: Path) -> Trace:
    """A Codex CLI rollout: its `response_item` payloads, a line at a time."""
    trace = Trace(path.stem, NAME, str(path))
    for rec in read_records(path, trace.skipped):
        line = rec.value if isinstance(rec.value, dict) else {}
        kind, payload = line.get("type"), obj(line.get("payload"))
        if kind == "response_item":
            _add_item(trace, payload, rec.where)
        elif kind == "session_meta":
            trace.id = str(payload.get("id") or trace.id)
            instructions = payload.get("instructions", payload.get("base_instructions"))
            trace.system = content_text(instructions)
            for key in ("cwd", "originator", "cli_version", "git"):
                if key in payload:
                    trace.metadata[key] = payload[key]
        elif kind == "turn_context" and isinstance(payload.get("model"), str):
            trace.model = trace.model or payload["model"]
        elif kind == "compacted":
            trace.compactions.append(_compacted(payload, len(trace.messages), rec.where))
        elif kind == "event_msg" and payload.get("type") == "token_count":
            _add_usage(trace, obj(obj(payload.get("info")).get("last_token_usage")))
        elif kind not in CODEX_LINES:
            trace.skipped.append(Skipped(rec.where, f"a line of unknown type {kind!r}"))
    return trace


def _compacted(payload: dict[str, Any], index: int, where: Where) -> Compaction:
    """A Codex `compacted` line: its summary is `message`, or the text of its
    `replacement_history` (the items that replaced the history: the user's messages kept and
    the summary) when it has one."""
    summary = content_text(payload.get("message"))
    history = payload.get("replacement_history")
    if isinstance(history, list):
        texts = [content_text(obj(item).get("content")) for item in history]
        summary = "\n\n".join(dict.fromkeys(t for t in (*texts, summary) if t))
    return Compaction(index, summary, where)


def _add_usage(trace: Trace, usage: dict[str, Any]) -> None:
    """A call's token count onto the last assistant message (the one that call wrote)."""
    last = next((m for m in reversed(trace.messages) if m.role == "assistant"), None)
    if last is None or not usage or last.usage is not None:
        return
    last.usage = TraceUsage(
        input_tokens=int_or_none(usage.get("input_tokens")),
        output_tokens=int_or_none(usage.get("output_tokens")),
        cache_read_tokens=int_or_none(usage.get("cached_input_tokens")),
    )


def _with_output(conv: Conversation) -> list[tuple[Any, Any]]:
    """The conversation's items, and after a request's `input` its response's `output`."""
    items = list(zip(conv.items, conv.wheres, strict=True))
    output = conv.record.get("output")
    if conv.field == "input" and isinstance(output, list):
        items += [(item, conv.where) for item in output]
    return items
