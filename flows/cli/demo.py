"""`ctxlab demo`: the agent as a Prefect flow, then the strategies compared (flows/demo.py)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from flows.cli import common


def add_parser(subparsers: Any) -> None:
    demo = subparsers.add_parser(
        "demo", help="run the agent as a Prefect flow, then compare strategies"
    )
    demo.add_argument(
        "--db", help="DuckDB file (default $CTXLAB_DB, else reports/demo.duckdb made fresh)"
    )
    demo.add_argument("--out", default="reports", help="where demo.md, demo.png and demo.svg go")
    common.server_options(demo)
    demo.set_defaults(handler=demo_command)


def demo_command(args: argparse.Namespace) -> int:
    from flows.cli.options import writable_store
    from flows.demo import run_demo

    db = args.db or os.environ.get("CTXLAB_DB") or None
    if db is not None:  # the demo's own store is made fresh; a given one must take writes
        writable_store(db)
    if args.ephemeral:
        from flows.watchdog import guard_children

        guard_children()  # a SIGKILL of the demo must not leave Prefect's temporary server
    return run_demo(db=db, out=args.out, port=args.port, ephemeral=args.ephemeral)
