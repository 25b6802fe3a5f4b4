"""Write-behind (`harness.store.pending`): a held store keeps each step's rows and writes them
in bulk, while every read sees them, a file store commits each step to `write_log` first, and
a store opened after a crash writes what the dead process logged."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import duckdb
import pytest

from harness import Store, create_agent, tool
from harness.errors import StoreError
from harness.files.filesystem import FileSystem
from harness.messages import Message, user
from harness.middleware.base import Middleware
from harness.models import FunctionModel, RequestParams, ScriptedModel, call, reply
from harness.state import RunState
from harness.store import StepBatch, message_row, now
from harness.store.pending import decode_rows, encode_rows

ROOT = Path(__file__).resolve().parents[2]


def _batch(text: str, seq: int, *, thread: str = "t") -> StepBatch:
    batch = StepBatch()
    batch.add(
        "messages", message_row(user(text), thread_id=thread, seq=seq, run_id="r", step=0, tokens=1)
    )
    return batch


def _in_tables(store: Store, sql: str) -> list[tuple[object, ...]]:
    """What the tables hold now, without writing the pending rows first."""
    with store.reading_behind() as (con, _pending):
        return con.execute(sql).fetchall()


def test_rows_wait_for_write_behind_batches_then_go_in_one_transaction() -> None:
    store = Store(":memory:", write_behind=3)
    for i, text in enumerate("abc", start=1):
        store.write(_batch(text, i))
    assert _in_tables(store, "SELECT count(*) FROM messages") == [(0,)]
    store.write(_batch("d", 4))  # a fourth batch writes the three before it, then waits
    in_order = "SELECT content FROM messages ORDER BY seq"
    assert _in_tables(store, in_order) == [("a",), ("b",), ("c",)]
    store.flush()
    assert _in_tables(store, in_order) == [("a",), ("b",), ("c",), ("d",)]


def test_every_read_of_the_store_sees_the_pending_rows() -> None:
    store = Store(":memory:")
    store.write(_batch("a", 1))
    assert [m.content for m in store.messages.transcript("t")] == ["a"]
    store.write(_batch("b", 2))
    assert store.scalar("SELECT count(*) FROM messages") == 2
    store.write(_batch("c", 3))
    assert store.frame("SELECT content FROM messages ORDER BY seq")["content"].to_list() == [
        "a",
        "b",
        "c",
    ]


def test_a_store_that_does_not_hold_its_file_writes_each_batch_at_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb", hold=False)
    assert store.write_behind == 0
    store.write(_batch("a", 1))
    con = duckdb.connect(str(tmp_path / "s.duckdb"), read_only=True)
    assert con.execute("SELECT content FROM messages").fetchall() == [("a",)]
    con.close()


def test_write_through_writes_the_pending_rows_and_each_batch_as_it_comes() -> None:
    store = Store(":memory:")
    store.write(_batch("a", 1))
    with store.write_through():
        assert _in_tables(store, "SELECT count(*) FROM messages") == [(1,)]
        store.write(_batch("b", 2))
        assert _in_tables(store, "SELECT count(*) FROM messages") == [(2,)]
    store.write(_batch("c", 3))
    assert _in_tables(store, "SELECT count(*) FROM messages") == [(2,)]


def test_a_bad_batch_is_dropped_alone_and_named() -> None:
    store = Store(":memory:")
    bad = _batch("bad", 2)
    bad.add("events", ("r", 0, "mw", "hook", "act", 1, 2, "{}", 0.1, None, None, "x"))  # no time
    for batch in (_batch("a", 1), bad, _batch("c", 3)):
        store.write(batch)  # nothing is written yet: nothing fails yet
    with pytest.raises(StoreError, match=r"1 of 3 batches .*\(1 events, 1 messages\)"):
        store.flush()
    assert [m.content for m in store.messages.transcript("t")] == ["a", "c"]
    assert store.scalar("SELECT count(*) FROM events") == 0


def test_a_file_store_logs_each_batch_until_it_is_written(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    store.write(_batch("a", 1))
    store.write(_batch("b", 2))
    logged = _in_tables(store, "SELECT rows, blobs FROM write_log ORDER BY seq")
    assert [decode_rows(r, b)["messages"][0][7] for r, b in logged] == ["a", "b"]
    store.flush()
    assert _in_tables(store, "SELECT count(*) FROM write_log") == [(0,)]
    assert _in_tables(store, "SELECT count(*) FROM messages") == [(2,)]
    store.close()


def test_the_log_keeps_timestamps_and_bytes() -> None:
    at = now()
    rows = {"file_chunks": [("b", 0, 0, 1, b"\x00\xffdata\n")], "x": [("caf\u00e9", at, None, 1.5)]}
    assert decode_rows(*encode_rows(rows)) == rows


# A process that writes behind and dies: `os._exit` skips every cleanup (atexit included).
_DIES = """
import os, sys
sys.path.insert(0, {root!r})
from harness import Store, create_agent, tool
from harness.models import ScriptedModel, call, reply

@tool
def note(text: str) -> str:
    '''Take a note.'''
    return "noted"

store = Store(sys.argv[1])
model = ScriptedModel(
    [reply("", call("note", call_id=f"n{{i}}", text=str(i))) for i in range(int(sys.argv[2]))]
    + ["done"]
)
agent = create_agent(model, [note], store=store, memory=(), name="dies")
{end}
"""
# Dies in its last model call, after every step before it was handed to the store.
_DIE_IN_THE_MODEL = """
import harness.models.scripted as scripted
real = scripted.ScriptedModel.request
async def request(self, *a, **k):
    if self.remaining == 1:
        os._exit(0)
    return await real(self, *a, **k)
scripted.ScriptedModel.request = request
agent.run_sync("go", thread_id="dead")
"""


def _run_child(code: str, *args: str) -> None:
    subprocess.run([sys.executable, "-c", code, *args], check=True, cwd=ROOT)


def test_steps_a_killed_process_logged_are_written_by_the_next_store(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    _run_child(_DIES.format(root=str(ROOT), end=_DIE_IN_THE_MODEL), str(path), "5")
    con = duckdb.connect(str(path), read_only=True)
    logged = con.execute("SELECT count(*) FROM write_log").fetchone()
    in_table = con.execute("SELECT count(*) FROM messages").fetchone()
    con.close()
    assert logged is not None and logged[0] > 0  # the steps were durable, not yet in messages
    assert in_table == (0,)
    with Store(path) as store:
        roles = [m.role for m in store.messages.transcript("dead")]
        assert roles == ["user"] + ["assistant", "tool"] * 5
        assert store.scalar("SELECT count(*) FROM write_log") == 0
        assert store.scalar("SELECT count(*) FROM model_calls") == 5
        # Its run does not stay `running` with no steps: its process is gone.
        (run,) = store.runs.all()
        assert (run["status"], run["steps"]) == ("interrupted", 5)
        assert run["input_tokens"] == store.usage.of_run(run["run_id"])[0].input_tokens > 0
        assert "died" in run["error"] and run["ended_at"] is not None


def test_a_process_that_exits_without_closing_its_store_leaves_it_written(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    end = """
from harness.messages import user
from harness.store import StepBatch, message_row
b = StepBatch()
b.add("messages", message_row(user("late"), thread_id="t", seq=1, run_id="r", step=0, tokens=1))
store.write(b)  # pending when the interpreter exits
"""
    _run_child(_DIES.format(root=str(ROOT), end=end), str(path), "0")
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT content FROM messages").fetchall() == [("late",)]
    assert con.execute("SELECT count(*) FROM write_log").fetchone() == (0,)
    con.close()


def test_a_store_leaves_the_logged_rows_of_a_live_store_alone(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    writer = Store(path)
    writer.write(_batch("a", 1))
    other = Store(path, hold=False)  # opens the same database in this process
    assert other.scalar("SELECT count(*) FROM messages") == 0  # not written twice below
    writer.flush()
    assert other.scalar("SELECT count(*) FROM messages") == 1
    writer.close()


def test_a_log_row_that_cannot_be_written_is_kept_marked_and_the_store_opens(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.duckdb"
    Store(path).close()
    good, good_blobs = encode_rows(_batch("kept", 1).rows)
    con = duckdb.connect(str(path))
    con.execute(
        "INSERT INTO write_log VALUES ('dead-1', 1, '{not json', NULL, now(), NULL), "
        "('dead-1', 2, ?, ?, now(), NULL), "
        '(\'dead-1\', 3, \'{"messages": [["too", "short"]]}\', NULL, now(), NULL)',
        [good, good_blobs],
    )
    con.close()
    with Store(path) as store:
        assert [m.content for m in store.messages.transcript("t")] == ["kept"]
        marked = store.query("SELECT seq, error FROM write_log ORDER BY seq")
        assert [r["seq"] for r in marked] == [1, 3]
        assert all(r["error"] for r in marked)
    with Store(path) as again:  # marked rows are not tried again
        assert again.scalar("SELECT count(*) FROM write_log WHERE error IS NOT NULL") == 2


def test_an_offload_sees_a_pending_file_at_its_path() -> None:
    store = Store(":memory:")
    fs = FileSystem(store, "t", "r")
    fs.write_blob("/large_tool_results/c1", "first\n", new=True)
    assert _in_tables(store, "SELECT count(*) FROM files") == [(0,)]  # pending
    taken, blocked = fs.paths_at("/large_tool_results/c1")
    assert taken == {"/large_tool_results/c1"} and not blocked
    assert fs.read_text("/large_tool_results/c1") == "first\n"


def test_each_step_is_durable_before_the_next_model_call(tmp_path: Path) -> None:
    """At every model call, every message of the request is either in `messages` or in a
    committed `write_log` row."""
    store = Store(tmp_path / "s.duckdb")
    seen: list[int] = []

    def respond(messages: Sequence[Message], params: RequestParams) -> object:
        with store.reading_behind() as (con, _pending):
            stored = {r[0] for r in con.execute("SELECT message_id FROM messages").fetchall()}
            for text, blobs in con.execute("SELECT rows, blobs FROM write_log").fetchall():
                stored |= {row[4] for row in decode_rows(text, blobs).get("messages", [])}
        assert {m.id for m in messages} <= stored
        seen.append(len(messages))
        if len(seen) < 6:
            return reply("", call("ls", call_id=f"c{len(seen)}", path="/"))
        return "done"

    agent = create_agent(FunctionModel(respond), store=store, memory=())
    agent.run_sync("go", thread_id="t")
    assert seen == [1, 3, 5, 7, 9, 11]
    # The run is over: its rows are in their tables, the log is empty.
    assert _in_tables(store, "SELECT count(*) FROM write_log") == [(0,)]
    assert _in_tables(store, "SELECT count(*) FROM messages") == [(12,)]
    store.close()


def test_write_behind_must_be_a_whole_number() -> None:
    with pytest.raises(StoreError, match="write_behind must be a whole number >= 0"):
        Store(":memory:", write_behind=-1)
    with pytest.raises(StoreError, match="write_behind"):
        Store(":memory:", write_behind=True)  # type: ignore[arg-type]


def test_the_log_names_a_value_it_cannot_keep() -> None:
    with pytest.raises(TypeError, match="holds a set"):
        encode_rows({"messages": [({1},)]})
    assert json.loads(encode_rows({"t": [(1, "a")]})[0]) == {"t": [[1, "a"]]}


class BadRowOnce(Middleware):
    """A buggy middleware: after the first model call it queues an event row without its
    time, which DuckDB refuses (NOT NULL) when the step's rows are written."""

    name = "bad-row"

    async def after_model(self, state: RunState, response: object) -> None:
        if state.step == 1:
            state.add_row("events", (state.run_id, 1, "bad-row", "after_model", "x", None, None,
                                     "{}", None, None, None, None))  # fmt: skip


@tool
def note(text: str) -> str:
    """Take a note."""
    return "noted"


def test_a_run_whose_rows_cannot_be_written_behind_ends_failed_naming_them() -> None:
    store = Store(":memory:")
    model = ScriptedModel([reply("", call("note", call_id="n1", text="a")), "done"])
    agent = create_agent(model, [note], store=store, memory=(), middleware=[BadRowOnce()])
    with pytest.raises(StoreError, match="1 of 3 batches"):
        agent.run_sync("go", thread_id="t")
    (run,) = store.runs.all()
    assert run["status"] == "failed"
    assert (
        "could not be stored and were dropped (1 events, 2 messages, 1 model_calls)"
        in (run["error"])
    )
    # Only the bad step's rows are gone: the input and the last step stay.
    assert [m.content for m in store.messages.transcript("t")] == ["go", "done"]


def test_rows_dropped_under_a_tools_read_still_fail_the_run_at_its_next_step() -> None:
    store = Store(":memory:")
    model = ScriptedModel([
        reply("", call("ls", call_id="c1", path="/")),
        reply("", call("ls", call_id="c2", path="/")),  # its read writes the bad step's rows
        "never asked",
    ])  # fmt: skip
    agent = create_agent(model, store=store, memory=(), middleware=[BadRowOnce()])
    with pytest.raises(StoreError, match="could not be stored and were dropped"):
        agent.run_sync("go", thread_id="t")
    assert model.remaining == 1  # the run stopped before a third model call
    (run,) = store.runs.all()
    assert run["status"] == "failed"
    transcript = store.messages.transcript("t")
    assert transcript[-1].role == "tool" and transcript[-1].content.startswith("Error: StoreError")


def test_a_batch_refused_with_the_others_is_not_doubled_when_handed_over_again() -> None:
    store = Store(":memory:", write_behind=2)
    bad = _batch("bad", 1)
    bad.add("events", ("r", 0, "mw", "hook", "act", 1, 2, "{}", 0.1, None, None, "x"))
    store.write(bad)
    store.write(_batch("b", 2))
    late = _batch("c", 3)
    with pytest.raises(StoreError, match="1 of 2 batches"):
        store.write(late)  # writing the two before it fails: `late` was not taken
    store.write(late)
    assert [m.content for m in store.messages.transcript("t")] == ["b", "c"]


def test_a_batch_written_in_several_statements_is_refused_whole() -> None:
    """Many file chunks go in statements of at most LIST_BYTES (`insert_parts`), all in the
    flush's transaction: one that is refused in its last statement leaves none of them."""
    store = Store(":memory:")
    chunks = [("blob", i, 0, 0, b"x" * 4096) for i in range(200)]  # 800 kB: several statements
    bad = StepBatch()
    for row in [*chunks, chunks[0]]:  # the last chunk repeats the first one's key
        bad.add("file_chunks", row)
    good = StepBatch()
    good.add("file_chunks", ("other", 0, 0, 0, b"y"))
    for batch in (bad, good):
        store.write(batch)
    with pytest.raises(StoreError, match=r"1 of 2 batches .*\(201 file_chunks\)"):
        store.flush()
    assert store.query("SELECT blob_id, content FROM file_chunks") == [
        {"blob_id": "other", "content": b"y"}
    ]
