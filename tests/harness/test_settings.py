"""StrategySettings: dotted keys grouped by middleware once, read-only, checked per stack."""

from __future__ import annotations

import pytest

from harness import Store, create_agent
from harness.errors import HarnessError
from harness.models import ScriptedModel
from harness.settings import StrategySettings
from harness.strategies import build_stack


def test_dotted_keys_are_grouped_by_middleware_and_read_back():
    settings = StrategySettings.parse(
        {"summarize.trigger": 0.7, "offload.tool_token_limit": 5_000, "summarize.keep": 3}
    )
    assert settings.groups == {
        "summarize": {"trigger": 0.7, "keep": 3},
        "offload": {"tool_token_limit": 5_000},
    }
    assert settings.dotted() == {
        "summarize.trigger": 0.7, "summarize.keep": 3, "offload.tool_token_limit": 5_000,
    }  # fmt: skip
    assert StrategySettings.parse(settings) is settings


def test_settings_cannot_be_changed_after_parsing():
    settings = StrategySettings.parse({"mask.keep": 4})
    with pytest.raises(TypeError):
        settings.groups["mask"]["keep"] = 5  # type: ignore[index]
    with pytest.raises(TypeError):
        settings.groups["truncate"] = {}  # type: ignore[index]


@pytest.mark.parametrize("key", ["weeks", ".trigger", "summarize."])
def test_a_key_naming_no_middleware_is_refused(key):
    with pytest.raises(HarnessError, match=rf"unknown strategy parameter {key!r}"):
        StrategySettings.parse({key: 1})


def test_over_puts_its_own_values_over_the_defaults():
    defaults = StrategySettings.parse({"offload.tool_token_limit": 800, "summarize.trigger": 0.8})
    mine = StrategySettings.parse({"summarize.trigger": 0.6})
    assert mine.over(defaults).dotted() == {
        "offload.tool_token_limit": 800, "summarize.trigger": 0.6,
    }  # fmt: skip
    assert mine.only(["offload.tool_token_limit"]) == StrategySettings()


def test_the_same_settings_object_reaches_the_stack_and_the_run_record():
    settings = StrategySettings.parse({"mask.keep": 3})
    mask = build_stack("mask", settings)[2]
    assert mask.keep == 3
    agent = create_agent(ScriptedModel([]), store=Store(":memory:"), strategy="mask",
                         strategy_params=settings)  # fmt: skip
    assert agent.config().strategy_settings is settings


def test_settings_cross_to_a_worker_process_intact():
    import pickle

    settings = StrategySettings.parse({"summarize.trigger": 0.6, "mask.keep": 2})
    assert pickle.loads(pickle.dumps(settings)) == settings
