"""The agent loop as a specification: order of hooks, concurrency, errors, persistence."""

import asyncio
import sys

import pytest
from helpers.loop import add, explode, make
from helpers.windows import RecordingRunner

from harness import ContextOverflowError, Middleware, Store, tool
from harness.messages import ModelResponse, Usage
from harness.middleware.base import ModelRequest, ToolCallRequest
from harness.models import FunctionModel, ScriptedModel, call, reply
from harness.profiles import get_profile


def test_tool_turn_then_final_answer_is_persisted() -> None:
    model = ScriptedModel([reply("adding", call("add", "c1", a=2, b=3)), "The sum is 5."])
    agent = make(model)
    result = agent.run_sync("Add 2 and 3", thread_id="t")
    model.assert_complete()
    assert result.status == "completed"
    assert result.output == "The sum is 5."
    assert [(m.role, m.content) for m in result.messages] == [
        ("user", "Add 2 and 3"),
        ("assistant", "adding"),
        ("tool", "5"),
        ("assistant", "The sum is 5."),
    ]
    rows = agent.store.messages.rows("t")
    assert [r["role"] for r in rows] == ["user", "assistant", "tool", "assistant"]
    run = agent.store.runs.get(result.run_id)
    assert run["status"] == "completed" and run["steps"] == 2
    assert run["input_tokens"] == result.usage.input_tokens > 0
    assert run["cost_usd"] == pytest.approx(result.usage.cost_usd)
    calls = sorted(agent.store.usage.rows(), key=lambda c: c["step"])
    assert [c["step"] for c in calls] == [0, 1]
    assert all(c["encoding"] == "cl100k_base" for c in calls)


def test_tool_errors_and_bad_calls_reach_the_model_as_text() -> None:
    model = ScriptedModel(
        [
            reply("", call("explode", reason="x"), call("add", a="two"), call("nope")),
            "ok",
        ]
    )
    result = make(model, tools=(add, explode)).run_sync("go")
    texts = [m.content for m in result.messages if m.role == "tool"]
    assert texts[0] == "Error: RuntimeError: boom: x"
    assert texts[1].startswith("Error: invalid arguments for tool 'add': a: Input should be")
    assert texts[2] == "Error: unknown tool 'nope'. Available tools: add, explode."
    assert all(m.is_error for m in result.messages if m.role == "tool")


def test_system_exit_in_a_tool_is_an_error_result_not_the_end_of_the_run() -> None:
    @tool
    def quit_sync() -> str:
        """Exit the process."""
        sys.exit(2)

    @tool
    async def quit_async() -> str:
        """Exit the process, asynchronously."""
        raise SystemExit("bye")

    model = ScriptedModel([reply("", call("quit_sync"), call("quit_async")), "still here"])
    result = make(model, tools=(quit_sync, quit_async)).run_sync("go")
    assert result.status == "completed" and result.output == "still here"
    texts = [m.content for m in result.messages if m.role == "tool"]
    assert texts[0].startswith("Error: tool 'quit_sync' tried to exit the process (SystemExit(2))")
    assert texts[1].startswith("Error: tool 'quit_async' tried to exit the process")


def test_model_errors_raise_and_the_run_is_marked_failed() -> None:
    model = ScriptedModel([ContextOverflowError("prompt is too long")])
    agent = make(model)
    with pytest.raises(ContextOverflowError):
        agent.run_sync("hello", thread_id="t")
    (run,) = agent.store.runs.all()
    assert run["status"] == "failed" and "prompt is too long" in run["error"]
    # what happened before the failure is stored
    assert len(agent.store.messages.rows()) == 1


def test_max_steps_stops_the_loop() -> None:
    model = FunctionModel(lambda msgs, params: reply("", call("add", a=1, b=1)))
    result = make(model, max_steps=3).run_sync("loop forever")
    assert result.status == "max_steps"
    assert result.steps == 3


def test_hooks_run_in_order_and_wrap_from_the_outside_in() -> None:
    log: list[str] = []

    class Recorder(Middleware):
        def __init__(self, tag: str) -> None:
            self.name = tag

        async def before_agent(self, state):
            log.append(f"{self.name}.before_agent")

        async def before_model(self, state):
            log.append(f"{self.name}.before_model")

        async def wrap_model_call(self, request: ModelRequest, handler):
            log.append(f"{self.name}.wrap_model>")
            response = await handler(request)
            log.append(f"{self.name}.wrap_model<")
            return response

        async def after_model(self, state, response):
            log.append(f"{self.name}.after_model")

        async def wrap_tool_call(self, request: ToolCallRequest, handler):
            log.append(f"{self.name}.wrap_tool")
            return await handler(request)

        async def after_agent(self, state):
            log.append(f"{self.name}.after_agent")

    model = ScriptedModel([reply("", call("add", a=1, b=2)), "3"])
    make(model, middleware=[Recorder("a"), Recorder("b")]).run_sync("go")
    turn = ["a.before_model", "b.before_model", "a.wrap_model>", "b.wrap_model>",
            "b.wrap_model<", "a.wrap_model<", "a.after_model", "b.after_model"]  # fmt: skip
    assert log == [
        "a.before_agent", "b.before_agent",
        *turn, "a.wrap_tool", "b.wrap_tool",
        *turn,
        "b.after_agent", "a.after_agent",
    ]  # fmt: skip


def test_request_override_changes_what_the_model_sees() -> None:
    class Shout(Middleware):
        name = "shout"

        async def wrap_model_call(self, request, handler):
            return await handler(request.override(system_prompt=request.system_prompt.upper()))

    model = ScriptedModel(["fine"])
    make(model, middleware=[Shout()], system_prompt="be brief").run_sync("hi")
    assert model.calls[0].params.system_prompt.startswith("BE BRIEF")


def test_step_runner_sees_every_model_and_tool_step() -> None:
    runner = RecordingRunner()
    model = ScriptedModel([reply("", call("add", a=1, b=2), call("add", a=3, b=4)), "done"])
    make(model, step_runner=runner).run_sync("go")
    assert runner.names == ["model", "tool:add", "tool:add", "model"]


def test_a_thread_continues_from_its_last_window() -> None:
    model = ScriptedModel(["first answer", "second answer"])
    agent = make(model)
    agent.run_sync("first question", thread_id="weekly")
    second = agent.run_sync("second question", thread_id="weekly")
    assert [m.content for m in model.calls[1].messages] == [
        "first question", "first answer", "second question",
    ]  # fmt: skip
    assert [m.content for m in second.messages] == ["second question", "second answer"]
    seqs = agent.store.messages.rows("weekly")
    assert [r["seq"] for r in seqs] == [1, 2, 3, 4]


def test_usage_accumulates_provider_reported_tokens_and_cost() -> None:
    reported = Usage(input_tokens=1_000, output_tokens=100, cached_tokens=800, requests=1)
    model = ScriptedModel(
        [ModelResponse(text="hi", usage=reported)],
        name="openai:gpt-6.2-sol",
        profile=get_profile("openai:gpt-6.2-sol"),
    )
    result = make(model).run_sync("hello")
    # 200 uncached at $2/M + 800 cached at $0.10/M + 100 output at $10/M
    assert result.usage.cost_usd == pytest.approx((200 * 2 + 800 * 0.1 + 100 * 10) / 1e6)
    assert result.usage.cached_tokens == 800


def test_two_window_rewrites_in_one_step_resume_as_the_last_one() -> None:
    class KeepLast(Middleware):
        name = "keep-last"

        async def before_model(self, state):
            if len(state.messages) > 2:
                state.replace_window(state.messages[1:], reason="first")
                state.replace_window(state.messages[-1:], reason="second")

    model = ScriptedModel(["a", "b", "c"])
    agent = make(model, middleware=[KeepLast()])
    agent.run_sync("one", thread_id="t")
    agent.run_sync("two", thread_id="t")
    rows = agent.store.query("SELECT reason, message_ids FROM windows")
    assert [r["reason"] for r in rows] == ["first+second"]
    assert [m.content for m in agent.store.load_window("t")] == ["two", "b"]


def test_a_run_needs_only_its_frozen_config_its_middleware_and_its_tools() -> None:
    """No Agent: what the middleware and the tools read of the run comes from `RunConfig`
    (the guard's window, the model) and `ToolContext.tools`."""
    from dataclasses import FrozenInstanceError, replace

    from harness import ToolContext
    from harness.config import RunConfig
    from harness.middleware.guard import ContextGuard
    from harness.models.base import ModelSettings
    from harness.profiles import ModelProfile
    from harness.run import run_agent
    from harness.steps import InlineRunner
    from harness.tokens import TokenCounter

    seen: dict[str, object] = {}

    @tool
    def offered(ctx: ToolContext) -> str:
        """Names the tools the run offers."""
        seen["window"] = ctx.state.config.context_window
        return ", ".join(t.name for t in ctx.tools)

    profile = ModelProfile(name="tiny", context_window=2_000)
    model = ScriptedModel([reply("", call("offered", "c1")), "done"], profile=profile)
    config = RunConfig(
        name="bare", model=model, system_prompt="", settings=ModelSettings(), max_steps=5,
        store=Store(":memory:"), step_runner=InlineRunner(), counter=TokenCounter(),
        tool_timeout_s=None,
    )  # fmt: skip
    with pytest.raises(FrozenInstanceError):
        config.max_steps = 6  # type: ignore[misc]
    result = asyncio.run(run_agent(config, [ContextGuard()], (offered, add), "go"))
    assert result.status == "completed"
    assert result.messages[2].content == "offered, add"
    assert seen["window"] == 2_000
    small = replace(config, model=ScriptedModel([], profile=replace(profile, context_window=5)))
    with pytest.raises(ContextOverflowError, match="5-token window of scripted"):
        asyncio.run(run_agent(small, [ContextGuard()], (), "more than five tokens, surely"))
