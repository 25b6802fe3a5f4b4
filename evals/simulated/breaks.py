"""Break arms: the request as a provider would receive it with something taken out, so the
eval can prove that its scores follow the data (`ctxlab check --sanity`).

A break rewrites what the simulated model is shown, for the agent's requests, its subagents'
(they run on the same model) and the summarizer's alike; the harness, the store and the files
are untouched. `relabel` works at the source instead: `Relabel`, a middleware on the domain
tools, swaps entity names in pairs in what they return, so what is stored, offloaded and
grepped is swapped too; the replay runs it in the main stack and in every subagent's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace

from harness.messages import Message
from harness.middleware.base import Middleware, ToolCallRequest, ToolHandler

BLANK = "[blank]"
WITHHELD = "(summary withheld)"


def _shift_digits(text: str) -> str:
    return re.sub(r"\d", lambda m: str((int(m.group()) + 1) % 10), text)


@dataclass(frozen=True)
class Break:
    """One way to starve the reader. `tool`: what tool results become; `summaries`: whether
    summaries are withheld; `empty`: only the system prompt and the latest user message;
    `questions`: with `empty`, the user messages that are one of these probe questions are
    kept too (`questions-only`: what the questions alone give away); `relabel`: the names are
    swapped at the tools (`Relabel`), so the view is left as it is."""

    name: str
    description: str
    tool: Callable[[str], str] | None = None
    summaries: bool = False
    empty: bool = False
    questions: frozenset[str] = field(default=frozenset())
    relabel: bool = False

    def messages(self, messages: Sequence[Message]) -> list[Message]:
        if self.empty:
            users = [m for m in messages if m.role == "user" and m.kind == "message"]
            asked = [m for m in users[:-1] if m.content.strip() in self.questions]
            return [*asked, *users[-1:]]
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
        Break("relabel", "entity names swapped in pairs in every domain tool's output "
              "(main agent and subagents)", relabel=True),
        Break("questions-only", "only the system prompt and the probe questions asked so far "
              "(scenario files)", empty=True),
    )
}  # fmt: skip
# Arms that need something only some scenarios have: entity names, a scenario file's questions.
FILE_ONLY = frozenset({"questions-only"})


def get_break(name: str) -> Break:
    """The break arm `name` (ValueError naming the arms when there is none)."""
    if name not in BREAKS:
        raise ValueError(f"unknown break arm {name!r}; choose one of {', '.join(BREAKS)}")
    return BREAKS[name]


def entity_pairs(entities: Iterable[str]) -> dict[str, str]:
    """Each name -> the name it is swapped with: first with second, third with fourth, ...
    (an odd last name stays as it is)."""
    names = list(dict.fromkeys(e for e in entities if e))
    pairs: dict[str, str] = {}
    for a, b in zip(names[::2], names[1::2], strict=False):
        pairs[a], pairs[b] = b, a
    return pairs


def swap_names(text: str, pairs: dict[str, str]) -> str:
    """`text` with every name of `pairs` replaced by its partner in one pass (so a swap is
    not undone), longest names first (a look-alike that extends a company's name is its own
    entity), whole words only."""
    if not pairs:
        return text
    names = sorted(pairs, key=len, reverse=True)
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(n) for n in names) + r")(?!\w)")
    return pattern.sub(lambda m: pairs[m.group()], text)


class Relabel(Middleware):
    """The `relabel` break: entity names swapped in pairs in what the domain tools return, so
    every figure, article and finding answers for another entity. Only data-derived probes
    depend on it; what still passes is the data-free floor (the plan's own words, memory, the
    skill). Put it in every stack, subagents' included: their tools read the data too."""

    name = "relabel"

    def __init__(self, entities: Sequence[str], tools: Collection[str]) -> None:
        self.pairs = entity_pairs(entities)
        self.tool_names = frozenset(tools)

    async def wrap_tool_call(self, request: ToolCallRequest, handler: ToolHandler) -> Message:
        result = await handler(request)
        if request.call.name not in self.tool_names or result.is_error:
            return result
        return result.with_content(swap_names(result.content, self.pairs))
