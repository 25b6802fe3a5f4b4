"""Claude Code session logs: JSONL, one event a line, linked by `uuid`/`parentUuid`.

The conversation is the chain of parents ending at the last leaf the model answered on (a local
command's branch off the root is none), not the line order: a session rewound or edited has
branches, and the ones off that chain are recorded in `skipped`. Progress and hook events sit in
the chain but make no leaf. Claude Code writes one event per content block, so the assistant
events of one API message (same `message.id`) are merged back into one message; its parallel
calls hang one under the other and each result under its own call, so those parts and results
beside the chain are read with it. A message with no parent after the first (a tool-written log,
a compaction whose `logicalParentUuid` the file lacks) continues the line before it. Output of
`claude -p --output-format stream-json` has no parent links and marks a subagent's events by
`parent_tool_use_id`: read in line order, one subagent a call.

Sidechain events (a subagent's own conversation) become `subagents`, whether in the session file
(older versions) or each in its own `<session>/subagents/agent-<id>.jsonl` beside it (newer),
each linked to the parent's `Task` call whose result names the agent's id, or else whose prompt
started it. A `compact_boundary` system event, with the summary the next user event carries, is
a `Compaction` (its `compactMetadata`: what triggered it, the tokens before); a `summary` event
(the title of a conversation in Claude Code's session list) goes to `metadata["summaries"]`.
Each assistant message keeps its call's `usage` (cache read and creation tokens included).
The file is read a line at a time and each event reduced at once to the few fields kept, so a
session of many megabytes never sits in memory as text or as raw JSON.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals.sources.formats.anthropic import add_content
from evals.sources.formats.records import read_records
from evals.sources.formats.source import content_text, int_or_none, usage_of
from evals.sources.trace import Compaction, Skipped, ToolDef, Trace, TraceMessage, Where

NAME = "claude-code"
TASK_TOOLS = ("Task", "Agent")
RESULT_FIELDS = ("subtype", "is_error", "num_turns", "duration_ms", "total_cost_usd", "result")
COMPACTION_AGENT = "agent-acompact-"  # subagents/agent-acompact-*.jsonl: a compaction's run


@dataclass
class _Event:
    """What one event contributes, kept instead of its JSON."""

    uuid: str
    parent: str | None
    where: Where
    sidechain: bool
    kind: str  # user | assistant | system | summary ...
    messages: list[TraceMessage] = field(default_factory=list)
    compactions: list[Compaction] = field(default_factory=list)
    message_id: str | None = None
    compact_boundary: bool = False
    compact_meta: dict[str, Any] = field(default_factory=dict)  # trigger, preTokens
    compact_summary: str | None = None  # a user event that carries a compaction's summary
    task: str | None = None  # stream-json: the Task call whose subagent wrote this event

    @property
    def in_conversation(self) -> bool:
        """A message, or a compaction: not a progress, hook or bookkeeping event."""
        return bool(self.messages) or self.compact_boundary or self.compact_summary is not None


def read(path: Path) -> Iterator[Trace]:
    trace = session(path)
    # Newer Claude Code writes each subagent to <session>/subagents/agent-<id>.jsonl.
    for file in sorted((path.parent / path.stem / "subagents").glob("agent-*.jsonl")):
        sub = session(file)
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
    events: dict[str, _Event] = {}
    order: list[str] = []  # uuids in file order
    summaries: list[tuple[str, str, Where]] = []  # (leaf uuid, title, where)
    info: dict[str, Any] = {}
    for rec in read_records(path, skipped):
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
        for key in ("sessionId", "session_id", "cwd", "version", "gitBranch", "model", "tools"):
            if key in raw and key not in info:
                info[key] = raw[key]
        if kind == "result":  # stream-json's last line: the run's outcome and total cost
            info["result"] = {k: raw[k] for k in RESULT_FIELDS if k in raw}
        events[uuid] = _reduce(raw, uuid, kind, rec.where)
        order.append(uuid)
    main = [u for u in order if not events[u].sidechain]
    if not main and order:  # a subagent's own file (agent-*.jsonl): its sidechain is the run
        for uuid in order:
            events[uuid].sidechain = False
        main = list(order)
    if not main:
        return Trace(path.stem, NAME, str(path), skipped=skipped or [
            Skipped(Where(str(path)), "no conversation events (uuid/parentUuid)")
        ])  # fmt: skip
    session_id = info.pop("sessionId", None) or info.pop("session_id", None)
    trace = Trace(str(session_id or path.stem), NAME, str(path), skipped=skipped)
    tools = info.pop("tools", None)
    trace.tools = (
        [ToolDef(t) for t in tools if isinstance(t, str)] if isinstance(tools, list) else []
    )
    trace.metadata = {k: v for k, v in info.items() if k != "model"}
    _link_tasks(events, order)
    linked = _link_roots(events, main)
    if linked:
        trace.metadata["roots_linked_by_line_order"] = linked
    chain = _chain(events, main, trace)
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


def _reduce(raw: dict[str, Any], uuid: str, kind: str, where: Where) -> _Event:
    parent = raw.get("parentUuid")
    if parent is None and raw.get("subtype") == "compact_boundary":
        parent = raw.get("logicalParentUuid")  # the boundary cuts the link; this keeps it
    parent = parent if isinstance(parent, str) else None  # an id of the wrong shape: no link
    task = raw.get("parent_tool_use_id")
    task = task if isinstance(task, str) else None
    event = _Event(uuid, parent, where, bool(raw.get("isSidechain")) or task is not None, kind)
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


def _link_roots(events: dict[str, _Event], main: list[str]) -> int:
    """Links each conversation root after the first (a message with no parent, or a parent
    not in the file) to the conversation event on the line before it, and says how many: a
    file whose events carry no links (written by a tool, or an older compaction that
    restarted the chain) is then read in line order instead of as one branch per event,
    each dropped but the last; a compaction whose `logicalParentUuid` names an event the
    file does not hold keeps the conversation before it instead of starting the trace."""
    linked = 0
    before: str | None = None
    for uuid in main:
        if not events[uuid].in_conversation:
            continue
        parent = events[uuid].parent
        if (parent is None or parent not in events) and before is not None:
            events[uuid].parent = before
            linked += 1
        before = uuid
    return linked


def _link_tasks(events: dict[str, _Event], order: list[str]) -> None:
    """Links each event of a subagent, in `claude -p --output-format stream-json` output
    (no `parentUuid`, the subagent's events marked by the Task call that started them), to
    the subagent's event on the line before it, so each subagent reads as one run."""
    last: dict[str, str] = {}  # Task call id -> the subagent's latest message event
    for uuid in order:
        event = events[uuid]
        if event.task is None or not event.in_conversation:
            continue
        if event.parent is None and event.task in last:
            event.parent = last[event.task]
        last[event.task] = uuid


def _conversation_parents(events: dict[str, _Event], main: list[str]) -> dict[str, str | None]:
    """Each conversation event's nearest conversation ancestor, through the events between
    (progress and hook events hang off the chain and sit in it too)."""
    memo: dict[str, str | None] = {}  # a non-conversation event -> the first one above it

    def at_or_above(uuid: str | None) -> str | None:
        path: list[str] = []
        while uuid in events and not events[uuid].in_conversation and uuid not in memo:
            if uuid in path:  # a loop of links: nothing above
                uuid = None
                break
            path.append(uuid)
            uuid = events[uuid].parent
        found = None if uuid is None or uuid not in events else memo.get(uuid, uuid)
        for step in path:
            memo[step] = found
        return found

    return {u: at_or_above(events[u].parent) for u in main if events[u].in_conversation}


def _chain(events: dict[str, _Event], main: list[str], trace: Trace) -> list[str]:
    """The uuids from the root to the last leaf of the main conversation; every other leaf
    is an abandoned branch, recorded in `trace.skipped`."""
    # Only messages make a leaf: progress and hook events are children of the message they
    # report on, and a branch ending in one is no branch of the conversation.
    parents = _conversation_parents(events, main)
    has_child = set(parents.values())
    leaves = [u for u in parents if u not in has_child]
    # The last leaf the model answered on: a local command (`/export`) branches off the root.
    answered: dict[str, bool] = {}
    for u, e in events.items():  # file order: a parent before its children
        answered[u] = e.kind == "assistant" or answered.get(e.parent or "", False)
    last = ([u for u in leaves if answered.get(u)] or leaves or main)[-1]
    beside = _beside(events, parents, last)
    leaves = [u for u in leaves if u not in beside or u == last]
    chain: list[str] = []
    seen: set[str] = set()
    current: str | None = last
    while current is not None and current in events and current not in seen:
        seen.add(current)
        chain.append(current)
        current = events[current].parent
    if current is not None and current not in events:
        trace.skipped.append(
            Skipped(
                events[chain[-1]].where,
                f"parent {current!r} is not in the file: the conversation starts here",
            )  # fmt: skip
        )
    chain.reverse()
    if beside:  # each after the event it hangs off, before that event's own chain child
        after: dict[str, list[str]] = {}
        for uuid in beside:
            after.setdefault(str(parents[uuid]), []).append(uuid)
        chain = [u for c in chain for u in _with_beside(c, after)]
    for leaf in leaves[:-1]:
        trace.skipped.append(
            Skipped(
                events[leaf].where,
                "a branch off the conversation (it ends here, not at the last leaf)",
            )  # fmt: skip
        )
    if len(leaves) > 1:
        trace.metadata["branches"] = len(leaves)
    return chain


def _beside(events: dict[str, _Event], parents: dict[str, str | None], last: str) -> list[str]:
    """The events off the chain to `last` that belong to it, in file order: the other parts
    of an answer on the chain (same message id) and the tool results whose call is on the
    chain or beside it. Claude Code writes each part of an answer as its own event and each
    result as the child of its call's event, so an answer's parallel calls and their results
    hang off the chain as side branches; they are no branch the user abandoned."""
    kept: set[str] = set()
    current: str | None = last
    while current is not None and current in events and current not in kept:
        kept.add(current)
        current = events[current].parent
    answers = {events[u].message_id for u in kept if events[u].message_id is not None}
    found: list[str] = []
    for uuid, parent in parents.items():  # file order: a part comes before its results
        event = events[uuid]
        if uuid in kept or parent not in kept:
            continue
        results = event.kind == "user" and all(m.role == "tool" for m in event.messages)
        if results or (event.message_id is not None and event.message_id in answers):
            kept.add(uuid)
            found.append(uuid)
    return found


def _with_beside(uuid: str, after: dict[str, list[str]]) -> list[str]:
    """`uuid` and, depth first, what hangs beside it."""
    out = [uuid]
    for child in after.get(uuid, ()):
        out.extend(_with_beside(child, after))
    return out


def _fill(trace: Trace, chain: list[_Event]) -> None:
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


def _sidechains(events: dict[str, _Event], order: list[str], path: Path) -> Iterator[Trace]:
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
