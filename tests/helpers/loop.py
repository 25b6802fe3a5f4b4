"""The bare loop for the loop tests: an agent with no default middleware, two tools, and a
middleware that fails one tool call while its sibling runs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from harness import Middleware, Store, create_agent, tool
from harness.agent import Agent
from harness.tools import Tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


def make(model: Any, tools: Sequence[Tool] = (add,), **kw: Any) -> Agent:
    """An agent with none of the default middleware: the loop alone, around `tools`."""
    return create_agent(
        model, list(tools), store=Store(":memory:"), strategy="none", file_tools=False,
        strategy_params={"subagents.general_purpose": False}, **kw,
    )  # fmt: skip


class FailsCallZero(Middleware):
    """Raises "middleware bug" on the tool call whose `n` is 0, once `ready()` returns (its
    sibling call running by then); passes every other call on."""

    name = "fails-call-zero"

    def __init__(self, ready: Callable[[], Awaitable[object]]) -> None:
        self.ready = ready

    async def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        if request.call.arguments["n"] == 0:
            await self.ready()
            raise RuntimeError("middleware bug")
        return await handler(request)
