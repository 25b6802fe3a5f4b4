"""`ctxlab eval --tuned`: each arm at its best setting, chosen on training seeds and reported
on held-out ones."""

from __future__ import annotations

import argparse
import json
import sys

from flows.cli import running
from flows.cli.options import (
    STRATEGIES,
    TRAIN_SEEDS,
    check_scenario_path,
    one_way_to_seeds,
    plural,
    usage_errors,
    use_model_options,
    writable_store,
)


def tuned_command(args: argparse.Namespace) -> int:
    """Each arm at its best setting: its grid on the training seeds, the recommended setting on
    the held-out seeds (evals/run/tuning.py). Only the held-out runs are reported and stored."""
    from evals.run.cell import Cell, check_cells
    from evals.run.settings import Settings, parse_grid
    from evals.run.tuning import HELDOUT_SEEDS, plan, seed_span
    from harness.store import default_path

    one_way_to_seeds(args)
    train = args.train_seeds.resolve() if args.train_seeds else tuple(range(TRAIN_SEEDS))
    after = max(train) + 1  # a count of held-out seeds starts after the last training seed
    heldout = (
        args.seeds.resolve(start=after)
        if args.seeds
        else args.seed or range(after, after + HELDOUT_SEEDS)
    )
    use_model_options(args)
    with usage_errors(args):
        check_scenario_path(args.scenario)
        base = Cell(
            args.scenario, "full", Settings.parse(args.set), scale=args.scale,
            model=args.model, reader=args.reader, window=args.window, judge=args.judge,
        )  # fmt: skip
        tuning = plan(
            base,
            args.strategy or STRATEGIES,
            train_seeds=train,
            heldout_seeds=heldout,
            overrides=parse_grid(args.grid),
        )
        check_cells(tuning.every_setting())
    db = args.db or default_path()
    if not args.no_save:
        writable_store(db)
    say = print if not args.json else (lambda *_: None)
    training_cells = tuning.training_cells()
    say(f"Tuning on seeds {seed_span(train)}: {plural(len(training_cells), 'run')}; "
        f"held-out seeds {seed_span(heldout)}")  # fmt: skip
    trained: list = []
    try:
        training = running.run_with_progress(
            training_cells, max_usd=args.max_usd, quiet=args.json, finished=trained
        )
    except KeyboardInterrupt:
        print(f"{args.parser.prog}: interrupted while tuning ({len(trained)} of "
              f"{plural(len(training_cells), 'training run')} done); stored nothing: --tuned "
              "stores only the held-out runs, which had not started", file=sys.stderr)  # fmt: skip
        raise
    choices = tuning.choose(training)
    spent = sum(r.live_cost_usd for r in training)
    left = None if args.max_usd is None else max(args.max_usd - spent, 0.0)
    heldout_cells = tuning.heldout_cells(choices)
    finished: list = []
    try:
        results = tuning.mark(
            running.run_with_progress(
                heldout_cells, max_usd=left, quiet=args.json, finished=finished
            ),
            choices,
        )
    except KeyboardInterrupt:
        stored = tuning.mark(finished, choices)
        running.store_on_interrupt(args, None if args.no_save else db, heldout_cells, stored)
        raise
    if not args.no_save:
        from evals.scoring.storage import save_or_dump

        batch = save_or_dump(db, results)
        say(f"stored {plural(len(results), 'held-out run')} (batch {batch}) in {db}")
    base_params = next((r.params for r in results if r.strategy == "full"), None)
    if not args.json:
        from evals.report.eval_table import print_table

        print_table(results, base_params=base_params,
                     note=f", tuned on seeds {seed_span(train)}, held-out seeds "
                     f"{seed_span(heldout)}")  # fmt: skip
        from evals.report.terminal import say as wrapped

        if args.probes:
            from evals.report.eval_table import print_probes

            print_probes(results)
        wrapped("Settings, chosen on the training seeds (recommendation over each arm's grid):")
        for choice in choices:
            wrapped(f"  {choice.describe()}")
        _write_page(args, results)
        return 0
    _write_page(args, results)
    for r in results:
        print(r.to_json(probes=args.probes))
    if args.summary:
        from evals.analysis.metrics import summaries

        by_arm = {c.arm: c for c in choices}
        for row in summaries(results, base_params=base_params):
            choice = by_arm[row["strategy"]]
            extra = {
                "tuned": choice.tuned,
                "unstable": choice.unstable,
                "train_seeds": list(tuning.train_seeds) if choice.tuned else [],
                "chosen": choice.setting,
                "training": choice.training(),
            }
            print(json.dumps({"summary": True, **row, **extra}, sort_keys=True))
    return 0


def _write_page(args: argparse.Namespace, results: list) -> None:
    """`--out DIR`: the held-out runs' page, as a plain eval writes its own."""
    if not args.out:
        return
    from evals.report.html import write_eval_html

    written = write_eval_html(results, args.out, title=f"{args.scenario}: tuned eval (held-out)")
    running.say_written(written, quiet=args.json)
