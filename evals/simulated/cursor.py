"""`Cursor`: where one conversation of the simulated model is in its plan turn (evals/simulated/
model.py), the tool calls it makes from there, and its checkpoint form as plain JSON data."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evals.simulated.plan import Act, PlanTurn
from harness.messages import ModelResponse, ToolCall


@dataclass
class Cursor:
    turn: PlanTurn
    index: int
    ids: str  # tool-call id prefix: stable, so offload paths are the same on every replay
    step: int = 0
    retrievals: int = 0
    rounds: int = 0  # grep rounds of the current question
    turns: int = 0  # retrieval turns of the current question (greps and re-runs alike)
    delegating: bool = False
    calls: int = 0
    pending: str | None = None
    recalled: list[str] = field(default_factory=list)  # signatures of the lookups re-run
    recall: str | None = None  # id of the latest re-run lookup, until its result is read
    phase: int = 0  # where a multi-call decision (`Memorize`) is

    def state(self) -> dict[str, Any]:
        return {
            "turn": self.turn.key, "index": self.index, "ids": self.ids, "step": self.step,
            "retrievals": self.retrievals, "rounds": self.rounds, "turns": self.turns,
            "delegating": self.delegating, "calls": self.calls, "pending": self.pending,
            "recalled": list(self.recalled), "recall": self.recall, "phase": self.phase,
        }  # fmt: skip

    def decision_next(self) -> bool:
        steps = self.turn.steps
        return self.step < len(steps) and not isinstance(steps[self.step], Act)

    def call(self, text: str, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> ModelResponse:
        made = []
        for name, args in calls:
            self.calls += 1
            made.append(
                ToolCall(id=f"{self.ids}_{self.calls:02d}", name=name, arguments=dict(args))
            )
        return ModelResponse(text=text, tool_calls=tuple(made))

    def read(self, text: str, path: str) -> ModelResponse:
        return self.call(text, [("read_file", {"file_path": path})])

    def write(self, text: str, path: str, content: str) -> ModelResponse:
        return self.call(text, [("write_file", {"file_path": path, "content": content})])


def cursor_from(turn: PlanTurn, state: Mapping[str, Any]) -> Cursor:
    return Cursor(
        turn=turn, index=int(state["index"]), ids=str(state["ids"]), step=int(state["step"]),
        retrievals=int(state["retrievals"]), rounds=int(state.get("rounds", 0)),
        turns=int(state.get("turns", 0)),
        delegating=bool(state["delegating"]), calls=int(state["calls"]),
        pending=state["pending"], recalled=[str(s) for s in state.get("recalled", [])],
        recall=state.get("recall"), phase=int(state.get("phase", 0)),
    )  # fmt: skip
