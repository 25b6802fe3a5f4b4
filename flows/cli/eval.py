"""`ctxlab eval`: replay a scenario under context strategies and print (and store) the
results; `--tuned` is in flows/cli/eval_tuned.py."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from typing import Any

from flows.cli import running
from flows.cli.options import (
    DEFAULT_SEEDS,
    STRATEGIES,
    TRAIN_SEEDS,
    add_model_options,
    add_scale_option,
    check_scenario_path,
    one_way_to_seeds,
    seed_arg,
    seeds_arg,
    usage_errors,
    use_model_options,
    whole_number,
)


def add_parser(subparsers: Any) -> None:
    ev = subparsers.add_parser("eval", help="replay a scenario under context strategies")
    ev.add_argument(
        "--scenario",
        required=True,
        help="scenario name (`ctxlab scenarios`), a scenario file (.yaml, e.g. from "
        "`ctxlab scenarios import`), or a suite: a folder of them (its suite.json, else every "
        ".yaml/.yml in it; one seed by default)",
    )
    ev.add_argument(
        "--strategy",
        action="append",
        help=f"an arm to run (repeat; default: all of {', '.join(STRATEGIES)})",
    )
    ev.add_argument(
        "--seed",
        type=seed_arg,
        action="append",
        help=f"seed (repeat; default 0..{DEFAULT_SEEDS - 1}); not with --seeds",
    )
    ev.add_argument(
        "--seeds",
        type=seeds_arg,
        metavar="N|LIST",
        help=f"run seeds 0..N-1 (default {DEFAULT_SEEDS}), or the seeds listed: 10,11,12 or "
        "10-14; not with --seed",
    )
    add_scale_option(ev)
    ev.add_argument(
        "--model",
        default="simulated",
        help="simulated, or openai:... / anthropic:... to decide with a real model",
    )
    ev.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="K=V",
        help="strategy parameter, e.g. summarize.trigger=0.7, or (no dot) the scenario's own, "
        "e.g. weeks=52 for a year of competitive-analysis Mondays (repeat)",
    )
    add_model_options(ev)
    ev.add_argument(
        "--reader",
        default="fallible",
        choices=("fallible", "ideal"),
        help="how the simulated model reads: fallible (default; misses with length and depth, "
        "confuses look-alikes) or ideal (never misses what is in view)",
    )
    ev.add_argument("--max-usd", type=float, help="spending cap for a real model")
    ev.add_argument(
        "--judge",
        metavar="MODEL",
        help="also grade every answer with this model (prompt: evals/prompts/judge.md); "
        "verdicts and cost are stored per probe, and the cost counts against --max-usd",
    )
    ev.add_argument("--json", action="store_true", help="one JSON object per run")
    ev.add_argument(
        "--probes",
        action="store_true",
        help="list every probe: its outcome, its availability (in view, one read, lost) and "
        "the window text around its value (with --json: in each run's probe results)",
    )
    ev.add_argument(
        "--summary",
        action="store_true",
        help="with --json: then one object per arm (means, 95%% intervals, paired difference "
        "against full)",
    )
    ev.add_argument(
        "--db", help="DuckDB file for the results (default $CTXLAB_DB or ./ctxlab.duckdb)"
    )
    ev.add_argument("--no-save", action="store_true", help="do not store the results")
    ev.add_argument(
        "--workers",
        type=_workers,
        metavar="N",
        help="run the cells on up to N processes, this one included (default: a suite folder "
        "uses every core this process may use, a scenario one); the results do not depend on it",
    )
    ev.add_argument("--runner", default="process", choices=("process", "dask"),
                    help="where cells run: local processes (default) or Dask (a local "
                    "cluster of --workers processes, or --address)")  # fmt: skip
    ev.add_argument("--address", help="Dask scheduler address (with --runner dask)")
    ev.add_argument(
        "--out",
        metavar="DIR",
        help="also write an HTML report there: index.html (tables, figures, the probes each "
        "setting lost) beside the markdown report and its figures (PNG, SVG); for a suite, "
        "<suite>.md and <suite>-recall.png/.svg (recall at retained tokens)",
    )
    tuned = ev.add_argument_group("tuned baselines (--tuned)")
    tuned.add_argument(
        "--tuned",
        action="store_true",
        help="compare every arm at its best setting: sweep its grid (evals/run/tuning.py) on the "
        "training seeds, pick the cheapest setting tied with the most accurate, and report it "
        "on held-out seeds (--seeds N: N seeds after the training ones, default "
        f"{DEFAULT_SEEDS}; or --seeds 20-24, or --seed S, repeat)",
    )
    tuned.add_argument(
        "--train-seeds",
        type=seeds_arg,
        metavar="N|LIST",
        help=f"with --tuned: choose settings on seeds 0..N-1 (default {TRAIN_SEEDS}), or on "
        "the seeds listed (10,11,12 or 10-14)",
    )
    tuned.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="K=V1,V2",
        help="with --tuned: the values to try for a key, instead of its default grid, for "
        "every arm that takes it (repeat)",
    )
    ev.set_defaults(handler=eval_command)


def eval_command(args: argparse.Namespace) -> int:
    from evals.run.arms import params_by_arm
    from evals.run.cell import check_cells, grid
    from evals.run.pool import available_cores
    from evals.run.settings import Settings

    if args.summary and not args.json:
        args.parser.error("--summary adds to --json output; give --json too")
    _check_runner(args)
    from pathlib import Path

    if Path(args.scenario).is_dir():
        if args.tuned:
            args.parser.error("--tuned takes one scenario, not a suite folder")
        from flows.cli.eval_suite import suite_command

        return suite_command(args)
    if args.tuned:
        from flows.cli.eval_tuned import tuned_command

        return tuned_command(args)
    if args.grid or args.train_seeds is not None:
        args.parser.error("--grid and --train-seeds choose the settings of --tuned; give --tuned")
    one_way_to_seeds(args)
    use_model_options(args)
    with usage_errors(args):
        check_scenario_path(args.scenario)
        params = Settings.parse(args.set)
        seeds = args.seeds.resolve() if args.seeds else (args.seed or range(DEFAULT_SEEDS))
        # A parameter goes to the arms whose stack takes it: `summarize.trigger` to
        # summarize and full, not to none (refused when no arm run here takes it).
        by_arm = params_by_arm(params, args.strategy or STRATEGIES)
        cells = [
            cell
            for arm, arm_params in by_arm.items()
            for cell in grid(args.scenario, [arm], seeds=seeds, scale=args.scale,
                             model=args.model, params=arm_params, reader=args.reader)
        ]  # fmt: skip
        if args.window is not None or args.judge is not None:
            cells = [replace(cell, window=args.window, judge=args.judge) for cell in cells]
        check_cells(cells)
    # A scenario's few cells run here; on Dask, a local cluster gets a worker per core.
    workers = args.workers or (available_cores() if args.runner == "dask" else 1)
    results = running.run_and_store(args, cells, workers=workers)
    if args.json:
        for r in results:
            print(r.to_json(probes=args.probes))
        if args.summary:
            from evals.analysis.metrics import summaries

            for row in summaries(results):
                print(json.dumps({"summary": True, **row}, sort_keys=True))
    else:
        from evals.report.eval_table import print_probes, print_table
        from evals.report.markdown import render_weeks
        from evals.report.terminal import print_markdown

        print_table(results)
        if args.probes:
            print_probes(results)
        if any(r.weeks for r in results):  # a recurring scenario: its numbers week by week
            print_markdown(render_weeks(results))
    if args.out:
        from evals.report.html import write_eval_html

        written = write_eval_html(results, args.out, title=f"{args.scenario}: eval")
        running.say_written(written, quiet=args.json)
    return 0


def _workers(text: str) -> int:
    return whole_number(text, 1, "processes", "must be at least 1 process")


def _check_runner(args: argparse.Namespace) -> None:
    """Dask runs cells side by side, wherever its workers are: a spending cap shared by the
    batch would depend on their timing, and `--tuned` chooses settings in turn."""
    if args.runner != "dask":
        if args.address:
            args.parser.error("--address names a Dask scheduler; give --runner dask too")
        return
    if args.max_usd is not None:
        args.parser.error("--max-usd caps a batch run in turn; not with --runner dask")
    if args.tuned:
        args.parser.error("--tuned runs on this machine; not with --runner dask")
