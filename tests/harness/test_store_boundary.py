"""The store's write boundary: any text a step produces can be stored, and a run never stays
`running` after an exception in the loop or in the store."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from harness import ToolContext, create_agent, tool
from harness import store as store_module
from harness.errors import ModelError
from harness.messages import Message, ToolCall, assistant
from harness.middleware.base import Middleware
from harness.models import FunctionModel, ScriptedModel, call, reply
from harness.state import RunState
from harness.store import StepBatch, Store, message_row

LONE = "\ud800"
ESCAPED = b"caf\xe9 \xff".decode("utf-8", "surrogateescape")  # "caf\udce9 \udcff"


@tool
def echo_bad(text: str, ctx: ToolContext) -> str:
    """Return text with bytes that are not UTF-8, as a tool reading a binary file would.

    Args:
        text: anything.
    """
    return f"got {text} and {ESCAPED}"


class NoisyEvents(Middleware):
    """Records an event whose detail carries a lone surrogate (a file name, say)."""

    name = "noisy"

    async def after_model(self, state: RunState, response: Any) -> None:
        state.event(self.name, "after_model", "saw", detail={"name": f"report{LONE}.md"})


def _model() -> FunctionModel:
    def respond(messages: Any, params: Any) -> object:
        tools = [m for m in messages if m.role == "tool"]
        if not tools:
            return reply(
                f"Working {LONE}",
                call("echo_bad", call_id="c1", text=f"arg {LONE}"),
                call("write_file", call_id="c2", file_path="/notes.md", content=f"x {ESCAPED}"),
            )
        return f"done {ESCAPED}"

    return FunctionModel(respond, name="odd-text")


def test_lone_surrogates_anywhere_in_a_step_are_stored_as_replacement_characters() -> None:
    store = Store(":memory:")
    agent = create_agent(_model(), [echo_bad], store=store, memory=(), middleware=[NoisyEvents()])
    result = agent.run_sync("go")

    assert result.status == "completed"
    assert store.runs.get(result.run_id)["status"] == "completed"
    transcript = store.messages.transcript(result.thread_id)
    assert [m.role for m in transcript] == ["user", "assistant", "tool", "tool", "assistant"]
    first, echoed, final = transcript[1], transcript[2], transcript[4]
    assert first.content == "Working \ufffd"
    assert first.tool_calls[0].arguments == {"text": "arg \ufffd"}
    assert echoed.content == "got arg \ufffd and caf\ufffd \ufffd"
    assert final.content == "done caf\ufffd \ufffd"
    assert result.output == final.content  # the window holds what the store holds
    assert (
        store.scalar("SELECT decode(content) FROM files WHERE path = '/notes.md'")
        == "x caf\ufffd \ufffd"
    )
    assert json.loads(store.scalar("SELECT detail FROM events WHERE middleware = 'noisy'")) == {
        "name": "report\ufffd.md"
    }

    # Every repair is recorded, saying where it happened.
    repairs = [
        json.loads(r["detail"])
        for r in store.query(
            "SELECT detail FROM events WHERE middleware = 'store' AND action = 'text_repaired' "
            "ORDER BY step"
        )
    ]
    by_message = {r["message_id"]: r for r in repairs if "message_id" in r}
    assert by_message[first.id]["replaced"] == {"content": 1, "tool_calls": 3}
    assert by_message[echoed.id]["tool_call_id"] == "c1"
    assert by_message[echoed.id]["replaced"] == {"content": 3}
    assert by_message[final.id]["replaced"] == {"content": 2}
    flushed = [row for r in repairs if "rows" in r for row in r["rows"]]
    assert len(flushed) == 2  # the noisy event of each model call
    assert all(r["table"] == "events" and r["replaced"] == {"detail": 1} for r in flushed)


def test_escaped_lone_surrogates_in_json_columns_are_replaced_and_pairs_kept() -> None:
    text, n = store_module.storable_json(
        json.dumps({"a": f"x{LONE}", "b": "\U0001f600", "c": "\\ud800"})
    )
    assert n == 1
    assert json.loads(text) == {"a": "x\ufffd", "b": "\U0001f600", "c": "\\ud800"}
    assert store_module.storable_json(json.dumps({"b": "\U0001f600"})) == (
        json.dumps({"b": "\U0001f600"}),
        0,
    )

    msg = assistant("", [ToolCall("c1", "t", {f"k{LONE}": [f"v{LONE}"]})])
    row, repairs = store_module.storable_row(
        "messages", message_row(msg, thread_id="t", seq=1, run_id="r", step=0, tokens=1)
    )
    assert repairs == {"tool_calls": 2}
    store = Store(":memory:")
    batch = StepBatch()
    batch.add("messages", row)
    store.write(batch)
    (stored,) = store.messages.transcript("t")
    assert stored.tool_calls[0].arguments == {"k\ufffd": ["v\ufffd"]}


def test_a_failing_model_with_odd_text_in_its_error_still_finishes_the_run() -> None:
    store = Store(":memory:")
    agent = create_agent(
        ScriptedModel([ModelError(f"provider said {LONE}")]), store=store, memory=()
    )
    with pytest.raises(ModelError):
        agent.run_sync("go")
    (run,) = store.query("SELECT status, error FROM runs")
    assert run == {"status": "failed", "error": "ModelError: provider said \ufffd"}


class FlakyStore(Store):
    """Refuses step writes from the `fail_from`-th one on, `failures` times in a row."""

    def __init__(self, fail_from: int, failures: int) -> None:
        super().__init__(":memory:")
        self.writes = 0
        self.fail_from = fail_from
        self.failures = failures

    def write(self, batch: StepBatch) -> None:
        self.writes += 1
        if self.writes >= self.fail_from and self.failures > 0:
            self.failures -= 1
            raise OSError("disk full")
        super().write(batch)


def _two_step_agent(store: Store) -> Any:
    model = ScriptedModel([reply("looking", call("ls", call_id="c1", path="/")), "done"])
    return create_agent(model, store=store, memory=())


def test_a_store_failure_mid_run_is_retried_once_then_the_run_is_marked_failed() -> None:
    store = FlakyStore(fail_from=2, failures=1)  # the second step's write fails once
    with pytest.raises(OSError, match="disk full"):
        _two_step_agent(store).run_sync("go")
    (run,) = store.query("SELECT run_id, status, error FROM runs")
    assert run["status"] == "failed"
    assert run["error"] == "OSError: disk full"
    # The retry wrote the step that failed: nothing the run did is lost.
    roles = [m.role for m in store.messages.transcript(store.scalar("SELECT thread_id FROM runs"))]
    assert roles == ["user", "assistant", "tool"]


def test_a_store_that_keeps_failing_drops_the_step_and_still_marks_the_run_failed() -> None:
    store = FlakyStore(fail_from=2, failures=2)
    with pytest.raises(OSError, match="disk full"):
        _two_step_agent(store).run_sync("go")
    (run,) = store.query("SELECT status, error FROM runs")
    assert run["status"] == "failed"
    assert run["error"].startswith("OSError: disk full [the step's rows could not be stored")
    assert "dropped: 2 messages" in run["error"]


class Exploding(Middleware):
    name = "exploding"

    async def after_model(self, state: RunState, response: Any) -> None:
        raise RuntimeError(f"middleware bug {LONE}")


def test_an_exception_in_the_loop_marks_the_run_failed_with_its_error() -> None:
    store = Store(":memory:")
    agent = create_agent(ScriptedModel(["hi"]), store=store, memory=(), middleware=[Exploding()])
    with pytest.raises(RuntimeError):
        agent.run_sync("go")
    (run,) = store.query("SELECT status, error FROM runs")
    assert run == {"status": "failed", "error": "RuntimeError: middleware bug \ufffd"}
    assert [
        m.role for m in store.messages.transcript(store.scalar("SELECT thread_id FROM runs"))
    ] == [
        "user",
        "assistant",
    ]


def test_a_message_that_needs_no_repair_is_the_same_object() -> None:
    msg = Message(role="user", content="plain caf\u00e9 \U0001f600")
    assert store_module.storable_message(msg) == (msg, {})
    assert store_module.storable_message(msg)[0] is msg


def test_a_row_is_repaired_in_the_columns_that_need_it_and_no_other() -> None:
    class Text(str):
        pass

    msg = assistant(Text(f"a{LONE}"), [ToolCall("c1", "t", {"k": "\U0001f600"})])
    row = message_row(msg, thread_id="t", seq=1, run_id="r\u00e9", step=0, tokens=1)
    fixed, repairs = store_module.storable_row("messages", row)
    assert repairs == {"content": 1}  # an escaped pair in JSON and "\\u" in text are kept
    assert fixed[7] == "a\ufffd" and fixed[:7] == row[:7] and fixed[8:] == row[8:]
    plain = message_row(assistant("ok"), thread_id="t", seq=2, run_id="r", step=0, tokens=1)
    assert store_module.storable_row("messages", plain) == (plain, {})
    assert store_module.storable_row("messages", plain)[0] is plain
    # Columns past the table's names are named by position.
    assert store_module.storable_row("messages", (*plain, f"x{LONE}"))[1] == {"17": 1}


def test_a_plain_message_is_kept_and_any_odd_text_in_it_is_still_repaired() -> None:
    plain = assistant("all ascii")
    assert store_module.storable_message(plain) == (plain, {})
    assert store_module.storable_message(plain)[0] is plain
    for field in ("content", "full_content", "name", "tool_call_id"):
        odd = replace(plain, **{field: f"x{LONE}"})
        fixed, repairs = store_module.storable_message(odd)
        assert repairs == {field: 1} and getattr(fixed, field) == "x\ufffd"
    fixed, repairs = store_module.storable_message(replace(plain, meta={"k": f"v{LONE}"}))
    assert repairs == {"meta": 1} and fixed.meta == {"k": "v\ufffd"}
