"""The CI gate as CI runs it (issue 35): `ctxlab check --suite ci` in a fresh process, imports
and all, timed around the process; its exit code and verdict go in `extra_info` so a before
and an after are known to have gated the same baseline.

Run with `uv run pytest tests/benchmarks/test_check_ci_bench.py --benchmark-only -s` on the
commit before and the commit after a change (one round each: the gate replays 39 cells).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def _gate(env: dict[str, str]) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "flows.cli", "check", "--suite", "ci", "--json"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    return seconds, {"returncode": out.returncode, **json.loads(out.stdout or "{}")}


def test_check_suite_ci(benchmark: Any, tmp_path: Path) -> None:
    # The gate stores nothing, but a store opened by mistake must not be the user's.
    env = {**os.environ, "CTXLAB_DB": str(tmp_path / "check.duckdb")}
    runs: list[tuple[float, dict[str, Any]]] = []
    benchmark.pedantic(lambda: runs.append(_gate(env)), rounds=1, iterations=1)
    ((seconds, verdict),) = runs
    benchmark.extra_info.update(
        wall_s=round(seconds, 2), returncode=verdict["returncode"],
        passed=verdict.get("passed"), lines=verdict.get("lines", [])[:3],
    )  # fmt: skip
    print(f"\nctxlab check --suite ci: {seconds:.1f} s, passed={verdict.get('passed')}")
    assert verdict["returncode"] == 0, verdict
