"""Model interface, test doubles and `resolve_model`, which turns a spec string into an adapter.

The SDK adapters are imported only when a spec names them: importing `openai` or `anthropic`
takes about a second, and offline runs never need them.
"""

from __future__ import annotations

from collections.abc import Callable
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
    "register_model",
    "reply",
    "resolve_model",
]

_ACCEPTED = (
    '"openai:<model>", "openai-chat:<model>", "openai-compatible:<model>", "anthropic:<model>" '
    'or "simulated"'
)

# Models other packages provide under a plain name (the harness never imports them):
# `evals` registers "simulated" when it is imported.
_REGISTERED: dict[str, Callable[..., Model]] = {}


def register_model(name: str, factory: Callable[..., Model]) -> None:
    """Make `resolve_model(name, **kwargs)` return `factory(**kwargs)`."""
    _REGISTERED[name] = factory


def _missing_prefix(spec: str) -> str:
    """What to say of a model name without its provider: the profiled model it names, if any."""
    from harness.profiles import known_models

    named = [m for m in known_models() if m.split(":", 1)[-1] == spec]
    guess = f" did you mean {' or '.join(named)}?" if named else ""
    return f"no provider prefix;{guess} expected {_ACCEPTED}"


def resolve_model(spec: str | Model, **kwargs: Any) -> Model:
    """The model for `spec`; a `Model` instance is returned unchanged. `kwargs` go to the
    adapter's constructor (api_key, base_url, profile, max_retries, max_retry_wait, timeout,
    client)."""
    if not isinstance(spec, str):
        return spec
    if spec in _REGISTERED:
        return _REGISTERED[spec](**kwargs)
    if spec == "simulated":
        raise UnknownModelError(
            'the "simulated" model lives in the evals package: `import evals` (which '
            "registers it) or pass `evals.simulated.SimulatedModel(...)` as the model"
        )
    provider, _, name = spec.partition(":")
    if not name:
        raise UnknownModelError(f"cannot resolve model {spec!r}: {_missing_prefix(spec)}")
    if provider == "openai":
        from harness.models.openai import OpenAIResponsesModel

        return OpenAIResponsesModel(name, **kwargs)
    if provider == "openai-chat":
        from harness.models.openai import OpenAIChatModel

        return OpenAIChatModel(name, **kwargs)
    if provider == "openai-compatible":
        from harness.models.compatible import OpenAICompatibleModel

        return OpenAICompatibleModel(name, **kwargs)
    if provider == "anthropic":
        from harness.models.anthropic import AnthropicModel

        return AnthropicModel(name, **kwargs)
    raise UnknownModelError(
        f"cannot resolve model {spec!r}: unknown provider {provider!r}; expected {_ACCEPTED}"
    )
