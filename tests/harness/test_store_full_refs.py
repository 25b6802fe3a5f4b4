"""An offloaded original is stored once: the message names the file's blob (`full_ref`) instead
of holding a second copy, every reader resolves it, the blob outlives its file, and stores
written before the change still read."""

from __future__ import annotations

from pathlib import Path

import duckdb

from harness import Store
from harness.files.filesystem import FileSystem
from harness.messages import ModelResponse, ToolCall, tool_result, user
from harness.middleware.offload import OffloadLargeResults
from harness.models import ScriptedModel
from harness.store import MIGRATIONS, StepBatch, message_row, read_store
from harness.tools import tool

EXPORT = "date,units\n" + "\n".join(f"2026-01-{i % 28 + 1:02d},{i}" for i in range(9_000))


@tool
def export() -> str:
    """A market export too large for the conversation."""
    return EXPORT


def _offloaded_run(store: Store) -> None:
    from harness import create_agent

    model = ScriptedModel(
        [ModelResponse(tool_calls=(ToolCall("c1", "export", {}),)), ModelResponse(text="ok")]
    )
    agent = create_agent(model, [export], store=store, middleware=[OffloadLargeResults()])
    agent.run_sync("export", thread_id="t")


def test_the_message_row_names_the_blob_and_holds_no_copy() -> None:
    store = Store(":memory:")
    _offloaded_run(store)
    (row,) = [r for r in store.messages.rows("t") if r["role"] == "tool"]
    assert row["full_content"] is None and row["full_ref"] is not None
    assert FileSystem(store, "t").open("/large_tool_results/c1").blob_id == row["full_ref"]
    (message,) = [m for m in store.messages.transcript("t") if m.role == "tool"]
    assert message.full_content == EXPORT and message.full_ref == row["full_ref"]
    (text,) = [r["text"] for r in store.messages.thread_messages("t") if r["role"] == "tool"]
    assert text == EXPORT
    (window_tool,) = [m for m in store.load_window("t") if m.role == "tool"]
    assert window_tool.full_content is None and store.messages.full_text(window_tool) == EXPORT
    # SQL readers get the whole text through the view.
    assert store.scalar("SELECT text FROM message_texts WHERE role = 'tool'") == EXPORT


def test_the_original_outlives_its_file_being_overwritten_and_deleted() -> None:
    store = Store(":memory:")
    _offloaded_run(store)
    files = FileSystem(store, "t")
    files.write("/large_tool_results/c1", "overwritten")
    assert [m.full_content for m in store.messages.transcript("t") if m.role == "tool"] == [EXPORT]
    files.delete("/large_tool_results/c1")
    assert [m.full_content for m in store.messages.transcript("t") if m.role == "tool"] == [EXPORT]
    assert store.scalar("SELECT text FROM message_texts WHERE role = 'tool'") == EXPORT


def test_a_blob_no_message_names_is_deleted_with_its_file() -> None:
    store = Store(":memory:")
    files = FileSystem(store, "t")
    files.write_blob("/notes/big.md", EXPORT)
    files.write("/notes/big.md", "small now")
    assert store.scalar("SELECT count(*) FROM file_chunks") == 0


def _v4_store(path: Path) -> None:
    """A store as ctxlab wrote it at schema v4: the original in `messages.full_content`."""
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE schema_version (version INTEGER, applied_at TIMESTAMP)")
    for version, sql in enumerate(MIGRATIONS[:4], start=1):
        con.execute(sql)
        con.execute("INSERT INTO schema_version VALUES (?, now())", [version])
    call = ToolCall("c1", "export", {})
    old = tool_result(call, "preview").with_content("preview", full_content=EXPORT)
    batch = StepBatch()
    for seq, m in enumerate([user("export"), old], start=1):
        batch.add("messages", message_row(m, thread_id="t", seq=seq, run_id="r", step=1, tokens=1))
    for row in batch.rows["messages"]:
        con.execute("INSERT INTO messages VALUES (" + ",".join("?" * 16) + ")", list(row[:16]))
    con.close()


def test_a_store_from_before_the_change_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "v4.duckdb"
    _v4_store(path)
    # Read without migrating it (a read-only reader of an older file).
    with read_store(path) as reader:
        assert [r["text"] for r in reader.messages.thread_messages("t")] == ["export", EXPORT]
        assert [m.full_content for m in reader.messages.transcript("t")] == [None, EXPORT]
    with Store(path) as store:  # migrates to the newest schema
        assert store.schema_version == len(MIGRATIONS)
        assert [r["text"] for r in store.messages.thread_messages("t")] == ["export", EXPORT]
        (old,) = [m for m in store.messages.transcript("t") if m.role == "tool"]
        assert old.full_content == EXPORT and old.full_ref is None
        assert store.messages.full_text(old) == EXPORT
        assert store.scalar("SELECT text FROM message_texts WHERE role = 'tool'") == EXPORT
