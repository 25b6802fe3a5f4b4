"""The step runner: the one seam through which every model call, tool call and acting
middleware hook runs. The default runs inline; `flows` supplies a Prefect runner that makes
each step a task, so the harness never imports Prefect."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class StepRunner(Protocol):
    async def run(
        self, name: str, fn: Callable[..., Awaitable[T]], /, *args: Any, **kwargs: Any
    ) -> T:
        """Run `fn(*args, **kwargs)` as the step called `name` (`model`, `tool:<name>`,
        `summarize`, ...)."""
        ...

    def current_step_id(self) -> str | None:
        """An id for the step running now (e.g. a Prefect task run id), stored on events."""
        ...


class InlineRunner:
    """Runs each step directly in the current event loop."""

    async def run(
        self, name: str, fn: Callable[..., Awaitable[T]], /, *args: Any, **kwargs: Any
    ) -> T:
        return await fn(*args, **kwargs)

    def current_step_id(self) -> str | None:
        return None

    def no_step_reason(self, hook: str) -> str:
        return "inline run: steps are not tasks"
