"""What the simulated model reads off a request (evals/simulated/model.py): messages rendered
for its reader, where the newest turns start, where a result was offloaded, what size an
earlier result states."""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping, Sequence
from typing import Any

from evals.simulated.queries import signature
from evals.simulated.reader import POINTER
from harness.messages import Message
from harness.tokens import TokenCounter


def render(message: Message) -> str:
    """A message as the simulated reader sees it: content, then each tool call's arguments."""
    parts = [message.content] if message.content else []
    for c in message.tool_calls:
        args = "\n".join(f"{k}: {v}" for k, v in c.arguments.items())
        parts.append(f"[{c.name}]\n{args}")
    return "\n".join(parts)


class Renderings:
    """`render` of a request's messages, one model's requests after another: the messages the
    previous request began with (the same objects, so the same text) are not rendered again."""

    def __init__(self) -> None:
        self._last: list[Message] = []
        self._texts: list[str] = []

    def __call__(self, messages: Sequence[Message]) -> list[str]:
        n = len(self._last)
        same = n if len(messages) >= n and all(map(operator.is_, messages, self._last)) else 0
        self._texts = self._texts[:same] + [render(m) for m in messages[same:]]
        self._last = list(messages)
        return self._texts


def newest_turns(messages: Sequence[Message], turns: int = 2) -> int | None:
    """The index (in the reader's texts, after the system prompt) where the newest `turns`
    user turns start: the previous turn and the current one are read reliably."""
    starts = [i for i, m in enumerate(messages) if m.role == "user" and m.kind == "message"]
    return starts[-turns] + 1 if len(starts) >= turns else None


_TOKENS = re.compile(r"\b([0-9][0-9,]*) tokens\b")


def earlier_size(
    counter: TokenCounter, messages: Sequence[Message], name: str, arguments: Mapping[str, Any]
) -> int:
    """Tokens the earlier result of this call took, as far as the request shows: its text,
    or the size a placeholder or an offload note states (the agent will not pull back a
    result it can see would not fit its window)."""
    key = signature(name, arguments)
    ids = {c.id for m in messages for c in m.tool_calls if signature(c.name, c.arguments) == key}
    size = 0
    for m in messages:
        if m.role == "tool" and m.tool_call_id in ids:
            stated = [int(n.replace(",", "")) for n in _TOKENS.findall(m.content)]
            size = max(size, counter.count_message(m), *stated)
    return size


def offloaded_to(messages: Sequence[Message], call_id: str) -> str | None:
    """The file the result of call `call_id` was offloaded to, if the request shows one."""
    for m in messages:
        if m.role == "tool" and m.tool_call_id == call_id:
            found = POINTER.search(m.content)
            return found.group(1).rstrip(".,;:)") if found else None
    return None


def is_error(result: Message) -> bool:
    return result.is_error or result.content.lstrip().lower().startswith("error")
