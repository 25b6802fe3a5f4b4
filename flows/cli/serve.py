"""`ctxlab serve`: the weekly-competitive-analysis deployment on its schedule."""

from __future__ import annotations

import argparse
from typing import Any

from flows.cli import common
from flows.cli.options import add_model_options


def add_parser(subparsers: Any) -> None:
    serve = subparsers.add_parser("serve", help="serve the weekly-competitive-analysis deployment")
    serve.add_argument(
        "--agent",
        default="competitive-analysis",
        help="the agent the deployment runs each week: a registered name or module:attribute "
        "(e.g. an AgentSpec with MCP servers); default competitive-analysis",
    )
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
    common.server_options(serve, ephemeral=False)
    serve.set_defaults(handler=serve_command)
    add_model_options(serve)


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


def serve_command(args: argparse.Namespace) -> int:
    from flows.cli.options import usage_errors, use_model_options, writable_store
    from flows.cli.run import check_agent
    from flows.deploy import serve_weekly
    from flows.server import using_server
    from harness.store import default_path

    use_model_options(args)
    with usage_errors(args):
        params = common.parse_sets(args.set)
        check_agent(args.agent, args.model, args.strategy, params)
    writable_store(args.db or default_path())
    info = common.local_server(args.port)
    with using_server(info):
        serve_weekly(
            cron=args.cron, timezone=args.timezone, model=args.model, strategy=args.strategy,
            params=params, db=args.db, run_now=args.run_now, server=info, agent=args.agent,
        )  # fmt: skip
    return 0
