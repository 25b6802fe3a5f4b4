"""The `ctxlab` command line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from flows.cli import main
from flows.server import ServerInfo


def test_help_answers_without_importing_prefect() -> None:
    probe = (
        "import sys; from flows.cli import build_parser; build_parser().format_help(); "
        "print('prefect' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_help_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    for command in ("demo", "run", "server", "serve", "sweep"):
        assert command in text


def test_run_needs_an_agent_or_a_run_to_resume(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run"]) == 2
    assert "--resume" in capsys.readouterr().err


def test_run_prints_the_session_as_json(
    prefect_server: ServerInfo, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "flow_test_agents:recorder", "--db", db, "--set", "mask.keep=3",
                 "--strategy", "mask", "--json"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    (run,) = out["runs"]
    assert run["status"] == "completed" and out["db"] == db


def test_run_prints_a_table_and_where_to_look(
    prefect_server: ServerInfo, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "flow_test_agents:recorder", "--db", db, "--strategy", "mask"]
    assert main([*argv, "--set", "mask.keep=3"]) == 0
    text = capsys.readouterr().out
    assert "flow_test_agents:recorder (mask.keep=3)" in text  # what ran, with its parameters
    assert "completed" in text
    assert f"{prefect_server.ui_url}/runs/flow-run/" in text
    assert f"ctxlab sql --db {db}" in text


def test_server_status_finds_the_running_server(
    prefect_server: ServerInfo, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["server", "status"]) == 0
    assert prefect_server.ui_url in capsys.readouterr().out


def test_mistakes_are_reported_before_any_flow_runs(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "no-such-agent", "--db", db]) == 2
    assert "no agent named 'no-such-agent'" in capsys.readouterr().err
    assert main(["run", "--resume", "run_unknown", "--db", db]) == 2
    assert "no flow run recorded for run 'run_unknown'" in capsys.readouterr().err
    assert main(["sweep", "--scenario", "competitive-analysis", "--grid", "mask.kep=3"]) == 2
    assert "mask.kep" in capsys.readouterr().err
