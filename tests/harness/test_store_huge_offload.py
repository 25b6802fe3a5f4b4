"""An offload of any size (issue 37 item 2): written in transactions DuckDB can hold under its
`memory_limit`, and read back chunk by chunk. A smaller limit than the default 256 MB stands in
for a ~250 MB tool result, to keep the test fast."""

from __future__ import annotations

import hashlib
from pathlib import Path

from harness import Store
from harness.files.filesystem import FileSystem
from harness.messages import tool_result
from harness.models import call
from harness.store import StepBatch, message_row

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
