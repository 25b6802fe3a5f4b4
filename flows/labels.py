"""What a flow run is called and tagged in Prefect: every ctxlab flow run carries the tag
`ctxlab`, its command and what it ran, so the UI's filters find it."""

from __future__ import annotations

import re

from prefect.client.orchestration import get_client
from prefect.context import FlowRunContext


async def tag_flow_run(*tags: str) -> None:
    """Add tags to the current flow run (its task runs stay untagged: see flows.runner)."""
    flow_run_id = _current_id()
    if flow_run_id is None:
        return
    async with get_client() as client:
        run = await client.read_flow_run(flow_run_id)
        merged = [*run.tags, *(t for t in ("ctxlab", *tags) if t not in run.tags)]
        await client.update_flow_run(flow_run_id, tags=merged)


async def name_flow_run(name: str) -> None:
    """Name the flow run after what it runs, once the thread is known (a new thread's id is
    made inside the flow)."""
    flow_run_id = _current_id()
    if flow_run_id is None:
        return
    async with get_client() as client:
        await client.update_flow_run(flow_run_id, name=name)


def slug(text: str) -> str:
    """A Prefect artifact key or tag: lowercase letters, digits and dashes."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "agent"


def _current_id() -> str | None:
    context = FlowRunContext.get()
    run = context.flow_run if context is not None else None
    return str(run.id) if run is not None else None
