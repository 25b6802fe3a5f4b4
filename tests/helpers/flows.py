"""Helpers of the flow tests: reading back what the Prefect server recorded."""

from __future__ import annotations

import asyncio
from typing import Any

from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

from helpers.waiting import poll


def task_runs_of(flow_run_id: str, expected: int, timeout: float = 30.0) -> list[Any]:
    """The task runs the server recorded for a flow run, once `expected` of them arrived (the
    server records task runs from events, a moment after they happen)."""

    async def read() -> list[Any]:
        runs: list[Any] = []
        async with get_client() as client:
            while True:
                page = await client.read_task_runs(
                    flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])),
                    offset=len(runs),
                    limit=200,
                )
                runs += page
                if len(page) < 200:
                    return runs

    return poll(lambda: asyncio.run(read()), lambda runs: len(runs) >= expected, timeout, 0.5)


def flow_run_state(flow_run_id: Any) -> str:
    async def read() -> str:
        async with get_client() as client:
            return (await client.read_flow_run(flow_run_id)).state_name or ""

    return asyncio.run(read())


def flow_run_name(flow_run_id: Any) -> str:
    async def read() -> str:
        async with get_client() as client:
            return (await client.read_flow_run(flow_run_id)).name

    return asyncio.run(read())


def artifacts(key: str) -> list[Any]:
    """Every version of the artifact under `key`, newest first."""
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    async def read() -> list[Any]:
        async with get_client() as client:
            return await client.read_artifacts(
                artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])),
                sort=ArtifactSort.CREATED_DESC,
            )

    return asyncio.run(read())


def run_logs(flow_run_id: Any, expected: int = 1, timeout: float = 30.0) -> list[Any]:
    """The log lines the server holds for a flow run (its tasks' included)."""
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=timeout)

    async def read() -> list[Any]:
        async with get_client() as client:
            return await client.read_logs(
                log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])),
                limit=200,
            )

    return poll(lambda: asyncio.run(read()), lambda logs: len(logs) >= expected, timeout, 0.5)


def flow_run_tags(flow_run_id: Any) -> list[str]:
    async def read() -> list[str]:
        async with get_client() as client:
            return list((await client.read_flow_run(flow_run_id)).tags)

    return asyncio.run(read())
