"""Model profiles: every price has a source and a date, and cache prices follow each
provider's published rule."""

from __future__ import annotations

import pytest

from harness.profiles import _table, parse_profiles


def test_every_shipped_profile_names_its_price_source_and_date() -> None:
    for name, profile in _table().items():
        assert profile.source, name
        assert profile.prices_as_of, name


def test_an_entry_without_a_source_is_refused() -> None:
    text = """
    [providers.acme]
    prices_as_of = "2026-11-15"
    cache_read_multiplier = 0.1
    [models."acme:m"]
    context_window = 1000
    input = 1.0
    output = 2.0
    """
    with pytest.raises(ValueError, match="acme:m.*source"):
        parse_profiles(text)


def test_an_entry_without_a_date_is_refused() -> None:
    text = """
    [models."acme:m"]
    source = "https://example.invalid/pricing"
    context_window = 1000
    input = 1.0
    cached_input = 0.1
    output = 2.0
    """
    with pytest.raises(ValueError, match="acme:m.*prices_as_of"):
        parse_profiles(text)


def test_anthropic_cache_prices_follow_the_published_multipliers() -> None:
    anthropic = {k: p for k, p in _table().items() if k.startswith("anthropic:")}
    assert len(anthropic) >= 3
    for name, profile in anthropic.items():
        assert profile.cached_input == pytest.approx(0.1 * profile.input), name
        assert profile.cache_write == pytest.approx(1.25 * profile.input), name


def test_one_provider_has_one_cached_read_ratio_per_model_family() -> None:
    # The ratio may differ between providers, never between one provider's models.
    ratios: dict[str, set[float]] = {}
    for name, profile in _table().items():
        if ":" in name and profile.input:
            ratios.setdefault(name.split(":")[0], set()).add(
                round(profile.cached_input / profile.input, 6)
            )
    assert all(len(r) == 1 for r in ratios.values()), ratios
