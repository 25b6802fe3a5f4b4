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
    source: str = ""  # the pricing page the prices were read from

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
    table = parse_profiles(resources.files("harness").joinpath("data/models.toml").read_text())
    for path in filter(None, extra.split(os.pathsep)):
        try:
            table.update(parse_profiles(Path(path).read_text(), origin=path))
        except (OSError, tomllib.TOMLDecodeError, TypeError, ValueError) as exc:
            raise UnknownModelError(f"cannot read model profiles from {path}: {exc}") from exc
    return table


def parse_profiles(text: str, origin: str | None = None) -> dict[str, ModelProfile]:
    """Profiles from a models TOML: `[providers.<name>]` carry the pricing page, the date and
    the provider's cache multipliers; `[models."<provider>:<model>"]` the per-model numbers.

    A cache price a model does not list is derived from its provider's rule, so one
    provider's models cannot disagree on it. In the bundled table an entry without a source or
    a date is refused: a price nobody can check is not a price. A user's own file (`origin`)
    is its own source, undated unless it says."""
    raw = tomllib.loads(text)
    providers = raw.get("providers", {})
    table: dict[str, ModelProfile] = {}
    for name, given in raw.get("models", {}).items():
        spec = dict(given)
        provider_name = spec.pop("provider", name.split(":", 1)[0] if ":" in name else "")
        provider = providers.get(provider_name, {})
        source = spec.pop("source", provider.get("source", origin or ""))
        as_of = spec.pop("prices_as_of", provider.get("prices_as_of", "undated" if origin else ""))
        if not source or not as_of:
            raise ValueError(
                f"model profile {name!r} has no price source or date: give it (or its "
                f"provider {provider_name!r}) `source` and `prices_as_of`"
            )
        price = float(spec.get("input", 0.0))
        if "cached_input" not in spec:
            if "cache_read_multiplier" not in provider:
                raise ValueError(
                    f"model profile {name!r} lists no cached_input and its provider "
                    f"{provider_name!r} has no cache_read_multiplier"
                )
            spec["cached_input"] = round(price * float(provider["cache_read_multiplier"]), 9)
        if "cache_write" not in spec:
            spec["cache_write"] = round(
                price * float(provider.get("cache_write_multiplier", 1.0)), 9
            )
        aliases = spec.pop("aliases", [])
        table[name] = ModelProfile(name=name, prices_as_of=as_of, source=source, **spec)
        # Other names servers give the same weights (Ollama's tags): one profile, so they
        # cannot disagree.
        for alias in aliases:
            table[f"{provider_name}:{alias}"] = table[name]
    return table


def known_models() -> list[str]:
    """The profiled models by their own names (aliases left out)."""
    return sorted(key for key, profile in _table().items() if profile.name == key)


def get_profile(name: str) -> ModelProfile:
    """The profile for `provider:model`, or for the model under another provider when only one
    profile has that model name (without regard to case: `openai-compatible:gpt-4o` through a
    gateway, `openai-compatible:meta-llama/llama-3.1-8b-instruct`, `openai-compatible:qwen3:8b`).
    """
    table = _table()
    if name in table:
        found = table[name]
        return found if found.name == name else found.with_name(name)
    bare = name.split(":", 1)[-1].lower()
    matches = {id(p): p for key, p in table.items() if key.split(":", 1)[-1].lower() == bare}
    if len(matches) == 1:
        return next(iter(matches.values())).with_name(name)
    raise UnknownModelError(
        f"no profile for model {name!r}; known: {', '.join(known_models())}. "
        "To use another model, pass profile=ModelProfile(name=..., context_window=..., ...) "
        "to create_agent (or to the model adapter)."
    )


def profile_toml(
    model: str, *, window: int | None, max_output: int | None, price: str | None
) -> str:
    """A profile for `model` in the format of data/models.toml, from the CLI's `--window`,
    `--max-output` and `--price` (`IN,CACHED,OUT`). A known model keeps what they leave out
    (its prices and their source): `window` alone caps its window, so a 1M-window model is
    compacted as the simulated one is. Raises ValueError naming the option at fault."""
    import json

    try:
        known: ModelProfile | None = get_profile(model)
    except UnknownModelError:
        known = None
    if window is None and known is not None:
        window = known.context_window
    if not window:
        raise ValueError("--max-output and --price need --window TOKENS (a positive number)")
    max_output = max_output or (known.max_output_tokens if known else 8_000)
    if max_output < 1:
        raise ValueError(f"--max-output must be positive, got {max_output}")
    if price is None and known is not None:
        prices = [known.input, known.cached_input, known.output]
        cache_write, source = known.cache_write, known.source
        as_of = known.prices_as_of
    else:
        try:
            prices = [float(p) for p in (price or "0,0,0").split(",")]
        except ValueError:
            prices = []
        if len(prices) != 3 or any(p < 0 for p in prices):
            raise ValueError(f"--price expects IN,CACHED,OUT in USD per million tokens, e.g. "
                             f"2.5,1.25,10; got {price!r}")  # fmt: skip
        cache_write, source, as_of = prices[0], "the command line (--price)", "command line"
    encoding = f'encoding = "{known.encoding}"\n' if known else ""
    return (
        f"[models.{json.dumps(model)}]\ncontext_window = {window}\n"
        f"max_output_tokens = {max_output}\n{encoding}input = {prices[0]}\n"
        f"cached_input = {prices[1]}\ncache_write = {cache_write}\noutput = {prices[2]}\n"
        f"prices_as_of = {json.dumps(as_of)}\nsource = {json.dumps(source)}\n"
    )
