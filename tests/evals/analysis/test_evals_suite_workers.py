"""A suite's cells on several processes give exactly the results of one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.evals import without_wall

from flows.cli import main

FIXTURES = Path(__file__).parent / "suite_fixtures"


def run_suite(capsys: pytest.CaptureFixture[str], workers: int) -> list[Any]:
    arms = ["--strategy", "full", "--strategy", "truncate"]
    code = main(["eval", "--scenario", str(FIXTURES), *arms, "--json", "--probes", "--no-save",
                 "--workers", str(workers)])  # fmt: skip
    assert code == 0
    return [without_wall(json.loads(line)) for line in capsys.readouterr().out.splitlines()]


def test_two_workers_give_the_results_of_one(capsys: pytest.CaptureFixture[str]) -> None:
    one = run_suite(capsys, 1)
    assert len(one) == 3 * 2 + 1
    assert run_suite(capsys, 2) == one


def test_zero_workers_is_refused_naming_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--scenario", str(FIXTURES), "--workers", "0"]) != 0
    assert "--workers: must be at least 1 process" in capsys.readouterr().err
