"""Cost of one step journal record (issue 11, item 6).

Run with `uv run pytest tests/benchmarks/test_journal_bench.py --benchmark-only`. Numbers go
in the notes, never in asserts. Flow runs open the store per transaction (`hold=False`), so a
record on its own pays for opening and closing the DuckDB file; a tool step's record joins the
transaction the step already opened for its own writes (`Store.atomic`), and costs the insert.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from flows.journal import Journal, ensure_tables
from harness.files.filesystem import FileSystem
from harness.messages import ModelResponse, ToolCall, Usage
from harness.store import Store

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
