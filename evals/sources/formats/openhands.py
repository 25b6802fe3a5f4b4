"""OpenHands trajectories (v0): a JSON list of events `{id, timestamp, source, message,
action | observation, args, content, extras, cause, tool_call_metadata}`, or an object
holding them under `history`/`events`/`trajectory`.

A `system` action is the system prompt; a `message` action is the user's words or the
agent's (by `source`); the agent's other actions (`run`, `read`, `edit`, `browse`, ...) are
tool calls, named and numbered by `tool_call_metadata` (`function_name`, `tool_call_id`) where
the event has it, else by the action and its id; actions of one model response (its
`model_response.id`) make one assistant message, whose usage is the response's. An
observation answers the action its `cause` names (`error` observations are failures);
`finish` is the final answer; a `condensation` action is OpenHands's own compaction (its
`summary`). State changes, recalls and other bookkeeping events are left out.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals.sources.formats.source import (
    content_text,
    conversations,
    numbered,
    obj,
    tool_call,
    trace_id,
    usage_of,
)
from evals.sources.trace import Compaction, Skipped, Trace, TraceMessage, Where

NAME = "openhands"
SILENT = ("recall", "change_agent_state", "null", "agent_state_changed", "condensation_request")
# Fields of an action's args that are OpenHands's own, not what the model passed.
INTERNAL = ("thought", "confirmation_state", "security_risk", "is_input", "blocking", "hidden",
            "is_confirmed", "impl_source", "wait_for_response")  # fmt: skip


def is_event(value: Any) -> bool:
    return isinstance(value, dict) and ("action" in value or "observation" in value)


def read(path: Path) -> Iterator[Trace]:
    skipped: list[Skipped] = []
    convs = conversations(path, skipped, is_event, ("history", "events", "trajectory"))
    for conv, number, several in numbered(convs):
        trace = Trace(trace_id(path, conv.record, number, several), NAME, str(path))
        trace.skipped.extend(skipped)
        skipped.clear()
        calls: dict[str, str] = {}  # an action's id -> the id of the call it made
        response: tuple[str, TraceMessage] | None = None  # the open model response
        for raw, where in zip(conv.items, conv.wheres, strict=True):
            if not is_event(raw):
                trace.skipped.append(Skipped(where, "not an OpenHands event"))
                continue
            if "observation" in raw:
                _observation(trace, raw, where, calls)
                continue
            response = _action(trace, raw, where, calls, response)
        yield trace
    if skipped:
        yield Trace(path.stem, NAME, str(path), skipped=skipped)


def _action(
    trace: Trace,
    raw: dict[str, Any],
    where: Where,
    calls: dict[str, str],
    response: tuple[str, TraceMessage] | None,
) -> tuple[str, TraceMessage] | None:
    kind, args = raw.get("action"), obj(raw.get("args"))
    agent = raw.get("source") == "agent"
    text = content_text(args.get("content", raw.get("message")))
    if kind in SILENT:
        return response
    if kind == "system":
        trace.system = "\n\n".join(t for t in (trace.system, text) if t)
    elif kind == "condensation":
        given = args.get("summary")
        summary = given if isinstance(given, str) else ""
        trace.compactions.append(Compaction(len(trace.messages), summary, where))
    elif kind == "message" and not agent:
        trace.messages.append(TraceMessage("user", text, where=where))
    elif kind == "message" or kind == "finish":
        final = args.get("final_thought", args.get("outputs")) if kind == "finish" else None
        words = text or content_text(final) or content_text(args.get("thought"))
        trace.messages.append(TraceMessage("assistant", words, where=where))
    elif agent and isinstance(kind, str):
        meta = obj(raw.get("tool_call_metadata"))
        model = obj(meta.get("model_response"))
        name = meta.get("function_name") if isinstance(meta.get("function_name"), str) else kind
        cid = str(meta.get("tool_call_id") or f"action-{raw.get('id')}")
        calls[str(raw.get("id"))] = cid
        arguments = {k: v for k, v in args.items() if k not in INTERNAL}
        call = tool_call(cid, name, _model_arguments(model, cid) or arguments)
        rid = str(model.get("id") or "")
        if response is not None and rid and response[0] == rid:
            response[1].tool_calls.append(call)
            return response
        thought = content_text(args.get("thought")) or content_text(raw.get("message"))
        message = TraceMessage("assistant", thought, [call], usage=usage_of(model.get("usage")),
                               where=where)  # fmt: skip
        if isinstance(model.get("model"), str):
            message.model = model["model"]
            trace.model = trace.model or model["model"]
        trace.messages.append(message)
        return (rid, message) if rid else None
    else:
        trace.skipped.append(Skipped(where, f"an action of unknown kind {kind!r}"))
    return None


def _model_arguments(model: dict[str, Any], cid: str) -> Any:
    """The arguments the model itself wrote for call `cid`, in its response (Chat shape)."""
    choices = model.get("choices")
    first = obj(choices[0]) if isinstance(choices, list) and choices else {}
    listed = obj(first.get("message")).get("tool_calls")
    for call in listed if isinstance(listed, list) else []:
        if isinstance(call, dict) and str(call.get("id")) == cid:
            return obj(call.get("function")).get("arguments")
    return None


def _observation(trace: Trace, raw: dict[str, Any], where: Where, calls: dict[str, str]) -> None:
    kind = raw.get("observation")
    if kind in SILENT or raw.get("cause") is None:
        return  # a state change, or a message the user sees: no call's result
    meta = obj(raw.get("tool_call_metadata"))
    cid = meta.get("tool_call_id") or calls.get(str(raw.get("cause")))
    if cid is None:
        trace.skipped.append(Skipped(where, f"an observation of no action ({raw.get('cause')!r})"))
        return
    trace.messages.append(
        TraceMessage(
            "tool",
            content_text(raw.get("content")),
            tool_call_id=str(cid),
            is_error=kind == "error",
            where=where,
        )  # fmt: skip
    )
