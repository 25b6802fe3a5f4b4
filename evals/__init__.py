"""ctxlab evals: replay long synthetic runs under each context strategy and measure probe
accuracy against token cost.

    from evals import run_cell, save_results, pareto_front, recommend
    result = run_cell("competitive-analysis", "full", {"summarize.trigger": 0.7}, seed=0,
                      scale="small")
    result.accuracy, result.input_tokens, result.cost_usd

Results of the `simulated` model are labelled so (`EvalResult.simulated`, and the reader it
used in `EvalResult.reader`): they measure what a strategy keeps within reach, not a real
model's skill. Importing `evals` registers the model string "simulated" with the harness.
"""

from __future__ import annotations

import importlib
from typing import Any

from harness.models import register_model

# Names load on first use, so `ctxlab --help` (whose parsers live in flows.cli) does not import
# polars and the scenarios.
_EXPORTS = {
    "Aggregate": "evals.analysis.metrics",
    "Cell": "evals.run.cell",
    "EvalResult": "evals.analysis.metrics",
    "ProbeResult": "evals.scoring.records",
    "aggregate": "evals.analysis.metrics",
    "arun_cell": "evals.run.cell",
    "get_scenario": "evals.scenarios",
    "list_scenarios": "evals.scenarios",
    "load_runs": "evals.scoring.storage",
    "pareto_front": "evals.analysis.metrics",
    "recommend": "evals.analysis.metrics",
    "run_cell": "evals.run.cell",
    "run_cells": "evals.run.cell",
    "save_results": "evals.scoring.storage",
}


def _simulated(**kwargs: Any) -> Any:
    from evals.simulated import SimulatedModel

    return SimulatedModel(**kwargs)


register_model("simulated", _simulated)

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'evals' has no attribute {name!r}")
