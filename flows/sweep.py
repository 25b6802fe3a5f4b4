"""The `eval_sweep` flow: a grid of scenario x strategy x parameter values x seeds, one Prefect
task per cell.

Each cell replays the scenario through the harness inline (no task per step inside a cell:
a cell is one coarse unit of work) with its own in-memory store, so cells share nothing and run
anywhere: in threads (the default), in local processes (`process`), or on a Dask cluster
(`dask`, through prefect-dask: a local cluster, or a scheduler address). Only the flow process
writes the results to DuckDB, in one batch, then publishes a table artifact with the Pareto
front and the recommended setting.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from prefect import flow, task
from prefect.artifacts import acreate_markdown_artifact, acreate_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed
from prefect.runtime import flow_run as current_flow_run
from prefect.task_runners import ProcessPoolTaskRunner, TaskRunner, ThreadPoolTaskRunner

from evals import Aggregate, Cell, EvalResult, aggregate, arun_cell, pareto_front, recommend
from evals.analysis.metrics import Recommendation, summaries
from evals.analysis.stability import Stability, stability
from evals.analysis.stats import DEFAULT_SEEDS
from evals.run.arms import arm_params
from evals.run.settings import parse_grid as parse_grid  # `--grid`, shared with `eval --tuned`
from evals.scoring.storage import save_or_dump
from flows.interrupted import remember_flow_run
from flows.labels import slug, tag_flow_run
from flows.sweep_table import print_sweep as print_sweep  # the sweep's table
from harness.store import default_path

RUNNERS = ("thread", "process", "dask")
OnCell = Callable[[int, int, EvalResult], None]


def expand(
    scenario: str,
    strategies: Sequence[str],
    grid: Mapping[str, Sequence[Any]],
    seeds: Sequence[int],
    *,
    scale: str = "small",
    model: str = "simulated",
    reader: str = "fallible",
) -> list[Cell]:
    """Every cell of the grid. A grid key only varies the strategies whose stack takes it
    (`summarize.trigger` means nothing to `mask`); duplicate cells are dropped."""
    cells: dict[tuple[str, str, int], Cell] = {}
    for strategy in strategies:
        valid = set(arm_params(strategy))
        keys = [k for k in grid if k in valid]
        for values in itertools.product(*(grid[k] for k in keys)):
            params = dict(zip(keys, values, strict=True))
            for seed in seeds:
                cell = Cell(scenario, strategy, params, seed, scale, model, reader)
                cells.setdefault((strategy, repr(sorted(params.items())), seed), cell)
    accepted = {k for s in strategies for k in arm_params(s)}
    unknown = [k for k in grid if k not in accepted]
    if unknown:
        raise ValueError(
            f"no strategy in {list(strategies)} takes {unknown}; e.g. offload.tool_token_limit "
            "(offload, full), summarize.trigger (summarize, full), mask.keep (mask)"
        )
    return list(cells.values())


def cell_label(cell: Cell) -> str:
    settings = ",".join(f"{k}={v}" for k, v in sorted(cell.params.items()))
    name = cell.label or cell.strategy
    base = f"{name} [{settings}]" if settings else name
    return f"{base} seed={cell.seed}"


@task(name="eval-cell", cache_policy=NO_CACHE, persist_result=False)
def eval_cell(cell: Cell, max_usd: float | None = None) -> EvalResult:
    """One replay, scored. Runs in a worker thread or process: no store, no Prefect calls."""
    return asyncio.run(arun_cell(cell, max_usd=max_usd))


@dataclass(frozen=True)
class SweepResult:
    results: list[EvalResult]
    settings: list[Aggregate]
    front: list[Aggregate]
    recommended: Recommendation | None
    batch: str
    db: str
    stability: Stability | None = None  # the recommendation re-made leaving one seed out

    def explain(self) -> str | None:
        """Why the recommendation, claiming no settled lead when subsets of the seeds disagree."""
        if self.recommended is None:
            return None
        unstable = self.stability is not None and not self.stability.stable
        return self.recommended.explain(unstable=unstable)

    def rows(self) -> list[dict[str, Any]]:
        return table_rows(
            self.settings, self.front, self.recommended, self.results, stable=self.stability
        )


def table_rows(
    settings: Sequence[Aggregate],
    front: Sequence[Aggregate],
    recommended: Recommendation | None,
    results: Sequence[EvalResult] = (),
    *,
    stable: Stability | None = None,
) -> list[dict[str, Any]]:
    """One row per setting. With the `results` behind them, `vs_full` is the paired accuracy
    difference against `full` at its defaults on the same seeds and probes (None where the
    sweep did not run that setting). With `stable`, the recommended rows say whether subsets
    of the seeds recommend them too (`unstable`)."""
    unstable = stable is not None and not stable.stable
    on_front = {s.label for s in front}
    chosen = set(recommended.labels) if recommended else set()
    tied = {c.label for c in recommended.candidates} if recommended else set()
    paired = {row["setting"]: row for row in summaries(results)} if results else {}
    return [
        {
            "setting": s.label,
            "strategy": s.strategy,
            "params": dict(s.params),
            "seeds": len(s.seeds),
            "accuracy": round(s.accuracy.mean, 4),
            "accuracy_ci": f"{s.accuracy.low:.1%}-{s.accuracy.high:.1%}",
            "vs_full": paired.get(s.label, {}).get("accuracy_vs_full_mean"),
            "vs_full_ci": paired.get(s.label, {}).get("accuracy_vs_full_ci95"),
            "input_tokens": round(s.input_tokens.mean),
            "peak_context_tokens": round(s.peak_context_tokens),
            "cost_usd": round(s.cost_usd.mean, 6),
            "cost_by_cache_price": {k: round(v, 6) for k, v in s.cost_by_cache_price.items()},
            "overflow_rate": round(s.overflow_rate, 3),
            "availability": dict(s.availability),
            "pareto": s.label in on_front,
            "tied_with_best": s.label in tied and len(tied) > 1,
            "recommended": s.label in chosen,
            "unstable": s.label in chosen and unstable,
        }
        for s in settings
    ]


def task_runner(kind: str, *, workers: int | None = None, address: str | None = None) -> TaskRunner:
    """The task runner for `--runner`: threads (default), local processes, or Dask."""
    if kind == "thread":
        return ThreadPoolTaskRunner(max_workers=workers or 4)
    if kind == "process":
        return ProcessPoolTaskRunner(max_workers=workers)
    if kind == "dask":
        from evals.run.cluster import dask_module

        DaskTaskRunner = dask_module("prefect_dask", "prefect-dask").DaskTaskRunner
        if address:
            return DaskTaskRunner(address=address)
        return DaskTaskRunner(
            cluster_kwargs={"n_workers": workers or 2, "threads_per_worker": 1,
                            "dashboard_address": None}
        )  # fmt: skip
    raise ValueError(f"unknown runner {kind!r}; expected one of {', '.join(RUNNERS)}")


@flow(
    name="eval-sweep",
    flow_run_name="sweep {scenario} ({scale})",
    persist_result=False,
    on_running=[remember_flow_run],
)
async def eval_sweep(
    scenario: str,
    strategies: list[str] | None = None,
    grid: dict[str, list[Any]] | None = None,
    seeds: int | list[int] = DEFAULT_SEEDS,
    scale: str = "small",
    model: str = "simulated",
    reader: str = "fallible",
    db: str | None = None,
    max_usd: float | None = None,
    show_progress: bool = False,
    out: str | None = None,
) -> dict[str, Any]:
    """Run every cell of the grid, one task each, and publish the results.

    scenario: a scenario name (`ctxlab scenarios` lists them).
    strategies: the arms to compare (default `full`).
    grid: parameter values to sweep, e.g. {"summarize.trigger": [0.6, 0.85]}.
    seeds: how many seeds (0..N-1) per setting, or the seeds themselves; means and bootstrap
        intervals over them, and the recommendation re-made leaving each seed out.
    db: the DuckDB file the results are appended to (`eval_runs`, `eval_probes`).
    max_usd: spending cap per cell when a real model decides.
    show_progress: draw a progress bar on the terminal (the CLI sets it).
    out: a folder for the HTML report (index.html beside the markdown report and figures).
    """
    chosen = range(seeds) if isinstance(seeds, int) else seeds
    await tag_flow_run("sweep", f"scenario:{slug(scenario)}",
                       *(f"arm:{slug(s)}" for s in strategies or ["full"]))  # fmt: skip
    cells = expand(scenario, strategies or ["full"], grid or {}, chosen, scale=scale,
                   model=model, reader=reader)  # fmt: skip
    if show_progress:
        with terminal_progress(len(cells)) as advance:
            outcome = await run_sweep(cells, db=db, max_usd=max_usd, progress=advance)
    else:
        outcome = await run_sweep(cells, db=db, max_usd=max_usd)
    written: list[str] = []
    if out:
        from evals.report.html import write_eval_html

        pages = write_eval_html(outcome.results, out, title=f"{scenario}: sweep")
        written = [str(p) for p in pages]
    return {
        "flow_run_id": current_flow_run.id,
        "written": written,
        "batch": outcome.batch,
        "db": outcome.db,
        "rows": outcome.rows(),
        "front": [s.label for s in outcome.front],
        "recommended": outcome.recommended.labels if outcome.recommended else [],
        "recommendation": outcome.explain(),
        "stability": outcome.stability.to_dict() if outcome.stability else None,
        "runs": [r.to_dict() for r in outcome.results],
    }


@contextmanager
def terminal_progress(total: int) -> Iterator[OnCell]:
    """A progress bar on stderr, advanced once per finished cell."""
    from rich.console import Console

    from flows.progress import PipedProgress, rich_bar

    console = Console(stderr=True)
    bar = rich_bar("[bold]sweep", "{task.description}", console=console, transient=True)
    # Piped, a cleared bar would still leave a line: say where the sweep is now and then.
    piped = None if console.is_terminal else PipedProgress("sweep", total, unit="cells")
    with bar if console.is_terminal else nullcontext():
        job = bar.add_task("", total=total)

        def advance(done: int, _total: int, result: EvalResult) -> None:
            last = f"{result.strategy} seed={result.seed}: {result.accuracy:.0%}"
            bar.update(job, completed=done, description=last)
            if piped is not None:
                piped.advance(done, last)

        yield advance


async def run_sweep(
    cells: Sequence[Cell],
    *,
    db: str | None = None,
    max_usd: float | None = None,
    progress: OnCell | None = None,
) -> SweepResult:
    """Submit the cells to the flow's task runner, collect them as they finish, then store
    and publish. Called inside `eval_sweep`."""
    from prefect.artifacts import acreate_progress_artifact, aupdate_progress_artifact

    tracker = await acreate_progress_artifact(
        progress=0.0, description=f"eval sweep: {len(cells)} cells"
    )
    futures = [
        eval_cell.with_options(task_run_name=cell_label(cell)).submit(cell, max_usd)
        for cell in cells
    ]
    position = {id(f): i for i, f in enumerate(futures)}
    done: dict[int, EvalResult] = {}
    for future in as_completed(futures):
        result = future.result()
        done[position[id(future)]] = result
        await aupdate_progress_artifact(tracker, progress=100.0 * len(done) / len(cells))
        if progress is not None:
            progress(len(done), len(cells), result)
    results = [done[i] for i in range(len(cells))]  # in the grid's order, whatever finished first
    path = db or default_path()
    batch = save_or_dump(path, results)  # if the store fails now, the results go to JSON
    settings = aggregate(results)
    front = pareto_front(settings)
    best = recommend(results)  # the runs, so ties are judged on paired differences
    outcome = SweepResult(results, settings, front, best, batch, path, stability(results))
    await _publish(outcome, cells)
    return outcome


async def _publish(outcome: SweepResult, cells: Sequence[Cell]) -> None:
    scenario = cells[0].scenario if cells else "sweep"
    key = re.sub(r"[^a-z0-9]+", "-", f"eval-sweep-{scenario}".lower()).strip("-")
    await acreate_table_artifact(
        outcome.rows(), key=key, description=f"{scenario}: {len(outcome.results)} runs"
    )
    await acreate_markdown_artifact(
        render_front(outcome), key=f"{key}-front", description="Pareto front"
    )


def render_front(outcome: SweepResult) -> str:
    lines = [
        "# Pareto front: accuracy against cost",
        "",
        "| setting | accuracy | cost (USD) | input tokens |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| {s.label} | {s.accuracy.mean:.1%} | {s.cost_usd.mean:.4f} | "
        f"{s.input_tokens.mean:,.0f} |"
        for s in outcome.front
    ]
    if outcome.recommended is not None:
        lines += ["", str(outcome.explain())]
    if outcome.stability is not None:
        lines += ["", outcome.stability.explain()]
    if any(s.simulated for s in outcome.settings):
        lines += [
            "",
            "Simulated model: these numbers measure what each strategy keeps within reach, "
            "not a real model's skill.",
        ]
    lines += ["", f"Results: `eval_runs` batch `{outcome.batch}` in `{outcome.db}`."]
    return "\n".join(lines) + "\n"
