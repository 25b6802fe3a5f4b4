"""Model interface, test doubles and `resolve_model`, which turns a spec string into an adapter.

The SDK adapters are imported only when a spec names them: importing `openai` or `anthropic`
takes about a second, and offline runs never need them.
"""

from __future__ import annotations

from typing import Any

from harness.errors import UnknownModelError
from harness.models.base import Model, ModelSettings, RequestParams
from harness.models.scripted import FunctionModel, ScriptedModel, call, reply

__all__ = [
    "FunctionModel",
    "Model",
    "ModelSettings",
    "RequestParams",
    "ScriptedModel",
    "call",
    "reply",
    "resolve_model",
]

_ACCEPTED = '"openai:<model>", "openai-chat:<model>", "anthropic:<model>" or "simulated"'


def resolve_model(spec: str | Model, **kwargs: Any) -> Model:
    """The model for `spec`; a `Model` instance is returned unchanged. `kwargs` go to the
    adapter's constructor (api_key, base_url, profile, max_retries, max_retry_wait, timeout,
    client)."""
    if not isinstance(spec, str):
        return spec
    if spec == "simulated":
        from harness.models.simulated import SimulatedModel

        return SimulatedModel(**kwargs)
    provider, _, name = spec.partition(":")
    if not name:
        raise UnknownModelError(f"cannot resolve model {spec!r}: expected {_ACCEPTED}")
    if provider == "openai":
        from harness.models.openai import OpenAIResponsesModel

        return OpenAIResponsesModel(name, **kwargs)
    if provider == "openai-chat":
        from harness.models.openai import OpenAIChatModel

        return OpenAIChatModel(name, **kwargs)
    if provider == "anthropic":
        from harness.models.anthropic import AnthropicModel

        return AnthropicModel(name, **kwargs)
    raise UnknownModelError(
        f"cannot resolve model {spec!r}: unknown provider {provider!r}; expected {_ACCEPTED}"
    )
