"""The loop's tool calls as a specification: the calls of one message run at once (sync tools
in threads), a tool past its time limit becomes an error result, and a run that fails cancels
its sibling calls and waits for the threads it cannot stop."""

import asyncio
import contextvars
import threading
import time
from typing import Any

import pytest
from helpers.loop import FailsCallZero, add, make

from harness import tool
from harness.errors import HarnessError
from harness.models import ScriptedModel, call, reply


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

    async def other_started() -> None:
        assert await asyncio.to_thread(started.wait, 10)

    model = ScriptedModel([reply("", call("write_late", n=0), call("write_late", n=1))])
    agent = make(model, tools=(write_late,), middleware=[FailsCallZero(other_started)])
    with pytest.raises(RuntimeError, match="middleware bug"):
        agent.run_sync("go")
    # its thread could not be stopped, so the run waited for it rather than end under it
    assert finished == [1]


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

    model = ScriptedModel([reply("", call("slow", n=0), call("slow", n=1))])
    # call 0 fails once its sibling is running, so the sibling's cancellation is observable
    agent = make(model, tools=(slow,), middleware=[FailsCallZero(started.wait)])

    async def caller_keeps_its_loop_running() -> None:
        with pytest.raises(RuntimeError, match="middleware bug"):
            await agent.run("go")
        await asyncio.wait_for(cancelled.wait(), 10)

    asyncio.run(caller_keeps_its_loop_running())
    assert finished == []


@pytest.mark.parametrize(("nap", "let_go_in_tools"), [(0.0, 0), (0.3, 1)])
def test_a_slow_steps_tools_let_the_store_go_and_a_fast_ones_do_not(
    nap: float, let_go_in_tools: int
) -> None:
    """A store kept open for a step (a flow run's) is let go while a step's tools run past
    TOOLS_KEEP_S, so a hung tool does not keep the file from other processes."""
    in_tools = threading.Event()
    during: list[bool] = []

    @tool
    async def work() -> str:
        """Take a while."""
        in_tools.set()
        await asyncio.sleep(nap)
        in_tools.clear()
        return "done"

    agent = make(ScriptedModel([reply("", call("work")), "ok"]), tools=(work,))
    let_go = agent.store.let_go

    def noted() -> None:
        during.append(in_tools.is_set())
        let_go()

    agent.store.let_go = noted  # type: ignore[method-assign]
    assert agent.run_sync("go").status == "completed"
    assert sum(during) == let_go_in_tools


def test_a_steps_one_tool_call_runs_without_a_task_in_its_own_context() -> None:
    """Most steps make one call that finishes without waiting: it costs no task (nor its
    passes of the event loop), yet runs in a copy of the context as a task would."""
    seen = contextvars.ContextVar("seen", default="unset")

    @tool
    async def mark(n: int) -> str:
        """Set a context variable; report what it was."""
        before = seen.get()
        seen.set(f"call {n}")
        return before

    model = ScriptedModel([reply("", call("mark", n=1)), reply("", call("mark", n=2)), "done"])
    agent = make(model, tools=(mark,))
    tasks: list[object] = []

    def counted(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Task[Any]:
        tasks.append(coro)
        return asyncio.Task(coro, loop=loop, **kw)

    async def run() -> str:
        asyncio.get_running_loop().set_task_factory(counted)
        result = await agent.run("go")
        asyncio.get_running_loop().set_task_factory(None)
        return seen.get() + "|" + ",".join(m.content for m in result.messages if m.role == "tool")

    assert asyncio.run(run()) == "unset|unset,unset"
    assert tasks == []


def test_a_single_slow_tool_call_still_lets_the_store_go_and_can_time_out() -> None:
    lets: list[int] = []

    @tool
    async def nap() -> str:
        """Sleeps past the step's keep-open time, then past its limit."""
        await asyncio.sleep(10)
        return "rested"

    agent = make(ScriptedModel([reply("", call("nap")), "carried on"]), tools=(nap,),
                 tool_timeout_s=0.3)  # fmt: skip
    let_go = agent.store.let_go
    agent.store.let_go = lambda: (lets.append(1), let_go())[1]  # type: ignore[method-assign]
    result = agent.run_sync("go")
    assert result.output == "carried on"
    texts = [m.content for m in result.messages if m.role == "tool"]
    assert texts[0].startswith("Error: tool 'nap' did not finish within its time limit of 0.3 s")
    assert len(lets) >= 3  # during the tool, before the next model call, at the run's end
