"""Readers of a crashed store (issue 37 item 6): a process that died with steps only in
`write_log` leaves the tables behind; `read_store` (`ctxlab export`, the recorded-thread
import) and `sandboxed_query` (`ctxlab sql`) write that log first when they can open the file
for writing, and otherwise say how many steps it holds."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.store import read_store
from harness.store.access import sandboxed_query
from harness.store.pending_log import PendingLogWarning

ROOT = Path(__file__).resolve().parents[2]
_CRASH = textwrap.dedent(
    """
    import os, sys
    from harness.messages import user
    from harness.store import StepBatch, Store, message_row

    store = Store(sys.argv[1])  # writes behind: 64 batches wait, logged
    for seq in range(1, 11):
        batch = StepBatch()
        batch.add("messages", message_row(user(f"m{seq}"), thread_id="t", seq=seq,
                                          run_id="r", step=seq, tokens=1))
        store.write(batch)
    os._exit(0)  # dies: no flush, no atexit
    """
)


@pytest.fixture
def crashed(tmp_path: Path) -> str:
    path = str(tmp_path / "s.duckdb")
    subprocess.run([sys.executable, "-c", _CRASH, path], cwd=ROOT, check=True, timeout=60)
    return path


def test_read_store_writes_a_crashed_stores_log_first(crashed: str) -> None:
    with read_store(crashed) as reader:
        assert len(reader.messages.rows("t")) == 10
        assert reader.pending_steps == 0


def test_ctxlab_sql_writes_a_crashed_stores_log_first(crashed: str) -> None:
    _, rows = sandboxed_query(crashed, "SELECT count(*) FROM messages")
    assert rows == [(10,)]


def test_a_reader_that_cannot_write_the_log_says_how_many_steps_it_holds(crashed: str) -> None:
    # Another reader holds the file read-only, so nobody may write it now.
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1], "
         "read_only=True); print('open', flush=True); time.sleep(60)", crashed],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        with pytest.warns(PendingLogWarning, match="10 steps"):
            reader = read_store(crashed)
        with reader:
            assert reader.pending_steps == 10
        with pytest.warns(PendingLogWarning, match="10 steps"):
            _, rows = sandboxed_query(crashed, "SELECT count(*) FROM messages")
        assert rows == [(0,)]
    finally:
        holder.kill()
        holder.wait()
