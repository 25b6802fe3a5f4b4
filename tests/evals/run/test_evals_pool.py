"""Cells on processes: this process is one of the workers, and a trace's cells that differ only
in reader run in one process, with the results of running them all here."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.evals import without_wall

import evals.run.pool as pool
from evals.run.cell import Cell, run_cells
from evals.run.pool import by_replay, run_cells_on

FIXTURES = Path(__file__).parents[1] / "analysis" / "suite_fixtures"


def _suite_cells() -> list[Cell]:
    cells = []
    for path in sorted(FIXTURES.glob("*.yaml")):
        cells += [Cell(str(path), "full", window=16_000),
                  Cell(str(path), "full", window=16_000, reader="ideal")]  # fmt: skip
    return cells


def test_a_replay_and_its_ideal_reader_twin_are_grouped_seeds_are_not() -> None:
    a, b = str(FIXTURES / "a.yaml"), str(FIXTURES / "b.yaml")
    cells = [Cell(a, "full"), Cell(a, "full", reader="ideal"), Cell(a, "full", seed=1),
             Cell(a, "truncate"), Cell(b, "truncate"),
             Cell(b, "truncate", reader="ideal")]  # fmt: skip
    assert by_replay(cells) == [[0, 1], [2], [3], [4, 5]]


def test_two_workers_are_this_process_and_one_more(monkeypatch: pytest.MonkeyPatch) -> None:
    cells = _suite_cells()
    here: list[str] = []
    run_one = pool._run_one
    monkeypatch.setattr(pool, "_run_one", lambda cell: here.append(cell.scenario) or run_one(cell))
    started: list[int] = []

    class Counted(pool.ProcessPoolExecutor):
        def __init__(self, max_workers: int, **kw: object) -> None:
            started.append(max_workers)
            super().__init__(max_workers, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(pool, "ProcessPoolExecutor", Counted)
    seen: list[Cell] = []
    results = run_cells_on(cells, 2, on_result=lambda cell, _: seen.append(cell))
    assert started == [1] and here  # the started worker's cells never pass through here
    assert len(here) % 2 == 0 and all(here[i] == here[i + 1] for i in range(0, len(here), 2))
    assert sorted(map(id, seen)) == sorted(map(id, cells))
    assert [without_wall(r.__dict__) for r in results] == [
        without_wall(r.__dict__) for r in run_cells(cells)
    ]
