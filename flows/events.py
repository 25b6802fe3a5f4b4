"""Prefect events for what the middleware did in a run, so a Prefect automation can react to
them ("alert when a weekly run overflowed").

The store's `events` table is the record; after each flow run's sessions have run (or failed),
the actions worth reacting to are emitted as Prefect events whose resource is the ctxlab run
(`ctxlab.run.<run id>`) and whose related resource is the flow run. Event ids are derived from
the row, so a run emitted twice (a resumed session) names the same events again.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from harness.middleware.offload import OFFLOAD_HUMAN, OFFLOAD_TOOL
from harness.store import Store

log = logging.getLogger("ctxlab.flows")

# (middleware action) -> Prefect event name.
EMITTED: dict[str, str] = {
    OFFLOAD_TOOL: "ctxlab.offload",
    OFFLOAD_HUMAN: "ctxlab.offload",
    "summarized": "ctxlab.summarize",
    "consolidated": "ctxlab.memory.consolidated",
    "overflow": "ctxlab.overflow",
}
_NAMESPACE = uuid.UUID("6f1d8a52-3c0e-4f8b-9d51-0c6a3e2b7f10")


def run_events(
    store: Store, run_id: str, *, agent: str, flow_run_id: str | None = None
) -> list[dict[str, Any]]:
    """The Prefect events of one run's middleware actions, oldest first, as keyword arguments
    of `prefect.events.emit_event`."""
    out = []
    for n, row in enumerate(store.events.rows(run_id)):
        name = EMITTED.get(row["action"])
        if name is None:
            continue
        related = []
        if flow_run_id:
            related.append(
                {"prefect.resource.id": f"prefect.flow-run.{flow_run_id}",
                 "prefect.resource.role": "flow-run"}
            )  # fmt: skip
        out.append(
            {
                "event": name,
                "resource": {
                    "prefect.resource.id": f"ctxlab.run.{run_id}",
                    "prefect.resource.name": f"{agent} run {run_id}",
                    "ctxlab.agent": agent,
                },
                "related": related,
                "occurred": _utc(row["created_at"]),
                "payload": {
                    "middleware": row["middleware"],
                    "action": row["action"],
                    "step": row["step"],
                    "tokens_before": row["tokens_before"],
                    "tokens_after": row["tokens_after"],
                    "detail": _detail(row["detail"]),
                },
                "id": uuid.uuid5(_NAMESPACE, f"{run_id}/{n}/{row['action']}/{row['step']}"),
            }
        )
    return out


def emit_run_events(
    store: Store, run_ids: Iterable[str], *, agent: str, flow_run_id: str | None = None
) -> int:
    """Emit the events of `run_ids`; how many were emitted. A Prefect client that cannot
    send (no server) loses the events, never the run: the store keeps them."""
    from prefect.events import emit_event

    sent = 0
    for run_id in run_ids:
        for kwargs in run_events(store, run_id, agent=agent, flow_run_id=flow_run_id):
            try:
                emit_event(**kwargs)
            except Exception as exc:  # observability must never fail the run
                log.warning("could not emit Prefect event %s: %s", kwargs["event"], exc)
                return sent
            sent += 1
    return sent


def _detail(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


def _utc(value: Any) -> datetime | None:
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)
