"""The agent loop, top to bottom.

    before_agent
    repeat until the model stops calling tools, or max_steps model calls:
        before_model -> commit the step -> wrap_model_call(model) -> after_model
        run the tool calls concurrently, each through wrap_tool_call(tool)
    after_agent (reverse order) -> commit

Model errors raise; tool errors go back to the model as text.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Generator, Sequence
from functools import partial
from typing import Any, cast

from harness.messages import Message, ModelResponse, tool_result
from harness.middleware.base import (
    Middleware,
    ModelHandler,
    ModelRequest,
    ToolCallRequest,
    ToolHandler,
    overrides,
)
from harness.models.base import RequestParams
from harness.state import RunState
from harness.tools import Tool, ToolContext, ToolError

# How long a step's tools may run before a store kept open for the step (`Store.keep_open`)
# lets the file go: most tools finish well inside it, a hung one keeps other processes out.
TOOLS_KEEP_S = 0.1


async def run_loop(state: RunState, stack: Sequence[Middleware], tools: Sequence[Tool]) -> str:
    """Drive one run with its middleware `stack` (outermost first) and `tools` to its end;
    returns the run status (`completed` or `max_steps`)."""
    config = state.config
    tools = tuple(tools)  # one tuple for every request: its schemas' token count is cached
    for mw in _having(stack, "before_agent"):
        await mw.before_agent(state)

    before_model, after_model = _having(stack, "before_model"), _having(stack, "after_model")
    call_model = _chain_model(stack, partial(_model_step, state))
    call_tool = _chain_tool(stack, partial(_tool_step, state, tools))
    by_name = {t.name: t for t in tools}
    status = "completed"
    while True:
        if state.step >= config.max_steps:
            # Checked before the hooks: preparing a call that will not be made is wasted work.
            status = "max_steps"
            break
        for mw in before_model:
            await mw.before_model(state)
        state.flush()  # everything before this model call is durable
        state.store.let_go()  # a store kept open for the step frees the file for the model call
        request = ModelRequest(
            state=state,
            messages=tuple(state.messages),
            system_prompt=config.system_prompt,
            tools=tools,
            settings=config.settings,
            messages_tokens=state.window_tokens,
        )
        response = await call_model(request)
        state.step += 1
        state.append(response.to_message())
        for mw in after_model:
            await mw.after_model(state, response)
        if not response.tool_calls:
            break
        requests = [
            ToolCallRequest(state=state, call=c, tool=by_name.get(c.name))
            for c in response.tool_calls
        ]
        results = await (_call_tool if len(requests) == 1 else _call_tools)(
            state, call_tool, requests
        )
        for message in results:
            state.append(message)

    for mw in reversed(_having(stack, "after_agent")):
        await mw.after_agent(state)
    state.flush()
    state.store.flush()  # the run's rows are in their tables before it is marked finished
    state.store.let_go()
    return status


async def _call_tool(
    state: RunState, call_tool: ToolHandler, requests: Sequence[ToolCallRequest]
) -> list[Message]:
    """A message's one tool call, awaited here rather than as a task (most steps make one
    call, most calls finish without waiting: no task, no pass of the event loop), in its own
    copy of the context as a task would run it; past TOOLS_KEEP_S the store is let go."""
    timer = asyncio.get_running_loop().call_later(TOOLS_KEEP_S, state.store.let_go)
    try:
        return [await _InContext(call_tool(requests[0]))]
    finally:
        timer.cancel()


async def _call_tools(
    state: RunState, call_tool: ToolHandler, requests: Sequence[ToolCallRequest]
) -> list[Message]:
    """A message's tool calls, run at once as tasks; past TOOLS_KEEP_S the store is let go."""
    tasks = [asyncio.ensure_future(call_tool(r)) for r in requests]
    try:
        _, slow = await asyncio.wait(tasks, timeout=TOOLS_KEEP_S)
        if slow:  # a slow or hung tool must not keep the file from other processes
            state.store.let_go()
        return await asyncio.gather(*tasks)
    except BaseException:
        # A middleware failure ends the run: stop the sibling calls instead of leaving
        # them running against a run already marked failed.
        for task in tasks:
            task.cancel()
        raise


class _InContext:
    """Awaits an awaitable (a coroutine) in a copy of the current context, as a task would
    run it, without the task: each of its steps runs in that copy, and what it waits on goes
    to the awaiting task as is (so timeouts and cancellation reach it as with `await coro`)."""

    def __init__(self, awaitable: Awaitable[Message]) -> None:
        self._steps = awaitable.__await__()
        self._context = contextvars.copy_context()

    def __await__(self) -> Generator[Any, Any, Message]:
        run, send, throw = self._context.run, self._steps.send, self._steps.throw
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                waiting = run(send, value) if error is None else run(throw, error)
            except StopIteration as done:
                return cast(Message, done.value)
            try:
                value, error = (yield waiting), None
            except BaseException as exc:  # cancellation, closing: the coroutine sees it
                value, error = None, exc


def _having(stack: Sequence[Middleware], hook: str) -> list[Middleware]:
    return [mw for mw in stack if overrides(mw, hook)]


def _chain_model(stack: Sequence[Middleware], inner: ModelHandler) -> ModelHandler:
    """The first middleware is outermost: it sees the request first and the response last."""
    handler = inner
    for mw in reversed(_having(stack, "wrap_model_call")):
        handler = partial(mw.wrap_model_call, handler=handler)
    return handler


def _chain_tool(stack: Sequence[Middleware], inner: ToolHandler) -> ToolHandler:
    handler = inner
    for mw in reversed(_having(stack, "wrap_tool_call")):
        handler = partial(mw.wrap_tool_call, handler=handler)
    return handler


async def _model_step(state: RunState, request: ModelRequest) -> ModelResponse:
    """The innermost model handler: one model call as the step `model`, recorded."""
    context_tokens = request.count_tokens()
    state.peak_context_tokens = max(state.peak_context_tokens, context_tokens)
    model = state.config.model
    params = RequestParams(system_prompt=request.system_prompt, tools=request.tool_schemas())
    start = time.perf_counter()
    response = await state.run_step(
        "model", model.request, request.messages, request.settings, params
    )
    state.record_model_call(
        model,
        response,
        context_tokens=context_tokens,
        latency_ms=state.elapsed_ms(start),
        encoding=state.counter.encoding_name,
    )
    return response


async def _tool_step(state: RunState, tools: tuple[Tool, ...], request: ToolCallRequest) -> Message:
    """The innermost tool handler: validate, run as the step `tool:<name>` within its time
    limit, catch errors."""
    call, tool = request.call, request.tool
    if tool is None:
        known = ", ".join(sorted(t.name for t in tools)) or "none"
        return tool_result(
            call, f"Error: unknown tool '{call.name}'. Available tools: {known}.", is_error=True
        )
    if call.raw_arguments is not None and not call.arguments:
        return tool_result(
            call,
            f"Error: arguments for '{call.name}' are not valid JSON: {call.raw_arguments[:500]!r}",
            is_error=True,
        )
    ctx = ToolContext(state=state, call=call, tools=tools)
    try:
        output = await state.run_step(
            f"tool:{call.name}", tool.run, call.arguments, ctx,
            default_timeout=state.config.tool_timeout_s,
        )  # fmt: skip
    except ToolError as exc:  # bad arguments, a timeout, SystemExit: worded for the model
        return tool_result(call, f"Error: {exc}", is_error=True)
    except Exception as exc:  # any tool failure is the model's to see and handle
        return tool_result(call, f"Error: {type(exc).__name__}: {exc}", is_error=True)
    return tool_result(call, output)
