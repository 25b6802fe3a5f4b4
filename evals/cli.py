"""The `scenarios`, `eval`, `report` and `check` commands of `ctxlab` (flows/cli.py calls
`register`). Heavy imports happen inside each command, so `ctxlab --help` stays fast."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from evals.stats import DEFAULT_SEEDS

STRATEGIES = ("none", "truncate", "mask", "offload", "summarize", "context-edit", "full")


def register(subparsers: Any) -> None:
    """Add the eval commands to `ctxlab`'s subparsers."""
    sc = subparsers.add_parser("scenarios", help="list, describe or export the eval scenarios")
    sc.add_argument("action", nargs="?", default="list", choices=("list", "describe", "export"))
    sc.add_argument("name", nargs="?", help="scenario name (describe, export)")
    sc.add_argument("--seed", type=int, default=0)
    sc.add_argument("--scale", default="small", choices=("small", "full"))
    sc.add_argument("--out", help="export directory (default: exports/<name>-<scale>-<seed>)")
    sc.add_argument("--json", action="store_true", help="machine-readable output")
    sc.set_defaults(handler=_scenarios)

    ev = subparsers.add_parser("eval", help="replay a scenario under context strategies")
    ev.add_argument("--scenario", required=True)
    ev.add_argument(
        "--strategy",
        action="append",
        help=f"an arm to run (repeat; default: all of {', '.join(STRATEGIES)})",
    )
    ev.add_argument(
        "--seed", type=int, action="append", help=f"seed (repeat; default 0..{DEFAULT_SEEDS - 1})"
    )
    ev.add_argument("--seeds", type=int, help=f"run seeds 0..N-1 (default {DEFAULT_SEEDS})")
    ev.add_argument("--scale", default="small", choices=("small", "full"))
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
        help="strategy parameter, e.g. summarize.trigger=0.7 (repeat)",
    )
    ev.add_argument(
        "--reader",
        default="fallible",
        choices=("fallible", "ideal"),
        help="how the simulated model reads: fallible (default; misses with length and depth, "
        "confuses look-alikes) or ideal (never misses what is in view)",
    )
    ev.add_argument("--max-usd", type=float, help="spending cap for a real model")
    ev.add_argument("--json", action="store_true", help="one JSON object per run")
    ev.add_argument("--probes", action="store_true", help="with --json: include probe results")
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
    ev.set_defaults(handler=_eval)

    rp = subparsers.add_parser("report", help="markdown table and PNG plot under reports/")
    rp.add_argument("--scenario", action="append", help="scenario (repeat; default: all stored)")
    rp.add_argument("--db", help="DuckDB file with eval results")
    rp.add_argument("--out", default="reports")
    rp.add_argument(
        "--run",
        action="store_true",
        help="first run every arm, with the fallible and the ideal reader, and store it",
    )
    rp.add_argument("--scale", default="full", choices=("small", "full"), help="with --run")
    rp.add_argument("--seeds", type=int, default=DEFAULT_SEEDS, help="with --run: seeds 0..N-1")
    rp.set_defaults(handler=_report)

    ck = subparsers.add_parser("check", help="CI gate: run a fixed suite against a baseline")
    ck.add_argument("--suite", default="ci")
    ck.add_argument("--baseline", help="baseline JSON (default evals/baselines/ci.json)")
    ck.add_argument("--update", action="store_true", help="rewrite the baseline from this run")
    ck.add_argument(
        "--sanity",
        action="store_true",
        help="instead: run the break arms (empty window, blanked or corrupted tool results, "
        "withheld summaries) on every scenario; fails when accuracy does not follow the data",
    )
    ck.add_argument(
        "--reader", default="fallible", choices=("fallible", "ideal"), help="with --sanity"
    )
    ck.add_argument(
        "--json", action="store_true", help="with --sanity: one object per scenario and arm"
    )
    ck.set_defaults(handler=_check)


# -- scenarios -------------------------------------------------------------------------------


def _scenarios(args: argparse.Namespace) -> int:
    from evals.scenarios import (
        export_scenario,
        get_scenario,
        list_scenarios,
        scenario_summary,
    )

    if args.action == "list":
        rows = [scenario_summary(n) for n in list_scenarios()]
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            for row in rows:
                print(f"{row['name']:<22} {row['title']}")
        return 0
    if not args.name:
        print(f"ctxlab scenarios {args.action}: give a scenario name", file=sys.stderr)
        return 2
    scenario = get_scenario(args.name, args.seed, args.scale)
    if args.action == "describe":
        info = scenario.describe()
        if args.json:
            print(json.dumps(info, indent=2))
        else:
            for key, value in info.items():
                print(f"{key:<16} {value}")
        return 0
    out = args.out or f"exports/{args.name}-{args.scale}-{args.seed}"
    written = export_scenario(scenario, out)
    print(f"exported {args.name} ({args.scale}, seed {args.seed}): {len(written)} files in {out}")
    return 0


# -- eval ------------------------------------------------------------------------------------


def _eval(args: argparse.Namespace) -> int:
    from evals.runner import grid, parse_setting
    from harness.errors import HarnessError

    if args.summary and not args.json:
        print("ctxlab eval: --summary adds to --json output; give --json too", file=sys.stderr)
        return 2
    params = dict(parse_setting(s) for s in args.set)
    seeds = list(range(args.seeds)) if args.seeds else (args.seed or list(range(DEFAULT_SEEDS)))
    cells = grid(
        args.scenario,
        args.strategy or STRATEGIES,
        seeds=seeds,
        scale=args.scale,
        model=args.model,
        params=params,
        reader=args.reader,
    )
    try:
        results = _run_with_progress(cells, max_usd=args.max_usd, quiet=args.json)
    except HarnessError as exc:  # an unknown strategy or parameter, a missing API key
        print(f"ctxlab eval: {exc}", file=sys.stderr)
        return 2
    if not args.no_save:
        from evals.storage import save_results
        from harness.store import default_path

        batch = save_results(args.db or default_path(), results)
        if not args.json:
            print(f"stored {len(results)} runs (batch {batch}) in {args.db or default_path()}")
    if args.json:
        for r in results:
            print(r.to_json(probes=args.probes))
        if args.summary:
            from evals.metrics import summaries

            for row in summaries(results):
                print(json.dumps({"summary": True, **row}, sort_keys=True))
    else:
        _print_table(results)
    return 0


def _run_with_progress(cells: list, *, max_usd: float | None, quiet: bool) -> list:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from evals.runner import run_cells

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, transient=True, disable=quiet, console=_console()) as bar:
        overall = bar.add_task("runs", total=len(cells))
        turns = bar.add_task("turns", total=1)

        def step(cell: Any, done: int, total: int) -> None:
            bar.update(
                turns, completed=done, total=total, description=f"{cell.strategy} seed {cell.seed}"
            )

        def finished(cell: Any, result: Any) -> None:
            bar.advance(overall)

        return run_cells(cells, max_usd=max_usd, on_result=finished, progress=step)


def _console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


def _print_table(results: list) -> None:
    from rich.console import Console
    from rich.table import Table

    from evals.metrics import aggregate, pareto_front, recommend, summaries

    settings = aggregate(results)
    rows = summaries(results)
    front = {p.label for p in pareto_front(settings)}
    picked = recommend(settings)
    candidates = {c.label for c in picked.candidates} if picked else set()
    simulated = all(r.simulated for r in results)
    readers = "/".join(sorted({r.reader for r in results}))
    label = f", simulated, {readers} reader" if simulated else ""
    title = f"{results[0].scenario} ({results[0].scale}{label})"
    table = Table(
        title=title,
        caption="accuracy: mean (95% bootstrap interval over seeds); vs full: paired "
        "difference on the same seeds and probes; tied: interval overlaps the best's",
    )
    for col in (
        "setting",
        "seeds",
        "accuracy (95% CI)",
        "vs full (95% CI)",
        "input tok (95% CI)",
        "cached",
        "peak ctx",
        "calls",
        "retrievals",
        "cost $ (95% CI)",
        "overflow",
        "",
    ):
        table.add_column(col, justify="left" if col in ("setting", "") else "right")
    for s, row in zip(settings, rows, strict=True):
        marks = [
            "recommended" if picked and s.label in picked.labels else "",
            "tied" if s.label in candidates and len(candidates) > 1 else "",
            "front" if s.label in front else "",
        ]
        diff = row["accuracy_vs_full_ci95"]
        vs_full = (
            "-"
            if diff is None
            else f"{row['accuracy_vs_full_mean']:+.1%} ({diff[0]:+.0%} to {diff[1]:+.0%})"
        )
        table.add_row(
            s.label,
            str(len(s.seeds)),
            f"{s.accuracy.mean:.1%} ({s.accuracy.low:.0%}-{s.accuracy.high:.0%})",
            vs_full,
            f"{s.input_tokens.mean:,.0f} ({s.input_tokens.low:,.0f}-{s.input_tokens.high:,.0f})",
            f"{s.cached_input_tokens:,.0f}",
            f"{s.peak_context_tokens:,.0f}",
            f"{s.model_calls:,.0f}",
            f"{s.retrieval_calls:,.0f}",
            f"{s.cost_usd.mean:.4f} ({s.cost_usd.low:.4f}-{s.cost_usd.high:.4f})",
            f"{s.overflow_rate:.0%}",
            " ".join(m for m in marks if m),
        )
    console = Console()
    if not console.is_terminal:  # piped: print the whole table rather than squeeze it
        console = Console(width=240)
    console.print(table)
    if picked is not None:
        print(picked.explain())
    if simulated:
        print(
            "Simulated results: they compare strategies, not models; not comparable with "
            "published numbers."
        )


# -- report and check -----------------------------------------------------------------------


def _report(args: argparse.Namespace) -> int:
    from evals.report import write_report
    from evals.runner import grid
    from evals.scenarios import list_scenarios
    from evals.storage import load_runs, results_from_frame, save_results
    from harness.store import default_path

    db = args.db or default_path()
    if args.run:
        cells = [
            cell
            for name in (args.scenario or ["competitive-analysis"])
            for reader in ("fallible", "ideal")
            for cell in grid(
                name, STRATEGIES, seeds=range(args.seeds), scale=args.scale, reader=reader
            )
        ]
        save_results(db, _run_with_progress(cells, max_usd=None, quiet=False))
    frame = load_runs(db)
    if frame.is_empty():
        print(f"no eval results in {db}: run `ctxlab eval` or `ctxlab report --run` first")
        return 1
    results = latest(results_from_frame(frame))
    wanted = args.scenario or [n for n in list_scenarios() if any(r.scenario == n for r in results)]
    written = write_report([r for r in results if r.scenario in wanted], args.out)
    for path in written:
        print(f"wrote {path}")
    return 0


def latest(results: list) -> list:
    """The newest stored run of each setting and seed (older re-runs are left out)."""
    by_key = {}
    for r in results:
        by_key[(r.config, r.seed)] = r
    return list(by_key.values())


def _check(args: argparse.Namespace) -> int:
    from evals.check import DEFAULT_BASELINE, run_check

    if args.sanity:
        from evals.sanity import run_sanity

        return run_sanity(reader=args.reader, as_json=args.json)
    return run_check(args.suite, args.baseline or DEFAULT_BASELINE, update=args.update)
