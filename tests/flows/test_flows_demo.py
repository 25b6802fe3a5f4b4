"""`ctxlab demo` end to end (against the session's server, so without its start-up time)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flows.cli import main
from flows.demo import QUERIES, STRATEGIES
from flows.server import ServerInfo
from harness.files.filesystem import FileSystem
from harness.store import Store


def test_the_demo_runs_the_agent_compares_strategies_and_writes_its_reports(
    prefect_server: ServerInfo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    wide_terminal: None,
) -> None:
    assert main(["demo", "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    out = captured.out
    # Progress is a bar on a terminal; the tasks' names go to the log file and the UI only.
    assert not re.search(r"#\d+$", captured.err, re.MULTILINE), captured.err
    tasks = (tmp_path / "demo.log").read_text().splitlines()
    assert any(line.endswith("week 1: skills #1") for line in tasks)
    assert any(line.endswith("week 2: model #1") for line in tasks)

    md = (tmp_path / "demo.md").read_text()
    png = (tmp_path / "demo.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 2_000
    for strategy in STRATEGIES:
        assert f"| {strategy} |" in md
    assert "its report uses bullets" in md  # week 2 applied week 1's remembered preference
    assert "| offload | offload_tool_result |" in md
    assert "| subagents | subagent_run |" in md  # the market-researcher absorbed the sweeps
    assert any(f"Recommended: **{s}**" in md for s in STRATEGIES)
    assert md.count("Recommended") == 1  # said once, not as a heading and again in the sentence
    assert "`none` overflowed the model's window on every run" in md
    assert "| 1 | 1 of 5 | `run_" in md and "| subagent runs |" in md  # one run per input
    assert f"{prefect_server.ui_url}/runs/flow-run/" in md

    assert "Week 2 report follows the remembered format (bullets): yes" in out
    assert f"{prefect_server.ui_url}/runs/flow-run/" in out
    assert f"ctxlab sql --db {tmp_path / 'demo.duckdb'}" in out
    assert " 1 runs" not in out

    # The queries the demo suggests work with what is installed, and return rows.
    for query in QUERIES:
        assert main(["sql", "--db", str(tmp_path / "demo.duckdb"), "--json", query]) == 0
        assert json.loads(capsys.readouterr().out)
    store = Store(str(tmp_path / "demo.duckdb"), hold=False)
    assert "bullets" in FileSystem(store, "any").read_text("/memories/AGENTS.md")
    assert all(r["status"] == "completed" for r in store.runs.all())
    assert store.scalar("SELECT count(*) FROM eval_runs") == len(STRATEGIES)
