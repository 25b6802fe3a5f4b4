"""The one model interface every adapter and test double implements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from harness.messages import Message, ModelResponse
from harness.profiles import ModelProfile


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """Sampling and transport settings for one request."""

    max_tokens: int | None = None
    temperature: float | None = None
    timeout_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True, slots=True)
class RequestParams:
    """What the request asks of the model besides messages: the system prompt and the tools
    (provider-neutral schemas from `Tool.schema()`)."""

    system_prompt: str = ""
    tools: tuple[dict[str, Any], ...] = ()


@runtime_checkable
class Model(Protocol):
    """`request` sends one turn. Adapters raise `ContextOverflowError` when the provider says
    the prompt does not fit, and `ModelError` for other failures after retries."""

    name: str
    profile: ModelProfile

    async def request(
        self, messages: Sequence[Message], settings: ModelSettings, params: RequestParams
    ) -> ModelResponse: ...
