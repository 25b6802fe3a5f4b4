"""ctxlab against deepagents on the trajectory of `test_trajectory_bench.py`, in alternating
pairs in one run (issue 21): the machine is shared, so only ratios of neighbours mean much.

deepagents is not a dependency: point CTXLAB_DEEPAGENTS_PYTHON at an interpreter that has it
(e.g. a throwaway venv: `uv venv /tmp/da && VIRTUAL_ENV=/tmp/da uv pip install
deepagents==0.7.32`), else this skips. Each side runs in a fresh interpreter and times its run
in-process; `extra_info` holds every pair and the median ratio (ctxlab / deepagents).

    CTXLAB_DEEPAGENTS_PYTHON=/tmp/da/bin/python uv run pytest \
        tests/benchmarks/test_trajectory_vs_deepagents.py --benchmark-only

`CTXLAB_BASELINE=/path/to/other/checkout` (with its own `.venv`) adds a third run to each
pair, that checkout's ctxlab, so a change is measured before and after in the same rounds.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
PYTHON = os.environ.get("CTXLAB_DEEPAGENTS_PYTHON", "")
PAIRS = int(os.environ.get("CTXLAB_PAIRS", "3"))
BASELINE = os.environ.get("CTXLAB_BASELINE", "")


def _has_deepagents() -> bool:
    if not PYTHON:
        return False
    probe = subprocess.run([PYTHON, "-c", "import deepagents"], capture_output=True)
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(
    not _has_deepagents(), reason="set CTXLAB_DEEPAGENTS_PYTHON to a Python with deepagents"
)


def _run(cmd: list[str]) -> dict[str, Any]:
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _ctxlab(python: str, folder: Path, companies: int, rows: int, tmp: Path) -> dict[str, Any]:
    return _run([python, str(folder / "trajectory.py"), str(companies), str(rows), "memory",
                 str(tmp)])  # fmt: skip


def pair(companies: int, rows: int, tmp: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    ours = _ctxlab(sys.executable, HERE, companies, rows, tmp)
    theirs = _run([PYTHON, str(HERE / "deepagents_trajectory.py"), str(companies), str(rows)])
    return ours, theirs


def baseline(companies: int, rows: int, tmp: Path) -> dict[str, Any]:
    """The run of the checkout at CTXLAB_BASELINE, with its own interpreter."""
    root = Path(BASELINE)
    return _ctxlab(str(root / ".venv/bin/python"), root / "tests/benchmarks", companies, rows, tmp)


# 101, 201, 401 (where the issue reads peak RSS) and 1,001 steps.
@pytest.mark.parametrize("companies", [50, 100, 200, 500])
def test_side_by_side(benchmark: Any, companies: int, tmp_path: Path) -> None:
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    before: list[dict[str, Any]] = []

    def round_() -> None:
        pairs.append(pair(companies, 3_000, tmp_path))
        if BASELINE:
            before.append(baseline(companies, 3_000, tmp_path))

    benchmark.pedantic(round_, rounds=PAIRS, iterations=1)
    ratios = [o["ms_per_step"] / t["ms_per_step"] for o, t in pairs]
    cpu_ratios = [o["cpu_ms_per_step"] / t["cpu_ms_per_step"] for o, t in pairs]
    benchmark.extra_info.update(
        steps=2 * companies + 1,
        ctxlab_ms_per_step=[round(o["ms_per_step"], 2) for o, _ in pairs],
        deepagents_ms_per_step=[round(t["ms_per_step"], 2) for _, t in pairs],
        ratio_median=statistics.median(ratios),
        cpu_ratio_median=statistics.median(cpu_ratios),
        ctxlab_peak_rss_mb=[round(o["peak_rss_mb"]) for o, _ in pairs],
        deepagents_peak_rss_mb=[round(t["peak_rss_mb"]) for _, t in pairs],
        # Where each side's memory is at the end of its last run (trajectory_texts).
        ctxlab_rss_mb_by_mapping=pairs[-1][0]["rss_mb_by_mapping"],
        ctxlab_duckdb_memory_mb=pairs[-1][0]["duckdb_memory_mb"],
        deepagents_rss_mb_by_mapping=pairs[-1][1]["rss_mb_by_mapping"],
    )
    if before:
        neighbours = list(zip(before, (t for _, t in pairs), strict=True))
        benchmark.extra_info.update(
            baseline_ms_per_step=[round(b["ms_per_step"], 2) for b in before],
            baseline_ratio_median=statistics.median(
                b["ms_per_step"] / t["ms_per_step"] for b, t in neighbours
            ),
            baseline_cpu_ratio_median=statistics.median(
                b["cpu_ms_per_step"] / t["cpu_ms_per_step"] for b, t in neighbours
            ),
            baseline_peak_rss_mb=[round(b["peak_rss_mb"]) for b in before],
        )
