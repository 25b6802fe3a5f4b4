"""`ctxlab`: the command line.

    ctxlab demo                     the whole product offline in under two minutes
    ctxlab run AGENT                one agent session as a Prefect flow (--resume RUN_ID)
    ctxlab server [start|stop|status]   the long-lived local Prefect server and its UI
    ctxlab serve                    the weekly-competitive-analysis deployment on its schedule
    ctxlab sweep --scenario S --grid k=v1,v2   an eval sweep, one Prefect task per cell
    ctxlab scenarios | eval | report | check | export   the eval commands
    ctxlab audit SUITE              what a suite's own harness compaction dropped and cost

One module per command (eval's suite and --tuned paths in eval_suite.py and eval_tuned.py;
running.py and options.py hold what the eval commands share, common.py what the agent
commands share). Each command imports what it needs when it runs, so `ctxlab --help` answers
at once.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from flows.cli import demo, run, serve, server, sql, sweep
from flows.cli.common import DEBUG_HELP
from flows.errors import UsageError
from flows.settings import apply_defaults


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
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    sub = parser.add_subparsers(title="commands", metavar="COMMAND", dest="command")
    for module in (demo, run, server, serve, sweep, sql):
        module.add_parser(sub)

    add_eval_commands(sub)
    for command in sub.choices.values():
        command.set_defaults(parser=command)
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help=DEBUG_HELP)  # fmt: skip
    return parser


def add_eval_commands(subparsers: Any) -> None:
    """Add the eval commands (`scenarios`, `eval`, `report`, `check`, `export`, `audit`) to
    `subparsers`."""
    # Loaded here, not at the top: importing `flows.cli` for `main` stays light.
    from flows.cli import audit, check, eval, export, report, scenarios

    for module in (scenarios, eval, report, check, export, audit):
        module.add_parser(subparsers)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ctxlab")
    except PackageNotFoundError:
        return "unknown"


def _show_progress_logs() -> None:
    """Our own progress lines (run started, how to resume) go to stderr."""
    log = logging.getLogger("ctxlab")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
