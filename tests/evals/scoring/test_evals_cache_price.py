"""Costs at the published cached-read prices (issue 20, item 9): the simulated profile charges
0.05x input for a cache read, below every published figure (0.1-0.5x), so every run, table and
summary also gives its cost at 0.1x and 0.5x; which strategy is cheaper can turn on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.evals import result

from evals.analysis.metrics import aggregate, summaries
from evals.report.markdown import render_table
from evals.scoring.storage import load_runs, results_from_frame, save_results


def test_a_run_is_priced_at_each_published_cache_share() -> None:
    run = result(cached_input_tokens=80_000, cost_usd=0.05)  # simulated: $2/M in, $0.10/M cached
    assert run.cost_by_cache_price() == {
        "0.05": 0.05,  # the profile's own share: the run's cost
        "0.1": pytest.approx(0.05 + 80_000 * (0.20 - 0.10) / 1e6),
        "0.5": pytest.approx(0.05 + 80_000 * (1.00 - 0.10) / 1e6),
    }
    assert json.loads(run.to_json())["cost_by_cache_price"]["0.5"] == pytest.approx(0.122)


def test_a_model_without_a_profile_has_no_other_prices() -> None:
    assert result(model="acme:unknown-model").cost_by_cache_price() == {}


def test_which_strategy_is_cheaper_turns_on_the_cache_price() -> None:
    # `raw` keeps one long prefix that is read from cache; `mask` rewrites it and is never cached.
    raw = result("none", input_tokens=1_000_000, cached_input_tokens=950_000, output_tokens=0,
                 cost_usd=(50_000 * 2.0 + 950_000 * 0.10) / 1e6)  # fmt: skip
    mask = result("mask", input_tokens=400_000, cached_input_tokens=0, output_tokens=0,
                  cost_usd=400_000 * 2.0 / 1e6)  # fmt: skip
    assert raw.cost_usd < mask.cost_usd  # at the simulated 0.05x
    assert raw.cost_by_cache_price()["0.5"] > mask.cost_by_cache_price()["0.5"]


def test_tables_and_summaries_give_the_costs_at_other_cache_prices() -> None:
    runs = [result("full", s, cached_input_tokens=80_000, cost_usd=0.05) for s in range(2)]
    (row,) = summaries(runs)
    assert row["cost_by_cache_price_mean"] == {"0.05": 0.05, "0.1": 0.058, "0.5": 0.122}
    header, _, line = render_table(aggregate(runs), runs)[:3]
    assert "cost $, cache 0.1x" in header and "cost $, cache 0.5x" in header
    assert "| 0.0580 | 0.1220 |" in line
    assert header.count("|") == line.count("|")


def test_the_derived_costs_are_not_stored_and_come_back_from_the_tokens(tmp_path: Path) -> None:
    db = tmp_path / "r.duckdb"
    run = result(cached_input_tokens=80_000)
    save_results(db, [run])
    (back,) = results_from_frame(load_runs(db))
    assert back.cost_by_cache_price() == run.cost_by_cache_price()
