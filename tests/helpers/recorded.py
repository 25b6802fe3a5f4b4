"""A flagship run recorded in-process, as `ctxlab run competitive-analysis` records it, for
the import tests and the import benchmark."""

from __future__ import annotations

from pathlib import Path

from evals.scenarios import get_scenario
from evals.simulated import SimulatedModel
from harness import Store, create_agent


def record_flagship(db: Path) -> str:
    """Week 1 of the flagship on the simulated model, as `ctxlab run competitive-analysis`
    records it (the same agent, without Prefect); the first run's id."""
    scenario = get_scenario("competitive-analysis", 0, "small")
    store = Store(str(db))
    agent = create_agent(
        SimulatedModel(scenario.plan, profile=scenario.profile, seed=0),
        scenario.tools, system_prompt=scenario.system_prompt, store=store,
        name="competitive-analysis", max_steps=scenario.max_steps, strategy="full",
        strategy_params={k: v for k, v in scenario.params.items() if k.startswith("offload.")},
        skills=(scenario.skills_dir,) if scenario.skills_dir else (),
        subagents=scenario.subagents,
    )  # fmt: skip
    first = ""
    for turn in scenario.sessions[0].turns:
        if turn.probe is None:
            result = agent.run_sync(turn.text, thread_id="week-1")
            first = first or result.run_id
    store.close()
    return first
