"""`ctxlab export RUN_ID --format F`: a stored run in another harness's trace format."""

from __future__ import annotations

import argparse
import sys
from typing import Any

EXPORT_FORMATS = (
    "openai-chat",
    "anthropic",
    "otel-genai",
    "langchain",
)  # evals.sources.export's, unimported


def add_parser(subparsers: Any) -> None:
    ex = subparsers.add_parser(
        "export",
        help="write a stored run as OpenAI Chat, Anthropic, OpenTelemetry or LangChain JSON",
    )
    ex.add_argument("run_id", metavar="RUN_ID", help="a run, `ctxlab run` session or thread id")
    ex.add_argument("--format", required=True, choices=EXPORT_FORMATS, help="the trace format")
    ex.add_argument("--out", metavar="FILE", help="write here (default: standard output)")
    ex.add_argument("--force", action="store_true", help="overwrite the --out file if it exists")
    ex.add_argument(
        "--no-redact",
        action="store_true",
        help="keep secrets, e-mail addresses and home paths (redacted by default, as on import)",
    )
    ex.add_argument(
        "--db", help="the store holding the run (default $CTXLAB_DB or ./ctxlab.duckdb)"
    )
    ex.set_defaults(handler=export_command)


def export_command(args: argparse.Namespace) -> int:
    from pathlib import Path

    from evals.errors import RunNotFoundError
    from evals.sources.export import export_trace, run_trace, write_text
    from harness.store import default_path

    db = args.db or default_path()
    if args.out and Path(args.out).exists() and not args.force:
        args.parser.error(f"{args.out} exists: pass --force to overwrite it")
    try:
        trace = run_trace(db, args.run_id)
    except RunNotFoundError as exc:
        args.parser.error(f"{exc} ({db})")
    text = export_trace(trace, args.format, redact=not args.no_redact)
    if not args.out:
        sys.stdout.write(text)
        return 0
    try:
        write_text(text, Path(args.out), force=args.force)
    except FileExistsError as exc:
        args.parser.error(str(exc))
    print(f"wrote {args.out}: {len(trace.messages)} messages of run {trace.id} as {args.format}")
    return 0
