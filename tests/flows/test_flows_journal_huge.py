"""A journaled tool result several times the store's DuckDB memory_limit (issue 37 item 2,
under flows): the journal writes it through the bounded chunk writer, so the flow run ends
`completed`, and a replay of the journal hands back the result byte-identical. A 32 MB limit
stands in for the default 256 MB and a ~300 MB result, so that the test takes seconds."""

from __future__ import annotations

import asyncio
import hashlib
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from flow_test_agents import huge_dump
from helpers.waiting import wait_until

import harness.store.database
from flows.agent_run import agent_run
from flows.journal import Journal, ensure_tables
from flows.journal_blobs import blob_ids
from flows.server import ServerInfo
from harness.store import Store

LIMIT = "32MB"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_a_journal_record_larger_than_the_memory_limit_replays_byte_identical(
    tmp_path: Path,
) -> None:
    huge = huge_dump()
    store = Store(tmp_path / "s.duckdb", hold=False, memory_limit=LIMIT)
    ensure_tables(store)
    journal = Journal(store, "run_a")
    with store.atomic():  # as `JournaledRunner` records a tool's result
        journal.record("tool:dump", "tool:dump:c1", huge, None)
    journal.record("tool:t", "tool:t:c2", "small", None)
    store.close()

    with Store(tmp_path / "s.duckdb", hold=False, memory_limit=LIMIT) as again:
        # The row holds a reference, not the result; a small record is stored as it was.
        assert again.scalar("SELECT max(octet_length(result)) FROM step_journal") < 1024
        replay = Journal(again, "run_a", replay=True)
        entry = replay.take("tool:dump:c1")
        assert entry is not None and _sha(entry.value) == _sha(huge)
        assert replay.take("tool:t:c2").value == "small"  # type: ignore[union-attr]
        assert again.scalar("SELECT count(*) FROM file_chunks") > 0
        replay.clear()  # a finished run's journal goes, its chunks with it
        assert again.scalar("SELECT count(*) FROM step_journal") == 0
        assert again.scalar("SELECT count(*) FROM file_chunks") == _offloaded(again)


def _offloaded(store: Store) -> int:
    return int(
        store.scalar(
            "SELECT count(*) FROM file_chunks WHERE blob_id IN "
            "(SELECT blob_id FROM files UNION SELECT full_ref FROM messages)"
        )
    )


def test_a_flow_run_whose_tool_returns_more_than_the_memory_limit_completes(
    prefect_server: ServerInfo, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(harness.store.database, "FILE_MEMORY_LIMIT", LIMIT)
    result = asyncio.run(agent_run(agent="flow_test_agents:build_dumper", inputs=["Dump."], db=db))
    (run,) = result["runs"]
    assert run["status"] == "completed"

    with Store(db, memory_limit=LIMIT) as store:
        assert store.runs.get(run["run_id"])["status"] == "completed"
        thread = store.runs.get(run["run_id"])["thread_id"]
        texts = [r["text"] for r in store.messages.thread_messages(thread) if r["role"] == "tool"]
        assert [_sha(t) for t in texts] == [_sha(huge_dump())]
        assert store.scalar("SELECT count(*) FROM step_journal") == 0  # cleared once complete
        # The journal's chunks went with it: only the offloaded original's remain.
        assert store.scalar("SELECT count(*) FROM file_chunks") == _offloaded(store)


# `ctxlab` in a child process whose stores get the lowered memory_limit.
CLI = [
    sys.executable,
    "-c",
    "import sys, harness.store.database as d; d.FILE_MEMORY_LIMIT = sys.argv.pop(1); "
    "from flows.cli import main; sys.exit(main())",
    LIMIT,
]


def test_a_killed_run_resumes_with_the_huge_result_from_the_journal(
    prefect_server: ServerInfo, db: str, subprocess_env: dict[str, str]
) -> None:
    calls_log = Path(subprocess_env["CTXLAB_TEST_LOG"])
    agent = "flow_test_agents:build_dump_and_stall"
    doomed = subprocess.Popen(
        [*CLI, "run", agent, "--input", "Dump.", "--db", db, "--json"],
        env=subprocess_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        store = Store(db, hold=False, memory_limit=LIMIT)
        wait_until(Path(subprocess_env["CTXLAB_TEST_MARKER"]).exists, 90, "the stalling tool")

        def dump_journaled() -> bool:
            key = "tool:dump:call-d"
            return bool(store.scalar("SELECT count(*) FROM step_journal WHERE key = ?", [key]))

        wait_until(dump_journaled, 60, "the dump's journal record")
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=60)
    finally:
        if doomed.poll() is None:
            doomed.kill()
    assert store.scalar("SELECT max(octet_length(result)) FROM step_journal") < 1024
    scopes = [r["scope"] for r in store.query("SELECT DISTINCT scope FROM step_journal")]
    journaled = [blob for scope in scopes for blob in blob_ids(store, scope)]
    assert journaled  # the dump's record went to chunks

    resumed = subprocess.run(
        [*CLI, "run", "--resume", "last", "--db", db, "--json"],
        env={**subprocess_env, "CTXLAB_TEST_HANG_S": "0"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr
    (run,) = json.loads(resumed.stdout)["runs"]
    assert run["status"] == "completed"
    assert run["replayed"] == 2  # the model's call and the dump's ~70 MB result
    assert calls_log.read_text().splitlines() == ["tool dump"]  # it ran once
    thread = store.runs.get(run["run_id"])["thread_id"]
    texts = {
        r["tool_call_id"]: r["text"]
        for r in store.messages.thread_messages(thread)
        if r["role"] == "tool"
    }
    assert _sha(texts["call-d"]) == _sha(huge_dump())
    # The journal's chunks went with its rows. (The kill may have cut the dump's offload after
    # some of its 4 MB transactions: those chunks no row names are left, and nothing reads them.)
    left = "SELECT count(*) FROM file_chunks WHERE list_contains(?::VARCHAR[], blob_id)"
    assert store.scalar(left, [journaled]) == 0
