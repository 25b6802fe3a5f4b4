"""Cost of one step journal record (issue 11, item 6).

Run with `uv run pytest tests/benchmarks/test_journal_bench.py --benchmark-only`. Numbers go
in the notes, never in asserts. Flow runs open the store per transaction (`hold=False`), so a
record on its own pays for opening and closing the DuckDB file; the loop therefore holds the
connection for a step (`Store.keep_open`, from the model's reply to the step's commit), and a
model call's record costs its insert (`test_a_model_call_record_in_a_step`). A tool step's
record joins the transaction the step already opened for its own writes (`Store.atomic`).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from flows.journal import Journal, ensure_tables
from harness.files.filesystem import FileSystem
from harness.messages import ModelResponse, ToolCall, Usage, user
from harness.store import StepBatch, Store, message_row

REPLY = ModelResponse(
    text="Recording findings 3 and 4. " * 20,
    tool_calls=(ToolCall("c3", "record", {"n": 3}), ToolCall("c4", "record", {"n": 4})),
    usage=Usage(12_000, 300, requests=1),
)
RESULT = "finding recorded\n" + "detail of the finding\n" * 80


def _store(tmp_path: Path, hold: bool) -> Store:
    store = Store(str(tmp_path / "bench.duckdb"), hold=hold)
    ensure_tables(store)
    return store


@pytest.mark.parametrize("hold", [False, True], ids=["per-transaction", "held"])
def test_a_model_call_record_on_its_own(benchmark: Any, tmp_path: Path, hold: bool) -> None:
    journal = Journal(_store(tmp_path, hold), "run_bench")
    keys = (f"model:{i}" for i in itertools.count())
    benchmark(lambda: journal.record("model", next(keys), REPLY, None))


def test_a_model_call_record_in_a_step(benchmark: Any, tmp_path: Path) -> None:
    """What a flow run pays: the store is opened per transaction, but kept open from a model
    call's record to the step's commit (`Store.keep_open`), and the record commits in the
    model step's atomic block, as `JournaledRunner` writes it. The step's first record pays
    for the open: see `test_a_whole_step_with_a_kept_connection`."""
    store = _store(tmp_path, False)
    journal = Journal(store, "run_bench")
    keys = (f"model:{i}" for i in itertools.count())

    def record() -> None:
        with store.atomic():
            store.keep_open()
            journal.record("model", next(keys), REPLY, None)

    benchmark(record)
    store.let_go()


def test_a_whole_step_with_a_kept_connection(benchmark: Any, tmp_path: Path) -> None:
    """One step of a flow run end to end: the file opened at the model's reply, its record,
    the step's rows in one transaction, the file closed."""
    store = _store(tmp_path, False)
    journal = Journal(store, "run_bench")
    ids = itertools.count()

    def step() -> None:
        n = next(ids)
        with store.atomic():
            store.keep_open()
            journal.record("model", f"model:{n}", REPLY, None)
        batch = StepBatch()
        for i in range(2):
            message = user(f"message {n}.{i}")
            row = message_row(message, thread_id="t", seq=2 * n + i, run_id="r", step=n,
                              tokens=3)  # fmt: skip
            batch.add("messages", row)
        store.write(batch)
        store.let_go()  # as the loop does after the step's commit

    benchmark(step)


@pytest.mark.parametrize("hold", [False, True], ids=["per-transaction", "held"])
def test_a_tool_step_file_write_with_its_record(benchmark: Any, tmp_path: Path, hold: bool) -> None:
    """A tool step that writes a file: the write and the record commit together."""
    store = _store(tmp_path, hold)
    journal = Journal(store, "run_bench")
    files = FileSystem(store, "thread_bench", "run_bench")
    ids = itertools.count()

    def step() -> None:
        n = next(ids)
        with store.atomic():
            files.write(f"/notes/finding-{n}.md", RESULT)
            journal.record("tool:record", f"tool:record:c{n}", RESULT, None)

    benchmark(step)


def test_a_tool_step_file_write_without_a_journal(benchmark: Any, tmp_path: Path) -> None:
    """The same write with no journal: what the record adds is the difference."""
    files = FileSystem(_store(tmp_path, False), "thread_bench", "run_bench")
    ids = itertools.count()
    benchmark(lambda: files.write(f"/notes/finding-{next(ids)}.md", RESULT))
