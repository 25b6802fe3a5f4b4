"""Atomic blocks: everything a task writes to a store inside one block commits together.

A flow run's step and its journal record are never stored one without the other. The block's
transaction runs on a connection of its own, opened at the block's first write, so a block
that only reads (or waits on a model) holds none.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from harness.errors import StoreError

if TYPE_CHECKING:
    import duckdb

    from harness.store.database import Database


class AtomicScope:
    """The open transaction of one atomic block on `db`."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.con: duckdb.DuckDBPyConnection | None = None
        self.failed: BaseException | None = None
        self.kept = False  # `con` is a cursor of the store's kept connection

    def begin(self) -> duckdb.DuckDBPyConnection:
        """The block's connection, its transaction begun at the first call. The caller holds
        the database's lock and has written the pending rows first."""
        if self.con is None:
            con, self.kept = self.db.own_connection()
            try:
                con.execute("BEGIN")
            except BaseException:
                self._done(con)
                raise
            self.con = con
        return self.con

    def _done(self, con: duckdb.DuckDBPyConnection) -> None:
        con.close()
        if self.kept:
            self.kept = False
            self.db.cursor_closed()

    def commit(self) -> None:
        if self.con is None:
            return
        if self.failed is not None:
            # DuckDB may have aborted the transaction; without savepoints nothing of the
            # block can be kept apart from the statement that failed.
            raise StoreError(
                f"a write failed inside an atomic step, so none of its writes were stored: "
                f"{type(self.failed).__name__}: {self.failed}"
            )
        self.con.execute("COMMIT")
        con, self.con = self.con, None
        self._done(con)

    def close(self) -> None:
        import duckdb

        if self.con is not None:
            con, self.con = self.con, None
            try:
                con.execute("ROLLBACK")
            except duckdb.Error:
                pass  # a failed COMMIT has already ended the transaction
            finally:
                self._done(con)


ATOMIC: ContextVar[AtomicScope | None] = ContextVar("ctxlab_store_atomic", default=None)


def scope_of(db: Database) -> AtomicScope | None:
    """The atomic block open on `db` in this context, if any."""
    scope = ATOMIC.get()
    return scope if scope is not None and scope.db is db else None


@contextmanager
def apart() -> Iterator[None]:
    """Writes inside go in transactions of their own, even within an atomic block: for rows
    that nothing reads until a row of the block names them (a large record's chunks, written
    a bounded amount a transaction), which would otherwise swell the block's one transaction
    past DuckDB's memory_limit. If the block then rolls back, they are left unnamed."""
    token = ATOMIC.set(None)
    try:
        yield
    finally:
        ATOMIC.reset(token)
