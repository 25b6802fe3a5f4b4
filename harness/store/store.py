"""`Store`: one DuckDB file (or `":memory:"`) holding everything ctxlab records.

The store holds the database (`Database`: opening, holding or reopening the file), its
write-behind (`WriteBehind`) and hands out one repository per table or concern: `runs`,
`messages` (and windows), `usage` (model calls), `events`, `summaries`, `files`, `memory`.
Changes to several tables that must land together go through a unit of work
(`with store.unit() as uow:`). The loop needs only `RunStore`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, Self, TypeVar, Unpack

from harness.errors import StoreError
from harness.messages import Message, Usage
from harness.store.atomic import ATOMIC, AtomicScope, scope_of
from harness.store.bulk import insert_rows
from harness.store.database import Database
from harness.store.events import Events
from harness.store.files import Files
from harness.store.lazy_files import LazyFiles, LazyMemory, UnitSql
from harness.store.lazy_reads import (
    LazyEvents,
    LazyMessages,
    LazyModelCalls,
    LazyRuns,
    LazySummaries,
)
from harness.store.lazy_rows import LazyRows, live
from harness.store.memory import Memory
from harness.store.messages import Messages
from harness.store.own_writes import OwnWrites
from harness.store.pending import PendingRows, Rows
from harness.store.rows import RunStart, StepBatch
from harness.store.runs import Runs
from harness.store.schema import WRITE_LOG_VERSION, migrate
from harness.store.sql import OnConnection, Sql, Through
from harness.store.store_sql import StoreSql
from harness.store.summaries import Summaries
from harness.store.unit import UnitOfWork
from harness.store.usage import ModelCalls
from harness.store.write_behind import WRITE_BEHIND, WriteBehind

if TYPE_CHECKING:
    import duckdb

R = TypeVar("R")


class Store(StoreSql):
    """A DuckDB file (or `":memory:"`) holding everything ctxlab records."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        hold: bool = True,
        memory_limit: str | None = None,
        threads: int = 1,
        write_behind: int = WRITE_BEHIND,
        lazy: bool = False,
    ) -> None:
        """`hold=True` keeps one connection open and writes behind; `hold=False` opens the
        file for each transaction (see `harness.store.database`). `memory_limit` caps
        DuckDB's buffers in this process: FILE_MEMORY_LIMIT for a file store by default; an
        in-memory store is its buffers, so by default it is not capped (a cap below its data
        would fail it, not spill it). `threads` is DuckDB's worker count: the store's work is
        small writes, where more threads only add wake-ups. `write_behind`: how many batches
        of rows a held store keeps before writing them to their tables together (see
        `harness.store.pending`); 0 writes each as it comes, as a `hold=False` store always
        does. `lazy` (an in-memory store only): rows are kept in Python, and the database
        created and written the first time a read needs SQL (`harness.store.lazy_rows`)."""
        if isinstance(write_behind, bool) or not isinstance(write_behind, int) or write_behind < 0:
            raise StoreError(f"write_behind must be a whole number >= 0, not {write_behind!r}")
        self.db = self._database(path, hold=hold, memory_limit=memory_limit, threads=threads)
        if lazy and self.db.path != ":memory:":
            raise StoreError(f"lazy=True is for an in-memory store (':memory:'), not {path}")
        self.behind = WriteBehind(self.db, write_behind)
        self.own = OwnWrites(private=self.db.path == ":memory:", complete=lazy)
        self.lazy = LazyRows(self.db.lock) if lazy else None
        if lazy:
            return  # the schema is created with the database, when first needed
        with self._transaction() as con:
            version = migrate(con, self.db.path)
        # A file store logs what it writes behind (an in-memory one has no crash to outlive).
        self.behind.logged = self.db.path != ":memory:" and version >= WRITE_LOG_VERSION
        if self.behind.logged:
            self.behind.recover()

    def _database(self, path: str | os.PathLike[str] | None, **settings: Any) -> Database:
        """The database this store works on (a seam for tests that wrap its connections);
        `settings`: `hold`, `memory_limit` and `threads`."""
        return Database(path, **settings)

    def __repr__(self) -> str:
        return f"Store({self.path!r}, hold={self.hold})"

    @property
    def path(self) -> str:
        return self.db.path

    @property
    def hold(self) -> bool:
        return self.db.hold

    @property
    def memory_limit(self) -> str | None:
        return self.db.memory_limit

    @property
    def write_behind(self) -> int:
        return self.behind.batches

    # -- repositories (a live lazy store's answer from its rows: SQL materializes it) -----

    @property
    def runs(self) -> Runs:
        # Its statements never write files, memory or (but `discard`) messages.
        return self._repo(Runs, LazyRuns, Through(self._connection, self.transaction))

    @property
    def messages(self) -> Messages:
        return self._repo(Messages, LazyMessages, self)

    @property
    def usage(self) -> ModelCalls:
        return self._repo(ModelCalls, LazyModelCalls, self)

    @property
    def events(self) -> Events:
        return self._repo(Events, LazyEvents, self)

    @property
    def summaries(self) -> Summaries:
        return self._repo(Summaries, LazySummaries, self)

    @property
    def files(self) -> Files:
        plain = partial(Files, known=self.own.file_paths)  # asked first by `clashes`
        return self._repo(plain, LazyFiles, self, self._reading_behind)

    @property
    def memory(self) -> Memory:
        return self._repo(Memory, LazyMemory, self)

    def _repo(self, plain: Callable[..., R], lazy: Callable[..., R], *args: Any) -> R:
        return lazy(self.lazy, *args) if live(self.lazy) else plain(*args)

    def _materialize(self) -> None:  # the caller holds the lock
        if live(self.lazy):  # its database created and its rows written, once
            con = self.db.held()
            migrate(con, self.db.path)
            self.lazy.write_to(con, self.db.types_of)
            self.own.complete = False  # from now on statements may write what it cannot see

    def holds_memory(self) -> bool:
        """Whether any memory file or version is stored (remembered: `own_writes`)."""
        with self.db.lock:
            return self.own.holds_memory(self.memory)

    def file_digests(self, namespace: str, prefix: str) -> list[dict[str, Any]]:
        """`Files.digests` (none read when no file is known under `prefix`: `own_writes`)."""
        with self.db.lock:
            return self.own.files_under(prefix, lambda: self.files.digests(namespace, prefix))

    # -- what a run needs (`RunStore`) ------------------------------------------------------

    def load_window(self, thread_id: str) -> list[Message]:
        """The thread's window (from the rows written, when known: `own_writes`)."""
        with self.db.lock:
            return self.own.load_window(thread_id, self.messages)

    def next_seq(self, thread_id: str) -> int:
        with self.db.lock:
            return self.own.next_seq(thread_id, self.messages)

    def start_run(self, **run: Unpack[RunStart]) -> None:
        """Record a run as `running` (`Runs.start`)."""
        self.runs.start(**run)

    def finish_run(
        self, run_id: str, *, status: str, steps: int, usage: Usage, error: str | None = None
    ) -> None:
        """Record how a run ended. Rows written behind go to their tables first; if some
        cannot, the run is still marked, and then the `StoreError` naming them is raised.
        When the pending rows cannot be written for an I/O error (a full disk), the mark is
        written with them, at the next flush that succeeds."""
        try:
            self.flush()
        except StoreError as exc:
            unwritten: StoreError | None = exc
        else:
            unwritten = self.behind.take_dropped()
        if self.behind.pending:

            def mark(con: duckdb.DuckDBPyConnection) -> None:
                Runs(OnConnection(con)).mark_ended(
                    run_id, status=status, steps=steps, usage=usage, error=error
                )

            self.behind.defer(mark)
        else:
            self.runs.mark_ended(run_id, status=status, steps=steps, usage=usage, error=error)
        if unwritten is not None:
            raise unwritten

    def write(self, batch: StepBatch) -> None:
        """Hand over a step's rows, all tables, to be stored together (`write_rows`)."""
        self.write_rows(batch.rows)

    def flush(self) -> None:
        """Write the pending rows to their tables now (`WriteBehind.flush`)."""
        self.behind.flush()

    def keep_open(self) -> None:
        """Until `let_go`, a `hold=False` store keeps the connection it opens, the file locked."""
        self.db.keep_open()

    def let_go(self) -> None:
        """End `keep_open`: the kept connection closes now, or after the atomic blocks using it."""
        self.db.let_go()

    # -- writing -------------------------------------------------------------------------

    def write_rows(self, rows: Rows) -> None:
        """Hand over a batch of rows (table -> rows, every column in order). A held store
        keeps it pending (`WriteBehind.take`), a live lazy one in its rows; otherwise, and in
        an atomic block or `write_through`, it is written now, in one transaction. If this
        raises, the batch was not taken."""
        dropped = self.behind.take_dropped()
        if dropped is not None:
            self.own.forget()
            raise dropped  # the run that handed those rows over fails, at its next step
        rows = {table: table_rows for table, table_rows in rows.items() if table_rows}
        if not rows:
            return
        in_atomic = scope_of(self.db) is not None
        with self.db.lock:
            if live(self.lazy) and self.lazy.takes(rows):
                self.lazy.add(rows)  # before `wrote`: a batch it refuses is not taken
                return self.own.wrote(rows)
            self._materialize()
            # Rows of an atomic block may roll back: forgotten rather than remembered.
            if not in_atomic and self.behind.take(rows):
                return self.own.wrote(rows)  # once taken: if `take` raises, it was not
            self.own.forget() if in_atomic else self.own.wrote(rows)
        # One statement commits on its own; more go in one transaction.
        alone = len(rows) == 1 and not in_atomic
        try:
            with self._connection() if alone else self._transaction() as con:
                for table, table_rows in rows.items():
                    insert_rows(con, table, table_rows, self.db.types_of(con, table))
        except BaseException:
            self.own.forget()
            raise

    @contextmanager
    def write_through(self) -> Iterator[None]:
        """Inside the block, every batch is written as it is handed over (the pending ones
        first): for callers whose own records must commit right after each step's rows, such
        as a resumable session's journal."""
        with self.behind.through():
            yield

    @contextmanager
    def reading_behind(self) -> Iterator[tuple[duckdb.DuckDBPyConnection, PendingRows]]:
        """A connection on which the pending rows are not yet written, and those rows: for a
        read that takes them into account itself instead of writing them first."""
        with self.db.lock:
            self._materialize()
            if not self.behind.pending:
                with self._connection() as con:
                    yield con, self.behind.pending
                return
            yield self.db.held(), self.behind.pending

    @contextmanager
    def _reading_behind(self) -> Iterator[tuple[Sql, PendingRows]]:
        with self.reading_behind() as (con, pending):
            yield OnConnection(con), pending

    def close(self) -> None:
        """Write the pending rows, then close. A store can be used again after: it reopens."""
        with self.db.lock:
            try:
                self.flush()
            finally:
                self.db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- connections and transactions ----------------------------------------------------

    @contextmanager
    def connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for reads or writes, used under the store's lock, the pending rows
        written first: in hold mode the held connection, otherwise one opened for this use
        and closed after it. Inside an `atomic` block that has written, its own connection
        (it sees its own writes)."""
        self.own.forget()  # before and after: a read meanwhile may predate the write
        try:
            with self._connection() as con:
                yield con
        finally:
            self.own.forget()

    @contextmanager
    def _connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        scope = scope_of(self.db)
        if scope is not None and scope.con is not None:
            yield scope.con
            return
        with self.db.lock:
            self._materialize()
            self.behind.flush(keep=True)
            with self.db.use() as con:
                yield con

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        self.own.forget()
        try:
            with self._transaction() as con:
                yield con
        finally:
            self.own.forget()

    @contextmanager
    def _transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        scope = scope_of(self.db)
        if scope is not None:
            # Part of the enclosing atomic block: it commits or rolls back everything at once.
            try:
                if scope.con is None:
                    with self.db.lock:
                        # The block's transaction sees, and follows, every step before it.
                        self.behind.flush(keep=True)
                        con = scope.begin()
                else:
                    con = scope.con
                yield con
            except BaseException as exc:
                scope.failed = scope.failed or exc
                raise
            return
        with self._connection() as con:
            con.execute("BEGIN")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """Everything written to this store inside the block, by this task and the threads
        it starts, commits together when the block ends, or not at all if it raises (see
        `harness.store.atomic`). Nested blocks join the outer one."""
        if ATOMIC.get() is not None:
            yield
            return
        with self.db.lock:
            self._materialize()  # the block's connection needs the database
        scope = AtomicScope(self.db)
        token = ATOMIC.set(scope)
        try:
            yield
            scope.commit()
        finally:
            ATOMIC.reset(token)
            scope.close()
            self.own.forget()  # its writes are seen from now on

    @contextmanager
    def unit(self) -> Iterator[UnitOfWork]:
        """A unit of work: the repositories over one transaction, committed when the block
        ends, rolled back if it raises. It writes files and memory, never a thread's rows."""
        with self.db.lock:
            if live(self.lazy):
                with self.own.writing_files(), self.lazy.unit():
                    sql = UnitSql()
                    yield UnitOfWork(sql, LazyFiles(self.lazy, sql), LazyMemory(self.lazy, sql))
                return
        with self.own.writing_files(), self._transaction() as con:
            yield UnitOfWork(OnConnection(con))

    @contextmanager
    def together(self) -> Iterator[Sql]:
        with self.transaction() as con:
            yield OnConnection(con)
