"""The `weekly-competitive-analysis` deployment: the articles' Monday run on a cron schedule.

Each scheduled run is one week's session of the competitive-analysis agent on a new thread.
Only long-term memory (`/memories/AGENTS.md` in the store) carries from one week to the next:
week 1 learns "use bullets, not paragraphs" from the user's feedback, and the next week's
report applies it without being told (`week=auto` picks the plan by what memory holds).
With `--set weeks=N` the schedule runs the recurring family instead (a year of Mondays:
evals/scenarios/weekly.py), each Monday the week after the last one memory notes (resolved
as the flow run starts and recorded with its session, so a killed week resumes as that week).

`ctxlab serve` registers the deployment with the Prefect server and serves it from this
process: the server's scheduler creates a flow run each Monday 09:00 (in the timezone given),
and the served process picks it up and runs it.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from prefect.deployments import arun_deployment
from prefect.deployments.runner import RunnerDeployment
from prefect.runner import Runner
from prefect.schedules import Cron
from prefect.types.entrypoint import EntrypointType

from flows.agent_run import agent_run
from flows.agents import COMPETITIVE, get_agent
from flows.server import ServerInfo
from harness.store import default_path

DEPLOYMENT = "weekly-competitive-analysis"
WEEKLY_CRON = "0 9 * * 1"


async def weekly_deployment(
    *,
    cron: str = WEEKLY_CRON,
    timezone: str = "UTC",
    model: str = "simulated",
    strategy: str | None = None,
    params: dict[str, Any] | None = None,
    db: str | None = None,
    agent: str = COMPETITIVE,
) -> RunnerDeployment:
    """The deployment (not yet registered). The store path is made absolute: scheduled runs
    start in their own process, possibly from another directory. `agent` may be any runnable
    agent (`module:attribute`), e.g. one whose spec names MCP servers: each run starts them
    and stops them when its session ends."""
    competitive = agent == COMPETITIVE
    return await agent_run.ato_deployment(
        name=DEPLOYMENT if competitive else f"weekly-{_slug(agent)}",
        schedule=Cron(cron, timezone=timezone),
        parameters={
            "agent": agent,
            "model": model,
            "strategy": strategy,
            "params": {"week": "auto", **(params or {})} if competitive else dict(params or {}),
            "db": str(Path(db or default_path()).resolve()),
        },
        description="The weekly competitive analysis: exports, news, articles, a "
        "market-researcher subagent, the qbr-report skill; memory carries week to week."
        if competitive
        else get_agent(agent).description,
        tags=["ctxlab", "weekly"],
        # A module path, not a file path: it resolves wherever ctxlab is installed.
        entrypoint_type=EntrypointType.MODULE_PATH,
    )


def _slug(agent: str) -> str:
    return re.sub(r"[^a-zA-Z0-9-]+", "-", agent.rsplit(":", 1)[-1]).strip("-") or "agent"


async def serve_weekly_async(
    *, run_now: bool = False, server: ServerInfo | None = None, **options: Any
) -> None:
    deployment = await weekly_deployment(**options)
    runner = Runner(name=f"ctxlab-{deployment.name}", query_seconds=5)
    deployment_id = await runner.add_deployment(deployment)
    where = f"{server.ui_url}/deployments/deployment/{deployment_id}" if server else "Prefect"
    schedule = deployment.schedules[0].schedule if deployment.schedules else None
    print(f"Serving {deployment.name} ({getattr(schedule, 'cron', '?')}, "
          f"{getattr(schedule, 'timezone', 'UTC')}): {where}\n"
          f"Runs write to {deployment.parameters['db']}. Ctrl-C stops serving.")  # fmt: skip
    if run_now:
        flow_run = await arun_deployment(deployment_id, timeout=0)
        print(f"Triggered {flow_run.name}.")
    await runner.start()


def serve_weekly(
    *,
    cron: str = WEEKLY_CRON,
    timezone: str = "UTC",
    model: str = "simulated",
    strategy: str | None = None,
    params: dict[str, Any] | None = None,
    db: str | None = None,
    run_now: bool = False,
    server: ServerInfo | None = None,
    agent: str = COMPETITIVE,
) -> None:
    """Register the deployment and serve it until interrupted (`ctxlab serve`)."""
    asyncio.run(
        serve_weekly_async(
            run_now=run_now,
            server=server,
            cron=cron,
            timezone=timezone,
            model=model,
            strategy=strategy,
            params=params,
            db=db,
            agent=agent,
        )  # fmt: skip
    )
