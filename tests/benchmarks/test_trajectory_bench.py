"""Per-step cost and memory on the long scripted trajectory of `trajectory.py` (issues 12, 21).

Run with `uv run pytest tests/benchmarks/test_trajectory_bench.py --benchmark-only`. Timing is
in-process; peak RSS and RSS growth per step come from one run of `trajectory.py` in a fresh
interpreter without pytest, recorded in `extra_info` with the share of each part and the cost
of a sync tool.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from trajectory import build_agent, shares, steps_for, tool_overhead_us

from harness import Store

HERE = Path(__file__).parent


def _measure_fresh(companies: int, rows: int, backend: str, db_dir: Path) -> dict[str, Any]:
    out = subprocess.run(
        [
            sys.executable,
            str(HERE / "trajectory.py"),
            str(companies),
            str(rows),
            backend,
            str(db_dir),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("rows", [3_000])
@pytest.mark.parametrize("companies", [5, 50, 100, 200, 500])
def test_trajectory(benchmark, companies: int, rows: int, tmp_path: Path) -> None:
    steps = steps_for(companies)
    fresh = _measure_fresh(companies, rows, "memory", tmp_path)
    on_file = _measure_fresh(companies, rows, "file", tmp_path)
    rounds = iter(range(1_000))

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        return (build_agent(companies, rows, Store(":memory:")),), {}

    def run(agent: Any) -> None:
        result = agent.run_sync("Review every company: export, then news.")
        assert result.steps == steps
        agent.store.close()
        next(rounds)

    benchmark.pedantic(run, setup=setup, rounds=3 if steps <= 101 else 1, iterations=1)
    benchmark.extra_info.update(
        companies=companies,
        rows=rows,
        steps=steps,
        ms_per_step=benchmark.stats.stats.mean * 1000 / steps,
        memory_store=fresh,
        file_store=on_file,
        shares=shares(companies, rows),
        tool_overhead=tool_overhead_us(),
    )
