"""What the commands print says what ran: parameters kept in labels and sweep tables, correct
plurals, every scenario under `report --run`, the
demo's store and its quiet progress."""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path
from typing import Any

import pytest

from flows.cli import main
from flows.sweep import print_sweep

ROOT = Path(__file__).resolve().parents[3]


pytestmark = pytest.mark.usefixtures("cli_env", "wide_terminal")


def row(strategy: str, params: dict[str, Any], **extra: Any) -> dict[str, Any]:
    label = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
    return {
        "setting": f"{strategy} [{label}]" if params else strategy, "strategy": strategy,
        "params": params, "seeds": 1, "accuracy": 0.9, "accuracy_ci": "90.0%-90.0%",
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


def test_the_sweep_table_has_vs_full_tied_marks_and_intervals_in_percent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from helpers.evals import result

    from evals import aggregate, pareto_front, recommend
    from flows.sweep import table_rows

    runs = [
        *(result("full", s, accuracy=a, cost_usd=0.10) for s, a in enumerate((0.9, 0.8, 0.85))),
        *(result("mask", s, accuracy=a, cost_usd=0.04) for s, a in enumerate((0.8, 0.85, 0.8))),
        *(result("none", s, accuracy=0.3, cost_usd=0.01) for s in range(3)),
    ]
    settings = aggregate(runs)
    rows = table_rows(settings, pareto_front(settings), recommend(settings), runs)
    by = {r["setting"]: r for r in rows}
    assert by["full"]["vs_full"] == 0 and by["none"]["vs_full"] == pytest.approx(-0.55)
    assert by["mask"]["tied_with_best"] and not by["none"]["tied_with_best"]
    print_sweep(rows, title="t")
    lines = {line.split("│")[1].strip(): line for line in capsys.readouterr().out.splitlines()
             if line.count("│") > 3}  # fmt: skip
    assert "-55.0% (-60.0% to -50.0%)" in lines["none"]  # paired, on the same seeds
    assert "81.7% (80.0%-85.0%)" in lines["mask"]  # the interval in percent, as the mean
    assert lines["mask"].rstrip(" │").endswith("recommended tied front")
    assert lines["full"].rstrip(" │").endswith("tied front")


def test_the_sweep_table_marks_a_recommendation_a_seed_decides_as_unstable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from helpers.evals import result

    from evals import aggregate, pareto_front, recommend
    from evals.analysis.stability import stability
    from flows.sweep import table_rows

    # `full` wins on four seeds and falls on the fifth, so the cheaper `mask` ties with it
    # only while that seed is in (issue 20, item 8).
    runs = [
        *(result("mask", s, accuracy=0.8, cost_usd=0.04) for s in range(5)),
        *(result("full", s, accuracy=a, cost_usd=0.10)
          for s, a in enumerate((1.0, 1.0, 1.0, 1.0, 0.2))),
    ]  # fmt: skip
    settings = aggregate(runs)
    rows = table_rows(settings, pareto_front(settings), recommend(settings), runs,
                      stable=stability(runs))  # fmt: skip
    by = {r["setting"]: r for r in rows}
    assert by["mask"]["recommended"] and by["mask"]["unstable"] and not by["full"]["unstable"]
    assert by["mask"]["cost_by_cache_price"]["0.5"] == pytest.approx(0.112)  # issue 20, item 9
    print_sweep(rows, title="t")
    out = capsys.readouterr().out
    assert "recommended unstable" in out and "cache 0.5x" in out and "0.1120" in out


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


def test_report_run_covers_every_scenario(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from evals.scenarios import list_scenarios

    seen: list[Any] = []

    def record(cells: list[Any], **_kwargs: Any) -> Any:
        seen.extend(cells)
        raise RuntimeError("enough")

    monkeypatch.setattr("flows.cli.running.run_with_progress", record)
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

    shown: list[tuple[int, str]] = []
    counter = StepCounter(lambda tasks, latest: shown.append((tasks, latest)))
    step_log.addHandler(counter)
    step_log.setLevel(logging.DEBUG)
    try:
        step_log.debug("%s #%d", "model", 1)
        step_log.debug("%s #%d", "tool:read", 1)
    finally:
        step_log.removeHandler(counter)
        step_log.setLevel(logging.NOTSET)
    assert shown == [(1, "model #1"), (2, "tool:read #1")]
    assert plural(1, "run") == "1 run" and plural(2, "run") == "2 runs"


def test_the_demo_logs_each_task_to_its_file_and_not_to_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from flows.cli import _show_progress_logs
    from flows.demo import step_progress, task_log
    from flows.runner import step_log

    _show_progress_logs()  # the CLI's stderr handler, which step lines used to reach
    with task_log(tmp_path / "demo.log") as log, step_progress("week 1", log) as counter:
        step_log.debug("%s #%d", "model", 1)
        step_log.debug("%s #%d", "tool:read_article", 2)
    captured = capsys.readouterr()
    assert counter.tasks == 2
    assert "#" not in captured.err and "#" not in captured.out
    lines = (tmp_path / "demo.log").read_text().splitlines()
    assert [line.split(" ", 2)[2] for line in lines] == [
        "week 1: model #1",
        "week 1: tool:read_article #2",
    ]
    assert step_log.propagate  # restored after the demo


def test_the_demo_report_says_the_recommendation_once_and_which_settings_overflowed() -> None:
    from flows.demo import emphasised, overflow_notes

    text = "Recommended: full, 92.9% at $0.2491 a run: the best accuracy."
    assert (
        emphasised(text, ["full"])
        == "Recommended: **full**, 92.9% at $0.2491 a run: the best accuracy."
    )
    tied = "Tied: full and mask (each 90.0% at $0.1 a run): ..."
    assert emphasised(tied, ["full", "mask"]).startswith("Tied: **full and mask** (each")
    notes = overflow_notes([row("full", {}), row("none", {}, overflow_rate=1.0),
                            row("mask", {}, overflow_rate=0.4)])  # fmt: skip
    assert [n.split(" (")[0] for n in notes if n] == [
        "`none` overflowed the model's window on every run",
        "`mask` overflowed the model's window on 40% of its runs",
    ]
    assert overflow_notes([row("full", {})]) == []


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

    monkeypatch.setattr("evals.gate.check.run_check", gate)
    assert main(["check", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["passed"] is False and doc["suite"] == "ci"
    assert doc["lines"][0].startswith("REGRESSION")
