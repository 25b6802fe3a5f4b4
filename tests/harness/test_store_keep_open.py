"""A store opened per transaction (`hold=False`) keeps its connection between `keep_open` and
`let_go`: a flow run's step pays for one open of the file, not one per journal record. The
loop lets it go after each step's commit and while tools are slow."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import duckdb

from harness import Store, create_agent
from harness.messages import ModelResponse, ToolCall
from harness.middleware.base import Middleware
from harness.models import ScriptedModel
from harness.tools import tool


class CountingStore(Store):
    """Counts how often the DuckDB file is opened."""

    def __init__(self, path: Path) -> None:
        self.opens = 0
        super().__init__(path, hold=False)
        opener = self.db.open

        def counted() -> duckdb.DuckDBPyConnection:
            self.opens += 1
            return opener()

        self.db.open = counted  # type: ignore[method-assign]


def test_a_kept_store_opens_the_file_once_for_many_transactions(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "s.duckdb")
    store.opens = 0
    store.keep_open()
    for i in range(3):
        with store.atomic(), store.transaction() as con:
            con.execute("CREATE TABLE IF NOT EXISTS mine (n INTEGER)")
            con.execute("INSERT INTO mine VALUES (?)", [i])
        store.scalar("SELECT count(*) FROM mine")
    assert store.opens == 1
    store.let_go()
    # The file is free again: another process could open it now.
    assert store.db._con is None
    assert store.scalar("SELECT count(*) FROM mine") == 3
    assert store.opens == 2  # per transaction again


def test_letting_go_during_an_atomic_block_closes_after_it(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "s.duckdb")
    store.execute("CREATE TABLE mine (n INTEGER)")
    store.keep_open()
    with store.atomic():
        with store.transaction() as con:
            con.execute("INSERT INTO mine VALUES (1)")
        store.let_go()  # a slow tool's step: its block still commits on its cursor
        with store.transaction() as con:
            con.execute("INSERT INTO mine VALUES (2)")
        assert store.db._con is not None
    assert store.db._con is None
    assert store.scalar("SELECT count(*) FROM mine") == 2


def test_a_held_store_ignores_keep_and_let_go() -> None:
    store = Store(":memory:")
    store.keep_open()
    store.let_go()
    assert store.scalar("SELECT 1") == 1 and store.db._con is not None


class KeepAfterReply(Middleware):
    """What the flow journal does: keep the store open from the model's reply; and note
    whether the file was free when each model call was made."""

    name = "keep-after-reply"

    def __init__(self) -> None:
        self.free_at_call: list[bool] = []

    async def wrap_model_call(self, request: Any, handler: Any) -> Any:
        self.free_at_call.append(request.state.store.db._con is None)
        response = await handler(request)
        request.state.store.keep_open()
        request.state.store.execute("SELECT 1")  # the record's write opens the file
        return response


def test_the_loop_lets_the_file_go_after_each_commit_and_while_tools_are_slow(
    tmp_path: Path,
) -> None:
    store = CountingStore(tmp_path / "s.duckdb")
    seen: list[bool] = []

    @tool
    def slow() -> str:
        """A tool that takes a while."""
        time.sleep(0.4)
        seen.append(store.db._con is None)  # let go by now: other processes may use the file
        return "done"

    keeper = KeepAfterReply()
    model = ScriptedModel(
        [ModelResponse(tool_calls=(ToolCall("c1", "slow", {}),)), ModelResponse(text="ok")]
    )
    agent = create_agent(model, [slow], store=store, middleware=[keeper])
    assert agent.run_sync("go").status == "completed"
    assert seen == [True]
    assert keeper.free_at_call == [True, True]
    assert store.db._con is None  # nothing keeps the file once the run is over
