"""SWE-agent trajectories (`.traj`): `{trajectory, history, info}`.

`history` is what the model was sent: `{role, content, agent, message_type, thought, action,
tool_calls, tool_call_ids}`. With a function-calling model an assistant message carries Chat
`tool_calls` and each result is a `tool` message naming its call in `tool_call_ids`; in the
thought-action style the assistant writes its command as text (`action`) and the
environment's answer comes back as the next `user` message whose `message_type` is
`observation`: that is a call of the `bash` tool and its result. Demonstrations
(`is_demo`) are examples in the prompt, not the run, and are left out; a second agent's
messages (`agent` other than the first) are left out too. Without a usable `history` the
`trajectory` steps are read (`thought`/`response`, `action`, `observation`). With one,
the trajectory still answers what `history` left open: SWE-agent before 1.0 wrote no
observation of the last step (the submission) into `history`, only into its trajectory step,
so an action without a result there takes the observation of the trajectory step that ran the
same action (the steps matched in order; a step the history lacks, such as a format error the
model was asked to fix, is passed over).
`info.submission` names the files the patch touches, `info.exit_status` is the outcome,
`info.model_stats` the cost and tokens.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals.sources.formats.mini_swe_agent import patch_files
from evals.sources.formats.records import read_records
from evals.sources.formats.source import content_text, int_or_none, obj, tool_call
from evals.sources.trace import GroundTruth, Skipped, Trace, TraceMessage, TraceUsage, Where

NAME = "swe-agent"
ROLES = {"system": "system", "user": "user", "assistant": "assistant", "tool": "tool"}


def read(path: Path) -> Iterator[Trace]:
    skipped: list[Skipped] = []
    for rec in read_records(path, skipped):
        doc = rec.value
        if not isinstance(doc, dict):
            skipped.append(Skipped(rec.where, "a trajectory that is not an object"))
            continue
        trace = Trace(path.name.removesuffix(".traj"), NAME, str(path), skipped=skipped)
        info = obj(doc.get("info"))
        trace.ground_truth = _ground_truth(info)
        trace.metadata = {k: v for k, v in doc.items() if k not in ("history", "trajectory")}
        history = doc.get("history")
        if isinstance(history, list) and history:
            acted = _history(trace, history, [rec.where_at("history", i)
                                              for i in range(len(history))])  # fmt: skip
            steps = doc.get("trajectory")
            if isinstance(steps, list):
                _answer_from_steps(trace, acted, steps, [rec.where_at("trajectory", i)
                                                         for i in range(len(steps))])  # fmt: skip
        elif isinstance(doc.get("trajectory"), list):
            steps = doc["trajectory"]
            _trajectory(trace, steps, [rec.where_at("trajectory", i) for i in range(len(steps))])
        else:
            skipped.append(Skipped(rec.where, "no history and no trajectory"))
        _usage(trace, obj(info.get("model_stats")))
        yield trace
        skipped = []


def _history(trace: Trace, history: list[Any], wheres: list[Where]) -> \
        list[tuple[TraceMessage, str]]:  # fmt: skip
    """Reads `history` into `trace`; returns its assistant messages with the action each ran."""
    acted: list[tuple[TraceMessage, str]] = []
    agent: Any = None
    open_action: str | None = None  # a thought-action call waiting for its observation
    actions = 0
    for raw, where in zip(history, wheres, strict=True):
        if not isinstance(raw, dict) or raw.get("role") not in ROLES:
            trace.skipped.append(Skipped(where, f"not a history message: {raw!r:.40}"))
            continue
        if raw.get("is_demo"):
            continue
        agent = raw.get("agent") if agent is None else agent
        if raw.get("agent", agent) != agent:
            continue
        role, text = ROLES[raw["role"]], content_text(raw.get("content"))
        if role == "system" and not trace.messages:
            trace.system = "\n\n".join(t for t in (trace.system, text) if t)
        elif role == "tool":
            ids = raw.get("tool_call_ids")
            cid = ids[0] if isinstance(ids, list) and ids else raw.get("tool_call_id")
            trace.messages.append(TraceMessage("tool", text, tool_call_id=str(cid), where=where))
        elif role == "user" and open_action is not None and _observation(raw):
            trace.messages.append(TraceMessage("tool", text, tool_call_id=open_action, where=where))
            open_action = None
        elif role == "assistant":
            message = TraceMessage("assistant", text, where=where)
            if isinstance(raw.get("action"), str) and raw["action"].strip():
                acted.append((message, raw["action"].strip()))
            calls = raw.get("tool_calls")
            for call in calls if isinstance(calls, list) else []:
                fn = obj(obj(call).get("function"))
                if fn.get("name"):
                    message.tool_calls.append(
                        tool_call(obj(call).get("id"), fn["name"], fn.get("arguments"))
                    )
            action = raw.get("action")
            if not message.tool_calls and isinstance(action, str) and action.strip():
                actions += 1
                open_action = f"action_{actions}"
                message.tool_calls.append(
                    tool_call(open_action, "bash", {"command": action.strip()})
                )
            trace.messages.append(message)
        else:
            trace.messages.append(TraceMessage(role, text, where=where))  # type: ignore[arg-type]
    return acted


def _answer_from_steps(trace: Trace, acted: list[tuple[TraceMessage, str]], steps: list[Any],
                       wheres: list[Where]) -> None:  # fmt: skip
    """Answers each call of `acted` (assistant messages and their actions) that no history
    message answered with the observation of the trajectory step that ran its action."""
    answered = {m.tool_call_id for m in trace.messages if m.role == "tool"}
    at = 0  # the next trajectory step an action may match: both run in the same order
    answers: list[tuple[TraceMessage, TraceMessage]] = []
    for message, action in acted:
        match = next((j for j in range(at, len(steps)) if _step_action(steps[j]) == action),
                     None)  # fmt: skip
        if match is None:
            continue
        at = match + 1
        open_calls = [c for c in message.tool_calls if c.id not in answered]
        if len(open_calls) == 1:  # SWE-agent runs one call a step: its observation answers it
            observation = content_text(steps[match].get("observation"))
            answers.append((message, TraceMessage("tool", observation,
                                                  tool_call_id=open_calls[0].id,
                                                  where=wheres[match])))  # fmt: skip
    for message, answer in reversed(answers):
        index = next(i for i, m in enumerate(trace.messages) if m is message)
        after = index + 1  # past the results the history already gave this message
        while after < len(trace.messages) and trace.messages[after].role == "tool":
            after += 1
        trace.messages.insert(after, answer)


def _step_action(step: Any) -> str | None:
    action = step.get("action") if isinstance(step, dict) else None
    return action.strip() if isinstance(action, str) else None


def _observation(raw: dict[str, Any]) -> bool:
    return raw.get("message_type", "observation") == "observation"


def _trajectory(trace: Trace, steps: list[Any], wheres: list[Where]) -> None:
    for n, (step, where) in enumerate(zip(steps, wheres, strict=True), 1):
        if not isinstance(step, dict) or not isinstance(step.get("action"), str):
            trace.skipped.append(Skipped(where, "a trajectory step with no action"))
            continue
        thought = step.get("thought") or step.get("response") or ""
        call = tool_call(f"action_{n}", "bash", {"command": step["action"].strip()})
        trace.messages.append(TraceMessage("assistant", str(thought), [call], where=where))
        observation = content_text(step.get("observation"))
        trace.messages.append(TraceMessage("tool", observation, tool_call_id=call.id, where=where))


def _usage(trace: Trace, stats: dict[str, Any]) -> None:
    """The run's totals on its last answer (SWE-agent keeps no per-call usage)."""
    last = next((m for m in reversed(trace.messages) if m.role == "assistant"), None)
    sent, received = (
        int_or_none(stats.get("tokens_sent")),
        int_or_none(stats.get("tokens_received")),
    )
    cost = stats.get("instance_cost")
    if last is not None and (sent or received):
        last.usage = TraceUsage(
            sent, received, cost_usd=float(cost) if isinstance(cost, int | float) else None
        )


def _ground_truth(info: dict[str, Any]) -> GroundTruth:
    truth = GroundTruth()
    if isinstance(info.get("exit_status"), str):
        truth.outcome["exit_status"] = info["exit_status"]
    if isinstance(info.get("submission"), str):
        truth.patch_files = patch_files(info["submission"])
    return truth
