"""Rows of the harness tables: a message as a row and back, a step's rows as one batch, and
text made storable on the way in."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, NotRequired, TypedDict

from harness.messages import Message, ToolCall
from harness.store.schema import COLUMN_NAMES, JSON_COLUMNS, now


class RunStart(TypedDict):
    """What a `runs` row starts with: the keyword arguments of `Store.start_run` (and of
    `RunStore.start_run`, `Runs.start`), spelled once for the three."""

    run_id: str
    thread_id: str
    agent: str
    model: str
    strategy: str | None
    parent_run_id: NotRequired[str | None]
    parent_step: NotRequired[int | None]
    # The run's configuration, or its JSON (a caller that writes the same config every run).
    config: NotRequired[dict[str, Any] | str | None]


# -- text DuckDB can store --------------------------------------------------------------------
# A lone surrogate (from `"\ud800"` in JSON, or bytes decoded with errors="surrogateescape") has
# no UTF-8 form: DuckDB refuses the whole row, and with it the step. Text is made storable at the
# write boundary instead, each lone surrogate becoming U+FFFD, and the caller is told how many.

_SURROGATE = re.compile("[\ud800-\udfff]")
# A surrogate written as a JSON escape: DuckDB's JSON type refuses lone ones too.
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def storable_text(text: str) -> tuple[str, int]:
    """`text` with each lone surrogate replaced by U+FFFD, and how many were replaced."""
    if text.isascii():
        return text, 0
    return _SURROGATE.subn("\ufffd", text)


def storable_value(value: Any) -> tuple[Any, int]:
    """`value` (text, or JSON-like data: dicts, lists, tuples) with every string in it, keys
    included, made storable; and how many surrogates were replaced."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        total = 0
        for key, item in value.items():
            key, n = storable_value(key)
            out[key], m = storable_value(item)
            total += n + m
        return (out, total) if total else (value, 0)
    if isinstance(value, list | tuple):
        pairs = [storable_value(item) for item in value]
        total = sum(n for _, n in pairs)
        if not total:
            return value, 0
        items = [item for item, _ in pairs]
        return (tuple(items) if isinstance(value, tuple) else items), total
    return value, 0


def storable_json(text: str) -> tuple[str, int]:
    """JSON text made storable: raw lone surrogates, and lone ones written as escapes."""
    text, n = storable_text(text)
    if "\\u" not in text or not _ESCAPED_SURROGATE.search(text):
        return text, n
    try:
        value = json.loads(text)
    except ValueError:
        return text, n  # not JSON after all: DuckDB will say what is wrong with it
    value, m = storable_value(value)
    return (json.dumps(value, ensure_ascii=False), n + m) if m else (text, n)


def config_json(config: dict[str, Any] | str | None) -> str:
    """A run's config (`RunStart.config`) as its `runs` row stores it: JSON, made storable."""
    text = config if isinstance(config, str) else json.dumps(config or {}, default=str)
    return storable_json(text)[0]


def storable_row(table: str, row: tuple[Any, ...]) -> tuple[tuple[Any, ...], dict[str, int]]:
    """A step-table row made storable, and the surrogates replaced per column name."""
    # Nearly every row is plain: one pass finds the columns that may need a repair.
    suspect = [
        i
        for i, value in enumerate(row)
        if isinstance(value, str) and not (value.isascii() and "\\u" not in value)
    ]
    if not suspect:
        return row, {}
    names = COLUMN_NAMES.get(table, ())
    fixed: list[Any] | None = None
    repairs: dict[str, int] = {}
    for i in suspect:
        value = row[i]
        name = names[i] if i < len(names) else str(i)
        clean, n = storable_json(value) if name in JSON_COLUMNS else storable_text(value)
        if n:
            fixed = fixed if fixed is not None else list(row)
            fixed[i] = clean
            repairs[name] = n
    return (tuple(fixed) if fixed is not None else row), repairs


def storable_message(message: Message) -> tuple[Message, dict[str, int]]:
    """`message` with every text in it made storable (the same id, so it stays the same
    message), and the surrogates replaced per field."""
    if not message.meta and not message.tool_calls:
        # Most messages are plain text: ASCII has no surrogate to replace.
        texts = (message.content, message.full_content, message.name, message.tool_call_id)
        if all(not isinstance(t, str) or t.isascii() for t in texts):
            return message, {}
    repairs: dict[str, int] = {}
    changes: dict[str, Any] = {}
    for name in ("content", "full_content", "name", "tool_call_id", "meta"):
        value, n = storable_value(getattr(message, name))
        if n:
            changes[name], repairs[name] = value, n
    calls = []
    for c in message.tool_calls:
        (call_id, name, arguments, raw), n = storable_value(
            (c.id, c.name, c.arguments, c.raw_arguments)
        )
        calls.append(ToolCall(call_id, name, arguments, raw) if n else c)
        if n:
            repairs["tool_calls"] = repairs.get("tool_calls", 0) + n
    if "tool_calls" in repairs:
        changes["tool_calls"] = tuple(calls)
    return (replace(message, **changes), repairs) if changes else (message, {})


@dataclass
class StepBatch:
    """Rows one step produced, written together in one transaction. Rows are made storable as
    they are added; `repairs` says where text had to be changed (see `storable_row`)."""

    rows: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    repairs: list[dict[str, Any]] = field(default_factory=list)

    def add(self, table: str, row: tuple[Any, ...]) -> None:
        row, repaired = storable_row(table, row)
        if repaired:
            where: dict[str, Any] = {"table": table, "replaced": repaired}
            names = COLUMN_NAMES.get(table, ())
            for key in ("message_id", "role", "tool_call_id", "step"):
                if key in names:
                    where[key] = row[names.index(key)]
            self.repairs.append(where)
        self.rows.setdefault(table, []).append(row)

    def __bool__(self) -> bool:
        return any(self.rows.values())


def message_row(
    msg: Message, *, thread_id: str, seq: int, run_id: str, step: int, tokens: int | None
) -> tuple[Any, ...]:
    calls = (
        json.dumps([{"id": c.id, "name": c.name, "arguments": c.arguments} for c in msg.tool_calls])
        if msg.tool_calls
        else None
    )
    return (
        thread_id, seq, run_id, step, msg.id, msg.role, msg.kind, msg.content, msg.full_content,
        calls, msg.tool_call_id, msg.name, msg.is_error, tokens,
        json.dumps(msg.meta, default=str) if msg.meta else None, now(), msg.full_ref,
    )  # fmt: skip


def row_to_message(row: dict[str, Any]) -> Message:
    calls = tuple(
        ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"])
        for c in json.loads(row["tool_calls"] or "[]")
    )
    return Message(
        role=row["role"],
        content=row["content"],
        tool_calls=calls,
        tool_call_id=row["tool_call_id"],
        name=row["name"],
        is_error=bool(row["is_error"]),
        id=row["message_id"],
        kind=row["kind"],
        full_content=row["full_content"],
        meta=json.loads(row["meta"]) if row["meta"] else {},
        full_ref=row.get("full_ref"),  # absent from stores before schema v5
    )
