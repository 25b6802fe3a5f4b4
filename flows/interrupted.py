"""Flow runs that Ctrl-C leaves behind.

The first Ctrl-C reaches a flow as a cancellation of its task, and Prefect records the run
Crashed. But a flow whose event loop is blocked in sync code (a sweep waiting for its cells)
sees nothing until a second Ctrl-C raises KeyboardInterrupt where it is; Prefect's report of
that crash then awaits, meets the first cancellation and never reaches the server: the run
stayed Running for good. So every flow run this process starts is remembered as it starts
running (`remember_flow_run`, an `on_running` hook), and a command that ends interrupted
marks those that did not reach a final state Crashed (`ended_by_interrupt`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from prefect.client.orchestration import get_client
from prefect.exceptions import ObjectNotFound
from prefect.states import Crashed

log = logging.getLogger("ctxlab.flows")

_started: list[str] = []


def remember_flow_run(_flow: Any, flow_run: Any, _state: Any) -> None:
    """`on_running` hook: this process runs `flow_run`."""
    _started.append(str(flow_run.id))


@contextmanager
def ended_by_interrupt() -> Iterator[None]:
    """Around a command that runs flows: if Ctrl-C ends it, the flow runs it started that
    are still unfinished are marked Crashed."""
    first = len(_started)
    try:
        yield
    except (KeyboardInterrupt, asyncio.CancelledError):
        if _started[first:]:
            try:
                asyncio.run(_crash_unfinished(_started[first:]))
            except Exception as exc:  # the server is gone too: nothing more to tell it
                log.warning("could not mark the interrupted flow runs Crashed: %s", exc)
        raise


async def _crash_unfinished(flow_run_ids: list[str]) -> None:
    for flow_run_id in flow_run_ids:
        await mark_crashed(flow_run_id, "interrupted (Ctrl-C) before Prefect recorded its end")


async def mark_crashed(flow_run_id: str, message: str) -> None:
    """Mark a flow run Crashed unless it reached a final state (a killed or interrupted
    process leaves it Running)."""
    async with get_client() as client:
        try:
            run = await client.read_flow_run(flow_run_id)
        except ObjectNotFound:
            return  # recorded on another Prefect server
        if run.state is not None and not run.state.is_final():
            await client.set_flow_run_state(flow_run_id, Crashed(message=message), force=True)
