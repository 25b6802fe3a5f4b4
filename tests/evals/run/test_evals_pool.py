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


def _sized(tmp_path: Path, sizes: dict[str, int]) -> list[str]:
    """Copies of one fixture padded (with a YAML comment) to the given extra sizes."""
    text = (FIXTURES / "alpha.yaml").read_text()
    paths = []
    for name, extra in sizes.items():
        path = tmp_path / name
        path.write_text(text.replace("suite-alpha", f"suite-{path.stem}") + "#" * extra + "\n")
        paths.append(str(path))
    return paths


def test_groups_go_out_the_costliest_first_results_stay_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small, large, middle = _sized(tmp_path, {"s.yaml": 0, "l.yaml": 4000, "m.yaml": 2000})
    cells = [Cell(small, "full"), Cell(small, "full", reader="ideal"), Cell(large, "full"),
             Cell(large, "full", reader="ideal"), Cell("competitive-analysis", "full"),
             Cell(middle, "full"), Cell(middle, "full", seed=1)]  # fmt: skip
    groups = by_replay(cells)
    assert pool.by_cost(cells, groups) == [[2, 3], [5], [6], [0, 1], [4]]

    handed: list[list[str]] = []

    class Recorded(pool.ProcessPoolExecutor):
        def submit(self, fn, /, *args, **kw):  # type: ignore[no-untyped-def, override]
            if fn is pool._run_group:
                handed.append([c.scenario for c in args[0]])
            return super().submit(fn, *args, **kw)

    here: list[str] = []
    run_one = pool._run_one
    monkeypatch.setattr(pool, "_run_one", lambda cell: here.append(cell.scenario) or run_one(cell))
    monkeypatch.setattr(pool, "ProcessPoolExecutor", Recorded)
    files = cells[:4]
    results = run_cells_on(files, 2)
    # The started worker gets the large file's pair first; this process takes the small one.
    assert handed[0] == [large, large] and here[:2] == [small, small]
    assert [r.scenario for r in results] == ["suite-s", "suite-s", "suite-l", "suite-l"]
    assert [without_wall(r.__dict__) for r in results] == [
        without_wall(r.__dict__) for r in run_cells(files)
    ]


def test_workers_start_when_made_and_warm_up_before_any_cell(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    submitted: list[object] = []

    class Recorded(pool.ProcessPoolExecutor):
        def submit(self, fn, /, *args, **kw):  # type: ignore[no-untyped-def, override]
            submitted.append(fn)
            return super().submit(fn, *args, **kw)

    monkeypatch.setattr(pool, "ProcessPoolExecutor", Recorded)
    cells = _suite_cells()
    with pool.Workers(2) as workers:
        assert submitted == [pool._warm]  # the process starts now, not when the cells come
        results = run_cells_on(cells, workers)
    assert submitted[1:] and all(fn is pool._run_group for fn in submitted[1:])
    assert [without_wall(r.__dict__) for r in results] == [
        without_wall(r.__dict__) for r in run_cells(cells)
    ]


def test_a_bad_worker_count_is_refused() -> None:
    for bad in (0, True, 1.5):
        with pytest.raises(ValueError, match="workers must be a whole number >= 1"):
            pool.Workers(bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="workers must be a whole number >= 1"):
            run_cells_on(_suite_cells(), bad)  # type: ignore[arg-type]


def test_leaving_on_an_error_stops_the_started_workers_without_waiting() -> None:
    with pytest.raises(KeyboardInterrupt), pool.Workers(2) as workers:
        processes = list(workers._pool._processes.values())  # type: ignore[union-attr]
        raise KeyboardInterrupt
    for process in processes:
        process.join(timeout=5)
    assert processes and all(p.exitcode is not None and p.exitcode < 0 for p in processes)
