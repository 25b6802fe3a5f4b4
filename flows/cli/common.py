"""What the flows commands share: server options and the server they report to, running a
flow call, `--set` parsing."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flows.server import ServerInfo

DEBUG_HELP = "show the traceback of a failure instead of writing it to a log file"


def count(text: str) -> int:
    """An argparse type: a whole number, 1 or more."""
    from flows.cli.options import count_arg

    return count_arg(text)


def server_options(parser: argparse.ArgumentParser, *, ephemeral: bool = True) -> None:
    parser.add_argument("--port", type=int, help="local Prefect server port (default 4200)")
    if ephemeral:
        parser.add_argument(
            "--ephemeral",
            action="store_true",
            help="no server: a temporary one in this process (task runs may be lost at exit)",
        )


def parse_sets(items: Sequence[str]) -> dict[str, Any]:
    """`--set` of the agent commands, in the order given, as the session records it (plain
    JSON); the agent splits it into a `Settings` when it builds."""
    from evals.run.settings import parse_setting

    return dict(parse_setting(item) for item in items)


def run_flow(call: Coroutine[Any, Any, dict[str, Any]], info: ServerInfo | None) -> dict[str, Any]:
    """Run a flow call to completion, reporting to `info`'s server (or ephemerally)."""
    import asyncio

    from flows.interrupted import ended_by_interrupt
    from flows.server import using_server

    if info is None:
        from flows.watchdog import guard_children

        guard_children()  # a SIGKILL of this process must not leave Prefect's temporary server
        with ended_by_interrupt():
            return asyncio.run(call)
    with using_server(info), ended_by_interrupt():
        return asyncio.run(call)


def connect(args: argparse.Namespace) -> ServerInfo | None:
    """The Prefect server this command reports to, or None with `--ephemeral`."""
    return None if getattr(args, "ephemeral", False) else local_server(args.port)


def local_server(port: int | None) -> ServerInfo:
    """The server found, or started (and said so)."""
    from flows.server import ensure_server

    info = ensure_server(port)
    if info.started_now:
        print(f"Started a Prefect server at {info.ui_url} in {info.start_seconds:.0f} s "
              "(it keeps running; `ctxlab server stop` stops it).", file=sys.stderr)  # fmt: skip
    return info
