"""The frozen configuration of one agent run: what the loop and the middleware read about the
agent (its model and the model's window, prompt, settings, limits) without holding the `Agent`.

It sits below the run state and the middleware, so nothing in it reaches up: the middleware
stack and the tools are handed to the run beside it (tools see the state, so the state cannot
see tools without a circle).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.files.mounts import FileBackend
from harness.models.base import Model, ModelSettings
from harness.profiles import ModelProfile
from harness.settings import StrategySettings
from harness.steps import StepRunner
from harness.store import Store
from harness.tokens import TokenCounter


@dataclass(frozen=True)
class RunConfig:
    """What an agent run is configured with, fixed for the whole run."""

    name: str
    model: Model
    system_prompt: str
    settings: ModelSettings
    max_steps: int
    store: Store
    step_runner: StepRunner
    counter: TokenCounter
    # Seconds a tool call may take unless the tool sets its own limit; None for no limit.
    tool_timeout_s: float | None
    strategy: str | None = None
    strategy_settings: StrategySettings = field(default_factory=StrategySettings)
    # Virtual prefixes whose files live in a folder on disk (`harness.files.mounts`).
    file_mounts: Mapping[str, FileBackend] = field(default_factory=dict)

    @property
    def profile(self) -> ModelProfile:
        return self.model.profile

    @property
    def context_window(self) -> int | None:
        """The model's window in tokens; None when its profile does not know it."""
        return self.profile.context_window
