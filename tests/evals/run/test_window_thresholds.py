"""Arms act at the window under test (evals/run/thresholds.py): a capped window scales the
absolute-token thresholds nobody set, an explicit `--set` wins, `none-unbounded` is never
capped, and arms whose replays are identical are reported as such."""

import pytest
from role_scenario import role_scenario

from evals.analysis.identical import identical_replays
from evals.report.eval_table import print_table
from evals.run.cell import run_cell
from evals.run.thresholds import scaled_thresholds


def test_a_capped_window_scales_offload_to_an_eighth_capped_at_its_default() -> None:
    assert scaled_thresholds("offload", 16_000, {}, {}) == {
        "offload.tool_token_limit": 2_000, "offload.human_token_limit": 4_000,
    }  # fmt: skip
    # Never above the default (or the scenario's own value at its scale).
    assert scaled_thresholds("full", 1_000_000, {}, {})["offload.tool_token_limit"] == 20_000
    assert (
        scaled_thresholds("offload", 16_000, {"offload.tool_token_limit": 2_000}, {})[
            "offload.tool_token_limit"
        ]
        == 2_000
    )
    assert scaled_thresholds("context-edit", 10_000, {}, {}) == {"context-edit.trigger": 6_000}
    # An explicit value wins; no cap, nothing scales; a fraction follows the window already.
    given = {"offload.tool_token_limit": 20_000}
    assert "offload.tool_token_limit" not in scaled_thresholds("offload", 16_000, {}, given)
    assert scaled_thresholds("offload", None, {}, {}) == {}
    assert scaled_thresholds("context-edit", 10_000, {"context-edit.trigger": 0.5}, {}) == {}
    assert scaled_thresholds("none", 16_000, {}, {}) == {}


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(role_scenario(tmp_path_factory.mktemp("roles")))


def test_offload_acts_at_the_window_under_test(scenario: str) -> None:
    run = run_cell(scenario, "offload", window=16_000)
    assert run.offloads == 1
    assert run.thresholds["offload.tool_token_limit"] == 2_000


def test_none_unbounded_is_never_capped(scenario: str) -> None:
    run = run_cell(scenario, "none-unbounded", window=4_000)
    assert not run.overflowed and run.in_view == 1.0
    assert run_cell(scenario, "none", window=4_000).overflowed


def test_identical_replays_are_named_with_the_reason(scenario: str, capsys) -> None:
    none = run_cell(scenario, "none", window=16_000)
    idle = run_cell(scenario, "offload", {"offload.tool_token_limit": 20_000}, window=16_000)
    acting = run_cell(scenario, "offload", window=16_000)
    assert idle.replay_digest == none.replay_digest != acting.replay_digest
    lines = identical_replays([none, idle])
    assert lines == [
        "`none` and `offload` replayed identically on 1 of 1 runs (`offload` acted nowhere: "
        "no result crossed 20,000 tokens)."
    ]
    assert identical_replays([none, acting]) == []
    print_table([none, idle])
    out = capsys.readouterr().out
    assert "replayed identically" in out and "in view / one read / lost" in out


def test_arms_that_replayed_alike_are_grouped_per_run() -> None:
    from helpers.evals import result

    runs = [
        result(s, seed, replay_digest=digest, offloads=0, summaries=0)
        for seed in (0, 1)
        for s, digest in (("none", "a"), ("offload", "a"), ("truncate", "a"), ("full", "b"))
    ]
    runs.append(result("truncate", 2, replay_digest="c"))
    assert identical_replays(runs) == [
        "`none`, `offload` and `truncate` replayed identically on 2 of 2 runs (`offload` acted "
        "nowhere: no result crossed its token limit)."
    ]
