"""Middleware: the context techniques and baselines, one module each, around the agent loop.

`harness.strategies` assembles them by name; import a class from here to build a stack of your
own or to pass extra middleware to `create_agent`.
"""

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
