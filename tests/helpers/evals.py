"""An `EvalResult` to build tables, reports and statistics from, shared by the evals and the
flows tests (the sweep table)."""

from dataclasses import replace
from typing import Any

from evals import EvalResult


def result(strategy: str = "full", seed: int = 0, **changes) -> EvalResult:
    base = EvalResult(
        scenario="competitive-analysis", strategy=strategy, params={}, seed=seed, scale="small",
        model="simulated", reader="fallible", accuracy=0.9, probes=10, correct=9, wrong=0,
        dont_know=1,
        accuracy_by_kind={"recall": 0.9, "artifact": 1.0, "continuation": None, "decision": 0.5},
        input_tokens=100_000, output_tokens=2_000, cached_input_tokens=80_000, cache_write_tokens=0,
        peak_context_tokens=9_000, model_calls=50, retrieval_calls=3, tool_recalls=1,
        main_input_tokens=90_000,
        summarizer_input_tokens=5_000, summarizer_output_tokens=500, subagent_input_tokens=5_000,
        subagent_output_tokens=100, summaries=1, offloads=2, skill_reads=1,
        subagent_calls=2, memory_writes=1, overflowed=False,
        overflow_step=None, overflow_turn=None, subagent_overflows=0, cost_usd=0.05,
        live_cost_usd=0.0, status="completed", simulated=True, wall_s=1.0,
    )  # fmt: skip
    return replace(base, **changes)


def without_wall(value: Any) -> Any:
    """An eval's JSON without its wall-clock fields: what two runs of the same cells share."""
    if isinstance(value, dict):
        return {k: without_wall(v) for k, v in value.items() if "wall" not in k}
    if isinstance(value, list):
        return [without_wall(v) for v in value]
    return value
