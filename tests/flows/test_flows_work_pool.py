"""The scale-out path of docs/scheduling.md, run for real: a local `process` work pool, `agent_run`
deployed to it from this checkout, a worker that picks the run up, and the run's task runs on
the server and its rows in the store."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest
from helpers.flows import task_runs_of
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import WorkPoolCreate
from prefect.deployments import arun_deployment

from flows.agent_run import agent_run
from flows.server import ServerInfo
from harness.store import Store

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_worker_runs_the_deployed_agent_from_a_process_work_pool(
    prefect_server: ServerInfo, subprocess_env: dict[str, str], db: str
) -> None:
    pool = "ctxlab-test-agents"

    async def deploy_and_trigger() -> str:
        async with get_client() as client:
            await client.create_work_pool(WorkPoolCreate(name=pool, type="process"))
        source = await agent_run.from_source(
            source=str(ROOT), entrypoint="flows/agent_run.py:agent_run"
        )
        deployment_id = await source.deploy(
            name="weekly-on-a-pool", work_pool_name=pool, print_next_steps=False,
            parameters={"agent": "competitive-analysis", "params": {"week": 2}, "db": db},
        )  # fmt: skip
        flow_run = await arun_deployment(deployment_id, timeout=0)
        return str(flow_run.id)

    flow_run_id = asyncio.run(deploy_and_trigger())
    prefect = str(Path(subprocess_env.get("VIRTUAL_ENV", "")) / "bin" / "prefect")
    if not Path(prefect).exists():
        import sys

        prefect = str(Path(sys.executable).parent / "prefect")
    worker = subprocess.run(
        [prefect, "worker", "start", "--pool", pool, "--run-once"],
        env=subprocess_env, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert worker.returncode == 0, worker.stderr[-2000:]

    async def state() -> str:
        async with get_client() as client:
            return (await client.read_flow_run(flow_run_id)).state_name or ""

    assert asyncio.run(state()) == "Completed", worker.stdout[-2000:]
    runs = task_runs_of(flow_run_id, expected=1)
    assert runs and all(r.state_name == "Completed" for r in runs)
    store = Store(db, hold=False)
    assert store.runs.with_status(["completed"])
    assert any(e["task_run_id"] is not None for e in store.events.rows())
