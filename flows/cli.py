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
import json
import logging
import os
import sys
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from flows.settings import apply_defaults

if TYPE_CHECKING:
    from flows.server import ServerInfo
    from harness.store import Store


class UsageError(Exception):
    """A mistake on the command line: reported in one line on stderr, exit 2."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog


class Parser(argparse.ArgumentParser):
    """Reports its own mistakes (and those a command finds while checking its options, through
    `args.parser.error`) as one line instead of the usage block."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self.prog, message)

    def parse_known_args(  # type: ignore[override]  # same call, typed loosely by argparse
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if args is not None and not self._subparsers:
            self._refuse_unknown_options(args)
        return super().parse_known_args(args, namespace)

    def _refuse_unknown_options(self, args: Sequence[str]) -> None:
        """Name a misspelt option before argparse complains about the option it was meant to
        be (`--scenaro X` would otherwise say "--scenario is required")."""
        import difflib

        known = [o for o in self._option_string_actions if o.startswith("--")]
        for arg in args:
            if arg == "--":
                return
            name = arg.split("=", 1)[0]
            if not name.startswith("--") or " " in name or name in known:  # " ": a value
                continue
            if self.allow_abbrev and any(o.startswith(name) for o in known):
                continue  # an abbreviation argparse resolves (or calls ambiguous)
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            self.error(f"unknown option {name}{hint}")


def main(argv: Sequence[str] | None = None) -> int:
    apply_defaults()  # before anything imports Prefect
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or os.environ.get("CTXLAB_DEBUG", "") not in ("", "0")
    if not debug and "prefect" not in sys.modules:
        # Prefect would print a failed flow's traceback on the console; its UI keeps it.
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
    parser = build_parser()
    prog = parser.prog
    try:
        args = parser.parse_args(argv)
        if not hasattr(args, "handler"):
            parser.print_help()
            return 0
        prog = args.parser.prog
        _show_progress_logs()
        code = int(args.handler(args) or 0)
        sys.stdout.flush()
        return code
    except UsageError as exc:
        print(f"{exc.prog}: {exc} (see `{exc.prog} --help`)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`ctxlab scenarios | head -1`): nothing more to say to it.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:
        if debug:
            raise
        print(f"{prog}: {_first_line(exc)} ({_save_details(prog, exc)})", file=sys.stderr)
        return 1


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _save_details(prog: str, exc: BaseException) -> str:
    """Write the traceback to a log file; say where it went (or how to see it)."""
    import tempfile
    import time
    import traceback

    folder = Path(os.environ.get("CTXLAB_LOG_DIR") or Path(tempfile.gettempdir()) / "ctxlab")
    path = folder / f"error-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Only the user may read it: a provider's error can echo request details.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as log:
            log.write(f"{prog}\n" + "".join(traceback.format_exception(exc)))
    except OSError:
        return "rerun with --debug for the traceback"
    return f"details: {path}; --debug shows the traceback"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="ctxlab",
        description="A context-engineering harness for long-running LLM agents that you can "
        "measure. Start with `ctxlab demo`.",
    )
    parser.add_argument("--version", action="version", version=f"ctxlab {_version()}")
    parser.add_argument("--debug", action="store_true", help=_DEBUG_HELP)
    sub = parser.add_subparsers(title="commands", metavar="COMMAND", dest="command")

    demo = sub.add_parser("demo", help="run the agent as a Prefect flow, then compare strategies")
    demo.add_argument(
        "--db", help="DuckDB file (default $CTXLAB_DB, else reports/demo.duckdb made fresh)"
    )
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
    server.add_argument("action", nargs="?", default="start", choices=("start", "stop", "status"),
                        help="start (default), stop or status")  # fmt: skip
    server.add_argument("--port", type=int, default=None, help="API and UI port (default 4200)")
    server.add_argument("--foreground", action="store_true", help="run in this terminal")
    server.add_argument(
        "--all-services",
        action="store_true",
        help="keep automations and the event feed on (more CPU per task)",
    )
    server.set_defaults(handler=_server)

    serve = sub.add_parser("serve", help="serve the weekly-competitive-analysis deployment")
    serve.add_argument("--cron", default="0 9 * * 1", help="schedule (default Mondays 09:00)")
    serve.add_argument(
        "--timezone",
        default="UTC",
        type=_timezone,
        help="IANA timezone of the schedule, e.g. Europe/Paris (default UTC)",
    )
    serve.add_argument(
        "--model", default="simulated", help="simulated | openai:... | anthropic:..."
    )
    serve.add_argument("--strategy", help="context strategy (default: the agent's)")
    serve.add_argument("--set", action="append", default=[], metavar="K=V",
                       help="strategy or agent parameter (repeat), e.g. mask.keep=6")  # fmt: skip
    serve.add_argument("--db", help="DuckDB file the weekly runs write to (default $CTXLAB_DB "
                       "or ./ctxlab.duckdb, made absolute)")  # fmt: skip
    serve.add_argument("--run-now", action="store_true", help="also trigger one run at once")
    _server_options(serve, ephemeral=False)
    serve.set_defaults(handler=_serve)

    sweep = sub.add_parser("sweep", help="eval sweep: one Prefect task per grid cell")
    sweep.add_argument("--scenario", required=True, help="scenario name (`ctxlab scenarios`)")
    sweep.add_argument("--strategy", action="append", help="arm to compare (repeat; default full)")
    sweep.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="K=V1,V2",
        help="parameter values to sweep, e.g. summarize.trigger=0.6,0.85",
    )
    sweep.add_argument("--seeds", type=_count, default=5, help="seeds per setting (default 5)")
    sweep.add_argument("--scale", default="small", choices=("small", "full"),
                       help="data size (default small)")  # fmt: skip
    sweep.add_argument(
        "--model", default="simulated", help="simulated | openai:... | anthropic:..."
    )
    sweep.add_argument(
        "--reader",
        default="fallible",
        choices=("fallible", "ideal"),
        help="how the simulated model reads (default fallible)",
    )
    sweep.add_argument("--runner", default="thread", choices=("thread", "process", "dask"),
                       help="where cells run: threads, local processes, or Dask")  # fmt: skip
    sweep.add_argument("--workers", type=_count, help="threads, processes or Dask workers")
    sweep.add_argument("--address", help="Dask scheduler address (with --runner dask)")
    sweep.add_argument("--max-usd", type=float, help="spending cap per cell (real models)")
    sweep.add_argument(
        "--db", help="DuckDB file for eval_runs (default $CTXLAB_DB or ./ctxlab.duckdb)"
    )
    sweep.add_argument(
        "--json", action="store_true", help="one JSON object per run, as `ctxlab eval --json`"
    )
    _server_options(sweep)
    sweep.set_defaults(handler=_sweep)

    sql = sub.add_parser(
        "sql", help="query the store read-only and print a table (safe while runs write)"
    )
    sql.add_argument("query", help=f'SQL, e.g. "{_SQL_EXAMPLE}"')
    sql.add_argument("--db", help="DuckDB file (default $CTXLAB_DB or ./ctxlab.duckdb)")
    sql.add_argument(
        "--wait",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long to retry while a run holds the file for a step (default 30); a query "
        "that a run waits on for a second is stopped: readers give way to runs",
    )
    sql.add_argument("--json", action="store_true", help="print the rows as a JSON list")
    sql.set_defaults(handler=_sql)

    from evals.cli import add_model_options, register

    add_model_options(run)
    add_model_options(serve)
    add_model_options(sweep)
    register(sub)
    for command in sub.choices.values():
        command.set_defaults(parser=command)
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help=_DEBUG_HELP)  # fmt: skip
    return parser


_MODEL_HELP = "simulated | openai:... | anthropic:..."
_SQL_EXAMPLE = "SELECT middleware, action, count(*) FROM events GROUP BY ALL"
_DEBUG_HELP = "show the traceback of a failure instead of writing it to a log file"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ctxlab")
    except PackageNotFoundError:
        return "unknown"


def _count(text: str) -> int:
    """An argparse type: a whole number, 1 or more."""
    from evals.cli import count_arg

    return count_arg(text)


def _timezone(name: str) -> str:
    """An argparse type: an IANA timezone name the schedule can use."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise argparse.ArgumentTypeError(
            f"unknown timezone {name!r}; give an IANA name such as UTC or Europe/Paris"
        ) from None
    return name


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
        from flows.watchdog import guard_children

        guard_children()  # a SIGKILL of this process must not leave Prefect's temporary server
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

    if args.port is not None and not 0 < args.port < 65536:
        args.parser.error(f"--port must be between 1 and 65535, got {args.port}")
    if args.action == "stop":
        stopped = server.stop_server(args.port)
        where = f" on port {args.port}" if args.port else ""
        home = server.prefect_home()
        print(f"stopped the server at {stopped.api_url}" if stopped else
              f"no server{where} that ctxlab started from {home} is running")  # fmt: skip
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
    stop = f"ctxlab server stop --port {info.port}"
    print(f"Prefect server started in {info.start_seconds:.1f} s\n"
          f"  UI:  {info.ui_url}\n  API: {info.api_url}\n  log: {info.log_path}\n"
          f"ctxlab runs report there; stop it with `{stop}`.")  # fmt: skip
    return 0


def _run(args: argparse.Namespace) -> int:
    from evals.cli import usage_errors, use_model_options, writable_store
    from harness.store import Store, default_path

    if not args.agent and not args.resume:
        args.parser.error("give an AGENT (e.g. competitive-analysis) or --resume RUN_ID")
    # Mistakes surface here, before a flow run (or anything resumable) is recorded for them.
    params: dict[str, Any] = {}
    use_model_options(args)
    if not args.resume:
        with usage_errors(args):
            params = _parse_sets(args.set)
            check_agent(args.agent, args.model, args.strategy, params)
    db = writable_store(args.db or default_path())
    from flows.agent_run import agent_run, latest_unfinished, load_session

    resume = args.resume
    if resume == "last":
        resume = latest_unfinished(db)
        if resume is None:
            from flows.resume import recorded_sessions

            why = ("every recorded run finished" if recorded_sessions(Store(db, hold=False))
                   else f"no session of `ctxlab run` was recorded in {db}")  # fmt: skip
            print(f"{args.parser.prog}: nothing to resume: {why}", file=sys.stderr)
            return 1
    if resume:
        with usage_errors(args):
            load_session(Store(db, hold=False), resume)
    else:
        params = resolve_params(args.agent, params, Store(db, hold=False))
    info = _connect(args)
    if not resume:
        log = logging.getLogger("ctxlab")
        log.info("running %s%s", args.agent, f" ({describe_params(params)})" if params else "")
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


def check_agent(agent: str, model: str, strategy: str | None, params: dict[str, Any]) -> None:
    """Build the agent once on a scratch store, so an unknown agent, strategy, parameter or
    model is refused before anything is recorded."""
    from flows.agents import AgentOptions, get_agent
    from harness.steps import InlineRunner
    from harness.store import Store

    spec = get_agent(agent)
    scratch = Store(":memory:")
    try:
        options = AgentOptions(store=scratch, step_runner=InlineRunner(), model=model,
                               strategy=strategy, params=params)  # fmt: skip
        spec.build(options)
    finally:
        scratch.close()


def resolve_params(agent: str, params: dict[str, Any], store: Store) -> dict[str, Any]:
    """The parameters the run will use, with the competitive-analysis week and scale made
    explicit, so the run says (and records) which it did."""
    from flows.agents import COMPETITIVE, competitive_week, get_agent

    if get_agent(agent).name != COMPETITIVE:
        return params
    resolved = {"scale": "small", **params}
    if resolved.get("week", "auto") == "auto":
        resolved["week"] = competitive_week(store, resolved)
    return resolved


def describe_params(params: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" if "." not in k else f"{k}={v}" for k, v in params.items())


def _print_session(result: dict[str, Any], info: ServerInfo | None) -> None:
    from rich.markup import escape
    from rich.table import Table

    what = describe_params(result.get("params") or {})
    table = Table(
        title=escape(f"{result.get('agent', 'session')}{f' ({what})' if what else ''}: "
                     f"session {result['session_id']} on thread {result['thread_id']}")
    )  # fmt: skip
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
    print(f"Store: {result['db']}  e.g.  ctxlab sql --db {result['db']} "
          "\"SELECT middleware, action, count(*) FROM events GROUP BY ALL\"")  # fmt: skip
    _print_thread(result)


def _print_thread(result: dict[str, Any]) -> None:
    """The session is one thread of several runs (one per input, subagent runs linked to
    them): say so, and that importing the thread takes all of them."""
    from harness.store import Store

    runs = [r["run_id"] for r in result["runs"]]
    subagents = Store(result["db"], hold=False).subagent_runs(runs)
    print(f"Thread {result['thread_id']}: {_plural(len(runs), 'run')}, one per input "
          f"({', '.join(runs)})")  # fmt: skip
    if subagents:
        under = ", ".join(f"{sub} (of {parent})" for sub, parent in subagents)
        print(f"  and {_plural(len(subagents), 'subagent run')} linked to them: {under}")
    print(f"Import the whole thread as a scenario: ctxlab scenarios import {result['thread_id']} "
          f"--db {result['db']}")  # fmt: skip


def _serve(args: argparse.Namespace) -> int:
    from evals.cli import usage_errors, use_model_options, writable_store
    from flows.agents import COMPETITIVE
    from flows.deploy import serve_weekly
    from flows.server import using_server
    from harness.store import default_path

    use_model_options(args)
    with usage_errors(args):
        params = _parse_sets(args.set)
        check_agent(COMPETITIVE, args.model, args.strategy, params)
    writable_store(args.db or default_path())
    info = _local_server(args.port)
    with using_server(info):
        serve_weekly(
            cron=args.cron, timezone=args.timezone, model=args.model, strategy=args.strategy,
            params=params, db=args.db, run_now=args.run_now, server=info,
        )  # fmt: skip
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from evals.cli import check_cells, usage_errors, use_model_options, writable_store
    from flows.sweep import eval_sweep, expand, parse_grid, task_runner
    from harness.store import default_path

    strategies = args.strategy or ["full"]
    use_model_options(args)
    with usage_errors(args):
        grid = parse_grid(args.grid)
        cells = expand(args.scenario, strategies, grid, range(args.seeds), scale=args.scale,
                       model=args.model, reader=args.reader)  # fmt: skip
        check_cells(cells)
    db = writable_store(args.db or default_path())
    runner = task_runner(args.runner, workers=args.workers, address=args.address)
    info = _connect(args)
    call = eval_sweep.with_options(task_runner=runner)(
        scenario=args.scenario, strategies=strategies, grid=grid,
        seeds=args.seeds, scale=args.scale, model=args.model, reader=args.reader, db=db,
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
    """The sweep table, one column per swept parameter (never cut), with the paired
    difference against `full` and the marks `recommended`, `tied` and `front`."""
    from rich.markup import escape
    from rich.table import Table

    keys = sorted({k for r in rows for k in r.get("params") or {}})
    table = Table(
        title=escape(title),
        caption="accuracy: mean (95% bootstrap interval over seeds); vs full: paired "
        "difference against `full` at its defaults on the same seeds and probes (- where the "
        "sweep did not run it); tied: interval overlaps the best's; front: Pareto front "
        "(accuracy vs cost)",
    )
    table.add_column("strategy" if keys else "setting", no_wrap=True)
    for key in keys:
        table.add_column(escape(key), justify="right", no_wrap=True)
    for col in ("seeds", "accuracy (95% CI)", "vs full (95% CI)", "input tokens",
                "peak context", "cost $", "overflow"):  # fmt: skip
        table.add_column(col, justify="right")
    table.add_column("")
    for r in rows:
        marks = [("recommended", r["recommended"]), ("tied", r.get("tied_with_best")),
                 ("front", r["pareto"])]  # fmt: skip
        params = r.get("params") or {}
        name = r.get("strategy", r["setting"]) if keys else r["setting"]
        table.add_row(
            escape(str(name)), *(escape(str(params.get(k, "-"))) for k in keys),
            str(r["seeds"]), f"{r['accuracy']:.1%} ({r['accuracy_ci']})", _vs_full(r),
            f"{r['input_tokens']:,}", f"{r['peak_context_tokens']:,}", f"{r['cost_usd']:.4f}",
            f"{r['overflow_rate']:.0%}", " ".join(m for m, on in marks if on),
        )  # fmt: skip
    _console().print(table)


def _vs_full(row: Mapping[str, Any]) -> str:
    if row.get("vs_full") is None:
        return "-"
    low, high = row["vs_full_ci"]
    return f"{row['vs_full']:+.1%} ({low:+.1%} to {high:+.1%})"


def _console() -> Any:
    """Tables keep their full width (run ids and parameters must stay whole); piped, they are
    printed at their natural width, however wide."""
    import shutil

    from rich.console import Console

    console = Console()
    if console.is_terminal:
        return Console(width=max(shutil.get_terminal_size().columns, 140))
    return Console(width=1_000)


def _sql(args: argparse.Namespace) -> int:
    from rich.markup import escape
    from rich.table import Table

    from harness.errors import QueryError
    from harness.store import FILE_MEMORY_LIMIT, default_path
    from harness.store.access import sandboxed_query

    db = args.db or default_path()
    if not Path(db).is_file():
        args.parser.error(f"no store at {db}: give --db FILE or set $CTXLAB_DB")
    try:
        columns, rows = sandboxed_query(
            db, args.query, wait=args.wait, memory_limit=FILE_MEMORY_LIMIT
        )
    except QueryError as exc:  # a refused statement or a mistake in the query: usage errors
        args.parser.error(str(exc))
    if args.json:
        print(json.dumps([dict(zip(columns, r, strict=True)) for r in rows], default=str))
        return 0
    table = Table(*(escape(c) for c in columns), caption=_plural(len(rows), "row"))
    for row in rows:
        table.add_row(*("NULL" if v is None else escape(str(v)) for v in row))
    _console().print(table)
    return 0


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _demo(args: argparse.Namespace) -> int:
    from evals.cli import writable_store
    from flows.demo import run_demo

    db = args.db or os.environ.get("CTXLAB_DB") or None
    if db is not None:  # the demo's own store is made fresh; a given one must take writes
        writable_store(db)
    if args.ephemeral:
        from flows.watchdog import guard_children

        guard_children()  # a SIGKILL of the demo must not leave Prefect's temporary server
    return run_demo(db=db, out=args.out, port=args.port, ephemeral=args.ephemeral)


if __name__ == "__main__":
    sys.exit(main())
