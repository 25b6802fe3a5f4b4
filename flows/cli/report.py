"""`ctxlab report`: markdown tables and figures (PNG, SVG) of stored or freshly run evals."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from flows.cli import running
from flows.cli.options import (
    DEFAULT_SEEDS,
    STRATEGIES,
    add_scale_option,
    count_arg,
    usage_errors,
    writable_store,
)


def add_parser(subparsers: Any) -> None:
    rp = subparsers.add_parser("report", help="index.html, tables and figures under reports/")
    rp.add_argument(
        "--scenario",
        action="append",
        help="scenario (repeat; default: every scenario stored, or with --run every built-in "
        "one): a built-in name, a stored `recorded:<run>` name, a scenario file, or a suite "
        "folder (each of its files)",
    )
    rp.add_argument(
        "--db", help="DuckDB file with eval results (default $CTXLAB_DB or ./ctxlab.duckdb)"
    )
    rp.add_argument("--out", default="reports", help="folder for index.html, .md, .png, .svg")
    rp.add_argument(
        "--run",
        action="store_true",
        help="first run every arm of each scenario (all four unless --scenario), with the "
        "fallible and the ideal reader, store it, and report only these runs",
    )
    # Reports are made at full scale, where the strategies differ most; the commands a user
    # runs by hand default to small, which takes seconds.
    add_scale_option(rp, "full", "with --run: data size (default full, unlike eval and sweep: "
                     "the reports are measured at full scale)")  # fmt: skip
    rp.add_argument("--seeds", type=count_arg, default=DEFAULT_SEEDS,
                    help=f"with --run: seeds 0..N-1 (default {DEFAULT_SEEDS})")  # fmt: skip
    rp.add_argument("--json", action="store_true", help="print the reported settings as JSON")
    rp.set_defaults(handler=report_command)


def report_command(args: argparse.Namespace) -> int:
    from evals.run.cell import grid
    from evals.scenarios import get_scenario, is_scenario_file, list_scenarios
    from evals.scoring.storage import results_from_frame, save_or_dump
    from harness.store import default_path

    db = args.db or default_path()
    known = list_scenarios()
    if args.scenario:
        args.scenario = _suite_files(args, args.scenario)
    unknown = [
        n
        for n in args.scenario or ()
        if n not in known and not n.startswith("recorded:") and not is_scenario_file(n)
    ]
    if unknown:
        args.parser.error(
            f"unknown scenario {unknown[0]!r}; choose one of {', '.join(known)}, a stored "
            "recorded:<run>, or a scenario file (.yaml)"
        )
    # A scenario file replays like a built-in; its results carry the file's scenario name.
    with usage_errors(args):
        names = {n: get_scenario(n).name if is_scenario_file(n) else n for n in args.scenario or ()}
    if args.run:
        if any(n.startswith("recorded:") for n in names):
            args.parser.error("--run replays a built-in scenario or a scenario file, not a name")
        writable_store(db)
        cells = [
            cell
            for name in names or known
            for reader in ("fallible", "ideal")
            for cell in grid(
                name, STRATEGIES, seeds=range(args.seeds), scale=args.scale, reader=reader
            )
        ]
        results = running.run_with_progress(cells, max_usd=None, quiet=args.json)
        save_or_dump(db, results)
        wanted = list(names.values()) or known
    else:
        from pathlib import Path

        if not Path(db).is_file():
            args.parser.error(f"no store at {db}: give --db FILE, or --run to make the results")
        results = latest(results_from_frame(_stored_runs(db)))
        if not results:
            print(f"{args.parser.prog}: no eval results in {db}: run `ctxlab eval` or "
                  "`ctxlab report --run` first", file=sys.stderr)  # fmt: skip
            return 1
        # Built-in scenarios in their usual order, then imported ones (`recorded:<run>`).
        stored = list(dict.fromkeys(r.scenario for r in results))
        everything = [n for n in known if n in stored] + [n for n in stored if n not in known]
        wanted = list(names.values()) or everything
        recorded = [n for n in stored if n not in known]
        absent = [n for n in wanted if n not in known and n not in stored]
        if absent:
            args.parser.error(
                f"no stored results for {absent[0]!r} in {db}; recorded scenarios stored there: "
                f"{', '.join(recorded) or 'none'}"
            )
    missing = [n for n in wanted if not any(r.scenario == n for r in results)]
    if missing:
        print(f"{args.parser.prog}: no stored results for {', '.join(missing)} in {db}",
              file=sys.stderr)  # fmt: skip
        return 1
    chosen = [r for r in results if r.scenario in wanted]
    from evals.report.html import write_eval_html

    written = write_eval_html(chosen, args.out, title="ctxlab report")
    if args.json:
        print(json.dumps(_report_json(chosen, written), indent=2, default=str))
        return 0
    for path in written:
        print(f"wrote {path}")
    return 0


def _stored_runs(db: str) -> Any:
    """Every stored eval run, read without creating or changing anything."""
    import polars as pl

    from harness.store import read_only

    con = read_only(db)
    try:
        tables = {row[0] for row in con.execute("SHOW TABLES").fetchall()}
        if "eval_runs" not in tables:
            return pl.DataFrame()
        return con.sql("SELECT * FROM eval_runs ORDER BY created_at, run_key").pl()
    finally:
        con.close()


def _report_json(results: list, written: list) -> dict[str, Any]:
    from dataclasses import asdict

    from evals.analysis.metrics import aggregate

    return {
        "files": [str(p) for p in written],
        "settings": [{**asdict(s), "label": s.label} for s in aggregate(results)],
    }


def latest(results: list) -> list:
    """The newest stored run of each setting and seed (older re-runs are left out)."""
    by_key = {}
    for r in results:
        by_key[(r.config, r.seed)] = r
    return list(by_key.values())


def _suite_files(args: argparse.Namespace, given: list[str]) -> list[str]:
    """A suite folder stands for its scenario files (one report each; the suite's own table
    and recall at retained tokens: `ctxlab eval --scenario DIR --out DIR`)."""
    from pathlib import Path

    from evals.scenarios.suite import load_suite

    out: list[str] = []
    with usage_errors(args):
        for name in given:
            out += [str(t.file) for t in load_suite(name).traces] if Path(name).is_dir() else [name]
    return out
