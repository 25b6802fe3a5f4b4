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

import logging
from collections import Counter
from functools import partial
from typing import Any

from prefect import flow
from prefect.artifacts import acreate_markdown_artifact
from prefect.runtime import flow_run as current_flow_run

from flows.agents import AgentOptions, get_agent, resolve_params
from flows.events import emit_run_events
from flows.interrupted import mark_crashed, remember_flow_run
from flows.journal import ensure_tables
from flows.labels import name_flow_run, slug, tag_flow_run
from flows.report import render_markdown, run_report
from flows.resume import Session, Turn, load_session, run_session, unfinished_run
from flows.runner import PrefectStepRunner, harness_logs_to_prefect, hide_tool_failures_on_console
from harness.messages import new_id
from harness.steps import InlineRunner
from harness.store import Store, default_path

log = logging.getLogger("ctxlab.flows")


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


@flow(
    name="agent-run",
    flow_run_name=_flow_run_name,
    persist_result=False,
    on_running=[remember_flow_run],
)
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
        # A scheduled run (the Monday deployment's `week=auto`) records the week it does.
        params = resolve_params(agent, dict(params or {}), store)
        # What the session will be depends on the options, not on how steps will run.
        options = AgentOptions(store=store, step_runner=InlineRunner(), model=model,
                               strategy=strategy, params=params)  # fmt: skip
        session = Session(
            session_id=new_id("session"),
            agent=agent,
            model=model,
            thread_id=thread_id or spec.thread or new_id("thread"),
            inputs=tuple(inputs or spec.session(options)),
            strategy=strategy,
            params=dict(params),
        )
        if not session.inputs:
            raise ValueError(f"agent {agent!r} has no default session: give it an input")
        first_turn = 0
    runs: list[dict[str, Any]] = []
    flow_run_id = str(current_flow_run.id) if current_flow_run.id else None
    await name_flow_run(session_name(session.agent, session.params, session.thread_id))

    started_runs: list[str] = []

    async def started(run_id: str, attempt: int, previous: str | None) -> None:
        started_runs.append(run_id)
        if previous and previous != flow_run_id:
            await mark_crashed(previous, f"its process died; resumed by flow run {flow_run_id}")
        await tag_flow_run("run", f"agent:{slug(session.agent)}", f"session:{session.session_id}",
                            f"run:{run_id}")  # fmt: skip

    async def finished(turn: Turn) -> None:
        runs.append(await _publish(store, session, turn))

    numbering: Counter[str] = Counter()  # task names stay unique across the session's inputs
    try:
        with harness_logs_to_prefect():
            await run_session(
                store, spec, session, first_turn,
                runner=partial(PrefectStepRunner, numbering=numbering),
                flow_run_id=flow_run_id, on_start=started, on_done=finished,
            )  # fmt: skip
    finally:
        # Also for a run that failed (an overflow is worth an alert most of all).
        emit_run_events(store, dict.fromkeys(started_runs), agent=session.agent,
                        flow_run_id=flow_run_id)  # fmt: skip
    await _publish_session(session, runs)
    return {
        "session_id": session.session_id,
        "agent": session.agent,
        "params": session.params,
        "thread_id": session.thread_id,
        "flow_run_id": current_flow_run.id,
        "db": store.path,
        "runs": runs,
    }


async def _publish(store: Store, session: Session, turn: Turn) -> dict[str, Any]:
    """The turn's report, published as a markdown artifact when it ran now."""
    report = run_report(store, turn.run_id)
    runner, journal = turn.runner, turn.journal
    if not isinstance(runner, PrefectStepRunner) or journal is None:
        return {**report.as_dict(), "tasks": 0, "replayed": 0}
    orchestration = {
        "Prefect tasks": f"{runner.tasks_run} ({_by_kind(runner)})",
        "attempt": turn.attempt,
        "replayed from the journal": journal.replayed,
        "session": f"`{session.session_id}`, input {turn.turn + 1} of {len(session.inputs)}",
        "store": f"`{store.path}`",
    }
    await acreate_markdown_artifact(
        render_markdown(report, extra=orchestration),
        key=artifact_key(session.agent, turn.run_id),
        description=f"{session_name(session.agent, session.params, session.thread_id)}: "
        f"input {turn.turn + 1} of {len(session.inputs)} (run {turn.run_id})",
    )
    return {**report.as_dict(), "tasks": runner.tasks_run, "replayed": journal.replayed}


async def _publish_session(session: Session, runs: list[dict[str, Any]]) -> None:
    """One artifact for the whole session, titled by what it ran: each input's run in order
    with its outcome, so the Artifacts page reads as the session did."""
    lines = [
        f"# {session_name(session.agent, session.params, session.thread_id)}",
        "",
        f"Session `{session.session_id}`, model `{session.model}`, strategy "
        f"`{session.strategy or 'default'}`: {len(runs)} of {len(session.inputs)} inputs ran.",
        "",
        "| input | run | status | steps | input tokens | moved out | cost |",
        "|---|---|---|---|---|---|---|",
    ]
    for n, run in enumerate(runs, 1):
        lines.append(
            f"| {n} | `{run.get('run_id', '')}` | {run.get('status', '')} | "
            f"{run.get('steps', 0)} | {run.get('input_tokens', 0):,} | "
            f"{run.get('moved_out_tokens', 0):,} | ${run.get('cost_usd', 0.0):.4f} |"
        )
    await acreate_markdown_artifact(
        "\n".join(lines),
        key=f"session-{slug(session.agent)}-{slug(session.session_id)}",
        description=f"{session.agent} session on {session.thread_id}: {len(runs)} runs",
    )


def artifact_key(agent: str, run_id: str) -> str:
    """Each run's artifact under its own key, so the Artifacts page lists every run."""
    return f"agent-{slug(agent)}-{slug(run_id)}"


def _by_kind(runner: PrefectStepRunner) -> str:
    return ", ".join(f"{name}: {n}" for name, n in sorted(runner.counts.items()))


def latest_unfinished(db: str | None = None) -> str | None:
    """A run id of the most recent session that did not finish (see `unfinished_run`)."""
    return unfinished_run(Store(db or default_path(), hold=False))
