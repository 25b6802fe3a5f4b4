"""ctxlab harness: an agent loop with context-engineering middleware and a DuckDB store.

Names load on first use (PEP 562): `import harness` stays light, and DuckDB, pydantic and the
middleware load only when a name that needs them is asked for.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.agent import Agent, create_agent
    from harness.errors import ContextOverflowError, HarnessError, ModelError, UnknownModelError
    from harness.messages import Message, ModelResponse, ToolCall, Usage
    from harness.middleware.base import Middleware, ModelRequest, ToolCallRequest
    from harness.profiles import ModelProfile, get_profile
    from harness.run import RunResult
    from harness.state import RunState
    from harness.steps import InlineRunner, StepRunner
    from harness.store import Store
    from harness.strategies import STRATEGIES
    from harness.tools import Tool, ToolContext, tool

_WHERE = {
    "Agent": "harness.agent",
    "create_agent": "harness.agent",
    "ContextOverflowError": "harness.errors",
    "HarnessError": "harness.errors",
    "ModelError": "harness.errors",
    "UnknownModelError": "harness.errors",
    "Message": "harness.messages",
    "ModelResponse": "harness.messages",
    "ToolCall": "harness.messages",
    "Usage": "harness.messages",
    "Middleware": "harness.middleware.base",
    "ModelRequest": "harness.middleware.base",
    "ToolCallRequest": "harness.middleware.base",
    "ModelProfile": "harness.profiles",
    "get_profile": "harness.profiles",
    "RunResult": "harness.run",
    "RunState": "harness.state",
    "InlineRunner": "harness.steps",
    "StepRunner": "harness.steps",
    "Store": "harness.store",
    "STRATEGIES": "harness.strategies",
    "Tool": "harness.tools",
    "ToolContext": "harness.tools",
    "tool": "harness.tools",
}

__all__ = [
    "Agent",
    "ContextOverflowError",
    "HarnessError",
    "InlineRunner",
    "Message",
    "Middleware",
    "ModelError",
    "ModelProfile",
    "ModelRequest",
    "ModelResponse",
    "RunResult",
    "RunState",
    "STRATEGIES",
    "StepRunner",
    "Store",
    "Tool",
    "ToolCall",
    "ToolCallRequest",
    "ToolContext",
    "UnknownModelError",
    "Usage",
    "create_agent",
    "get_profile",
    "tool",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
