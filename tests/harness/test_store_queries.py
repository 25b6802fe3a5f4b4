"""The store's named queries: what evals, flows and tests ask the store for instead of SQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.messages import Message, ToolCall, Usage
from harness.store import StepBatch, Store, message_row, now, read_store


def _call(run_id: str, step: int, model: str, tokens: int, cost: float) -> tuple:
    return (run_id, step, model, tokens, 1, 0, 0, tokens, 1.0, cost, "end", "o200k_base", now())


def _event(run_id: str, middleware: str, action: str, before: int, after: int) -> tuple:
    detail = json.dumps({"action": action})
    return (run_id, 1, middleware, "before_model", action, before, after, detail, 0.1, None,
            now(), None)  # fmt: skip


@pytest.fixture
def store() -> Store:
    """A top run with a subagent run under it, which has one of its own."""
    store = Store(":memory:")
    store.start_run(run_id="top", thread_id="t", agent="a", model="m", strategy="full")
    store.start_run(run_id="sub", thread_id="t.task", agent="a/researcher", model="m",
                    strategy=None, parent_run_id="top", parent_step=1)  # fmt: skip
    store.start_run(run_id="subsub", thread_id="t.task.task", agent="a/r", model="m",
                    strategy=None, parent_run_id="sub", parent_step=1)  # fmt: skip
    batch = StepBatch()
    asked = Message(role="user", content="go")
    calls = Message(role="assistant", content="", tool_calls=(ToolCall("c1", "task", {}),))
    for seq, msg in enumerate((asked, calls), start=1):
        batch.add("messages", message_row(msg, thread_id="t", seq=seq, run_id="top", step=seq - 1,
                                          tokens=1))  # fmt: skip
    batch.add("model_calls", _call("top", 0, "m", 100, 0.1))
    batch.add("model_calls", _call("sub", 0, "m", 40, 0.2))
    batch.add("model_calls", _call("top", 1, "m#summarize", 30, 0.3))
    batch.add("events", _event("top", "offload", "offload_tool_result", 500, 50))
    batch.add("events", _event("subsub", "offload", "offload_tool_result", 300, 30))
    batch.add("events", _event("top", "summarize", "summarized", 900, 90))
    store.write(batch)
    return store


def test_events_of_filters_by_run_middleware_and_action(store: Store) -> None:
    assert len(store.events.rows()) == 3
    assert [e["run_id"] for e in store.events.rows(middleware="offload")] == ["top", "subsub"]
    assert [e["action"] for e in store.events.rows("top", action="summarized")] == ["summarized"]
    assert store.events.rows("sub") == []
    assert store.events.count("offload_%") == 2


def test_tree_queries_reach_every_depth_below_a_run(store: Store) -> None:
    assert store.runs.subagent_totals("top")["runs"] == 2
    assert (
        store.runs.subagent_totals("top")["input_tokens"] == 0
    )  # their `runs` rows are unfinished
    offload = [t for t in store.events.tree_totals("top") if t["middleware"] == "offload"]
    assert offload == [
        {"middleware": "offload", "action": "offload_tool_result", "times": 2, "before": 800,
         "after": 80}
    ]  # fmt: skip
    assert [t["times"] for t in store.events.tree_totals("sub")] == [1]


def test_usage_is_split_by_role_and_summed_per_run(store: Store) -> None:
    usage = store.usage.by_role()
    assert {role: u["calls"] for role, u in usage.items()} == {
        "main": 1, "subagent": 1, "summarizer": 1
    }  # fmt: skip
    assert usage["subagent"]["cost_usd"] == pytest.approx(0.2)
    run_usage, peak = store.usage.of_run("top")
    assert (run_usage.requests, run_usage.input_tokens, peak) == (2, 130, 100)
    assert store.usage.of_run("none") == (Usage(), 0)


def test_run_progress_and_the_last_message(store: Store) -> None:
    assert store.messages.committed_steps("top") == (1, 2)
    last = store.messages.last("top")
    assert last is not None and last.role == "assistant" and last.tool_calls[0].name == "task"
    assert store.messages.last("sub") is None
    assert [c["name"] for c in store.messages.all_tool_calls()] == ["task"]
    assert [m["seq"] for m in store.messages.rows("t")] == [1, 2]
    assert store.messages.rows(run_id="sub") == []


def test_statuses_and_the_release_of_a_run(store: Store) -> None:
    store.finish_run("subsub", status="completed", steps=1, usage=Usage())
    assert store.runs.with_status(["completed"]) == ["subsub"]
    assert store.runs.statuses(["top", "gone"]) == {"top": "running"}
    store.runs.release("top")
    assert store.runs.get("top") is None
    # Only the row goes: what happens to its subagents is resume's decision (discard_runs).
    assert store.runs.get("sub")["status"] == "running"
    assert store.runs.get("subsub")["status"] == "completed"
    assert [r["run_id"] for r in store.runs.children(["sub"])] == ["subsub"]
    assert store.runs.children([]) == []
    assert sorted(store.runs.discard(["sub"])) == ["sub", "subsub"]
    assert store.runs.get("sub") is None and store.runs.get("subsub") is None


def test_a_reader_answers_the_same_queries_read_only(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    on_file = Store(path)
    on_file.start_run(run_id="r", thread_id="t", agent="a", model="m", strategy=None)
    on_file.close()
    with read_store(path) as reader:
        assert [r["run_id"] for r in reader.runs.of_thread("t")] == ["r"]
        assert reader.runs.get("r")["status"] == "running"
        assert reader.memory.at(now()) == []


def test_the_middleware_reads_by_name(store: Store) -> None:
    assert store.runs.thread_in_use("t.task") and not store.runs.thread_in_use("t.task.2")
    ids = [m["message_id"] for m in store.messages.rows("t")]
    assert store.messages.seq_range("t", ids) == (1, 2)
    assert store.messages.seq_range("t", ids[1:]) == (2, 2)
    assert store.messages.seq_range("t.task", ids) == (None, None)
    assert store.summaries.last_cycle("t") == 0
    batch = StepBatch()
    for cycle in (1, 3):
        batch.add("summaries", ("top", "t", cycle, 1, 1, 2, "[]", 9, 1, 1, "m", "/h.md", "s",
                                now()))  # fmt: skip
    store.write(batch)
    assert store.summaries.last_cycle("t") == 3
    assert store.summaries.last_cycle("t.task") == 0


def test_memory_versions_are_read_and_written_in_the_callers_transaction(store: Store) -> None:
    with store.unit() as uow:
        assert uow.memory.latest("/memories/AGENTS.md") is None
        uow.memory.insert_version("/memories/AGENTS.md", 1, "hi", "top", "agent")
        uow.memory.insert_version("/memories/AGENTS.md", 2, None, "top", "agent")
        assert uow.memory.latest("/memories/AGENTS.md") == (2, "", True)
    versions = store.memory.versions()
    assert [(v["version"], v["deleted"]) for v in versions] == [(1, False), (2, True)]
