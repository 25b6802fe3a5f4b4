"""Helpers for loop and middleware tests: windows with tool-call groups, one model call driven
through a single middleware without the whole loop, and a step runner that records."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from harness.agent import Agent
from harness.messages import Message, ModelResponse, ToolCall, assistant, new_id, tool_result
from harness.middleware.base import Middleware, ModelRequest
from harness.models import FunctionModel
from harness.models.base import ModelSettings
from harness.profiles import ModelProfile
from harness.state import RunState
from harness.steps import InlineRunner
from harness.store import Store

T = TypeVar("T")


class RecordingRunner(InlineRunner):
    """Runs every step inline and records its name, in order."""

    def __init__(self) -> None:
        self.names: list[str] = []

    async def run(
        self, name: str, fn: Callable[..., Awaitable[T]], /, *args: Any, **kwargs: Any
    ) -> T:
        self.names.append(name)
        return await fn(*args, **kwargs)


def small_model(
    window: int | None = 4_000, reply: str = "summary of the earlier part"
) -> FunctionModel:
    """A model with a small window that answers every request with `reply`."""
    profile = ModelProfile(name="small", context_window=window)
    return FunctionModel(lambda messages, params: reply, name="small", profile=profile)


def tool_group(contents: Sequence[str], name: str = "search") -> list[Message]:
    """An assistant message calling `name` once per content, then the results in order."""
    calls = [ToolCall(new_id("call"), name, {"q": i}) for i in range(len(contents))]
    return [
        assistant("", calls),
        *(tool_result(c, text) for c, text in zip(calls, contents, strict=True)),
    ]


def make_state(
    middleware: Middleware,
    window: Sequence[Message],
    *,
    model: FunctionModel | None = None,
    store: Store | None = None,
    thread_id: str | None = None,
) -> RunState:
    agent = Agent(
        model=model or small_model(),
        tools=(),
        system_prompt="",
        middleware=[middleware],
        store=store or Store(":memory:"),
        name="test",
        max_steps=10,
        settings=ModelSettings(),
        step_runner=InlineRunner(),
    )
    state = RunState(
        config=agent.config(),
        run_id=new_id("run"),
        thread_id=thread_id or new_id("thread"),
        store=agent.store,
        steps=agent.step_runner,
        counter=agent.counter,
    )
    for m in window:
        state.append(m)
    state.flush()
    return state


def model_call(
    middleware: Middleware,
    state: RunState,
    *,
    system_prompt: str = "",
    fail_first: BaseException | None = None,
) -> ModelRequest:
    """Run the middleware's before_model and wrap_model_call once; returns the request that
    reached the (fake) model. `fail_first` is raised by the model the first time."""
    seen: list[ModelRequest] = []

    async def handler(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        if fail_first is not None and len(seen) == 1:
            raise fail_first
        return ModelResponse(text="ok")

    async def go() -> None:
        await middleware.before_model(state)
        request = ModelRequest(
            state=state,
            messages=tuple(state.messages),
            system_prompt=system_prompt,
            tools=tuple(middleware.tools),
            settings=ModelSettings(),
        )
        await middleware.wrap_model_call(request, handler)

    asyncio.run(go())
    state.flush()
    return seen[-1]
