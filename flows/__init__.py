"""ctxlab flows: Prefect runs the agent (each acting step a task), schedules the weekly run,
fans out eval sweeps, and resumes killed runs from DuckDB.

    from flows import agent_run, eval_sweep
    await agent_run(agent="competitive-analysis", db="ctxlab.duckdb")

Importing `flows` sets quiet Prefect defaults (no telemetry, warnings only) for every variable
the user has not set; Prefect itself loads only when a flow, the runner or the server helpers
are first used.
"""

from __future__ import annotations

import importlib
from typing import Any

from flows.settings import apply_defaults

apply_defaults()

_EXPORTS = {
    "agent_run": "flows.agent_run",
    "eval_sweep": "flows.sweep",
    "PrefectStepRunner": "flows.runner",
    "weekly_deployment": "flows.deploy",
    "AgentSpec": "flows.agents",
    "AgentOptions": "flows.agents",
    "register": "flows.agents",
    "ensure_server": "flows.server",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'flows' has no attribute {name!r}")
