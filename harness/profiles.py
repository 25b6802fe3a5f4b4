"""Model profiles: window, output cap, tokenizer and dated prices, read from data/models.toml."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from pathlib import Path

from harness.errors import UnknownModelError
from harness.messages import Usage


@dataclass(frozen=True, slots=True)
class ModelProfile:
    """What the harness must know about a model. Prices are USD per million tokens."""

    name: str
    context_window: int | None
    max_output_tokens: int = 8_000
    encoding: str = "cl100k_base"
    input: float = 0.0
    cached_input: float = 0.0
    cache_write: float = 0.0
    output: float = 0.0
    prices_as_of: str = ""

    def cost(self, usage: Usage) -> float:
        """Dollar cost of `usage`. Input tokens include cached reads and writes, billed at their
        own rates."""
        plain = max(usage.input_tokens - usage.cached_tokens - usage.cache_write_tokens, 0)
        return (
            plain * self.input
            + usage.cached_tokens * self.cached_input
            + usage.cache_write_tokens * self.cache_write
            + usage.output_tokens * self.output
        ) / 1_000_000

    def with_name(self, name: str) -> ModelProfile:
        return replace(self, name=name)


PROFILES_ENV = "CTXLAB_MODELS"


def _table() -> dict[str, ModelProfile]:
    """The bundled profiles, plus those in the TOML files `$CTXLAB_MODELS` lists (same format,
    separated like PATH), which win. An environment variable, so that worker processes see the
    same models as the command that started them."""
    return _load(os.environ.get(PROFILES_ENV, ""))


@cache
def _load(extra: str) -> dict[str, ModelProfile]:
    table = _parse(resources.files("harness").joinpath("data/models.toml").read_text())
    for path in filter(None, extra.split(os.pathsep)):
        try:
            table.update(_parse(Path(path).read_text()))
        except (OSError, tomllib.TOMLDecodeError, TypeError) as exc:
            raise UnknownModelError(f"cannot read model profiles from {path}: {exc}") from exc
    return table


def _parse(text: str) -> dict[str, ModelProfile]:
    raw = tomllib.loads(text)
    as_of = raw.get("defaults", {}).get("prices_as_of", "")
    return {
        name: ModelProfile(name=name, prices_as_of=spec.pop("prices_as_of", as_of), **spec)
        for name, spec in raw.get("models", {}).items()
    }


def known_models() -> list[str]:
    return sorted(_table())


def get_profile(name: str) -> ModelProfile:
    """The profile for `provider:model` (or a bare model name when unambiguous)."""
    table = _table()
    if name in table:
        return table[name]
    bare = name.split(":", 1)[-1]
    matches = [p for key, p in table.items() if key.split(":", 1)[-1] == bare]
    if len(matches) == 1:
        return matches[0].with_name(name)
    raise UnknownModelError(
        f"no profile for model {name!r}; known: {', '.join(known_models())}. "
        "Pass profile=ModelProfile(name=..., context_window=..., ...) to use another model."
    )
