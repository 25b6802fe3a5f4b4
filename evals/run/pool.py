"""Cells run on worker processes: a suite's traces are independent, so on N cores they finish
in about 1/N of the time. Each cell is replayed exactly as `run_cells` replays it (its own
in-memory store, its own seeded model), so the results do not depend on the worker count or
on the order the cells run in.

N workers are this process and N - 1 started ones: this process has imported the harness
already, and a started one pays ~0.5 s to start and import it again (more without a bytecode
cache), so `Workers` can be started before the cells are known. Consecutive cells that differ
only in their reader (a suite's fallible and ideal replay of one trace) go to one process
together: they replay much the same texts, tokenized, normalised and searched once there (the
process-wide memos of `harness.tokens`, `evals.scoring.normalized` and
`evals.simulated.reader`), not again by another process."""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import replace

from evals.run import collector
from evals.run.cell import Cell, arun_cell, run_cells
from evals.scenarios.from_file import SUFFIXES
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


class Workers:
    """`count` workers: this process and `count` - 1 started ones, started now. A caller with
    work of its own to do before it has cells (a suite's files to read) starts them first, so
    that their start overlaps that work: each started one imports the harness and loads what
    every replay's first step loads (`_warm`) while this process is busy, and takes its first
    cells ready."""

    def __init__(self, count: int) -> None:
        _check_count(count)
        self.count = count
        self._pool: ProcessPoolExecutor | None = None
        if count > 1:
            # spawn, not fork: the parent holds threads (progress bar, DuckDB) a fork would
            # copy mid-lock.
            context = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(
                count - 1, mp_context=context, initializer=collector.use_in_worker
            )
            for _ in range(count - 1):  # each submission starts a process, none waits for one
                self._pool.submit(_warm)

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        if self._pool is None:
            return
        if kind is not None:
            # Left on an error (a bad file found while the first cells run, Ctrl-C): the
            # started processes are stopped, not waited for (Python 3.14 names this
            # `terminate_workers`; `_processes` is where 3.9-3.13 keep them).
            for process in list(getattr(self._pool, "_processes", {}).values()):
                process.terminate()
        self._pool.shutdown(cancel_futures=True)

    def run(
        self,
        cells: Sequence[Cell],
        *,
        on_result: Callable[[Cell, EvalResult], None] | None = None,
        meanwhile: Callable[[], None] | None = None,
    ) -> list[EvalResult]:
        """`run_cells_on` on these workers."""
        groups = by_cost(cells, by_replay(cells))
        if self._pool is None or len(groups) <= 1:
            if meanwhile is not None:
                meanwhile()
            return run_cells(cells, on_result=on_result)
        return _run_on(self._pool, self.count - 1, cells, groups, on_result, meanwhile)


def run_cells_on(
    cells: Sequence[Cell],
    workers: int | Workers,
    *,
    on_result: Callable[[Cell, EvalResult], None] | None = None,
    meanwhile: Callable[[], None] | None = None,
) -> list[EvalResult]:
    """Run `cells` on up to `workers` processes, this one included (or on `Workers` started
    earlier); results in the order of `cells`, `on_result` called as each finishes. One
    worker (or one group, see the module doc) runs them here, with no process started. The
    groups are handed out the costliest first (`by_cost`), so that no large one starts last
    while the other processes have run out of work. `meanwhile`: work of the caller's own
    that this process does once the started workers have their first cells, before it takes
    any (a suite's files to check); if it raises, no other cell starts. No spending cap: a
    cap shared by concurrent cells would depend on their timing, so a capped batch runs with
    `run_cells`."""
    if isinstance(workers, Workers):
        return workers.run(cells, on_result=on_result, meanwhile=meanwhile)
    _check_count(workers)
    with Workers(max(1, min(workers, len(by_replay(cells))))) as started:
        return started.run(cells, on_result=on_result, meanwhile=meanwhile)


def _check_count(workers: object) -> None:
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a whole number >= 1, got {workers!r}")


def _run_on(
    pool: ProcessPoolExecutor,
    started: int,
    cells: Sequence[Cell],
    groups: list[list[int]],
    on_result: Callable[[Cell, EvalResult], None] | None,
    meanwhile: Callable[[], None] | None,
) -> list[EvalResult]:
    results: list[EvalResult | None] = [None] * len(cells)

    def finished(indices: list[int], done: list[EvalResult]) -> None:
        for k, result in zip(indices, done, strict=True):
            results[k] = result
            if on_result is not None:
                on_result(cells[k], result)

    todo = deque(groups)
    pending: dict[Future[list[EvalResult]], list[int]] = {}

    def hand_out() -> None:
        # The last group is kept for this process: a batch of two groups runs one here.
        while len(todo) > 1 and len(pending) < started * AHEAD:
            group = todo.popleft()
            pending[pool.submit(_run_group, [cells[k] for k in group])] = group

    def collect(futures: set[Future[list[EvalResult]]]) -> None:
        for future in futures:
            finished(pending.pop(future), future.result())

    hand_out()
    if meanwhile is not None:
        meanwhile()
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


def by_cost(cells: Sequence[Cell], groups: list[list[int]]) -> list[list[int]]:
    """`groups` the costliest first, by the size of their scenario file (a replay's work grows
    with the text it replays: in a suite of generated traces the two largest files are also
    the two slowest); groups of a built-in scenario, or of files of one size, keep their
    order."""
    sizes: dict[str, int] = {}
    for group in groups:
        name = cells[group[0]].scenario
        if name not in sizes:
            sizes[name] = _file_size(name)
    return sorted(groups, key=lambda group: -sizes[cells[group[0]].scenario])


def _file_size(name: str) -> int:
    try:
        return os.stat(name).st_size if name.lower().endswith(SUFFIXES) else 0
    except OSError:  # the cell reports it when it runs
        return 0


def _trajectory(cell: Cell) -> Cell:
    return replace(cell, reader="")


def _run_group(cells: list[Cell]) -> list[EvalResult]:
    results = [_run_one(cell) for cell in cells]
    collector.settle()
    return results


def _run_one(cell: Cell) -> EvalResult:
    return asyncio.run(arun_cell(cell))


def _warm() -> None:
    """Load what the first replay in a process otherwise loads in its first steps: the word
    lists the simulated reader checks words against (~0.2 s) and the tokenizer. What is
    loaded by then lives as long as the process, so the garbage collector is told to leave
    it out of its full passes (`gc.freeze`), which otherwise walk it again and again."""
    from evals.sources.hygiene import in_dictionary
    from harness.tokens import TokenCounter

    in_dictionary("warm")
    TokenCounter().count_text("warm")
    gc.freeze()


__all__ = ["Workers", "available_cores", "by_cost", "by_replay", "run_cells_on"]
