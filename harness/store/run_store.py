"""`RunStore`: the little a run needs of a store, as openai-agents' `Session` is for its
runner. `Store` is the implementation; a test double needs only these."""

from __future__ import annotations

from typing import Protocol, Unpack

from harness.messages import Message, Usage
from harness.store.rows import RunStart, StepBatch


class RunStore(Protocol):
    """Where a run's window comes from and its steps go."""

    def load_window(self, thread_id: str) -> list[Message]:
        """What the model saw last on the thread (empty for a new one)."""
        ...

    def next_seq(self, thread_id: str) -> int:
        """The transcript position the thread's next message takes."""
        ...

    def start_run(self, **run: Unpack[RunStart]) -> None:
        """Record the run as `running`."""
        ...

    def write(self, batch: StepBatch) -> None:
        """Take a step's rows, durable when this returns."""
        ...

    def flush(self) -> None:
        """Write every step taken to its tables."""
        ...

    def let_go(self) -> None:
        """Free the file for other processes while the run waits (model calls, slow tools)."""
        ...

    def finish_run(
        self, run_id: str, *, status: str, steps: int, usage: Usage, error: str | None = None
    ) -> None:
        """Record how the run ended, its steps written first."""
        ...
