"""Patch dangling tool calls: every tool call gets a result before the next model call.

A run that crashed, was interrupted or resumed between a model's tool calls and their results
leaves calls without results in the window; providers reject the next request. This middleware
gives each such call a cancellation result right after its message, and also takes out of the
window what providers reject the other way round: results whose call is not there, and second
results for one call. The transcript keeps everything.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from harness.messages import Message, ToolCall
from harness.middleware.base import Middleware
from harness.middleware.cutoff import pairing_problems

if TYPE_CHECKING:
    from harness.state import RunState

CANCELLED = (
    "Tool call cancelled: the run stopped before {tool} returned a result (a crash, an "
    "interruption or a resumed conversation). Call it again if you still need it."
)


class PatchDanglingToolCalls(Middleware):
    """Before each model call, repairs tool call / result pairing in the window."""

    name = "dangling"

    def __init__(self, message: str = CANCELLED) -> None:
        """message: the cancellation result text; `{tool}` is replaced by the tool name."""
        self.message = message

    async def before_model(self, state: RunState) -> None:
        # A window checked clean stays clean while it only grows: every call in it was
        # answered, so only the messages appended since need looking at.
        start = state.unscanned(self.name)
        if pairing_problems(state.messages[start:]):
            await state.run_step("dangling", self._patch, state)
        state.scanned(self.name)

    async def _patch(self, state: RunState) -> None:
        start = time.perf_counter()
        before = list(state.messages)
        window = repair(before, self._cancelled)
        old, new = {m.id for m in before}, {m.id for m in window}
        added = [m.tool_call_id for m in window if m.id not in old]
        dropped = [m.id for m in before if m.id not in new]
        state.replace_window(window, reason="dangling")
        state.event(
            self.name, "before_model", "patched",
            tokens_before=state.counter.count_messages(before),
            tokens_after=state.counter.count_messages(window),
            detail={"cancelled_calls": added, "dropped_results": dropped},
            ms=state.elapsed_ms(start),
        )  # fmt: skip

    def _cancelled(self, call: ToolCall) -> Message:
        return Message(
            role="tool",
            content=self.message.replace("{tool}", call.name),
            tool_call_id=call.id,
            name=call.name,
            is_error=True,
            kind="cancelled",
        )


def repair(messages: Sequence[Message], cancelled: Callable[[ToolCall], Message]) -> list[Message]:
    """The window with each call's result placed right after its message (a cancellation
    from `cancelled(call)` when there is none) and stray results left out."""
    calls = {c.id for m in messages for c in m.tool_calls}
    results: dict[str, Message] = {}
    for m in messages:
        if m.role == "tool" and m.tool_call_id in calls:
            results.setdefault(m.tool_call_id, m)
    out: list[Message] = []
    for m in messages:
        if m.role == "tool":
            continue  # placed after its call below, or stray
        out.append(m)
        for c in m.tool_calls:
            out.append(results.pop(c.id) if c.id in results else cancelled(c))
    return out
