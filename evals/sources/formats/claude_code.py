"""Claude Code session logs: JSONL, one event a line, linked by `uuid`/`parentUuid`.

The conversation is the chain of parents ending at the last leaf the model answered on (a local
command's branch off the root is none), not the line order: a session rewound or edited has
branches, and the ones off that chain are recorded in `skipped`. Progress and hook events sit in
the chain but make no leaf. Claude Code writes one event per content block, so the assistant
events of one API message (same `message.id`) are merged back into one message; its parallel
calls hang one under the other and each result under its own call, so those parts and results
beside the chain are read with it. A message with no parent after the first (a tool-written log,
a compaction whose `logicalParentUuid` the file lacks, an event under one on a damaged line)
continues the line before it (claude_chain.py). Damaged lines (records.py) are skipped and
counted; a file most of whose lines are damaged is refused, saying so. Output of
`claude -p --output-format stream-json` has no parent links and marks a subagent's events by
`parent_tool_use_id`: read in line order, one subagent a call.

Sidechain events (a subagent's own conversation) become `subagents`, whether in the session file
(older versions) or each in its own `<session>/subagents/agent-<id>.jsonl` beside it (newer),
each linked to the parent's `Task` call whose result names the agent's id, or else whose prompt
started it. An agent file read on its own (older versions wrote it into the project folder,
beside its session) is the trace `<session>/agent-<id>`: its session holds only the `Task`
call and the agent's answer, so nothing of it is counted twice (docs/traces.md).
A `compact_boundary` system event, with the summary the next user event carries, is a
`Compaction` (its `compactMetadata`: what triggered it, the tokens before); a `summary` event
(the title of a conversation in Claude Code's session list) goes to `metadata["summaries"]`.
Each assistant message keeps its call's `usage` (cache read and creation tokens included).
The file is read a line at a time and each event reduced at once to the few fields kept, so a
session of many megabytes never sits in memory as text or as raw JSON.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals.errors import TraceFormatError
from evals.sources.formats.anthropic import add_content
from evals.sources.formats.claude_chain import Event, conversation_chain, link_roots, link_tasks
from evals.sources.formats.records import read_records, refuse_damaged
from evals.sources.formats.source import content_text, int_or_none, usage_of
from evals.sources.trace import Compaction, Skipped, ToolDef, Trace, TraceMessage, Where

NAME = "claude-code"
TASK_TOOLS = ("Task", "Agent")
RESULT_FIELDS = ("subtype", "is_error", "num_turns", "duration_ms", "total_cost_usd", "result")
# Fields kept for the whole session, from the first event with each (`agentId`: a subagent's).
INFO_KEYS = ("sessionId", "session_id", "agentId", "cwd", "version", "gitBranch", "model", "tools")
COMPACTION_AGENT = "agent-acompact-"  # subagents/agent-acompact-*.jsonl: a compaction's run


def read(path: Path) -> Iterator[Trace]:
    trace = session(path)
    # Newer Claude Code writes each subagent to <session>/subagents/agent-<id>.jsonl.
    for file in sorted((path.parent / path.stem / "subagents").glob("agent-*.jsonl")):
        try:
            sub = session(file)
        except TraceFormatError as exc:  # mostly damaged lines: the session reads without it
            trace.skipped.append(Skipped(Where(str(file)), str(exc).removeprefix(f"{file}: ")))
            continue
        if sub.messages:
            sub.id = f"{trace.id}/{file.stem}"
            sub.metadata["agent_id"] = file.stem.removeprefix("agent-")
            if file.stem.startswith(COMPACTION_AGENT):
                # The run that wrote a compaction's summary: its cost is the session's, but
                # no Task call started it.
                sub.metadata["compaction_run"] = True
            trace.subagents.append(sub)
    _link_subagents(trace)
    yield trace


def session(path: Path) -> Trace:
    """One session file as a trace (its in-file sidechains as subagents, not yet linked)."""
    skipped: list[Skipped] = []
    events: dict[str, Event] = {}
    order: list[str] = []  # uuids in file order
    summaries: list[tuple[str, str, Where]] = []  # (leaf uuid, title, where)
    info: dict[str, Any] = {}
    records = 0
    for rec in read_records(path, skipped):
        records += 1
        raw = rec.value
        if not isinstance(raw, dict):
            skipped.append(Skipped(rec.where, "a line that is not an event object"))
            continue
        kind = str(raw.get("type"))
        if kind == "summary":
            summaries.append((str(raw.get("leafUuid")), str(raw.get("summary") or ""), rec.where))
            continue
        uuid = raw.get("uuid")
        if not isinstance(uuid, str):
            continue  # file-history snapshots and the like: not part of the conversation
        if uuid in events:
            skipped.append(Skipped(rec.where, f"a second event with uuid {uuid!r}"))
            continue
        for key in INFO_KEYS:
            if key in raw and key not in info:
                info[key] = raw[key]
        if kind == "result":  # stream-json's last line: the run's outcome and total cost
            info["result"] = {k: raw[k] for k in RESULT_FIELDS if k in raw}
        events[uuid] = _reduce(raw, uuid, kind, rec.where)
        order.append(uuid)
    refuse_damaged(path, records, skipped)
    main = [u for u in order if not events[u].sidechain]
    own_file = not main and bool(order)
    if own_file:  # a subagent's own file (agent-*.jsonl): its sidechain is the run
        for uuid in order:
            events[uuid].sidechain = False
        main = list(order)
    if not main:
        return Trace(path.stem, NAME, str(path), skipped=skipped or [
            Skipped(Where(str(path)), "no conversation events (uuid/parentUuid)")
        ])  # fmt: skip
    session_id = info.pop("sessionId", None) or info.pop("session_id", None)
    agent = info.pop("agentId", None)
    trace = Trace(str(session_id or path.stem), NAME, str(path), skipped=skipped)
    if own_file and session_id:
        # Named as a subagent of the session it ran in (whose sessionId it carries), as the
        # session names the files of its `subagents/` folder, not as that session itself.
        agent = str(agent or path.stem.removeprefix("agent-"))
        trace.id = f"{session_id}/agent-{agent}"
        info |= {"subagent_of": str(session_id), "agent_id": agent}
    tools = info.pop("tools", None)
    trace.tools = (
        [ToolDef(t) for t in tools if isinstance(t, str)] if isinstance(tools, list) else []
    )
    trace.metadata = {k: v for k, v in info.items() if k != "model"}
    link_tasks(events, order)
    linked = link_roots(events, main)
    if linked:
        trace.metadata["roots_linked_by_line_order"] = linked
    chain = conversation_chain(events, main, trace)
    _fill(trace, [events[u] for u in chain])
    # A `summary` event is the title Claude Code shows for a conversation ending at its
    # leaf (its session list), not a change to the context: kept as metadata.
    titles = [summary for leaf, summary, _ in summaries if leaf in set(chain)]
    if titles:
        trace.metadata["summaries"] = titles
    for sub in _sidechains(events, order, path):
        trace.subagents.append(sub)
    models = [m.model for m in trace.messages if m.model and m.model != "<synthetic>"]
    trace.model = models[0] if models else None
    return trace


def _reduce(raw: dict[str, Any], uuid: str, kind: str, where: Where) -> Event:
    parent = raw.get("parentUuid")
    if parent is None and raw.get("subtype") == "compact_boundary":
        parent = raw.get("logicalParentUuid")  # the boundary cuts the link; this keeps it
    parent = parent if isinstance(parent, str) else None  # an id of the wrong shape: no link
    task = raw.get("parent_tool_use_id")
    task = task if isinstance(task, str) else None
    event = Event(uuid, parent, where, bool(raw.get("isSidechain")) or task is not None, kind)
    event.task = task
    message = raw.get("message")
    if kind == "system" and raw.get("subtype") == "compact_boundary":
        event.compact_boundary = True
        meta = raw.get("compactMetadata")
        event.compact_meta = meta if isinstance(meta, dict) else {}
    elif kind in ("user", "assistant") and isinstance(message, dict):
        if raw.get("isCompactSummary"):
            event.compact_summary = content_text(message.get("content"))
            return event
        holder = Trace("", NAME, where.file)
        model = message.get("model") if isinstance(message.get("model"), str) else None
        usage = usage_of(message.get("usage")) if kind == "assistant" else None
        add_content(holder, kind, message.get("content"), where, usage, model)
        event.messages = holder.messages
        for m in event.messages:
            m.record_id = uuid
        event.compactions = holder.compactions
        mid = message.get("id")
        event.message_id = mid if kind == "assistant" and isinstance(mid, str) else None
    return event


def _fill(trace: Trace, chain: list[Event]) -> None:
    """The chain's messages into `trace`, merging the events of one assistant message."""
    last_assistant: TraceMessage | None = None
    last_id: str | None = None
    pending: Compaction | None = None
    for event in chain:
        if event.compact_boundary:
            trigger, before = event.compact_meta.get("trigger"), event.compact_meta.get("preTokens")
            pending = Compaction(len(trace.messages), "", event.where, int_or_none(before))
            pending.trigger = trigger if isinstance(trigger, str) else None
            trace.compactions.append(pending)
            continue
        if event.compact_summary is not None:
            if pending is not None:
                pending.summary = event.compact_summary
            else:
                trace.compactions.append(
                    Compaction(len(trace.messages), event.compact_summary, event.where)
                )
            pending = None
            continue
        for compaction in event.compactions:
            compaction.index += len(trace.messages)
            trace.compactions.append(compaction)
        for message in event.messages:
            same = event.message_id is not None and event.message_id == last_id
            if message.role == "assistant" and same and last_assistant is not None:
                last_assistant.text = "\n".join(t for t in (last_assistant.text, message.text) if t)
                last_assistant.tool_calls.extend(message.tool_calls)
                last_assistant.usage = message.usage or last_assistant.usage
                continue
            trace.messages.append(message)
            if message.role == "assistant":
                last_assistant, last_id = message, event.message_id
        if event.kind == "user" and any(m.role == "user" for m in event.messages):
            last_id = None  # a user's own words end the assistant message


def _sidechains(events: dict[str, Event], order: list[str], path: Path) -> Iterator[Trace]:
    """Each sidechain conversation (a subagent run), from each sidechain leaf back to its
    root, in the order their roots appear."""
    side = [u for u in order if events[u].sidechain]
    has_child = {events[u].parent for u in side}
    by_root: dict[str, list[str]] = {}
    for leaf in (u for u in side if u not in has_child):
        chain = []
        current: str | None = leaf
        while current in events and events[current].sidechain and current not in chain:
            chain.append(current)
            current = events[current].parent
        chain.reverse()
        by_root[chain[0]] = chain  # a later leaf of the same root: its newest branch
    for n, (_root, chain) in enumerate(by_root.items(), 1):
        sub = Trace(f"{path.stem}-sidechain-{n}", NAME, str(path))
        sub.parent_call_id = events[chain[0]].task  # stream-json names the Task call
        _fill(sub, [events[u] for u in chain])
        models = [m.model for m in sub.messages if m.model and m.model != "<synthetic>"]
        sub.model = models[0] if models else None
        yield sub


def _link_subagents(trace: Trace) -> None:
    """Names in each subagent the parent's Task call whose prompt is its first user message
    (else the parent's Task calls in order)."""
    calls = [
        c
        for m in trace.messages
        for c in m.tool_calls
        if c.name in TASK_TOOLS
    ]  # fmt: skip
    taken = {s.parent_call_id for s in trace.subagents}
    free = [c for c in calls if c.id not in taken]
    results = {m.tool_call_id: m.text for m in trace.messages if m.role == "tool"}
    for sub in trace.subagents:  # the Task result names the agent it ran ("agentId: ...")
        agent = sub.metadata.get("agent_id")
        named = [c for c in free if agent and f"agentId: {agent}" in results.get(c.id, "")]
        if named:
            sub.parent_call_id = named[0].id
            free.remove(named[0])
    unlinked = (s for s in trace.subagents if s.parent_call_id is None)
    for sub in (s for s in unlinked if not s.metadata.get("compaction_run")):
        first = next((m.text for m in sub.messages if m.role == "user"), "")
        match = next(
            (c for c in free if str(c.arguments.get("prompt", "")).strip() == first.strip()), None
        )
        match = match or (free[0] if free else None)
        if match is not None:
            sub.parent_call_id = match.id
            free.remove(match)
