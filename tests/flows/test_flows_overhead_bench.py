"""What running a session as a Prefect flow costs per task, against the same session inline.

Benchmark only (skipped by the default `--benchmark-skip`): `uv run pytest
tests/flows/test_flows_overhead_bench.py --benchmark-only -s`. It runs week 1 of the
competitive-analysis agent (small scale, simulated model) on a fresh store twice: through
`flows.resume.run_session` with the inline runner, and as the `agent_run` flow on the session's
local Prefect server, where each acting step is a task. The difference over the flow's task
count is the per-task overhead, reported in `extra_info` and printed."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from flows.agent_run import agent_run
from flows.agents import AgentOptions, get_agent
from flows.journal import ensure_tables
from flows.resume import Session, run_session
from flows.server import ServerInfo
from harness.messages import new_id
from harness.steps import InlineRunner
from harness.store import Store

AGENT = "competitive-analysis"
PARAMS = {"scale": "small", "week": 1}


def _inline(db: str) -> float:
    store = Store(db, hold=False)
    ensure_tables(store)
    spec = get_agent(AGENT)
    options = AgentOptions(store=store, step_runner=InlineRunner(), model="simulated",
                           strategy=None, params=dict(PARAMS))  # fmt: skip
    session = Session(session_id=new_id("session"), agent=AGENT, model="simulated",
                      thread_id=spec.thread or new_id("thread"),
                      inputs=tuple(spec.session(options)), params=dict(PARAMS))  # fmt: skip
    start = time.perf_counter()
    asyncio.run(run_session(store, spec, session, 0, runner=InlineRunner))
    return time.perf_counter() - start


def _flow(db: str) -> tuple[float, int]:
    start = time.perf_counter()
    result: dict[str, Any] = asyncio.run(agent_run(agent=AGENT, db=db, params=dict(PARAMS)))
    elapsed = time.perf_counter() - start
    return elapsed, sum(int(run["tasks"]) for run in result["runs"])


@pytest.mark.benchmark(group="flow-overhead")
def test_per_task_overhead_of_a_flow_run(
    benchmark: Any, prefect_server: ServerInfo, tmp_path: Path
) -> None:
    _flow(str(tmp_path / "warm.duckdb"))  # the first flow pays Prefect's own start-up
    rounds: list[tuple[float, float, int]] = []

    def both() -> None:
        n = len(rounds)
        inline = _inline(str(tmp_path / f"inline-{n}.duckdb"))
        flow, tasks = _flow(str(tmp_path / f"flow-{n}.duckdb"))
        rounds.append((inline, flow, tasks))

    benchmark.pedantic(both, rounds=3, iterations=1)
    inline = sorted(r[0] for r in rounds)[1]
    flow = sorted(r[1] for r in rounds)[1]
    tasks = rounds[0][2]
    per_task_ms = (flow - inline) / tasks * 1000
    benchmark.extra_info.update(
        inline_s=round(inline, 2), flow_s=round(flow, 2), tasks=tasks,
        per_task_ms=round(per_task_ms, 1),
    )  # fmt: skip
    print(f"\ninline {inline:.2f} s, flow {flow:.2f} s, {tasks} tasks: "
          f"{per_task_ms:.1f} ms per task")  # fmt: skip
    assert tasks > 0
