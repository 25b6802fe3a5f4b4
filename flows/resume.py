"""Resuming a run that died (SIGKILL, a lost machine, a failed model call) from what DuckDB holds.

What the store holds of a killed run is exact: the loop commits each step before the next model
call, so the thread's window, the run's model calls and its usage are all there up to the last
commit. A resumed run continues that thread under the same run id: `ResumeRun` (the first
middleware) restores the step counter and usage, the loop reloads the window, and the step
journal hands back the model and tool calls that completed after the last commit, so none of
them runs twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from harness.messages import Usage
from harness.middleware.base import Middleware
from harness.store import Store

if TYPE_CHECKING:
    from harness.state import RunState


# A run that stopped at its step limit has finished too: resuming it would stop at once.
FINISHED = ("completed", "max_steps")


@dataclass(frozen=True)
class ResumePoint:
    """Where a run stopped: `fresh` when nothing of it reached the store (it starts over with
    its input), `done` when it had already finished."""

    run_id: str
    status: str | None
    messages: int
    steps: int
    usage: Usage
    peak_context_tokens: int
    started_at: datetime | None

    @property
    def done(self) -> bool:
        return self.status in FINISHED

    @property
    def fresh(self) -> bool:
        return self.messages == 0


def find_resume_point(store: Store, run_id: str) -> ResumePoint:
    run = store.run(run_id)
    committed = store.query(
        "SELECT coalesce(max(step), 0) AS steps, count(*) AS n FROM messages WHERE run_id = ?",
        [run_id],
    )[0]
    calls = store.query(
        "SELECT count(*) AS requests, coalesce(sum(input_tokens), 0) AS input_tokens, "
        "coalesce(sum(output_tokens), 0) AS output_tokens, "
        "coalesce(sum(cached_tokens), 0) AS cached_tokens, "
        "coalesce(sum(cache_write_tokens), 0) AS cache_write_tokens, "
        "coalesce(sum(cost_usd), 0) AS cost_usd, coalesce(max(context_tokens), 0) AS peak "
        "FROM model_calls WHERE run_id = ?",
        [run_id],
    )[0]
    usage = Usage(
        input_tokens=int(calls["input_tokens"]),
        output_tokens=int(calls["output_tokens"]),
        cached_tokens=int(calls["cached_tokens"]),
        cache_write_tokens=int(calls["cache_write_tokens"]),
        requests=int(calls["requests"]),
        cost_usd=float(calls["cost_usd"]),
    )
    return ResumePoint(
        run_id=run_id,
        status=run["status"] if run else None,
        messages=int(committed["n"]),
        steps=int(committed["steps"]),
        usage=usage,
        peak_context_tokens=int(calls["peak"]),
        started_at=run["started_at"] if run else None,
    )


def release_run(store: Store, point: ResumePoint) -> None:
    """Make way for the resumed run under the same id: its `runs` row is written again when
    it starts (with the original start time restored), and subagent runs it left running are
    marked interrupted (their parent's tool call runs again and starts a new one)."""
    with store.transaction() as con:
        con.execute("DELETE FROM runs WHERE run_id = ?", [point.run_id])
        con.execute(
            "UPDATE runs SET status = 'interrupted', error = 'parent run was killed' "
            "WHERE parent_run_id = ? AND status = 'running'",
            [point.run_id],
        )


class ResumeRun(Middleware):
    """Restores the counters of a run continued from the store. Put it first in the stack so
    that every other hook sees the restored step."""

    name = "resume"

    def __init__(self, point: ResumePoint, attempt: int) -> None:
        self.point = point
        self.attempt = attempt

    async def before_agent(self, state: RunState) -> None:
        await state.run_step("resume", self._restore, state)

    async def _restore(self, state: RunState) -> None:
        state.step = self.point.steps
        state.usage = self.point.usage
        state.peak_context_tokens = self.point.peak_context_tokens
        if self.point.started_at is not None:
            state.store.execute(
                "UPDATE runs SET started_at = ? WHERE run_id = ?",
                [self.point.started_at, state.run_id],
            )
        state.event(
            self.name, "before_agent", "resumed",
            detail={"attempt": self.attempt, "from_step": self.point.steps,
                    "model_calls_before": self.point.usage.requests},
        )  # fmt: skip
