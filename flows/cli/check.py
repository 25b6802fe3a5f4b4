"""`ctxlab check`: the CI gate, a fixed suite against a baseline (or `--sanity`)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from flows.cli.options import SUITE_NAMES


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
        metavar="NAME_FILE_OR_DIR",
        help="with --sanity: a built-in scenario, a ctxlab-scenario/1 file or a suite folder "
        "(repeatable; default every built-in scenario)",
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

    if args.scenario and not args.sanity:
        args.parser.error("--scenario chooses what --sanity breaks; give --sanity")
    if args.sanity:
        from evals.gate.sanity import run_sanity
        from flows.cli.options import usage_errors

        with usage_errors(args):
            names = _sanity_scenarios(args.scenario or ())
        return run_sanity(names or None, reader=args.reader, as_json=args.json)
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
