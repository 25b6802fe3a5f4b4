"""The `agent_run` flow: an agent session where every acting step is a Prefect task.

A session is one or more inputs run in turn on one thread (one harness run each), e.g. the
weekly analysis, then the user's feedback on the draft. Each run publishes a markdown artifact
(tokens in and out, what each middleware moved out of the window, files written, cost). The
store is opened per transaction (`hold=False`), so other runs and the user's own queries can
use the DuckDB file while a flow is running.

`resume=RUN_ID` continues a session whose process died: the interrupted run picks up from its
last committed step (see `flows.resume`), then the session's remaining inputs run.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from prefect import flow
from prefect.artifacts import acreate_markdown_artifact
from prefect.client.orchestration import get_client
from prefect.exceptions import ObjectNotFound
from prefect.runtime import flow_run as current_flow_run
from prefect.states import Crashed

from flows.agents import AgentOptions, AgentSpec, get_agent
from flows.journal import Journal, ensure_tables
from flows.report import render_markdown, run_report
from flows.resume import FINISHED, ResumeRun, find_resume_point, release_run
from flows.runner import PrefectStepRunner, harness_logs_to_prefect, hide_tool_failures_on_console
from harness.messages import new_id
from harness.steps import InlineRunner
from harness.store import Store, default_path, now

log = logging.getLogger("ctxlab.flows")


@dataclass(frozen=True)
class Session:
    session_id: str
    agent: str
    model: str
    thread_id: str
    inputs: tuple[str, ...]
    strategy: str | None = None
    params: dict[str, Any] = field(default_factory=dict)


def _flow_run_name() -> str:
    params = current_flow_run.parameters
    if params.get("resume"):
        return f"resume {params['resume']}"
    return session_name(params.get("agent", "agent"), params.get("params") or {},
                        params.get("thread_id") or "a new thread")  # fmt: skip


def session_name(agent: str, params: dict[str, Any], thread: str) -> str:
    """What a flow run is called: the agent, its week when it has one, and the thread."""
    week = params.get("week")
    return f"{agent}{f' week {week}' if week not in (None, 'auto') else ''} on {thread}"


@flow(name="agent-run", flow_run_name=_flow_run_name, persist_result=False)
async def agent_run(
    agent: str = "competitive-analysis",
    inputs: list[str] | None = None,
    model: str = "simulated",
    thread_id: str | None = None,
    db: str | None = None,
    strategy: str | None = None,
    params: dict[str, Any] | None = None,
    resume: str | None = None,
) -> dict[str, Any]:
    """Run an agent session (or resume one) and report each run.

    agent: a registered agent name or `module:attribute`.
    inputs: the user's messages, one run each; default: the agent's own session.
    model: `simulated` (offline) or a provider model such as `openai:gpt-6.2-sol`.
    thread_id: continue this thread; default: the agent's thread, or a new one.
    db: the DuckDB file; default `$CTXLAB_DB` or ./ctxlab.duckdb.
    strategy, params: the context strategy and its dotted parameters.
    resume: a run id of a session that did not finish; the other arguments are ignored.
    """
    hide_tool_failures_on_console()
    store = Store(db or default_path(), hold=False)
    ensure_tables(store)
    if resume:
        session, first_turn = load_session(store, resume)
        spec = get_agent(session.agent)
    else:
        spec = get_agent(agent)
        # What the session will be depends on the options, not on how steps will run.
        options = AgentOptions(store=store, step_runner=InlineRunner(), model=model,
                               strategy=strategy, params=dict(params or {}))  # fmt: skip
        session = Session(
            session_id=new_id("session"),
            agent=agent,
            model=model,
            thread_id=thread_id or spec.thread or new_id("thread"),
            inputs=tuple(inputs or spec.session(options)),
            strategy=strategy,
            params=dict(params or {}),
        )
        if not session.inputs:
            raise ValueError(f"agent {agent!r} has no default session: give it an input")
        first_turn = 0
    await _name_flow_run(session_name(session.agent, session.params, session.thread_id))
    numbering: Counter[str] = Counter()  # task names stay unique across the session's inputs
    with harness_logs_to_prefect():
        runs = [
            await _run_turn(store, spec, session, turn, numbering)
            for turn in range(first_turn, len(session.inputs))
        ]
    return {
        "session_id": session.session_id,
        "agent": session.agent,
        "params": session.params,
        "thread_id": session.thread_id,
        "flow_run_id": current_flow_run.id,
        "db": store.path,
        "runs": runs,
    }


async def _run_turn(
    store: Store, spec: AgentSpec, session: Session, turn: int, numbering: Counter[str]
) -> dict[str, Any]:
    run_id = _run_id_for(store, session, turn)
    point = find_resume_point(store, run_id) if run_id else None
    if point is not None and point.done:
        return {**run_report(store, point.run_id).as_dict(), "tasks": 0, "replayed": 0}
    run_id = run_id or new_id("run")
    attempt = await _record_attempt(store, session, turn, run_id)
    log.info(
        "%s run %s (input %d of %d)%s; if it stops, continue with: ctxlab run --resume %s",
        "resuming" if point is not None else "starting", run_id, turn + 1,
        len(session.inputs), f", attempt {attempt}" if attempt > 1 else "", run_id,
    )  # fmt: skip
    resuming = point is not None and not point.fresh
    journal = Journal(store, run_id, replay=resuming)
    runner = PrefectStepRunner(journal=journal, numbering=numbering)
    await _tag_flow_run(f"agent:{_tag(session.agent)}", f"session:{session.session_id}",
                        f"run:{run_id}")  # fmt: skip
    options = AgentOptions(store=store, step_runner=runner, model=session.model,
                           strategy=session.strategy, params=session.params)  # fmt: skip
    agent = spec.build(options)
    if point is not None:
        release_run(store, point)
    if resuming:
        agent.middleware = (ResumeRun(point, attempt), *agent.middleware)
        journal.restore_model(agent.model)
    await agent.run(
        None if resuming else session.inputs[turn], thread_id=session.thread_id, run_id=run_id
    )
    journal.clear()
    report = run_report(store, run_id)
    orchestration = {
        "Prefect tasks": f"{runner.tasks_run} ({_by_kind(runner)})",
        "attempt": attempt,
        "replayed from the journal": journal.replayed,
        "session": f"`{session.session_id}`, input {turn + 1} of {len(session.inputs)}",
        "store": f"`{store.path}`",
    }
    await acreate_markdown_artifact(
        render_markdown(report, extra=orchestration),
        key=artifact_key(session.agent, run_id),
        description=f"{session.agent} run {run_id}",
    )
    return {**report.as_dict(), "tasks": runner.tasks_run, "replayed": journal.replayed}


async def _tag_flow_run(*tags: str) -> None:
    """Add tags to the current flow run (its task runs stay untagged: see flows.runner)."""
    flow_run_id = current_flow_run.id
    if flow_run_id is None:
        return
    async with get_client() as client:
        run = await client.read_flow_run(flow_run_id)
        merged = [*run.tags, *(t for t in ("ctxlab", *tags) if t not in run.tags)]
        await client.update_flow_run(flow_run_id, tags=merged)


def artifact_key(agent: str, run_id: str) -> str:
    """Each run's artifact under its own key, so the Artifacts page lists every run."""
    return f"agent-{_tag(agent)}-{_tag(run_id)}"


async def _name_flow_run(name: str) -> None:
    """Name the flow run after what it runs, once the thread is known (a new thread's id is
    made inside the flow)."""
    flow_run_id = current_flow_run.id
    if flow_run_id is None:
        return
    async with get_client() as client:
        await client.update_flow_run(flow_run_id, name=name)


def _by_kind(runner: PrefectStepRunner) -> str:
    return ", ".join(f"{name}: {n}" for name, n in sorted(runner.counts.items()))


def _tag(text: str) -> str:
    """A Prefect artifact key or tag: lowercase letters, digits and dashes."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "agent"


def _run_id_for(store: Store, session: Session, turn: int) -> str | None:
    return store.scalar(
        "SELECT run_id FROM flow_runs WHERE session_id = ? AND turn = ?",
        [session.session_id, turn],
    )


async def _record_attempt(store: Store, session: Session, turn: int, run_id: str) -> int:
    flow_run_id = current_flow_run.id
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
        if previous and previous[0] and previous[0] != flow_run_id:
            await _mark_crashed(previous[0], f"its process died; resumed by flow run {flow_run_id}")
        return int(row[0])
    with store.transaction() as con:
        con.execute(
            "INSERT INTO flow_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)",
            [run_id, session.session_id, turn, json.dumps(list(session.inputs)),
             session.thread_id, session.agent, session.model, session.strategy,
             json.dumps(session.params), flow_run_id, now(), now()],
        )  # fmt: skip
    return 1


async def _mark_crashed(flow_run_id: str, message: str) -> None:
    """A killed process leaves its flow run Running forever; say what became of it."""
    async with get_client() as client:
        try:
            run = await client.read_flow_run(flow_run_id)
        except ObjectNotFound:
            return  # recorded on another Prefect server
        if run.state is not None and not run.state.is_final():
            await client.set_flow_run_state(flow_run_id, Crashed(message=message), force=True)


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


def latest_unfinished(db: str | None = None) -> str | None:
    """A run id of the most recent session that did not finish: a run not completed, or
    fewer completed runs than the session has inputs."""
    store = Store(db or default_path(), hold=False)
    ensure_tables(store)
    rows = store.query(
        "SELECT f.session_id, f.run_id, json_array_length(f.inputs) AS n, "
        "coalesce(r.status, 'lost') AS status "
        "FROM flow_runs f LEFT JOIN runs r USING (run_id) ORDER BY f.updated_at DESC"
    )
    sessions: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        sessions.setdefault(row["session_id"], []).append(row)
    for runs in sessions.values():  # newest session first
        done = sum(r["status"] in FINISHED for r in runs)
        if done < runs[0]["n"]:
            pending = [r for r in runs if r["status"] not in FINISHED]
            return (pending or runs)[0]["run_id"]
    return None
