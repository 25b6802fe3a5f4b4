"""`ctxlab eval --scenario DIR` on more than one core: the workers start before this process
reads the suite's files, so their start overlaps that reading; what the files hold and what is
wrong with them is found and said as before."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.cli import one_line_error
from helpers.evals import without_wall

import evals.run.pool as pool
import evals.scenarios.from_file as from_file
import evals.scenarios.suite as suite_module
from evals.scenarios.suite import load_suite, suite_files
from flows.cli import main

pytestmark = pytest.mark.usefixtures("cli_env")

FIXTURES = Path(__file__).parent / "suite_fixtures"
ARGV = ["eval", "--strategy", "full", "--json", "--no-save", "--scenario"]


def test_the_files_are_listed_as_the_suite_loads_them_without_reading_any(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("gamma.yaml", "alpha.yaml", "beta.yaml"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    (tmp_path / "notes.txt").write_text("not a scenario")
    assert suite_files(tmp_path) == [t.file for t in load_suite(tmp_path).traces]
    rows = [{"file": "beta.yaml"}, {"file": "alpha.yaml"}]
    index = {"format": "ctxlab-suite/1", "scenarios": rows}
    (tmp_path / "suite.json").write_text(json.dumps(index))
    monkeypatch.setattr(from_file, "read_spec", lambda path: pytest.fail(f"read {path}"))
    assert suite_files(tmp_path) == [tmp_path / "alpha.yaml", tmp_path / "beta.yaml"]
    rows.append({"file": "gone.yaml"})
    (tmp_path / "suite.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match="names missing scenario files: gone.yaml"):
        suite_files(tmp_path)


def test_the_workers_start_before_the_files_are_read_with_the_same_results(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*ARGV, str(FIXTURES), "--workers", "1"]) == 0
    alone = [without_wall(json.loads(line)) for line in capsys.readouterr().out.splitlines()]
    events: list[str] = []
    started = pool.Workers.__init__
    monkeypatch.setattr(
        pool.Workers, "__init__", lambda self, n: events.append(f"start {n}") or started(self, n)
    )
    load = suite_module.load_suite
    monkeypatch.setattr(suite_module, "load_suite", lambda d: events.append("read") or load(d))

    class Recorded(pool.ProcessPoolExecutor):
        def submit(self, fn, /, *args, **kw):  # type: ignore[no-untyped-def, override]
            if fn is pool._run_group:
                events.append(f"hand {Path(args[0][0].scenario).name}")
            return super().submit(fn, *args, **kw)

    monkeypatch.setattr(pool, "ProcessPoolExecutor", Recorded)
    assert main([*ARGV, str(FIXTURES), "--workers", "2"]) == 0
    # The largest file's runs go to the started worker before this process reads the files.
    assert events[:4] == ["start 2", "hand alpha.yaml", "hand beta.yaml", "read"]
    lines = [without_wall(json.loads(line)) for line in capsys.readouterr().out.splitlines()]
    assert lines == alone


def test_a_bad_file_is_named_as_before_with_the_workers_started(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("alpha.yaml", "beta.yaml"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    (tmp_path / "beta.yaml").write_text("format: ctxlab-scenario/1\nname: [unclosed\n")
    assert main([*ARGV, str(tmp_path), "--workers", "2"]) == 2
    assert f"{tmp_path / 'beta.yaml'}:3: not valid YAML" in one_line_error(capsys)


def test_one_trace_starts_no_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(FIXTURES / "alpha.yaml", tmp_path / "alpha.yaml")
    monkeypatch.setattr(pool, "ProcessPoolExecutor", lambda *a, **k: pytest.fail("started"))
    assert main([*ARGV, str(tmp_path), "--workers", "2", "--reader", "ideal"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2


def test_what_was_read_is_left_out_of_full_collections_while_the_cells_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import gc

    import evals.run.cell as cell_module

    frozen: list[int] = []
    run = cell_module.run_cells
    monkeypatch.setattr(
        cell_module,
        "run_cells",
        lambda *a, **k: frozen.append(gc.get_freeze_count()) or run(*a, **k),
    )
    assert main([*ARGV, str(FIXTURES), "--workers", "1"]) == 0
    assert frozen[0] > 0 and gc.get_freeze_count() == 0


def test_a_started_worker_warms_up_and_freezes_what_it_loaded() -> None:
    import gc

    from evals.sources import hygiene

    hygiene._dictionary.cache_clear()
    try:
        pool._warm()
        assert hygiene._dictionary.cache_info().currsize == 1 and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
