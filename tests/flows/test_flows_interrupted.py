"""A flow run that Ctrl-C stops never stays Running in Prefect, however the interrupt lands."""

from __future__ import annotations

import asyncio

import pytest
from helpers.flows import flow_run_state
from prefect import flow
from prefect.runtime import flow_run as current_flow_run

from flows.interrupted import ended_by_interrupt, remember_flow_run
from flows.server import ServerInfo

started: list[str] = []


@flow(name="ctrl-c-twice", on_running=[remember_flow_run], persist_result=False)
async def interrupted_twice() -> None:
    """What two Ctrl-C do to a flow whose loop is blocked (a sweep waiting for its cells): the
    first cancels the flow's task, unseen until the next await; the second raises where the
    flow is. Prefect's report of the crash then awaits, meets the first, and never lands."""
    started.append(str(current_flow_run.id))
    task = asyncio.current_task()
    assert task is not None
    task.cancel()
    raise KeyboardInterrupt


def test_a_flow_run_interrupted_twice_is_marked_crashed(prefect_server: ServerInfo) -> None:
    with pytest.raises((KeyboardInterrupt, asyncio.CancelledError)), ended_by_interrupt():
        asyncio.run(interrupted_twice())
    (flow_run_id,) = started
    assert flow_run_state(flow_run_id) == "Crashed"
