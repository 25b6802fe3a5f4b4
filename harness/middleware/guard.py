"""The innermost middleware: refuses a request larger than the model's window before it is
sent, and measures exactly what reaches the model.

Without compaction (`strategy="none"`) an over-window request is a failure, and failing here
costs nothing, where the provider would bill or rate-limit the rejected call first. The
measurement serves the compaction middleware further out: middleware inside them (memory, user
middleware) still add to the system prompt, so each learns from the last call how many tokens
were added after it looked (`with_inner` / `learn_inner`). A provider-side overflow from a
tokenizer mismatch still raises `ContextOverflowError` from the adapter, as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.errors import ContextOverflowError
from harness.messages import ModelResponse
from harness.middleware.base import Middleware, ModelHandler, ModelRequest
from harness.middleware.params import whole_or_none

if TYPE_CHECKING:
    from harness.state import RunState


class ContextGuard(Middleware):
    """Raises `ContextOverflowError` instead of sending a request over the model's window."""

    name = "guard"

    def __init__(self, window: int | None = None) -> None:
        """window: the limit in tokens; None (default) uses the model profile's window, and
        an unknown window disables the check."""
        self.window = whole_or_none("guard.window", window, minimum=1)

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        state = request.state
        tokens = request.count_tokens()
        state.scratch.setdefault(self.name, {})["request_tokens"] = tokens
        limit = self.window or request.context_window
        if limit is not None and tokens > limit:
            state.event(
                self.name, "wrap_model_call", "overflow",
                tokens_before=tokens, detail={"limit": limit, "messages": len(request.messages)},
            )  # fmt: skip
            raise ContextOverflowError(
                f"request of {tokens:,} tokens exceeds the {limit:,}-token window of "
                f"{state.config.model.name}",
                tokens=tokens,
                limit=limit,
            )
        return await handler(request)


def with_inner(state: RunState, owner: str, tokens: int) -> int:
    """`tokens` counted by `owner` plus what the middleware inside it added last time."""
    return tokens + state.scratch.get(owner, {}).get("inner_tokens", 0)


def learn_inner(state: RunState, owner: str, passed: int) -> None:
    """After a call: how many tokens the middleware inside `owner` added to the `passed`
    tokens it handed on (known when a `ContextGuard` measured the final request)."""
    measured = state.scratch.get(ContextGuard.name, {}).get("request_tokens")
    if measured is not None:
        state.scratch.setdefault(owner, {})["inner_tokens"] = max(0, measured - passed)
