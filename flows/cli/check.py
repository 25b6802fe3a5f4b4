"""`ctxlab check`: the CI gate, a fixed suite against a baseline (or `--sanity`)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from flows.cli.options import SUITE_NAMES, seeds_arg


def add_parser(subparsers: Any) -> None:
    ck = subparsers.add_parser("check", help="CI gate: run a fixed suite against a baseline")
    ck.add_argument(
        "--suite",
        default="ci",
        choices=SUITE_NAMES,
        help=f"the cell suite to run: {', '.join(SUITE_NAMES)} (default ci)",
    )
    ck.add_argument(
        "--baseline",
        help="baseline JSON (default evals/baselines/ci.json; required with --scenario)",
    )
    ck.add_argument("--update", action="store_true", help="rewrite the baseline from this run")
    ck.add_argument(
        "--sanity",
        action="store_true",
        help="instead: run the break arms (empty window, blanked or corrupted tool results, "
        "withheld summaries, relabelled entities; questions only, for scenario files) on every "
        "built-in scenario or on each --scenario; fails when accuracy does not follow the data",
    )
    ck.add_argument(
        "--scenario",
        action="append",
        metavar="NAME_FILE_OR_DIR",
        help="a built-in scenario, a ctxlab-scenario/1 file or a suite folder (repeatable): "
        "gated against --baseline instead of the built-in suite; with --sanity, what it "
        "breaks (default every built-in scenario)",
    )
    ck.add_argument(
        "--strategy",
        action="append",
        help="with --scenario: an arm to gate (repeat; default full)",
    )
    ck.add_argument(
        "--seeds",
        type=seeds_arg,
        metavar="N|LIST",
        help="with --scenario: seeds 0..N-1 or the seeds listed (default 0,1,2)",
    )
    ck.add_argument(
        "--window", type=int, help="with --scenario: cap the model's window at this many tokens"
    )
    ck.add_argument(
        "--reader", default="fallible", choices=("fallible", "ideal"), help="with --sanity"
    )
    ck.add_argument(
        "--json",
        action="store_true",
        help="print the verdict and findings as JSON (with --sanity: one object per scenario "
        "and arm)",
    )
    ck.set_defaults(handler=check_command)


def check_command(args: argparse.Namespace) -> int:
    from evals.gate.check import DEFAULT_BASELINE, SUITES, run_check

    if (args.strategy or args.seeds or args.window) and not (args.scenario and not args.sanity):
        args.parser.error("--strategy, --seeds and --window choose how --scenario is gated")
    if args.scenario and not args.sanity:
        return _gate_scenarios(args)
    if args.sanity:
        from evals.gate.sanity import run_sanity
        from flows.cli.options import usage_errors

        with usage_errors(args):
            names = _sanity_scenarios(args.scenario or ())
        if args.json:
            return run_sanity(names or None, reader=args.reader, as_json=True)
        return run_sanity(names or None, reader=args.reader, say=_say)
    if args.suite not in SUITES:
        args.parser.error(f"unknown suite {args.suite!r}; choose one of {', '.join(SUITES)}")
    baseline = args.baseline or DEFAULT_BASELINE
    if not args.json:
        return run_check(args.suite, baseline, update=args.update, width=_width(), run=_shown,
                         say=_say)  # fmt: skip
    lines: list[str] = []
    code = run_check(args.suite, baseline, update=args.update, say=lines.append)
    doc = {"suite": args.suite, "baseline": str(baseline), "passed": code == 0, "lines": lines}
    print(json.dumps(doc, indent=2))
    return code


def _gate_scenarios(args: argparse.Namespace) -> int:
    """`check --scenario ... --baseline FILE`: a user's own scenarios or suites gated like the
    built-in suite (`--update` writes their baseline)."""
    from evals.gate.check import CHECK_SEEDS, run_check, scenario_cells
    from evals.run.cell import check_cells
    from flows.cli.options import usage_errors

    if not args.baseline:
        args.parser.error(
            "--scenario gates against your own baseline: give --baseline FILE "
            "(create it with --update)"
        )
    with usage_errors(args):
        names = _sanity_scenarios(args.scenario)
        seeds = args.seeds.resolve() if args.seeds else CHECK_SEEDS
        cells = scenario_cells(names, args.strategy or ["full"], seeds=seeds, window=args.window)
        check_cells(cells)
    say_lines: list[str] = []
    say = say_lines.append if args.json else print
    code = run_check("scenarios", args.baseline, update=args.update, say=say, cells=cells,
                     width=_width(), run=_shown)  # fmt: skip
    if args.json:
        doc = {"suite": "scenarios", "baseline": str(args.baseline), "passed": code == 0,
               "lines": say_lines}  # fmt: skip
        print(json.dumps(doc, indent=2))
    return code


def _shown(cells: list) -> list:
    """The gate's runs under a progress bar (a line now and then when piped)."""
    from flows.cli.running import run_with_progress

    return run_with_progress(cells, max_usd=None, quiet=False)


def _width() -> int:
    """The terminal's columns (COLUMNS wins), 80 when piped."""
    import shutil

    return shutil.get_terminal_size((80, 24)).columns


def _say(line: str) -> None:
    """A verdict line, wrapped to the terminal."""
    from evals.report.terminal import say

    say(line)


def _sanity_scenarios(given: Sequence[str]) -> list[str]:
    """Names and files as given; a suite folder becomes its scenario files. Each is checked
    before anything runs (an unknown name or a bad file is a usage error)."""
    from pathlib import Path

    from evals.scenarios import scenario_summary
    from evals.scenarios.suite import load_suite

    names: list[str] = []
    for name in given:
        if Path(name).is_dir():
            names += [str(t.file) for t in load_suite(name).traces]
        else:
            scenario_summary(name)
            names.append(name)
    return names
