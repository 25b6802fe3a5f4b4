"""A pytest fixture to gate your own strategies the way `ctxlab check` gates ctxlab's.

    # conftest.py
    pytest_plugins = ["evals.gate.pytest_plugin"]

    # test_my_strategy.py
    from evals import Cell

    def test_my_threshold_keeps_accuracy(ctxlab_gate):
        ctxlab_gate.check(
            [Cell("competitive-analysis", "full", {"summarize.trigger": 0.6})],
            "tests/baselines/my_threshold.json",
        )

The test fails, with a readable diff, when accuracy drops or tokens or cost rise past the
baseline's tolerances. `pytest --ctxlab-update` writes the baselines from the current runs.
Your own middleware runs through `Cell(..., middleware=factory, label="mine")`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from evals.gate.check import gate
from evals.run.cell import Cell, run_cells
from evals.scoring.results import EvalResult


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--ctxlab-update",
        action="store_true",
        default=False,
        help="rewrite the ctxlab eval baselines checked by the ctxlab_gate fixture",
    )


@dataclass(frozen=True)
class EvalGate:
    update: bool

    def check(self, cells: Sequence[Cell], baseline: str | Path) -> list[EvalResult]:
        """Run `cells` and compare them with `baseline`; fails the test on a regression."""
        results = run_cells(cells)
        ok, lines = gate(results, baseline, update=self.update, suite=Path(baseline).stem)
        if not ok:
            pytest.fail("\n".join(lines), pytrace=False)
        return results


@pytest.fixture
def ctxlab_gate(request: pytest.FixtureRequest) -> EvalGate:
    """Gate eval cells against a committed baseline (see the module doc)."""
    return EvalGate(update=bool(request.config.getoption("--ctxlab-update")))
