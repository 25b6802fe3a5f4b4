"""LangSmith run exports: JSONL one run a line, a JSON array of runs, or `{"runs": [...]}`.

A run has `id, run_type, trace_id, dotted_order, parent_run_id, inputs, outputs, extra`.
Runs are grouped into threads by their metadata (`extra.metadata` `session_id`, `thread_id`
or `conversation_id`; a run without it takes its trace's, else its trace is the thread) and
ordered by `dotted_order`. Only `llm` runs make the trace: an `llm` run's `inputs.messages`
is exactly what the model received after the harness's middleware, and its reply is
`outputs.generations[0][0].message` (or a Chat `choices[0].message`). Each call's input is
matched against what the previous call saw plus its reply: where it extends it, the new
messages are the conversation's next ones; where it does not, the harness rewrote its
context, a `Compaction` records it with the messages that replaced the old ones (the
summary), how many recent ones it kept verbatim, and the tokens before and after.

Runs are reduced as they are read, and a message repeated across calls is held once per
thread, so an export of many calls whose inputs repeat the history stays small in memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.sources.formats.langchain import TYPES, is_summary, to_message, unwrap
from evals.sources.formats.records import read_records
from evals.sources.formats.source import int_or_none, obj
from evals.sources.trace import Compaction, Skipped, Trace, TraceMessage, TraceUsage, Where

NAME = "langsmith"
THREAD_KEYS = ("session_id", "thread_id", "conversation_id")
Key = tuple[Any, ...]


@dataclass
class Call:
    """One model call, reduced: its input as keys into the file's messages, its reply.
    `order` sorts a thread's calls; `trace` and `thread` group them."""

    order: str
    trace: str
    thread: str | None
    inputs: list[Key]
    summaries: set[Key]
    reply: TraceMessage
    where: Where


def key(message: TraceMessage) -> Key:
    """What makes two messages the same message in two calls' inputs."""
    calls = tuple((c.id, c.name, repr(sorted(c.arguments.items()))) for c in message.tool_calls)
    return (message.role, message.text, calls, message.tool_call_id)


class Messages:
    """Each distinct message once, however many calls' inputs hold it: `add` returns the key
    every later copy shares, so a call's input holds references to one text, not copies."""

    def __init__(self) -> None:
        self._by_key: dict[Key, tuple[Key, TraceMessage]] = {}

    def add(self, message: TraceMessage) -> Key:
        k = key(message)
        return self._by_key.setdefault(k, (k, message))[0]

    def __getitem__(self, k: Key) -> TraceMessage:
        return self._by_key[k][1]


def is_run(value: Any) -> bool:
    return isinstance(value, dict) and "run_type" in value


def _runs(path: Path, skipped: list[Skipped]) -> Iterator[tuple[Any, Where]]:
    for rec in read_records(path, skipped):
        value = rec.value
        if isinstance(value, dict) and isinstance(value.get("runs"), list):
            for n, run in enumerate(value["runs"]):
                yield run, rec.where_at("runs", n)
        elif isinstance(value, list):
            for n, run in enumerate(value):
                yield run, rec.where_at(n)
        else:
            yield value, rec.where


def read(path: Path) -> Iterator[Trace]:
    skipped: list[Skipped] = []
    messages = Messages()
    trace_thread: dict[str, str] = {}  # a trace id -> the thread its runs' metadata names
    calls: list[Call] = []
    for run, where in _runs(path, skipped):
        if not is_run(run):
            skipped.append(Skipped(where, "not a LangSmith run (no run_type)"))
            continue
        thread = _thread_of(run)
        trace = str(run.get("trace_id") or run.get("id") or where)
        if thread is not None:
            trace_thread.setdefault(trace, thread)
        if run.get("run_type") == "llm":
            call = _reduce(run, where, messages, skipped)
            if call is not None:
                call.trace, call.thread = trace, thread
                calls.append(call)
    threads: dict[str, list[Call]] = {}
    for call in calls:
        name = call.thread or trace_thread.get(call.trace) or call.trace
        threads.setdefault(name, []).append(call)
    for n, (name, own) in enumerate(threads.items()):
        out = Trace(name, NAME, str(path), skipped=[] if n else skipped)
        fill_from_calls(out, own, messages)
        yield out
    if not threads:
        yield Trace(path.stem, NAME, str(path), skipped=skipped or [
            Skipped(Where(str(path)), "no llm runs")
        ])  # fmt: skip


def _thread_of(run: dict[str, Any]) -> str | None:
    meta = obj(obj(run.get("extra")).get("metadata"))
    for scope in (meta, obj(run.get("metadata"))):
        for name in THREAD_KEYS:
            if isinstance(scope.get(name), str | int) and str(scope[name]):
                return str(scope[name])
    return None


def _reduce(
    run: dict[str, Any], where: Where, messages: Messages, skipped: list[Skipped]
) -> Call | None:
    inputs = obj(run.get("inputs")).get("messages")
    if isinstance(inputs, list) and inputs and isinstance(inputs[0], list):
        inputs = inputs[0]  # a batch of prompts: the first is the call's
    if not isinstance(inputs, list):
        blob = "inputs_s3_urls" in run or "s3_urls" in obj(run.get("inputs"))
        why = (
            "whose inputs are a stored blob, not in the export"
            if blob
            else "with no inputs.messages"
        )
        skipped.append(Skipped(where, f"an llm run {why}"))
        return None
    keys: list[Key] = []
    summaries: set[Key] = set()
    for raw in inputs:
        found = unwrap(raw)
        if found is None or found[0] not in TYPES:
            skipped.append(Skipped(where, f"an input that is no message: {raw!r:.40}"))
            continue
        message = to_message(str(found[0]), found[1], where, skipped)
        k = messages.add(message)
        keys.append(k)
        if is_summary(found[1]):
            summaries.add(k)
    reply = _reply(run, where, skipped)
    if reply is None:
        return None
    order = run.get("dotted_order") or run.get("start_time") or ""
    return Call(str(order), "", None, keys, summaries, reply, where)


def _reply(run: dict[str, Any], where: Where, skipped: list[Skipped]) -> TraceMessage | None:
    outputs = obj(run.get("outputs"))
    generations = outputs.get("generations")
    raw: Any = None
    if isinstance(generations, list) and generations:
        first = (
            generations[0][0]
            if isinstance(generations[0], list) and generations[0]
            else generations[0]
        )
        first = obj(first)
        raw = first.get("message") or {"type": "ai", "content": first.get("text", "")}
    elif isinstance(outputs.get("choices"), list) and outputs["choices"]:
        raw = obj(outputs["choices"][0]).get("message")
    elif outputs.get("type") or outputs.get("lc"):
        raw = outputs
    found = unwrap(raw)
    if found is None or TYPES.get(str(found[0])) != "assistant":
        skipped.append(Skipped(where, "an llm run with no reply in outputs"))
        return None
    reply = to_message(str(found[0]), found[1], where, skipped)
    if reply.usage is None:
        token_usage = obj(obj(outputs.get("llm_output")).get("token_usage"))
        reply.usage = TraceUsage(
            input_tokens=int_or_none(run.get("prompt_tokens", token_usage.get("prompt_tokens"))),
            output_tokens=int_or_none(
                run.get("completion_tokens", token_usage.get("completion_tokens"))
            ),
        )
        if reply.usage.input_tokens is None and reply.usage.output_tokens is None:
            reply.usage = None
    extra = obj(run.get("extra"))
    params = obj(extra.get("invocation_params"))
    model = params.get(
        "model", params.get("model_name", obj(extra.get("metadata")).get("ls_model_name"))
    )
    reply.model = reply.model or (model if isinstance(model, str) else None)
    return reply


def fill_from_calls(trace: Trace, calls: list[Call], messages: Messages) -> None:
    """Model calls, in `order`, as one conversation (see the module docstring): each call's
    input and reply, a `Compaction` where an input does not extend the one before; the system
    prompt is the first call's. Inspect's model events are read the same way."""
    seen: list[Key] = []  # what the previous call saw but its system prompt, and its reply
    last_tokens: int | None = None
    for n, call in enumerate(sorted(calls, key=lambda c: c.order)):
        inputs = [k for k in call.inputs if k[0] != "system"]
        if n == 0:
            trace.system = "\n\n".join(k[1] for k in call.inputs if k[0] == "system" and k[1])
            new = inputs
        elif inputs[: len(seen)] == seen:
            new = inputs[len(seen) :]
        else:
            new = _compacted(trace, messages, seen, inputs, call, last_tokens)
        trace.messages.extend(_copy(messages[k], call.where) for k in new)
        trace.messages.append(call.reply)
        trace.model = trace.model or call.reply.model
        seen = [*inputs, key(call.reply)]
        usage = call.reply.usage
        if usage is not None and usage.input_tokens is not None:
            last_tokens = usage.input_tokens + (usage.output_tokens or 0)


def _compacted(
    trace: Trace,
    messages: Messages,
    seen: list[Key],
    inputs: list[Key],
    call: Call,
    last_tokens: int | None,
) -> list[Key]:
    """A call whose input does not extend the last one: a `Compaction` before its new
    messages, and those new messages. The summary is what the input has before the longest
    run of the old context it kept (old messages it left as they were included); with none
    kept, everything before its newest non-assistant messages (a deepagents summary message
    is a summary wherever it sits)."""
    start, kept = len(inputs), 0  # the longest end of `seen` that `inputs` holds unbroken
    for end in range(len(inputs)):
        n = 0
        while n <= end and n < len(seen) and inputs[end - n] == seen[-1 - n]:
            n += 1
        if n > kept:
            start, kept = end - n + 1, n
    if kept:
        summary, new = inputs[:start], inputs[start + kept :]
    else:
        cut = len(inputs)
        while (
            cut > 0 and inputs[cut - 1][0] != "assistant" and inputs[cut - 1] not in call.summaries
        ):
            cut -= 1
        summary, new = inputs[:cut], inputs[cut:]
    # All of it, old messages too: an edit that cleared one result keeps the rest as they were.
    texts = [messages[k].text for k in summary]
    usage = call.reply.usage
    trace.compactions.append(
        Compaction(
            len(trace.messages),
            "\n\n".join(t for t in texts if t),
            call.where,
            tokens_before=last_tokens,
            tokens_after=usage.input_tokens if usage is not None else None,
            kept=kept,
        )
    )
    return new


def _copy(message: TraceMessage, where: Where) -> TraceMessage:
    """A fresh message (the thread holds one per key; `finish` edits messages in place)."""
    return TraceMessage(
        message.role,
        message.text,
        [type(c)(c.id, c.name, dict(c.arguments), c.raw_arguments) for c in message.tool_calls],
        message.tool_call_id,
        message.tool_name,
        message.is_error,
        message.usage,
        message.model,
        where,
    )
