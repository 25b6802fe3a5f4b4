"""A suite fanned out on a Dask cluster (`ctxlab eval --runner dask --address ...`) gives
exactly the results of one process, and only the client stores them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.evals import without_wall

from evals import load_runs
from evals.run.cell import Cell
from flows.cli import main

distributed = pytest.importorskip("distributed")

FIXTURES = Path(__file__).parents[1] / "analysis" / "suite_fixtures"
ARMS = ["--strategy", "full", "--strategy", "truncate"]


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """A local cluster of two workers (threads of this process, as few as the sweep's Dask
    test starts) behind a TCP scheduler: its address is what a user passes for a cluster
    elsewhere."""
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address=None,
    ) as cluster:
        yield cluster.scheduler_address


def run_suite(capsys: pytest.CaptureFixture[str], *options: str) -> list[Any]:
    code = main(["eval", "--scenario", str(FIXTURES), *ARMS, "--json", "--probes", *options])
    assert code == 0, capsys.readouterr().err
    return [without_wall(json.loads(line)) for line in capsys.readouterr().out.splitlines()]


def test_a_suite_on_a_dask_cluster_gives_the_results_of_one_process(
    capsys: pytest.CaptureFixture[str], scheduler: str, tmp_path: Path
) -> None:
    here = run_suite(capsys, "--workers", "1", "--no-save")
    db = str(tmp_path / "dask.duckdb")
    there = run_suite(capsys, "--runner", "dask", "--address", scheduler, "--db", db)
    assert len(here) == 3 * 2 + 1  # three traces under two arms, then the summary
    assert there == here
    # Stored by the client: every run of the suite, the ideal reader's too, in one batch.
    runs = load_runs(db)
    assert runs.height == 3 * 2 * 2
    assert runs["batch"].n_unique() == 1


def test_a_file_a_worker_cannot_read_stops_the_batch_before_any_cell(
    scheduler: str, tmp_path: Path
) -> None:
    from evals.run.cluster import run_cells_on_dask

    gone = tmp_path / "gone.yaml"
    cell = Cell(str(gone), "full")
    with pytest.raises(ValueError, match=r"cannot read scenario file .*gone\.yaml"):
        run_cells_on_dask([cell], address=scheduler)


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--address", "tcp://127.0.0.1:8786"], "give --runner dask too"),
        (["--runner", "dask", "--max-usd", "1"], "not with --runner dask"),
    ],
)
def test_options_dask_cannot_honour_are_refused(
    capsys: pytest.CaptureFixture[str], options: list[str], says: str
) -> None:
    assert main(["eval", "--scenario", str(FIXTURES), *options]) == 2
    assert says in capsys.readouterr().err
