"""A lazy in-memory store (`Store(":memory:", lazy=True)`) keeps its rows in Python and creates
its database only when a read needs SQL; from then on it is an ordinary in-memory store holding
every row, in the order written. A file store cannot be lazy."""

from typing import Any

import duckdb
import pytest

from harness import Store, create_agent, tool
from harness.errors import StoreError
from harness.files.filesystem import FileSystem
from harness.models import ScriptedModel, call, reply
from harness.store import now


@tool
def fetch(n: int) -> str:
    """Fetch document n."""
    return " ".join(f"d{n}w{i}" for i in range(400))


def _agent(store: Store, turns: int) -> Any:
    script = [x for i in range(turns) for x in (reply("", call("fetch", n=i)), f"done {i}")]
    return create_agent(
        ScriptedModel(script), [fetch], store=store, strategy="mask", memory=(),
        strategy_params={"mask.keep": 1, "mask.batch": 1},
    )  # fmt: skip


def test_a_file_store_cannot_be_lazy(tmp_path) -> None:  # noqa: ANN001
    with pytest.raises(StoreError, match=r"lazy=True is for an in-memory store"):
        Store(tmp_path / "s.duckdb", lazy=True)


def test_runs_leave_the_database_unopened_until_sql_is_asked() -> None:
    store = Store(":memory:", lazy=True)
    agent = _agent(store, 3)
    for i in range(3):
        agent.run_sync(f"turn {i}", thread_id="t")
    assert store.db._con is None  # no connection, no schema, no statement
    window, seq = store.load_window("t"), store.next_seq("t")
    assert store.scalar("SELECT count(*) FROM runs WHERE status = 'completed'") == 3
    assert not store.lazy.live
    assert store.messages.load_window("t") == window  # from the tables now
    assert store.messages.next_seq("t") == seq
    seqs = [r["seq"] for r in store.query("SELECT seq FROM messages ORDER BY rowid")]
    assert seqs == list(range(1, seq))  # every message, in the order written


def test_a_unit_that_raises_leaves_the_files_as_they_were() -> None:
    store = Store(":memory:", lazy=True)
    files = FileSystem(store, "t")
    files.write("/notes/a.md", "first")

    def broken(*_: Any) -> None:
        raise RuntimeError("hook failed")

    with pytest.raises(RuntimeError), store.unit() as uow:
        uow.files.delete("thread:t", "/notes/a.md")
        broken()
    assert store.lazy.live
    assert files.read_text("/notes/a.md") == "first"
    assert store.scalar("SELECT count(*) FROM files") == 1


def test_a_key_taken_twice_is_refused_as_duckdb_refuses_it() -> None:
    lazy, eager = Store(":memory:", lazy=True), Store(":memory:")
    for store in (lazy, eager):
        store.start_run(run_id="r", thread_id="t", agent="a", model="m", strategy=None)
        with pytest.raises(duckdb.ConstraintException):
            store.start_run(run_id="r", thread_id="t", agent="a", model="m", strategy=None)
    assert lazy.lazy.live


def test_a_unit_runs_no_sql() -> None:
    store = Store(":memory:", lazy=True)
    with pytest.raises(StoreError, match="runs no SQL"), store.unit() as uow:
        uow.sql.execute("DELETE FROM files")


def test_rows_of_a_table_of_the_callers_own_go_to_the_database() -> None:
    store = Store(":memory:", lazy=True)
    _agent(store, 1).run_sync("turn 0", thread_id="t")
    store.execute("CREATE TABLE mine (x INTEGER)")
    store.write_rows({"mine": [(1,), (2,)]})
    assert store.scalar("SELECT sum(x) FROM mine") == 3
    assert store.scalar("SELECT count(*) FROM runs") == 1


def test_a_read_whose_sql_leaves_the_order_open_is_left_to_sql() -> None:
    store = Store(":memory:", lazy=True)
    with store.unit() as uow:
        for namespace in ("thread:t", "shared"):
            uow.files.insert_inline([(namespace, "/a.md", b"x", True, 1, None, now(), now())])
    assert [r["path"] for r in store.files.listing(("thread:t", "shared"), "/")] == ["/a.md"] * 2
    assert not store.lazy.live  # two rows tied on `ORDER BY path`: DuckDB's order it is
