"""Calling a model the way the tests do: one request on its own event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from harness.messages import Message, ModelResponse, user
from harness.models import Model, ModelSettings, RequestParams


def ask(
    model: Model,
    messages: Sequence[Message] | None = None,
    settings: ModelSettings | None = None,
    params: RequestParams | None = None,
) -> ModelResponse:
    """`model.request` once, outside any running loop; `messages` default to one "hi", settings
    and request parameters to the defaults."""
    return asyncio.run(
        model.request(
            [user("hi")] if messages is None else messages,
            settings or ModelSettings(),
            params if params is not None else RequestParams(),
        )
    )
