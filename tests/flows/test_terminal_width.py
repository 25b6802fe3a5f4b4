"""Output fits the terminal it is printed on: at 80 and 120 columns (COLUMNS, as a user's shell
sets it) the eval, sweep, demo and check output has no line wider than the terminal and no
number cut short; piped without COLUMNS it is 80 wide."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.evals import result

from evals import aggregate, pareto_front, recommend
from evals.analysis.stability import stability
from evals.report.terminal import Column, console, fit

WIDTHS = (80, 120)
pytestmark = pytest.mark.usefixtures("cli_env")


def runs() -> list:
    labels = ("full", "summarize [summarize.trigger=0.7,summarize.keep=0.05]", "offload",
              "context-edit", "mask [mask.batch=10,mask.keep=10]", "none")  # fmt: skip
    out = []
    for k, label in enumerate(labels):
        strategy, _, params = label.partition(" [")
        settings = dict(p.split("=") for p in params.rstrip("]").split(",")) if params else {}
        for seed in range(5):
            out.append(result(strategy, seed, params=settings, accuracy=0.929 - 0.1 * k
                              + 0.013 * (seed % 3), cost_usd=2.5613 / (k + 1) + seed / 1000,
                              overflowed=k >= 4, input_tokens=11_320_000 // (k + 1)))  # fmt: skip
    return out


def assert_fits(out: str, width: int, numbers: list[str]) -> None:
    lines = out.splitlines()
    assert lines, "nothing printed"
    too_wide = [line for line in lines if len(line) > width]
    assert not too_wide, f"{len(too_wide)} lines over {width}: {too_wide[0]!r}"
    assert "…" not in out and "..." not in re.sub(r"\.\.\. ?$", "", out)
    flat = re.sub(r"\s*│\s*", " ", out)  # a cell wrapped at a space reads on across the line
    for number in numbers:
        assert number in out or number in flat, f"{number} cut or missing"


@pytest.mark.parametrize("width", WIDTHS)
def test_the_eval_table_fits(width: int, monkeypatch, capsys) -> None:
    from evals.report.eval_table import print_table

    monkeypatch.setenv("COLUMNS", str(width))
    results = runs()
    print_table(results)
    out = capsys.readouterr().out
    numbers = [f"{s.accuracy.mean:.1%}" for s in aggregate(results)]
    numbers += [f"{s.cost_usd.mean:.4f}" for s in aggregate(results)]
    assert_fits(out, width, numbers)
    assert "Recommended: " in out and "not shown at" in out  # which columns went, said


@pytest.mark.parametrize("width", WIDTHS)
def test_the_sweep_table_and_its_verdict_fit(width: int, monkeypatch, capsys) -> None:
    from flows.sweep import SweepResult, print_sweep

    monkeypatch.setenv("COLUMNS", str(width))
    results = runs()
    settings = aggregate(results)
    outcome = SweepResult(results, settings, pareto_front(settings), recommend(results), "b",
                          "/tmp/x.duckdb", stability(results))  # fmt: skip
    rows = outcome.rows()
    print_sweep(rows, title="competitive-analysis (small, simulated)")
    from evals.report.terminal import say

    say(str(outcome.explain()))
    out = capsys.readouterr().out
    numbers = [f"{r['accuracy']:.1%}" for r in rows] + [f"{r['cost_usd']:.4f}" for r in rows]
    assert_fits(out, width, numbers + [f"({r['accuracy_ci']})" for r in rows])


@pytest.mark.parametrize("width", WIDTHS)
def test_the_demo_output_fits(width: int, monkeypatch, capsys, tmp_path: Path) -> None:
    from flows import demo

    monkeypatch.setenv("COLUMNS", str(width))
    results = runs()
    settings = aggregate(results)
    from flows.sweep import SweepResult

    outcome = SweepResult(results, settings, pareto_front(settings), recommend(results), "b",
                          str(tmp_path / "demo.duckdb"))  # fmt: skip
    sweep = {"rows": outcome.rows(), "recommendation": outcome.explain()}
    fake = demo.DemoOutcome(weeks=[], sweep=sweep, db=str(tmp_path / "aaa" / "demo.duckdb"),
                            server=None, seconds=31.0)  # fmt: skip
    monkeypatch.setattr(demo.DemoOutcome, "report_text", lambda self, week: "- a\n- b")
    demo._print_results(fake)
    demo._print_next_steps(fake)
    out = capsys.readouterr().out
    assert "follows the remembered format (bullets): yes" in re.sub(r"\s+", " ", out)
    assert_fits(out, width, [f"{r['cost_usd']:.4f}" for r in sweep["rows"]])


@pytest.mark.parametrize("width", WIDTHS)
def test_the_check_verdict_fits(width: int, monkeypatch, capsys, tmp_path: Path) -> None:
    from evals.gate.check import gate, snapshot
    from evals.gate.sanity import SanityResult
    from flows.cli.check import _say

    monkeypatch.setenv("COLUMNS", str(width))
    before = [result("full", s, accuracy=0.9, cost_usd=0.05) for s in range(3)]
    after = [result("full", s, accuracy=0.6 + s / 100, cost_usd=0.09) for s in range(3)]
    baseline = tmp_path / "deep" / "folder" / "of" / "baselines" / "ci.json"
    baseline.parent.mkdir(parents=True)
    baseline.write_text(json.dumps(snapshot(before)))
    ok, lines = gate(after, baseline)
    assert not ok
    lines.append(SanityResult("support-transcript", "corrupt-digits", 0.125, 0.3,
                              tuple(f"p{k}" for k in range(9)), 30).line())  # fmt: skip
    for line in lines:
        _say(line)
    out = capsys.readouterr().out
    assert_fits(out, width, ["90.0%", "60.0%", "$0.0900", "12.5%", "30.0%"])


def test_piped_output_is_80_wide_unless_columns_says_otherwise(monkeypatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    assert console().width == 80
    monkeypatch.setenv("COLUMNS", "100")
    assert console().width == 100


def test_columns_leave_in_their_stated_order_and_a_cell_is_never_cut() -> None:
    columns = [Column("name", "left"), Column("a", drop=1), Column("b", drop=2), Column("c")]
    rows = [["x" * 10, "1" * 20, "2" * 20, "3.1415926"]]
    table, dropped = fit(columns, rows, width=50)
    assert dropped == ["b"]  # the highest rank first, then only as far as needed
    table, dropped = fit(columns, rows, width=30)
    assert dropped == ["b", "a"]


@pytest.mark.parametrize("width", WIDTHS)
def test_a_suites_tables_fit(width: int, monkeypatch, capsys) -> None:
    from flows.cli import main

    monkeypatch.setenv("COLUMNS", str(width))
    folder = Path(__file__).resolve().parents[1] / "evals" / "analysis" / "suite_fixtures"
    assert main(["eval", "--scenario", str(folder), "--strategy", "full", "--no-save"]) == 0
    out = capsys.readouterr().out
    assert "Recall at retained tokens" in out and "original" in out
    assert_fits(out, width, ["100.0%"])  # input tokens may leave at 80
