"""The `oracle` arm's middleware: show the model only what the rest of the run needs.

The scenario knows every fact its plan will read (the cues of each step's slots, of each
probe's answer, of each composed document's lines) and the turn each is read in. Before each
model call, the oracle finds the plan turn the conversation is in and keeps only: the user
message that opened it (the model follows its plan by it), the newest exchange (what the
model just did), for each fact the current or a later turn reads the newest message showing
it (the one a reader would take), cut to the lines that show those facts, the user's stated
style preferences and a template read into the context (a later document follows them). A
tool call stays with its results. A probe named by role (an imported one) is read off its
whole source (evals/simulated/sightings.py), so the newest message showing its value under
that role stays whole, with its call.
Nothing is persisted: the window and the transcript keep everything, the oracle only narrows
each request.

It is a bound, not a strategy: it knows the future, so no real strategy can match its tokens
at its accuracy. A strategy close to it has little left to gain.
"""

from __future__ import annotations

from collections.abc import Sequence

from evals.run.replay import MiddlewareFactory
from evals.scenarios.base import Scenario
from evals.simulated.plan import Act, Answer, Compose, Cue, Plan
from evals.simulated.reader import (
    LINE_NUMBER,
    PREFERENCE,
    cue_matches,
    occurrences,
    template_sections,
)
from evals.simulated.request import render
from evals.simulated.sightings import BY_ROLE, Role, sightings
from evals.sources.role_rules import IMPORT_RULES
from harness.messages import Message, ModelResponse
from harness.middleware.base import Middleware, ModelHandler, ModelRequest

OMITTED = "[Omitted by the oracle: nothing the rest of the run reads.]"


def step_cues(plan: Plan) -> list[set[Cue]]:
    """For each plan turn, the cues its steps and every later turn's steps read."""
    own: list[set[Cue]] = []
    for turn in plan.turns:
        cues: set[Cue] = set()
        for step in turn.steps:
            if isinstance(step, Act):
                cues |= {cue for _, cue in step.slots}
            elif isinstance(step, Answer):
                cues.add(step.cue)
            elif isinstance(step, Compose):
                cues |= {fact.cue for fact in step.facts}
        own.append(cues)
    remaining: list[set[Cue]] = []
    later: set[Cue] = set()
    for cues in reversed(own):
        later = later | cues
        remaining.append(later)
    return remaining[::-1]


def step_roles(plan: Plan) -> list[list[Role]]:
    """For each plan turn, the roles of the probes it and every later turn ask by role."""
    out: list[list[Role]] = []
    later: list[Role] = []
    for turn in reversed(plan.turns):
        mine = [
            Role(s.kind, s.phrase, s.terms, s.shape)
            for s in turn.steps if isinstance(s, Answer) and s.kind in BY_ROLE and s.phrase
        ]  # fmt: skip
        later = mine + later
        out.append(later)
    return out[::-1]


class Oracle(Middleware):
    """Narrows each request to the current turn plus the earlier messages a remaining step
    reads (see the module docstring)."""

    name = "oracle"

    def __init__(self, plan: Plan) -> None:
        self.turn_index = {t.key: i for i, t in enumerate(plan.turns)}
        self.needs = step_cues(plan)
        self.roles = step_roles(plan)
        self.questions = plan.questions()
        self.cues = self.needs[0] if self.needs else set()
        self._matched: dict[str, frozenset[Cue]] = {}
        self._excerpts: dict[tuple[str, frozenset[Cue]], Message] = {}

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        messages = request.messages
        start, turn = self._current_turn(messages)
        if turn is None:
            return await handler(request)
        units = _units(messages)
        whole = {len(units) - 1}
        whole |= {i for i, unit in enumerate(units) if unit[0] is messages[start]}
        whole |= {i for i, unit in enumerate(units) if self._standing(unit)}
        for role in self.roles[turn]:
            found = sightings(IMPORT_RULES, role, messages, self.questions)
            if found:
                source = messages[found[0].message]
                whole |= {i for i, unit in enumerate(units) if any(m is source for m in unit)}
        shows: dict[int, set[Cue]] = {}
        for cue in self.needs[turn]:
            newest = next(
                (i for i in reversed(range(len(units))) if cue in self._unit(units[i])), None
            )
            if newest is not None:
                shows.setdefault(newest, set()).add(cue)
        kept: list[Message] = []
        for i in sorted(whole | set(shows)):
            if i in whole:
                kept += units[i]
            else:
                kept += [self._excerpt(m, frozenset(shows[i])) for m in units[i]]
        return await handler(request.override(messages=kept))

    def _current_turn(self, messages: Sequence[Message]) -> tuple[int, int | None]:
        """Where the newest user message that starts a plan turn is, and that turn's index."""
        for i in range(len(messages) - 1, -1, -1):
            m = messages[i]
            if m.role == "user" and m.kind == "message":
                turn = self._turn_of(m.content)
                if turn is not None:
                    return i, turn
        return 0, None

    def _turn_of(self, content: str) -> int | None:
        lines = content.strip().split("\n", 16)
        for line in lines[:1] + [LINE_NUMBER.sub("", ln) for ln in lines[1:16]]:
            if (index := self.turn_index.get(line.strip())) is not None:
                return index
        return None

    def _excerpt(self, message: Message, cues: frozenset[Cue]) -> Message:
        """`message` cut to the lines showing `cues` (the same copy every call, so the
        provider's prefix cache sees the same message)."""
        if message.role == "assistant":
            return message
        key = (message.id, cues)
        cut = self._excerpts.get(key)
        if cut is None:
            text = message.content
            lines: set[tuple[int, int]] = set()
            for cue in cues & self._cues(message):
                for pattern in cue.patterns:
                    for m in cue_matches(pattern, text):
                        first = text.rfind("\n", 0, m.start()) + 1
                        last = text.find("\n", m.end())
                        lines.add((first, len(text) if last < 0 else last))
            excerpt = "\n".join(text[a:b] for a, b in sorted(lines)) or OMITTED
            cut = self._excerpts[key] = message.with_content(excerpt, kind="oracle")
        return cut

    def _unit(self, unit: Sequence[Message]) -> frozenset[Cue]:
        return frozenset().union(*(self._cues(m) for m in unit))

    @staticmethod
    def _standing(unit: Sequence[Message]) -> bool:
        """A style preference the user stated, or a document template that was read."""
        return any(
            (m.role == "user" and PREFERENCE.search(m.content))
            or (m.role == "tool" and template_sections([m.content]))
            for m in unit
        )

    def _cues(self, message: Message) -> frozenset[Cue]:
        """The cues of the whole plan that `message` shows a value for (computed once)."""
        found = self._matched.get(message.id)
        if found is None:
            text = [render(message)]
            found = frozenset(cue for cue in self.cues if occurrences(cue.patterns, text))
            self._matched[message.id] = found
        return found


def _units(messages: Sequence[Message]) -> list[list[Message]]:
    """Messages grouped so a tool call is never kept without its results, nor a result
    without its call."""
    units: list[list[Message]] = []
    for m in messages:
        if m.role == "tool" and units and units[-1][0].tool_calls:
            units[-1].append(m)
        else:
            units.append([m])
    return units


def oracle_middleware(scenario: Scenario) -> MiddlewareFactory:
    """A factory of the oracle middleware for `scenario`'s main agent."""
    return lambda: [Oracle(scenario.plan)]
