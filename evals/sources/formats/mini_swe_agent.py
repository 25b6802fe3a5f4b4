"""mini-swe-agent trajectories (`trajectory_format: "mini-swe-agent-1"`, and v2's
"mini-swe-agent-1.1"), or their bare list of messages: plain `{role, content}` messages where
the agent's bash command is the one action of its text (a fenced ```bash block in v1,
```mswea_bash_command or `<mswea_bash_command>` in v2, which also lists it in
`extra.actions`), and the environment's answer (`<returncode>`, `<output>`, or v2's JSON
observation; `extra.returncode`) comes back as the next user message. These are a `bash`
tool call and its result.
`info.submission` (a diff) names the files the patch touches, `info.exit_status` is the
outcome, `info.model_stats` the cost. A v2 run with a tool-calling model writes Chat
`tool_calls` and `tool` messages: read as such."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals.sources.formats.openai_chat import ROLES, fill
from evals.sources.formats.source import (
    Conversation,
    content_text,
    conversations,
    numbered,
    obj,
    trace_id,
)
from evals.sources.trace import GroundTruth, Skipped, Trace, TraceMessage, TraceToolCall, TraceUsage

NAME = "mini-swe-agent"
# The fences and tags mini-swe-agent's configs parse actions from (v1 ```bash, v2 defaults).
ACTION = re.compile(
    r"```(?:bash|sh|mswea_bash_command)\s*\n(.*?)\n```"
    r"|<mswea_bash_command>(.*?)</mswea_bash_command>",
    re.DOTALL,
)
RETURNCODE = re.compile(r'<returncode>\s*(-?\d+)\s*</returncode>|"returncode"\s*:\s*(-?\d+)')
DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.MULTILINE)
PLUS_FILE = re.compile(r"^\+\+\+ b/(\S+)", re.MULTILINE)


def is_message(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("role"), str)


def read(path: Path) -> Iterator[Trace]:
    skipped: list[Skipped] = []
    for conv, number, several in numbered(conversations(path, skipped, is_message)):
        record = conv.record
        info = obj(record.get("info"))
        trace = Trace(trace_id(path, record, number, several), NAME, str(path))
        trace.skipped.extend(skipped)
        skipped.clear()
        trace.metadata = dict(record)
        trace.ground_truth = _ground_truth(info)
        model = obj(obj(info.get("config")).get("model"))
        trace.model = model.get("model_name") if isinstance(model.get("model_name"), str) else None
        open_call: TraceToolCall | None = None
        calls = 0
        for raw, where in zip(conv.items, conv.wheres, strict=True):
            if not isinstance(raw, dict):
                trace.skipped.append(
                    Skipped(where, f"a message that is not an object: {raw!r:.40}")
                )
                continue
            role = ROLES.get(str(raw.get("role")))
            text = content_text(raw.get("content"))
            if raw.get("role") == "exit":  # v2 ends with the exit status as a message
                continue
            if raw.get("role") == "tool" or raw.get("tool_calls"):
                # v2 with a tool-calling model: the calls and results are Chat's own.
                holder = Conversation([raw], [where], {}, where)
                fill(trace, holder, messages_only=True)
                open_call = None
                continue
            if role is None:
                trace.skipped.append(Skipped(where, f"unknown role {raw.get('role')!r}"))
                continue
            if role == "system" and not trace.messages:
                trace.system = text
                continue
            if role == "user" and open_call is not None:
                # The environment's answer to the command (its output, a timeout, an error).
                failed = _returncode(raw, text) not in (None, 0)
                trace.messages.append(
                    TraceMessage(
                        "tool",
                        text,
                        tool_call_id=open_call.id,
                        tool_name="bash",
                        is_error=failed,
                        where=where,
                    )  # fmt: skip
                )
                open_call = None
                continue
            message = TraceMessage(role, text, where=where)
            commands = _commands(raw, text) if role == "assistant" else []
            if len(commands) == 1:  # mini-swe-agent runs exactly one block, else says so
                calls += 1
                open_call = TraceToolCall(f"bash-{calls}", "bash", {"command": commands[0]})
                message.tool_calls.append(open_call)
            trace.messages.append(message)
        submission = info.get("submission")
        if open_call is not None and isinstance(submission, str) and submission:
            # The last command submits: its output is the submission the run recorded.
            trace.messages.append(
                TraceMessage("tool", submission, tool_call_id=open_call.id, tool_name="bash")
            )
        if not trace.ground_truth.patch_files:  # no `info` (a bare list): what it submitted
            trace.ground_truth.patch_files = patch_files(_submitted(trace))
        cost = _cost(info.get("model_stats"))
        last = next((m for m in reversed(trace.messages) if m.role == "assistant"), None)
        if cost is not None and last is not None:
            last.usage = TraceUsage(
                cost_usd=cost
            )  # the run's total: the trace keeps no per-call cost
        yield trace
    if skipped:
        yield Trace(path.stem, NAME, str(path), skipped=skipped)


SUBMIT = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")


def _submitted(trace: Trace) -> str:
    """The output of the run's last submit command (its diff), or ""."""
    submits = {
        c.id
        for m in trace.messages
        for c in m.tool_calls
        if any(word in str(c.arguments.get("command", "")) for word in SUBMIT)
    }
    outputs = [m.text for m in trace.messages if m.role == "tool" and m.tool_call_id in submits]
    return outputs[-1] if outputs else ""


def _commands(raw: dict[str, Any], text: str) -> list[str]:
    """The commands of an assistant message: v2's own `extra.actions`, else its text's."""
    actions = obj(raw.get("extra")).get("actions")
    if isinstance(actions, list) and actions:
        return [str(a["command"]) for a in actions if isinstance(a, dict) and "command" in a]
    return [fenced or tagged for fenced, tagged in ACTION.findall(text)]


def _returncode(raw: dict[str, Any], text: str) -> int | None:
    """The exit code of an observation: v2's `extra.returncode`, else the one in its text."""
    code = obj(raw.get("extra")).get("returncode")
    if isinstance(code, int) and not isinstance(code, bool):
        return code
    found = RETURNCODE.search(text)
    return None if found is None else int(found.group(1) or found.group(2))


def _ground_truth(info: dict[str, Any]) -> GroundTruth:
    truth = GroundTruth()
    if isinstance(info.get("exit_status"), str):
        truth.outcome["exit_status"] = info["exit_status"]
    submission = info.get("submission")
    if isinstance(submission, str):
        truth.patch_files = patch_files(submission)
    return truth


def patch_files(diff: str) -> list[str]:
    """The files a unified diff touches, in order, each once."""
    found = [b for _a, b in DIFF_FILE.findall(diff)] or PLUS_FILE.findall(diff)
    return list(dict.fromkeys(found))


def _cost(stats: Any) -> float | None:
    if not isinstance(stats, dict):
        return None
    value = stats.get("instance_cost", stats.get("cost"))
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
