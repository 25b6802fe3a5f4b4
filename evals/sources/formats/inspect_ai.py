"""Inspect AI eval logs: a `.json` log (`{version, status, eval, plan, results, stats,
samples}`) or an `.eval` archive (a zip: `header.json` and `samples/<id>_epoch_<n>.json`).

Each sample is a trace. Where it has `model` events, each is a model call whose `input` is
exactly what the model was sent and whose `output.choices[0].message` is its reply: read as
LangSmith's `llm` runs are (langsmith.py), so a call whose input does not extend the one
before is a `Compaction`; a `compaction` event gives its tokens before and after (or is one
where the inputs show none). Without model events the sample's `messages` are read.
Messages: `{role, content (a string or parts), tool_calls: [{id, function, arguments}],
tool_call_id, function, error}`; usage `{input_tokens, output_tokens, input_tokens_cache_read,
input_tokens_cache_write}`.

An archive is bounded before anything is read: its number of entries, each entry's size and
compression ratio, and the total; a sample entry over the bounds is skipped and named.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals.errors import TraceFormatError
from evals.sources.formats.langsmith import Call, Messages, fill_from_calls
from evals.sources.formats.records import read_records
from evals.sources.formats.source import content_text, int_or_none, obj, tool_call
from evals.sources.trace import (
    Compaction,
    Role,
    Skipped,
    Trace,
    TraceMessage,
    TraceUsage,
    Where,
)

NAME = "inspect-ai"
ROLES: dict[str, Role] = {"system": "system", "user": "user", "assistant": "assistant",
                          "tool": "tool"}  # fmt: skip
MAX_ENTRIES = 20_000
MAX_ENTRY_BYTES = 256 * 1024 * 1024
MAX_TOTAL_BYTES = 2 * 1024 * 1024 * 1024
MAX_RATIO = 200  # uncompressed / compressed: JSON compresses ~10-30x; a bomb far more


def is_archive(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"PK\x03\x04"


def read(path: Path) -> Iterator[Trace]:
    if is_archive(path):
        yield from _archive(path)
        return
    skipped: list[Skipped] = []
    for rec in read_records(path, skipped):
        doc = rec.value
        samples = doc.get("samples") if isinstance(doc, dict) else None
        if not isinstance(samples, list):
            skipped.append(Skipped(rec.where, "an eval log with no samples"))
            continue
        for n, sample in enumerate(samples):
            yield _sample(path, sample, rec.where_at("samples", n), obj(doc.get("eval")), skipped)
            skipped = []
    if skipped:
        yield Trace(path.stem, NAME, str(path), skipped=skipped)


def _archive(path: Path) -> Iterator[Trace]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise TraceFormatError(f"{path}: not a readable .eval archive ({exc})") from None
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_ENTRIES:
            raise TraceFormatError(f"{path}: {len(infos)} entries, over {MAX_ENTRIES}: refused")
        total = sum(i.file_size for i in infos)
        if total > MAX_TOTAL_BYTES:
            raise TraceFormatError(f"{path}: {total} bytes unpacked, over {MAX_TOTAL_BYTES}")
        skipped: list[Skipped] = []
        header = _entry(archive, path, "header.json", skipped) or {}
        # Every entry's bounds first, so a refused sample is named on the first trace.
        names = [n for n in sorted(i.filename for i in infos if i.filename.startswith("samples/"))
                 if _within(archive.getinfo(n), Where(f"{path}!{n}"), skipped)]  # fmt: skip
        made = 0
        for name in names:
            sample = _entry(archive, path, name, skipped)
            if sample is None:
                continue
            made += 1
            where = Where(f"{path}!{name}")
            yield _sample(path, sample, where, obj(obj(header).get("eval")), skipped)
            skipped = []
        if skipped or not made:
            yield Trace(path.stem, NAME, str(path), skipped=skipped or [
                Skipped(Where(str(path)), "an archive with no samples/")
            ])  # fmt: skip


def _entry(
    archive: zipfile.ZipFile, path: Path, name: str, skipped: list[Skipped]
) -> dict[str, Any] | None:
    """One JSON entry of the archive, refused (and named) when over the bounds or not JSON."""
    where = Where(f"{path}!{name}")
    try:
        info = archive.getinfo(name)
    except KeyError:
        skipped.append(Skipped(where, "missing from the archive"))
        return None
    if not _within(info, where, skipped):
        return None
    try:
        with archive.open(info) as f:
            data = f.read(MAX_ENTRY_BYTES + 1)  # the header's size may lie
        if len(data) > MAX_ENTRY_BYTES:
            raise ValueError("larger than its header says")
        value = json.loads(data)
    except (ValueError, zipfile.BadZipFile, OSError, RuntimeError) as exc:
        skipped.append(Skipped(where, f"unreadable ({type(exc).__name__}: {str(exc)[:60]})"))
        return None
    if not isinstance(value, dict):
        skipped.append(Skipped(where, "not a JSON object"))
        return None
    return value


def _within(info: zipfile.ZipInfo, where: Where, skipped: list[Skipped]) -> bool:
    """Whether an entry is within the size and compression-ratio bounds (else named)."""
    ratio = info.file_size / max(info.compress_size, 1)
    if info.file_size > MAX_ENTRY_BYTES or ratio > MAX_RATIO:
        skipped.append(Skipped(where, f"{info.file_size} bytes at ratio {ratio:.0f}: refused"))
        return False
    return True


def _sample(
    path: Path, sample: Any, where: Where, info: dict[str, Any], skipped: list[Skipped]
) -> Trace:
    if not isinstance(sample, dict):
        return Trace(path.stem, NAME, str(path), skipped=[*skipped, Skipped(where, "no sample")])
    sid = f"{sample.get('id', '')}-epoch-{sample.get('epoch', 1)}"
    trace = Trace(f"{path.stem}-{sid}", NAME, str(path), skipped=skipped)
    trace.model = info.get("model") if isinstance(info.get("model"), str) else None
    trace.metadata = {k: sample[k] for k in ("id", "epoch", "target") if k in sample}
    events = [e for e in sample.get("events") or [] if isinstance(e, dict)] if isinstance(
        sample.get("events"), list) else []  # fmt: skip
    models = [e for e in events if e.get("event") == "model"]
    if models:
        messages = Messages()
        calls = [c for n, e in enumerate(models) if (c := _call(e, n, where, messages, trace))]
        fill_from_calls(trace, calls, messages)
        _compaction_events(trace, events, where)
    else:
        items = sample.get("messages")
        for raw in items if isinstance(items, list) else []:
            message = _message(raw, where, trace.skipped)
            if message is None:
                continue
            if message.role == "system" and not trace.messages:
                trace.system = "\n\n".join(t for t in (trace.system, message.text) if t)
            else:
                trace.messages.append(message)
    return trace


def _message(raw: Any, where: Where, skipped: list[Skipped]) -> TraceMessage | None:
    role = raw.get("role") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or role not in ROLES:
        skipped.append(Skipped(where, f"a message of unknown role {role!r}"))
        return None
    text = content_text(raw.get("content"))
    if role == "tool":
        return TraceMessage("tool", text, tool_call_id=str(raw.get("tool_call_id")),
                            tool_name=raw.get("function") if isinstance(raw.get("function"), str)
                            else None, is_error=bool(raw.get("error")), where=where)  # fmt: skip
    message = TraceMessage(ROLES[role], text, where=where)
    calls = raw.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, dict) and isinstance(call.get("function"), str):
            message.tool_calls.append(
                tool_call(call.get("id"), call["function"], call.get("arguments"))
            )
    if isinstance(raw.get("model"), str):
        message.model = raw["model"]
    return message


def _call(
    event: dict[str, Any], n: int, where: Where, messages: Messages, trace: Trace
) -> Call | None:
    inputs = event.get("input")
    output = obj(event.get("output"))
    choices = output.get("choices")
    first = obj(choices[0]) if isinstance(choices, list) and choices else {}
    reply = _message(first.get("message"), where, trace.skipped)
    if not isinstance(inputs, list) or reply is None or reply.role != "assistant":
        trace.skipped.append(Skipped(where, f"model event {n + 1} has no input or no reply"))
        return None
    keys = []
    for raw in inputs:
        message = _message(raw, where, trace.skipped)
        if message is not None:
            keys.append(messages.add(message))
    usage = obj(output.get("usage"))
    reply.usage = TraceUsage(
        input_tokens=int_or_none(usage.get("input_tokens")),
        output_tokens=int_or_none(usage.get("output_tokens")),
        cache_read_tokens=int_or_none(usage.get("input_tokens_cache_read")),
        cache_creation_tokens=int_or_none(usage.get("input_tokens_cache_write")),
    ) if usage else None  # fmt: skip
    if isinstance(event.get("model"), str):
        reply.model = event["model"]
    return Call(f"{n:08d}", "", None, keys, set(), reply, where)


def _compaction_events(trace: Trace, events: list[dict[str, Any]], where: Where) -> None:
    """Each `compaction` event's tokens onto the compaction the inputs showed, in order; one
    the inputs did not show is added before the reply of the model call after it."""
    found = iter(list(trace.compactions))
    replies = [i for i, m in enumerate(trace.messages) if m.role == "assistant"]
    model_calls = 0
    for event in events:
        if event.get("event") == "model":
            model_calls += 1
        if event.get("event") != "compaction":
            continue
        before = int_or_none(event.get("tokens_before"))
        after = int_or_none(event.get("tokens_after"))
        kind = event.get("type") if isinstance(event.get("type"), str) else None
        compaction = next(found, None)
        if compaction is None:
            at = replies[model_calls] if model_calls < len(replies) else len(trace.messages)
            compaction = Compaction(at, "", where)
            trace.compactions.append(compaction)
        compaction.tokens_before = before if before is not None else compaction.tokens_before
        compaction.tokens_after = after if after is not None else compaction.tokens_after
        compaction.trigger = compaction.trigger or kind
