"""Two flow runs at once against one DuckDB file, while a user queries it with polars."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import duckdb
import polars as pl

from flows.server import ServerInfo
from harness.store import Store

CLI = [sys.executable, "-m", "flows.cli"]


def _user_query(db: str) -> pl.DataFrame | None:
    """What a user types while runs are going: open read-only, query, close. None when a
    run held the file at that instant (DuckDB allows one process at a time)."""
    try:
        con = duckdb.connect(db, read_only=True)
    except duckdb.IOException:
        return None
    try:
        return con.sql("SELECT run_id, status FROM runs").pl()
    finally:
        con.close()


def test_two_runs_at_once_and_a_user_query_in_between(
    prefect_server: ServerInfo, db: str, subprocess_env: dict[str, str]
) -> None:
    Store(db, hold=False)  # create the file first, so the user query has tables to read
    runs = [
        subprocess.Popen(
            [*CLI, "run", "flow_test_agents:recorder", "--db", db, "--thread", thread, "--json"],
            env=subprocess_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for thread in ("left", "right")
    ]
    reads: list[pl.DataFrame] = []
    attempts = 0
    while any(p.poll() is None for p in runs):
        attempts += 1
        frame = _user_query(db)
        if frame is not None:
            reads.append(frame)
        time.sleep(0.05)
    outputs = [p.communicate(timeout=60) for p in runs]
    assert [p.returncode for p in runs] == [0, 0], [err for _, err in outputs]

    store = Store(db, hold=False)
    for out, _ in outputs:
        (run,) = json.loads(out)["runs"]
        assert run["status"] == "completed"
        assert len(store.messages.rows(run_id=run["run_id"])) == 11
    assert len(store.runs.with_status(["completed"])) == 2
    # The user got answers while the runs were going, runs still marked running among them.
    print(f"{len(reads)} of {attempts} queries got in")
    assert len(reads) >= 3, f"{len(reads)} of {attempts} queries got in"
    assert any((frame["status"] == "running").any() for frame in reads)
