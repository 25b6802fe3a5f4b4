"""Truncation, the lossy baseline: keep the newest messages that fit a token budget.

Before each model call, when the whole request (system prompt, tool schemas, messages) is over
`budget`, the oldest messages leave the window, cut only where no tool call is separated from
its result. A one-line notice opens the window saying how many messages were dropped (it also
keeps the window starting with a user turn, which some providers require). Nothing is kept
anywhere the model can reach again; the transcript in the store keeps everything.
"""

from __future__ import annotations

import time

from harness.messages import Message, ModelResponse
from harness.middleware.base import Middleware, ModelHandler, ModelRequest
from harness.middleware.cutoff import (
    Threshold,
    ThresholdSpec,
    fill,
    safe_at_or_after,
    safe_at_or_before,
    safe_cuts,
    tail_cut,
)
from harness.middleware.guard import learn_inner, with_inner
from harness.tokens import MESSAGE_OVERHEAD

NOTICE = (
    "[{dropped:,} earlier messages of this conversation were dropped to fit the context "
    "window; they cannot be retrieved.]"
)


class Truncate(Middleware):
    """Drops the oldest messages from the window once the request is over `budget`."""

    name = "truncate"

    def __init__(
        self,
        budget: ThresholdSpec = 0.85,
        *,
        notice: str | None = NOTICE,
        fallback_window: int = 170_000,
    ) -> None:
        """Parameters:
        budget: the most the request may hold: a fraction of the model's window (default 0.85,
            the point where summarization would fire), tokens, or ("messages", N) to keep the
            last N messages.
        notice: the text opening a truncated window (`{dropped}` is filled in); None for none.
        fallback_window: the window a fraction applies to when the model's is unknown.
        """
        self.budget = Threshold.parse(budget)
        self.notice = notice
        self.fallback_window = fallback_window

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        state = request.state
        tokens = with_inner(state, self.name, request.count_tokens())
        cut = self._cut(request, tokens)
        if cut:
            request = await state.run_step("truncate", self._truncate, request, cut, tokens)
        passed = request.count_tokens()
        try:
            return await handler(request)
        finally:
            learn_inner(state, self.name, passed)

    def _cut(self, request: ModelRequest, tokens: int) -> int:
        """How many leading window messages to drop (0: the request fits)."""
        messages = request.messages
        n = len(messages)
        ok = safe_cuts(messages)
        if self.budget.kind == "messages":
            keep = int(self.budget.value)
            if n <= keep:
                return 0
            cut = safe_at_or_after(ok, n - keep)
        else:
            window = request.state.agent.model.profile.context_window
            limit = self.budget.tokens(window, self.fallback_window) or 0
            if tokens <= limit:
                return 0
            counter = request.state.counter
            sizes = [counter.count_message(m) for m in messages]
            fixed = tokens - sum(sizes)  # system prompt, tools, framing, inner middleware
            notice = counter.count_text(self.notice or "") + MESSAGE_OVERHEAD
            cut = tail_cut(sizes, ok, max(limit - fixed - notice, 0))
        if cut == n and n:
            # Not even the last exchange fits: keep it anyway and let the model's window
            # decide, rather than send an empty conversation.
            cut = safe_at_or_before(ok, n - 1)
        notice_only = all(m.kind == "truncated" for m in messages[:cut])
        return 0 if notice_only else cut

    async def _truncate(self, request: ModelRequest, cut: int, tokens: int) -> ModelRequest:
        start = time.perf_counter()
        state = request.state
        dropped = [m for m in request.messages[:cut] if m.kind != "truncated"]
        earlier = sum(m.meta.get("dropped", 0) for m in request.messages[:cut])
        kept = [m for m in request.messages[cut:] if m.kind != "truncated"]
        total = earlier + len(dropped)
        window: list[Message] = kept
        if self.notice is not None:
            text = fill(self.notice, dropped=total)
            window = [Message("user", text, kind="truncated", meta={"dropped": total}), *kept]
        state.replace_window(window, reason="truncate")
        edited = request.override(messages=window, messages_tokens=state.window_tokens)
        state.event(
            self.name, "wrap_model_call", "truncated",
            tokens_before=tokens, tokens_after=with_inner(state, self.name, edited.count_tokens()),
            detail={"dropped": len(dropped), "dropped_total": total, "kept": len(kept),
                    "budget": str(self.budget)},
            ms=state.elapsed_ms(start),
        )  # fmt: skip
        return edited
