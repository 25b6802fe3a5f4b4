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


def column_types(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """The SQL types of every table's columns, in order, by table (one query: each costs
    ~1 ms)."""
    rows = con.execute(
        "SELECT table_name, data_type FROM duckdb_columns() "
        "WHERE database_name = current_database() AND schema_name = 'main' "
        "ORDER BY table_name, column_index"
    ).fetchall()
    types: dict[str, list[str]] = {}
    for table, data_type in rows:
        types.setdefault(str(table), []).append(str(data_type))
    return types


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
