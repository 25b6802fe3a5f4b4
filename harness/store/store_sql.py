"""`StoreSql`: a store's generic SQL, for a caller's own tables and the user's SQL (the harness
tables are reached through the repositories). Every statement runs on a connection the store
hands out: its pending rows written first, a lazy store materialized first."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb
    import polars as pl


class StoreSql:
    """`execute`, `query`, `scalar`, `frame` and `schema_version` over `connection` (a
    statement that may write) and `_connection` (a read)."""

    def connection(self) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        raise NotImplementedError

    def _connection(self) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        raise NotImplementedError

    @property
    def schema_version(self) -> int:
        return int(self.scalar("SELECT max(version) FROM schema_version"))

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        """Run SQL, each statement committed on its own (DuckDB autocommits; an explicit
        BEGIN/COMMIT around one statement only added two round trips). Statements that must
        land together go through `transaction()`."""
        with self.connection() as con:
            con.execute(sql, params or [])

    def query(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        """Rows of a read (as `scalar`, `frame`: a write goes through `execute`)."""
        with self._connection() as con:
            cur = con.execute(sql, params or [])
            cols = [d[0] for d in cur.description]
            return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def scalar(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        with self._connection() as con:
            row = con.execute(sql, params or []).fetchone()
        return row[0] if row else None

    def frame(self, sql: str, params: Sequence[Any] | None = None) -> pl.DataFrame:
        """A polars DataFrame of a query, for analysis (polars loads on first use)."""
        import polars  # noqa: F401  (DuckDB's `.pl()` needs it importable)

        with self._connection() as con:
            frame: pl.DataFrame = con.sql(sql, params=list(params or [])).pl()
            return frame
