"""Synthetic trace files in the shapes other harnesses write, for the import benchmarks.

`write_corpus` writes a folder of agent runs across formats (mostly OpenAI Chat,
mini-swe-agent and Claude Code sessions, some Anthropic Messages and Responses), median
~75k characters, a few near 2 MB, the way #18 describes a user's folder of real runs: tool
calls with ids, results that hold file contents and command output, and identifiers, line
numbers and paths that a result shows and a later call or answer uses again. `write_session`
writes one Claude Code session of many megabytes (progress events, an answer's parallel
calls, a compaction) to measure streaming.

Every file comes from a seeded `random.Random`, so a corpus is the same on every machine.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from corpus_runs import Run, make_run, run_size

# (format, share of the folder): most real folders are chat logs, coding agents and IDE sessions.
MIX = (
    ("openai-chat", 0.35),
    ("mini-swe-agent", 0.30),
    ("claude-code", 0.20),
    ("anthropic", 0.08),
    ("openai-responses", 0.07),
)
SUFFIX = {
    "openai-chat": ".json",
    "mini-swe-agent": ".traj.json",
    "claude-code": ".jsonl",
    "anthropic": ".json",
    "openai-responses": ".json",
}
SYSTEM = "You are a careful software engineer. Use the tools to inspect and change the repository."
TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
    {
        "name": "grep",
        "description": "Search files",
        "parameters": {
            "type": "object",
            "properties": {"pattern": {"type": "string"}, "path": {"type": "string"}},
        },
    },
    {
        "name": "run_tests",
        "description": "Run tests",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
    {
        "name": "edit_file",
        "description": "Replace a line",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "line": {"type": "integer"}},
        },
    },
]


def _chat(run: Run, model: str) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": run.task},
    ]
    for n, step in enumerate(run.steps, 1):
        call = {
            "id": f"call_{n:04d}",
            "type": "function",
            "function": {"name": step.tool, "arguments": json.dumps(step.arguments)},
        }
        messages.append({"role": "assistant", "content": step.thought, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": step.result})
    messages.append({"role": "assistant", "content": run.answer})
    tools = [{"type": "function", "function": t} for t in TOOLS]
    return {"model": model, "tools": tools, "messages": messages}


def _mini(run: Run, model: str) -> dict[str, Any]:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": run.task}]
    for step in run.steps:
        action = f"THOUGHT: {step.thought}\n\n```mswea_bash_command\n{step.command}\n```"
        messages.append({"role": "assistant", "content": action})
        code = 1 if step.failed else 0
        messages.append(
            {
                "role": "user",
                "content": f"<returncode>{code}</returncode>\n<output>\n{step.result}\n</output>",
            }
        )
    submit = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff"
    messages.append(
        {"role": "assistant", "content": f"{run.answer}\n\n```mswea_bash_command\n{submit}\n```"}
    )
    # The submission answers the last command: a run that edited nothing still shows a diff.
    edited = [s.arguments["path"] for s in run.steps if s.tool == "edit_file"]
    edited = edited or [run.steps[0].arguments["path"]]
    diff = "".join(f"diff --git a/{p} b/{p}\n--- a/{p}\n+++ b/{p}\n" for p in dict.fromkeys(edited))
    info = {
        "exit_status": "Submitted",
        "submission": diff,
        "mini_version": "2.1.0",
        "model_stats": {
            "instance_cost": round(len(run.steps) * 0.004, 4),
            "api_calls": len(run.steps) + 1,
        },
        "config": {"model": {"model_name": model}},
    }
    return {"info": info, "messages": messages, "trajectory_format": "mini-swe-agent-1.1"}


def _anthropic(run: Run, model: str) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": run.task}]
    for n, step in enumerate(run.steps, 1):
        tid = f"toolu_{n:04d}"
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Next step.", "signature": "c2ln"},
                    {"type": "text", "text": step.thought},
                    {"type": "tool_use", "id": tid, "name": step.tool, "input": step.arguments},
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": tid,
                        "is_error": step.failed,
                        "content": [{"type": "text", "text": step.result}],
                    }
                ],
            }
        )
    messages.append({"role": "assistant", "content": [{"type": "text", "text": run.answer}]})
    tools = [
        {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
        for t in TOOLS
    ]
    return {"model": model, "system": SYSTEM, "tools": tools, "messages": messages}


def _responses(run: Run, model: str) -> dict[str, Any]:
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": run.task}]}
    ]
    for n, step in enumerate(run.steps, 1):
        items.append({"type": "reasoning", "id": f"rs_{n}", "summary": []})
        items.append(
            {
                "type": "function_call",
                "call_id": f"call_{n:04d}",
                "name": step.tool,
                "arguments": json.dumps(step.arguments),
            }
        )
        items.append(
            {"type": "function_call_output", "call_id": f"call_{n:04d}", "output": step.result}
        )
    items.append(
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": run.answer}],
        }
    )
    tools = [{"type": "function", **t} for t in TOOLS]
    return {"model": model, "instructions": SYSTEM, "tools": tools, "input": items}


def _claude_events(run: Run, rng: random.Random, session: str) -> Iterator[dict[str, Any]]:
    """A Claude Code session's events: one per content block, progress events under each
    call, now and then an answer of two parallel calls, usage on every assistant event."""
    parent: str | None = None
    count = 0

    def event(
        kind: str, body: dict[str, Any] | None, under: str | None, **extra: Any
    ) -> dict[str, Any]:
        nonlocal count
        count += 1
        out = {
            "parentUuid": under,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/work/repo",
            "sessionId": session,
            "version": "2.1.9",
            "type": kind,
            "uuid": f"{session}-{count:07d}",
            "timestamp": "2026-07-01T08:00:00.000Z",
            **extra,
        }
        if body is not None:
            out["message"] = body
        return out

    def assistant(mid: str, block: dict[str, Any]) -> dict[str, Any]:
        usage = {
            "input_tokens": rng.randint(1, 9),
            "output_tokens": rng.randint(20, 400),
            "cache_read_input_tokens": rng.randint(10_000, 150_000),
            "cache_creation_input_tokens": rng.randint(0, 4000),
        }
        return {
            "model": "claude-sonnet-4-5",
            "id": mid,
            "type": "message",
            "role": "assistant",
            "content": [block],
            "usage": usage,
        }

    yield {"type": "file-history-snapshot", "messageId": f"{session}-0000001", "snapshot": {}}
    first = event("user", {"role": "user", "content": run.task}, parent)
    parent = first["uuid"]
    yield first
    steps = list(enumerate(run.steps, 1))
    while steps:
        width = 2 if len(steps) > 1 and rng.random() < 0.2 else 1  # parallel calls
        batch, steps = steps[:width], steps[width:]
        mid = f"msg_{session[:6]}{batch[0][0]:05d}"
        text = event(
            "assistant", assistant(mid, {"type": "text", "text": batch[0][1].thought}), parent
        )
        yield text
        parent = text["uuid"]
        calls = []
        for n, step in batch:
            block = {
                "type": "tool_use",
                "id": f"toolu_{n:05d}",
                "name": step.tool,
                "input": step.arguments,
            }
            call = event("assistant", assistant(mid, block), parent)
            yield call
            parent = call["uuid"]
            calls.append((call["uuid"], n, step))
            yield event(
                "progress",
                None,
                call["uuid"],
                data={"type": "hook_progress"},
                toolUseID=f"toolu_{n:05d}",
            )
        for call_uuid, n, step in calls:  # each result is the child of its own call's event
            body = {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"toolu_{n:05d}",
                        "content": step.result,
                        "is_error": step.failed,
                    }
                ],
            }
            result = event("user", body, call_uuid, toolUseResult={"stdout": step.result[:200]})
            yield result
        parent = result["uuid"]
    yield event(
        "assistant",
        assistant(f"msg_{session[:6]}final", {"type": "text", "text": run.answer}),
        parent,
    )


def write_corpus(folder: Path, n: int = 500, seed: int = 0) -> list[Path]:
    """Writes `n` trace files into `folder` (made if missing), one run each, across the
    formats of `MIX`; about one in a hundred is near 2 MB. Returns the paths, in order."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    formats = [name for name, share in MIX for _ in range(round(share * n))]
    formats = (formats + [MIX[0][0]] * n)[:n]
    rng.shuffle(formats)
    large = set(rng.sample(range(n), max(1, n // 100))) if n >= 10 else set()
    paths = []
    for i, name in enumerate(formats):
        run = make_run(rng, run_size(rng, i in large))
        path = folder / f"run-{i:04d}{SUFFIX[name]}"
        model = rng.choice(("gpt-4.1", "gpt-5-mini", "claude-sonnet-4-5"))
        if name == "claude-code":
            with path.open("w") as f:
                for record in _claude_events(run, rng, f"s{seed:03d}{i:05d}"):
                    f.write(json.dumps(record) + "\n")
        else:
            render = {
                "openai-chat": _chat,
                "mini-swe-agent": _mini,
                "anthropic": _anthropic,
                "openai-responses": _responses,
            }[name]
            path.write_text(json.dumps(render(run, model), indent=1))
        paths.append(path)
    return paths


def write_session(path: Path, mb: int = 10, seed: int = 0) -> Path:
    """Writes one Claude Code session of about `mb` megabytes to `path`, a run at a time
    (each compacted into the next, as a long session is), never holding the file whole."""
    rng = random.Random(seed)
    target = mb * 1024 * 1024
    with path.open("w") as f:
        part = 0
        last: str | None = None
        while f.tell() < target:
            part += 1
            run = make_run(rng, min(400_000, target - f.tell() + 1000))
            for record in _claude_events(run, rng, f"long{part:04d}"):
                if record.get("parentUuid") is None and "uuid" in record and last is not None:
                    boundary = {
                        "parentUuid": None,
                        "logicalParentUuid": last,
                        "type": "system",
                        "subtype": "compact_boundary",
                        "uuid": f"boundary-{part}",
                        "sessionId": "long",
                        "isSidechain": False,
                        "content": "Conversation compacted",
                    }
                    f.write(json.dumps(boundary) + "\n")
                    record["parentUuid"] = boundary["uuid"]
                record["sessionId"] = "long"
                f.write(json.dumps(record) + "\n")
                last = record.get("uuid", last)
    return path
