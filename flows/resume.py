"""Resuming a run that died (SIGKILL, a lost machine, a failed model call) from what DuckDB holds.

What the store holds of a killed run is exact: the loop commits each step before the next model
call, so the thread's window, the run's model calls and its usage are all there up to the last
commit. A resumed run continues that thread under the same run id: `ResumeRun` (the first
middleware) restores the step counter and usage, the loop reloads the window, and the step
journal hands back the model and tool calls that completed after the last commit, so none of
them runs twice.

`run_session` is that whole path without Prefect: the `agent_run` flow (and so `ctxlab run`
and `ctxlab run --resume`) calls it with a Prefect step runner and hooks for its tags and
artifacts; the crash-point tests call it inline.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from flows.agents import AgentOptions, AgentSpec, build_agent
from flows.journal import TABLES, Journal, JournaledRunner, ensure_tables
from flows.session_lock import exclusive_session, shares_durable_state
from harness.files.paths import safe_segment
from harness.messages import Usage, new_id
from harness.middleware.base import Middleware
from harness.steps import InlineRunner, StepRunner
from harness.store import Store, now, storable_json

if TYPE_CHECKING:
    from harness.state import RunState

log = logging.getLogger("ctxlab.flows")


# A run that stopped at its step limit has finished too: resuming it would stop at once.
FINISHED = ("completed", "max_steps")
# A run that stopped short without failing: killed (left `running`) or interrupted.
UNFINISHED = ("running", "interrupted")


@dataclass(frozen=True)
class ResumePoint:
    """Where a run stopped: `fresh` when nothing of it reached the store (it starts over with
    its input), `done` when it had already finished."""

    run_id: str
    status: str | None
    messages: int
    steps: int
    usage: Usage
    peak_context_tokens: int
    started_at: datetime | None
    answered: bool = False

    @property
    def done(self) -> bool:
        return self.status in FINISHED

    @property
    def fresh(self) -> bool:
        return self.messages == 0


def find_resume_point(store: Store, run_id: str) -> ResumePoint:
    run = store.runs.get(run_id)
    steps, messages = store.messages.committed_steps(run_id)
    usage, peak = store.usage.of_run(run_id)
    last = store.messages.last(run_id)
    return ResumePoint(
        answered=last is not None and last.role == "assistant" and not last.tool_calls,
        run_id=run_id,
        status=run["status"] if run else None,
        messages=messages,
        steps=steps,
        usage=usage,
        peak_context_tokens=peak,
        started_at=run["started_at"] if run else None,
    )


def release_run(store: Store, point: ResumePoint) -> list[str]:
    """Make way for the resumed run under the same id: its `runs` row is written again when
    it starts (with the original start time restored), and the subagent runs whose `task`
    call will run again (neither its result committed nor journaled: the subagent was cut off,
    or finished just before the kill) are discarded with the runs below them. The call starts
    each anew with every model reply it had, from the journal; kept, their messages and model
    calls would count twice. Returns the discarded run ids."""
    store.runs.release(point.run_id)
    finished_calls = store.messages.answered_tool_calls(point.run_id) | {
        str(r["key"]).removeprefix("tool:task:")
        for r in store.query(
            "SELECT key FROM step_journal WHERE scope = ? AND name = 'tool:task'", [point.run_id]
        )
    }
    kept = tuple(safe_segment(f"{point.run_id}.task.{c}") for c in finished_calls)
    redo = [
        r["run_id"]
        for r in store.runs.children([point.run_id])
        if not any(r["thread_id"] == k or r["thread_id"].startswith(k + ".") for k in kept)
    ]
    return store.runs.discard(redo)


class ResumeRun(Middleware):
    """Restores the counters of a run continued from the store. Put it first in the stack so
    that every other hook sees the restored step."""

    name = "resume"

    def __init__(self, point: ResumePoint, attempt: int, discarded: Sequence[str] = ()) -> None:
        self.point = point
        self.attempt = attempt
        self.discarded = tuple(discarded)

    async def before_agent(self, state: RunState) -> None:
        await state.run_step("resume", self._restore, state)

    async def _restore(self, state: RunState) -> None:
        state.step = self.point.steps
        state.usage = self.point.usage
        state.peak_context_tokens = self.point.peak_context_tokens
        if self.point.started_at is not None:
            state.store.runs.set_started(state.run_id, self.point.started_at)
        state.event(
            self.name, "before_agent", "resumed",
            detail={"attempt": self.attempt, "from_step": self.point.steps,
                    "model_calls_before": self.point.usage.requests,
                    "subagent_runs_restarted": list(self.discarded)},
        )  # fmt: skip


# -- sessions: the inputs of `ctxlab run`, one run each, and how a killed one continues ------


@dataclass(frozen=True)
class Session:
    session_id: str
    agent: str
    model: str
    thread_id: str
    inputs: tuple[str, ...]
    strategy: str | None = None
    params: dict[str, Any] = field(default_factory=dict)


def load_session(store: Store, run_id: str) -> tuple[Session, int]:
    """The session a run belongs to, and the turn to continue from."""
    ensure_tables(store)
    rows = store.query("SELECT * FROM flow_runs WHERE run_id = ?", [run_id])
    if not rows:
        raise LookupError(
            f"no flow run recorded for run {run_id!r} in {store.path}: only runs started "
            "by `ctxlab run` or the agent_run flow can be resumed"
        )
    row = rows[0]
    session = Session(
        session_id=row["session_id"],
        agent=row["agent"],
        model=row["model"],
        thread_id=row["thread_id"],
        inputs=tuple(json.loads(row["inputs"])),
        strategy=row["strategy"],
        params=json.loads(row["params"] or "{}"),
    )
    return session, int(row["turn"])


@dataclass
class Turn:
    """One input of a session as it ran: `runner` is the step runner the caller made for it
    (its counts), `done_before` says it had already finished and nothing ran."""

    run_id: str
    turn: int
    attempt: int
    runner: StepRunner | None
    journal: Journal | None
    done_before: bool = False


# Called as a turn starts: (run id, attempt, flow run id of the attempt before, if any).
OnStart = Callable[[str, int, str | None], Awaitable[None]]


async def run_session(
    store: Store,
    spec: AgentSpec,
    session: Session,
    first_turn: int,
    *,
    runner: Callable[[], StepRunner],
    flow_run_id: str | None = None,
    on_start: OnStart | None = None,
    on_done: Callable[[Turn], Awaitable[None]] | None = None,
) -> list[Turn]:
    """Run the session's inputs from `first_turn` on, each continuing its run if an earlier
    attempt started it. `runner()` makes the step runner of a turn; the journal wraps it.
    `SessionBusy` if another session whose agent shares memory or skills runs on the store."""
    options = AgentOptions(store=store, step_runner=InlineRunner(), model=session.model,
                           strategy=session.strategy, params=session.params)  # fmt: skip
    if not shares_durable_state(spec.build(options)):
        return await _run_turns(store, spec, session, first_turn, runner, flow_run_id,
                                on_start, on_done)  # fmt: skip
    with exclusive_session(store.path, session.session_id, session.agent):
        return await _run_turns(store, spec, session, first_turn, runner, flow_run_id,
                                on_start, on_done)  # fmt: skip


async def _run_turns(
    store: Store,
    spec: AgentSpec,
    session: Session,
    first_turn: int,
    runner: Callable[[], StepRunner],
    flow_run_id: str | None,
    on_start: OnStart | None,
    on_done: Callable[[Turn], Awaitable[None]] | None,
) -> list[Turn]:
    record_session(store, session, first_turn)
    # A run killed between its last commit and dropping its journal left it behind; it is
    # never replayed (finished runs are skipped), only clutter.
    store.execute(
        "DELETE FROM step_journal WHERE list_contains(?, scope)",
        [store.runs.with_status(FINISHED)],
    )
    turns = []
    # No write-behind: each step's rows commit before the next step's journal record, so a
    # session resumed from any commit finds in the tables exactly the steps its journal ran.
    with store.write_through():
        for turn in range(first_turn, len(session.inputs)):
            done = await _run_turn(store, spec, session, turn, runner, flow_run_id, on_start)
            if on_done is not None:
                await on_done(done)
            turns.append(done)
    return turns


async def _run_turn(
    store: Store,
    spec: AgentSpec,
    session: Session,
    turn: int,
    runner: Callable[[], StepRunner],
    flow_run_id: str | None,
    on_start: OnStart | None,
) -> Turn:
    run_id = run_id_for(store, session, turn)
    point = find_resume_point(store, run_id) if run_id else None
    if run_id is not None and point is not None and point.done:
        # Finished, perhaps killed before its journal was dropped.
        Journal(store, run_id).clear()
        return Turn(run_id, turn, 0, None, None, done_before=True)
    if run_id is not None and point is not None and point.answered and point.status in UNFINISHED:
        # The run's final answer was committed, its status not yet (killed, or interrupted
        # as it wrote it): only that is left to do (calling the model again would add an
        # answer the uninterrupted run never gave).
        store.finish_run(run_id, status="completed", steps=point.steps, usage=point.usage)
        Journal(store, run_id).clear()
        return Turn(run_id, turn, 0, None, None, done_before=True)
    run_id = run_id or new_id("run")
    attempt, previous = record_attempt(store, session, turn, run_id, flow_run_id)
    log.info(
        "%s run %s (input %d of %d)%s; if it stops, continue with: ctxlab run --resume %s",
        "resuming" if attempt > 1 else "starting", run_id, turn + 1,
        len(session.inputs), f", attempt {attempt}" if attempt > 1 else "", run_id,
    )  # fmt: skip
    if on_start is not None:
        await on_start(run_id, attempt, previous)
    resuming = point is not None and not point.fresh
    journal = Journal(store, run_id, replay=resuming)
    steps = runner()
    options = AgentOptions(store=store, step_runner=JournaledRunner(steps, journal),
                           model=session.model, strategy=session.strategy,
                           params=session.params)  # fmt: skip
    with build_agent(spec, options) as agent:
        discarded = release_run(store, point) if point is not None else []
        if point is not None and resuming:
            agent.middleware = (ResumeRun(point, attempt, discarded), *agent.middleware)
            journal.restore_model(agent.model)
        await agent.run(
            None if resuming else session.inputs[turn], thread_id=session.thread_id,
            run_id=run_id,
        )  # fmt: skip
    journal.clear()
    return Turn(run_id, turn, attempt, steps, journal)


def run_id_for(store: Store, session: Session, turn: int) -> str | None:
    found = store.scalar(
        "SELECT run_id FROM flow_runs WHERE session_id = ? AND turn = ?",
        [session.session_id, turn],
    )
    return str(found) if found is not None else None


def record_session(store: Store, session: Session, first_turn: int) -> None:
    """Store the session (its first turn's `flow_runs` row, no attempt yet) in the transaction
    that creates the flow tables, before anything else it does: killed at any later point,
    it leaves a run that `ctxlab run --resume last` finds."""
    with store.transaction() as con:
        con.execute(TABLES)
        found = con.execute(
            "SELECT 1 FROM flow_runs WHERE session_id = ? AND turn = ?",
            [session.session_id, first_turn],
        ).fetchone()
        if found is None:
            _insert_flow_run(con, session, first_turn, new_id("run"), None, attempts=0)


def recorded_sessions(store: Store) -> int:
    ensure_tables(store)
    return int(store.scalar("SELECT count(DISTINCT session_id) FROM flow_runs"))


def record_attempt(
    store: Store, session: Session, turn: int, run_id: str, flow_run_id: str | None
) -> tuple[int, str | None]:
    """Count an attempt at a turn: (its number, the flow run of the attempt before)."""
    with store.transaction() as con:
        previous = con.execute(
            "SELECT flow_run_id FROM flow_runs WHERE run_id = ?", [run_id]
        ).fetchone()
        row = con.execute(
            "UPDATE flow_runs SET attempts = attempts + 1, flow_run_id = ?, updated_at = ? "
            "WHERE run_id = ? RETURNING attempts",
            [flow_run_id, now(), run_id],
        ).fetchone()
        if row is not None:
            return int(row[0]), previous[0] if previous else None
        _insert_flow_run(con, session, turn, run_id, flow_run_id, attempts=1)
    return 1, None


def _insert_flow_run(
    con: Any, session: Session, turn: int, run_id: str, flow_run_id: str | None, *, attempts: int
) -> None:
    con.execute(
        "INSERT INTO flow_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [run_id, session.session_id, turn, storable_json(json.dumps(list(session.inputs)))[0],
         session.thread_id, session.agent, session.model, session.strategy,
         json.dumps(session.params), flow_run_id, attempts, now(), now()],
    )  # fmt: skip


def unfinished_run(store: Store) -> str | None:
    """A run id of the most recent session that did not finish: a run not completed, or
    fewer completed runs than the session has inputs."""
    ensure_tables(store)
    rows = store.query(
        "SELECT session_id, run_id, json_array_length(inputs) AS n FROM flow_runs "
        "ORDER BY updated_at DESC"
    )
    statuses = store.runs.statuses([r["run_id"] for r in rows])
    for row in rows:
        row["status"] = statuses.get(row["run_id"], "lost")
    sessions: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        sessions.setdefault(row["session_id"], []).append(row)
    for runs in sessions.values():  # newest session first
        done = sum(r["status"] in FINISHED for r in runs)
        if done < runs[0]["n"]:
            pending = [r for r in runs if r["status"] not in FINISHED]
            return str((pending or runs)[0]["run_id"])
    return None
