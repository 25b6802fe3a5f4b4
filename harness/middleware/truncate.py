"""Truncation, the lossy baseline: keep the newest messages, cutting rarely and deep.

Before each model call, when the whole request (system prompt, tool schemas, messages) is over
`trigger`, the oldest messages leave the window until it is down to `target`, cut only where no
tool call is separated from its result. Cutting well below the trigger (hysteresis) means the
window then grows for many steps untouched, so the provider's cached prefix survives until the
next cut; cutting just under the trigger would rewrite the window's head on every call. A
one-line notice opens the window; its text does not change from one cut to the next (the count
of dropped messages is kept in its metadata), and it keeps the window starting with a user
turn, which some providers require. Nothing is kept anywhere the model can reach again; the
transcript in the store keeps everything.
"""

from __future__ import annotations

import time

from harness.messages import Message, ModelResponse
from harness.middleware.base import Middleware, ModelHandler, ModelRequest
from harness.middleware.cutoff import (
    ThresholdSpec,
    fill,
    safe_at_or_after,
    safe_at_or_before,
    safe_cuts,
    tail_cut,
)
from harness.middleware.guard import learn_inner, with_inner
from harness.middleware.params import threshold, whole
from harness.tokens import MESSAGE_OVERHEAD

NOTICE = (
    "[Earlier messages of this conversation were dropped to fit the context window; they "
    "cannot be retrieved.]"
)


class Truncate(Middleware):
    """Once the request is over `trigger`, drops the oldest messages down to `target`."""

    name = "truncate"

    def __init__(
        self,
        trigger: ThresholdSpec = 0.85,
        target: ThresholdSpec = 0.5,
        *,
        notice: str | None = NOTICE,
        fallback_window: int = 170_000,
    ) -> None:
        """Parameters:
        trigger: the most the request may hold before a cut: a fraction of the model's window
            (default 0.85, the point where summarization would fire), tokens, or
            ("messages", N).
        target: what a cut leaves, in the same terms (default 0.5 of the window); at most
            `trigger`. Equal to `trigger`, every call past it cuts a little (and breaks the
            cached prefix each time).
        notice: the text opening a truncated window (`{dropped}`, the number of messages
            dropped so far, is filled in if present); None for none.
        fallback_window: the window a fraction applies to when the model's is unknown.
        """
        self.trigger = threshold("truncate.trigger", trigger)
        self.target = threshold("truncate.target", target)
        by_count = (self.trigger.kind == "messages", self.target.kind == "messages")
        if by_count[0] != by_count[1]:
            raise ValueError(
                "truncate's trigger and target must both be message counts or both token "
                f"amounts, got {self.trigger} and {self.target}"
            )
        if by_count[0] and self.target.value > self.trigger.value:
            raise ValueError(
                f"truncate's target ({self.target}) cannot keep more than its trigger "
                f"({self.trigger})"
            )
        self.notice = notice
        self.fallback_window = whole("truncate.fallback_window", fallback_window, minimum=1)

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
        if self.trigger.kind == "messages":
            if n <= int(self.trigger.value):
                return 0
            cut = safe_at_or_after(ok, n - int(self.target.value))
        else:
            window = request.context_window
            trigger = self.trigger.tokens(window, self.fallback_window) or 0
            if tokens <= trigger:
                return 0
            limit = min(self.target.tokens(window, self.fallback_window) or 0, trigger)
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
                    "trigger": str(self.trigger), "target": str(self.target)},
            ms=state.elapsed_ms(start),
        )  # fmt: skip
        return edited
