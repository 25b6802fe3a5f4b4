"""`ctxlab`: the command line.

    ctxlab demo                     the whole product offline in under two minutes
    ctxlab run AGENT                one agent session as a Prefect flow (--resume RUN_ID)
    ctxlab server [start|stop|status]   the long-lived local Prefect server and its UI
    ctxlab serve                    the weekly-competitive-analysis deployment on its schedule
    ctxlab sweep --scenario S --grid k=v1,v2   an eval sweep, one Prefect task per cell
    ctxlab scenarios | eval | report | check   (from `evals`)

Each command imports what it needs when it runs, so `ctxlab --help` answers at once.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import sys
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any

from flows.server import ServerInfo
from flows.settings import apply_defaults


def main(argv: Sequence[str] | None = None) -> int:
    apply_defaults()  # before anything imports Prefect
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "handler"):
        parser.print_help()
        return 0
    _show_progress_logs()
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except (LookupError, RuntimeError, ValueError) as exc:
        # What the user can fix (an unknown agent or run, a bad grid, no server): no traceback.
        print(f"ctxlab {args.command}: {exc}", file=sys.stderr)
        return 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctxlab",
        description="A context-engineering harness for long-running LLM agents that you can "
        "measure. Start with `ctxlab demo`.",
    )
    sub = parser.add_subparsers(title="commands", metavar="COMMAND", dest="command")

    demo = sub.add_parser("demo", help="run the agent as a Prefect flow, then compare strategies")
    demo.add_argument("--db", help="DuckDB file (default: reports/demo.duckdb, made fresh)")
    demo.add_argument("--out", default="reports", help="where demo.md and demo.png go")
    _server_options(demo)
    demo.set_defaults(handler=_demo)

    run = sub.add_parser("run", help="run an agent session as a Prefect flow")
    run.add_argument("agent", nargs="?", help="registered agent name or module:attribute")
    run.add_argument("--input", action="append", help="a user message (repeat for a session)")
    run.add_argument("--model", default="simulated", help="simulated | openai:... | anthropic:...")
    run.add_argument("--thread", help="continue this thread")
    run.add_argument("--strategy", help="context strategy (default: the agent's)")
    run.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="K=V",
        help="strategy or agent parameter, e.g. summarize.trigger=0.7 or week=2",
    )
    run.add_argument(
        "--resume",
        metavar="RUN_ID",
        help="continue a run that did not finish ('last' for the latest)",
    )
    run.add_argument("--db", help="DuckDB file (default $CTXLAB_DB or ./ctxlab.duckdb)")
    run.add_argument("--json", action="store_true", help="print the result as JSON")
    _server_options(run)
    run.set_defaults(handler=_run)

    server = sub.add_parser("server", help="start, stop or show the local Prefect server")
    server.add_argument("action", nargs="?", default="start", choices=("start", "stop", "status"))
    server.add_argument("--port", type=int, default=None, help="default 4200")
    server.add_argument("--foreground", action="store_true", help="run in this terminal")
    server.add_argument(
        "--all-services",
        action="store_true",
        help="keep automations and the event feed on (more CPU per task)",
    )
    server.set_defaults(handler=_server)

    serve = sub.add_parser("serve", help="serve the weekly-competitive-analysis deployment")
    serve.add_argument("--cron", default="0 9 * * 1", help="schedule (default Mondays 09:00)")
    serve.add_argument("--timezone", default="UTC", help="IANA timezone of the schedule")
    serve.add_argument("--model", default="simulated")
    serve.add_argument("--strategy")
    serve.add_argument("--set", action="append", default=[], metavar="K=V")
    serve.add_argument("--db", help="DuckDB file the weekly runs write to")
    serve.add_argument("--run-now", action="store_true", help="also trigger one run at once")
    _server_options(serve, ephemeral=False)
    serve.set_defaults(handler=_serve)

    sweep = sub.add_parser("sweep", help="eval sweep: one Prefect task per grid cell")
    sweep.add_argument("--scenario", required=True)
    sweep.add_argument("--strategy", action="append", help="arm to compare (repeat; default full)")
    sweep.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="K=V1,V2",
        help="parameter values to sweep, e.g. summarize.trigger=0.6,0.85",
    )
    sweep.add_argument("--seeds", type=int, default=5, help="seeds per setting (default 5)")
    sweep.add_argument("--scale", default="small", choices=("small", "full"))
    sweep.add_argument("--model", default="simulated")
    sweep.add_argument(
        "--reader",
        default="fallible",
        choices=("fallible", "ideal"),
        help="how the simulated model reads (default fallible)",
    )
    sweep.add_argument("--runner", default="thread", choices=("thread", "process", "dask"))
    sweep.add_argument("--workers", type=int, help="threads, processes or Dask workers")
    sweep.add_argument("--address", help="Dask scheduler address (with --runner dask)")
    sweep.add_argument("--max-usd", type=float, help="spending cap per cell (real models)")
    sweep.add_argument("--db", help="DuckDB file for eval_runs (default ./ctxlab.duckdb)")
    sweep.add_argument(
        "--json", action="store_true", help="one JSON object per run, as `ctxlab eval --json`"
    )
    _server_options(sweep)
    sweep.set_defaults(handler=_sweep)

    if _has_evals_cli():
        from evals.cli import register

        register(sub)
    return parser


def _has_evals_cli() -> bool:
    """Whether `evals.cli` exists, found without importing `evals` (which loads DuckDB and
    polars)."""
    spec = importlib.util.find_spec("evals")
    places = spec.submodule_search_locations if spec is not None else None
    return any((Path(p) / "cli.py").exists() for p in places or ())


def _server_options(parser: argparse.ArgumentParser, *, ephemeral: bool = True) -> None:
    parser.add_argument("--port", type=int, help="local Prefect server port (default 4200)")
    if ephemeral:
        parser.add_argument(
            "--ephemeral",
            action="store_true",
            help="no server: a temporary one in this process (task runs may be lost at exit)",
        )


def _show_progress_logs() -> None:
    """Our own progress lines (run started, how to resume) go to stderr."""
    log = logging.getLogger("ctxlab")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False


def _parse_sets(items: Sequence[str]) -> dict[str, Any]:
    from evals.runner import parse_setting

    return dict(parse_setting(item) for item in items)


def _run_flow(call: Coroutine[Any, Any, dict[str, Any]], info: ServerInfo | None) -> dict[str, Any]:
    """Run a flow call to completion, reporting to `info`'s server (or ephemerally)."""
    import asyncio

    from flows.server import using_server

    if info is None:
        return asyncio.run(call)
    with using_server(info):
        return asyncio.run(call)


def _connect(args: argparse.Namespace) -> ServerInfo | None:
    """The Prefect server this command reports to, or None with `--ephemeral`."""
    return None if getattr(args, "ephemeral", False) else _local_server(args.port)


def _local_server(port: int | None) -> ServerInfo:
    """The server found, or started (and said so)."""
    from flows.server import ensure_server

    info = ensure_server(port)
    if info.started_now:
        print(f"Started a Prefect server at {info.ui_url} in {info.start_seconds:.0f} s "
              "(it keeps running; `ctxlab server stop` stops it).", file=sys.stderr)  # fmt: skip
    return info


# -- commands ------------------------------------------------------------------------------


def _server(args: argparse.Namespace) -> int:
    from flows import server

    if args.action == "stop":
        stopped = server.stop_server()
        print(f"stopped the server at {stopped.api_url}" if stopped else "no server to stop")
        return 0
    if args.action == "status":
        found = server.find_server(args.port)
        if found is None:
            print("no Prefect server found; start one with `ctxlab server`")
            return 1
        print(f"Prefect server: UI {found.ui_url}  API {found.api_url}")
        return 0
    if args.foreground:
        return server.run_foreground(args.port or server.DEFAULT_PORT, lean=not args.all_services)
    found = server.find_server(args.port)
    if found is not None:
        print(f"A Prefect server is already running: UI {found.ui_url}  API {found.api_url}")
        return 0
    info = server.start_server(args.port or server.DEFAULT_PORT, lean=not args.all_services)
    print(f"Prefect server started in {info.start_seconds:.1f} s\n"
          f"  UI:  {info.ui_url}\n  API: {info.api_url}\n  log: {info.log_path}\n"
          "ctxlab runs report there; stop it with `ctxlab server stop`.")  # fmt: skip
    return 0


def _run(args: argparse.Namespace) -> int:

    from flows.agent_run import agent_run, latest_unfinished, load_session
    from flows.agents import get_agent
    from harness.store import Store, default_path

    if not args.agent and not args.resume:
        print("ctxlab run: give an AGENT (e.g. competitive-analysis) or --resume RUN_ID",
              file=sys.stderr)  # fmt: skip
        return 2
    db = args.db
    resume = args.resume
    if resume == "last":
        resume = latest_unfinished(db)
        if resume is None:
            print("nothing to resume: every recorded run finished", file=sys.stderr)
            return 1
    # Mistakes surface here, before a flow run is created for them.
    if resume:
        load_session(Store(db or default_path(), hold=False), resume)
    else:
        get_agent(args.agent)
    params = _parse_sets(args.set)
    info = _connect(args)
    call = agent_run(
        agent=args.agent or "", inputs=args.input, model=args.model, thread_id=args.thread,
        db=db, strategy=args.strategy, params=params, resume=resume,
    )  # fmt: skip
    result = _run_flow(call, info)
    if args.json:
        print(json.dumps(result, default=str, indent=2))
        return 0
    _print_session(result, info)
    return 0 if all(r["status"] == "completed" for r in result["runs"]) else 1


def _print_session(result: dict[str, Any], info: ServerInfo | None) -> None:
    from rich.table import Table

    table = Table(title=f"session {result['session_id']} on thread {result['thread_id']}")
    for col in ("run", "status", "model calls", "tokens in", "tokens out", "moved out",
                "files", "cost $", "tasks"):  # fmt: skip
        table.add_column(col, justify="left" if col in ("run", "status") else "right")
    for r in result["runs"]:
        table.add_row(
            r["run_id"], r["status"], str(r["steps"]), f"{r['input_tokens']:,}",
            f"{r['output_tokens']:,}", f"{r['moved_out_tokens']:,}", str(r["files_written"]),
            f"{r['cost_usd']:.4f}", str(r["tasks"]),
        )  # fmt: skip
    _console().print(table)
    if info is not None and result.get("flow_run_id"):
        print(f"Prefect UI: {info.flow_run_url(result['flow_run_id'])}")
    print(f"Store: {result['db']}  e.g.  duckdb {result['db']} -c "
          "\"SELECT middleware, action, count(*) FROM events GROUP BY ALL\"")  # fmt: skip


def _serve(args: argparse.Namespace) -> int:
    from flows.deploy import serve_weekly
    from flows.server import using_server

    info = _local_server(args.port)
    with using_server(info):
        serve_weekly(
            cron=args.cron, timezone=args.timezone, model=args.model, strategy=args.strategy,
            params=_parse_sets(args.set), db=args.db, run_now=args.run_now, server=info,
        )  # fmt: skip
    return 0


def _sweep(args: argparse.Namespace) -> int:

    from flows.sweep import eval_sweep, expand, parse_grid, task_runner

    grid = parse_grid(args.grid)
    strategies = args.strategy or ["full"]
    expand(args.scenario, strategies, grid, [0])  # a bad grid key fails before the flow runs
    runner = task_runner(args.runner, workers=args.workers, address=args.address)
    info = _connect(args)
    call = eval_sweep.with_options(task_runner=runner)(
        scenario=args.scenario, strategies=strategies, grid=grid,
        seeds=args.seeds, scale=args.scale, model=args.model, reader=args.reader, db=args.db,
        max_usd=args.max_usd, show_progress=not args.json,
    )  # fmt: skip
    result = _run_flow(call, info)
    if args.json:
        for run in result["runs"]:  # one object per cell and seed, as `ctxlab eval --json`
            print(json.dumps(run, default=str, sort_keys=True))
        return 0
    print_sweep(result["rows"], title=f"{args.scenario} ({args.scale}, {args.model})")
    if result["recommendation"]:
        print(result["recommendation"])
    if info is not None:
        print(f"Prefect UI: {info.flow_run_url(result['flow_run_id'])}")
    print(f"Results: eval_runs batch {result['batch']} in {result['db']}")
    return 0


def print_sweep(rows: Sequence[dict[str, Any]], *, title: str) -> None:
    """The sweep table: * marks the Pareto front, > the recommended setting."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=escape(title), caption="* Pareto front (accuracy vs cost)   > recommended")
    for col in ("", "setting", "seeds", "accuracy", "95% CI", "input tokens", "peak context",
                "cost $", "overflow"):  # fmt: skip
        table.add_column(col, justify="left" if col in ("", "setting") else "right")
    for r in rows:
        mark = (">" if r["recommended"] else " ") + ("*" if r["pareto"] else " ")
        table.add_row(
            mark, escape(r["setting"]), str(r["seeds"]), f"{r['accuracy']:.1%}", r["accuracy_ci"],
            f"{r['input_tokens']:,}", f"{r['peak_context_tokens']:,}", f"{r['cost_usd']:.4f}",
            f"{r['overflow_rate']:.0%}",
        )  # fmt: skip
    _console().print(table)


def _console() -> Any:
    """Tables keep their full width (run ids must stay copyable) even when piped."""
    import shutil

    from rich.console import Console

    return Console(width=max(shutil.get_terminal_size().columns, 140))


def _demo(args: argparse.Namespace) -> int:
    from flows.demo import run_demo

    return run_demo(db=args.db, out=args.out, port=args.port, ephemeral=args.ephemeral)


if __name__ == "__main__":
    sys.exit(main())
