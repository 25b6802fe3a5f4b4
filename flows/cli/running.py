"""Running a batch of eval cells for `ctxlab eval` and `ctxlab report --run`: a progress bar
on stderr, Ctrl-C at once, and what was stored when it came."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flows.cli.options import plural

if TYPE_CHECKING:
    from evals.run.pool import Workers


def store_on_interrupt(
    args: argparse.Namespace, db: str | None, cells: Sequence[Any], finished: list
) -> None:
    """After Ctrl-C: store the runs that finished (unless `db` is None, --no-save) and say on
    stderr which runs are stored and which are not, so the user knows what to re-run."""
    done = {(r.strategy, r.seed) for r in finished}
    left = [c for c in cells if (c.label or c.strategy, c.seed) not in done]
    prog = args.parser.prog
    if finished and db is not None:
        from evals.scoring.storage import save_or_dump

        batch = save_or_dump(db, finished)
        print(f"{prog}: interrupted; stored the {plural(len(finished), 'finished run')} "
              f"(batch {batch}) in {db}: {_runs(finished)}", file=sys.stderr)  # fmt: skip
    elif finished:
        print(f"{prog}: interrupted; stored nothing (--no-save); finished: {_runs(finished)}",
              file=sys.stderr)  # fmt: skip
    else:
        print(f"{prog}: interrupted before the first run finished; stored nothing",
              file=sys.stderr)  # fmt: skip
    if left:
        print(f"{prog}: not stored (not run or cut short): {_runs(left)}", file=sys.stderr)


def _runs(runs: Sequence[Any]) -> str:
    """Runs (cells or results) as `full seeds 0-4; mask seed 0`, one part per arm."""
    from evals.run.tuning import seed_span

    seeds: dict[str, list[int]] = {}
    for run in runs:
        label = getattr(run, "label", None) or run.strategy
        seeds.setdefault(label, []).append(run.seed)
    return "; ".join(
        f"{arm} seed{'s' if len(s) > 1 else ''} {seed_span(s)}" for arm, s in seeds.items()
    )


@contextmanager
def interrupt_at_once() -> Iterator[None]:
    """The first Ctrl-C stops the run where it is. `asyncio.run` otherwise takes it over and
    only cancels its task, which waits for the running step to yield: a step busy in a loop
    would ignore every Ctrl-C but the second."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    interrupted = threading.Event()

    def interrupt(signum: int, frame: Any) -> None:
        interrupted.set()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    except Exception as exc:
        # A library can turn the interrupt into its own error (DuckDB: "Query interrupted").
        if interrupted.is_set():
            raise KeyboardInterrupt from exc
        raise
    finally:
        signal.signal(signal.SIGINT, previous)


def run_with_progress(
    cells: list,
    *,
    max_usd: float | None,
    quiet: bool,
    finished: list | None = None,
    workers: int | Workers = 1,
    runner: str = "process",
    address: str | None = None,
    meanwhile: Callable[[], None] | None = None,
) -> list:
    """Run `cells` under a progress bar; each result is also appended to `finished` as it
    comes, so an interrupted batch still knows what it completed. `workers` > 1 runs them on
    that many processes (or on `Workers` started earlier, `workers_for`), unless a spending
    cap (shared by the batch) makes them run in turn. `runner="dask"` runs them on the Dask
    scheduler at `address`, or on a local cluster of `workers` processes. `meanwhile`: the
    caller's own work before the cells' results, done once started workers have their first
    cells (`run_cells_on`), else first."""
    from evals.run import collector
    from evals.run.cell import run_cells
    from evals.run.pool import by_replay
    from flows.progress import PipedProgress, rich_bar

    # The process ends soon after its batch: its heap, large after replays, is left to the
    # operating system instead of collected once more at exit.
    collector.freeze_at_exit()
    # Settled once a replay's cells are done: its ideal-reader twin replays the same texts.
    group_ends = {id(cells[group[-1]]) for group in by_replay(cells)}
    console = _console()
    hidden = quiet or not console.is_terminal  # else a stray blank line when piped
    # Piped, a long batch says where it is every few seconds instead of nothing for minutes.
    piped = PipedProgress("eval", len(cells)) if not quiet and not console.is_terminal else None
    with rich_bar("{task.description}", transient=True, disable=hidden, console=console) as bar:
        overall = bar.add_task("runs", total=len(cells))
        turns = bar.add_task("turns", total=1)
        count = 0

        def step(cell: Any, done: int, total: int) -> None:
            bar.update(
                turns, completed=done, total=total, description=f"{cell.strategy} seed {cell.seed}"
            )

        def done(cell: Any, result: Any) -> None:
            nonlocal count
            if id(cell) in group_ends:
                collector.settle()
            count += 1
            if finished is not None:
                finished.append(result)
            bar.advance(overall)
            if piped is not None:
                piped.advance(count, f"last: {cell.label or cell.strategy} seed {cell.seed}")

        count = workers if isinstance(workers, int) else workers.count
        with interrupt_at_once(), collector.replaying():
            if count > 1 and max_usd is None and runner != "dask":
                from evals.run.pool import run_cells_on

                return run_cells_on(cells, workers, on_result=done, meanwhile=meanwhile)
            if meanwhile is not None:
                meanwhile()
            if runner == "dask":
                from evals.run.cluster import run_cells_on_dask

                return run_cells_on_dask(cells, address=address, workers=count, on_result=done)
            return run_cells(cells, max_usd=max_usd, on_result=done, progress=step)


@contextmanager
def workers_for(args: argparse.Namespace, workers: int) -> Iterator[int | Workers]:
    """`workers` for `run_and_store`, started now when its cells will run on processes of this
    machine (the process runner, no spending cap): a caller with work to do before it has its
    cells (a suite's files to read) overlaps it with their start."""
    if workers > 1 and args.runner == "process" and args.max_usd is None:
        from evals.run.pool import Workers

        with Workers(workers) as started:
            yield started
    else:
        yield workers


def run_and_store(
    args: argparse.Namespace,
    cells: list,
    *,
    workers: int | Workers = 1,
    meanwhile: Callable[[], None] | None = None,
) -> list:
    """Run `cells` and store their results in `args.db` (unless `--no-save`): the store is
    opened for writing first, so a locked or read-only file fails before any work, and an
    interrupted batch stores what it finished. `meanwhile`: see `run_with_progress`."""
    from flows.cli.options import writable_store
    from harness.store import default_path

    db = args.db or default_path()
    if not args.no_save:
        writable_store(db)
    finished: list = []
    try:
        results = run_with_progress(
            cells, max_usd=args.max_usd, quiet=args.json, finished=finished, workers=workers,
            runner=args.runner, address=args.address, meanwhile=meanwhile,
        )  # fmt: skip
    except KeyboardInterrupt:
        store_on_interrupt(args, None if args.no_save else db, cells, finished)
        raise
    if not args.no_save:
        from evals.scoring.storage import save_or_dump

        batch = save_or_dump(db, results)
        if not args.json:
            print(f"stored {plural(len(results), 'run')} (batch {batch}) in {db}")
    return results


def _console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


def say_written(paths: Sequence[Path], *, quiet: bool = False) -> None:
    """The files a report wrote, the page first; on stderr under `--json` (stdout is the
    JSON)."""
    for path in paths:
        print(f"wrote {path}", file=sys.stderr if quiet else sys.stdout)
