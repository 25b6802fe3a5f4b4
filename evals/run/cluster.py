"""Cells run on a Dask cluster: a suite of thousands of traces is not bound to one machine.
Each worker replays a cell exactly as `run_cells` does (its own in-memory store, its own seeded
model) and sends its `EvalResult` back; only the caller stores results, so no worker ever opens
DuckDB and the results do not depend on where a cell ran.

A worker reads a scenario file itself, at the path the caller names: on a cluster of several
machines the suite must sit on a filesystem every worker mounts at the same path. That is
checked on every worker before any cell runs, since a worker that cannot see a file would take
its path for an unknown built-in scenario."""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

from evals.run.cell import Cell, arun_cell
from evals.scoring.results import EvalResult

SUFFIXES = (".yaml", ".yml")


def run_cells_on_dask(
    cells: Sequence[Cell],
    *,
    address: str | None = None,
    workers: int = 1,
    on_result: Callable[[Cell, EvalResult], None] | None = None,
) -> list[EvalResult]:
    """Run `cells` on the Dask scheduler at `address` (`tcp://host:8786`), or on a local
    cluster of `workers` processes when there is none; results in the order of `cells`,
    `on_result` called here as each finishes. No spending cap, as with `run_cells_on`: a cap
    shared by concurrent cells would depend on their timing."""
    if not cells:
        return []
    shipped = [_with_absolute_path(cell) for cell in cells]
    with _client(address, workers) as client:
        from distributed import as_completed

        _check_workers_read(client, shipped)
        # pure=False: two equal cells are two runs, as they are in a local batch.
        futures = client.map(_run_one, shipped, pure=False)
        position = {future.key: k for k, future in enumerate(futures)}
        results: list[EvalResult | None] = [None] * len(cells)
        for future in as_completed(futures):
            k = position[future.key]
            results[k] = future.result()
            if on_result is not None:
                on_result(cells[k], results[k])  # type: ignore[arg-type]
    return results  # type: ignore[return-value]


def dask_module(name: str, package: str) -> ModuleType:
    """Module `name` of the `dask` extra, or the one-line error that says how to install it;
    Dask's own logging quieted (a local cluster logs every worker and connection at INFO)."""
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise RuntimeError(
            f"--runner dask needs {package}: install it with `uv sync --extra dask`"
        ) from exc
    logging.getLogger("distributed").setLevel(logging.WARNING)
    return module


@contextmanager
def _client(address: str | None, workers: int) -> Iterator[Any]:
    distributed = dask_module("distributed", "dask.distributed")
    Client, LocalCluster = distributed.Client, distributed.LocalCluster
    if address:
        with Client(address) as client:
            yield client
        return
    with (
        LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        yield client


def _with_absolute_path(cell: Cell) -> Cell:
    """A worker's working directory is not the caller's: a relative scenario file path would
    name another file there, or none."""
    if cell.scenario.lower().endswith(SUFFIXES) and Path(cell.scenario).is_file():
        return replace(cell, scenario=str(Path(cell.scenario).resolve()))
    return cell


def _check_workers_read(client: Any, cells: Sequence[Cell]) -> None:
    files = sorted({c.scenario for c in cells if c.scenario.lower().endswith(SUFFIXES)})
    if not files:
        return
    missing = {w: paths for w, paths in client.run(_unreadable, files).items() if paths}
    if missing:
        worker, paths = next(iter(missing.items()))
        more = f" (and {len(paths) - 1} more)" if len(paths) > 1 else ""
        raise ValueError(
            f"Dask worker {worker} cannot read scenario file {paths[0]}{more}: put the suite "
            "on a filesystem every worker mounts at the same path"
        )


def _unreadable(paths: Sequence[str]) -> list[str]:
    """Run on each worker: the scenario files it cannot see."""
    return [p for p in paths if not Path(p).is_file()]


def _run_one(cell: Cell) -> EvalResult:
    return asyncio.run(arun_cell(cell))


__all__ = ["run_cells_on_dask"]
