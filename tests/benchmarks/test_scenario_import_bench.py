"""What importing a recorded run costs: the flagship's week 1 at small scale, recorded once,
then imported (store to document, cues, probes) and written as YAML.

Run with `uv run pytest tests/benchmarks/test_scenario_import_bench.py --benchmark-only`.
Numbers go in the notes, never in asserts."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.recorded import record_flagship

from evals.sources.thread_import import import_run, write_scenario


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    db = tmp_path_factory.mktemp("bench") / "run.duckdb"
    return db, record_flagship(db)


def test_import_the_flagship_week(benchmark, recorded: tuple[Path, str], tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db, run_id = recorded

    def run() -> int:
        doc = import_run(str(db), run_id)
        return write_scenario(doc, tmp_path / "run.yaml", force=True).stat().st_size

    size = benchmark(run)
    benchmark.extra_info["file_bytes"] = size
