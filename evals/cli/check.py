"""`ctxlab check`: the CI gate, a fixed suite against a baseline (or `--sanity`)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from evals.cli.options import SUITE_NAMES


def add_parser(subparsers: Any) -> None:
    ck = subparsers.add_parser("check", help="CI gate: run a fixed suite against a baseline")
    ck.add_argument(
        "--suite",
        default="ci",
        choices=SUITE_NAMES,
        help=f"the cell suite to run: {', '.join(SUITE_NAMES)} (default ci)",
    )
    ck.add_argument("--baseline", help="baseline JSON (default evals/baselines/ci.json)")
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
        metavar="NAME_OR_FILE",
        help="with --sanity: a built-in scenario or a ctxlab-scenario/1 file (repeatable; "
        "default every built-in scenario)",
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
    from evals.check import DEFAULT_BASELINE, SUITES, run_check

    if args.sanity:
        from evals.sanity import run_sanity
        from evals.scenarios import UnknownScenarioError, scenario_summary
        from evals.scenarios.from_file import ScenarioFileError

        for name in args.scenario or ():
            try:
                scenario_summary(name)
            except (UnknownScenarioError, ScenarioFileError) as exc:
                args.parser.error(str(exc).strip("'\""))
        return run_sanity(args.scenario, reader=args.reader, as_json=args.json)
    if args.suite not in SUITES:
        args.parser.error(f"unknown suite {args.suite!r}; choose one of {', '.join(SUITES)}")
    baseline = args.baseline or DEFAULT_BASELINE
    if not args.json:
        return run_check(args.suite, baseline, update=args.update)
    lines: list[str] = []
    code = run_check(args.suite, baseline, update=args.update, say=lines.append)
    doc = {"suite": args.suite, "baseline": str(baseline), "passed": code == 0, "lines": lines}
    print(json.dumps(doc, indent=2))
    return code
