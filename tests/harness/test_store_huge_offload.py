"""An offload of any size (issue 37 item 2): written in transactions DuckDB can hold under its
`memory_limit`, and read back chunk by chunk. A smaller limit than the default 256 MB stands in
for a ~250 MB tool result, to keep the test fast."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

import duckdb
import pytest

from harness import Store
from harness.errors import StoreError
from harness.files import storage
from harness.files.filesystem import FileSystem
from harness.messages import tool_result
from harness.models import call
from harness.store import StepBatch, message_row
from harness.store.files import LEGACY_CHUNK_CHARS, Files

LIMIT = "64MB"
SIZE = 72 << 20  # more than the limit


def _huge_text() -> str:
    line = "row {:09d}: a tool result far larger than the store's memory limit\n"
    return "".join(line.format(i) for i in range(SIZE // len(line.format(0))))


def test_an_offloaded_original_larger_than_the_memory_limit_is_stored_and_read_back(
    tmp_path: Path,
) -> None:
    text = _huge_text()
    digest, size = hashlib.sha256(text.encode()).hexdigest(), len(text)
    store = Store(tmp_path / "s.duckdb", memory_limit=LIMIT)
    files = FileSystem(store, "t", "r")
    blob = files.write_blob("/large_tool_results/call_1", text, new=True)
    message = tool_result(call("work", call_id="call_1"), "[offloaded]").with_content(
        "[offloaded]", full_ref=blob
    )
    batch = StepBatch()
    batch.add("messages", message_row(message, thread_id="t", seq=1, run_id="r", step=1, tokens=3))
    store.write(batch)
    del text
    (stored,) = store.messages.transcript("t")
    assert hashlib.sha256(store.messages.full_text(stored).encode()).hexdigest() == digest
    (row,) = store.messages.thread_messages("t")
    assert hashlib.sha256(row["text"].encode()).hexdigest() == digest
    assert store.files.row("thread:t", "/large_tool_results/call_1")["size"] == size
    store.close()


def test_a_blob_from_before_the_chunks_shrank_reads_back(tmp_path: Path) -> None:
    # Stores written before: ids of bare hex, 256 Ki-character chunks. Readers take a blob's
    # chunk size from its id, so no migration rewrites them.
    text = "".join(f"line {i}: é\n" for i in range(100_000))  # 6 old chunks
    store = Store(tmp_path / "s.duckdb")
    files = FileSystem(store, "t", "r")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(storage, "new_blob_id", lambda _chars: uuid.uuid4().hex)
        mp.setattr(storage, "CHUNK_CHARS", LEGACY_CHUNK_CHARS)
        blob = files.write_blob("/large_tool_results/old", text)
    assert store.scalar("SELECT count(*) FROM file_chunks") == 6 and "." not in blob
    opened = files.open("/large_tool_results/old")
    assert "".join(opened.text_from(0)) == text
    assert "".join(opened.text_from(300_000)) == text[300_000:]
    assert opened.line_start(77_777) == text.index("line 77777:")
    message = tool_result(call("work", call_id="c"), "[offloaded]").with_content(
        "[offloaded]", full_ref=blob
    )
    assert store.messages.full_text(message) == text
    store.close()


def test_a_chunk_write_the_disk_refuses_is_a_store_error_and_names_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path / "s.duckdb")
    files = FileSystem(store, "t", "r")
    real, calls = Files.insert_chunks, []

    def refused(self: Files, rows: list[tuple[str, int, int, int, bytes]]) -> None:
        calls.append(len(rows))
        if len(calls) == 8:  # a few transactions in
            raise duckdb.TransactionException('Could not write file "s.duckdb.wal": File too large')
        real(self, rows)

    monkeypatch.setattr(Files, "insert_chunks", refused)
    text = _huge_text()[: 12 << 20]
    with pytest.raises(StoreError, match="/large_tool_results/c1 could not be stored"):
        files.write_blob("/large_tool_results/c1", text, new=True)
    assert not files.exists("/large_tool_results/c1")
    monkeypatch.undo()  # space comes back
    blob = files.write_blob("/large_tool_results/c1", text, new=True)
    assert store.files.blob_bytes(blob) == text.encode()
    store.close()
