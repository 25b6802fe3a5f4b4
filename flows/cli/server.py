"""`ctxlab server [start|stop|status]`: the long-lived local Prefect server and its UI."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(subparsers: Any) -> None:
    server = subparsers.add_parser("server", help="start, stop or show the local Prefect server")
    server.add_argument("action", nargs="?", default="start", choices=("start", "stop", "status"),
                        help="start (default), stop or status")  # fmt: skip
    server.add_argument("--port", type=int, default=None, help="API and UI port (default 4200)")
    server.add_argument("--foreground", action="store_true", help="run in this terminal")
    server.add_argument(
        "--all-services",
        action="store_true",
        help="keep automations and the event feed on (more CPU per task)",
    )
    server.set_defaults(handler=server_command)


def server_command(args: argparse.Namespace) -> int:
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
