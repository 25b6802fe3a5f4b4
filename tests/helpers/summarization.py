"""An agent that fetches documents until its window fills, for the summarization tests."""

from __future__ import annotations

from typing import Any

from harness import Store, create_agent, tool
from harness.messages import ModelResponse
from harness.middleware.summarization import SUMMARY_REQUEST
from harness.models import FunctionModel, call, reply
from harness.profiles import ModelProfile


@tool
def fetch(n: int) -> str:
    """Fetch market-data document n."""
    return "\n".join(f"doc {n} row {i}: revenue {n * 1000 + i} EUR" for i in range(40))


class Researcher:
    """An agent model that fetches documents 1..steps, then answers; summary requests get a
    numbered summary naming how much it was given."""

    def __init__(self, steps: int, window: int = 8_000) -> None:
        self.steps = steps
        self.done = 0
        self.summary_requests: list[str] = []
        profile = ModelProfile(name="researcher", context_window=window)
        self.model = FunctionModel(self, name="researcher", profile=profile)

    def __call__(self, messages, params) -> ModelResponse | str:
        if SUMMARY_REQUEST in messages[-1].content:
            self.summary_requests.append(messages[-1].content)
            return f"SUMMARY {len(self.summary_requests)}: fetched documents, revenue in EUR."
        self.done += 1
        if self.done <= self.steps:
            return reply(f"Looking at document {self.done}.", call("fetch", n=self.done))
        return "All documents read."


def agent_for(
    agent_model: Any, store: Store | None = None, step_runner: Any = None, **params: Any
) -> Any:
    """An agent with `fetch` and the summarize strategy, `params` its `summarize.*` settings."""
    return create_agent(
        agent_model, [fetch], store=store or Store(":memory:"), strategy="summarize", memory=(),
        strategy_params={f"summarize.{k}": v for k, v in params.items()}, step_runner=step_runner,
    )  # fmt: skip


def filler(tokens: int) -> str:
    return " ".join(f"fact{i}" for i in range(tokens // 2))
