"""Context editing: past a token trigger, clear old tool results (Anthropic's clear_tool_uses,
done client-side so it works with every provider).

When the whole request reaches `trigger` tokens, the tool results older than the last `keep`
are replaced by a placeholder, oldest first, skipping `exclude_tools`. Clearing stops once
`clear_at_least` tokens are reclaimed and is skipped entirely when it cannot reclaim that many:
a cache-breaking rewrite for a small gain is not worth it. The default (a tenth of the window)
makes clearing happen in batches: without it, a window hovering at the trigger would clear one
newly old result on every call and lose the provider's cached prefix each time. The cleared
results are persisted in the window, so the edit does not re-fire every turn: it fires again
only when the request grows back over the trigger.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from harness.messages import Message, ModelResponse
from harness.middleware.base import Middleware, ModelHandler, ModelRequest
from harness.middleware.cutoff import ThresholdSpec, offload_path
from harness.middleware.guard import learn_inner, with_inner
from harness.middleware.mask import REPLACED_KINDS, masked
from harness.middleware.params import threshold, whole
from harness.tokens import MESSAGE_OVERHEAD

if TYPE_CHECKING:
    from harness.state import RunState

PLACEHOLDER = "[Tool result cleared to save context.]"


class ContextEdit(Middleware):
    """Clears old tool results once the request passes `trigger` tokens."""

    name = "context-edit"

    def __init__(
        self,
        trigger: ThresholdSpec = 100_000,
        *,
        keep: int = 3,
        clear_at_least: ThresholdSpec = 0.1,
        exclude_tools: Iterable[str] = (),
        placeholder: str = PLACEHOLDER,
        fallback_window: int = 170_000,
    ) -> None:
        """Parameters:
        trigger: request size that starts clearing: tokens (default 100,000) or a fraction of
            the model's window (applied to `fallback_window` when the window is unknown).
        keep: the most recent tool results never cleared (default 3).
        clear_at_least: clear only if at least this much is reclaimed, and stop there: tokens,
            or a fraction of the model's window (default 0.1; 0 clears every old result at
            once, and then one by one on every call past the trigger).
        exclude_tools: names of tools whose results are never cleared.
        placeholder: the text replacing a result (`{tool}`, `{tokens}` are filled in); a
            note naming the file is appended when the result was offloaded.
        """
        self.trigger = threshold("context-edit.trigger", trigger)
        if self.trigger.kind == "messages":
            raise ValueError("context-edit.trigger is on tokens: give a token count or a fraction")
        self.keep = whole("context-edit.keep", keep)
        self.clear_at_least = threshold("context-edit.clear_at_least", clear_at_least)
        if self.clear_at_least.kind == "messages":
            raise ValueError(
                "context-edit.clear_at_least is an amount of tokens or a fraction of the window"
            )
        self.exclude_tools = frozenset(exclude_tools)
        self.placeholder = placeholder
        self.fallback_window = whole("context-edit.fallback_window", fallback_window, minimum=1)

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        state = request.state
        tokens = with_inner(state, self.name, request.count_tokens())
        window = request.context_window
        limit = self.trigger.tokens(window, self.fallback_window) or 0
        if tokens >= limit:
            at_least = self.clear_at_least.tokens(window, self.fallback_window) or 0
            plan = self._plan(state, request.messages, at_least)
            if plan:
                request = await state.run_step("context-edit", self._clear, request, plan, tokens)
        passed = request.count_tokens()
        try:
            return await handler(request)
        finally:
            learn_inner(state, self.name, passed)

    def _plan(self, state: RunState, messages: tuple[Message, ...], at_least: int) -> list[int]:
        """Indices to clear, oldest first; empty when `clear_at_least` cannot be met."""
        results = [i for i, m in enumerate(messages) if m.role == "tool"]
        older = results[: max(len(results) - self.keep, 0)]
        chosen, reclaimed = [], 0
        placeholder_tokens = state.counter.count_text(self.placeholder) + MESSAGE_OVERHEAD
        for i in older:
            m = messages[i]
            if m.kind in REPLACED_KINDS or m.name in self.exclude_tools:
                continue
            gain = state.counter.count_message(m) - placeholder_tokens
            if gain <= 0:
                continue
            chosen.append(i)
            reclaimed += gain
            if at_least and reclaimed >= at_least:
                return chosen
        return chosen if reclaimed >= at_least else []

    async def _clear(self, request: ModelRequest, plan: list[int], tokens: int) -> ModelRequest:
        start = time.perf_counter()
        state = request.state
        window = list(request.messages)
        paths = []
        for i in plan:
            m = window[i]
            window[i] = masked(m, self.placeholder, state.counter.count_message(m), kind="cleared")
            if path := offload_path(m):
                paths.append(path)
        state.replace_window(window, reason="context-edit")
        edited = request.override(messages=window, messages_tokens=state.window_tokens)
        state.event(
            self.name, "wrap_model_call", "cleared",
            tokens_before=tokens, tokens_after=with_inner(state, self.name, edited.count_tokens()),
            detail={
                "cleared": len(plan), "kept": self.keep, "trigger": str(self.trigger),
                "tools": sorted({window[i].name or "" for i in plan}), "offloaded_paths": paths,
            },
            ms=state.elapsed_ms(start),
        )  # fmt: skip
        return edited
