"""A trace of another harness (evals/sources/trace.py) walked in order: the turns, steps,
tasks and recorded replies a replay follows, and every use of a value the run was shown
earlier (a tool result or a user message), which the probes (probes.py) are built from.

A value a step passes to a tool (an argument, a token of a command, a figure in a file it
writes) that an earlier tool result or user message showed is a `{{slot}}` with a cue
(plan.py, cues.py), so a replay whose window lost the value passes something else and the
recorded reply, keyed by tool and arguments, is not found: that is where strategies part.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from evals.scenarios.format import reply_key
from evals.simulated.plan import escape_slots, put_slot, slots_in
from evals.sources.cues import Found, find_cue, spans
from evals.sources.plan import Planner, rendered_step
from evals.sources.roles import Call
from evals.sources.shelf import Joined, Source, Texts, holding, only
from evals.sources.trace import Trace, TraceToolCall
from evals.sources.values import argument_values, common, shape_of, tokens
from evals.sources.walk_record import ReplayPoint, Shown, Use, UseKind, Walk
from harness.tokens import TokenCounter

# Arguments that hold what the agent writes into a file (Claude Code's Write/Edit, the
# str_replace editors, ctxlab's own).
CONTENT_ARGS = frozenset({"content", "new_string", "new_str", "file_text", "new_content"})
COMMAND_ARGS = frozenset({"command", "cmd", "script", "code"})


class TracePlanner(Planner):
    """The recorded-run planner (plan.py), which slots the figures and names a note or a
    written file repeats from a tool result, extended to the calls' arguments: a string
    argument (or a token of it) that a tool result or a user message showed is a slot too."""

    def __init__(self, literal: Sequence[str], system: str) -> None:
        super().__init__(literal)
        self.system = system
        self.slots_by_value: dict[str, str] = {}
        self.value_of_slot: dict[str, tuple[int, str, str]] = {}  # slot -> (order, value, slot)

    def _candidates(self, text: str, sources: Sequence[Source]) -> list[str]:
        found = super()._candidates(text, sources)
        tool = only(sources, "tool")
        return [v for v in found if not common(v, (s.text for s in holding(tool, v)))]

    def trace_step(
        self, note: str, calls: list[tuple[str, dict[str, Any]]], walk: Walk, message: int,
        turn: int,
    ) -> dict[str, Any]:  # fmt: skip
        sources = Joined(walk.before(message), walk.written(message, turn))
        step = self.step(escape_slots(note), [(n, _escaped(a)) for n, a in calls], sources)
        slots = dict(step.get("slots", {}))
        for call in step["calls"]:
            if call["tool"] == "task":
                continue  # a subagent's task is recognised by its text: it stays as recorded
            for key, value in call["arguments"].items():
                if not isinstance(value, str):
                    continue
                if key in CONTENT_ARGS:  # what it writes: the figures and names it repeats
                    found: dict[str, Found] = {}
                    value = self._slotted(value, sources, found)
                    slots.update({name: {"patterns": list(f.cue.patterns),
                                         "lookalikes": list(f.cue.lookalikes)}
                                  for name, f in found.items()})  # fmt: skip
                    call["arguments"][key] = self._argument(value, walk, message, slots, False)
                else:
                    call["arguments"][key] = self._argument(value, walk, message, slots)
        # The note often repeats the call (mini-swe-agent's fenced command): the values slotted
        # in the call are slotted in the note too, or the note would keep what the call lost.
        # A replacement writes no other slot's name, so only the slots in use before them can
        # be in use (looking at all of the trace's slots at every step was quadratic).
        used = _used_slots(step)
        mine = [self.value_of_slot[s] for s in {*slots, *used} if s in self.value_of_slot]
        for _, value, slot in sorted(mine, key=lambda m: (-len(m[1]), m[0])):
            if slot in slots or _uses_slot(step, slot):
                step["note"] = _replace_spans(step["note"], value, slot)
        used = _used_slots(step)
        if used:
            step["slots"] = {s: slots[s] for s in slots if s in used}
        else:
            step.pop("slots", None)
        return step

    def _argument(
        self, text: str, walk: Walk, message: int, slots: dict[str, Any], whole: bool = True
    ) -> str:
        # Longest first, ties in the order the text has them: a set's order would change with
        # the hash seed, and so would the slot numbers of an import.
        for value in argument_values(text) if whole else sorted(dict.fromkeys(tokens(text)),
                                                                key=len, reverse=True):  # fmt: skip
            if value in self.system or "{{" in value:
                continue
            shown = walk.first_shown(value, message)
            before = walk.before(message)
            if shown is None or common(value, (s.text for s in holding(before, value))):
                continue
            found = find_cue(value, before, distractors="none")
            if found is None or not found.unique:
                continue  # no label tells it apart: a slot would copy whichever came first
            if value not in self.slots_by_value:
                slot = f"arg_{len(self.slots_by_value) + 1}"
                self.value_of_slot[slot] = (len(self.slots_by_value), value, slot)
                self.slots_by_value[value] = slot
            slot = self.slots_by_value[value]
            slots[slot] = {"patterns": list(found.cue.patterns),
                           "lookalikes": list(found.cue.lookalikes)}  # fmt: skip
            text = _replace_spans(text, value, slot)
        return text


def _escaped(args: dict[str, Any]) -> dict[str, Any]:
    return {k: _escape_value(v) for k, v in args.items()}


def _escape_value(value: Any) -> Any:
    if isinstance(value, str):
        return escape_slots(value)
    if isinstance(value, dict):
        return {k: _escape_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_escape_value(v) for v in value]
    return value


def _replace_spans(text: str, value: str, slot: str) -> str:
    starts = spans(value, text)
    if not starts:
        return text
    out, last = [], 0
    for start in starts:
        if text[max(0, start - 2) : start] == "{{":
            continue
        out.append(put_slot(text[last:start], slot))
        last = start + len(value)
    out.append(text[last:])
    return "".join(out)


def _used_slots(step: dict[str, Any]) -> set[str]:
    return slots_in([step["note"], *(call["arguments"] for call in step["calls"])])


def _uses_slot(step: dict[str, Any], slot: str) -> bool:
    return slot in _used_slots(step)


def walk_trace(trace: Trace, names: dict[str, str], native: frozenset[str] = frozenset()) -> Walk:
    """The trace's turns, steps, tasks and replies, and every use of a value shown earlier.
    A `native` tool's results are shown but not recorded: the replay's harness runs it."""
    walk = Walk(system=trace.system, native=native)
    counter = TokenCounter()
    subs = {s.parent_call_id: s for s in trace.subagents if s.parent_call_id}
    users = [m.text for m in trace.messages if m.role == "user"]
    planner = TracePlanner([trace.system, *users], trace.system)
    calls_by_id: dict[str, tuple[str, dict[str, Any]]] = {}
    turn: dict[str, Any] | None = None
    pending_note = ""
    keys: set[str] = set()
    steps_so_far = 0
    for i, m in enumerate(trace.messages):
        tokens_before = walk.tokens
        walk.tokens += counter.count_text(m.text) + sum(
            counter.count_text(json.dumps(c.arguments)) for c in m.tool_calls
        )
        if m.role == "user" or turn is None and m.role == "assistant":
            text = (m.text if m.role == "user" else "") or "Go on with the task."
            key = text.strip().split("\n", 1)[0].strip()
            if key in keys:  # the plan tells turns apart by their first line
                text = f"(turn {len(walk.turns) + 1}) {text}"
            keys.add(text.strip().split("\n", 1)[0].strip())
            turn = {"id": f"u{len(walk.turns):03d}", "text": text, "steps": [], "final": "Done."}
            walk.turns.append(turn)
            pending_note = ""
            if m.role == "user":
                walk.shown.append(Shown(Source(f"turn {len(walk.turns)} user message", "user",
                                               m.text, len(walk.turns) - 1),
                                        i, walk.tokens, steps_so_far))  # fmt: skip
                continue
        assert turn is not None
        index = len(walk.turns) - 1
        if m.role == "tool":
            name, args = calls_by_id.get(m.tool_call_id or "", (m.tool_name or "tool", {}))
            walk.shown.append(Shown(Source(f"step {steps_so_far} {name} result", "tool", m.text,
                                           index), i, walk.tokens, steps_so_far,
                                    Call(name, args)))  # fmt: skip
            if m.tool_call_id in subs or name in native:
                continue  # the subagent's answer or a native tool's: the replay's harness gives it
            walk.replies.append(_reply(walk, name, args, m.text))
            continue
        if m.role != "assistant":
            continue  # a system message mid-run: the replay's harness sends its own
        point = ReplayPoint(turn["id"], index, len(turn["steps"]), i, tokens_before)
        if not m.tool_calls:
            if m.text.strip():
                turn["final"] = m.text
                pending_note = m.text
                _answer_uses(walk, m.text, point)
                walk.agent.append((i, m.text))
            continue
        calls: list[tuple[str, dict[str, Any]]] = []
        for c in m.tool_calls:
            name = names.get(c.name, c.name)
            sub = subs.get(c.id)
            if sub is not None:
                prompt = _task(walk, sub, c, names, counter)
                calls_by_id[c.id] = ("task", {})
                calls.append(("task", {"description": prompt, "subagent_type": _kind(c)}))
                continue
            calls_by_id[c.id] = (name, c.arguments)
            calls.append((name, c.arguments))
            walk.calls.append((point, name, c.arguments))
            _call_uses(walk, name, c.arguments, point)
        note = m.text or ""
        if pending_note and turn["final"] == pending_note:
            # a plain message followed by more calls in the same turn: it was a note
            note = f"{pending_note}\n{note}".strip()
            turn["final"] = "Done."
        pending_note = ""
        turn["steps"].append(planner.trace_step(note, calls, walk, i, index))
        steps_so_far += 1
        walk.agent.append((i, rendered_step(m.text, calls)))
    return walk


def _kind(call: TraceToolCall) -> str:
    kind = str(call.arguments.get("subagent_type") or "general-purpose")
    return re.sub(r"[^A-Za-z0-9_\-]+", "-", kind).strip("-") or "general-purpose"


def _task(walk: Walk, sub: Trace, call: TraceToolCall, names: dict[str, str],
          counter: TokenCounter) -> str:  # fmt: skip
    """The subagent run `sub` as a task of the walk; returns its prompt (what the parent's
    `task` call passes, and what the replayed subagent recognises its task by)."""
    first = next((m.text for m in sub.messages if m.role == "user" and m.text.strip()), "")
    prompt = first or str(call.arguments.get("prompt") or call.arguments.get("description")
                          or f"Task {len(walk.tasks) + 1}.")  # fmt: skip
    taken = {t["prompt"].strip().split("\n", 1)[0] for t in walk.tasks}
    if prompt.strip().split("\n", 1)[0] in taken:
        return prompt  # the same task again: a replay follows the first recording
    inner = Walk(system=sub.system)
    inner.shown.append(Shown(Source("task prompt", "user", prompt, 0), -1, 0, 0))
    planner = TracePlanner([sub.system, prompt], sub.system)
    calls_by_id: dict[str, tuple[str, dict[str, Any]]] = {}
    steps: list[dict[str, Any]] = []
    final = "Done."
    used = walk.subagents.setdefault(_kind(call), set())
    for i, m in enumerate(sub.messages):
        if m.role == "tool":
            name, args = calls_by_id.get(m.tool_call_id or "", (m.tool_name or "tool", {}))
            inner.shown.append(Shown(Source(f"task {len(walk.tasks)} {name} result", "tool",
                                            m.text, 0), i, 0, 0, Call(name, args)))  # fmt: skip
            if name not in walk.native:
                walk.replies.append(_reply(walk, name, args, m.text))
            continue
        if m.role != "assistant":
            continue
        if not m.tool_calls:
            final = m.text or final
            continue
        calls = []
        for c in m.tool_calls:
            name = names.get(c.name, c.name)
            calls_by_id[c.id] = (name, c.arguments)
            calls.append((name, c.arguments))
            used.add(name)
        steps.append(planner.trace_step(m.text, calls, inner, i, 0))
        inner.agent.append((i, rendered_step(m.text, calls)))
    walk.tasks.append({"prompt": prompt, "steps": steps, "final": final})
    return prompt


def _reply(walk: Walk, name: str, args: dict[str, Any], content: str) -> dict[str, Any]:
    """A recorded tool result, with how many times the same call was answered before it."""
    return {"tool": name, "arguments": args, "occurrence": _occurrence(walk, name, args),
            "content": content}  # fmt: skip


def _occurrence(walk: Walk, name: str, args: dict[str, Any]) -> int:
    """1 + the replies so far to the same call (each reply is made here, so counted here)."""
    key = reply_key(name, args)
    walk.answered[key] += 1
    return walk.answered[key]


def _call_uses(walk: Walk, name: str, args: dict[str, Any], point: ReplayPoint) -> None:
    for key, value in args.items():
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int | float):
            text, whole_only = str(value), True
        elif isinstance(value, str):
            text, whole_only = value, False
        else:
            continue
        if key in CONTENT_ARGS:
            kind: UseKind = "content"
        elif key in COMMAND_ARGS or name.lower() in ("bash", "shell", "terminal"):
            kind = "command"
        else:
            kind = "argument"
        values = [text] if whole_only else argument_values(text)
        _add_uses(walk, values, text, point, kind, name, key)


def _answer_uses(walk: Walk, text: str, point: ReplayPoint) -> None:
    from evals.sources.plan import candidates

    shown = Texts(walk.before(point.message))
    values = list(dict.fromkeys([*tokens(text), *candidates(text, shown, [walk.system])]))
    _add_uses(walk, values, text, point, "answer", None, None)


def _add_uses(
    walk: Walk, values: list[str], text: str, point: ReplayPoint, kind: UseKind, tool: str | None,
    argument: str | None,
) -> None:  # fmt: skip
    whole = text.strip()
    shapes: dict[str, list[str]] = {}
    kept = [v for v in values if v not in walk.system]  # the prompt is always in view
    for value in sorted(kept, key=lambda v: text.find(v)):
        if value != whole:
            shapes.setdefault(shape_of(value), []).append(value)
    for value in kept:
        if walk.first_shown(value, point.message) is None:
            continue
        same = shapes.get(shape_of(value), [value])
        walk.uses.append(Use(
            value, point, kind, tool, argument, value == whole,
            same.index(value) + 1 if value in same else 1, len(same), shape_of(value),
            f"{tool or 'answer'} {argument or ''}",
        ))  # fmt: skip
