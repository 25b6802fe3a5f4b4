"""`ctxlab eval --scenario DIR`: a suite of scenario files (hand-written traces in
suite_fixtures/), with intervals over traces, recall at retained tokens, and the original
harness's numbers beside ctxlab's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.cli import one_line_error
from helpers.evals import result

from evals.analysis.stats import bootstrap, paired_trace_difference, trace_bootstrap
from evals.analysis.suite import recall_at_tokens
from evals.report.suite import render_suite, write_suite_report
from evals.scenarios.suite import load_suite, original_usage
from evals.scoring.records import ProbeResult
from flows.cli import main

pytestmark = pytest.mark.usefixtures("cli_env")

FIXTURES = Path(__file__).parent / "suite_fixtures"


def run_suite(capsys: pytest.CaptureFixture[str], folder: Path, *extra: str) -> list[dict]:
    code = main(["eval", "--scenario", str(folder), "--strategy", "full", "--json",
                 "--no-save", *extra])  # fmt: skip
    assert code == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_a_suite_prints_one_line_per_trace_and_arm_then_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = run_suite(capsys, FIXTURES, "--out", str(tmp_path))
    report = (tmp_path / "suite_fixtures.md").read_text()
    assert "| original harness | 2 |" in report and "## Recall at retained tokens" in report
    assert (tmp_path / "suite_fixtures-recall.png").is_file()
    page = (tmp_path / "index.html").read_text()  # the HTML report: table, figure, lost probes
    assert "<table" in page and 'src="suite_fixtures-recall.png"' in page
    assert "Probes lost, per setting" in page
    runs, summary = lines[:-1], lines[-1]
    assert [r["trace"] for r in runs] == ["alpha.yaml", "beta.yaml", "gamma.yaml"]
    assert [r["scenario"] for r in runs] == ["suite-alpha", "suite-beta", "suite-gamma"]
    for r in runs:  # a single scenario's fields are all there
        assert {"accuracy", "input_tokens", "cost_usd", "strategy", "reader"} <= r.keys()
        assert r["ideal_accuracy"] == 1.0 and r["window_tokens_at_use_mean"] > 500
    assert runs[0]["original"]["cost_usd"] == 0.0123
    assert runs[1]["original"] == {"input_tokens": 3000, "output_tokens": 150, "compactions": 0}
    assert runs[2]["original"] == {}
    assert summary["suite_summary"] and summary["traces"] == 3
    (arm,) = summary["arms"]
    assert arm["strategy"] == "full" and arm["traces"] == 3
    assert arm["accuracy_vs_full_mean"] == 0.0 and arm["ideal_accuracy_mean"] == 1.0
    assert arm["input_tokens_total"] == sum(r["input_tokens"] for r in runs)
    assert [row["probes"] for row in arm["recall_at_retained_tokens"]] == [6]
    assert summary["original"]["input_tokens"] == 4200
    assert summary["original"]["input_tokens_traces"] == 2
    assert summary["original"]["cost_usd_traces"] == 1


def test_the_suite_index_lists_the_traces_and_names_missing_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("alpha.yaml", "beta.yaml"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    index = {"format": "ctxlab-suite/1", "skipped": [{"file": "bad.json", "reason": "binary"}],
             "scenarios": [{"file": "beta.yaml", "trace": "runs/b.jsonl", "format": "claude-code",
                            "skipped": ["line 3"]}]}  # fmt: skip
    (tmp_path / "suite.json").write_text(json.dumps(index))
    lines = run_suite(capsys, tmp_path)
    assert [(r["trace"], r["trace_format"], r["import_skipped"]) for r in lines[:-1]] == [
        ("runs/b.jsonl", "claude-code", 1)
    ]
    assert lines[-1]["traces"] == 1 and lines[-1]["import_skipped"] == 1
    index["scenarios"].append({"file": "gone.yaml"})
    (tmp_path / "suite.json").write_text(json.dumps(index))
    assert main(["eval", "--scenario", str(tmp_path), "--no-save"]) == 2
    assert "names missing scenario files: gone.yaml" in one_line_error(capsys)


def test_two_files_imported_from_one_trace_id_count_as_two_traces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two session files of one conversation carry one session id (a resumed Claude Code
    # session): keyed by that id, their probes were pooled as one trace's and the table
    # counted one trace for the two files.
    for name in ("alpha.yaml", "beta.yaml"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    rows = [{"file": name, "trace": "s1"} for name in ("alpha.yaml", "beta.yaml")]
    (tmp_path / "suite.json").write_text(
        json.dumps({"format": "ctxlab-suite/1", "scenarios": rows})
    )
    assert [t.trace for t in load_suite(tmp_path).traces] == ["s1 (alpha.yaml)", "s1 (beta.yaml)"]
    lines = run_suite(capsys, tmp_path)
    assert lines[-1]["traces"] == 2 and lines[-1]["arms"][0]["traces"] == 2


def test_two_files_with_one_name_are_refused(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "alpha.yaml", tmp_path / "a.yaml")
    shutil.copy(FIXTURES / "alpha.yaml", tmp_path / "b.yml")
    with pytest.raises(ValueError, match="a.yaml and b.yml have the same name 'suite-alpha'"):
        load_suite(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no scenario file"):
        load_suite(tmp_path / "empty")


def test_original_usage_keeps_only_the_contract_and_its_types() -> None:
    given = {"original": {"input_tokens": 10, "output_tokens": "many", "cost_usd": None,
                          "compactions": True, "model": "m", "extra": 1}}  # fmt: skip
    assert original_usage(given) == {"input_tokens": 10, "model": "m"}
    assert original_usage({"original": [1]}) == {}


# -- the trace as the unit ----------------------------------------------------------------------


def test_an_interval_over_traces_is_wider_than_over_pooled_probes_when_traces_differ() -> None:
    traces = {"a": [1.0] * 20, "b": [1.0] * 18 + [0.0] * 2, "c": [0.0] * 15 + [1.0] * 5,
              "d": [1.0] * 10 + [0.0] * 10}  # fmt: skip
    over_traces = trace_bootstrap(traces)
    pooled = bootstrap([v for vs in traces.values() for v in vs])
    assert over_traces.mean == pytest.approx(pooled.mean)
    assert over_traces.high - over_traces.low > 1.5 * (pooled.high - pooled.low)
    # Blanking one trace (every probe wrong) moves the mean and the interval.
    blanked = trace_bootstrap({**traces, "a": [0.0] * 20})
    assert blanked.mean < over_traces.mean and blanked.high < over_traces.high
    assert trace_bootstrap({"a": [1.0, 0.0]}).low == 0.5  # one trace: a point


def test_the_paired_difference_pairs_probes_within_each_trace() -> None:
    base = {"a": {"p": 1.0, "q": 1.0}, "b": {"p": 1.0, "q": 0.0}, "c": {"p": 1.0}}
    arm = {"a": {"p": 0.0, "q": 1.0}, "b": {"p": 1.0, "q": 0.0, "r": 1.0}, "x": {"p": 0.0}}
    diff = paired_trace_difference(arm, base)
    assert diff.mean == pytest.approx(-1 / 4)  # a: -1, 0; b: 0, 0 (r and traces c, x unpaired)
    assert diff.low < diff.mean < diff.high or diff.low == -0.5
    with pytest.raises(ValueError, match="no traces and probes in common"):
        paired_trace_difference({"x": {"p": 1.0}}, base)


# -- recall at retained tokens ------------------------------------------------------------------


def _probe(pid: str, correct: bool, tokens: int, status: str = "answered") -> ProbeResult:
    return ProbeResult(pid, "recall", 0, "q", "a", "a" if correct else "", correct, status,
                       window_tokens=tokens)  # fmt: skip


def test_recall_at_retained_tokens_bins_probes_by_their_window_beside_the_ideal_reader(
    tmp_path: Path,
) -> None:
    fallible = result(scenario="t1", probe_results=(
        _probe("p1", True, 1_500), _probe("p2", False, 3_000), _probe("p3", False, 3_500),
        _probe("p4", False, 0, "not_reached")))  # fmt: skip
    ideal = result(scenario="t1", reader="ideal", probe_results=(
        _probe("p1", True, 1_500), _probe("p2", True, 3_000),
        _probe("p3", False, 3_500)))  # fmt: skip
    rows = recall_at_tokens([fallible], {"trace-1": ideal}, {"t1": "trace-1"})
    assert rows == [
        {"window_tokens_up_to": 2_000, "probes": 1, "accuracy": 1.0, "ideal_accuracy": 1.0},
        {"window_tokens_up_to": 4_000, "probes": 2, "accuracy": 0.0, "ideal_accuracy": 0.5},
    ]
    summary = {"suite": "s", "traces": 1, "original": {"traces_with_original": 0},
               "arms": [{"strategy": "full", "traces": 1, "accuracy_mean": 0.25,
                         "accuracy_ci95": [0.25, 0.25], "accuracy_vs_full_mean": 0.0,
                         "accuracy_vs_full_ci95": [0.0, 0.0], "ideal_accuracy_mean": 0.5,
                         "ideal_accuracy_ci95": [0.5, 0.5], "input_tokens_total": 10.0,
                         "output_tokens_total": 1.0, "cached_input_tokens_total": 0.0,
                         "cost_usd_total": 0.1, "compactions_total": 0.0, "overflow_rate": 0.0,
                         "recall_at_retained_tokens": rows}]}  # fmt: skip
    text = "\n".join(render_suite(summary))
    assert "| full | 4,000 | 2 | 0.0% | 50.0% |" in text
    md, png, svg = write_suite_report(summary, tmp_path, "my suite")
    assert svg.name == "my-suite-recall.svg"
    assert md.name == "my-suite.md" and png.read_bytes().startswith(b"\x89PNG")


# -- the other commands on scenario files and suites -------------------------------------------


def test_the_sanity_breaks_run_on_a_suite_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(FIXTURES / "gamma.yaml", tmp_path / "gamma.yaml")
    assert main(["check", "--sanity", "--scenario", str(tmp_path), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {r["scenario"] for r in rows} == {"suite-gamma"}
    assert [r["arm"] for r in rows] == [
        "empty-window", "blank-tools", "corrupt-digits", "withhold-summaries", "relabel",
        "questions-only",
    ]  # fmt: skip
    assert all(r["ok"] for r in rows)
    # Both probes come from tool results: blanking them leaves nothing to answer from.
    assert {r["accuracy"] for r in rows if r["arm"] == "blank-tools"} == {0.0}
    # without --sanity a suite is gated, against a baseline of the user's own
    assert main(["check", "--scenario", str(FIXTURES)]) == 2
    assert "give --baseline FILE" in one_line_error(capsys)


def test_report_takes_a_suite_folder_for_its_stored_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "runs.duckdb")
    alpha = str(FIXTURES / "alpha.yaml")
    assert main(["eval", "--scenario", alpha, "--strategy", "full", "--seeds", "1",
                 "--db", db, "--json"]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["report", "--scenario", str(FIXTURES), "--db", db, "--out",
                 str(tmp_path / "out")]) == 2  # fmt: skip
    assert "no stored results for 'suite-beta'" in one_line_error(capsys)
    assert main(["report", "--scenario", alpha, "--db", db, "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "suite-alpha.md").is_file()


def test_each_probe_records_and_stores_the_window_at_its_point_of_use(tmp_path: Path) -> None:
    from evals.run.cell import run_cell
    from evals.scoring.storage import load_probes, save_results

    run = run_cell(str(FIXTURES / "alpha.yaml"), "full")
    windows = [p.window_tokens for p in run.probe_results]
    # Asked last, the second probe's window holds the first probe and its answer too.
    assert 500 < windows[0] < windows[1] <= run.peak_context_tokens
    save_results(tmp_path / "runs.duckdb", [run])
    stored = load_probes(tmp_path / "runs.duckdb")
    assert sorted(stored["window_tokens"].to_list()) == sorted(windows)


def test_the_pytest_gate_takes_a_scenario_file(tmp_path: Path) -> None:
    from evals.gate.pytest_plugin import EvalGate
    from evals.run.cell import Cell

    cells = [Cell(str(FIXTURES / "beta.yaml"), "full")]
    baseline = tmp_path / "beta.json"
    EvalGate(update=True).check(cells, baseline)
    assert "suite-beta/full/small" in baseline.read_text()
    (run,) = EvalGate(update=False).check(cells, baseline)
    assert run.scenario == "suite-beta" and run.accuracy == 1.0
