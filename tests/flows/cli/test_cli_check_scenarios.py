"""`ctxlab check --scenario ... --baseline FILE`: a user's own scenarios or suite gated like the
built-in suite, with the per-cell table printed on a pass and rows that fit the terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows.cli import main

SUITE = Path(__file__).resolve().parents[2] / "evals" / "analysis" / "suite_fixtures"

pytestmark = pytest.mark.usefixtures("cli_env")


def _gate(baseline: Path, *extra: str) -> list[str]:
    return ["check", "--scenario", str(SUITE), "--baseline", str(baseline), "--seeds", "1", *extra]


def test_a_users_suite_is_gated_against_its_own_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    baseline = tmp_path / "mine.json"
    assert main(_gate(baseline, "--update")) == 0
    doc = json.loads(baseline.read_text())
    assert doc["suite"] == "scenarios" and len(doc["cells"]) == 3
    capsys.readouterr()

    assert main(_gate(baseline)) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [line for line in out if "/full/small/seed=0" in line]
    assert len(rows) == 3 and all("%" in r and "$" in r for r in rows)  # the per-cell table
    assert out[-1].startswith("passed: 3 cells (3 runs)")
    assert all(len(line) <= 80 for line in out[:-1])  # the table; the last line names a path

    # Another arm than the baseline's is a change the gate must see.
    assert main(_gate(baseline, "--strategy", "truncate")) == 1
    out = capsys.readouterr().out
    assert "NEW" in out and "MISSING" in out and "FAILED" in out


def test_a_narrow_terminal_puts_long_cell_names_on_their_own_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    baseline = tmp_path / "mine.json"
    assert main(_gate(baseline, "--update")) == 0
    capsys.readouterr()
    monkeypatch.setenv("COLUMNS", "50")
    assert main(_gate(baseline)) == 0
    out = capsys.readouterr().out.splitlines()
    table = out[: out.index(next(line for line in out if line.startswith("passed")))]
    assert all(len(line) <= 50 for line in table)
    assert any(line.strip().startswith("100.0%") for line in table)  # numbers whole


def test_scenarios_need_a_baseline_of_their_own(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--scenario", str(SUITE)]) == 2
    assert "--baseline" in capsys.readouterr().err


def test_gate_options_without_scenarios_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--strategy", "full"]) == 2
    assert "--scenario" in capsys.readouterr().err


def test_a_short_piped_gate_adds_no_progress_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_gate(tmp_path / "mine.json", "--update")) == 0
    assert "runs done" not in capsys.readouterr().err  # seconds, not minutes: nothing to say
