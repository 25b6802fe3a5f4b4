"""The eval-only arms: `none-unbounded` (the cost baseline) and `oracle` (the token bound)."""

import asyncio

import pytest
from helpers.windows import make_state, tool_group

from evals import run_cell
from evals.run.arms import ARMS, arm_params, get_arm
from evals.run.oracle import Oracle
from evals.simulated.plan import Act, Answer, Cue, Plan, PlanTurn
from harness.errors import HarnessError
from harness.messages import ModelResponse, assistant, user
from harness.middleware.base import ModelRequest
from harness.models.base import ModelSettings


@pytest.fixture(scope="module")
def flagship():
    """The small flagship under the arms compared below, seed 0."""
    arms = ("none", "none-unbounded", "full", "oracle")
    return {a: run_cell("competitive-analysis", a, {}, 0, "small") for a in arms}


def test_none_unbounded_is_none_on_a_window_that_fits(flagship) -> None:
    none, unbounded = flagship["none"], flagship["none-unbounded"]
    assert none.overflowed
    assert not unbounded.overflowed and unbounded.status == "completed"
    assert unbounded.strategy == "none-unbounded"
    assert all(p.status != "not_reached" for p in unbounded.probe_results)
    # Keeping everything costs more than any compaction, and more than none's truncated run.
    assert unbounded.input_tokens > flagship["full"].input_tokens > none.input_tokens


def test_the_oracle_bounds_full_from_below_at_full_accuracy(flagship) -> None:
    oracle, full = flagship["oracle"], flagship["full"]
    assert oracle.strategy == "oracle" and oracle.status == "completed"
    assert oracle.accuracy == 1.0 >= full.accuracy
    assert oracle.input_tokens < full.input_tokens
    assert oracle.peak_context_tokens < full.peak_context_tokens


def test_the_oracle_keeps_the_newest_line_showing_each_fact_a_remaining_step_reads() -> None:
    cue = Cue((r"Acme revenue: (\d+)",))
    plan = Plan(turns=(
        PlanTurn("Study Acme.", (Act("Fetching.", (("fetch", {}),)),)),
        PlanTurn("What is Acme's revenue?", (Answer("revenue", cue),)),
        PlanTurn("Thanks."),
    ))  # fmt: skip
    study = [
        user("Study Acme."),
        *tool_group(["noise " * 50 + "\nAcme revenue: 12\n" + "more noise " * 50]),
        *tool_group(["nothing to see " * 40]),
    ]
    asked = [*study, user("What is Acme's revenue?")]
    seen = asyncio.run(ask(Oracle(plan), asked))
    assert [m.role for m in seen] == ["assistant", "tool", "user"]
    assert seen[1].content == "Acme revenue: 12"  # cut to the line that shows the fact
    later = asyncio.run(ask(Oracle(plan), [*asked, assistant("12"), user("Thanks.")]))
    assert [m.content for m in later] == ["Thanks."]  # nothing left to read


async def ask(oracle: Oracle, messages) -> tuple:
    seen = []

    async def handler(request):
        seen.append(request.messages)
        return ModelResponse(text="ok")

    state = make_state(oracle, messages)
    request = ModelRequest(state, tuple(messages), "", (), ModelSettings())
    await oracle.wrap_model_call(request, handler)
    return seen[0]


def test_an_unknown_arm_names_the_valid_ones() -> None:
    with pytest.raises(HarnessError, match="none-unbounded"):
        get_arm("nonesuch")
    assert {"none", "none-unbounded", "oracle", "full"} <= set(ARMS)
    # a sweep over an eval arm takes the keys of the strategy it runs
    assert arm_params("none-unbounded") == arm_params("none")
    assert "truncate.target" in arm_params("truncate")


@pytest.mark.parametrize(
    ("ablation", "lost"),
    [
        ("full-no-skills", {"report-sections"}),  # the template's sections come from the skill
        ("full-no-memory", {"memory-format", "report-bullets"}),  # week 2 forgets the format
        ("full-no-subagents", {"supplier-juniper-retail"}),  # found by the analyst sweep
    ],
)
def test_each_ablation_loses_the_probes_its_technique_answers(flagship, ablation, lost) -> None:
    right = {p.id for p in flagship["full"].probe_results if p.correct}
    ablated = run_cell("competitive-analysis", ablation, {}, 0, "small")
    assert lost <= right - {p.id for p in ablated.probe_results if p.correct}
    # Not strictly below: a smaller window moves the fallible reader's depth draws, so on one
    # seed an ablation can win back an unrelated probe (full-no-skills reads one full misses).
    assert ablated.accuracy <= flagship["full"].accuracy
