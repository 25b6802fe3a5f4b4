"""The DuckDB store: schema versions, the append-only transcript, windows, step batches."""

import subprocess
import sys

import duckdb
import polars as pl
import pytest

from harness import Store
from harness.errors import StoreError
from harness.messages import ToolCall, assistant, tool_result, user
from harness.store import MIGRATIONS, StepBatch, message_row, now


def test_file_store_migrates_once_and_keeps_data(tmp_path) -> None:
    path = tmp_path / "ctx.duckdb"
    with Store(path) as store:
        assert store.schema_version == len(MIGRATIONS)
        store.start_run(run_id="r1", thread_id="t", agent="a", model="m", strategy=None)
    with Store(path) as again:
        assert again.runs.get("r1")["status"] == "running"
        assert again.scalar("SELECT count(*) FROM schema_version") == len(MIGRATIONS)


def test_newer_schema_is_refused_with_a_clear_error(tmp_path) -> None:
    path = tmp_path / "ctx.duckdb"
    with Store(path) as store:
        store.execute("INSERT INTO schema_version VALUES (999, now())")
    with pytest.raises(StoreError, match="schema v999, newer than this ctxlab"):
        Store(path)


def test_default_path_comes_from_env(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CTXLAB_DB", str(tmp_path / "env.duckdb"))
    with Store() as store:
        assert store.path == str(tmp_path / "env.duckdb")
    assert (tmp_path / "env.duckdb").exists()


def _append(store: Store, thread: str, msgs, start: int = 1) -> None:
    batch = StepBatch()
    for i, m in enumerate(msgs):
        batch.add(
            "messages",
            message_row(m, thread_id=thread, seq=start + i, run_id="r", step=0, tokens=1),
        )
    store.write(batch)


def test_transcript_roundtrips_messages_exactly() -> None:
    store = Store(":memory:")
    call = ToolCall("call_1", "search", {"query": "Acme", "n": 3})
    msgs = [user("q"), assistant("", [call]), tool_result(call, "results", is_error=True)]
    _append(store, "t", msgs)
    assert store.messages.transcript("t") == msgs


def test_window_is_latest_snapshot_plus_later_messages() -> None:
    store = Store(":memory:")
    a, b, c, d = user("a"), assistant("b"), user("c"), assistant("d")
    _append(store, "t", [a, b, c])
    batch = StepBatch()
    batch.add("windows", ("t", "r", 1, 3, f'["{c.id}"]', "summarize", now()))
    store.write(batch)
    _append(store, "t", [d], start=4)
    assert [m.content for m in store.load_window("t")] == ["c", "d"]
    assert [m.content for m in store.messages.transcript("t")] == ["a", "b", "c", "d"]


def test_step_batch_is_one_transaction() -> None:
    store = Store(":memory:", write_behind=0)  # each batch written when it is handed over
    batch = StepBatch()
    batch.add(
        "messages", message_row(user("x"), thread_id="t", seq=1, run_id="r", step=0, tokens=1)
    )
    batch.add("events", ("r", 0, "mw", "hook", "act", 1, 2, "{}", 0.1, None, None, "bad"))
    with pytest.raises(duckdb.Error):
        store.write(batch)  # the events row has a wrong width: nothing is written
    assert store.scalar("SELECT count(*) FROM messages") == 0


def test_frames_are_polars() -> None:
    store = Store(":memory:")
    _append(store, "t", [user("x"), assistant("y")])
    frame = store.frame("SELECT role, seq FROM messages ORDER BY seq")
    assert isinstance(frame, pl.DataFrame)
    assert frame["role"].to_list() == ["user", "assistant"]


def test_released_store_lets_another_process_read_between_writes(tmp_path) -> None:
    path = tmp_path / "shared.duckdb"
    store = Store(path, hold=False)
    _append(store, "t", [user("written by the run")])
    reader = subprocess.run(
        [sys.executable, "-c",
         "import duckdb,sys; c=duckdb.connect(sys.argv[1], read_only=True);"
         "print(c.execute('select content from messages').fetchone()[0])", str(path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert reader.stdout.strip() == "written by the run", reader.stderr
    _append(store, "t", [assistant("and the run goes on")], start=2)
    assert store.scalar("SELECT count(*) FROM messages") == 2
