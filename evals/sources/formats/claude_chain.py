"""The conversation of a Claude Code session file (claude_code.py), from its events' links:
each event reduced to an `Event`, roots linked to the line before them, the chain from the
first message to the last leaf the model answered on, and what hangs beside that chain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evals.sources.trace import Compaction, Skipped, Trace, TraceMessage, Where


@dataclass
class Event:
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


def link_roots(events: dict[str, Event], main: list[str]) -> int:
    """Links each conversation root after the first (a message with no parent, or a parent
    not in the file, directly or above the progress, hook and bookkeeping events between) to
    the conversation event on the line before it, and says how many: a file whose events carry
    no links (written by a tool, or an older compaction that restarted the chain) is then read
    in line order instead of as one branch per event, each dropped but the last; a compaction
    whose `logicalParentUuid` names an event the file does not hold keeps the conversation
    before it instead of starting the trace; and a damaged line (records.py) that held an
    event cuts the conversation nowhere: what hung under it continues the line before."""
    linked = 0
    before: str | None = None
    dangling: dict[str, bool] = {}  # an event that is no message -> whether its links end nowhere
    for uuid in main:
        event = events[uuid]
        if not event.in_conversation:
            continue
        if before is not None and _dangles(events, event.parent, dangling):
            event.parent = before
            linked += 1
        before = uuid
    return linked


def _dangles(events: dict[str, Event], parent: str | None, memo: dict[str, bool]) -> bool:
    """True when `parent`, followed up through the events that are no message, ends at no
    event of the file (none, or an id the file lacks) instead of at a message."""
    path: list[str] = []
    while parent is not None and parent in events and not events[parent].in_conversation:
        if parent in memo:
            found = memo[parent]
            break
        if parent in path:  # a loop of links: it ends at no message
            found = True
            break
        path.append(parent)
        parent = events[parent].parent
    else:
        found = parent is None or parent not in events
    for step in path:
        memo[step] = found
    return found


def link_tasks(events: dict[str, Event], order: list[str]) -> None:
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


def _conversation_parents(events: dict[str, Event], main: list[str]) -> dict[str, str | None]:
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


def conversation_chain(events: dict[str, Event], main: list[str], trace: Trace) -> list[str]:
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


def _beside(events: dict[str, Event], parents: dict[str, str | None], last: str) -> list[str]:
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
