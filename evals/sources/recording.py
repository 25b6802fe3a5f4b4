"""A recorded run as read from the store (through harness.store's named queries): its user
turns and the agent's steps (planned by plan.py), the tool results as sources of cues, the
subagents' tasks and the recorded replies of the agent's own tools. Every string is redacted
as it is read, so no cue or slot is built from what the redaction took out."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.errors import RunNotFoundError
from evals.scenarios.format import reply_key
from evals.sources.cues import Source
from evals.sources.plan import WRITTEN_ARGS, NotedValue, Planner, rendered_step
from evals.sources.redact import Redactor
from harness.files.storage import whole_content

if TYPE_CHECKING:
    from harness.store import Reader

# Tools the harness itself provides: a replay runs them for real on its own store.
BUILTIN_TOOLS = frozenset(
    {"ls", "read_file", "write_file", "edit_file", "glob", "grep", "delete", "task"}
)
# What a question may be answered with: the agent looking in its own files.
READ_ONLY_TOOLS = frozenset({"read_file", "grep", "glob", "ls"})


@dataclass
class RecordedTurn:
    """One user turn of the run and what the agent did in answer."""

    id: str
    index: int
    text: str
    steps: list[dict[str, Any]]
    final: str
    run_id: str
    question: bool = False
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


@dataclass
class Recording:
    """Everything read from the store, before probes are derived."""

    turns: list[RecordedTurn]
    facts: list[NotedValue]
    sources: list[Source]
    files: dict[str, tuple[int, str]]  # path -> (turn last written, final content)
    notes: dict[str, tuple[int, str]]  # path -> (turn, the note of the write)
    user_said: list[tuple[str, int, str, str]] = field(default_factory=list)


# -- reading the store ---------------------------------------------------------------------


@dataclass(frozen=True)
class StoredThread:
    """The thread an import or export names, in the store it reads from."""

    con: Reader
    thread_id: str
    first_run: str
    runs: list[dict[str, Any]]


@contextmanager
def stored_thread(db: str, run_id: str | None, thread: str | None) -> Iterator[StoredThread]:
    """The thread of `run_id` (or `thread`, see `resolve`) in the store `db`, opened read-only
    and closed after. Raises `RunNotFoundError` when there is no such store, run or thread."""
    from harness.store import read_store

    if not Path(db).is_file():
        raise RunNotFoundError(f"no store at {db}")
    con = read_store(db)
    try:
        thread_id, first = resolve(con, run_id, thread)
        yield StoredThread(con, thread_id, first, con.runs.of_thread(thread_id))
    finally:
        con.close()


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
            row = con.runs.get(row["parent_run_id"])
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


def _messages(con: Reader, thread: str, redactor: Redactor) -> list[dict[str, Any]]:
    """The thread's messages, redacted as they are read: cues and slots are then built from
    the redacted text, so no pattern can carry what the redaction took out."""
    rows = con.messages.thread_messages(thread)
    for row in rows:
        row["text"] = redactor.text(row["text"])
        if row["tool_calls"]:
            row["tool_calls"] = json.dumps(redactor.value(json.loads(row["tool_calls"])))
    return rows


def _calls(row: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (c["id"], c["name"], c.get("arguments") or {})
        for c in json.loads(row["tool_calls"] or "[]")
    ]


def read_recording(con: Reader, thread: str, system_prompt: str, redactor: Redactor) -> Recording:
    messages = _messages(con, thread, redactor)
    runs = con.runs.of_thread(thread)
    order = {r["run_id"]: i for i, r in enumerate(runs)}
    user_texts = [m["text"] for m in messages if m["role"] == "user"]
    planner = Planner([system_prompt, *user_texts])
    sources: list[Source] = []
    turns: list[RecordedTurn] = []
    calls_by_id: dict[str, tuple[str, dict[str, Any]]] = {}
    files: dict[str, tuple[int, str]] = {}
    notes: dict[str, tuple[int, str]] = {}
    current: RecordedTurn | None = None
    for m in messages:
        if m["run_id"] not in order:
            continue
        if m["role"] == "user":
            current = RecordedTurn(f"u{len(turns):03d}", len(turns), m["text"], [], "", m["run_id"])
            turns.append(current)
            sources.append(Source(f"turn {current.index} user message", "user", m["text"],
                                  current.index))  # fmt: skip
            continue
        if current is None:
            continue
        if m["role"] == "tool":
            name, args = calls_by_id.get(m["tool_call_id"] or "", (m["name"] or "tool", {}))
            read = f" {args['file_path']}" if name == "read_file" and "file_path" in args else ""
            ref = f"turn {current.index} {name}{read} result ({m['message_id']})"
            sources.append(Source(ref, "tool", m["text"], current.index))
            continue
        calls = _calls(m)
        if not calls:
            current.final = m["text"]
            sources.append(Source(f"turn {current.index} reply", "agent", m["text"], current.index))
            continue
        plain = [(n, a) for _, n, a in calls]
        for call_id, name, args in calls:
            calls_by_id[call_id] = (name, args)
        current.calls += plain
        where = f"turn {current.index} step {len(current.steps) + 1}"
        current.steps.append(planner.step(m["text"], plain, sources, current.index, where))
        for name, args in plain:
            path = args.get("file_path")
            if name in WRITTEN_ARGS and isinstance(path, str):
                notes[path] = (current.index, m["text"])
                files[path] = (current.index, "")
        sources.append(Source(f"{where} note", "agent", rendered_step(m["text"], plain),
                              current.index))  # fmt: skip
    for turn in turns:
        turn.question = _is_question(turn)
    return Recording(turns, list(planner.facts.values()), sources, files, notes, planner.user_said)


def _is_question(turn: RecordedTurn) -> bool:
    """A user question the agent answered from what it had (at most searching its files):
    the recorded answer is what a replay is scored against."""
    first = turn.text.strip().split("\n", 1)[0].strip()
    return (
        first.endswith("?")
        and all(name in READ_ONLY_TOOLS for name, _ in turn.calls)
        and 0 < len(turn.final) <= 300
    )


def read_tasks(con: Reader, parent_runs: Sequence[str], redactor: Redactor) -> list[dict[str, Any]]:
    """The subagents' tasks as plan turns, recognised by their text; each slots what its
    own tool results showed."""
    tasks: list[dict[str, Any]] = []
    if not parent_runs:
        return tasks
    subs = con.runs.children(parent_runs)
    seen: set[str] = set()
    for sub in subs:
        messages = _messages(con, sub["thread_id"], redactor)
        users = [m for m in messages if m["role"] == "user"]
        if not users:
            continue
        prompt = users[0]["text"]
        key = prompt.strip().split("\n", 1)[0].strip()
        if key in seen:
            continue  # the same task twice: a replay follows the first recording
        seen.add(key)
        planner = Planner([prompt])
        sources = [Source("task prompt", "user", prompt, 0)]
        steps: list[dict[str, Any]] = []
        final = ""
        for m in messages[1:]:
            if m["role"] == "tool":
                sources.append(Source(f"task {len(tasks)} {m['name']} result ({m['message_id']})",
                                      "tool", m["text"], 0))  # fmt: skip
            elif m["role"] == "assistant":
                calls = [(n, a) for _, n, a in _calls(m)]
                if calls:
                    steps.append(planner.step(m["text"], calls, sources, 0, f"task {len(tasks)}"))
                    sources.append(Source("task note", "agent", rendered_step(m["text"], calls), 0))
                else:
                    final = m["text"]
        config = json.loads(sub["config"] or "{}")
        tasks.append({"subagent": str(sub["agent"]).rsplit("/", 1)[-1], "prompt": prompt,
                      "steps": steps, "final": final or "Done.",
                      "system_prompt": config.get("system_prompt"),
                      "tools": [t["name"] for t in config.get("tools", [])
                                if t["name"] not in BUILTIN_TOOLS]})  # fmt: skip
    return tasks


def read_replies(con: Reader, threads: Sequence[str], redactor: Redactor) -> list[dict[str, Any]]:
    """Every recorded result of the agent's own tools, keyed by tool, arguments and
    occurrence, in the order they were made."""
    replies: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    for thread in threads:
        messages = _messages(con, thread, redactor)
        pending: dict[str, tuple[str, dict[str, Any]]] = {}
        for m in messages:
            for call_id, name, args in _calls(m):
                pending[call_id] = (name, args)
            if m["role"] == "tool" and m["tool_call_id"] in pending:
                name, args = pending.pop(m["tool_call_id"])
                if name in BUILTIN_TOOLS:
                    continue
                key = reply_key(name, args)
                counts[key] = counts.get(key, 0) + 1
                replies.append({"tool": name, "arguments": args, "occurrence": counts[key],
                                "content": m["text"]})  # fmt: skip
    return replies


def text_files(con: Reader, prefix: str) -> list[dict[str, str]]:
    """The shared text files under `prefix` (the skills), as `path` and `content`."""
    rows = con.files.shared_text_files(prefix)
    return [{"path": r["path"], "content": _text(con, r["content"], r["blob_id"])} for r in rows]


def file_text(con: Reader, thread: str, path: str) -> str:
    """The final text of the thread's file `path` ("" if it has none or is binary)."""
    row = con.files.thread_file(thread, path)
    if row is None or not row["is_text"]:
        return ""
    return _text(con, row["content"], row["blob_id"])


def _text(con: Reader, inline: bytes | None, blob_id: str | None) -> str:
    """A text file's content, whether inline or in chunks (files over 256 KiB)."""
    return whole_content(con.files, inline, blob_id).decode("utf-8", errors="replace")
