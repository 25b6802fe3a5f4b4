"""`ctxlab sql`: query the store read-only and print a table."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from flows.cli.options import plural

SQL_EXAMPLE = "SELECT middleware, action, count(*) FROM events GROUP BY ALL"


def add_parser(subparsers: Any) -> None:
    sql = subparsers.add_parser(
        "sql", help="query the store read-only and print a table (safe while runs write)"
    )
    sql.add_argument("query", help=f'SQL, e.g. "{SQL_EXAMPLE}"')
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
    sql.set_defaults(handler=sql_command)


def sql_command(args: argparse.Namespace) -> int:
    from evals.report.terminal import Column, print_fitted
    from harness.errors import QueryError
    from harness.store import FILE_MEMORY_LIMIT, default_path
    from harness.store.access import sandboxed_query
    from harness.terminal import printable

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
    # Stored text is data: a tool's output must not clear the screen or forge a line. Every
    # column the query asked for stays; a long value wraps in its cell.
    cells = [
        ["NULL" if v is None else printable(str(v), keep_newlines=True) for v in row]
        for row in rows
    ]
    print_fitted([Column(printable(c), "left") for c in columns], cells,
                 caption=plural(len(rows), "row"))  # fmt: skip
    return 0
