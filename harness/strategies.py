"""Named context strategies: the compaction arms the evals compare, and the assembled stack.

    strategy       compaction middleware
    none           - (a request over the model's window fails with ContextOverflowError)
    truncate       Truncate
    mask           ObservationMask
    offload        OffloadLargeResults
    summarize      Summarization
    context-edit   ContextEdit
    full           OffloadLargeResults + Summarization (the default)
    full-no-memory, full-no-skills, full-no-subagents
                   `full` without that technique (ablations: what each one is worth)

Whatever the strategy (ablations aside), `create_agent` assembles the stack in this order,
outermost first (the first middleware sees each model request first and each response last):

    skills, offload, subagents, summarize | truncate | mask | context-edit, dangling,
    user middleware, memory, guard

`guard` (innermost) refuses over-window requests before they are sent and measures what
reaches the model, so the compaction middleware also count what memory and user middleware
add to the system prompt after them. A subagent runs with a fresh stack of its strategy's own
(`subagent_stack`, handed to `SubAgents`): the same order without skills, subagents and memory,
then the user middleware subagents inherit (`create_agent(subagent_middleware=...)`, by
default the user's own) and its spec's own middleware, in the place of the user's.

Parameters are a `StrategySettings` (harness/settings.py), parsed once from dotted keys,
`<middleware>.<constructor parameter>`, for any middleware in the stack:
{"summarize.trigger": 0.7, "summarize.keep": ("messages", 20), "offload.tool_token_limit": 5_000,
"mask.keep": 10, "truncate.trigger": 0.9, "truncate.target": 0.4,
"context-edit.trigger": 80_000, "memory.max_chars": 10_000}. A key for a middleware the strategy
does not use, or a parameter its constructor does not take, is an error that lists the valid
keys.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from harness.errors import HarnessError
from harness.middleware.base import Middleware
from harness.middleware.context_edit import ContextEdit
from harness.middleware.dangling import PatchDanglingToolCalls
from harness.middleware.guard import ContextGuard
from harness.middleware.mask import ObservationMask
from harness.middleware.memory import Memory
from harness.middleware.offload import OffloadLargeResults
from harness.middleware.skills import Skills
from harness.middleware.subagents import SubAgent, SubAgents
from harness.middleware.summarization import Summarization
from harness.middleware.truncate import Truncate
from harness.settings import StrategySettings

STRATEGIES: dict[str, tuple[str, ...]] = {
    "none": (),
    "truncate": ("truncate",),
    "mask": ("mask",),
    "offload": ("offload",),
    "summarize": ("summarize",),
    "context-edit": ("context-edit",),
    "full": ("offload", "summarize"),
    "full-no-memory": ("offload", "summarize"),
    "full-no-skills": ("offload", "summarize"),
    "full-no-subagents": ("offload", "summarize"),
}
DEFAULT_STRATEGY = "full"
# The technique each ablation turns off; every other strategy has skills, subagents and memory.
ABLATED: dict[str, str] = {
    "full-no-memory": "memory",
    "full-no-skills": "skills",
    "full-no-subagents": "subagents",
}

MIDDLEWARE: dict[str, type[Middleware]] = {
    "skills": Skills,
    "offload": OffloadLargeResults,
    "subagents": SubAgents,
    "summarize": Summarization,
    "truncate": Truncate,
    "mask": ObservationMask,
    "context-edit": ContextEdit,
    "dangling": PatchDanglingToolCalls,
    "memory": Memory,
    "guard": ContextGuard,
}
_ARMS = ("summarize", "truncate", "mask", "context-edit")
# Constructor arguments create_agent fills in from its own parameters.
_SUPPLIED = {
    "skills": {"sources"},
    "memory": {"paths"},
    "subagents": {"subagents", "strategy", "stack", "inherited"},
}


def middleware_names(strategy: str, *, with_subagents: bool = True) -> list[str]:
    """The middleware of `strategy`'s stack, outermost first (user middleware aside)."""
    arm = set(_arm(strategy))
    names = ["skills"]
    names += ["offload"] if "offload" in arm else []
    names += ["subagents"] if with_subagents else []
    names += [a for a in _ARMS if a in arm]
    names += ["dangling", "memory", "guard"]
    return [n for n in names if n != ABLATED.get(strategy)]


def valid_params(names: Iterable[str]) -> list[str]:
    """Every dotted parameter key the middleware `names` accept."""
    keys = []
    for name in names:
        signature = inspect.signature(MIDDLEWARE[name].__init__)
        keys += [
            f"{name}.{p.name}"
            for p in list(signature.parameters.values())[1:]
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            and p.name not in _SUPPLIED.get(name, ())
        ]
    return keys


def subagent_stack(
    strategy: str | None,
    middleware: Sequence[Middleware] = (),
    settings: StrategySettings | None = None,
    *,
    strict: bool = True,
    inherited: Sequence[Middleware] = (),
) -> list[Middleware]:
    """The stack a subagent runs with: fresh compaction middleware for `strategy`, the
    dangling-call patch, the user middleware subagents `inherited` from `create_agent`, a
    spec's own `middleware`, then the guard (innermost, to measure exactly what reaches the
    model)."""
    strategy = strategy or DEFAULT_STRATEGY
    outer = ("skills", "memory")
    names = [n for n in middleware_names(strategy, with_subagents=False) if n not in outer]
    grouped = (settings or StrategySettings()).for_stack(
        valid_params(names), names, strict=strict, label=f"strategy {strategy!r}"
    )
    stack: list[Middleware] = []
    for name in names:
        if name == "guard":
            stack.extend(inherited)
            stack.extend(middleware)
        stack.append(MIDDLEWARE[name](**grouped.get(name, {})))
    return stack


def build_stack(
    strategy: str,
    settings: StrategySettings | Mapping[str, Any] | None = None,
    *,
    skills: Sequence[str | os.PathLike[str]] = (),
    subagents: Sequence[SubAgent] = (),
    memory: Sequence[str] = (),
    middleware: Sequence[Middleware] = (),
    subagent_middleware: Sequence[Middleware] | None = None,
) -> list[Middleware]:
    """The whole middleware stack of `strategy`, in the documented order. Subagents run
    `subagent_middleware` (None: the same `middleware` instances) unless their spec opts out.
    `settings` may be dotted keys, parsed here for callers without a `StrategySettings`."""
    names = middleware_names(strategy)
    settings = StrategySettings.parse(settings)
    grouped = settings.for_stack(valid_params(names), names, label=f"strategy {strategy!r}")
    supplied: dict[str, dict[str, Any]] = {
        "skills": {"sources": tuple(skills)},
        "memory": {"paths": tuple(memory)},
        "subagents": {
            "subagents": tuple(subagents),
            "strategy": strategy,
            "stack": partial(subagent_stack, settings=settings, strict=False),
            "inherited": tuple(middleware if subagent_middleware is None else subagent_middleware),
        },
    }
    stack: list[Middleware] = []
    # User middleware sits just outside memory (outside the guard when memory is ablated).
    inner = "memory" if "memory" in names else "guard"
    for name in names:
        if name == inner:
            stack.extend(middleware)
        if name == "memory" and not memory:
            Memory(**grouped.get(name, {}))  # unused, but its parameters are still checked
            continue
        stack.append(MIDDLEWARE[name](**supplied.get(name, {}), **grouped.get(name, {})))
    return stack


def _arm(strategy: str) -> tuple[str, ...]:
    if strategy not in STRATEGIES:
        raise HarnessError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    return STRATEGIES[strategy]


__all__ = [
    "ABLATED",
    "DEFAULT_STRATEGY",
    "MIDDLEWARE",
    "STRATEGIES",
    "build_stack",
    "middleware_names",
    "subagent_stack",
    "valid_params",
]
