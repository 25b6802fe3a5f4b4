"""Model profiles: every price has a source and a date, and cache prices follow each
provider's published rule."""

from __future__ import annotations

import re

import pytest

from harness.profiles import _table, get_profile, known_models, parse_profiles


def test_every_shipped_profile_names_its_price_source_and_date() -> None:
    for name, profile in _table().items():
        assert profile.source, name
        assert profile.prices_as_of, name


NO_SOURCE = """
[providers.acme]
prices_as_of = "2026-11-15"
cache_read_multiplier = 0.1
[models."acme:m"]
context_window = 1000
input = 1.0
output = 2.0
"""
NO_DATE = """
[models."acme:m"]
source = "https://example.invalid/pricing"
context_window = 1000
input = 1.0
cached_input = 0.1
output = 2.0
"""


@pytest.mark.parametrize(
    ("text", "missing"), [(NO_SOURCE, "source"), (NO_DATE, "prices_as_of")], ids=["source", "date"]
)
def test_an_entry_without_a_source_or_a_date_is_refused(text: str, missing: str) -> None:
    with pytest.raises(ValueError, match=f"acme:m.*{missing}"):
        parse_profiles(text)


def test_anthropic_cache_prices_follow_the_published_multipliers() -> None:
    anthropic = {k: p for k, p in _table().items() if k.startswith("anthropic:")}
    assert len(anthropic) >= 3
    for name, profile in anthropic.items():
        assert profile.cached_input == pytest.approx(0.1 * profile.input), name
        assert profile.cache_write == pytest.approx(1.25 * profile.input), name


def test_one_provider_has_one_cached_read_ratio_per_model_family() -> None:
    # The ratio may differ between providers and between one provider's families (OpenAI:
    # gpt-4o 50%, gpt-4.1 25%, gpt-5 10%), never between the sizes of one family.
    ratios: dict[str, set[float]] = {}
    for name, profile in _table().items():
        if ":" in name and profile.input:
            family = re.sub(r"-(mini|nano|sol|astra)$", "", name)
            ratios.setdefault(family, set()).add(round(profile.cached_input / profile.input, 6))
    assert all(len(r) == 1 for r in ratios.values()), ratios
    assert len(ratios) >= 8


@pytest.mark.parametrize(
    ("name", "window", "output", "prices"),
    [
        ("openai:gpt-4o", 128_000, 16_384, (2.5, 1.25, 10.0)),
        ("openai:gpt-4.1-mini", 1_047_576, 32_768, (0.4, 0.1, 1.6)),
        ("openai:o4-mini", 200_000, 100_000, (1.1, 0.275, 4.4)),
        ("anthropic:claude-sonnet-4-5", 200_000, 64_000, (3.0, 0.3, 15.0)),
        ("open-weights:meta-llama/Llama-3.1-8B-Instruct", 131_072, 8_000, (0.0, 0.0, 0.0)),
    ],
)
def test_current_models_have_profiles(
    name: str, window: int, output: int, prices: tuple[float, float, float]
) -> None:
    profile = get_profile(name)
    assert (profile.context_window, profile.max_output_tokens) == (window, output)
    assert (profile.input, profile.cached_input, profile.output) == pytest.approx(prices)


@pytest.mark.parametrize(
    "served_as",
    [
        "openai-compatible:meta-llama/Llama-3.1-8B-Instruct",  # vLLM: the Hugging Face id
        "openai-compatible:meta-llama/llama-3.1-8b-instruct",  # OpenRouter: lower case
        "openai-compatible:llama3.1:8b",  # Ollama's tag
    ],
)
def test_a_served_open_weights_model_finds_its_profile(served_as: str) -> None:
    profile = get_profile(served_as)
    assert profile.name == served_as
    assert profile.context_window == 131_072
    assert profile.source == "https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct (model card)"
    assert profile.prices_as_of.startswith("unpriced")


def test_aliases_are_not_listed_as_models_of_their_own() -> None:
    known = known_models()
    assert "open-weights:meta-llama/Llama-3.1-8B-Instruct" in known
    assert not [k for k in known if k.endswith(":llama3.1:8b")]


def test_a_gateway_serving_an_openai_model_gets_its_profile() -> None:
    assert get_profile("openai-compatible:gpt-5-mini").input == 0.25
