"""Gemini CLI sessions (`~/.gemini/tmp/<project>/chats/`): a JSON file `{sessionId,
projectHash, startTime, lastUpdated, messages}`, or JSONL whose first line holds the session's
fields and each later line one message.

A message is `{id, timestamp, type, content, toolCalls, tokens, model}`: `type` `user` or
`gemini` (the model; `info`, `error` and `warning` lines are the CLI's own notices, left out).
A `gemini` message's `toolCalls` (`{id, name, args, result, status, resultDisplay}`) carry
their results, each read as its own `tool` message after it (`status: "error"` marks a
failure); `tokens` `{input, output, cached, ...}` is its call's usage (`input` includes the
cached part). A line written again for the same id replaces the first; `{"$rewindTo": id}`
drops that message and every one after it (each named in `skipped`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals.sources.formats.records import read_records
from evals.sources.formats.source import content_text, int_or_none, obj, tool_call
from evals.sources.trace import Skipped, Trace, TraceMessage, TraceUsage, Where

NAME = "gemini-cli"
NOTICES = ("info", "error", "warning")


def read(path: Path) -> Iterator[Trace]:
    trace = Trace(path.stem, NAME, str(path))
    order: list[str] = []
    found: dict[str, tuple[dict[str, Any], Where]] = {}
    for rec in read_records(path, trace.skipped):
        value = rec.value
        if not isinstance(value, dict):
            trace.skipped.append(Skipped(rec.where, "a line that is not an object"))
            continue
        items = value.get("messages")
        if isinstance(items, list):  # the whole session in one document
            _session(trace, value)
            for n, item in enumerate(items):
                _add(trace, item, rec.where_at("messages", n), order, found)
        elif "$rewindTo" in value:
            _rewind(trace, str(value["$rewindTo"]), rec.where, order, found)
        elif "type" in value:
            _add(trace, value, rec.where, order, found)
        else:
            _session(trace, value)
    for mid in order:
        _message(trace, *found[mid])
    yield trace


def _session(trace: Trace, fields: dict[str, Any]) -> None:
    if isinstance(fields.get("sessionId"), str):
        trace.id = fields["sessionId"]
    for k in ("projectHash", "startTime", "lastUpdated", "summary"):
        if isinstance(fields.get(k), str):
            trace.metadata[k] = fields[k]


def _add(
    trace: Trace,
    item: Any,
    where: Where,
    order: list[str],
    found: dict[str, tuple[dict[str, Any], Where]],
) -> None:
    if not isinstance(item, dict):
        trace.skipped.append(Skipped(where, "a message that is not an object"))
        return
    mid = str(item.get("id", f"line-{where.line}-{len(order)}"))
    if mid not in found:
        order.append(mid)
    found[mid] = (item, where)


def _rewind(
    trace: Trace,
    mid: str,
    where: Where,
    order: list[str],
    found: dict[str, tuple[dict[str, Any], Where]],
) -> None:
    if mid not in found:
        trace.skipped.append(Skipped(where, f"a rewind to no message ({mid!r})"))
        return
    at = order.index(mid)
    for gone in order[at:]:
        trace.skipped.append(Skipped(found.pop(gone)[1], "rewound: dropped from the session"))
    del order[at:]


def _message(trace: Trace, item: dict[str, Any], where: Where) -> None:
    kind = item.get("type")
    if kind in NOTICES:
        return
    text = content_text(item.get("content"))
    if kind == "user":
        trace.messages.append(TraceMessage("user", text, where=where))
        return
    if kind != "gemini":
        trace.skipped.append(Skipped(where, f"a message of unknown type {kind!r}"))
        return
    message = TraceMessage("assistant", text, where=where)
    if isinstance(item.get("model"), str):
        message.model = item["model"]
        trace.model = trace.model or item["model"]
    tokens = obj(item.get("tokens"))
    if tokens:
        message.usage = TraceUsage(
            input_tokens=int_or_none(tokens.get("input")),
            output_tokens=int_or_none(tokens.get("output")),
            cache_read_tokens=int_or_none(tokens.get("cached")),
        )
    calls = item.get("toolCalls")
    results = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            trace.skipped.append(Skipped(where, "a tool call with no name"))
            continue
        made = tool_call(call.get("id"), call["name"], call.get("args"))
        message.tool_calls.append(made)
        results.append(
            TraceMessage("tool", _result(call), tool_call_id=made.id, tool_name=made.name,
                         is_error=call.get("status") == "error", where=where)
        )  # fmt: skip
    trace.messages.append(message)
    trace.messages.extend(results)


def _result(call: dict[str, Any]) -> str:
    """A call's result: the `functionResponse` parts' output (or error), else what the CLI
    displayed."""
    texts = []
    parts = call.get("result")
    for part in parts if isinstance(parts, list) else [parts]:
        response = obj(obj(obj(part).get("functionResponse")).get("response"))
        value = response.get("output", response.get("error"))
        if isinstance(value, str):
            texts.append(value)
        elif value is not None:
            texts.append(json.dumps(value))
    if texts:
        return "\n".join(texts)
    return content_text(call.get("resultDisplay"))
