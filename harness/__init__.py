"""ctxlab harness: an agent loop with context-engineering middleware and a DuckDB store."""

from harness.agent import Agent, RunResult, create_agent
from harness.errors import ContextOverflowError, HarnessError, ModelError, UnknownModelError
from harness.messages import Message, ModelResponse, ToolCall, Usage
from harness.middleware.base import Middleware, ModelRequest, ToolCallRequest
from harness.profiles import ModelProfile, get_profile
from harness.state import RunState
from harness.steps import InlineRunner, StepRunner
from harness.store import Store
from harness.strategies import STRATEGIES
from harness.tools import Tool, ToolContext, tool

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
    "Usage",
    "UnknownModelError",
    "create_agent",
    "get_profile",
    "tool",
]
