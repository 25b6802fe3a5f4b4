"""OpenTelemetry GenAI spans exported as OTLP JSON (`resourceSpans[].scopeSpans[].spans[]`),
one trace per trace id, spans in start-time order.

A `chat` span's messages come in either convention: the attributes `gen_ai.input.messages`,
`gen_ai.output.messages` and `gen_ai.system_instructions` (JSON, messages of `parts`), or the
older events `gen_ai.system.message`, `gen_ai.user.message`, `gen_ai.assistant.message`,
`gen_ai.tool.message` and `gen_ai.choice` (also the flat `gen_ai.prompt.N.*` /
`gen_ai.completion.N.*` attributes, calls included). Instrumentations also write Chat
messages (`content`, `tool_calls`) or plain text in `gen_ai.input/output.messages`, the
Vercel AI SDK its own `ai.prompt.messages` / `ai.response.*`, and OpenInference (Phoenix)
`llm.input_messages.N.message.*` / `llm.output_messages.N.message.*`: read too. Each call's input
repeats the history, so only what is
new since the previous call is added; an input shorter than the history is a compaction.
Where no chat span carries messages, `execute_tool` spans (`gen_ai.tool.call.id`, `.name`,
`.arguments`, `.result`) give the calls and results. `gen_ai.usage.*` is each call's usage.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals.sources.formats.records import read_records
from evals.sources.formats.source import content_text, int_or_none, obj, tool_call
from evals.sources.trace import Compaction, Role, Skipped, Trace, TraceMessage, TraceUsage, Where

NAME = "otel-genai"
ROLES: dict[str, Role] = {
    "system": "system", "developer": "system", "user": "user", "assistant": "assistant",
    "tool": "tool", "model": "assistant",
}  # fmt: skip


def read(path: Path) -> Iterator[Trace]:
    skipped: list[Skipped] = []
    spans: dict[str, list[tuple[int, dict[str, Any], Where]]] = {}
    for rec in read_records(path, skipped):  # one export, or JSONL of exports
        doc = rec.value if isinstance(rec.value, dict) else {}
        for resource in _objects(doc.get("resourceSpans")):
            for scope in _objects(resource.get("scopeSpans")):
                for span in _objects(scope.get("spans")):
                    start = int_or_none(span.get("startTimeUnixNano")) or 0
                    group = spans.setdefault(str(span.get("traceId")), [])
                    group.append((start, span, rec.where))
    if not spans:
        yield Trace(path.stem, NAME, str(path), skipped=skipped or [
            Skipped(Where(str(path)), "no spans under resourceSpans[].scopeSpans[]")
        ])  # fmt: skip
    for trace_id, group in spans.items():
        group.sort(key=lambda item: item[0])
        trace = Trace(trace_id, NAME, str(path), skipped=list(skipped))
        skipped.clear()
        _fill(trace, group)
        yield trace


def _objects(value: Any) -> list[dict[str, Any]]:
    """The objects of a list (an export of the wrong shape holds none)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def attributes(raw: Any) -> dict[str, Any]:
    """OTLP `[{key, value: {stringValue|intValue|...}}]` as a plain dict."""
    return {str(a.get("key")): _value(a.get("value")) for a in _objects(raw)}


def _value(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return int_or_none(value["intValue"])
    if "arrayValue" in value:
        return [_value(v) for v in value["arrayValue"].get("values") or []]
    if "kvlistValue" in value:
        return attributes(value["kvlistValue"].get("values"))
    return None


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _fill(trace: Trace, group: list[tuple[int, dict[str, Any], Where]]) -> None:
    history: list[TraceMessage] = []  # what the last call's input and output held
    tool_spans = []
    for _start, span, where in group:
        attrs = attributes(span.get("attributes"))
        op = attrs.get("gen_ai.operation.name")
        if op == "execute_tool":
            tool_spans.append((attrs, where))
            continue
        if op == "invoke_agent":
            if attrs.get("gen_ai.agent.name"):
                trace.metadata.setdefault("agent", attrs["gen_ai.agent.name"])
            continue
        inputs, outputs, system = _messages(attrs, _objects(span.get("events")), where)
        if not inputs and not outputs:
            continue
        if system:
            trace.system = system
        model = (
            attrs.get("gen_ai.response.model")
            or attrs.get("gen_ai.request.model")
            or attrs.get("ai.model.id")
            or attrs.get("llm.model_name")
        )
        trace.model = trace.model or model
        if len(inputs) < len(history):  # the harness dropped history: it compacted
            trace.compactions.append(Compaction(len(trace.messages), "", where))
            last = max((i for i, m in enumerate(inputs) if m.role == "assistant"), default=-1)
            new = inputs[last + 1 :]
        else:
            new = inputs[len(history) :]
        usage = TraceUsage(
            input_tokens=int_or_none(_first(attrs, "gen_ai.usage.input_tokens",
                                            "gen_ai.usage.prompt_tokens",
                                            "ai.usage.inputTokens", "ai.usage.promptTokens",
                                            "llm.token_count.prompt")),
            output_tokens=int_or_none(_first(attrs, "gen_ai.usage.output_tokens",
                                             "gen_ai.usage.completion_tokens",
                                             "ai.usage.outputTokens", "ai.usage.completionTokens",
                                             "llm.token_count.completion")),
            cache_read_tokens=int_or_none(attrs.get("gen_ai.usage.cache_read.input_tokens",
                                                    attrs.get("gen_ai.usage.cache_read_input_tokens"))),
            cache_creation_tokens=int_or_none(attrs.get("gen_ai.usage.cache_creation.input_tokens",
                                                        attrs.get("gen_ai.usage.cache_creation_input_tokens"))),
        )  # fmt: skip
        for message in outputs:
            if message.role == "assistant":
                message.usage = usage if any(vars(usage).values()) else None
                message.model = model
        trace.messages.extend(new + outputs)
        history = inputs + outputs
    if not any(m.tool_calls for m in trace.messages):
        for attrs, where in tool_spans:
            cid = str(attrs.get("gen_ai.tool.call.id") or f"tool-{len(trace.messages)}")
            name = attrs.get("gen_ai.tool.name") or "tool"
            call = tool_call(cid, name, _json(attrs.get("gen_ai.tool.call.arguments")))
            trace.messages.append(TraceMessage("assistant", tool_calls=[call], where=where))
            result = attrs.get("gen_ai.tool.call.result")
            text = result if isinstance(result, str) else json.dumps(result)
            trace.messages.append(TraceMessage("tool", text, tool_call_id=cid, where=where))


def _messages(
    attrs: dict[str, Any], events: list[Any], where: Where
) -> tuple[list[TraceMessage], list[TraceMessage], str]:
    """The span's input messages, output messages and system instructions."""
    system = ""
    if "gen_ai.input.messages" in attrs or "gen_ai.output.messages" in attrs:
        inputs = _parts_messages(_json(attrs.get("gen_ai.input.messages")), where, "user")
        outputs = _parts_messages(_json(attrs.get("gen_ai.output.messages")), where, "assistant")
        instructions = attrs.get(
            "gen_ai.system_instructions", attrs.get("gen_ai.system.instructions")
        )
        system = _parts_text(_json(instructions))
    else:
        for event in events:
            ev = attributes(event.get("attributes"))
            if "gen_ai.input.messages" in ev or "gen_ai.output.messages" in ev:
                return _messages(ev, [], where)
        inputs, outputs = _event_messages(events, where)
        if not inputs and not outputs:
            inputs, outputs = _flat_messages(attrs, where)
        if not inputs and not outputs:
            inputs, outputs = _vercel_messages(attrs, where)
        if not inputs and not outputs:
            inputs, outputs = _openinference_messages(attrs, where)
    if inputs and inputs[0].role == "system":
        system = system or inputs[0].text
    return [m for m in inputs if m.role != "system"], outputs, system


def _parts_text(parts: Any) -> str:
    if isinstance(parts, str):
        return parts
    texts = [p.get("content") for p in _objects(parts) if p.get("type") == "text"]
    return "\n".join(t for t in texts if isinstance(t, str))


def _parts_messages(raw: Any, where: Where, role: Role) -> list[TraceMessage]:
    """Messages of the current convention: `{role, parts: [text | tool_call |
    tool_call_response | ...]}`, a response part its own `tool` message. Instrumentations
    also write Chat messages (`content`, `tool_calls`), a list of JSON strings, or plain
    text: one message of `role`."""
    if isinstance(raw, str):
        return [TraceMessage(role, raw, where=where)] if raw.strip() else []
    messages: list[TraceMessage] = []
    for item in raw if isinstance(raw, list) else []:
        item = _json(item)
        if not isinstance(item, dict):
            continue
        if "parts" not in item:
            chat_role = ROLES.get(str(item.get("role")), role)
            message = _chat_message(chat_role, item, where)
            if message.text or message.tool_calls or chat_role == "tool":
                messages.append(message)
            continue
        kind = ROLES.get(str(item.get("role")), role)
        text = _parts_text(item.get("parts"))
        calls = []
        for part in _objects(item.get("parts")):
            if part.get("type") == "tool_call":
                calls.append(tool_call(part.get("id"), part.get("name"), part.get("arguments")))
            elif part.get("type") == "tool_call_response":
                response = part.get("response", part.get("result"))
                out = response if isinstance(response, str) else json.dumps(response)
                messages.append(
                    TraceMessage("tool", out, tool_call_id=str(part.get("id")), where=where)
                )
        if kind == "tool":
            continue  # its responses are above
        if text or calls:
            messages.append(TraceMessage(kind, text, calls, where=where))
    return messages


_EVENT_ROLES = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}  # fmt: skip


def _event_messages(
    events: list[Any], where: Where
) -> tuple[list[TraceMessage], list[TraceMessage]]:
    """Messages of the older convention: one span event per message, `gen_ai.choice` out."""
    inputs: list[TraceMessage] = []
    outputs: list[TraceMessage] = []
    for event in events:
        name = event.get("name") if isinstance(event, dict) else None
        ev = attributes(event.get("attributes")) if isinstance(event, dict) else {}
        body = _json(ev.get("message")) if name == "gen_ai.choice" else ev
        if name == "gen_ai.choice" and not isinstance(body, dict):
            body = {"content": ev.get("content"), "tool_calls": ev.get("tool_calls")}
        role = "assistant" if name == "gen_ai.choice" else _EVENT_ROLES.get(str(name))
        if role is None or not isinstance(body, dict):
            continue
        message = _chat_message(role, body, where)
        (outputs if name == "gen_ai.choice" else inputs).append(message)
    return inputs, outputs


def _chat_message(role: str, body: dict[str, Any], where: Where) -> TraceMessage:
    content = body.get("content")
    decoded = _json(content)  # a list of parts may come as JSON text; any other text is text
    content = decoded if isinstance(decoded, list) else content
    message = TraceMessage(role, content_text(content), where=where)  # type: ignore[arg-type]
    if role == "tool":
        message.tool_call_id = str(body.get("id") or body.get("tool_call_id"))
    for call in _objects(_json(body.get("tool_calls"))):
        if isinstance(call, dict):
            fn = obj(call.get("function"))
            message.tool_calls.append(
                tool_call(call.get("id"), fn.get("name"), fn.get("arguments"))
            )
    return message


def _flat_messages(
    attrs: dict[str, Any], where: Where
) -> tuple[list[TraceMessage], list[TraceMessage]]:
    """`gen_ai.prompt.N.*` and `gen_ai.completion.N.*` (OpenLLMetry and other early
    instrumentations): `role`, `content`, a tool message's `tool_call_id`, and each call as
    `tool_calls.M.id`, `.name`, `.arguments`."""
    found: tuple[list[TraceMessage], list[TraceMessage]] = ([], [])
    for side, prefix in enumerate(("gen_ai.prompt.", "gen_ai.completion.")):
        n = 0
        while any(
            f"{prefix}{n}.{key}" in attrs for key in ("content", "role", "tool_calls.0.name")
        ):
            at = f"{prefix}{n}."
            role = ROLES.get(str(attrs.get(f"{at}role")), "assistant" if side else "user")
            content = attrs.get(f"{at}content")
            decoded = _json(content)  # a list of parts is written as JSON text
            text = content_text(decoded if isinstance(decoded, list) else content)
            message = TraceMessage(role, text, where=where)
            if role == "tool":
                message.tool_call_id = str(attrs.get(f"{at}tool_call_id"))
            m = 0
            while f"{at}tool_calls.{m}.name" in attrs:
                call = f"{at}tool_calls.{m}."
                cid = attrs.get(f"{call}id") or f"{prefix}{n}-{m}"
                message.tool_calls.append(
                    tool_call(cid, attrs[f"{call}name"], attrs.get(f"{call}arguments"))
                )
                m += 1
            found[side].append(message)
            n += 1
    return found


def _first(attrs: dict[str, Any], *keys: str) -> Any:
    """The value of the first of `keys` that `attrs` has (None when it has none)."""
    return next((attrs[k] for k in keys if k in attrs), None)


def _vercel_messages(
    attrs: dict[str, Any], where: Where
) -> tuple[list[TraceMessage], list[TraceMessage]]:
    """Vercel AI SDK spans (`ai.generateText.doGenerate`, `ai.streamText.doStream`):
    `ai.prompt.messages` is the call's input in the SDK's own shape (content a string or
    parts `text`, `tool-call`, `tool-result`), `ai.response.text` and `ai.response.toolCalls`
    its output. The outer `ai.generateText` span repeats them without the history: not read."""
    raw = _json(attrs.get("ai.prompt.messages"))
    if not isinstance(raw, list):
        return [], []
    inputs: list[TraceMessage] = []
    for item in (_json(x) for x in raw):
        if not isinstance(item, dict):
            continue
        role = ROLES.get(str(item.get("role")), "user")
        content = item.get("content")
        if isinstance(content, str):
            inputs.append(TraceMessage(role, content, where=where))
            continue
        texts: list[str] = []
        calls = []
        for part in _objects(content):
            kind = part.get("type")
            if kind == "text":
                texts.append(str(part.get("text") or ""))
            elif kind == "tool-call":
                arguments = part.get("input", part.get("args"))
                calls.append(tool_call(part.get("toolCallId"), part.get("toolName"), arguments))
            elif kind == "tool-result":
                text = _result_text(part.get("output", part.get("result")))
                cid = str(part.get("toolCallId"))
                inputs.append(TraceMessage("tool", text, tool_call_id=cid, where=where))
            else:
                texts.append(f"[{kind}]")
        if role != "tool" and (texts or calls):
            inputs.append(TraceMessage(role, "\n".join(texts), calls, where=where))
    out = TraceMessage("assistant", str(attrs.get("ai.response.text") or ""), where=where)
    for call in _objects(_json(attrs.get("ai.response.toolCalls"))):
        arguments = call.get("input", call.get("args"))
        out.tool_calls.append(tool_call(call.get("toolCallId"), call.get("toolName"), arguments))
    return inputs, [out] if out.text or out.tool_calls else []


def _result_text(output: Any) -> str:
    """A Vercel tool result as text: v5 wraps it as `{type: "json"|"text", value}`."""
    if isinstance(output, dict) and "value" in output and output.get("type") in ("json", "text"):
        output = output["value"]
    return output if isinstance(output, str) else json.dumps(output)


def _openinference_messages(
    attrs: dict[str, Any], where: Where
) -> tuple[list[TraceMessage], list[TraceMessage]]:
    """OpenInference LLM spans (Arize Phoenix; the OpenAI Agents SDK's usual OTel route):
    `llm.input_messages.N.message.role|content|tool_call_id` and
    `....message.tool_calls.M.tool_call.id|function.name|function.arguments`, the output
    under `llm.output_messages.N`."""
    found: tuple[list[TraceMessage], list[TraceMessage]] = ([], [])
    for side, prefix in enumerate(("llm.input_messages.", "llm.output_messages.")):
        n = 0
        while f"{prefix}{n}.message.role" in attrs or f"{prefix}{n}.message.content" in attrs:
            at = f"{prefix}{n}.message."
            role = ROLES.get(str(attrs.get(f"{at}role")), "assistant" if side else "user")
            text = attrs.get(f"{at}content")
            if text is None:  # content in parts: `message.contents.K.message_content.text`
                parts = (attrs.get(f"{at}contents.{k}.message_content.text") for k in range(99))
                text = "\n".join(
                    str(p) for p in itertools.takewhile(lambda x: x is not None, parts)
                )
            message = TraceMessage(role, str(text or ""), where=where)
            if role == "tool":
                message.tool_call_id = str(attrs.get(f"{at}tool_call_id"))
            m = 0
            while f"{at}tool_calls.{m}.tool_call.function.name" in attrs:
                call = f"{at}tool_calls.{m}.tool_call."
                cid = attrs.get(f"{call}id") or f"{prefix}{n}-{m}"
                name = attrs[f"{call}function.name"]
                message.tool_calls.append(
                    tool_call(cid, name, attrs.get(f"{call}function.arguments"))
                )
                m += 1
            found[side].append(message)
            n += 1
    return found
