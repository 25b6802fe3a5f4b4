"""Commands that write check their store before computing; results that cannot be saved are
written to JSON next to the store; `report` never creates a store; `ctxlab sql` reads while
runs write."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.cli import no_work, one_line_error

from flows.cli import main

pytestmark = pytest.mark.usefixtures("cli_env")


@pytest.fixture
def corrupted(tmp_path: Path) -> str:
    path = tmp_path / "corrupted.duckdb"
    path.write_bytes(b"this is not a duckdb file" * 100)
    return str(path)


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "--scenario", "competitive-analysis", "--strategy", "none", "--seed", "0"],
        ["sweep", "--scenario", "competitive-analysis", "--ephemeral"],
        ["run", "competitive-analysis", "--ephemeral"],
        ["report", "--run", "--scenario", "competitive-analysis"],
        ["demo", "--ephemeral"],
    ],
)
def test_a_corrupted_store_fails_before_any_work(
    argv: list[str], corrupted: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setattr("flows.cli.common.run_flow", no_work)
    monkeypatch.setattr("flows.cli.running.run_with_progress", no_work)
    monkeypatch.setattr("flows.demo.run_demo", no_work)
    assert main([*argv, "--db", corrupted]) == 1
    line = one_line_error(capsys)
    assert corrupted in line and "not a valid DuckDB database" in line


def test_an_unwritable_location_fails_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("flows.cli.common.run_flow", no_work)
    (tmp_path / "file").write_text("")
    db = str(tmp_path / "file" / "sub" / "x.duckdb")
    assert main(["sweep", "--scenario", "competitive-analysis", "--db", db]) == 1
    assert f"cannot write store {db}" in one_line_error(capsys)


def test_results_that_cannot_be_saved_go_to_json_next_to_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def disk_full(*_args: Any, **_kwargs: Any) -> Any:
        raise OSError("No space left on device")

    monkeypatch.setattr("evals.scoring.storage.save_results", disk_full)
    db = tmp_path / "results.duckdb"
    argv = [
        "eval",
        "--scenario",
        "competitive-analysis",
        "--strategy",
        "none",
        "--seed",
        "0",
        "--db",
        str(db),
    ]
    assert main(argv) == 1
    line = one_line_error(capsys)
    assert "No space left on device" in line
    (dumped,) = tmp_path.glob("results-unsaved-*.json")
    assert str(dumped) in line
    (run,) = json.loads(dumped.read_text())
    assert run["strategy"] == "none" and run["probe_results"]


def test_report_never_creates_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "missing.duckdb"
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "out")]) == 2
    assert not db.exists()
    assert str(db) in one_line_error(capsys)


def test_report_of_a_scenario_with_nothing_stored_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "r.duckdb")
    assert main(["eval", "--scenario", "competitive-analysis", "--strategy", "none", "--seed", "0",
                 "--db", db, "--json"]) == 0  # fmt: skip
    capsys.readouterr()
    out = str(tmp_path / "out")
    assert main(["report", "--db", db, "--scenario", "long-horizon", "--out", out]) == 1
    assert "no stored results for long-horizon" in one_line_error(capsys)
    assert main(["report", "--db", db, "--out", out, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [s["label"] for s in doc["settings"]] == ["none"]
    assert any(f.endswith("competitive-analysis.md") for f in doc["files"])
    assert doc["files"][0].endswith("index.html")  # the HTML page, beside the markdown
    assert "competitive-analysis.svg" in {Path(f).name for f in doc["files"]}


# -- ctxlab sql -------------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> str:
    from harness.store import Store

    path = str(tmp_path / "q.duckdb")
    s = Store(path, hold=False)
    s.execute("CREATE TABLE t (name VARCHAR, n INTEGER)")
    s.execute("INSERT INTO t VALUES ('[bold]a[/bold]', 1), ('b', NULL)")
    return path


def test_sql_prints_a_table(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sql", "--db", store, "SELECT name, n FROM t ORDER BY name"]) == 0
    out = capsys.readouterr().out
    assert "[bold]a[/bold]" in out and "NULL" in out and "2 rows" in out
    assert main(["sql", "--db", store, "--json", "SELECT n FROM t WHERE n = 1"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"n": 1}]


def test_sql_prints_stored_control_characters_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.store import Store

    path = str(tmp_path / "hostile.duckdb")
    s = Store(path, hold=False)
    s.execute("CREATE TABLE out (content VARCHAR)")
    hostile = "ok\x1b]52;c;ZXZpbA==\x07\x1b[2J\rimported 99 traces\x9b31m\u202etxt.exe\nline 2"
    s.execute("INSERT INTO out VALUES (?)", [hostile])
    assert main(["sql", "--db", path, 'SELECT content AS "c\x1b[5m" FROM out']) == 0
    out = capsys.readouterr().out
    assert not any(ch in out for ch in "\x1b\x07\r\x9b\u202e")
    assert "\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\x0dimported 99 traces\\x9b31m\\u202etxt.exe" in out
    assert "line 2" in out  # a newline stays a line break inside its cell
    assert main(["sql", "--db", path, "--json", "SELECT content FROM out"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"content": hostile}]  # JSON escapes them


def test_sql_mistakes_are_usage_errors(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sql", "--db", store, "SELECT * FROM nope"]) == 2
    assert "nope" in one_line_error(capsys)
    assert main(["sql", "--db", store, "DELETE FROM t"]) == 2  # read-only: never changes it
    assert "read-only" in one_line_error(capsys)
    assert main(["sql", "--db", store + ".missing", "SELECT 1"]) == 2
    assert not Path(store + ".missing").exists()


HOLD = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
con.execute("INSERT INTO t VALUES ('held', 3)")
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
con.close()
"""


def hold(path: str, seconds: float) -> subprocess.Popen[str]:
    """Another process holding the store's write lock, as a run does during a step."""
    process = subprocess.Popen([sys.executable, "-c", HOLD, path, str(seconds)],
                               stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert process.stdout is not None and process.stdout.readline().strip() == "holding"
    return process


def test_sql_waits_for_a_writer_holding_the_file(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    writer = hold(store, 1.5)
    try:
        assert main(["sql", "--db", store, "SELECT count(*) AS n FROM t", "--json"]) == 0
    finally:
        writer.wait(timeout=30)
    assert json.loads(capsys.readouterr().out) == [{"n": 3}]  # read after the writer's commit


def test_sql_gives_up_on_a_writer_that_never_lets_go(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    writer = hold(store, 30)
    try:
        start = time.monotonic()
        assert main(["sql", "--db", store, "--wait", "0.5", "SELECT 1"]) == 1
        assert time.monotonic() - start < 10
    finally:
        writer.kill()
        writer.wait()
    assert "lock" in one_line_error(capsys).lower()
