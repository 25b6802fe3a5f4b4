"""The agent loop as a specification: order of hooks, concurrency, errors, persistence."""

import asyncio
import sys
import threading
import time

import pytest
from helpers.windows import RecordingRunner

from harness import ContextOverflowError, Middleware, Store, create_agent, tool
from harness.errors import HarnessError
from harness.messages import ModelResponse, Usage
from harness.middleware.base import ModelRequest, ToolCallRequest
from harness.models import FunctionModel, ScriptedModel, call, reply
from harness.profiles import get_profile


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


def make(model, tools=(add,), **kw):
    return create_agent(
        model, list(tools), store=Store(":memory:"), strategy="none", file_tools=False,
        strategy_params={"subagents.general_purpose": False}, **kw,
    )  # fmt: skip


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


def test_tool_calls_from_one_message_run_concurrently() -> None:
    started: list[int] = []
    all_started = asyncio.Event()

    @tool
    async def slow(n: int) -> str:
        """Wait until every call of the message has started."""
        started.append(n)
        if len(started) == 5:
            all_started.set()
        await asyncio.wait_for(all_started.wait(), 5)
        return str(n)

    model = ScriptedModel([reply("", *(call("slow", n=i) for i in range(5))), "done"])
    result = make(model, tools=(slow,)).run_sync("go")
    assert [m.content for m in result.messages if m.role == "tool"] == ["0", "1", "2", "3", "4"]


def test_sync_tools_run_in_threads_beside_each_other_and_the_event_loop() -> None:
    both_in = threading.Barrier(2, timeout=5)  # breaks unless both calls are in at once
    loop_ran = threading.Event()

    @tool
    def meet(n: int) -> str:
        """Wait for the sibling call."""
        both_in.wait()
        return f"met {n}"

    @tool
    def wait_for_loop() -> str:
        """Wait until an async tool has run on the event loop."""
        return "loop ran" if loop_ran.wait(5) else "loop blocked"

    @tool
    async def on_loop() -> str:
        """Run on the event loop."""
        loop_ran.set()
        return "set"

    model = ScriptedModel(
        [
            reply("", call("meet", n=1), call("meet", n=2), call("wait_for_loop"), call("on_loop")),
            "done",
        ]
    )
    result = make(model, tools=(meet, wait_for_loop, on_loop)).run_sync("go")
    assert [m.content for m in result.messages if m.role == "tool"] == [
        "met 1", "met 2", "loop ran", "set",
    ]  # fmt: skip


def test_a_hung_tool_times_out_and_the_model_gets_the_error() -> None:
    release = threading.Event()

    @tool
    def hang(query: str) -> str:
        """Never answers in time."""
        release.wait(10)
        return "late"

    @tool
    async def nap() -> str:
        """Sleeps too long."""
        await asyncio.sleep(10)
        return "rested"

    @tool(timeout=30)
    async def patient() -> str:
        """Takes longer than the agent's limit, within its own."""
        await asyncio.sleep(0.3)
        return "worth the wait"

    model = ScriptedModel(
        [reply("", call("hang", query="x"), call("nap"), call("patient"), call("add", a=1, b=2)),
         "carried on"]
    )  # fmt: skip
    agent = make(model, tools=(hang, nap, patient, add), tool_timeout_s=0.2)
    try:
        result = agent.run_sync("go")
    finally:
        release.set()
    assert result.status == "completed" and result.output == "carried on"
    tool_messages = [m for m in result.messages if m.role == "tool"]
    texts = [m.content for m in tool_messages]
    assert texts[0].startswith("Error: tool 'hang' did not finish within its time limit of 0.2 s")
    assert texts[1].startswith("Error: tool 'nap' did not finish within its time limit of 0.2 s")
    assert "abandoned" in texts[0] and "cancelled" in texts[1]  # a thread cannot be stopped
    assert texts[2:] == ["worth the wait", "3"]
    assert [m.is_error for m in tool_messages] == [True, True, False, False]


def test_an_agent_refuses_a_bad_tool_limit() -> None:
    with pytest.raises(HarnessError, match="tool_timeout_s must be a positive number"):
        make(ScriptedModel([]), tool_timeout_s=0)


def test_a_sync_tool_cancelled_with_its_run_ends_before_the_run_returns() -> None:
    started = threading.Event()
    finished: list[int] = []

    @tool
    def write_late(n: int) -> str:
        """Take a while, then note completion (as a store write would land)."""
        started.set()
        time.sleep(0.3)
        finished.append(n)
        return str(n)

    class FailOnceTheOtherStarted(Middleware):
        name = "fail-once-started"

        async def wrap_tool_call(self, request, handler):
            if request.call.arguments["n"] == 0:
                assert await asyncio.to_thread(started.wait, 10)
                raise RuntimeError("middleware bug")
            return await handler(request)

    model = ScriptedModel([reply("", call("write_late", n=0), call("write_late", n=1))])
    agent = make(model, tools=(write_late,), middleware=[FailOnceTheOtherStarted()])
    with pytest.raises(RuntimeError, match="middleware bug"):
        agent.run_sync("go")
    # its thread could not be stopped, so the run waited for it rather than end under it
    assert finished == [1]


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


def test_a_failing_middleware_cancels_the_sibling_tool_calls() -> None:
    finished: list[int] = []
    started, cancelled = asyncio.Event(), asyncio.Event()

    @tool
    async def slow(n: int) -> str:
        """Sleep, then note completion."""
        started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        finished.append(n)
        return str(n)

    class FailFirst(Middleware):
        name = "fail-first"

        async def wrap_tool_call(self, request, handler):
            if request.call.arguments["n"] == 0:
                await started.wait()  # the sibling is running: its cancellation is observable
                raise RuntimeError("middleware bug")
            return await handler(request)

    model = ScriptedModel([reply("", call("slow", n=0), call("slow", n=1))])
    agent = make(model, tools=(slow,), middleware=[FailFirst()])

    async def caller_keeps_its_loop_running() -> None:
        with pytest.raises(RuntimeError, match="middleware bug"):
            await agent.run("go")
        await asyncio.wait_for(cancelled.wait(), 10)

    asyncio.run(caller_keeps_its_loop_running())
    assert finished == []


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
