"""Middleware: the context techniques and baselines, one module each, around the agent loop.

`harness.strategies` assembles them by name; import a class from here to build a stack of your
own or to pass extra middleware to `create_agent`. Names load on first use, so importing one
middleware module (or `harness.middleware.base`) does not load the others.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.middleware.base import Middleware, ModelRequest, ToolCallRequest
    from harness.middleware.context_edit import ContextEdit
    from harness.middleware.cutoff import Threshold
    from harness.middleware.dangling import PatchDanglingToolCalls
    from harness.middleware.guard import ContextGuard
    from harness.middleware.mask import ObservationMask
    from harness.middleware.memory import Memory, export_memory, import_memory
    from harness.middleware.offload import OffloadLargeResults
    from harness.middleware.skills import Skills
    from harness.middleware.subagents import SubAgent, SubAgents
    from harness.middleware.summarization import Summarization
    from harness.middleware.topic import LexicalTopicShift, TopicDetector
    from harness.middleware.truncate import Truncate

_WHERE = {
    "ContextEdit": "context_edit",
    "ContextGuard": "guard",
    "LexicalTopicShift": "topic",
    "Memory": "memory",
    "Middleware": "base",
    "ModelRequest": "base",
    "ObservationMask": "mask",
    "OffloadLargeResults": "offload",
    "PatchDanglingToolCalls": "dangling",
    "Skills": "skills",
    "SubAgent": "subagents",
    "SubAgents": "subagents",
    "Summarization": "summarization",
    "Threshold": "cutoff",
    "ToolCallRequest": "base",
    "TopicDetector": "topic",
    "Truncate": "truncate",
    "export_memory": "memory",
    "import_memory": "memory",
}

__all__ = [
    "ContextEdit",
    "ContextGuard",
    "LexicalTopicShift",
    "Memory",
    "Middleware",
    "ModelRequest",
    "ObservationMask",
    "OffloadLargeResults",
    "PatchDanglingToolCalls",
    "Skills",
    "SubAgent",
    "SubAgents",
    "Summarization",
    "Threshold",
    "ToolCallRequest",
    "TopicDetector",
    "Truncate",
    "export_memory",
    "import_memory",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'harness.middleware' has no attribute {name!r}")
    value = getattr(import_module(f"harness.middleware.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
