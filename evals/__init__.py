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

from evals.metrics import Aggregate, EvalResult, aggregate, pareto_front, recommend
from evals.replay import ProbeResult
from evals.runner import Cell, arun_cell, run_cell, run_cells
from evals.scenarios import get_scenario, list_scenarios
from evals.simulated import install
from evals.storage import load_runs, save_results

install()

__all__ = [
    "Aggregate",
    "Cell",
    "EvalResult",
    "ProbeResult",
    "aggregate",
    "arun_cell",
    "get_scenario",
    "list_scenarios",
    "load_runs",
    "pareto_front",
    "recommend",
    "run_cell",
    "run_cells",
    "save_results",
]
