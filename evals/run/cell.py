"""Run eval cells: one scenario x strategy x parameter setting x seed, fully in-process, each
with its own in-memory store. This is what `ctxlab eval`, the CI gate and the Prefect sweep
(one task per cell) call."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evals.run.arms import get_arm
from evals.run.judge import Judge
from evals.run.replay import MiddlewareFactory, Progress, replay
from evals.run.settings import Settings
from evals.scenarios import get_scenario
from evals.scoring.results import EvalResult, from_replay
from evals.simulated import DEFAULT_READER
from harness.models import Model


@dataclass(frozen=True)
class Cell:
    """One run to make: `scenario` under `strategy` (an arm of `evals.run.arms`: a harness
    strategy, `none-unbounded` or `oracle`) with `params` (a `Settings`, or a mapping of dotted
    strategy keys such as `{"summarize.trigger": 0.7}` and scenario options such as
    `{"weeks": 4}`, split once into one) for one seed and scale.

    reader: how the simulated model reads: "fallible" (default: misses with length and
    depth, confuses look-alikes, searches with the question's words) or "ideal".
    model: "simulated", or "openai:..." / "anthropic:..." (or a `Model`) to let that model act
    at the decision points. middleware: a factory of your own middleware, added to the
    strategy's stack (the subagents' too, as `create_agent` does); `label` names the
    result's strategy (e.g. "none+my-compactor").
    `window` caps the model's context window (tokens), so a live model is compacted as the
    simulated one is. `judge`: a model that also grades every answered probe."""

    scenario: str
    strategy: str
    params: Settings = field(default_factory=Settings)
    seed: int = 0
    scale: str = "small"
    model: str | Model = "simulated"
    reader: str = DEFAULT_READER
    middleware: MiddlewareFactory | None = None
    label: str | None = None
    window: int | None = None
    judge: str | Model | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", Settings.of(self.params))

    def check(self) -> None:
        """Raise on an unknown scenario, scale, strategy, parameter or model (or a parameter
        out of its range), without running anything."""
        from evals.scenarios import check_options, scenario_summary
        from evals.scenarios.base import check_scale
        from harness.models import resolve_model
        from harness.profiles import get_profile
        from harness.strategies import build_stack

        scenario_summary(self.scenario)
        check_scale(self.scale)
        check_options(self.scenario, self.params.scenario.as_dict())
        # Building the stack checks every key and range-checks every value (a ValueError
        # naming the key), so `offload.tool_token_limit=-5` is refused before any run.
        build_stack(get_arm(self.strategy).strategy, self.params.strategy)
        if not isinstance(self.model, str):
            return
        if ":" not in self.model:  # a bare name resolves or fails at once, with no SDK call
            resolve_model(self.model)
        get_profile(self.model)


def check_cells(cells: Iterable[Cell]) -> None:
    """Raise on the first cell that does not check, so a mistake in the last arm does not
    surface after the others have run. Cells that differ only in seed, reader, window or
    label are checked once."""
    unique = {(c.scenario, c.strategy, c.scale, repr(c.model), repr(c.params)): c for c in cells}
    for cell in unique.values():
        cell.check()


async def arun_cell(
    cell: Cell, *, max_usd: float | None = None, progress: Progress | None = None
) -> EvalResult:
    """Run `cell` and score it, for callers already inside an event loop. No Prefect, no
    shared state: safe to call from worker threads or processes. `max_usd` caps the spend on
    real-model calls (the judge's count against it)."""
    arm = get_arm(cell.strategy)
    scenario = get_scenario(
        cell.scenario, seed=cell.seed, scale=cell.scale, options=cell.params.scenario.as_dict()
    )
    built = arm.scenario(scenario)
    # An unbounded arm is the reference that keeps everything: a cap would make it overflow.
    window = None if arm.unbounded else cell.window
    start = time.perf_counter()
    outcome = await replay(
        built, arm.strategy, cell.params.strategy, seed=cell.seed, model=cell.model,
        reader=cell.reader, max_usd=max_usd, progress=progress,
        middleware=arm.with_middleware(built, cell.middleware),
        subagent_middleware=arm.subagent_middleware(cell.middleware), window=window,
        judge=Judge(cell.judge) if cell.judge is not None else None,
    )  # fmt: skip
    wall = time.perf_counter() - start
    if outcome.store is not None:
        outcome.store.close()
    # A capped window is part of the setting: runs with and without it must not be pooled
    # (an unbounded arm keeps the label of the suite it ran in, not the cap).
    capped = {"window": cell.window} if cell.window is not None else {}
    model = cell.model
    return from_replay(
        outcome, scenario=built.name, strategy=cell.label or cell.strategy,
        params={**cell.params, **capped}, seed=cell.seed, scale=cell.scale,
        model=model if isinstance(model, str) else model.name,
        reader=cell.reader if model == "simulated" else "live", wall_s=wall,
        thresholds=outcome.thresholds,
    )  # fmt: skip


def run_cell(
    scenario: str,
    strategy: str,
    params: Mapping[str, Any] | None = None,
    seed: int = 0,
    scale: str = "small",
    model: str | Model = "simulated",
    *,
    reader: str = DEFAULT_READER,
    max_usd: float | None = None,
    progress: Progress | None = None,
    middleware: MiddlewareFactory | None = None,
    label: str | None = None,
    window: int | None = None,
    judge: str | Model | None = None,
) -> EvalResult:
    """Run one `Cell` (its fields are this function's arguments) with `arun_cell`."""
    return asyncio.run(
        arun_cell(
            Cell(
                scenario,
                strategy,
                Settings.of(params),
                seed,
                scale,
                model,
                reader,
                middleware,
                label,
                window,
                judge,
            ),
            max_usd=max_usd,
            progress=progress,
        )
    )


def run_cells(
    cells: Iterable[Cell],
    *,
    max_usd: float | None = None,
    on_result: Callable[[Cell, EvalResult], None] | None = None,
    progress: Callable[[Cell, int, int], None] | None = None,
) -> list[EvalResult]:
    """Run cells one after another. A spending cap on real-model calls applies to the whole
    batch."""
    results = []
    spent = 0.0
    for cell in cells:
        left = None if max_usd is None else max(max_usd - spent, 0.0)

        def step(done: int, total: int, cell: Cell = cell) -> None:
            if progress is not None:
                progress(cell, done, total)

        result = asyncio.run(arun_cell(cell, max_usd=left, progress=step))
        spent += result.live_cost_usd
        results.append(result)
        if on_result is not None:
            on_result(cell, result)
    return results


def grid(
    scenario: str,
    strategies: Sequence[str],
    *,
    seeds: Sequence[int] = (0,),
    scale: str = "small",
    model: str = "simulated",
    params: Mapping[str, Any] | None = None,
    reader: str = DEFAULT_READER,
) -> list[Cell]:
    return [
        Cell(scenario, s, Settings.of(params), seed, scale, model, reader)
        for s in strategies
        for seed in seeds
    ]
