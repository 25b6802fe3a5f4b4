"""What the parsers share besides reading records (records.py): the conversations of a
record, the text of content parts, tool arguments and usage in any provider's spelling, and
the last pass (`finish`) that pairs each tool result with its call and drops what cannot be
paired."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.sources.formats.records import Record, read_records, refuse_damaged
from evals.sources.trace import (
    Skipped,
    ToolDef,
    Trace,
    TraceMessage,
    TraceToolCall,
    TraceUsage,
    Where,
    prompt_tokens,
)

# -- the parts every format spells its own way ---------------------------------------------


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or a list of parts (text, input_text,
    output_text, refusal); other parts (images, files) leave a bracketed name."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return str(content)
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            text = part.get("text", part.get("refusal"))
            if isinstance(text, str):
                texts.append(text)
            elif part.get("type") not in ("thinking", "redacted_thinking", "reasoning"):
                texts.append(f"[{part.get('type', 'part')}]")
    return "\n".join(texts)


def tool_call(call_id: Any, name: Any, arguments: Any) -> TraceToolCall:
    """A call with its arguments decoded: a JSON string, an object, or text kept raw."""
    if isinstance(arguments, dict):
        return TraceToolCall(str(call_id), str(name), arguments)
    if isinstance(arguments, str):
        try:
            decoded = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            decoded = None
        if isinstance(decoded, dict):
            return TraceToolCall(str(call_id), str(name), decoded)
        return TraceToolCall(str(call_id), str(name), {}, raw_arguments=arguments)
    if arguments is None:
        return TraceToolCall(str(call_id), str(name), {})
    return TraceToolCall(str(call_id), str(name), {}, raw_arguments=json.dumps(arguments))


def obj(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one (a field of the wrong shape)."""
    return value if isinstance(value, dict) else {}


def int_or_none(value: Any) -> int | None:
    try:
        return None if value is None or isinstance(value, bool) else int(value)
    except (TypeError, ValueError):
        return None


def tool_defs(tools: Any) -> list[ToolDef]:
    """Tool definitions in the Chat (`{type, function: {...}}`), Responses (flat) or Anthropic
    (`input_schema`) shape."""
    defs = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict):
            continue
        spec: dict[str, Any] = obj(tool.get("function")) or tool
        if not spec.get("name"):
            continue
        params = obj(spec.get("parameters", spec.get("input_schema")))
        defs.append(ToolDef(str(spec["name"]), str(spec.get("description") or ""), dict(params)))
    return defs


# -- the last pass ---------------------------------------------------------------------------


def finish(trace: Trace) -> None:
    """Pairs each tool result with the call it answers, in place: a result naming no earlier
    call, a second result for one call, and a call no result answers are dropped and
    recorded in `skipped` (a replay answers every call with its recorded result); a call id
    used again after its first call was answered is renamed, so each call has its own id.
    An assistant message left with nothing is dropped; subagents are finished too."""
    calls: dict[str, TraceToolCall] = {}
    renamed: dict[str, str] = {}  # an id as the source spells it -> the id its open call got
    answered: set[str] = set()
    kept: list[TraceMessage] = []
    for message in trace.messages:
        if message.role == "tool":
            cid = renamed.get(message.tool_call_id or "", message.tool_call_id or "")
            if cid not in calls:
                _skip(trace, message.where, f"a tool result for no call ({message.tool_call_id!r})")
                continue
            if cid in answered:
                _skip(trace, message.where, f"a second result for call {cid!r}")
                continue
            answered.add(cid)
            message.tool_call_id = cid
            message.tool_name = message.tool_name or calls[cid].name
        for call in list(message.tool_calls):
            if call.id in calls and call.id not in answered:
                _skip(trace, message.where, f"a second call with id {call.id!r} before a result")
                message.tool_calls.remove(call)
                continue
            if call.id in calls:
                new = f"{call.id}#{sum(c.startswith(call.id) for c in calls) + 1}"
                renamed[call.id] = new
                call.id = new
            calls[call.id] = call
        kept.append(message)
    for message in kept:
        for call in list(message.tool_calls):
            if call.id not in answered:
                _skip(trace, message.where, f"call {call.id!r} ({call.name}) has no result")
                message.tool_calls.remove(call)
    final = [m for m in kept if m.role != "assistant" or m.text or m.tool_calls or m.usage]
    # A compaction sits before a message: it moves to the first message still kept after it.
    survivors = {id(m) for m in final}
    before = 0
    new_index: list[int] = []
    for m in trace.messages:
        new_index.append(before)
        before += id(m) in survivors
    new_index.append(before)
    for compaction in trace.compactions:
        compaction.index = new_index[min(max(compaction.index, 0), len(trace.messages))]
    trace.messages = final
    for compaction in trace.compactions:
        if compaction.tokens_after is None:  # the first call after it sent the compacted prompt
            after = (m.usage for m in final[compaction.index :] if m.usage is not None)
            compaction.tokens_after = prompt_tokens(next(after, None), trace.format)
        if compaction.tokens_before is None:  # the last call before it: its prompt and reply
            last = next((m.usage for m in reversed(final[: compaction.index]) if m.usage), None)
            sent = prompt_tokens(last, trace.format)
            if last is not None and sent is not None:
                compaction.tokens_before = sent + (last.output_tokens or 0)
    for sub in trace.subagents:
        finish(sub)


def _skip(trace: Trace, where: Where | None, reason: str) -> None:
    trace.skipped.append(Skipped(where or Where(trace.source), reason))


# -- where the messages sit -------------------------------------------------------------------

MESSAGE_FIELDS = ("messages", "traj", "trajectory", "conversation", "history", "input", "items")


@dataclass
class Conversation:
    """One trace's items (messages, blocks or events) as the file holds them, the record
    around them (its other fields), and where each item starts."""

    items: list[Any]
    wheres: list[Where]
    record: dict[str, Any]
    where: Where
    field: str | None = None  # the record's field that held the items


def conversations(
    path: Path, skipped: list[Skipped], is_item: Any, fields: tuple[str, ...] = MESSAGE_FIELDS
) -> Iterator[Conversation]:
    """The conversations of `path`: a JSON list of items; an object whose `fields` holds
    them; JSONL with one such value a line, or one item a line (one conversation); or a JSON
    array of run records each holding its items under one field. `is_item(value)` says
    whether a value is an item of the format."""
    loose: Conversation | None = None
    lines = 0
    for rec in read_records(path, skipped):
        lines += 1
        value = rec.value
        if is_item(value):  # JSONL, one item a line
            if loose is None:
                loose = Conversation([], [], {}, rec.where)
            loose.items.append(value)
            loose.wheres.append(rec.where)
            continue
        if isinstance(value, list) and value and all(is_item(v) for v in value if v):
            wheres = [rec.where_at(i) for i in range(len(value))]
            yield Conversation(value, wheres, {}, rec.where)
        elif isinstance(value, list):
            for n, record in enumerate(value):
                conv = _in_record(record, rec, (n,), is_item, fields)
                if conv is None:
                    skipped.append(Skipped(rec.where_at(n), f"record {n + 1} holds no messages"))
                else:
                    yield conv
        else:
            conv = _in_record(value, rec, (), is_item, fields)
            if conv is not None:
                yield conv
                continue
            runs = _runs(value, is_item, fields)
            if runs is None:
                skipped.append(Skipped(rec.where, "a record with no messages"))
                continue
            name, records = runs
            tasks = _tasks(value)
            for n, record in enumerate(records):
                conv = _in_record(record, rec, (name, n), is_item, fields)
                if conv is None:
                    skipped.append(Skipped(rec.where_at(name, n), f"{name}[{n}] holds no messages"))
                    continue
                task = tasks.get(str(record.get("task_id"))) if isinstance(record, dict) else None
                if task is not None and "task" not in conv.record:
                    conv.record["task"] = task  # its expected actions are ground truth
                yield conv
    if loose is not None:  # its lines are one conversation: most of them damaged, none
        refuse_damaged(path, lines, skipped)
        yield loose


def _runs(document: Any, is_item: Any, fields: tuple[str, ...]) -> tuple[str, list[Any]] | None:
    """The field of a results document that lists run records, each holding its items (a
    tau2-bench results file: `{"info", "tasks", "simulations": [{"messages": ...}]}`)."""
    if not isinstance(document, dict):
        return None
    for name, value in document.items():
        if not isinstance(value, list):
            continue
        records = [v for v in value if isinstance(v, dict)]
        if records and any(_holds_items(r, is_item, fields) for r in records[:5]):
            return name, value
    return None


def _holds_items(record: dict[str, Any], is_item: Any, fields: tuple[str, ...]) -> bool:
    return any(
        isinstance(record.get(name), list) and any(is_item(v) for v in record[name][:5])
        for name in fields
    )


def _tasks(document: dict[str, Any]) -> dict[str, Any]:
    """The document's tasks by id, for run records that name theirs in `task_id`."""
    tasks = document.get("tasks")
    if not isinstance(tasks, list):
        return {}
    return {str(t["id"]): t for t in tasks if isinstance(t, dict) and "id" in t}


def _in_record(
    record: Any, rec: Record, at: tuple[str | int, ...], is_item: Any, fields: tuple[str, ...]
) -> Conversation | None:
    if not isinstance(record, dict):
        return None
    candidates = [*fields, *record]  # the usual names first, then any field of items
    for name in candidates:
        items = record.get(name)
        if isinstance(items, list) and items and any(is_item(v) for v in items):
            rest = {k: v for k, v in record.items() if k != name}
            wheres = [rec.where_at(*at, name, i) for i in range(len(items))]
            return Conversation(items, wheres, rest, rec.where_at(*at), name)
    return None


def trace_id(path: Path, record: dict[str, Any], number: int, several: bool) -> str:
    """The trace's id: the record's own id when it has one, else the file's name (with the
    record's number when the file holds several)."""
    for key in ("id", "session_id", "sessionId", "trace_id", "instance_id"):
        if isinstance(record.get(key), str | int) and not several:
            return str(record[key])
    return f"{path.stem}-{number}" if several else path.stem


def numbered(convs: Iterator[Conversation]) -> Iterator[tuple[Conversation, int, bool]]:
    """Each conversation with its 1-based number and whether the file holds several (one
    conversation read ahead, so a stream stays a stream)."""
    current = next(convs, None)
    number = 0
    several = False
    while current is not None:
        following = next(convs, None)
        number += 1
        several = several or following is not None
        yield current, number, several
        current = following


def usage_of(raw: Any) -> TraceUsage | None:
    """A call's usage in the Anthropic, Chat or Responses spelling (None when absent)."""
    if not isinstance(raw, dict):
        return None
    details = raw.get("prompt_tokens_details") or raw.get("input_tokens_details") or {}
    usage = TraceUsage(
        input_tokens=int_or_none(raw.get("input_tokens", raw.get("prompt_tokens"))),
        output_tokens=int_or_none(raw.get("output_tokens", raw.get("completion_tokens"))),
        cache_read_tokens=int_or_none(
            raw.get("cache_read_input_tokens", details.get("cached_tokens"))
            if isinstance(details, dict)
            else raw.get("cache_read_input_tokens")
        ),
        cache_creation_tokens=int_or_none(raw.get("cache_creation_input_tokens")),
        cost_usd=_float(raw.get("cost_usd", raw.get("cost"))),
    )
    return usage if any(vars(usage).values()) else None


def _float(value: Any) -> float | None:
    try:
        return None if value is None or isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        return None
