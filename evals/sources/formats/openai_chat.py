"""OpenAI Chat Completions messages: `system|developer|user|assistant|tool` with `tool_calls`
and `tool_call_id`, the legacy `function_call` and role `function`; content a string or a
list of parts. A file holds a list of messages, an object with `messages` (and `tools`),
JSONL one of those a line, or a JSON array of run records (`{"task_id", "reward", "info",
"traj": [...]}`) whose other fields become metadata and, where they hold expected actions
or outcomes, ground truth."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals.sources.formats.source import (
    Conversation,
    content_text,
    conversations,
    numbered,
    obj,
    tool_call,
    tool_defs,
    trace_id,
    usage_of,
)
from evals.sources.trace import (
    ExpectedAction,
    GroundTruth,
    Role,
    Skipped,
    Trace,
    TraceMessage,
)

NAME = "openai-chat"
ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
}


def is_message(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("role"), str)


def read(path: Path) -> Iterator[Trace]:
    skipped: list[Skipped] = []
    for conv, number, several in numbered(conversations(path, skipped, is_message)):
        trace = Trace(trace_id(path, conv.record, number, several), NAME, str(path))
        trace.skipped.extend(skipped)
        skipped.clear()
        fill(trace, conv)
        yield trace
    if skipped:  # a file of bad lines only: say why
        yield Trace(path.stem, NAME, str(path), skipped=skipped)


def fill(trace: Trace, conv: Conversation, *, messages_only: bool = False) -> None:
    """The conversation's messages, tools, model, metadata and ground truth into `trace`
    (with `messages_only`, only the messages: another parser fills the rest of `trace`)."""
    record = conv.record
    if not messages_only:
        trace.tools = tool_defs(record.get("tools"))
        trace.model = record.get("model") if isinstance(record.get("model"), str) else None
        trace.metadata = {k: v for k, v in record.items() if k not in ("tools", "model")}
        trace.ground_truth = ground_truth(record)
    legacy = sum(c.id.startswith("function_call_") for m in trace.messages for c in m.tool_calls)
    for raw, where in zip(conv.items, conv.wheres, strict=True):
        if not isinstance(raw, dict):
            trace.skipped.append(Skipped(where, f"a message that is not an object: {raw!r:.40}"))
            continue
        role = raw.get("role")
        if role in ("tool", "function"):
            cid = raw.get("tool_call_id", raw.get("id") if role == "tool" else None)  # tau2: `id`
            if role == "function" and cid is None:  # legacy: answers the last call by name
                cid = _open_legacy_call(trace, raw.get("name"))
            trace.messages.append(
                TraceMessage(
                    "tool",
                    content_text(raw.get("content")),
                    tool_call_id=None if cid is None else str(cid),
                    tool_name=raw.get("name"),
                    is_error=raw.get("error") is True,  # tau2 marks a failed call so
                    where=where,
                )
            )
            continue
        if not isinstance(role, str) or role not in ROLES:
            trace.skipped.append(Skipped(where, f"unknown role {role!r}"))
            continue
        text = content_text(raw.get("content"))
        if ROLES[role] == "system" and not any(m.role != "system" for m in trace.messages):
            trace.system = f"{trace.system}\n\n{text}" if trace.system else text
            continue
        usage = usage_of(raw.get("usage"))
        message = TraceMessage(ROLES[role], text, where=where, usage=usage)
        calls = raw.get("tool_calls") or []
        if not isinstance(calls, list):
            trace.skipped.append(Skipped(where, f"tool_calls that are not a list: {calls!r:.40}"))
            calls = []
        for call in calls:
            # Chat nests the name and arguments under `function`; tau2-bench writes them flat.
            fn = (obj(call.get("function")) or call) if isinstance(call, dict) else {}
            if not fn.get("name"):
                trace.skipped.append(Skipped(where, "a tool call with no function name"))
                continue
            message.tool_calls.append(tool_call(call.get("id"), fn["name"], fn.get("arguments")))
        fc = raw.get("function_call")
        if isinstance(fc, dict) and fc.get("name"):
            legacy += 1
            message.tool_calls.append(
                tool_call(f"function_call_{legacy}", fc["name"], fc.get("arguments"))
            )
        if isinstance(raw.get("model"), str):
            message.model = raw["model"]
        trace.messages.append(message)


def _open_legacy_call(trace: Trace, name: Any) -> str | None:
    """The id of the latest legacy `function_call` named `name` that no result answers yet."""
    answered = {m.tool_call_id for m in trace.messages if m.role == "tool"}
    for message in reversed(trace.messages):
        for call in message.tool_calls:
            legacy = call.id.startswith("function_call_") and call.id not in answered
            if legacy and (name is None or call.name == name):
                return call.id
    return None


OUTCOME_KEYS = ("reward", "resolved", "success", "score", "exit_status", "passed")


def ground_truth(record: dict[str, Any]) -> GroundTruth:
    """What a run record says was right: the expected actions anywhere in it (lists of
    `{"name", "kwargs"|"arguments"}`), its outcome fields, an expected answer."""
    truth = GroundTruth()
    for scope in (record, obj(record.get("info")), obj(record.get("reward_info"))):
        for key in OUTCOME_KEYS:
            value = scope.get(key)
            if isinstance(value, bool | int | float | str) and key not in truth.outcome:
                truth.outcome[key] = value
    truth.actions = _actions(record.get("info"), depth=0) or _actions(
        {k: v for k, v in record.items() if k not in ("info",)}, depth=1
    )
    outputs = _find(record.get("info"), ("outputs", "expected_answer", "answer"), 0)
    if isinstance(outputs, list) and outputs and all(isinstance(o, str) for o in outputs):
        truth.answer = "\n".join(outputs)
    elif isinstance(outputs, str) and outputs:
        truth.answer = outputs
    return truth


def _actions(value: Any, depth: int) -> list[ExpectedAction]:
    """The first list of `{"name", "kwargs"}` objects within a few levels of `value`."""
    if depth > 4:
        return []
    if isinstance(value, list) and value and all(_is_action(v) for v in value):
        return [
            ExpectedAction(str(v["name"]), dict(v.get("kwargs", v.get("arguments")) or {}))
            for v in value
        ]
    children = value.values() if isinstance(value, dict) else ()
    for child in children:
        found = _actions(child, depth + 1)
        if found:
            return found
    return []


def _is_action(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("name"), str)
        and isinstance(value.get("kwargs", value.get("arguments")), dict)
    )


def _find(value: Any, keys: tuple[str, ...], depth: int) -> Any:
    if not isinstance(value, dict) or depth > 3:
        return None
    for key in keys:
        if key in value:
            return value[key]
    for child in value.values():
        found = _find(child, keys, depth + 1)
        if found is not None:
            return found
    return None
