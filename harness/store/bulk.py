"""Rows into a table in one statement, in whichever form DuckDB takes fastest for them.

Measured with DuckDB 2.0.1 (a 17-column `messages` row): `INSERT ... VALUES` costs ~0.6 ms
plus ~8 us a value, so it is the cheaper form up to ~100 values; past that one list parameter
per column, unnested, costs ~1.2 ms plus ~0.01 ms a row (64 rows: 1.8 ms against 8.0 ms). A
list of blobs binds slowly, ~9 ns a byte (21 chunks of 100 kB: 19 ms unnested, 4.8 ms as
VALUES), a list of strings at about half that, so blobs that are UTF-8 text (an offload's
file chunks) go in as strings, turned back into the same bytes by `encode`: 504 chunks of
4k, 25 ms as VALUES, 22 ms as a blob list, 14 ms as a string list. Past ~8 kB a row VALUES
is cheaper again. An Arrow scan is cheaper still per row but loads pyarrow (+25 MB) into
every process that writes.

A statement's list parameters are held by DuckDB in ~4 transient copies (the bound values, the
cast list, the unnested vectors, the encoded blobs): a write-behind flush of 528 chunks of 4 kB
(2.1 MB) peaked at +9.9 MB of RSS in one statement, +3.4 MB in statements of 64 rows, in about
the same time (13-16 ms). So `insert_parts` writes rows in statements of at most LIST_BYTES.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

# Up to this many values, one `VALUES` list; past it, one list parameter per column.
VALUES_LIMIT = 96
# Past this many bytes of blobs a row on average, VALUES binds a table with blobs faster than
# lists (VALUES: ~8 us a value and ~2 ns a byte; a string list: ~9 us a row and ~5 ns a byte).
LIST_BLOB_BYTES = 8_192
# `insert_parts`: at most this many bytes of text and blobs a statement (a row over it alone).
# Past ~512 kB a statement the transient copies jumped (1 MB: +7.5 MB for 2.1 MB of chunks).
LIST_BYTES = 256 << 10


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
    columns = [list(c) for c in zip(*rows, strict=True)] if len(rows) * width > VALUES_LIMIT else []
    if columns and "BLOB" in types:
        columns = _blobs_as_text(columns, types, len(rows))
    if not columns:
        marks = "(" + ",".join("?" * width) + ")"
        con.execute(
            f"INSERT INTO {table} VALUES " + ",".join([marks] * len(rows)),
            [value for row in rows for value in row],
        )
        return
    selected = ", ".join(
        "encode(unnest(?::VARCHAR[]))" if t == "BLOB" else f"unnest(?::{t}[])" for t in types
    )
    con.execute(f"INSERT INTO {table} SELECT {selected}", columns)


def insert_parts(
    con: duckdb.DuckDBPyConnection, table: str, rows: Sequence[tuple[Any, ...]], types: list[str]
) -> None:
    """`insert_rows` in consecutive parts of at most LIST_BYTES of text and bytes each, in
    order. The caller holds a transaction: parts are separate statements."""
    part: list[tuple[Any, ...]] = []
    size = 0
    for row in rows:
        row_size = sum(len(v) for v in row if isinstance(v, str | bytes))
        if part and size + row_size > LIST_BYTES:
            insert_rows(con, table, part, types)
            part, size = [], 0
        part.append(row)
        size += row_size
    insert_rows(con, table, part, types)


def _blobs_as_text(columns: list[list[Any]], types: list[str], rows: int) -> list[list[Any]]:
    """`columns` with each BLOB column as the strings whose UTF-8 bytes its values are; none
    (VALUES is the faster form) when a value is not UTF-8 or the blobs are large."""
    blobs = [columns[i] for i, t in enumerate(types) if t == "BLOB"]
    if not all(isinstance(v, bytes) or v is None for column in blobs for v in column):
        return []
    if sum(len(v) for column in blobs for v in column if v is not None) > LIST_BLOB_BYTES * rows:
        return []
    try:
        texts = [[None if v is None else v.decode() for v in column] for column in blobs]
    except UnicodeDecodeError:
        return []
    as_text = iter(texts)
    return [next(as_text) if t == "BLOB" else c for c, t in zip(columns, types, strict=True)]
