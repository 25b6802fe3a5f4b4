"""What one replay produced: each probe's outcome and the run's counts, before `results.py`
reduces them to an `EvalResult`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evals.simulated import CallRecord
from harness import Store


@dataclass(frozen=True)
class ProbeResult:
    """One probe's outcome. `status`: answered, checked (scored from a file), or not_reached
    (the session died first); `window_tokens`: see the field. `outcome`: right, wrong (a
    confident wrong answer), unknown (the agent said it does not know), or not_reached.
    `judge_verdict`: right, wrong or unparsed from the LLM judge, if one graded the answer
    (None otherwise). `source`: where the probe's answer comes from (`Probe.source`: data, or
    the plan, memory or a skill)."""

    id: str
    kind: str
    session: int
    question: str
    expected: str
    answer: str
    correct: bool
    status: str
    retrieval_calls: int = 0
    input_tokens: int = 0
    outcome: str = "not_reached"
    judge_model: str | None = None
    judge_verdict: str | None = None
    judge_cost_usd: float = 0.0
    source: str = "tool"
    # The request's tokens when the probe is asked (its first model call): what the strategy
    # kept in the window at the point of use. 0 when not reached or scored from a file.
    window_tokens: int = 0
    # The recorded user or agent restated the value between source and use: scored apart.
    carried: bool = False
    # At the point of use, with no reader (evals/scoring/availability.py): in_view, one_read
    # or lost, and the window text (or saved file) around the value; None for a file check.
    availability: str | None = None
    evidence: str = ""
    # Whether the retrieval calls this probe made brought the value back; None when it made
    # none.
    retrieval_found: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Replay:
    """What one replay produced, before it is reduced to metrics. `usage` sums the store's
    `model_calls` by role (main, subagent, summarizer): whatever models served them. The
    ledger is the simulated model's own record (retrievals, the real model's calls)."""

    probes: list[ProbeResult] = field(default_factory=list)
    ledger: list[CallRecord] = field(default_factory=list)
    overflow_turn: int | None = None
    overflow_step: int | None = None
    subagent_overflows: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    summaries: int = 0
    offloads: int = 0
    skill_reads: int = 0
    subagent_calls: int = 0
    memory_writes: int = 0
    usage: dict[str, dict[str, int | float]] = field(default_factory=dict)
    store: Store | None = None
    weeks: list[dict[str, Any]] = field(default_factory=list)
    # The absolute-token thresholds a capped window scaled (evals/run/thresholds.py).
    thresholds: dict[str, int] = field(default_factory=dict)
