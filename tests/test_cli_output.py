"""What the commands print says what ran: parameters kept in labels and sweep tables, correct
plurals, a legend on the plot, every scenario under `report --run`, the demo's store."""

from __future__ import annotations

import logging
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest

from flows.cli import main, print_sweep

ROOT = Path(__file__).resolve().parents[1]


pytestmark = pytest.mark.usefixtures("cli_env")


def row(strategy: str, params: dict[str, Any], **extra: Any) -> dict[str, Any]:
    label = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
    return {
        "setting": f"{strategy} [{label}]" if params else strategy, "strategy": strategy,
        "params": params, "seeds": 1, "accuracy": 0.9, "accuracy_ci": "0.900-0.900",
        "input_tokens": 1000, "peak_context_tokens": 500, "cost_usd": 0.01,
        "overflow_rate": 0.0, "pareto": True, "recommended": False, **extra,
    }  # fmt: skip


def test_the_sweep_table_shows_every_varying_parameter_in_full(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rows = [
        row("full", {"offload.tool_token_limit": 20000, "summarize.trigger_mode": "messages:40"}),
        row("full", {"offload.tool_token_limit": 8000, "summarize.trigger_mode": "fraction"}),
        row("mask", {"mask.keep": 6}, recommended=True),
    ]
    print_sweep(rows, title="competitive-analysis [small]")
    out = capsys.readouterr().out
    for text in ("offload.tool_token_limit", "summarize.trigger_mode", "mask.keep",
                 "messages:40", "20000", "competitive-analysis [small]"):  # fmt: skip
        assert text in out
    assert "…" not in out


def test_eval_labels_keep_their_parameters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["eval", "--scenario", "competitive-analysis", "--strategy", "mask"]
    assert (
        main([*argv, "--set", "mask.keep=6", "--seed", "0", "--db", str(tmp_path / "e.duckdb")])
        == 0
    )
    out = capsys.readouterr().out
    assert "mask [mask.keep=6]" in out  # brackets are not read as markup
    assert "stored 1 run " in out  # not "1 runs"


def test_the_plot_has_a_legend(tmp_path: Path) -> None:
    from evals.plot import ORANGE, Point, scatter

    path = scatter([Point("a", 0.1, 0.2, front=True)], tmp_path / "p.png", title="t", x_label="x")
    data = path.read_bytes()
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    idat = data[data.index(b"IDAT") + 4 : data.index(b"IEND") - 8]
    raw = zlib.decompress(idat)
    stride = 1 + 3 * width
    legend_rows = raw[(height - 32) * stride : (height - 16) * stride]
    assert bytes(ORANGE) in legend_rows  # the Pareto line's key, below the axis label


def test_report_run_covers_every_scenario(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from evals.scenarios import list_scenarios

    seen: list[Any] = []

    def record(cells: list[Any], **_kwargs: Any) -> Any:
        seen.extend(cells)
        raise RuntimeError("enough")

    monkeypatch.setattr("evals.cli._run_with_progress", record)
    assert main(["report", "--run", "--db", str(tmp_path / "r.duckdb")]) == 1
    assert {c.scenario for c in seen} == set(list_scenarios())
    assert {c.reader for c in seen} == {"fallible", "ideal"}


def test_the_demo_writes_to_ctxlab_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {}

    def run_demo(**kwargs: Any) -> int:
        seen.update(kwargs)
        return 0

    monkeypatch.setattr("flows.demo.run_demo", run_demo)
    monkeypatch.setenv("CTXLAB_DB", str(tmp_path / "mine.duckdb"))
    assert main(["demo", "--ephemeral"]) == 0
    assert seen["db"] == str(tmp_path / "mine.duckdb")


def test_the_demo_counts_step_tasks_with_correct_plurals() -> None:
    from flows.demo import StepCounter, plural
    from flows.runner import step_log

    shown: list[str] = []
    counter = StepCounter("week 1", shown.append)
    step_log.addHandler(counter)
    step_log.setLevel(logging.DEBUG)
    try:
        step_log.debug("%s #%d", "model", 1)
        step_log.debug("%s #%d", "tool:read", 1)
    finally:
        step_log.removeHandler(counter)
        step_log.setLevel(logging.NOTSET)
    assert shown == ["week 1: 1 Prefect task, now model #1",
                     "week 1: 2 Prefect tasks, now tool:read #1"]  # fmt: skip
    assert plural(1, "run") == "1 run" and plural(2, "run") == "2 runs"


def test_scenario_exports_are_git_ignored() -> None:
    ignored = subprocess.run(["git", "check-ignore", "-q", "exports/competitive-analysis-small-0"],
                             cwd=ROOT, check=False)  # fmt: skip
    assert ignored.returncode == 0


def test_check_prints_its_verdict_as_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    def gate(suite: str, baseline: Any, *, update: bool, say: Any) -> int:
        say("REGRESSION  competitive-analysis/full/small/seed=0: accuracy 90.0% -> 80.0%")
        return 1

    monkeypatch.setattr("evals.check.run_check", gate)
    assert main(["check", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["passed"] is False and doc["suite"] == "ci"
    assert doc["lines"][0].startswith("REGRESSION")
