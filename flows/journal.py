"""The step journal: what a flow run needs, besides the harness tables, to resume after a crash.

The loop commits a step's messages before each model call, so a run killed mid-step loses only
what that step did since: the model's reply and the tool calls it asked for. Every model call
and tool call that completes is therefore written at once to `step_journal`; a resumed run
takes each result from there instead of calling the model or the tool again. A tool's record
commits in one transaction with what the tool wrote to the store (`JournaledRunner`): killed
in between, neither is kept, and the tool runs again from scratch, so its result reads the
same ("Created /notes.md", not "Overwrote").

Records are plain JSON with a schema name and version (`{"schema": "ctxlab.step_journal",
"version": 1, "kind": ..., "value": ...}`): a model reply, a tool's text, or a model's
checkpoint. Nothing is unpickled or evaluated: a row that is not such a record (an old pickled
one, or one crafted into a DuckDB file) stops the resume with a `JournalError` naming it.

Keys: a tool call is its call id (unique, and the replayed model reply carries the same ids);
a model call (the loop's, or a middleware's such as the summarizer's) is a hash of its name
and request: the window, settings, tools and system prompt, without the memory blocks of the
prompt. Memory is shared and durable: a tool of the step that was cut off may already have
changed it, and the replayed call must still be found.
Middleware steps are not journaled: they change the run's state in memory (the window,
events), so they must run again on resume. Offload and memory writes are idempotent (the same
path; a memory version only when the text changed); a summarization cut off after its step
and before the next commit runs again: its summarizer call is replayed from the journal and
its history section is rewritten in place, never appended twice.

A model that keeps its own place in a conversation (the simulated model follows a plan) can
offer `checkpoint()` and `restore(state)`: its checkpoint is journaled with each of its calls
and the last one is restored on resume.

`flow_runs` records how each run of a session was started (agent, model, strategy, thread, the
session's inputs) so that `ctxlab run --resume RUN_ID` can rebuild the same agent and finish
the session. Both tables are created here, outside the harness migrations, because only flows
use them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, get_args

from flows.journal_blobs import blob_ids, spill, unspill
from harness.messages import Message, ModelResponse, StopReason, ToolCall, Usage
from harness.models.base import RequestParams
from harness.steps import StepRunner
from harness.store import Store, now
from harness.tools import ToolContext

T = TypeVar("T")

TABLES = """
CREATE TABLE IF NOT EXISTS flow_runs (
    run_id VARCHAR PRIMARY KEY, session_id VARCHAR NOT NULL, turn INTEGER NOT NULL,
    inputs JSON NOT NULL, thread_id VARCHAR NOT NULL, agent VARCHAR NOT NULL,
    model VARCHAR NOT NULL, strategy VARCHAR, params JSON, flow_run_id VARCHAR,
    attempts INTEGER NOT NULL, started_at TIMESTAMP NOT NULL, updated_at TIMESTAMP NOT NULL
);
CREATE TABLE IF NOT EXISTS step_journal (
    scope VARCHAR NOT NULL, name VARCHAR NOT NULL, key VARCHAR NOT NULL,
    result BLOB NOT NULL, task_run_id VARCHAR, created_at TIMESTAMP NOT NULL
);
"""

SCHEMA = "ctxlab.step_journal"
VERSION = 1


class JournalError(Exception):
    """A `step_journal` row is not a journal record this ctxlab wrote; resuming stops."""


def ensure_tables(store: Store) -> None:
    with store.transaction() as con:
        con.execute(TABLES)


def is_journaled(name: str) -> bool:
    """Model and tool calls are journaled: they cost money or act on the world."""
    return name == "model" or name.startswith("tool:")


def step_key(name: str, args: Sequence[Any]) -> str:
    """The journal key of a model or tool step, stable across processes."""
    if name.startswith("tool:"):
        ctx = next((a for a in args if isinstance(a, ToolContext)), None)
        if ctx is not None:
            return f"{name}:{ctx.call.id}"
    digest = hashlib.sha256(name.encode())
    for arg in args:
        _feed(digest, arg)
    return f"{name}:{digest.hexdigest()[:40]}"


_MEMORY_BLOCK = re.compile(r"<agent_memory\b[^>]*>.*?</agent_memory>", re.DOTALL)


def _feed(digest: Any, value: Any) -> None:
    if isinstance(value, Message):
        calls = [(c.id, c.name, c.arguments) for c in value.tool_calls]
        payload: Any = [value.role, value.content, value.tool_call_id, value.name, value.kind]
        payload.append(calls)
    elif isinstance(value, RequestParams):
        payload = [_MEMORY_BLOCK.sub("<agent_memory/>", value.system_prompt), list(value.tools)]
    elif isinstance(value, list | tuple):
        for item in value:
            _feed(digest, item)
        return
    else:
        # Settings and plain arguments; objects without a stable text form are skipped
        # rather than hashed by identity, which would change across processes.
        payload = value if isinstance(value, dict | str | int | float | bool | None) else None
    # surrogatepass: a lone surrogate in a tool's text must not make the key fail.
    digest.update(json.dumps(payload, sort_keys=True, default=str).encode("utf-8", "surrogatepass"))
    digest.update(b"\x1e")


STATE_PREFIX = "model-state:"


def state_key(model: Any) -> str:
    return f"{STATE_PREFIX}{getattr(model, 'name', type(model).__name__)}"


# -- records: plain JSON, checked field by field when read back ------------------------------


def encode(value: Any, *, checkpoint: bool = False) -> bytes | None:
    """The journal record of a step result (a model reply or text), or of a model's
    checkpoint (JSON data); None for a value that has no record (it is recomputed on resume)."""
    if checkpoint:
        kind, data = "checkpoint", value
    elif isinstance(value, ModelResponse):
        kind, data = "model_response", _response_data(value)
    elif isinstance(value, str):
        kind, data = "text", value
    else:
        return None
    record = {"schema": SCHEMA, "version": VERSION, "kind": kind, "value": data}
    try:
        # ASCII escapes keep even a lone surrogate exactly, so a replay sees what the step saw.
        return json.dumps(record, allow_nan=False).encode("ascii")
    except (TypeError, ValueError):
        return None


def decode(blob: bytes, *, where: str) -> tuple[str, Any]:
    """(kind, value) of a journal record; `JournalError` naming `where` when it is not one."""

    def refuse(why: str) -> JournalError:
        return JournalError(
            f"{where} is not a ctxlab step journal record ({why}); refusing to resume from it. "
            "Delete that row to recompute the step, or start the session again."
        )

    try:
        record = json.loads(bytes(blob).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise refuse(
            "not JSON text; journals written before records were JSON were pickles"
        ) from None
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        raise refuse(f"no {SCHEMA!r} schema field")
    if record.get("version") != VERSION:
        raise refuse(f"version {record.get('version')!r}, this ctxlab reads version {VERSION}")
    kind, value = record.get("kind"), record.get("value")
    try:
        if kind == "model_response":
            return kind, _response_from(value)
        if kind == "text" and isinstance(value, str):
            return kind, value
        if kind == "checkpoint" and isinstance(value, dict):
            return kind, value
    except (TypeError, ValueError, KeyError) as exc:
        raise refuse(f"malformed {kind}: {exc}") from None
    raise refuse(f"unknown kind {kind!r} or a value of the wrong type")


def _response_data(r: ModelResponse) -> dict[str, Any]:
    return {
        "text": r.text,
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments, "raw_arguments": c.raw_arguments}
            for c in r.tool_calls
        ],
        "usage": {
            "input_tokens": r.usage.input_tokens,
            "output_tokens": r.usage.output_tokens,
            "cached_tokens": r.usage.cached_tokens,
            "cache_write_tokens": r.usage.cache_write_tokens,
            "requests": r.usage.requests,
            "cost_usd": r.usage.cost_usd,
        },
        "stop_reason": r.stop_reason,
        "model_name": r.model_name,
        "provider_items": list(r.provider_items),
    }


def _typed(value: Any, kind: type | tuple[type, ...], name: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise TypeError(f"{name} is {type(value).__name__}")
    return value


def _response_from(data: Any) -> ModelResponse:
    data = _typed(data, dict, "the reply")
    calls = []
    for c in _typed(data["tool_calls"], list, "tool_calls"):
        c = _typed(c, dict, "a tool call")
        raw = c.get("raw_arguments")
        calls.append(
            ToolCall(
                id=_typed(c["id"], str, "a tool call id"),
                name=_typed(c["name"], str, "a tool name"),
                arguments=_typed(c["arguments"], dict, "tool arguments"),
                raw_arguments=None if raw is None else _typed(raw, str, "raw_arguments"),
            )
        )
    u = _typed(data["usage"], dict, "usage")
    counts = {
        k: _typed(u[k], int, k)
        for k in ("input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens",
                  "requests")
    }  # fmt: skip
    stop = data["stop_reason"]
    if stop not in get_args(StopReason):
        raise ValueError(f"stop_reason {stop!r}")
    items = _typed(data["provider_items"], list, "provider_items")
    return ModelResponse(
        text=_typed(data["text"], str, "text"),
        tool_calls=tuple(calls),
        usage=Usage(**counts, cost_usd=float(_typed(u["cost_usd"], (int, float), "cost_usd"))),
        stop_reason=stop,
        model_name=_typed(data["model_name"], str, "model_name"),
        provider_items=tuple(_typed(i, dict, "a provider item") for i in items),
    )


@dataclass(frozen=True, slots=True)
class Entry:
    value: Any
    task_run_id: str | None


class Journal:
    """Journaled step results of one run (`scope`: the top-level run id; its subagents'
    steps share it). With `replay=True` it loads what an earlier attempt completed, and
    raises `JournalError` on a row that is not a record."""

    def __init__(self, store: Store, scope: str, *, replay: bool = False) -> None:
        self.store = store
        self.scope = scope
        self._pending: dict[str, deque[Entry]] = defaultdict(deque)
        self._states: dict[str, Any] = {}
        self.recorded = 0
        self.replayed = 0
        if replay:
            rows = self.store.query(
                "SELECT key, result, task_run_id FROM step_journal WHERE scope = ? "
                "ORDER BY created_at, rowid",
                [scope],
            )
            for row in rows:
                where = f"step_journal row {row['key']!r} of run {scope!r} in {store.path}"
                record = unspill(store, row["result"])
                if record is None:
                    raise JournalError(f"{where} names stored chunks that are gone or short")
                kind, value = decode(record, where=where)
                if row["key"].startswith(STATE_PREFIX) != (kind == "checkpoint"):
                    raise JournalError(f"{where} holds a {kind} under the wrong key")
                if kind == "checkpoint":
                    self._states[row["key"]] = value  # rows come oldest first: last one wins
                else:
                    self._pending[row["key"]].append(Entry(value, row["task_run_id"]))

    def take(self, key: str) -> Entry | None:
        """The result an earlier attempt recorded under `key`, each result used once."""
        queue = self._pending.get(key)
        if not queue:
            return None
        self.replayed += 1
        return queue.popleft()

    def record(
        self, name: str, key: str, value: Any, task_run_id: str | None, *, model: Any = None
    ) -> None:
        """Commit one completed step's result now, in one transaction, with the checkpoint
        of the model that produced it when the model keeps one (a record over 4 MB: its
        chunks first, in transactions of their own, see `flows.journal_blobs`)."""
        blob = encode(value)
        if blob is None:
            return  # a result with no record is recomputed on resume
        rows = [(key, spill(self.store, blob))]
        if model is not None and callable(getattr(model, "checkpoint", None)):
            state = encode(model.checkpoint(), checkpoint=True)
            if state is None:
                return  # replaying the call without the model's place would skip a step
            rows.append((state_key(model), state))
        stamp = now()
        with self.store.transaction() as con:
            if len(rows) > 1:  # only the latest checkpoint is ever restored
                con.execute(
                    "DELETE FROM step_journal WHERE scope = ? AND key = ?", [self.scope, rows[1][0]]
                )
            con.executemany(
                "INSERT INTO step_journal VALUES (?, ?, ?, ?, ?, ?)",
                [[self.scope, name, k, b, task_run_id, stamp] for k, b in rows],
            )
        self.recorded += 1

    def restore_model(self, model: Any) -> bool:
        """Give `model` back the checkpoint of its last journaled call, if it keeps one."""
        state = self._states.get(state_key(model))
        if state is None or not callable(getattr(model, "restore", None)):
            return False
        model.restore(state)
        return True

    def clear(self) -> None:
        """Drop the journal of a finished run: everything it did is in the harness tables."""
        chunked = blob_ids(self.store, self.scope)
        with self.store.unit() as uow:
            if chunked:
                uow.files.delete_blobs(chunked)
            uow.sql.execute("DELETE FROM step_journal WHERE scope = ?", [self.scope])

    @property
    def remaining(self) -> int:
        return sum(len(q) for q in self._pending.values())


# Tools that run a whole agent (a subagent): its steps commit, and journal, themselves.
RUNS_AGENTS = frozenset({"tool:task"})


class JournaledRunner:
    """A step runner around another (inline, or Prefect's) that journals each model and tool
    call as it completes, and on resume hands back what an earlier attempt recorded instead
    of running it.

    The record is written inside the step (so under Prefect it carries the task run id), in
    one transaction with whatever the step wrote to the store (`Store.atomic`): a tool killed
    after writing a file but before its record leaves neither, and runs again from scratch
    on resume, so its result reads the same. Tools in `RUNS_AGENTS` are not wrapped."""

    def __init__(self, inner: StepRunner, journal: Journal) -> None:
        self.inner = inner
        self.journal = journal

    async def run(
        self, name: str, fn: Callable[..., Awaitable[T]], /, *args: Any, **kwargs: Any
    ) -> T:
        if not is_journaled(name):
            return await self.inner.run(name, fn, *args, **kwargs)
        key = step_key(name, args)
        entry = self.journal.take(key)
        if entry is not None:
            value: T = entry.value
            return value
        model = getattr(fn, "__self__", None) if name == "model" else None

        async def journaled(*a: Any, **kw: Any) -> T:
            if name in RUNS_AGENTS:
                result = await fn(*a, **kw)
                self.journal.record(name, key, result, self.inner.current_step_id())
                return result
            with self.journal.store.atomic():
                result = await fn(*a, **kw)
                if name == "model":
                    # The file stays open from this record to the step's commit (the loop
                    # lets it go then, or while tools are slow): one open a step, not one a
                    # record (an open and close cost 20-80 ms, the record ~2 ms).
                    self.journal.store.keep_open()
                self.journal.record(name, key, result, self.inner.current_step_id(), model=model)
            return result

        return await self.inner.run(name, journaled, *args, **kwargs)

    def current_step_id(self) -> str | None:
        return self.inner.current_step_id()

    def no_step_reason(self, hook: str) -> str:
        """The wrapped runner's reason (the journal adds no steps of its own)."""
        explain = getattr(self.inner, "no_step_reason", None)
        return str(explain(hook)) if callable(explain) else f"{hook} ran outside any step"
