"""Strategies by name: the assembled stack, thresholds from `create_agent`, and every arm on
the same long run (the no-compaction baseline fails where the others finish)."""

from __future__ import annotations

import pytest

from harness import (
    STRATEGIES,
    ContextOverflowError,
    HarnessError,
    Middleware,
    Store,
    create_agent,
    tool,
)
from harness.middleware import (
    ContextEdit,
    ContextGuard,
    Memory,
    ObservationMask,
    OffloadLargeResults,
    PatchDanglingToolCalls,
    SubAgent,
    SubAgents,
    Summarization,
    Threshold,
    Truncate,
)
from harness.models import FunctionModel, ScriptedModel, call, reply
from harness.profiles import ModelProfile
from harness.strategies import subagent_stack, valid_params


class Mine(Middleware):
    name = "mine"


def stack(strategy: str, **kwargs) -> list[str]:
    agent = create_agent(ScriptedModel([]), store=Store(":memory:"), strategy=strategy, **kwargs)
    return [m.name for m in agent.middleware]


def test_each_strategy_assembles_the_documented_order() -> None:
    around = ["dangling", "mine", "memory", "guard"]
    expected = {
        "none": ["skills", "subagents", *around],
        "truncate": ["skills", "subagents", "truncate", *around],
        "mask": ["skills", "subagents", "mask", *around],
        "offload": ["skills", "offload", "subagents", *around],
        "summarize": ["skills", "subagents", "summarize", *around],
        "context-edit": ["skills", "subagents", "context-edit", *around],
        "full": ["skills", "offload", "subagents", "summarize", *around],
        "full-no-memory": [
            "skills",
            "offload",
            "subagents",
            "summarize",
            "dangling",
            "mine",
            "guard",
        ],
        "full-no-skills": ["offload", "subagents", "summarize", *around],
        "full-no-subagents": ["skills", "offload", "summarize", *around],
    }
    assert set(expected) == set(STRATEGIES)
    for name, names in expected.items():
        assert stack(name, middleware=[Mine()]) == names
    assert stack("full", memory=()) == [
        "skills",
        "offload",
        "subagents",
        "summarize",
        "dangling",
        "guard",
    ]
    assert stack("full").count("mine") == 0


def test_each_ablation_takes_its_technique_away() -> None:
    def agent(strategy: str):
        return create_agent(ScriptedModel([]), store=Store(":memory:"), strategy=strategy)

    def tools(strategy: str) -> set[str]:
        return {t.name for t in agent(strategy).tools}

    assert "task" in tools("full") and "task" not in tools("full-no-subagents")
    assert all(m.name != "memory" for m in agent("full-no-memory").middleware)
    assert all(m.name != "skills" for m in agent("full-no-skills").middleware)
    # a subagent of an ablation runs the same compaction as the parent's `full`
    assert [type(m) for m in subagent_stack("full-no-skills")] == [
        type(m) for m in subagent_stack("full")
    ]


def test_thresholds_are_set_from_create_agent() -> None:
    agent = create_agent(
        ScriptedModel([]), store=Store(":memory:"), strategy="full",
        strategy_params={
            "summarize.trigger": 0.7, "summarize.keep": ("messages", 20),
            "summarize.topic_shift": 0.3, "offload.tool_token_limit": 5_000,
            "memory.max_chars": 1_000, "subagents.general_purpose": False,
        },
    )  # fmt: skip
    mw = {m.name: m for m in agent.middleware}
    assert isinstance(mw["summarize"], Summarization)
    assert mw["summarize"].triggers == (Threshold("fraction", 0.7),)
    assert mw["summarize"].keep == Threshold("messages", 20)
    assert mw["summarize"].topic.min_overlap == 0.3
    assert (
        isinstance(mw["offload"], OffloadLargeResults) and mw["offload"].tool_token_limit == 5_000
    )
    assert isinstance(mw["memory"], Memory) and mw["memory"].max_chars == 1_000
    assert "task" not in [t.name for t in agent.tools]
    for name, cls, params in [
        ("truncate", Truncate, {"truncate.trigger": "tokens:90000"}),
        ("mask", ObservationMask, {"mask.keep": 4, "mask.batch": 5}),
        ("context-edit", ContextEdit, {"context-edit.trigger": 80_000, "context-edit.keep": 1}),
    ]:
        arm = create_agent(ScriptedModel([]), store=Store(":memory:"), strategy=name,
                           strategy_params=params).middleware[2]  # fmt: skip
        assert isinstance(arm, cls)
        for key, value in params.items():
            attr = getattr(arm, key.split(".")[1])
            assert attr == value or attr == Threshold.parse(value)


def test_bad_names_and_keys_are_clear_errors() -> None:
    with pytest.raises(HarnessError, match="unknown strategy 'fast'; choose one of none, truncate"):
        create_agent(ScriptedModel([]), store=Store(":memory:"), strategy="fast")
    with pytest.raises(HarnessError, match=r"'summarize.trigers'.*valid keys: .*summarize.trigger"):
        create_agent(
            ScriptedModel([]), store=Store(":memory:"), strategy_params={"summarize.trigers": 1}
        )
    with pytest.raises(HarnessError, match="'mask.keep' for strategy 'truncate'"):
        create_agent(ScriptedModel([]), store=Store(":memory:"), strategy="truncate",
                     strategy_params={"mask.keep": 3})  # fmt: skip
    assert "skills.sources" not in valid_params(["skills"])  # create_agent's own argument


def test_file_tools_are_on_unless_turned_off_and_yours_win() -> None:
    @tool
    def read_file(file_path: str) -> str:
        """My own reader."""
        return "mine"

    def names(**kwargs) -> dict:
        agent = create_agent(ScriptedModel([]), store=Store(":memory:"), **kwargs)
        return {t.name: t for t in agent.tools}

    assert {"ls", "read_file", "write_file", "edit_file", "glob", "grep", "delete"} <= set(names())
    assert names(tools=[read_file])["read_file"] is read_file
    assert set(names(file_tools=False)) == {"task"}


def test_subagents_get_their_own_compaction_stack_with_the_parents_parameters() -> None:
    agent = create_agent(
        ScriptedModel([]), store=Store(":memory:"), strategy="summarize",
        subagents=[SubAgent("cheap", "Cheap work.", strategy="truncate")],
        strategy_params={"summarize.trigger": 0.5},
    )  # fmt: skip
    sub = next(m for m in agent.middleware if isinstance(m, SubAgents))
    assert sub.strategy == "summarize"
    fresh = sub.stack("summarize", ())
    assert [type(m) for m in fresh] == [Summarization, PatchDanglingToolCalls, ContextGuard]
    assert fresh[0].triggers == (Threshold("fraction", 0.5),)
    assert fresh[0] is not sub.stack("summarize", ())[0]  # a new one per subagent run
    assert [type(m) for m in sub.stack("truncate", ())] == [
        Truncate,
        PatchDanglingToolCalls,
        ContextGuard,
    ]
    full = subagent_stack("full")
    assert [type(m) for m in full] == [
        OffloadLargeResults,
        Summarization,
        PatchDanglingToolCalls,
        ContextGuard,
    ]


@tool
def fetch(n: int) -> str:
    """Fetch market-data export n."""
    return "\n".join(f"export {n} row {i}: price {n}.{i:03d} EUR" for i in range(120))


def long_run_model() -> FunctionModel:
    """Fetches twelve exports (about 2,000 tokens each) into a 12,000-token window."""
    fetched = []

    def fn(messages, params):
        if "<summary-request>" in messages[-1].content:
            return "Fetched exports; prices in EUR."
        fetched.append(len(fetched) + 1)
        return reply("", call("fetch", n=fetched[-1])) if len(fetched) <= 12 else "report ready"

    return FunctionModel(fn, name="long", profile=ModelProfile(name="long", context_window=12_000))


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_every_arm_runs_the_same_long_job_and_only_none_fails(strategy: str) -> None:
    params = {
        "offload": {"offload.tool_token_limit": 500},
        "full": {"offload.tool_token_limit": 500},
        "context-edit": {"context-edit.trigger": 8_000},
        "mask": {"mask.keep": 2},
    }.get(strategy)
    model = long_run_model()
    agent = create_agent(
        model, [fetch], store=Store(":memory:"), strategy=strategy, strategy_params=params,
        memory=(), max_steps=40,
    )  # fmt: skip
    if strategy == "none":
        with pytest.raises(ContextOverflowError):
            agent.run_sync("Fetch the twelve exports, then report.")
        assert agent.store.runs.all()[0]["status"] == "failed"
        return
    result = agent.run_sync("Fetch the twelve exports, then report.")
    assert result.status == "completed" and result.output == "report ready"
    assert result.peak_context_tokens <= 12_000
    assert agent.store.runs.all()[0]["strategy"] == strategy
