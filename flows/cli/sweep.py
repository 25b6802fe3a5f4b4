"""`ctxlab sweep`: an eval sweep as a Prefect flow, one task per grid cell."""

from __future__ import annotations

import argparse
import json
from typing import Any

from flows.cli import common
from flows.cli.options import DEFAULT_SEEDS, add_model_options, add_scale_option, seeds_arg


def add_parser(subparsers: Any) -> None:
    sweep = subparsers.add_parser("sweep", help="eval sweep: one Prefect task per grid cell")
    sweep.add_argument("--scenario", required=True, help="scenario name (`ctxlab scenarios`)")
    sweep.add_argument("--strategy", action="append", help="arm to compare (repeat; default full)")
    sweep.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="K=V1,V2",
        help="parameter values to sweep, e.g. summarize.trigger=0.6,0.85",
    )
    sweep.add_argument(
        "--seeds",
        type=seeds_arg,
        default=seeds_arg(str(DEFAULT_SEEDS)),
        metavar="N|LIST",
        help=f"seeds per setting: a count (0..N-1, default {DEFAULT_SEEDS}) or the seeds "
        "themselves (10,11,12 or 10-14)",
    )
    add_scale_option(sweep)
    sweep.add_argument(
        "--model", default="simulated", help="simulated | openai:... | anthropic:..."
    )
    sweep.add_argument(
        "--reader",
        default="fallible",
        choices=("fallible", "ideal"),
        help="how the simulated model reads (default fallible)",
    )
    sweep.add_argument("--runner", default="thread", choices=("thread", "process", "dask"),
                       help="where cells run: threads, local processes, or Dask")  # fmt: skip
    sweep.add_argument("--workers", type=common.count, help="threads, processes or Dask workers")
    sweep.add_argument("--address", help="Dask scheduler address (with --runner dask)")
    sweep.add_argument("--max-usd", type=float, help="spending cap per cell (real models)")
    sweep.add_argument(
        "--db", help="DuckDB file for eval_runs (default $CTXLAB_DB or ./ctxlab.duckdb)"
    )
    sweep.add_argument(
        "--json", action="store_true", help="one JSON object per run, as `ctxlab eval --json`"
    )
    sweep.add_argument(
        "--out",
        metavar="DIR",
        help="also write an HTML report there: index.html (tables, figures, the probes each "
        "setting lost) beside the markdown report and its figures",
    )
    common.server_options(sweep)
    sweep.set_defaults(handler=sweep_command)
    add_model_options(sweep)


def sweep_command(args: argparse.Namespace) -> int:
    from evals.run.cell import check_cells
    from flows.cli.options import usage_errors, use_model_options, writable_store
    from flows.sweep import eval_sweep, expand, parse_grid, print_sweep, task_runner
    from harness.store import default_path

    strategies = args.strategy or ["full"]
    use_model_options(args)
    with usage_errors(args):
        grid = parse_grid(args.grid)
        seeds = list(args.seeds.resolve())
        cells = expand(args.scenario, strategies, grid, seeds, scale=args.scale,
                       model=args.model, reader=args.reader)  # fmt: skip
        check_cells(cells)
    db = writable_store(args.db or default_path())
    runner = task_runner(args.runner, workers=args.workers, address=args.address)
    info = common.connect(args)
    call = eval_sweep.with_options(task_runner=runner)(
        scenario=args.scenario, strategies=strategies, grid=grid,
        seeds=seeds, scale=args.scale, model=args.model, reader=args.reader, db=db,
        max_usd=args.max_usd, show_progress=not args.json, out=args.out,
    )  # fmt: skip
    result = common.run_flow(call, info)
    if args.json:
        for run in result["runs"]:  # one object per cell and seed, as `ctxlab eval --json`
            print(json.dumps(run, default=str, sort_keys=True))
        # then the choice and whether it holds when a seed is left out, as `eval --summary`
        # follows its runs
        verdict = {"recommendation": True, "recommended": result["recommended"],
                   "why": result["recommendation"], "stability": result["stability"]}  # fmt: skip
        print(json.dumps(verdict, default=str, sort_keys=True))
        return 0
    from evals.report.terminal import say

    print_sweep(result["rows"], title=f"{args.scenario} ({args.scale}, {args.model})")
    if result["recommendation"]:
        say(result["recommendation"])
    if result["stability"]:
        say(result["stability"]["why"])
    if info is not None:
        say(f"Prefect UI: {info.flow_run_url(result['flow_run_id'])}")
    say(f"Results: eval_runs batch {result['batch']} in {result['db']}")
    for path in result["written"]:
        say(f"wrote {path}")
    return 0
