"""`ctxlab run`: one agent session as a Prefect flow (or `--resume` one that did not finish)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import TYPE_CHECKING, Any

from flows.cli import common
from flows.cli.options import add_model_options, plural

if TYPE_CHECKING:
    from flows.server import ServerInfo


def add_parser(subparsers: Any) -> None:
    run = subparsers.add_parser("run", help="run an agent session as a Prefect flow")
    run.add_argument("agent", nargs="?", help="registered agent name or module:attribute")
    run.add_argument("--input", action="append", help="a user message (repeat for a session)")
    run.add_argument(
        "--model",
        default="simulated",
        help="simulated | openai:... | anthropic:... | openai-compatible:NAME (with --base-url)",
    )
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
    run.add_argument(
        "--weeks",
        type=common.count,
        metavar="N",
        help="competitive-analysis: run the recurring family's weeks one after another, each "
        "a flow run on its own thread (from the week after the last one memory notes, or "
        "--set week=K), up to week N",
    )
    run.add_argument("--db", help="DuckDB file (default $CTXLAB_DB or ./ctxlab.duckdb)")
    run.add_argument("--json", action="store_true", help="print the result as JSON")
    common.server_options(run)
    run.set_defaults(handler=run_command)
    add_model_options(run)


def run_command(args: argparse.Namespace) -> int:
    from flows.agents import resolve_params
    from flows.cli.options import usage_errors, use_model_options, writable_store
    from harness.store import Store, default_path

    if not args.agent and not args.resume:
        args.parser.error("give an AGENT (e.g. competitive-analysis) or --resume RUN_ID")
    # Mistakes surface here, before a flow run (or anything resumable) is recorded for them.
    params: dict[str, Any] = {}
    use_model_options(args)
    if not args.resume:
        with usage_errors(args):
            params = common.parse_sets(args.set)
            if args.weeks is not None:
                check_weeks_options(args, params)
                params["weeks"] = args.weeks
            check_agent(args.agent, args.model, args.strategy, params)
    elif args.weeks is not None:
        args.parser.error("--weeks starts new weeks; resume the killed one with --resume, "
                          "then run --weeks again")  # fmt: skip
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
        with usage_errors(args):
            params = resolve_params(args.agent, params, Store(db, hold=False))
    info = common.connect(args)
    if args.weeks is not None:
        return _run_weeks(args, db, params, info)
    if not resume:
        log = logging.getLogger("ctxlab")
        log.info("running %s%s", args.agent, f" ({describe_params(params)})" if params else "")
    call = agent_run(
        agent=args.agent or "", inputs=args.input, model=args.model, thread_id=args.thread,
        db=db, strategy=args.strategy, params=params, resume=resume,
    )  # fmt: skip
    result = common.run_flow(call, info)
    if args.json:
        print(json.dumps(result, default=str, indent=2))
        return 0
    _print_session(result, info)
    return 0 if all(r["status"] == "completed" for r in result["runs"]) else 1


def check_weeks_options(args: argparse.Namespace, params: dict[str, Any]) -> None:
    """`--weeks` is the competitive-analysis schedule: one new thread a week."""
    from flows.agents import COMPETITIVE, get_agent

    if get_agent(args.agent).name != COMPETITIVE:
        raise ValueError(f"--weeks runs {COMPETITIVE}'s weekly sessions, not {args.agent!r}")
    if args.thread or args.input:
        raise ValueError("--weeks runs each week on its own thread with the week's own inputs; "
                         "leave out --thread and --input")  # fmt: skip
    if "weeks" in params:
        raise ValueError(f"give the number of weeks once: --weeks {args.weeks} or "
                         f"--set weeks={params['weeks']}")  # fmt: skip


def _run_weeks(
    args: argparse.Namespace, db: str, params: dict[str, Any], info: ServerInfo | None
) -> int:
    """Weeks from the first one due (`week=auto`: after the last one memory notes) to
    `--weeks`, each its own flow run and thread on one store; only memory carries over. Stops
    at a week that does not complete (resume it with `ctxlab run --resume last`)."""
    from flows.agent_run import agent_run

    first = int(params["week"])
    log = logging.getLogger("ctxlab")
    results = []
    for week in range(first, args.weeks + 1):
        week_params = {**params, "week": week}
        log.info("running %s (%s)", args.agent, describe_params(week_params))
        call = agent_run(agent=args.agent, model=args.model, db=db, strategy=args.strategy,
                         params=week_params)  # fmt: skip
        result = common.run_flow(call, info)
        results.append(result)
        if not args.json:
            _print_session(result, info)
        if not all(r["status"] == "completed" for r in result["runs"]):
            print(f"{args.parser.prog}: week {week} did not complete; resume it with "
                  f"`ctxlab run --resume last --db {db}`, then run --weeks {args.weeks} again",
                  file=sys.stderr)  # fmt: skip
            break
    else:
        if not args.json:
            print(
                f"Weeks {first}-{args.weeks} done on {db}; every version of memory is in its "
                f"`memory` table (ctxlab sql --db {db})"
            )
    if args.json:
        print(json.dumps(results, default=str, indent=2))
    done = all(r["status"] == "completed" for res in results for r in res["runs"])
    return 0 if done else 1


def check_agent(agent: str, model: str, strategy: str | None, params: dict[str, Any]) -> None:
    """Build the agent once on a scratch store, so an unknown agent, strategy, parameter or
    model is refused before anything is recorded."""
    from flows.agents import AgentOptions, build_agent, get_agent
    from harness.steps import InlineRunner
    from harness.store import Store

    spec = get_agent(agent)
    scratch = Store(":memory:")
    try:
        options = AgentOptions(store=scratch, step_runner=InlineRunner(), model=model,
                               strategy=strategy, params=params)  # fmt: skip
        build_agent(spec, options).close()  # its MCP servers started and listed, then stopped
    finally:
        scratch.close()


def describe_params(params: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" if "." not in k else f"{k}={v}" for k, v in params.items())


def _print_session(result: dict[str, Any], info: ServerInfo | None) -> None:
    from evals.report.terminal import Column, print_fitted

    what = describe_params(result.get("params") or {})
    title = (f"{result.get('agent', 'session')}{f' ({what})' if what else ''}: "
             f"session {result['session_id']} on thread {result['thread_id']}")  # fmt: skip
    # Narrow terminals lose the task count, then files, then tokens moved out.
    columns = [Column("run", "left"), Column("status", "left"), Column("model calls"),
               Column("tokens in"), Column("tokens out", drop=1), Column("moved out", drop=2),
               Column("files", drop=3), Column("cost $"), Column("tasks", drop=4)]  # fmt: skip
    cells = [
        [r["run_id"], r["status"], str(r["steps"]), f"{r['input_tokens']:,}",
         f"{r['output_tokens']:,}", f"{r['moved_out_tokens']:,}", str(r["files_written"]),
         f"{r['cost_usd']:.4f}", str(r["tasks"])]
        for r in result["runs"]
    ]  # fmt: skip
    print_fitted(columns, cells, title=title)
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
    subagents = Store(result["db"], hold=False).runs.descendants(runs)
    print(f"Thread {result['thread_id']}: {plural(len(runs), 'run')}, one per input "
          f"({', '.join(runs)})")  # fmt: skip
    if subagents:
        under = ", ".join(f"{sub} (of {parent})" for sub, parent in subagents)
        print(f"  and {plural(len(subagents), 'subagent run')} linked to them: {under}")
    print(f"Import the whole thread as a scenario: ctxlab scenarios import {result['thread_id']} "
          f"--db {result['db']}")  # fmt: skip
