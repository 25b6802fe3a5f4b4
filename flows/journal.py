"""The step journal: what a flow run needs, besides the harness tables, to resume after a crash.

The loop commits a step's messages before each model call, so a run killed mid-step loses only
what that step did since: the model's reply and the tool calls it asked for. Every model call
and tool call that completes is therefore written at once to `step_journal`; a resumed run
takes each result from there instead of calling the model or the tool again.

Results are pickled (model replies, tool output, a model's checkpoint): open a journal only
from a store you trust as you trust your code.

Keys: a tool call is its call id (unique, and the replayed model reply carries the same ids);
a model call is a hash of the request (same window and prompt after a restart, same key).
Middleware steps are not journaled: they change the run's state in memory (the window,
events), so they must run again on resume. Offload and memory writes are idempotent (the same
path; a memory version only when the text changed); a summarization cut off after its step
and before the next commit runs again, and appends its history section a second time.

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
import pickle
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.messages import Message
from harness.models.base import RequestParams
from harness.store import Store, now
from harness.tools import ToolContext

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


def _feed(digest: Any, value: Any) -> None:
    if isinstance(value, Message):
        calls = [(c.id, c.name, c.arguments) for c in value.tool_calls]
        payload: Any = [value.role, value.content, value.tool_call_id, value.name, value.kind]
        payload.append(calls)
    elif isinstance(value, RequestParams):
        payload = [value.system_prompt, list(value.tools)]
    elif isinstance(value, list | tuple):
        for item in value:
            _feed(digest, item)
        return
    else:
        # Settings and plain arguments; objects without a stable text form are skipped
        # rather than hashed by identity, which would change across processes.
        payload = value if isinstance(value, dict | str | int | float | bool | None) else None
    digest.update(json.dumps(payload, sort_keys=True, default=str).encode())
    digest.update(b"\x1e")


STATE_PREFIX = "model-state:"


def state_key(model: Any) -> str:
    return f"{STATE_PREFIX}{getattr(model, 'name', type(model).__name__)}"


@dataclass(frozen=True, slots=True)
class Entry:
    value: Any
    task_run_id: str | None


class Journal:
    """Journaled step results of one run (`scope`: the top-level run id; its subagents'
    steps share it). With `replay=True` it loads what an earlier attempt completed."""

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
                value = pickle.loads(bytes(row["result"]))
                if row["key"].startswith(STATE_PREFIX):
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
        """Commit one completed step's result now, in its own transaction, with the
        checkpoint of the model that produced it when the model keeps one."""
        rows = []
        try:
            rows.append([key, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)])
            if model is not None and callable(getattr(model, "checkpoint", None)):
                state = pickle.dumps(model.checkpoint(), protocol=pickle.HIGHEST_PROTOCOL)
                rows.append([state_key(model), state])
        except (pickle.PicklingError, TypeError, AttributeError):
            return  # a result that cannot be stored is recomputed on resume
        stamp = now()
        with self.store.transaction() as con:
            if len(rows) > 1:  # only the latest checkpoint is ever restored
                con.execute(
                    "DELETE FROM step_journal WHERE scope = ? AND key = ?", [self.scope, rows[1][0]]
                )
            con.executemany(
                "INSERT INTO step_journal VALUES (?, ?, ?, ?, ?, ?)",
                [[self.scope, name, k, blob, task_run_id, stamp] for k, blob in rows],
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
        self.store.execute("DELETE FROM step_journal WHERE scope = ?", [self.scope])

    @property
    def remaining(self) -> int:
        return sum(len(q) for q in self._pending.values())
