"""A `Cell` is one run to make: it checks itself before any run, `arun_cell` runs it, and
`run_cell` is the same run from plain arguments."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from evals.run.cell import Cell, arun_cell, check_cells, run_cell

TRANSCRIPT = "support-transcript"  # the fastest scenario at small scale


def test_arun_cell_runs_a_cell_as_run_cell_does() -> None:
    cell = Cell(TRANSCRIPT, "mask", {"mask.keep": 4}, seed=1, label="mask-4")
    ran = asyncio.run(arun_cell(cell))
    same = run_cell(TRANSCRIPT, "mask", {"mask.keep": 4}, 1, label="mask-4")
    assert (ran.strategy, ran.params, ran.seed) == ("mask-4", {"mask.keep": 4}, 1)
    assert replace(ran, wall_s=0.0) == replace(same, wall_s=0.0)  # the same run, but its time


@pytest.mark.parametrize(
    ("cell", "named"),
    [
        (Cell("nope", "full"), "nope"),
        (Cell(TRANSCRIPT, "shred"), "shred"),
        (Cell(TRANSCRIPT, "mask", {"mask.keep": -1}), "mask.keep"),
        (Cell(TRANSCRIPT, "mask", {"summarize.trigger": 0.7}), "summarize.trigger"),
        (Cell(TRANSCRIPT, "full", scale="huge"), "huge"),
        (Cell(TRANSCRIPT, "full", model="no-such-model"), "no-such-model"),
    ],
)
def test_a_cell_refuses_what_it_cannot_run_before_any_run(cell: Cell, named: str) -> None:
    with pytest.raises(Exception, match=named):
        check_cells([Cell(TRANSCRIPT, "full"), cell])
