"""`--set` split once: dotted keys to the strategy, the others to the scenario, carried as one
`Settings` through a cell."""

from __future__ import annotations

import pytest

from evals.run.arms import params_by_arm
from evals.run.cell import Cell
from evals.run.settings import Settings
from evals.scenarios.options import ScenarioOptions
from harness.settings import StrategySettings


def test_set_flags_split_into_strategy_settings_and_scenario_options():
    settings = Settings.parse(["summarize.trigger=0.7", "weeks=4", "summarize.keep=messages:40"])
    assert settings.strategy == StrategySettings.parse(
        {"summarize.trigger": 0.7, "summarize.keep": "messages:40"}
    )
    assert settings.scenario == ScenarioOptions((("weeks", 4),))
    # As a mapping it is what a result records.
    assert dict(settings) == {"summarize.trigger": 0.7, "summarize.keep": "messages:40", "weeks": 4}


def test_a_bad_set_flag_names_itself():
    with pytest.raises(ValueError, match="expected key=value, got 'summarize.trigger'"):
        Settings.parse(["summarize.trigger"])


def test_a_cell_keeps_the_settings_it_was_given():
    settings = Settings.parse(["mask.keep=4"])
    assert Cell("competitive-analysis", "mask", settings).params is settings
    from_dict = Cell("competitive-analysis", "mask", {"mask.keep": 4, "weeks": 2}).params
    assert isinstance(from_dict, Settings)
    assert from_dict.strategy.groups == {"mask": {"keep": 4}}
    assert from_dict.scenario.as_dict() == {"weeks": 2}


def test_each_arm_gets_the_strategy_settings_its_stack_takes_and_every_option():
    by_arm = params_by_arm(Settings.parse(["summarize.trigger=0.7", "weeks=3"]),
                           ["none", "summarize"])  # fmt: skip
    assert by_arm["none"].strategy == StrategySettings()
    assert by_arm["summarize"].strategy.dotted() == {"summarize.trigger": 0.7}
    assert all(s.scenario.as_dict() == {"weeks": 3} for s in by_arm.values())


def test_a_cell_with_settings_pickles_for_a_process_runner():
    import pickle

    cell = Cell("competitive-analysis", "full", {"summarize.trigger": 0.6, "weeks": 2})
    again = pickle.loads(pickle.dumps(cell))
    assert again.params.strategy == cell.params.strategy
    assert again.params.scenario == cell.params.scenario
