"""The connection lifecycle of a store: opening the DuckDB file (retrying a lock held by another
process), its settings, held or per-use connections, transactions and atomic blocks, and the
generic `execute`/`query`/`scalar`/`frame` the named queries are built on.

`hold=True` (default) keeps one connection open: DuckDB opens cost ~20 ms, far too much per
step. `hold=False` opens the file for each transaction and closes it, retrying with backoff on
a lock conflict, so other processes (a second run, the duckdb CLI, polars) can use the file
between steps. Between `keep_open()` and `let_go()` such a store keeps the connection it opens:
a flow run keeps it from a model call's journal record to the step's commit (the loop lets it
go after each commit, and while tools are slow), so a step pays for one open, not one a record.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from harness.errors import StoreError
from harness.store.schema import default_path, migrate

if TYPE_CHECKING:
    import duckdb
    import polars as pl

# For a file store DuckDB's default is 80% of the machine's memory, kept as cache once touched;
# the agent's writes are small and its reads by key, so this serves them. Much less is unsafe:
# DuckDB 2.0 fails fatally when a checkpoint cannot pin its blocks (seen at 32-64 MB).
FILE_MEMORY_LIMIT = "256MB"


class _Atomic:
    """The open transaction of one `Store.atomic` block."""

    def __init__(self, store: Connection) -> None:
        self.store = store
        self.con: duckdb.DuckDBPyConnection | None = None
        self.failed: BaseException | None = None
        self.kept = False  # `con` is a cursor of the store's kept connection

    def begin(self) -> duckdb.DuckDBPyConnection:
        if self.con is None:
            con, self.kept = self.store._step_connection()
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
            self.store._cursor_closed()

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


_ATOMIC: ContextVar[_Atomic | None] = ContextVar("ctxlab_store_atomic", default=None)


class Connection:
    """A DuckDB file (or `":memory:"`): how it is opened, held, and written in transactions."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        hold: bool = True,
        memory_limit: str | None = None,
        threads: int = 1,
    ) -> None:
        """`memory_limit` caps DuckDB's buffers in this process: FILE_MEMORY_LIMIT for a file
        store by default; an in-memory store is its buffers, so by default it is not capped
        (a cap below its data would fail it, not spill it). `threads` is DuckDB's worker
        count: the store's work is small writes, where more threads only add wake-ups."""
        self.path = str(path) if path is not None else default_path()
        self.hold = hold or self.path == ":memory:"
        self.memory_limit = memory_limit or (None if self.path == ":memory:" else FILE_MEMORY_LIMIT)
        self.threads = threads
        self._con: duckdb.DuckDBPyConnection | None = None
        self._lock = threading.RLock()
        # hold=False: keep `_con` open (between `keep_open` and `let_go`), and how many atomic
        # blocks have a cursor of it (it closes after the last of them).
        self._keep = False
        self._cursors = 0
        self._spill_dir: str | None = None
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        with self.transaction() as con:
            migrate(con, self.path)

    def __repr__(self) -> str:
        return f"Store({self.path!r}, hold={self.hold})"

    # -- connections -------------------------------------------------------------------

    def _open(self) -> duckdb.DuckDBPyConnection:
        import duckdb  # loads with the first store, not with `import harness`

        try:
            con = duckdb.connect(self.path)
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower():
                raise StoreError(f"cannot open store {self.path}: {exc}") from exc
            con = self._open_when_free()
        self._configure(con)
        return con

    def _open_when_free(self) -> duckdb.DuckDBPyConnection:
        """Another process holds the file: wait for it to finish its step, holding the
        writer's turn so that `ctxlab sql` readers give way meanwhile."""
        import duckdb

        from harness.store.access import writer_turn

        delay = 0.01
        deadline = time.monotonic() + 30
        with writer_turn(self.path):
            while True:
                try:
                    return duckdb.connect(self.path)
                except duckdb.IOException as exc:
                    if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                        raise StoreError(f"cannot open store {self.path}: {exc}") from exc
                    time.sleep(delay * (1 + random.random()))
                    delay = min(delay * 2, 0.5)

    def _configure(self, con: duckdb.DuckDBPyConnection) -> None:
        # SET rather than connect(config=...): a second connection to the same file in this
        # process (the user's) would otherwise be refused for a differing configuration.
        import duckdb

        try:
            if self.memory_limit is not None:
                con.execute("SET memory_limit = ?", [self.memory_limit])
            con.execute("SET threads = ?", [self.threads])
        except duckdb.Error as exc:
            con.close()
            raise StoreError(
                f"bad store setting (memory_limit={self.memory_limit!r}, "
                f"threads={self.threads!r}): {exc}"
            ) from exc
        if self.path == ":memory:":
            # Blocks a large query spills would otherwise land in ./.tmp of whatever the
            # working folder is. DuckDB creates the folder only if it spills.
            if self._spill_dir is None:
                name = f"ctxlab-duckdb-{os.getpid()}-{uuid.uuid4().hex[:12]}"
                self._spill_dir = os.path.join(tempfile.gettempdir(), name)
            con.execute("SET temp_directory = ?", [self._spill_dir])
            # A checkpoint of an in-memory database writes nothing anywhere but rewrites its
            # row groups, briefly doubling them (+25-30 MB spikes at ~400 steps of 100 kB
            # files); without a disk to make durable there is nothing to gain from it.
            con.execute("SET checkpoint_threshold = '1TB'")

    @contextmanager
    def connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for reads or writes, used under the store's lock: in hold mode the
        held connection, otherwise one opened for this use and closed after it. Inside an
        `atomic` block that has written, its own connection (it sees its own writes)."""
        scope = _ATOMIC.get()
        if scope is not None and scope.store is self and scope.con is not None:
            yield scope.con
            return
        with self._lock:
            if self.hold or self._keep:
                if self._con is None:
                    self._con = self._open()
                yield self._con
            else:
                con = self._open()
                try:
                    yield con
                finally:
                    con.close()

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        scope = _ATOMIC.get()
        if scope is not None and scope.store is self:
            # Part of the enclosing atomic block: it commits or rolls back everything at once.
            try:
                yield scope.begin()
            except BaseException as exc:
                scope.failed = scope.failed or exc
                raise
            return
        with self.connection() as con:
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
        it starts, commits together when the block ends, or not at all if it raises: a step
        and its journal record are never stored one without the other. A connection is
        opened at the first write, so a block that only reads (or waits on a model) holds
        none. Nested blocks join the outer one."""
        if _ATOMIC.get() is not None:
            yield
            return
        scope = _Atomic(self)
        token = _ATOMIC.set(scope)
        try:
            yield
            scope.commit()
        finally:
            _ATOMIC.reset(token)
            scope.close()

    def _step_connection(self) -> tuple[duckdb.DuckDBPyConnection, bool]:
        """A connection of its own for an atomic block, and whether it is a cursor of a kept
        connection: with the store held or kept, a second connection to the same database
        (its own transaction); otherwise a new one."""
        with self._lock:
            if not self.hold and not self._keep:
                return self._open(), False
            if self._con is None:
                self._con = self._open()
            cursor = self._con.cursor()
            if self.hold:
                return cursor, False
            self._cursors += 1
            return cursor, True

    def _cursor_closed(self) -> None:
        with self._lock:
            self._cursors -= 1
            self._close_unkept()

    def keep_open(self) -> None:
        """From now on until `let_go`, a `hold=False` store keeps the connection it opens
        (the file stays locked to other processes meanwhile); a held store holds anyway."""
        if not self.hold:
            with self._lock:
                self._keep = True

    def let_go(self) -> None:
        """End `keep_open`: the kept connection closes now, or when the last atomic block
        using it ends."""
        if not self.hold:
            with self._lock:
                self._keep = False
                self._close_unkept()

    def _close_unkept(self) -> None:
        if not self.hold and not self._keep and not self._cursors and self._con is not None:
            self._con.close()
            self._con = None

    def close(self) -> None:
        with self._lock:
            if self._con is not None:
                self._con.close()
                self._con = None
            if self._spill_dir is not None:
                shutil.rmtree(self._spill_dir, ignore_errors=True)
                self._spill_dir = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        return int(self.scalar("SELECT max(version) FROM schema_version"))

    # -- generic access ----------------------------------------------------------------

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        """Run SQL, each statement committed on its own (DuckDB autocommits; an explicit
        BEGIN/COMMIT around one statement only added two round trips). Statements that must
        land together go through `transaction()`."""
        with self.connection() as con:
            con.execute(sql, params or [])

    def query(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        with self.connection() as con:
            cur = con.execute(sql, params or [])
            cols = [d[0] for d in cur.description]
            return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def scalar(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        with self.connection() as con:
            row = con.execute(sql, params or []).fetchone()
        return row[0] if row else None

    def frame(self, sql: str, params: Sequence[Any] | None = None) -> pl.DataFrame:
        """A polars DataFrame of a query, for analysis (polars loads on first use)."""
        import polars  # noqa: F401  (DuckDB's `.pl()` needs it importable)

        with self.connection() as con:
            frame: pl.DataFrame = con.sql(sql, params=list(params or [])).pl()
            return frame


def read_only(path: str | os.PathLike[str], *, timeout: float = 30.0) -> duckdb.DuckDBPyConnection:
    """A read-only connection to an existing store, for queries while runs write: a writer
    holds the file's lock only for one step's transaction, so a conflict is retried with
    backoff for up to `timeout` seconds. Never creates the file."""
    import duckdb

    if not Path(path).is_file():
        raise StoreError(f"no store at {path}")
    delay = 0.01
    deadline = time.monotonic() + timeout
    while True:
        try:
            return duckdb.connect(str(path), read_only=True)
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                raise StoreError(f"cannot read store {path}: {exc}") from exc
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 0.5)
        except duckdb.Error as exc:
            raise StoreError(f"cannot read store {path}: {exc}") from exc
