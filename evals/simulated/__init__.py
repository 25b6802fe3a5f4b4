"""The simulated model and its machinery: the plan it follows (`plan`), how it reads and
fails (`reader`), its summarizer (`summarizer`), its usage and prompt-cache billing
(`usage`), the break arms of the sanity check (`breaks`) and the model (`model`; its place
in the plan in `cursor`, what it reads off a request in `request`, its retrieval in
`retrieval`, what it drafts in `drafting`, what it saves to memory in `memory`).

Importing `evals` registers it with the harness under the model string "simulated" (loading
this package only when such a model is made), so `create_agent("simulated", ...)` works
without the harness importing `evals`; `install()` registers it directly.
"""

from typing import Any

from evals.errors import BudgetExceededError
from evals.simulated.breaks import BREAKS, Break, get_break
from evals.simulated.model import SimulatedModel
from evals.simulated.plan import (
    UNKNOWN,
    Act,
    Answer,
    Compose,
    Cue,
    Fact,
    Memorize,
    Plan,
    PlanTurn,
    ReadSkill,
    Remember,
    ReportFindings,
    Step,
)
from evals.simulated.reader import (
    DEFAULT_READER,
    DONT_KNOW,
    FALLIBLE,
    IDEAL,
    READERS,
    Attention,
    ReaderConfig,
    RequestReader,
    get_reader,
)
from evals.simulated.request import render
from evals.simulated.summarizer import SUMMARY_MARKER, extractive_summary
from evals.simulated.usage import CallRecord, cacheable
from harness.models import register_model


def _factory(**kwargs: Any) -> SimulatedModel:
    return SimulatedModel(**kwargs)


def install() -> None:
    """Register `SimulatedModel` with the harness as the model string "simulated"."""
    register_model("simulated", _factory)


__all__ = [
    "BREAKS",
    "DEFAULT_READER",
    "DONT_KNOW",
    "FALLIBLE",
    "IDEAL",
    "READERS",
    "SUMMARY_MARKER",
    "UNKNOWN",
    "Act",
    "Answer",
    "Attention",
    "Break",
    "BudgetExceededError",
    "CallRecord",
    "Compose",
    "Cue",
    "Fact",
    "Plan",
    "ReadSkill",
    "RequestReader",
    "ReaderConfig",
    "Memorize",
    "Remember",
    "ReportFindings",
    "SimulatedModel",
    "Step",
    "PlanTurn",
    "cacheable",
    "extractive_summary",
    "get_break",
    "get_reader",
    "install",
    "render",
]
