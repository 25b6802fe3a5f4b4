"""A ctxlab thread, read from its store (through harness.store's named queries), as a `Trace`
(trace.py): the one shape every source is imported through, so a ctxlab run and another
harness's trace get their probes from the same walk and the same rules (to_scenario.py).

The thread's messages as the model saw them first (an offloaded result whole), every run of
the thread in order; each subagent run as a sub-trace naming the `task` call that started it;
each summary the harness's summarization wrote as a `Compaction` where it fell, with the
messages it kept verbatim. Synthetic messages (summaries, placeholders, cleared results) are
not the run's conversation and are left out of `messages`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from evals.errors import RunNotFoundError
from evals.sources.trace import Compaction, ToolDef, Trace, TraceMessage, TraceToolCall
from harness.files.paths import safe_segment
from harness.files.storage import whole_content

if TYPE_CHECKING:
    from harness.store import Reader

FORMAT = "ctxlab"
# Tools the harness itself provides: a replay runs them for real on its own store.
BUILTIN_TOOLS = frozenset(
    {"ls", "read_file", "write_file", "edit_file", "glob", "grep", "delete", "task"}
)


def thread_trace(con: Reader, thread: str, first: str, source: str) -> Trace:
    """The thread `thread` (whose first run is `first`) of the store read by `con`, as a
    `Trace` read from `source` (the store's file)."""
    runs = con.runs.of_thread(thread)
    config = json.loads(runs[0]["config"] or "{}") if runs else {}
    trace = _conversation(con, thread, first, source, config)
    trace.model = runs[0]["model"] if runs else None
    trace.metadata = {"thread": thread, "runs": [r["run_id"] for r in runs]}
    children = con.runs.children([r["run_id"] for r in runs])
    calls = [c.id for m in trace.messages for c in m.tool_calls if c.name == "task"]
    for child in children:
        call = next((c for c in calls for r in runs if _started(child, r["run_id"], c)), None)
        sub = _conversation(con, child["thread_id"], child["run_id"], source,
                            json.loads(child["config"] or "{}"))  # fmt: skip
        sub.parent_call_id = call
        sub.metadata = {"agent": str(child["agent"]).rsplit("/", 1)[-1]}
        trace.subagents.append(sub)
    return trace


def _started(child: dict[str, Any], run: str, call: str) -> bool:
    """Whether `child` is the subagent run that `run`'s `task` call `call` started (its thread
    is named after both, harness/middleware/subagents.py)."""
    base = safe_segment(f"{run}.task.{call}")
    return bool(child["thread_id"] == base or str(child["thread_id"]).startswith(f"{base}."))


def _conversation(
    con: Reader, thread: str, first: str, source: str, config: dict[str, Any]
) -> Trace:
    """One thread's messages and compactions, with the tools and prompt its config names."""
    trace = Trace(first, FORMAT, source)
    trace.system = str(config.get("system_prompt") or "")
    trace.tools = [
        ToolDef(t["name"], t.get("description", ""), t.get("parameters", {}))
        for t in config.get("tools", [])
    ]
    cuts = {s["cycle"]: s for s in con.summaries.all() if s["thread_id"] == thread}
    ids: list[str] = []  # each message's id, to count the messages a summary kept
    for row in con.messages.transcript(thread):
        text = row.full_content if row.full_content is not None else row.content
        if row.kind == "summary":
            cut = cuts.get(row.meta.get("cycle"))
            raw = cut["message_ids"] if cut else "[]"
            gone = set(json.loads(raw) if isinstance(raw, str) else raw)
            last = max((i for i, m in enumerate(ids) if m in gone), default=len(ids) - 1)
            trace.compactions.append(Compaction(
                index=len(trace.messages), summary=text, trigger="auto",
                kept=len(ids) - 1 - last,
                tokens_before=cut["tokens_before"] if cut else None,
                tokens_after=cut["tokens_after"] if cut else None,
            ))  # fmt: skip
            continue
        if row.kind != "message":  # a placeholder or a cleared result: not the run's
            continue
        if row.role == "system":
            trace.system = trace.system or text
            continue
        ids.append(row.id)
        trace.messages.append(TraceMessage(
            row.role, text,
            [TraceToolCall(c.id, c.name, dict(c.arguments), c.raw_arguments)
             for c in row.tool_calls],
            tool_call_id=row.tool_call_id,
            tool_name=row.name if row.role == "tool" else None,
            is_error=row.is_error,
        ))  # fmt: skip
    return trace


def resolve(con: Reader, run_id: str | None, thread: str | None) -> tuple[str, str]:
    """(thread, run id) of what to import: a run (a subagent's resolves to its parent's
    thread), a `ctxlab run` session id or a thread id; or `thread`, whose first run names
    it."""
    if run_id is not None:
        row = con.runs.get(run_id)
        if row is None and _has_table(con, "flow_runs"):
            # A `ctxlab run` session (flows' own table): its first turn's run.
            found = con.query(
                "SELECT f.run_id, f.thread_id, NULL AS parent_run_id FROM flow_runs f "
                "WHERE f.session_id = ? ORDER BY f.turn LIMIT 1",
                [run_id],
            )
            row = found[0] if found else None
        if row is None:  # a thread id, as `ctxlab run` prints it: its first run
            row = con.runs.first_of_thread(run_id)
        if row is None:
            raise RunNotFoundError(f"no run, session or thread {run_id!r} in the store")
        while row["parent_run_id"] is not None:
            parent = con.runs.get(row["parent_run_id"])
            if parent is None:
                raise RunNotFoundError(f"run {run_id!r}: its parent run is not in the store")
            row = parent
        if thread is not None and row["thread_id"] != thread:
            raise RunNotFoundError(
                f"run {run_id!r} is on thread {row['thread_id']!r}, not {thread!r}"
            )
        return row["thread_id"], row["run_id"]
    assert thread is not None
    runs = con.runs.of_thread(thread)
    if not runs:
        raise RunNotFoundError(f"no thread {thread!r} in the store")
    return thread, runs[0]["run_id"]


def _has_table(con: Reader, name: str) -> bool:
    return any(r["name"] == name for r in con.query("SHOW TABLES"))


def text_files(con: Reader, prefix: str) -> list[dict[str, str]]:
    """The shared text files under `prefix` (the skills), as `path` and `content`."""
    rows = con.files.shared_text_files(prefix)
    return [{"path": r["path"], "content": _text(con, r["content"], r["blob_id"])} for r in rows]


def _text(con: Reader, inline: bytes | None, blob_id: str | None) -> str:
    """A text file's content, whether inline or in chunks (files over 256 KiB)."""
    return whole_content(con.files, inline, blob_id).decode("utf-8", errors="replace")
