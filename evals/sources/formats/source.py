"""What the parsers share: reading a file as JSON records without stopping at a bad one (a
JSON document, or JSONL one record a line, read line by line), the text of content parts,
tool arguments and usage in any provider's spelling, and the last pass (`finish`) that pairs
each tool result with its call and drops what cannot be paired."""

from __future__ import annotations

import bisect
import contextlib
import json
import re
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.errors import TraceFormatError
from evals.sources.trace import (
    Skipped,
    ToolDef,
    Trace,
    TraceMessage,
    TraceToolCall,
    TraceUsage,
    Where,
)


def check_text(path: Path, head: bytes) -> None:
    """Refuses a file whose head is not text."""
    if b"\x00" in head:
        raise TraceFormatError(f"{path}: a binary file (NUL bytes), not a trace")
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the end of the head
            raise TraceFormatError(
                f"{path}: not UTF-8 text (byte {exc.start}), not a trace"
            ) from None


@dataclass
class Record:
    """One JSON value of a file and where it starts; for a document of many lines, its text,
    so `where_at` can name the line of any value inside it."""

    value: Any
    where: Where
    text: str | None = None
    _lines: dict[tuple[str | int, ...], int] | None = None

    def where_at(self, *path: str | int) -> Where:
        """Where the object or array at `path` (keys and indexes) inside the value starts."""
        if self.text is None:
            return self.where
        if self._lines is None:
            self._lines = value_lines(self.text)
        return Where(self.where.file, self._lines.get(path, self.where.line))


def read_records(path: Path, skipped: list[Skipped]) -> Generator[Record]:
    """The JSON values of `path`: the one document of a JSON file, or each line of a JSONL
    file (read a line at a time, so a large session never sits in memory as text). A line
    that is not JSON goes to `skipped`; a truncated document yields what it held up to the
    cut. Raises `TraceFormatError` when nothing in the file is JSON."""
    with open(path, "rb") as f:
        check_text(path, f.read(4096))
    file = str(path)
    with open(path, encoding="utf-8", errors="replace") as f:
        first_line, first = _first_value(f)
        if first is not _NOTHING:
            rest = f.readline()
            while rest and not rest.strip():
                rest = f.readline()
            if not rest:  # one value on one line: a JSON document
                yield Record(first, Where(file, first_line))
                return
            yield Record(first, Where(file, first_line))
            yield from _lines(f, rest, first_line + 1, file, skipped)
            return
    text = path.read_text(encoding="utf-8", errors="replace").lstrip("\ufeff")
    try:
        yield Record(json.loads(text), Where(file, 1), text)
        return
    except json.JSONDecodeError as exc:
        error = exc
    if _looks_like_jsonl(text):
        with open(path, encoding="utf-8", errors="replace") as f:
            yield from _lines(f, "", 1, file, skipped)
        return
    kept = salvage(text)
    if kept is None:
        raise TraceFormatError(
            f"{path}: not JSON ({error.msg} at line {error.lineno}) and no line of it is"
        )
    value, line = kept
    skipped.append(Skipped(Where(file, line), "the file is cut off here: kept what came before"))
    yield Record(value, Where(file, 1), text)


_NOTHING = object()


def _first_value(f: Any) -> tuple[int, Any]:
    """The first non-blank line of `f` as a JSON value (or `_NOTHING`), and its number."""
    number = 0
    for line in f:
        number += 1
        if line.strip():
            try:
                return number, json.loads(line.lstrip("\ufeff"))
            except json.JSONDecodeError:
                return number, _NOTHING
    return number, _NOTHING


def _lines(
    f: Any, pending: str, number: int, file: str, skipped: list[Skipped]
) -> Iterator[Record]:
    """Each line of `f` (after `pending`, line `number`) as a record; bad lines skipped."""
    line = pending
    while True:
        if line.strip():
            try:
                yield Record(json.loads(line), Where(file, number))
            except json.JSONDecodeError as exc:
                reason = "cut off" if exc.pos >= len(line.rstrip()) else "not JSON"
                skipped.append(Skipped(Where(file, number), f"{reason}: {exc.msg}"))
        line = f.readline()
        if not line:
            return
        number += 1


def _looks_like_jsonl(text: str) -> bool:
    """True when most non-blank lines of `text` are JSON objects of their own."""
    lines = [line for line in text.splitlines()[:50] if line.strip()]
    good = 0
    for line in lines:
        with contextlib.suppress(json.JSONDecodeError):
            good += isinstance(json.loads(line), dict)
    return len(lines) > 1 and good * 2 >= len(lines)


# A string as one run of plain characters between escapes: ~5x faster than a per-character
# alternation on documents of megabytes.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_PUNCT = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},]')


def value_lines(text: str, max_depth: int = 4) -> dict[tuple[str | int, ...], int]:
    """The 1-based line where each object or array of the JSON `text` starts, by its path
    (keys and indexes), down to `max_depth`: one pass over strings and brackets."""
    newlines = [m.start() for m in re.finditer("\n", text)]
    lines: dict[tuple[str | int, ...], int] = {}
    stack: list[list[Any]] = []  # [is_object, key or index, awaiting a key]
    for m in _PUNCT.finditer(text):
        token = m.group()
        top = stack[-1] if stack else None
        if token[0] == '"':
            if top is not None and top[0] and top[2]:
                top[1], top[2] = token[1:-1], False  # a key: escapes matter not for lookup
        elif token in ("{", "["):
            if len(stack) <= max_depth:
                lines[tuple(e[1] for e in stack)] = bisect.bisect_left(newlines, m.start()) + 1
            stack.append([token == "{", None if token == "{" else 0, token == "{"])
        elif token in ("}", "]"):
            if stack:
                stack.pop()
        elif top is not None:  # a comma: the next key, or the next element
            if top[0]:
                top[2] = True
            else:
                top[1] += 1
    return lines


def salvage(text: str) -> tuple[Any, int] | None:
    """A document cut off mid-way, closed after its last complete inner value: the value and
    the line where the kept part ends. None when nothing complete is inside."""
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []
    for m in _TOKEN.finditer(text):
        token = m.group()
        if token in ("{", "["):
            stack.append("}" if token == "{" else "]")
        elif token in ("}", "]"):
            if not stack:
                break
            stack.pop()
            if stack:
                cuts.append((m.end(), "".join(reversed(stack))))
    for end, closers in reversed(cuts[-20:]):
        try:
            return json.loads(text[:end] + closers), text.count("\n", 0, end) + 1
        except json.JSONDecodeError:
            continue
    return None


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
    for rec in read_records(path, skipped):
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
    if loose is not None:
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
