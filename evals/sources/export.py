"""A ctxlab run written in another harness's trace format (`ctxlab export`), so users can take
their runs elsewhere and an export read back by `read_traces` is the same conversation.

`run_trace` reads a run's thread from the store (through its named queries) as a `Trace`;
`export_trace` writes a `Trace` as OpenAI Chat (`{"messages", "tools"}`), Anthropic Messages
(`{"system", "messages", "tools"}`, tool results as `tool_result` blocks of a user message)
or OTLP JSON with GenAI spans (one `chat` span per model call, its input the messages
before it, its output the call's message, in the current `gen_ai.input.messages`
convention; tool results after the last call have no span to carry them)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from evals.sources.redact import Redactor
from evals.sources.trace import Trace, TraceMessage, TraceToolCall

EXPORT_FORMATS = ("openai-chat", "anthropic", "otel-genai", "langchain")


def run_trace(db: str, run_id: str) -> Trace:
    """The thread of `run_id` (a run, session or thread id) in the store `db` as a `Trace`
    (thread_trace.py). Raises `RunNotFoundError` when the store has no such run."""
    from evals.errors import RunNotFoundError
    from evals.sources.thread_trace import resolve, thread_trace
    from harness.store import read_store

    if not Path(db).is_file():
        raise RunNotFoundError(f"no store at {db}")
    con = read_store(db)
    try:
        thread_id, first = resolve(con, run_id, None)
        return thread_trace(con, thread_id, first, db)
    finally:
        con.close()


def export_trace(trace: Trace, format: str, *, redact: bool = True) -> str:
    """`trace` as the text of a file in `format` (one of `EXPORT_FORMATS`), every string
    passed through the import's `Redactor` unless `redact` is False: an export is meant to be
    shared."""
    if format == "openai-chat":
        doc = to_openai_chat(trace)
    elif format == "anthropic":
        doc = to_anthropic(trace)
    elif format == "otel-genai":
        doc = to_otel_genai(trace)
    elif format == "langchain":
        doc = to_langchain(trace)
    else:
        raise ValueError(f"unknown export format {format!r}; choose {', '.join(EXPORT_FORMATS)}")
    if redact:
        redactor = Redactor()
        redactor.learn(doc)
        doc = redactor.value(doc)
    return json.dumps(doc, ensure_ascii=False, indent=1) + "\n"


def _arguments(call: TraceToolCall) -> str:
    return call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments)


def to_openai_chat(trace: Trace) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if trace.system:
        messages.append({"role": "system", "content": trace.system})
    for m in trace.messages:
        item: dict[str, Any] = {"role": m.role, "content": m.text}
        if m.tool_calls:
            item["tool_calls"] = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": _arguments(c)}}
                for c in m.tool_calls
            ]  # fmt: skip
        if m.role == "tool":
            item["tool_call_id"] = m.tool_call_id
            if m.tool_name:
                item["name"] = m.tool_name
        messages.append(item)
    doc: dict[str, Any] = {"model": trace.model, "messages": messages}
    if trace.tools:
        doc["tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": t.parameters}}
            for t in trace.tools
        ]  # fmt: skip
    return doc


def to_anthropic(trace: Trace) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for m in trace.messages:
        if m.role == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m.text}] if m.text else []
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                for c in m.tool_calls
            ]
            messages.append({"role": "assistant", "content": blocks})
            continue
        if m.role == "tool":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": m.tool_call_id,
                "content": m.text,
            }
            if m.is_error:
                block["is_error"] = True
        else:  # user (a system message inside the conversation has no place: it goes as user)
            block = {"type": "text", "text": m.text}
        last = messages[-1] if messages else None
        if last is not None and last["role"] == "user" and m.role == "tool":
            last["content"].append(block)  # the results of one turn in one user message
        else:
            messages.append({"role": "user", "content": [block]})
    doc: dict[str, Any] = {"model": trace.model, "system": trace.system, "messages": messages}
    if trace.tools:
        doc["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in trace.tools
        ]
    return doc


def _lc(kind: str, **kwargs: Any) -> dict[str, Any]:
    """A message as `langchain_core`'s `dumpd` serializes it."""
    return {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", kind],
            "kwargs": {**kwargs, "type": _LC_TYPES[kind]}}  # fmt: skip


_LC_TYPES = {"SystemMessage": "system", "HumanMessage": "human", "AIMessage": "ai",
             "ToolMessage": "tool"}  # fmt: skip


def to_langchain(trace: Trace) -> dict[str, Any]:
    """LangChain messages as serialized constructors, in a graph state's `{"messages"}`: a
    call's arguments in `tool_calls`, or in `invalid_tool_calls` when they were no JSON
    object; a failed tool's result `status: "error"`; usage as `usage_metadata`."""
    messages = [_lc("SystemMessage", content=trace.system)] if trace.system else []
    for m in trace.messages:
        if m.role == "tool":
            extra = {"name": m.tool_name} if m.tool_name else {}
            messages.append(_lc("ToolMessage", content=m.text, tool_call_id=m.tool_call_id,
                                status="error" if m.is_error else "success", **extra))  # fmt: skip
        elif m.role == "assistant":
            kwargs: dict[str, Any] = {
                "content": m.text,
                "tool_calls": [{"name": c.name, "args": c.arguments, "id": c.id,
                                "type": "tool_call"}
                               for c in m.tool_calls if c.raw_arguments is None],
                "invalid_tool_calls": [{"name": c.name, "args": c.raw_arguments, "id": c.id,
                                        "error": None, "type": "invalid_tool_call"}
                                       for c in m.tool_calls if c.raw_arguments is not None],
            }  # fmt: skip
            if m.usage is not None and m.usage.input_tokens is not None:
                kwargs["usage_metadata"] = {
                    "input_tokens": m.usage.input_tokens,
                    "output_tokens": m.usage.output_tokens or 0,
                    "total_tokens": m.usage.input_tokens + (m.usage.output_tokens or 0),
                }
            if m.model:
                kwargs["response_metadata"] = {"model_name": m.model}
            messages.append(_lc("AIMessage", **kwargs))
        else:
            kind = "SystemMessage" if m.role == "system" else "HumanMessage"
            messages.append(_lc(kind, content=m.text))
    doc: dict[str, Any] = {"messages": messages}
    if trace.tools:
        doc["tools"] = [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in trace.tools
        ]
    return doc


def _otel_message(m: TraceMessage) -> dict[str, Any]:
    if m.role == "tool":
        return {"role": "tool", "parts": [
            {"type": "tool_call_response", "id": m.tool_call_id, "response": m.text}
        ]}  # fmt: skip
    parts: list[dict[str, Any]] = [{"type": "text", "content": m.text}] if m.text else []
    parts += [
        {"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments}
        for c in m.tool_calls
    ]
    return {"role": m.role, "parts": parts}


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, int) and not isinstance(value, bool):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def to_otel_genai(trace: Trace) -> dict[str, Any]:
    trace_id = hashlib.sha256(trace.id.encode()).hexdigest()[:32]  # the same id each export
    root = "0" * 15 + "1"
    start = 1_700_000_000_000_000_000
    spans: list[dict[str, Any]] = [{
        "traceId": trace_id, "spanId": root, "name": "invoke_agent ctxlab",
        "startTimeUnixNano": str(start),
        "attributes": [_attr("gen_ai.operation.name", "invoke_agent"),
                       _attr("gen_ai.agent.name", "ctxlab")],
    }]  # fmt: skip
    system = [{"type": "text", "content": trace.system}] if trace.system else []
    for i, m in enumerate(trace.messages):
        if m.role != "assistant":
            continue
        attrs = [
            _attr("gen_ai.operation.name", "chat"),
            _attr(
                "gen_ai.input.messages", json.dumps([_otel_message(p) for p in trace.messages[:i]])
            ),
            _attr("gen_ai.output.messages", json.dumps([_otel_message(m)])),
        ]
        if system:
            attrs.append(_attr("gen_ai.system_instructions", json.dumps(system)))
        if m.model or trace.model:
            attrs.append(_attr("gen_ai.request.model", m.model or trace.model))
        if m.usage is not None:
            for key, value in (("input_tokens", m.usage.input_tokens),
                               ("output_tokens", m.usage.output_tokens)):  # fmt: skip
                if value is not None:
                    attrs.append(_attr(f"gen_ai.usage.{key}", value))
        spans.append({
            "traceId": trace_id, "spanId": f"{i + 2:016x}", "parentSpanId": root,
            "name": f"chat {m.model or trace.model or ''}".strip(),
            "startTimeUnixNano": str(start + (i + 1) * 1_000_000), "attributes": attrs,
        })  # fmt: skip
    return {"resourceSpans": [{
        "resource": {"attributes": [_attr("service.name", "ctxlab")]},
        "scopeSpans": [{"scope": {"name": "ctxlab.export"}, "spans": spans}],
    }]}  # fmt: skip


def write_text(text: str, out: Path, *, force: bool = False) -> Path:
    """Writes `text` to `out` all at once (a temporary file beside it takes the name), never
    over an existing file unless `force`. Raises `FileExistsError`."""
    import os
    import tempfile

    from evals.sources.thread_import import take_name

    if out.exists() and not force:
        raise FileExistsError(f"{out} exists: pass --force to overwrite it")
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        take_name(tmp, out, force)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out
