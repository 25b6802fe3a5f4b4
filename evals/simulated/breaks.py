"""Break arms: the request as a provider would receive it with something taken out, so the
eval can prove that its scores follow the data (`ctxlab check --sanity`).

A break rewrites what the simulated model is shown, for the agent's requests and for the
summarizer's alike; the harness, the store and the files are untouched.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from harness.messages import Message

BLANK = "[blank]"
WITHHELD = "(summary withheld)"


def _shift_digits(text: str) -> str:
    return re.sub(r"\d", lambda m: str((int(m.group()) + 1) % 10), text)


@dataclass(frozen=True)
class Break:
    """One way to starve the reader. `tool`: what tool results become; `summaries`: whether
    summaries are withheld; `empty`: only the system prompt and the latest user message."""

    name: str
    description: str
    tool: Callable[[str], str] | None = None
    summaries: bool = False
    empty: bool = False

    def messages(self, messages: Sequence[Message]) -> list[Message]:
        if self.empty:
            users = [m for m in messages if m.role == "user" and m.kind == "message"]
            return users[-1:]
        out = []
        for m in messages:
            if self.tool is not None and m.role == "tool":
                m = replace(m, content=self.tool(m.content))
            elif self.summaries and m.kind == "summary":
                m = replace(m, content=WITHHELD)
            out.append(m)
        return out

    def units(self, units: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
        """What the summarizer is shown: the same break applied to its (role, text) units
        (withheld summaries are left out when the units are parsed)."""
        if self.empty:
            return []
        if self.tool is None:
            return list(units)
        tool = self.tool
        return [(role, tool(text) if role == "tool" else text) for role, text in units]


BREAKS = {
    b.name: b
    for b in (
        Break("empty-window", "only the system prompt (with memory) and the latest user message",
              empty=True),
        Break("blank-tools", "every tool result replaced by '[blank]'", tool=lambda _: BLANK),
        Break("corrupt-digits", "every digit in tool results shifted by one", tool=_shift_digits),
        Break("withhold-summaries", "every summary replaced by '(summary withheld)'",
              summaries=True),
    )
}  # fmt: skip


def get_break(name: str) -> Break:
    if name not in BREAKS:
        raise ValueError(f"unknown break arm {name!r}; choose one of {', '.join(BREAKS)}")
    return BREAKS[name]
