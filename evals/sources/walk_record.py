"""What a walk of a trace records: the turns and tasks a scenario replays, each text the agent
was shown with its place, and each use of a value shown earlier, probes' raw material."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from evals.sources.cues import spans
from evals.sources.roles import Call
from evals.sources.shelf import Shelf, Shelved, Source

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
    """A trace walked in order: what the scenario replays and what probes are built from.
    `shown` and `agent` only grow, in message order; the shelves index them as they do."""

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
    answered: Counter[str] = field(default_factory=Counter)  # replies so far by reply_key
    _read: Shelf = field(default_factory=Shelf)  # the texts of `shown`
    _read_at: list[int] = field(default_factory=list)  # their messages
    _wrote: Shelf = field(default_factory=Shelf)  # the texts of `agent`
    _wrote_at: list[int] = field(default_factory=list)
    _steps: list[int] = field(default_factory=list)  # the distinct messages of `calls`
    _steps_of: int = 0  # how many of `calls` `_steps` has taken in

    def _sync(self) -> None:
        for shown in self.shown[len(self._read) :]:
            # what is "before" a message is a prefix only while messages come in order
            assert not self._read_at or self._read_at[-1] <= shown.message, "shown out of order"
            self._read.add(shown.source.text, shown.source.kind)
            self._read_at.append(shown.message)
        for message, text in self.agent[len(self._wrote) :]:
            assert not self._wrote_at or self._wrote_at[-1] <= message, "agent out of order"
            self._wrote.add(text, "agent")
            self._wrote_at.append(message)

    def before(self, message: int) -> Shelved:
        """The tool results and user messages shown before trace message `message`."""
        self._sync()
        shown = self.shown
        return Shelved(self._read, bisect_left(self._read_at, message), lambda i: shown[i].source)

    def written(self, message: int, turn: int) -> Shelved:
        """What the agent wrote before trace message `message`, as sources of turn `turn`."""
        self._sync()
        agent = self.agent
        return Shelved(
            self._wrote, bisect_left(self._wrote_at, message),
            lambda i: Source(f"agent {agent[i][0]}", "agent", agent[i][1], turn),
        )  # fmt: skip

    def first_shown(self, value: str, message: int) -> Shown | None:
        """Where `value` first appeared, if a tool result or user message showed it before
        message `message` and the agent had not written it earlier (it came from the source,
        not from the agent)."""
        for shown in self.showing(value, message):
            return None if self.wrote(value, shown.message) else shown
        return None

    def showing(self, value: str, message: int) -> Iterator[Shown]:
        """The texts shown before message `message` that show `value`, in order."""
        self._sync()
        for i in self._read.holding(value, bisect_left(self._read_at, message)):
            if spans(value, self.shown[i].source.text):
                yield self.shown[i]

    def wrote(self, value: str, before: int, after: int = -1) -> bool:
        """Whether the agent wrote `value` between messages `after` and `before` (both out)."""
        self._sync()
        for i in self._wrote.holding(value, bisect_left(self._wrote_at, before)):
            if self._wrote_at[i] > after and spans(value, self._wrote.texts[i]):
                return True
        return False

    def steps_between(self, after: int, before: int) -> int:
        """The steps (messages that called tools) strictly between two messages."""
        for point, _, _ in self.calls[self._steps_of :]:
            assert not self._steps or self._steps[-1] <= point.message, "calls out of order"
            if not self._steps or self._steps[-1] != point.message:
                self._steps.append(point.message)
        self._steps_of = len(self.calls)
        return max(0, bisect_left(self._steps, before) - bisect_right(self._steps, after))
