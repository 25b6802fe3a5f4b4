"""Every numeric middleware parameter is range-checked when the middleware is built, from
Python or from `--set`: a ValueError naming the dotted key and the valid range, never a loop
spinning on a degenerate value."""

from __future__ import annotations

from typing import Any

import pytest

from harness import Store, create_agent
from harness.errors import UnknownModelError
from harness.middleware import OffloadLargeResults
from harness.middleware.mask import ObservationMask
from harness.models import ScriptedModel, resolve_model
from harness.profiles import ModelProfile
from harness.strategies import build_stack
from harness.tokens import TokenCounter

# (strategy, key, bad value, what the message must say), one row per kind of parameter.
DEGENERATE = [
    # whole numbers
    ("full", "offload.tool_token_limit", -5, ">= 0"),
    ("full", "offload.human_token_limit", -1, ">= 0"),
    ("full", "offload.head_lines", 2.5, "whole number"),
    ("full", "offload.line_chars", 0, ">= 1"),
    ("mask", "mask.keep", -1, ">= 0"),
    ("mask", "mask.batch", 0, ">= 1"),
    ("context-edit", "context-edit.keep", -3, ">= 0"),
    ("context-edit", "context-edit.fallback_window", 0, ">= 1"),
    ("truncate", "truncate.fallback_window", -1, ">= 1"),
    ("summarize", "summarize.summary_max_tokens", 0, ">= 1"),
    ("summarize", "summarize.fallback_trigger_tokens", "many", "whole number"),
    ("summarize", "summarize.topic_min_tokens", -1, ">= 0"),
    ("full", "memory.max_chars", -1, ">= 0"),
    ("full", "skills.max_file_bytes", 0, ">= 1"),
    ("full", "skills.max_skill_bytes", True, "whole number"),
    # whole numbers or null
    ("full", "subagents.max_steps", 0, ">= 1 or null"),
    ("none", "guard.window", -100, ">= 1 or null"),
    # numbers in a range, or null
    ("summarize", "summarize.summarizer_headroom", 0.9, "< 0.75"),
    ("summarize", "summarize.topic_shift", 1.5, "<= 1"),
    ("full", "offload.retention_days", -1, ">= 0 or null"),
    # thresholds (fraction, tokens or messages)
    ("summarize", "summarize.trigger", 1.5, "fraction in (0, 1]"),
    ("summarize", "summarize.trigger", "high", "a token count"),
    ("summarize", "summarize.keep", "messages:-1", "cannot be negative"),
    ("truncate", "truncate.target", -0.5, "must be in (0, 1], got -0.5"),
    ("context-edit", "context-edit.clear_at_least", "tokens:-5", "cannot be negative"),
    # flags
    ("summarize", "summarize.compact_tool", "yes", "true or false"),
    ("summarize", "summarize.retry_on_overflow", 1, "true or false"),
    ("full", "skills.include_stored", "no", "true or false"),
    ("full", "subagents.general_purpose", 0, "true or false"),
]


@pytest.mark.parametrize(("strategy", "key", "value", "says"), DEGENERATE)
def test_a_degenerate_value_is_refused_when_the_stack_is_built(
    strategy: str, key: str, value: Any, says: str
) -> None:
    with pytest.raises(ValueError) as caught:
        build_stack(strategy, {key: value})
    assert str(caught.value).startswith(key)
    assert says in str(caught.value)


def test_a_middleware_built_in_python_is_checked_the_same_way() -> None:
    with pytest.raises(ValueError, match=r"offload\.tool_token_limit must be a whole number >= 0"):
        OffloadLargeResults(tool_token_limit=-5)
    with pytest.raises(ValueError, match=r"mask\.batch must be a whole number >= 1, got 0"):
        ObservationMask(batch=0)
    with pytest.raises(ValueError, match="offload.tool_token_limit"):
        create_agent(ScriptedModel([]), store=Store(":memory:"),
                     strategy_params={"offload.tool_token_limit": -5})  # fmt: skip


def test_in_range_values_are_kept_and_an_integral_float_counts_as_whole() -> None:
    assert OffloadLargeResults(tool_token_limit=1e3).tool_token_limit == 1000
    assert OffloadLargeResults(tool_token_limit=0).tool_token_limit == 0
    assert ObservationMask(keep=0, batch=1).keep == 0


def test_the_token_count_that_spun_on_a_negative_limit_refuses_it() -> None:
    # `count_over` doubled a prefix size that started at or below zero: it never grew.
    counter = TokenCounter()
    with pytest.raises(ValueError, match="cannot be negative"):
        counter.count_over("x\n" * 10_000, -5)
    with pytest.raises(ValueError, match="cannot be negative"):
        counter.count_over("x\n" * 10_000, -1)
    assert counter.count_over("x\n" * 10_000, 0) is not None


def test_a_model_name_without_its_provider_names_the_prefix() -> None:
    with pytest.raises(UnknownModelError, match=r"did you mean openai:gpt-6\.2-sol\?"):
        resolve_model("gpt-6.2-sol")
    with pytest.raises(UnknownModelError, match="no provider prefix; expected"):
        resolve_model("no-such-model")


def test_create_agent_takes_the_profile_of_a_model_without_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    with pytest.raises(UnknownModelError, match="profile=ModelProfile.*to create_agent"):
        create_agent("openai:brand-new-model", store=Store(":memory:"))
    profile = ModelProfile(name="openai:brand-new-model", context_window=64_000, input=1.0)
    agent = create_agent("openai:brand-new-model", store=Store(":memory:"), profile=profile)
    assert agent.model.profile is profile
    with pytest.raises(ValueError, match="a Model object has its own"):
        create_agent(ScriptedModel([]), store=Store(":memory:"), profile=profile)
