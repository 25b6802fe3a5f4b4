"""The middleware protocol: a class with no-op hooks around the agent loop.

Hooks, in the order the loop calls them:
  before_agent(state)                     once, before the first model call
  before_model(state)                     before every model call; may rewrite the window
  wrap_model_call(request, handler)       around every model call; may override the request
  after_model(state, response)            after every model call
  wrap_tool_call(request, handler)        around every tool call; may change the result
  after_agent(state)                      once, at the end of the run (reverse order)

A hook that changes something runs the change through `state.run_step(name, ...)`, so under
Prefect each acting hook is a task and a hook that does nothing creates none. Middleware may
also contribute tools (`tools`); `create_agent` adds them to the agent's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from harness.messages import Message, ModelResponse, ToolCall
from harness.models.base import ModelSettings
from harness.tools import Tool

if TYPE_CHECKING:
    from harness.state import RunState


# The tools whose schemas `ModelRequest.tool_schemas` gave last, and that tuple of schemas.
_LAST_SCHEMAS: tuple[tuple[Tool, ...], tuple[dict[str, Any], ...]] = ((), ())


@dataclass(frozen=True)
class ModelRequest:
    """One model call about to be made. Change it with `override`, never in place."""

    state: RunState
    messages: tuple[Message, ...]
    system_prompt: str
    tools: tuple[Tool, ...]
    settings: ModelSettings
    # Token total of `messages` when known (the loop passes the window's running total);
    # overriding the messages drops it so it is recounted.
    messages_tokens: int | None = field(default=None, repr=False)

    def override(self, **changes: Any) -> ModelRequest:
        if "messages" in changes:
            changes["messages"] = tuple(changes["messages"])
            changes.setdefault("messages_tokens", None)
        if "tools" in changes:
            changes["tools"] = tuple(changes["tools"])
        return replace(self, **changes)

    def with_system_section(self, section: str) -> ModelRequest:
        """The request with `section` added to the end of the system prompt after a blank
        line; unchanged when `section` is empty."""
        if not section:
            return self
        prompt = f"{self.system_prompt}\n\n{section}" if self.system_prompt else section
        # Made directly: `replace` looks the fields up again for each of a run's model calls.
        return ModelRequest(
            self.state, self.messages, prompt, self.tools, self.settings, self.messages_tokens
        )

    @property
    def context_window(self) -> int | None:
        """The model's window in tokens (None when unknown), from the run's configuration."""
        return self.state.config.context_window

    def tool_schemas(self) -> tuple[dict[str, Any], ...]:
        """The tools' schemas, one tuple for the same tools: a run's requests carry one tuple
        of tools (the loop's), each counted and sent a few times per call."""
        global _LAST_SCHEMAS
        tools, schemas = _LAST_SCHEMAS
        if tools is not self.tools:
            schemas = tuple(t.schema() for t in self.tools)
            _LAST_SCHEMAS = (self.tools, schemas)  # the tools held, so their id is not reused
        return schemas

    def count_tokens(self) -> int:
        """Tokens of the whole request: system prompt, tool schemas, messages, framing.
        Counted once per request: the middleware around one call each ask for it, and a
        changed request (`override`) is a new object."""
        return self._tokens

    @cached_property
    def _tokens(self) -> int:
        return self.state.counter.count_request(
            self.system_prompt, self.messages, self.tool_schemas(), self.messages_tokens
        )


@dataclass(frozen=True)
class ToolCallRequest:
    """One tool call about to run. `tool` is None when the model named an unknown tool."""

    state: RunState
    call: ToolCall
    tool: Tool | None

    def override(self, **changes: Any) -> ToolCallRequest:
        return replace(self, **changes)


ModelHandler = Callable[[ModelRequest], Awaitable[ModelResponse]]
ToolHandler = Callable[[ToolCallRequest], Awaitable[Message]]


class Middleware:
    """Base class: every hook is a no-op. Subclasses override what they need."""

    name: str = "middleware"
    tools: Sequence[Tool] = ()

    async def before_agent(self, state: RunState) -> None:
        return None

    async def before_model(self, state: RunState) -> None:
        return None

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        return await handler(request)

    async def after_model(self, state: RunState, response: ModelResponse) -> None:
        return None

    async def wrap_tool_call(self, request: ToolCallRequest, handler: ToolHandler) -> Message:
        return await handler(request)

    async def after_agent(self, state: RunState) -> None:
        return None


def overrides(mw: Middleware, hook: str) -> bool:
    """Whether `mw` defines `hook` itself; the loop skips inherited no-ops entirely."""
    return getattr(type(mw), hook) is not getattr(Middleware, hook)
