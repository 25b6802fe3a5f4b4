"""An in-memory store answers `Files.clashes` (an offload's check for a free path) from the
paths it knows it wrote: the same answer the table gives, with no statement after the first;
anything it cannot see into makes it read again."""

from __future__ import annotations

from typing import Any

import pytest

from harness import Store
from harness.files.filesystem import FileSystem
from harness.store.files import Files
from harness.store.sql import OnConnection


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The reads of the `files` table run on a connection (as `clashes` runs them)."""
    seen: list[str] = []
    query = OnConnection.query

    def spy(self: OnConnection, sql: str, params: Any = None) -> list[dict[str, Any]]:
        if "FROM files" in sql:
            seen.append(sql)
        return query(self, sql, params)

    monkeypatch.setattr(OnConnection, "query", spy)
    return seen


def _table_answer(store: Store, namespace: str, stem: str) -> list[str]:
    parents = [stem.rsplit("/", 1)[0] or "/"]
    return Files(store, store._reading_behind).clashes(namespace, parents, stem)


def _offloads(fs: FileSystem, n: int) -> None:
    for i in range(n):
        taken, _ = fs.paths_at(f"/large_tool_results/call{i}")
        assert not taken
        fs.write_blob(f"/large_tool_results/call{i}", f"result {i}\n" * 50, new=True)


def test_offloads_check_their_paths_without_a_statement(reads: list[str]) -> None:
    store = Store(":memory:")
    fs = FileSystem(store, "t1", run_id="r1")
    _offloads(fs, 30)
    assert len(reads) == 1  # the first check reads every path; the others are look-ups
    assert fs.paths_at("/large_tool_results/call29") == ({"/large_tool_results/call29"}, False)
    assert fs.paths_at("/large_tool_results/call29/x")[1]  # a file sits above it


def test_the_paths_it_knows_are_the_paths_the_table_holds() -> None:
    store = Store(":memory:", write_behind=4)
    fs = FileSystem(store, "t1", run_id="r1")
    _offloads(fs, 10)  # some pending (written behind), some written
    ns = fs.namespace("/large_tool_results/call3")
    stem = "/large_tool_results/call"
    assert store.files.clashes(ns, ["/large_tool_results"], stem) == _table_answer(store, ns, stem)
    assert len(store.files.clashes(ns, ["/large_tool_results"], stem)) == 10
    fs.delete("/large_tool_results/call3")  # a unit of work: read again
    assert "/large_tool_results/call3" not in store.files.clashes(ns, [], stem)
    store.execute("DELETE FROM files WHERE path = '/large_tool_results/call4'")
    assert store.files.clashes(ns, [], stem) == _table_answer(store, ns, stem)
    assert len(store.files.clashes(ns, [], stem)) == 8


def test_a_file_store_always_reads(reads: list[str], tmp_path: Any) -> None:
    # Another process may write a file store between two checks.
    fs = FileSystem(Store(tmp_path / "s.duckdb"), "t1", run_id="r1")
    _offloads(fs, 3)
    assert len(reads) == 3
