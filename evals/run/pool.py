"""Cells run on worker processes: a suite's traces are independent, so on N cores they finish
in about 1/N of the time. Each cell is replayed exactly as `run_cells` replays it (its own
in-memory store, its own seeded model), so the results do not depend on the worker count.

N workers are this process and N - 1 started ones: this process has imported the harness
already, and a started one pays ~1 s to import it again (more without a bytecode cache).
Consecutive cells that differ only in their reader (a suite's fallible and ideal replay of one
trace) go to one process together: they replay much the same texts, tokenized, normalised and
searched once there (the process-wide memos of `harness.tokens`, `evals.scoring.normalized`
and `evals.simulated.reader`), not again by another process."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import replace

from evals.run.cell import Cell, arun_cell, run_cells
from evals.scoring.results import EvalResult

# Groups handed to each started worker ahead of time, so it never waits for this process to
# finish a cell before it gets its next one.
AHEAD = 2


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
    """Run `cells` on up to `workers` processes, this one included; results in the order of
    `cells`, `on_result` called as each finishes. One worker (or one group, see the module
    doc) runs them here, with no process started. No spending cap: a cap shared by concurrent
    cells would depend on their timing, so a capped batch runs with `run_cells`."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a whole number >= 1, got {workers!r}")
    groups = by_replay(cells)
    workers = min(workers, len(groups))
    if workers <= 1:
        return run_cells(cells, on_result=on_result)
    results: list[EvalResult | None] = [None] * len(cells)

    def finished(indices: list[int], done: list[EvalResult]) -> None:
        for k, result in zip(indices, done, strict=True):
            results[k] = result
            if on_result is not None:
                on_result(cells[k], result)

    todo = deque(groups)
    # spawn, not fork: the parent holds threads (progress bar, DuckDB) a fork would copy
    # mid-lock.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers - 1, mp_context=context) as pool:
        pending: dict[Future[list[EvalResult]], list[int]] = {}

        def hand_out() -> None:
            while todo and len(pending) < (workers - 1) * AHEAD:
                group = todo.popleft()
                pending[pool.submit(_run_group, [cells[k] for k in group])] = group

        def collect(futures: set[Future[list[EvalResult]]]) -> None:
            for future in futures:
                finished(pending.pop(future), future.result())

        hand_out()
        while todo or pending:
            if todo:  # this process takes the next scenario, the workers theirs meanwhile
                group = todo.popleft()
                finished(group, [_run_one(cells[k]) for k in group])
                collect({f for f in pending if f.done()})
            else:
                collect(wait(pending, return_when=FIRST_COMPLETED)[0])
            hand_out()
    return results  # type: ignore[return-value]


def by_replay(cells: Sequence[Cell]) -> list[list[int]]:
    """The indices of `cells`, in runs of consecutive cells that differ only in reader."""
    groups: list[list[int]] = []
    for k, cell in enumerate(cells):
        if groups and _trajectory(cells[groups[-1][-1]]) == _trajectory(cell):
            groups[-1].append(k)
        else:
            groups.append([k])
    return groups


def _trajectory(cell: Cell) -> Cell:
    return replace(cell, reader="")


def _run_group(cells: list[Cell]) -> list[EvalResult]:
    return [_run_one(cell) for cell in cells]


def _run_one(cell: Cell) -> EvalResult:
    return asyncio.run(arun_cell(cell))


__all__ = ["available_cores", "by_replay", "run_cells_on"]
