"""Two flow runs at once against one DuckDB file, while a user queries it with polars; a second
session whose agent shares memory and skills with a running one is refused."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import duckdb
import polars as pl
import pytest

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
            [*CLI, "run", "flow_test_agents:notetaker", "--db", db, "--thread", thread, "--json"],
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


def test_a_second_session_sharing_memory_is_refused_with_one_line(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two sessions with memory on one store would read each other's memory and skills
    mid-run; the second is refused before it records anything, naming the first."""
    import asyncio

    from flow_test_agents import notetaker, recorder

    from flows.resume import Session, recorded_sessions, run_session
    from flows.session_lock import SessionBusy, exclusive_session
    from harness.steps import InlineRunner

    store = Store(db, hold=False)

    def session(spec_name: str) -> Session:
        return Session(session_id=f"session-{spec_name}", agent=spec_name, model="m",
                       thread_id=f"t-{spec_name}", inputs=("Record the findings.",))  # fmt: skip

    with exclusive_session(db, "session-first", "competitive-analysis"):
        with pytest.raises(SessionBusy) as refused:
            asyncio.run(run_session(store, recorder, session("recorder"), 0, runner=InlineRunner))
        assert recorded_sessions(store) == 0
        (line,) = str(refused.value).splitlines()
        assert f"{db} is in use by session session-first (competitive-analysis, pid" in line
        assert "shares memory and skills" in line and "--db" in line
        # An agent without memory or skills shares nothing durable: it runs beside.
        (turn,) = asyncio.run(run_session(store, notetaker, session("notetaker"), 0,
                                          runner=InlineRunner))  # fmt: skip
        assert store.runs.get(turn.run_id)["status"] == "completed"
    # Once the first session ends (or its process dies), the next one runs.
    (turn,) = asyncio.run(run_session(store, recorder, session("recorder"), 0, runner=InlineRunner))
    assert store.runs.get(turn.run_id)["status"] == "completed"
