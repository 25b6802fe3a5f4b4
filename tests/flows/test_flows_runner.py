"""The Prefect step runner and the step journal."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from helpers.flows import task_runs_of
from prefect import flow
from prefect.context import FlowRunContext

from flows.journal import Journal, ensure_tables, is_journaled, step_key
from flows.runner import PrefectStepRunner, is_transient
from harness import ToolContext, create_agent
from harness.errors import ModelError
from harness.messages import ToolCall, assistant, user
from harness.models import FunctionModel, RequestParams, ScriptedModel
from harness.models.base import ModelSettings
from harness.store import Store


class HTTPError(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


def _raised_from(cause: BaseException) -> ModelError:
    try:
        raise ModelError("the provider failed") from cause
    except ModelError as exc:
        return exc


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (HTTPError(429), True),
        (HTTPError(503), True),
        (_raised_from(HTTPError(500)), True),  # the adapter's ModelError, raised from the SDK's
        (HTTPError(400), False),
        (ModelError("context overflow"), False),
        (TimeoutError("read timed out"), True),
        (ValueError("bad"), False),
    ],
)
def test_transient_errors_are_rate_limits_server_errors_and_timeouts(
    exc: BaseException, expected: bool
) -> None:
    assert is_transient(exc) is expected


def test_model_and_tool_steps_are_journaled_middleware_steps_are_not() -> None:
    assert is_journaled("model")
    assert is_journaled("tool:query_market_export")
    assert not is_journaled("summarize")
    assert not is_journaled("offload")


def test_step_keys_are_stable_and_tool_keys_are_call_ids() -> None:
    params = RequestParams(system_prompt="sys", tools=({"name": "t"},))
    window = (user("hello"), assistant("hi"))
    same = (user("hello"), assistant("hi"))  # new message ids, same content
    key = step_key("model", (window, ModelSettings(), params))
    assert key == step_key("model", (same, ModelSettings(), params))
    assert key != step_key("model", ((user("hello!"),), ModelSettings(), params))

    state: Any = object()
    call = ToolCall(id="call_7", name="t", arguments={"a": 1})
    ctx = ToolContext(state=state, call=call)
    assert step_key("tool:t", ({"a": 1}, ctx)) == "tool:t:call_7"


class CheckpointedModel:
    name = "stateful"

    def __init__(self) -> None:
        self.position = 0
        self.restored: Any = None

    def checkpoint(self) -> dict[str, int]:
        return {"position": self.position}

    def restore(self, state: dict[str, int]) -> None:
        self.restored = state


def test_journal_replays_each_result_once_and_restores_the_last_model_checkpoint(
    tmp_path: Any,
) -> None:
    store = Store(str(tmp_path / "j.duckdb"), hold=False)
    ensure_tables(store)
    first = Journal(store, "run_a")
    model = CheckpointedModel()
    for position, answer in ((1, "one"), (2, "two")):
        model.position = position
        first.record("model", "model:k", answer, "task-1", model=model)
    first.record("tool:t", "tool:t:c1", "tool output", "task-2")
    Journal(store, "run_b").record("tool:t", "tool:t:c1", "other run", None)

    again = Journal(store, "run_a", replay=True)
    assert [again.take("model:k").value, again.take("model:k").value] == ["one", "two"]
    assert again.take("model:k") is None
    assert again.take("tool:t:c1").value == "tool output"
    fresh = CheckpointedModel()
    assert again.restore_model(fresh)
    assert fresh.restored == {"position": 2}

    again.clear()
    assert Journal(store, "run_a", replay=True).remaining == 0
    assert Journal(store, "run_b", replay=True).remaining == 1


def test_model_steps_retry_on_rate_limits(prefect_server: object, db: str) -> None:
    model = ScriptedModel([HTTPError(429), HTTPError(503), "done"])
    runner = PrefectStepRunner(retry_delays=(0,))
    agent = create_agent(model, store=Store(db, hold=False), step_runner=runner, memory=())

    @flow
    async def one_run() -> str:
        return (await agent.run("go")).output

    assert asyncio.run(one_run()) == "done"
    assert len(model.calls) == 3
    assert runner.counts["model"] == 1  # one task, retried twice


def test_a_bad_request_is_not_retried(prefect_server: object, db: str) -> None:
    model = ScriptedModel([HTTPError(400), "never reached"])
    agent = create_agent(
        model, store=Store(db, hold=False), step_runner=PrefectStepRunner(retry_delays=(0,)),
        memory=(),
    )  # fmt: skip

    @flow
    async def one_run() -> str:
        return (await agent.run("go")).output

    with pytest.raises(HTTPError):
        asyncio.run(one_run())
    assert len(model.calls) == 1


def test_steps_outside_a_task_have_no_step_id() -> None:
    assert PrefectStepRunner().current_step_id() is None


def test_events_record_the_task_run_of_the_step_that_acted(prefect_server: object, db: str) -> None:
    seen: list[str | None] = []
    runner = PrefectStepRunner()

    async def act(tag: str) -> str:
        seen.append(runner.current_step_id())
        return tag

    @flow
    async def steps() -> list[str]:
        return [await runner.run("summarize", act, "a"), await runner.run("offload", act, "b")]

    assert asyncio.run(steps()) == ["a", "b"]
    assert all(seen) and len(set(seen)) == 2
    assert dict(runner.counts) == {"summarize": 1, "offload": 1}


def test_tools_run_as_tasks_and_return_their_output(prefect_server: object, db: str) -> None:
    from harness.models import call, reply
    from harness.tools import tool

    @tool
    def shout(text: str) -> str:
        """Shout.

        Args:
            text: what to shout.
        """
        return text.upper()

    def respond(messages: Any, params: RequestParams) -> Any:
        if messages[-1].role == "tool":
            return f"got {messages[-1].content}"
        return reply("", call("shout", text="hi"))

    runner = PrefectStepRunner()
    agent = create_agent(
        FunctionModel(respond), [shout], store=Store(db, hold=False), step_runner=runner,
        memory=(),
    )  # fmt: skip

    @flow
    async def one_run() -> str:
        return (await agent.run("go")).output

    assert asyncio.run(one_run()) == "got HI"
    assert runner.counts["tool:shout"] == 1
    assert runner.counts["model"] == 2


def test_a_long_flow_has_every_task_run_on_the_server(prefect_server: object) -> None:
    """Ephemeral mode kept 12-18 of 200 task runs; a long-lived server keeps them all."""
    runner = PrefectStepRunner()

    async def act(i: int) -> int:
        return i

    @flow
    async def many() -> str:
        for i in range(200):
            await runner.run("offload" if i % 2 else "summarize", act, i)
        return str(FlowRunContext.get().flow_run.id)

    flow_run_id = asyncio.run(many())
    recorded = task_runs_of(flow_run_id, expected=200)
    assert len(recorded) == 200
    assert Counter(t.name.rsplit(" #", 1)[0] for t in recorded) == {
        "summarize": 100,
        "offload": 100,
    }


def test_the_model_tasks_retry_delay_is_a_number_the_ui_can_show() -> None:
    runner = PrefectStepRunner()
    # A list shows as "Retry Delay NaNs" on the task page.
    assert runner._task("model").retry_delay_seconds == 10
    assert PrefectStepRunner(retry_delays=(1, 5)).retry_delay == [1, 5]
