"""What a repository runs its SQL on: the store itself (pending rows written first), the one
transaction of a unit of work, or a reader's read-only connection."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import duckdb


class Sql(Protocol):
    """Statements on the harness tables, each committed on its own unless run in a `unit`."""

    def query(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]: ...

    def scalar(self, sql: str, params: Sequence[Any] | None = None) -> Any: ...

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None: ...

    def together(self) -> AbstractContextManager[Sql]:
        """Statements that commit together (or not at all)."""
        ...


class OnConnection:
    """`Sql` over one DuckDB connection: a unit of work's open transaction, or a reader's."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con

    def query(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        cur = self.con.execute(sql, list(params or []))
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def scalar(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        row = self.con.execute(sql, list(params or [])).fetchone()
        return row[0] if row else None

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        self.con.execute(sql, list(params or []))

    @contextmanager
    def together(self) -> Iterator[Sql]:
        yield self  # a unit's statements already share its transaction


Connections = Callable[[], AbstractContextManager["duckdb.DuckDBPyConnection"]]


class Through:
    """`Sql` over the connections and transactions a store hands out (`connection` for a
    statement, `transaction` for statements that land together)."""

    def __init__(self, connection: Connections, transaction: Connections) -> None:
        self._connection = connection
        self._transaction = transaction

    def query(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        with self._connection() as con:
            return OnConnection(con).query(sql, params)

    def scalar(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        with self._connection() as con:
            return OnConnection(con).scalar(sql, params)

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        with self._connection() as con:
            con.execute(sql, list(params or []))

    @contextmanager
    def together(self) -> Iterator[Sql]:
        with self._transaction() as con:
            yield OnConnection(con)
