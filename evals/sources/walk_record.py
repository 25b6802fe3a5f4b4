"""What a walk of a trace records: the turns and tasks a scenario replays, each text the agent
was shown with its place, and each use of a value shown earlier, probes' raw material."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from evals.sources.cues import Source, spans
from evals.sources.roles import Call

UseKind = Literal["argument", "command", "content", "answer"]


@dataclass(frozen=True)
class ReplayPoint:
    """A place in the replay: before step `step` (0-based) of turn `turn`; `step` is the
    turn's step count for its final answer. `message` indexes the trace's messages."""

    turn: str
    turn_index: int
    step: int
    message: int
    tokens: int  # tokens of the trace before this point


@dataclass(frozen=True)
class Use:
    """A value the agent used at `point` that an earlier tool result or user message showed."""

    value: str
    point: ReplayPoint
    kind: UseKind
    tool: str | None  # the (renamed) tool of the call, None for an answer
    argument: str | None
    whole: bool  # the whole argument, not a token in it
    ordinal: int  # 1-based among the values of its shape in the same text
    of: int  # how many values of its shape that text holds
    shape: str  # "file path", "number", "date", "identifier"
    context: str  # where it was used, for `find_cue`'s choice among labels


@dataclass
class Shown:
    """A text the agent was shown: a tool result or a user message, with its place."""

    source: Source
    message: int
    tokens: int  # tokens of the trace up to the end of this text
    step: int  # steps made before it, in the whole trace (for provenance)
    call: Call | None = None  # the call whose result it is (None for a user message)


@dataclass
class Walk:
    """A trace walked in order: what the scenario replays and what probes are built from."""

    turns: list[dict[str, Any]] = field(default_factory=list)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    subagents: dict[str, set[str]] = field(default_factory=dict)  # kind -> tools it used
    replies: list[dict[str, Any]] = field(default_factory=list)
    shown: list[Shown] = field(default_factory=list)
    agent: list[tuple[int, str]] = field(default_factory=list)  # (message, text) it wrote
    uses: list[Use] = field(default_factory=list)
    calls: list[tuple[ReplayPoint, str, dict[str, Any]]] = field(default_factory=list)
    system: str = ""
    tokens: int = 0
    native: frozenset[str] = frozenset()  # tools the replay's harness runs: no recorded reply

    def before(self, message: int) -> list[Source]:
        """The tool results and user messages shown before trace message `message`."""
        return [s.source for s in self.shown if s.message < message]

    def first_shown(self, value: str, message: int) -> Shown | None:
        """Where `value` first appeared, if a tool result or user message showed it before
        message `message` and the agent had not written it earlier (it came from the source,
        not from the agent)."""
        for shown in self.shown:
            if shown.message >= message:
                return None
            if spans(value, shown.source.text):
                wrote = [i for i, t in self.agent if i < shown.message and spans(value, t)]
                return None if wrote else shown
        return None
