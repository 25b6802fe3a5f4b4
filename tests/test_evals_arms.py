"""The eval-only arms: `none-unbounded` (the cost baseline) and `oracle` (the token bound)."""

import pytest

from evals import run_cell
from evals.arms import ARMS, get_arm
from harness.errors import HarnessError


@pytest.fixture(scope="module")
def flagship():
    """The small flagship under the arms compared below, seed 0."""
    arms = ("none", "none-unbounded", "full")
    return {a: run_cell("competitive-analysis", a, {}, 0, "small") for a in arms}


def test_none_unbounded_is_none_on_a_window_that_fits(flagship) -> None:
    none, unbounded = flagship["none"], flagship["none-unbounded"]
    assert none.overflowed
    assert not unbounded.overflowed and unbounded.status == "completed"
    assert unbounded.strategy == "none-unbounded"
    assert all(p.status != "not_reached" for p in unbounded.probe_results)
    # Keeping everything costs more than any compaction, and more than none's truncated run.
    assert unbounded.input_tokens > flagship["full"].input_tokens > none.input_tokens


def test_an_unknown_arm_names_the_valid_ones() -> None:
    with pytest.raises(HarnessError, match="none-unbounded"):
        get_arm("nonesuch")
    assert {"none", "none-unbounded", "oracle", "full"} <= set(ARMS)
