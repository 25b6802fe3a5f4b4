"""Middleware overhead per step at 100k-token contexts: each strategy's full stack against none.

Run with `uv run pytest tests/benchmarks/test_middleware_overhead.py --benchmark-only`.
One round = one agent step without the model: a new ~1k-token tool result enters a window of
~100k tokens, then every before_model hook, the commit, and the whole wrap_model_call chain
down to a model that answers instantly. The model's window is 1M tokens so no trigger fires:
this is the price of checking every step. Masking is measured in its steady state (older
results already masked, one more masked per step). A separate case times one summarization
cycle at 100k tokens with an instant summarizer: history file append, chunking, bookkeeping.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from functools import partial

import pytest

from harness import Store, create_agent
from harness.messages import Message, ModelResponse, ToolCall, assistant, tool_result, user
from harness.middleware.base import Middleware, ModelHandler, ModelRequest, overrides
from harness.middleware.summarization import Summarization
from harness.models import FunctionModel
from harness.profiles import ModelProfile
from harness.state import RunState
from harness.tokens import TokenCounter

ROOMY = ModelProfile(name="bench", context_window=1_000_000)
TARGET_TOKENS = 100_000
WORDS = ["revenue", "Acme", "Q3", "growth", "12.5%", "market", "share", "EMEA", "units", "EUR"]
_ids = itertools.count()


def tool_step(size_lines: int = 60) -> list[Message]:
    n = next(_ids)
    call = ToolCall(f"call_{n}", "fetch", {"page": n})
    text = "\n".join(
        f"row {n}.{i}: " + " ".join(WORDS[(n + i + j) % len(WORDS)] for j in range(12))
        for i in range(size_lines)
    )
    return [assistant("", [call]), tool_result(call, text)]


def hundred_k_window() -> list[Message]:
    counter = TokenCounter()
    window = [user("Study the five companies and draft the Monday report.")]
    while counter.count_messages(window) < TARGET_TOKENS:
        window += tool_step()
    return window


BASE = hundred_k_window()


def chain(stack: Sequence[Middleware], inner: ModelHandler) -> ModelHandler:
    handler = inner
    for mw in reversed([m for m in stack if overrides(m, "wrap_model_call")]):
        handler = partial(mw.wrap_model_call, handler=handler)
    return handler


async def instant(request: ModelRequest) -> ModelResponse:
    return ModelResponse(text="ok")


def new_state(agent, window: list[Message]) -> RunState:
    state = RunState(
        config=agent.config(), run_id=f"run_{next(_ids)}", thread_id=f"t_{next(_ids)}",
        store=agent.store, steps=agent.step_runner, counter=agent.counter,
    )  # fmt: skip
    state.restore(window, len(window) + 1)
    return state


async def one_step(agent, state: RunState, handler: ModelHandler) -> None:
    for mw in agent.middleware:
        if overrides(mw, "before_model"):
            await mw.before_model(state)
    state.flush()
    request = ModelRequest(
        state, tuple(state.messages), agent.system_prompt, agent.tools,
        agent.settings, messages_tokens=state.window_tokens,
    )  # fmt: skip
    await handler(request)


@pytest.mark.parametrize(
    "strategy", ["none", "truncate", "mask", "context-edit", "offload", "summarize", "full"]
)
def test_overhead_per_step_at_100k_tokens(benchmark, strategy: str) -> None:
    params = {"context-edit": {"context-edit.trigger": 0.9}}.get(strategy)
    agent = create_agent(
        FunctionModel(lambda m, p: "ok", profile=ROOMY), store=Store(":memory:"),
        strategy=strategy, strategy_params=params, system_prompt="You analyse competitors.",
    )  # fmt: skip
    handler = chain(agent.middleware, instant)
    loop = asyncio.new_event_loop()
    # Steady state: whatever the stack does once to a fresh 100k window (masking) is done.
    warm = new_state(agent, list(BASE))
    loop.run_until_complete(one_step(agent, warm, handler))
    steady = list(warm.messages)

    def setup():
        state = new_state(agent, steady)
        for mw in agent.middleware:
            if overrides(mw, "before_agent"):
                loop.run_until_complete(mw.before_agent(state))
        state.flush()
        for m in tool_step():
            state.append(m)
        return (state,), {}

    def step(state: RunState) -> None:
        loop.run_until_complete(one_step(agent, state, handler))

    benchmark.extra_info["window_tokens"] = agent.counter.count_messages(steady)
    benchmark.pedantic(step, setup=setup, rounds=40, iterations=1, warmup_rounds=2)
    loop.close()


def test_one_summarization_cycle_at_100k_tokens(benchmark) -> None:
    summarizer = FunctionModel(
        lambda m, p: "summary", name="instant",
        profile=ModelProfile(name="instant", context_window=1_000_000),
    )  # fmt: skip
    profile = ModelProfile(name="bench", context_window=110_000)
    agent = create_agent(
        FunctionModel(lambda m, p: "ok", profile=profile), store=Store(":memory:"),
        strategy="summarize", strategy_params={"summarize.model": summarizer},
    )  # fmt: skip
    handler = chain([m for m in agent.middleware if isinstance(m, Summarization)], instant)
    loop = asyncio.new_event_loop()

    def setup():
        return (new_state(agent, [*BASE, user("next")]),), {}

    def cycle(state: RunState) -> None:
        loop.run_until_complete(one_step(agent, state, handler))
        assert state.messages[0].kind == "summary"

    benchmark.pedantic(cycle, setup=setup, rounds=10, iterations=1, warmup_rounds=1)
    loop.close()
