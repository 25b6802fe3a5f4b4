"""`ctxlab eval --scenario DIR`: every scenario file of a suite (evals/scenarios/suite.py) under the
arms, with the options of a single scenario. One seed unless told (the trace is the unit; a
recorded scenario's seed only changes the reader's draws), and with the simulated model's
fallible reader, each arm once more with the ideal reader for "recall at retained tokens"."""

from __future__ import annotations

import argparse
import gc
import json

from flows.cli import running
from flows.cli.options import (
    STRATEGIES,
    one_way_to_seeds,
    usage_errors,
    use_model_options,
)


def suite_command(args: argparse.Namespace) -> int:
    from evals.analysis.suite import suite_summary, trace_line
    from evals.run.arms import params_by_arm
    from evals.run.cell import Cell, check_cells
    from evals.run.pool import available_cores, by_replay
    from evals.run.settings import Settings
    from evals.scenarios.suite import Suite, load_suite, suite_files

    if args.grid or args.train_seeds is not None:
        args.parser.error("--grid and --train-seeds choose the settings of --tuned; give --tuned")
    one_way_to_seeds(args)
    use_model_options(args)
    with usage_errors(args):
        files = suite_files(args.scenario)
        params = Settings.parse(args.set)
        seeds = list(range(args.seeds) if args.seeds else (args.seed or [0]))
        by_arm = params_by_arm(params, args.strategy or STRATEGIES)
        planned: list[tuple[int, Cell]] = []
        for k, file in enumerate(files):
            for arm, arm_params in by_arm.items():
                for seed in seeds:
                    cell = Cell(str(file), arm, arm_params, seed, args.scale,
                                args.model, args.reader, window=args.window,
                                judge=args.judge)  # fmt: skip
                    planned.append((k, cell))
                # The ideal reader draws nothing, so one seed of it stands for all.
                if args.model == "simulated" and args.reader == "fallible":
                    ideal = Cell(str(file), arm, arm_params, seeds[0], args.scale,
                                 args.model, "ideal", window=args.window)  # fmt: skip
                    planned.append((k, ideal))
                # A real model answering: the simulated reader answers the same probes
                # offline, so the report can say how often the two agree.
                if args.model != "simulated":
                    offline = Cell(
                        str(file),
                        arm,
                        dict(arm_params),
                        seeds[0],
                        args.scale,
                        "simulated",
                        "fallible",
                        window=args.window,
                    )
                    planned.append((k, offline))
    cells = [c for _, c in planned]
    read: list[Suite] = []

    def read_suite() -> None:
        with usage_errors(args):
            read.append(load_suite(args.scenario))
            check_cells(cells)
        # The files just read stay in memory while the cells run (here too): the garbage
        # collector leaves them out of its full passes, which walked them each time.
        gc.freeze()

    # The workers start before the files are read and checked, and take the largest traces
    # while this process reads every file (each reads its own cells' files again); a bad
    # file stops them, named as before.
    workers = min(args.workers or available_cores(), len(by_replay(cells)))
    with running.workers_for(args, workers) as started:
        results = running.run_and_store(args, cells, workers=started, meanwhile=read_suite)
    suite = read[0]
    runs, ideal, offline = [], {}, {}
    for (k, cell), result in zip(planned, results, strict=True):
        trace = suite.traces[k]
        if cell.model != args.model:
            offline[(trace.trace, result.strategy)] = result
        elif cell.reader == args.reader:
            runs.append((trace, result))
        else:
            ideal[(trace.trace, result.strategy)] = result
    if args.reader == "ideal":
        ideal = {(t.trace, r.strategy): r for t, r in runs if r.seed == seeds[0]}
    summary = suite_summary(suite, runs, ideal, simulated=offline)
    if args.out:
        from evals.report.html import write_suite_html

        name = suite.directory.resolve().name
        written = write_suite_html(summary, [r for _, r in runs], args.out, name)
        running.say_written(written, quiet=args.json)
    if args.json:
        for trace, result in runs:
            line = trace_line(result, trace, ideal.get((trace.trace, result.strategy)),
                              probes=args.probes)  # fmt: skip
            print(json.dumps(line, sort_keys=True, default=str))
        print(json.dumps(summary, sort_keys=True, default=str))
    else:
        from evals.report.suite import render_suite
        from evals.report.terminal import print_markdown

        print_markdown(render_suite(summary))
        if args.probes:
            from evals.report.eval_table import print_probes

            print_probes([r for _, r in runs])
    return 0


__all__ = ["suite_command"]
