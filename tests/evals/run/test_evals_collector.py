"""The garbage collector while replays run (evals/run/collector.py): it passes less often and
leaves what lived through a replay out of later passes, in a started worker for the worker's
life and in this process only while the replays run; and a process that ran replays ends with
its heap frozen, after its exit hooks, instead of collecting it once more."""

from __future__ import annotations

import gc
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import evals.run.cell as cell_module
import evals.run.pool as pool
from evals.run import collector
from evals.run.cell import Cell
from flows.cli import main

pytestmark = pytest.mark.usefixtures("cli_env")

FIXTURES = Path(__file__).parents[1] / "analysis" / "suite_fixtures"
ARGV = ["eval", "--strategy", "full", "--json", "--no-save", "--scenario"]


def _settles(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts `collector.settle` calls (each still settles)."""
    calls: list[int] = []
    settle = collector.settle
    monkeypatch.setattr(collector, "settle", lambda: calls.append(1) or settle())
    return calls


def test_an_eval_in_this_process_runs_under_the_thresholds_and_gives_the_collector_back(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before = gc.get_threshold()
    seen: list[tuple[tuple[int, ...], int]] = []
    run = cell_module.run_cells
    monkeypatch.setattr(
        cell_module,
        "run_cells",
        lambda *a, **k: seen.append((gc.get_threshold(), gc.get_freeze_count())) or run(*a, **k),
    )
    settles = _settles(monkeypatch)
    assert main([*ARGV, str(FIXTURES), "--workers", "1"]) == 0
    runs = len(capsys.readouterr().out.splitlines()) - 1  # one line per trace, then the summary
    assert seen[0][0] == collector.THRESHOLDS and seen[0][1] > 0
    assert len(settles) == runs  # once a trace's two cells (fallible, ideal reader) are done
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_the_collector_is_given_back_when_a_bad_file_stops_the_eval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = gc.get_threshold()
    for name in ("alpha.yaml", "beta.yaml"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    (tmp_path / "beta.yaml").write_text("format: ctxlab-scenario/1\nname: [unclosed\n")
    assert main([*ARGV, str(tmp_path), "--workers", "1"]) == 2
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_a_started_worker_runs_under_the_thresholds() -> None:
    with pool.Workers(2) as started:
        assert started._pool is not None
        assert started._pool.submit(gc.get_threshold).result() == collector.THRESHOLDS
    assert gc.get_threshold() != collector.THRESHOLDS  # this process's is untouched


def test_a_worker_settles_after_each_group(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(collector, "settle", lambda: calls.append(1))
    path = str(FIXTURES / "alpha.yaml")
    cells = [Cell(path, "full"), Cell(path, "full", reader="ideal")]
    assert len(pool._run_group(cells)) == 2 and calls == [1]


def test_a_process_ends_with_its_heap_frozen_after_its_later_exit_hooks() -> None:
    code = "\n".join([
        "import atexit, gc",
        "atexit.register(lambda: print('earlier', gc.get_freeze_count() > 0))",
        "from evals.run import collector",
        "collector.freeze_at_exit()",
        "collector.freeze_at_exit()",  # once per process
        "atexit.register(lambda: print('later', gc.get_freeze_count()))",
    ])  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # Exit hooks run last registered first: the later one before the freeze, the earlier after.
    assert out.stdout.split() == ["later", "0", "earlier", "True"]
