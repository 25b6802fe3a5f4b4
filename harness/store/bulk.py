"""Rows into a table in one statement, in whichever form DuckDB takes fastest for them.

Measured with DuckDB 2.0.1 (a 17-column `messages` row): `INSERT ... VALUES` costs ~0.6 ms
plus ~8 us a value, so it is the cheaper form up to ~100 values; past that one list parameter
per column, unnested, costs ~1.2 ms plus ~0.01 ms a row (64 rows: 1.8 ms against 8.0 ms), as
long as no column is a BLOB: a list of 100 kB blobs costs ~1 ms a row to bind (21 file chunks:
25 ms unnested, 5.7 ms as VALUES). An Arrow scan is cheaper still per row but loads pyarrow
(+25 MB) into every process that writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

# Up to this many values, one `VALUES` list; past it, one list parameter per column.
VALUES_LIMIT = 96


def column_types(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    """The SQL types of `table`'s columns, in order."""
    rows = con.execute(
        "SELECT data_type FROM duckdb_columns() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND table_name = ? ORDER BY column_index",
        [table],
    ).fetchall()
    return [str(r[0]) for r in rows]


def insert_rows(
    con: duckdb.DuckDBPyConnection, table: str, rows: Sequence[tuple[Any, ...]], types: list[str]
) -> None:
    """Insert `rows` (every column of `table`, in order; `types` are the columns' types) in
    one statement."""
    if not rows:
        return
    width = len(types)
    if len(rows) * width <= VALUES_LIMIT or "BLOB" in types:
        marks = "(" + ",".join("?" * width) + ")"
        con.execute(
            f"INSERT INTO {table} VALUES " + ",".join([marks] * len(rows)),
            [value for row in rows for value in row],
        )
        return
    columns = ", ".join(f"unnest(?::{t}[])" for t in types)
    con.execute(f"INSERT INTO {table} SELECT {columns}", [list(c) for c in zip(*rows, strict=True)])
