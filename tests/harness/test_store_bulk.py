"""`insert_rows`: many small blobs (an offload's 4k file chunks) go in as one text list per
column, not one parameter per value, and every bytes value comes back byte for byte;
`insert_parts` writes many of them in statements of at most LIST_BYTES (issue 35: DuckDB holds
a statement's parameters several times over while it runs)."""

from __future__ import annotations

from typing import Any

import duckdb

from harness.store.bulk import LIST_BYTES, column_types, insert_parts, insert_rows

CHUNKS = """CREATE TABLE file_chunks (
    blob_id VARCHAR NOT NULL, chunk INTEGER NOT NULL, newlines_before BIGINT NOT NULL,
    newlines INTEGER NOT NULL, content BLOB NOT NULL, PRIMARY KEY (blob_id, chunk))"""


class Spy:
    """A connection that records the parameters of each statement."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.params: list[list[Any]] = []

    def execute(self, sql: str, params: list[Any]) -> Any:
        self.params.append(params)
        return self.con.execute(sql, params)


def _insert(
    rows: list[tuple[Any, ...]], insert: Any = insert_rows
) -> tuple[list[list[Any]], list[tuple[Any, ...]]]:
    con = duckdb.connect(":memory:")
    con.execute(CHUNKS)
    spy = Spy(con)
    insert(spy, "file_chunks", rows, column_types(con)["file_chunks"])
    back = con.execute("SELECT * FROM file_chunks ORDER BY blob_id, chunk").fetchall()
    return spy.params, back


def test_many_small_text_blobs_bind_one_list_per_column() -> None:
    line = "2025-01-{:02d},EMEA,é\x00\n"
    rows = [("b", i, i, 1, (line.format(i % 28) * 150).encode()) for i in range(500)]
    params, back = _insert(rows)
    assert [len(p) for p in params] == [5]  # not 2,500 values bound one by one
    assert back == rows


def test_blobs_that_are_not_utf8_and_big_blobs_come_back_exact() -> None:
    binary = [("b", i, 0, 0, bytes([0xFF, 0xFE, i % 256]) * 50) for i in range(40)]
    assert _insert(binary)[1] == binary
    big = [("c", i, 0, 0, b"x" * 100_000) for i in range(21)]
    assert _insert(big)[1] == big


def _bytes_bound(params: list[Any]) -> int:
    values = [v for p in params for v in (p if isinstance(p, list) else [p])]
    return sum(len(v) for v in values if isinstance(v, str | bytes))


def test_many_chunks_go_in_parts_of_at_most_list_bytes_in_order() -> None:
    line = "2025-01-01,EMEA,widgets,12,3456\n"
    rows = [("b", i, 0, 128, (line * 128).encode()) for i in range(528)]  # 2.1 MB
    params, back = _insert(rows, insert_parts)
    per_part = LIST_BYTES // (1 + len(line) * 128)  # each row: its blob id and its chunk
    assert len(params) == -(-528 // per_part)
    assert all(_bytes_bound(p) <= LIST_BYTES for p in params)
    assert back == rows


def test_a_row_over_list_bytes_goes_alone_and_small_inserts_stay_one_statement() -> None:
    big = ("a", 0, 0, 0, b"y" * (LIST_BYTES + 1))
    small = [("b", i, 0, 0, b"z" * 100) for i in range(30)]
    params, back = _insert([big, *small], insert_parts)
    assert len(params) == 2 and back == [big, *small]
    assert len(_insert(small, insert_parts)[0]) == 1
