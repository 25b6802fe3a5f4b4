"""The CI gate fails on injected regressions: each is patched into the harness inside the test,
and the gate compares the broken run with a baseline written from the unbroken code."""

import re
from dataclasses import replace

import pytest

from evals.check import CHECK_SEEDS, SUITES, gate
from evals.runner import Cell, run_cells
from evals.simulated import DEFAULT_READER
from harness.middleware.offload import OffloadLargeResults
from harness.middleware.summarization import Summarization
from harness.middleware.summarizer import Summarizer

# A reduced ci suite: the cells where these three regressions show, over the gate's seeds.
CELLS = [
    Cell(scenario, "full", params, seed, "small")
    for scenario, params in (
        ("competitive-analysis", {}),
        ("competitive-analysis", {"summarize.trigger": 0.5}),
        ("support-transcript", {}),
    )
    for seed in CHECK_SEEDS
]
EARLY_SUMMARIES = "competitive-analysis/full[summarize.trigger=0.5]/small/seeds=0,1,2"
FLAGSHIP = "competitive-analysis/full/small/seeds=0,1,2"
TRANSCRIPT = "support-transcript/full/small/seeds=0,1,2"


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    path = tmp_path_factory.mktemp("gate") / "baseline.json"
    ok, _ = gate(run_cells(CELLS), path, update=True, suite="gate-test")
    assert ok and path.exists()
    return path


def regressions(lines: list[str], cell: str, metric: str) -> list[str]:
    return [line for line in lines if line.startswith(f"REGRESSION  {cell}: {metric} ")]


def test_the_ci_suite_runs_every_cell_on_three_seeds_with_the_fallible_reader() -> None:
    seeds: dict[tuple, set[int]] = {}
    for cell in SUITES["ci"]:
        assert cell.reader == DEFAULT_READER == "fallible" and cell.model == "simulated"
        seeds.setdefault((cell.scenario, cell.strategy, str(cell.params)), set()).add(cell.seed)
    assert len(seeds) >= 8 and all(len(s) >= 3 for s in seeds.values())


def test_the_unbroken_code_passes(baseline) -> None:
    ok, lines = gate(run_cells(CELLS), baseline)
    assert ok, "\n".join(lines)
    assert lines == [f"passed: 3 cells (9 runs) against {baseline}"]


def test_a_summarizer_that_drops_numbers_fails_the_gate(baseline, monkeypatch) -> None:
    condense = Summarizer.condense

    async def without_digits(self, *args, **kwargs):
        condensed = await condense(self, *args, **kwargs)
        return replace(condensed, text=re.sub(r"\d", "", condensed.text))

    monkeypatch.setattr(Summarizer, "condense", without_digits)
    ok, lines = gate(run_cells(CELLS), baseline)
    assert not ok
    [line] = regressions(lines, EARLY_SUMMARIES, "accuracy")
    assert "tolerance 2.0 pp; per seed:" in line and lines[-2].startswith("FAILED: 3 cells")


def test_an_offload_preview_without_its_path_fails_the_gate(baseline, monkeypatch) -> None:
    preview = OffloadLargeResults._preview

    def pathless(self, text, notice, path):
        return preview(self, text, notice, path).replace(path, "")

    monkeypatch.setattr(OffloadLargeResults, "_preview", pathless)
    ok, lines = gate(run_cells(CELLS), baseline)
    assert not ok
    [line] = regressions(lines, TRANSCRIPT, "accuracy")
    assert "80.0% -> 20.0%" in line


def test_a_summarization_trigger_of_099_fails_the_gate(baseline, monkeypatch) -> None:
    monkeypatch.setitem(Summarization.__init__.__kwdefaults__, "trigger", 0.99)
    ok, lines = gate(run_cells(CELLS), baseline)
    assert not ok
    assert regressions(lines, FLAGSHIP, "peak_context_tokens"), "\n".join(lines)
