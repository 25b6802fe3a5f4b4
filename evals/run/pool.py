"""Cells run on worker processes: a suite's traces are independent, so on N cores they finish
in about 1/N of the time. Each cell is replayed exactly as `run_cells` replays it (its own
in-memory store, its own seeded model), so the results do not depend on the worker count."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

from evals.run.cell import Cell, arun_cell, run_cells
from evals.scoring.results import EvalResult


def available_cores() -> int:
    """The cores this process may run on (a container's or taskset's limit, not the host's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def run_cells_on(
    cells: Sequence[Cell],
    workers: int,
    *,
    on_result: Callable[[Cell, EvalResult], None] | None = None,
) -> list[EvalResult]:
    """Run `cells` on up to `workers` processes; results in the order of `cells`, `on_result`
    called as each finishes. One worker (or one cell) runs them here, with no process
    started. No spending cap: a cap shared by concurrent cells would depend on their timing,
    so a capped batch runs with `run_cells`."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a whole number >= 1, got {workers!r}")
    workers = min(workers, len(cells))
    if workers <= 1:
        return run_cells(cells, on_result=on_result)
    results: list[EvalResult | None] = [None] * len(cells)
    # spawn, not fork: the parent holds threads (progress bar, DuckDB) a fork would copy
    # mid-lock.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        pending: dict[Future[EvalResult], int] = {
            pool.submit(_run_one, cell): k for k, cell in enumerate(cells)
        }
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                k = pending.pop(future)
                results[k] = future.result()
                if on_result is not None:
                    on_result(cells[k], results[k])  # type: ignore[arg-type]
    return results  # type: ignore[return-value]


def _run_one(cell: Cell) -> EvalResult:
    return asyncio.run(arun_cell(cell))


__all__ = ["available_cores", "run_cells_on"]
