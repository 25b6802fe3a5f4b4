"""The weekly-competitive-analysis deployment: registered with its cron schedule, and a
triggered run completes when served."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from helpers.flows import flow_run_name
from helpers.waiting import poll_async
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    DeploymentFilter,
    DeploymentFilterId,
    FlowRunFilter,
    FlowRunFilterState,
    FlowRunFilterStateName,
)
from prefect.deployments import arun_deployment
from prefect.runner import Runner

from flows.deploy import DEPLOYMENT, weekly_deployment
from flows.server import ServerInfo
from harness.store import Store


def test_the_weekly_deployment_registers_with_its_schedule_and_a_triggered_run_completes(
    prefect_server: ServerInfo, db: str
) -> None:
    async def scheduled(client: object, deployment_id: object) -> list[datetime]:
        """The runs the server's scheduler created for the coming Mondays."""
        runs = await poll_async(
            lambda: client.read_flow_runs(  # type: ignore[attr-defined]
                deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment_id])),
                flow_run_filter=FlowRunFilter(
                    state=FlowRunFilterState(name=FlowRunFilterStateName(any_=["Scheduled"]))
                ),
            ),
            bool,
            30,
            0.5,
        )
        return sorted(r.expected_start_time for r in runs)

    async def scenario() -> tuple[object, object, list[datetime]]:
        deployment = await weekly_deployment(timezone="Europe/Paris", db=db)
        runner = Runner(query_seconds=1)
        deployment_id = await runner.add_deployment(deployment)
        async with get_client() as client:
            registered = await client.read_deployment(deployment_id)
            upcoming = await scheduled(client, deployment_id)
            # A one-turn week keeps the test short; the schedule's runs use week=auto.
            flow_run = await arun_deployment(
                deployment_id, timeout=0, parameters={"params": {"week": 2}}
            )
            await runner.start(run_once=True)
            return registered, await client.read_flow_run(flow_run.id), upcoming

    registered, flow_run, upcoming = asyncio.run(scenario())
    assert registered.name == DEPLOYMENT  # type: ignore[attr-defined]
    (schedule,) = registered.schedules  # type: ignore[attr-defined]
    assert (schedule.schedule.cron, schedule.schedule.timezone) == ("0 9 * * 1", "Europe/Paris")
    assert registered.parameters["params"] == {"week": "auto"}  # type: ignore[attr-defined]
    assert registered.entrypoint == "flows.agent_run.agent_run"  # type: ignore[attr-defined]
    assert upcoming, "the server scheduled no run"
    local = [t.astimezone(ZoneInfo("Europe/Paris")) for t in upcoming]
    assert all((t.weekday(), t.hour, t.minute) == (0, 9, 0) for t in local)
    assert flow_run.state_name == "Completed"  # type: ignore[attr-defined]
    store = Store(db, hold=False)
    assert store.runs.with_status(["completed"])


def test_serve_with_weeks_passes_them_to_the_deployment_whose_runs_do_one_week_each(
    prefect_server: ServerInfo, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ctxlab serve --set weeks=52` without a worker: the deployment it would serve carries
    `weeks`, and its flow run with exactly those parameters, twice, does weeks 1 and 2 on one
    store (each recorded as the week it did, so a resumed one rebuilds the same week)."""
    from flows import deploy
    from flows.agent_run import agent_run
    from flows.cli import common, main

    served: dict[str, Any] = {}
    monkeypatch.setattr(common, "local_server", lambda _port: prefect_server)
    monkeypatch.setattr(deploy, "serve_weekly", lambda **options: served.update(options))
    assert main(["serve", "--set", "weeks=52", "--db", db]) == 0
    assert served["params"] == {"weeks": 52} and served["server"] is prefect_server
    options = {k: v for k, v in served.items() if k not in ("run_now", "server")}
    deployment = asyncio.run(weekly_deployment(**options))
    parameters = deployment.parameters
    assert parameters["params"] == {"week": "auto", "weeks": 52}
    assert parameters["db"] == str(Path(db).resolve())

    weeks = [asyncio.run(agent_run(**parameters)) for _ in range(2)]
    assert [w["params"] for w in weeks] == [{"scale": "small", "week": k, "weeks": 52}
                                           for k in (1, 2)]  # fmt: skip
    assert all(r["status"] == "completed" for w in weeks for r in w["runs"])
    assert len({w["thread_id"] for w in weeks}) == 2
    assert [flow_run_name(w["flow_run_id"]).split(" on ")[0] for w in weeks] == [
        "competitive-analysis week 1", "competitive-analysis week 2"
    ]  # fmt: skip
    store = Store(db, hold=False)
    rows = store.query("SELECT params FROM flow_runs ORDER BY started_at")
    assert [json.loads(r["params"])["week"] for r in rows] == [1, 2]
    memory = store.memory.versions("/memories/AGENTS.md")[-1]["content"]
    assert "- Week of 2026-01-12:" in memory and "- Week of 2026-01-19:" in memory
