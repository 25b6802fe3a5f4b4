"""Write errors during write-behind (issue 37 item 1): an I/O error (a full disk, a file over
its size limit) keeps the pending batches and they are written later; only rows the database
refuses are quarantined in `write_log`; a quarantined batch whose error was I/O is retried; no
transcript position is ever held twice; the run ends `failed` with a `StoreError`."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from harness import Store, create_agent, tool
from harness.errors import StoreError
from harness.messages import user
from harness.models import ScriptedModel, call, reply
from harness.store import StepBatch, message_row
from harness.store import write_behind as write_behind_module
from harness.store.pending import encode_rows

ROOT = Path(__file__).resolve().parents[2]
DISK_FULL = (
    'TransactionContext Error: Failed to commit: Could not write file "x.wal": File too large'
)


def _batch(text: str, seq: int, *, thread: str = "t") -> StepBatch:
    batch = StepBatch()
    batch.add(
        "messages", message_row(user(text), thread_id=thread, seq=seq, run_id="r", step=0, tokens=1)
    )
    return batch


class FullDisk:
    """Makes every bulk insert of a flush fail as DuckDB does when the disk is full."""

    def __init__(self) -> None:
        self.full = False
        self.failures = 0

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real = write_behind_module.insert_parts

        def insert_parts(con: Any, table: str, rows: Any, types: Any) -> None:
            if self.full:
                self.failures += 1
                raise duckdb.TransactionException(DISK_FULL)
            real(con, table, rows, types)

        monkeypatch.setattr(write_behind_module, "insert_parts", insert_parts)


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> Iterator[FullDisk]:
    full = FullDisk()
    full.install(monkeypatch)
    yield full
    full.full = False


def test_an_io_error_keeps_the_pending_batches_and_they_are_written_later(
    tmp_path: Path, disk: FullDisk
) -> None:
    store = Store(tmp_path / "s.duckdb", write_behind=8)
    for seq in range(1, 6):
        store.write(_batch(f"m{seq}", seq))
    disk.full = True
    with pytest.raises(StoreError, match="stay pending") as raised:
        store.flush()
    assert "File too large" in str(raised.value)
    assert disk.failures == 1  # not tried batch by batch: the disk refused, not the rows
    disk.full = False
    store.flush()
    contents = [m.content for m in store.messages.transcript("t")]
    assert contents == ["m1", "m2", "m3", "m4", "m5"]
    assert store.scalar("SELECT count(*) FROM write_log") == 0


def test_a_batch_the_database_refuses_is_quarantined_and_the_others_are_written(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "s.duckdb", write_behind=8)
    store.write(_batch("a", 1))
    bad = StepBatch()
    bad.add("messages", ("t", "not a seq", "r", 0, "id", "user", "message", "x") + (None,) * 9)
    store.write(bad)
    store.write(_batch("c", 3))
    with pytest.raises(StoreError, match="1 of 3 batches"):
        store.flush()
    assert [m.content for m in store.messages.transcript("t")] == ["a", "c"]
    assert store.scalar("SELECT count(*) FROM write_log WHERE error IS NOT NULL") == 1


def test_a_quarantined_batch_whose_error_was_io_is_retried_and_a_refused_one_is_not(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.duckdb"
    Store(path).close()
    io_rows, io_blobs = encode_rows(_batch("retried", 1).rows)
    refused_rows, refused_blobs = encode_rows(_batch("refused", 2).rows)
    con = duckdb.connect(str(path))
    con.execute(
        "INSERT INTO write_log VALUES ('dead-1', 1, ?, ?, now(), ?), ('dead-1', 2, ?, ?, now(), ?)",
        [io_rows, io_blobs, f"TransactionException: {DISK_FULL}",
         refused_rows, refused_blobs, "ConversionException: Could not convert string"],
    )  # fmt: skip
    con.close()
    with Store(path) as store:
        assert [m.content for m in store.messages.transcript("t")] == ["retried"]
        left = store.query("SELECT seq, error FROM write_log")
        assert [r["seq"] for r in left] == [2]


def test_recovery_never_writes_a_transcript_position_that_is_already_taken(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.duckdb"
    with Store(path, write_behind=0) as store:
        store.write(_batch("live", 1))
        store.write(_batch("live", 2))
    stale, blobs = encode_rows({**_batch("stale", 2).rows})
    fresh, fresh_blobs = encode_rows(_batch("fresh", 3).rows)
    con = duckdb.connect(str(path))
    con.execute(
        "INSERT INTO write_log VALUES ('dead-1', 1, ?, ?, now(), NULL), "
        "('dead-1', 2, ?, ?, now(), NULL)",
        [stale, blobs, fresh, fresh_blobs],
    )
    con.close()
    with Store(path) as store:
        rows = store.query("SELECT seq, content FROM messages ORDER BY seq")
        assert [(r["seq"], r["content"]) for r in rows] == [(1, "live"), (2, "live"), (3, "fresh")]
        (kept,) = store.query("SELECT seq, error FROM write_log")
        assert kept["seq"] == 1 and "already" in kept["error"]


def _agent_with_tools(store: Store, steps: int, on_step: Any) -> Any:
    @tool
    def work(n: int) -> str:
        """Do step n."""
        on_step(n)
        return f"done {n}"

    model = ScriptedModel([reply("", call("work", n=n)) for n in range(steps)] + ["finished"])
    return create_agent(model, tools=[work], store=store, system_prompt="s")


def test_a_run_whose_rows_cannot_be_written_fails_with_a_store_error_and_loses_nothing(
    tmp_path: Path, disk: FullDisk
) -> None:
    path = tmp_path / "s.duckdb"
    store = Store(path, write_behind=4)

    def on_step(n: int) -> None:
        if n == 6:
            disk.full = True  # the disk fills while steps wait to be written

    agent = _agent_with_tools(store, 10, on_step)
    with pytest.raises(StoreError, match="stay pending"):
        agent.run_sync("go", thread_id="t")
    disk.full = False  # space comes back
    store.close()
    with Store(path) as again:
        (run,) = again.runs.all()
        assert run["status"] == "failed" and "StoreError" in run["error"]
        seqs = [r["seq"] for r in again.messages.rows("t")]
        assert seqs == list(range(1, len(seqs) + 1))  # no hole, no position twice
        answered = again.messages.answered_tool_calls(run["run_id"])
        calls = {c["id"] for c in again.messages.all_tool_calls()}
        assert answered <= calls and len(answered) >= 6


_CHILD = textwrap.dedent(
    """
    import os, resource, signal, sys
    from harness import Store, create_agent, tool
    from harness.errors import StoreError
    from harness.models import ScriptedModel, call, reply

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    path = sys.argv[1]
    store = Store(path, write_behind=8)

    @tool
    def work(n: int) -> str:
        \"\"\"Do step n.\"\"\"
        if n == 5:
            store.flush()
            size = max(os.path.getsize(p) for p in (path, path + ".wal") if os.path.exists(p))
            resource.setrlimit(resource.RLIMIT_FSIZE, (size + 24_000, resource.RLIM_INFINITY))
        return "done " + str(n) + " " + "x" * 2_000

    model = ScriptedModel([reply("", call("work", n=n)) for n in range(40)] + ["finished"])
    agent = create_agent(model, tools=[work], store=store, system_prompt="s")
    try:
        agent.run_sync("go", thread_id="t")
    except StoreError as exc:
        print("StoreError", exc)
    except BaseException as exc:
        print("other", type(exc).__name__, exc)
        os._exit(4)
    else:
        os._exit(0)
    # Space comes back: the thread goes on in the same process, then the store closes.
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    again = create_agent(ScriptedModel(["again"]), store=store, system_prompt="s")
    again.run_sync("and now?", thread_id="t")
    store.close()
    os._exit(3)
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_a_full_disk_in_a_real_process_ends_its_run_with_a_store_error_and_loses_no_step(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.duckdb"
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)], cwd=ROOT, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert child.returncode == 3, child.stdout + child.stderr
    assert "stay pending" in child.stdout
    with Store(path) as store:
        rows = store.messages.rows("t")
        seqs = [r["seq"] for r in rows]
        assert seqs == list(range(1, len(seqs) + 1))  # no position twice, no hole
        assert len({r["message_id"] for r in rows}) == len(rows)
        assert [r["content"] for r in rows][-1] == "again"
        assert [r["status"] for r in store.runs.all()] == ["failed", "completed"]
        assert store.scalar("SELECT count(*) FROM write_log") == 0
