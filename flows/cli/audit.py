"""`ctxlab audit SUITE`: the compaction audit of a suite of imported traces (`ctxlab scenarios
import ~/.claude/projects/ --out SUITE`, or a LangSmith export): how often each trace's harness
compacted, what each compaction dropped and cost in cache rewrites, and, from a run of the
`original` arm beside ctxlab's arms, which ctxlab setting would have kept more for fewer
tokens (evals/analysis/audit.py). The runs are not stored; `--out` is the only place written."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from flows.cli import running
from flows.cli.options import seeds_arg, usage_errors

ARMS = ("original", "full", "truncate", "none-unbounded")
# The harness ran on its own window, and none-unbounded is the cost of keeping everything:
# the other arms get the harness's budget (the prompt size at which it compacted).
UNCAPPED = ("original", "none-unbounded")


def add_parser(subparsers: Any) -> None:
    au = subparsers.add_parser(
        "audit", help="what a suite's own harness compaction dropped and cost, beside ctxlab"
    )
    au.add_argument("suite", metavar="SUITE", help="a folder of imported scenario files")
    au.add_argument("--strategy", action="append",
                    help=f"an arm to run (repeat; default: {', '.join(ARMS)})")  # fmt: skip
    au.add_argument("--seeds", type=seeds_arg, metavar="N|LIST",
                    help="seeds to run (default: seed 0; the trace is the unit)")  # fmt: skip
    au.add_argument("--model", default="simulated",
                    help="the model whose prices bill the runs and the cache rewrites")  # fmt: skip
    au.add_argument("--no-run", action="store_true",
                    help="only what the traces record: no replay, no comparison")  # fmt: skip
    au.add_argument("--out", metavar="DIR", help="write <suite>-audit.md and .json here")
    au.add_argument("--json", action="store_true", help="print the audit as JSON")
    au.set_defaults(handler=audit_command)


def audit_command(args: argparse.Namespace) -> int:
    from evals.analysis.audit import audit, harness_budget
    from evals.report.audit import render_audit
    from evals.run.cell import Cell, check_cells
    from evals.scenarios.suite import load_suite
    from harness.profiles import get_profile

    seeds = list(args.seeds.resolve() if args.seeds else (0,))
    with usage_errors(args):
        if not Path(args.suite).is_dir():
            raise ValueError(f"{args.suite} is not a folder of scenario files")
        suite = load_suite(args.suite)
        price = get_profile(args.model).cache_write
        budgets = {t.trace: harness_budget(t) for t in suite.traces}
        cells = [] if args.no_run else [
            (trace, Cell(str(trace.file), arm, {}, seed, "small", args.model,
                         window=None if arm in UNCAPPED else budgets[trace.trace]))
            for trace in suite.traces for arm in args.strategy or ARMS for seed in seeds
        ]  # fmt: skip
        check_cells([c for _, c in cells])
    results = running.run_with_progress([c for _, c in cells], max_usd=None, quiet=args.json)
    runs = [(trace, result) for (trace, _), result in zip(cells, results, strict=True)]
    report = audit(suite, runs, cache_write_usd_per_mtok=price)
    lines = render_audit(report)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        stem = re.sub(r"[^A-Za-z0-9._-]+", "-", suite.directory.resolve().name) + "-audit"
        (out / f"{stem}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (out / f"{stem}.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
        if not args.json:
            print(f"wrote {out / f'{stem}.md'} and {out / f'{stem}.json'}")
    if args.json:
        print(json.dumps(report, sort_keys=True, default=str))
    elif not args.out:
        print("\n".join(lines))
    return 0


__all__ = ["audit_command"]
