"""The eval_sweep flow: one task per grid cell, results written once to DuckDB, a table
artifact with the Pareto front and a recommended setting."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.flows import artifacts, flow_run_name, flow_run_tags, task_runs_of

from evals import load_runs
from evals.scoring.storage import results_from_frame
from flows.cli import main
from flows.server import ServerInfo
from flows.sweep import eval_sweep, expand, parse_grid, task_runner


def test_the_grid_varies_each_strategy_only_in_the_keys_its_stack_takes() -> None:
    grid = {"summarize.trigger": [0.6, 0.85], "offload.tool_token_limit": [5000, 20000]}
    cells = expand("competitive-analysis", ["full", "mask", "summarize"], grid, [0, 1])
    by_strategy: dict[str, set[str]] = {}
    for c in cells:
        by_strategy.setdefault(c.strategy, set()).add(repr(sorted(c.params.items())))
    assert len(by_strategy["full"]) == 4  # both keys: 2 x 2 settings
    assert len(by_strategy["summarize"]) == 2  # no offload in its stack
    assert by_strategy["mask"] == {"[]"}  # neither key
    assert len(cells) == (4 + 2 + 1) * 2  # every setting for both seeds


def test_a_grid_key_no_strategy_takes_is_an_error() -> None:
    with pytest.raises(ValueError, match="summarize.triger"):
        expand("competitive-analysis", ["full"], {"summarize.triger": [0.5]}, [0])


def test_grid_values_parse_as_json_where_they_can() -> None:
    assert parse_grid(["summarize.trigger=0.6,0.85", "summarize.keep=messages:20"]) == {
        "summarize.trigger": [0.6, 0.85],
        "summarize.keep": ["messages:20"],
    }


def test_a_sweep_runs_one_task_per_cell_and_stores_and_publishes_the_results(
    prefect_server: ServerInfo, db: str
) -> None:
    result = asyncio.run(
        eval_sweep.with_options(task_runner=task_runner("thread", workers=2))(
            scenario="competitive-analysis", strategies=["full", "none"],
            grid={"offload.tool_token_limit": [2500, 4000]}, seeds=1, db=db,
        )
    )  # fmt: skip
    settings = [r["setting"] for r in result["rows"]]
    assert settings == [
        "full [offload.tool_token_limit=2500]",
        "full [offload.tool_token_limit=4000]",
        "none",
    ]
    assert flow_run_name(result["flow_run_id"]) == "sweep competitive-analysis (small)"
    tags = set(flow_run_tags(result["flow_run_id"]))
    assert {"ctxlab", "sweep", "scenario:competitive-analysis", "arm:full", "arm:none"} <= tags
    recorded = task_runs_of(result["flow_run_id"], expected=3)
    assert sorted(t.name for t in recorded) == [
        "full [offload.tool_token_limit=2500] seed=0",
        "full [offload.tool_token_limit=4000] seed=0",
        "none seed=0",
    ]
    stored = load_runs(db)
    assert stored.height == 3 and stored["batch"].unique().to_list() == [result["batch"]]

    front = set(result["front"])
    rows = {r["setting"]: r for r in result["rows"]}
    assert {s for s, r in rows.items() if r["pareto"]} == front
    chosen = [r for r in rows.values() if r["recommended"]]
    assert [r["setting"] for r in chosen] == result["recommended"]
    # one seed: intervals are points, so the pick has the best accuracy, and is the cheapest
    best = max(r["accuracy"] for r in rows.values())
    assert all(r["accuracy"] == best for r in chosen)
    cheapest = min(r["cost_usd"] for r in rows.values() if r["accuracy"] == best)
    assert all(r["cost_usd"] == cheapest for r in chosen)
    assert "one seed" in result["recommendation"]
    assert f"{chosen[0]['cost_usd']:.4f}" in result["recommendation"]

    runs = result["runs"]  # one per cell and seed, with the fields of `ctxlab eval --json`
    assert [(r["strategy"], r["params"], r["seed"]) for r in runs] == [
        ("full", {"offload.tool_token_limit": 2500}, 0),
        ("full", {"offload.tool_token_limit": 4000}, 0),
        ("none", {}, 0),
    ]
    assert {"accuracy", "input_tokens", "cost_usd", "reader", "overflowed"} <= set(runs[0])
    (table, *_) = artifacts("eval-sweep-competitive-analysis")
    assert "offload.tool_token_limit=4000" in table.data
    (front_page, *_) = artifacts("eval-sweep-competitive-analysis-front")
    assert result["recommendation"] in front_page.data


def test_dask_runs_the_cells_when_prefect_dask_is_installed(
    prefect_server: ServerInfo, db: str
) -> None:
    pytest.importorskip("prefect_dask")
    result = asyncio.run(
        eval_sweep.with_options(task_runner=task_runner("dask", workers=2))(
            scenario="competitive-analysis", strategies=["full", "truncate"], seeds=1, db=db
        )
    )
    assert [r["setting"] for r in result["rows"]] == ["full", "truncate"]
    assert load_runs(db).height == 2


@pytest.mark.slow
def test_the_process_runner_records_every_task_run_on_the_found_server(
    prefect_server: ServerInfo, subprocess_env: dict[str, str], tmp_path: Path
) -> None:
    """The real path: `ctxlab sweep --runner process` finds the server from its record (no
    PREFECT_API_URL exported), and the workers' task runs all reach it."""
    assert prefect_server.log_path is not None
    env = {k: v for k, v in subprocess_env.items() if k != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(Path(prefect_server.log_path).parent)
    out = subprocess.run(
        [sys.executable, "-m", "flows.cli", "sweep", "--scenario", "competitive-analysis",
         "--strategy", "none", "--strategy", "truncate", "--strategy", "mask", "--seeds", "4",
         "--runner", "process", "--workers", "2", "--db", str(tmp_path / "s.duckdb")],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    (flow_run_id,) = re.findall(r"Prefect UI: \S*/([0-9a-f-]{36})", out.stdout)
    runs = task_runs_of(flow_run_id, expected=12)
    assert len(runs) == 12
    assert all(r.state_name == "Completed" for r in runs)


def test_sweep_json_prints_one_eval_object_per_run_and_the_table_says_why(
    prefect_server: ServerInfo, db: str, capsys: pytest.CaptureFixture[str], wide_terminal: None
) -> None:
    argv = ["sweep", "--scenario", "support-transcript", "--strategy", "offload", "--grid",
            "offload.human_token_limit=2000,5000", "--seeds", "3,5", "--db", db]  # fmt: skip
    assert main([*argv, "--json"]) == 0
    *runs, verdict = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert sorted((r["params"]["offload.human_token_limit"], r["seed"]) for r in runs) == [
        (2000, 3),
        (2000, 5),
        (5000, 3),
        (5000, 5),
    ]  # fmt: skip  (the seeds listed, not 0..N-1)
    eval_fields = set(results_from_frame(load_runs(db))[0].to_dict())
    assert all(eval_fields <= set(r) for r in runs)
    # then the recommendation and whether leaving a seed out changes it
    assert verdict["recommendation"] is True and verdict["recommended"]
    assert verdict["stability"]["subsets"] == 2 and verdict["stability"]["subset_size"] == 1
    assert isinstance(verdict["stability"]["stable"], bool)

    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "Recommended: offload [offload.human_token_limit=" in out or "Tied: " in out
    assert "95% CI" in out and "a run" in out
    assert "Stable: " in out or "Unstable: " in out  # the recommendation, one seed left out
