"""Replaying the flagship scenario at full scale under its default arms, the seven strategies
and `none-unbounded` (the issue's budget: under 30 s and 500 MB on 2 cores).

Run with `uv run pytest tests/benchmarks/test_eval_replay.py --benchmark-only`. One round =
eight cells, each a whole two-week replay through the harness with its own in-memory store.
The numbers (time, peak RSS, accuracy and tokens per arm) go in the benchmark's extra info.
"""

from pathlib import Path

from evals import run_cell
from evals.scenarios import get_scenario
from flows.cli.options import STRATEGIES


def _replay_all() -> dict:
    return {s: run_cell("competitive-analysis", s, {}, 0, "full") for s in STRATEGIES}


def _reset_peak_rss() -> None:
    """Start Linux's peak-RSS mark afresh: in a suite, this process (pytest) has already run
    larger benchmarks, whose peak is not the replay's."""
    Path("/proc/self/clear_refs").write_text("5")


def _peak_rss_mb() -> float:
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) / 1024


def test_flagship_full_scale_all_arms(benchmark) -> None:
    get_scenario("competitive-analysis", 0, "full")  # generation is not the replay
    _reset_peak_rss()
    results = benchmark.pedantic(_replay_all, rounds=1, iterations=1)
    benchmark.extra_info["peak_rss_mb"] = round(_peak_rss_mb())
    for name, r in results.items():
        benchmark.extra_info[name] = {
            "accuracy": r.accuracy, "input_tokens": r.input_tokens,
            "cached_input_tokens": r.cached_input_tokens, "cost_usd": r.cost_usd,
            "peak_context_tokens": r.peak_context_tokens, "overflowed": r.overflowed,
            "wall_s": r.wall_s,
        }  # fmt: skip
    assert set(results) == set(STRATEGIES)
    assert all(r.probes >= 30 for r in results.values())


def test_a_year_of_mondays_under_one_policy(benchmark) -> None:
    """52 weekly sessions at the small scale under `consolidate` (the issue's budget: under 3
    minutes on 2 cores). `uv run pytest tests/benchmarks/test_eval_replay.py -k year
    --benchmark-only`."""
    params = {"weeks": 52, "memory.policy": "consolidate"}
    get_scenario("competitive-analysis", 0, "small", {"weeks": 52})
    result = benchmark.pedantic(
        lambda: run_cell("competitive-analysis", "full", params, 0, "small"), rounds=1,
        iterations=1,
    )  # fmt: skip
    benchmark.extra_info["wall_s"] = result.wall_s
    benchmark.extra_info["week_52_vs_4_input"] = round(
        result.weeks[51]["input_tokens"] / result.weeks[3]["input_tokens"], 3
    )
    assert len(result.weeks) == 52
