"""The connection lifecycle of a store: opening the DuckDB file (retrying a lock held by another
process), its settings, held or per-use connections, transactions and atomic blocks, and the
generic `execute`/`query`/`scalar`/`frame` the named queries are built on.

`hold=True` (default) keeps one connection open: DuckDB opens cost ~20 ms, far too much per
step. Such a store also writes behind (`pending`): a step's rows wait, logged, to be written
with the next ones in one transaction, and are written before anything reads or writes the
store otherwise. `hold=False` opens the file for each transaction and closes it, retrying with
backoff on a lock conflict, so other processes (a second run, the duckdb CLI, polars) can use
the file between steps; it writes each step when the step hands it over. Between `keep_open()`
and `let_go()` such a store keeps the connection it opens: a flow run keeps it from a model
call's journal record to the step's commit (the loop lets it go after each commit, and while
tools are slow), so a step pays for one open, not one a record.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import random
import shutil
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from harness.errors import StoreError
from harness.store.bulk import column_types, insert_rows
from harness.store.pending import PendingRows, Rows, decode_rows, encode_rows
from harness.store.schema import WRITE_LOG_VERSION, default_path, migrate, now
from harness.store.writes import end_recovered_runs

if TYPE_CHECKING:
    import duckdb
    import polars as pl

# For a file store DuckDB's default is 80% of the machine's memory, kept as cache once touched;
# the agent's writes are small and its reads by key, so this serves them. Much less is unsafe:
# DuckDB 2.0 fails fatally when a checkpoint cannot pin its blocks (seen at 32-64 MB).
FILE_MEMORY_LIMIT = "256MB"
# A held store writes its pending rows to their tables once this many batches (a step's rows,
# an offloaded file's) or this many bytes wait: 64 batches are ~40 steps of a tool loop, and
# their one transaction costs ~8 ms where writing each batch as it came cost ~80 ms.
WRITE_BEHIND = 64
WRITE_BEHIND_BYTES = 8 << 20
# A file store writes a batch carrying more bytes than this (an offloaded original) at once
# rather than logging it: logged, it would be written to disk twice (~1 ms per 100 kB each).
LOG_BYTES = 32 << 10

# Stores of this process that may hold pending rows: they are written at exit, and another
# store opening the same file leaves their logged rows alone.
_LIVE: weakref.WeakValueDictionary[str, Connection] = weakref.WeakValueDictionary()


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
        write_behind: int = WRITE_BEHIND,
    ) -> None:
        """`memory_limit` caps DuckDB's buffers in this process: FILE_MEMORY_LIMIT for a file
        store by default; an in-memory store is its buffers, so by default it is not capped
        (a cap below its data would fail it, not spill it). `threads` is DuckDB's worker
        count: the store's work is small writes, where more threads only add wake-ups.
        `write_behind`: how many batches of rows a held store keeps before writing them to
        their tables together (see `harness.store.pending`); 0 writes each as it comes, as a
        `hold=False` store always does."""
        self.path = str(path) if path is not None else default_path()
        self.hold = hold or self.path == ":memory:"
        self.memory_limit = memory_limit or (None if self.path == ":memory:" else FILE_MEMORY_LIMIT)
        self.threads = threads
        if isinstance(write_behind, bool) or not isinstance(write_behind, int) or write_behind < 0:
            raise StoreError(f"write_behind must be a whole number >= 0, not {write_behind!r}")
        self.write_behind = write_behind if self.hold else 0
        self._con: duckdb.DuckDBPyConnection | None = None
        self._lock = threading.RLock()
        # hold=False: keep `_con` open (between `keep_open` and `let_go`), and how many atomic
        # blocks have a cursor of it (it closes after the last of them).
        self._keep = False
        self._cursors = 0
        self._spill_dir: str | None = None
        self._pending = PendingRows()
        self._writer = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"  # names its `write_log` rows
        self._log_seq = 0
        self._types: dict[str, list[str]] = {}
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._through = 0  # `write_through` blocks open
        # Rows a flush dropped where a read set it off (a tool's, which may swallow the
        # error): raised again at the next hand-over, to fail the run that made them.
        self._dropped: StoreError | None = None
        with self.transaction() as con:
            version = migrate(con, self.path)
        # A file store logs what it writes behind (an in-memory one has no crash to outlive).
        self._logged = self.path != ":memory:" and version >= WRITE_LOG_VERSION
        if self._logged:
            self._recover()
        _LIVE[self._writer] = self

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
            self._flush(keep=True)
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
            # The block's transaction sees, and follows, every step before it.
            self._flush(keep=True)
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
        """Write the pending rows, then close. A store can be used again after: it reopens."""
        with self._lock:
            try:
                self.flush()
            finally:
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

    # -- writing behind (see `harness.store.pending`) -------------------------------------

    def write_rows(self, rows: Rows) -> None:
        """Hand over a batch of rows (table -> rows, every column in order). A held store
        keeps it with the pending rows (on a file, committing it to `write_log` first), and
        writes them all when `write_behind` batches or WRITE_BEHIND_BYTES wait as the next
        one comes; otherwise, and inside an atomic block or `write_through`, it is written
        now, in one transaction. If this raises, the batch was not taken."""
        dropped = self.take_dropped()
        if dropped is not None:
            raise dropped  # the run that handed those rows over fails, at its next step
        rows = {table: table_rows for table, table_rows in rows.items() if table_rows}
        if not rows:
            return
        scope = _ATOMIC.get()
        in_atomic = scope is not None and scope.store is self
        with self._lock:
            if self.write_behind and self.hold and not in_atomic and not self._through:
                if self._logged and _bytes_in(rows) > LOG_BYTES:
                    # Logged, its bytes would reach the disk twice (the log, then the table):
                    # written now instead, in a transaction of its own that only inserts.
                    self._commit_rows(self._held(), rows, [])
                    return
                if (
                    len(self._pending.batches) >= self.write_behind
                    or self._pending.size >= WRITE_BEHIND_BYTES
                ):
                    # Before this batch is taken: if writing the others fails, the caller
                    # still holds it and may hand it over again without doubling it.
                    self.flush()
                seq = self._log(rows) if self._logged else None
                self._pending.add(rows, seq)
                return
        # One statement commits on its own; more go in one transaction.
        alone = len(rows) == 1 and not in_atomic
        with self.connection() if alone else self.transaction() as con:
            for table, table_rows in rows.items():
                insert_rows(con, table, table_rows, self._types_of(con, table))

    def flush(self) -> None:
        """Write the pending rows to their tables now, in one transaction that also drops
        their `write_log` rows. If that fails, each batch is tried on its own: those that
        fail are dropped (on a file their log rows stay, marked with the error) and a
        `StoreError` names them."""
        self._flush(keep=False)

    def _flush(self, *, keep: bool) -> None:
        """`flush`; `keep`: the caller is a read or write that has nothing to do with the
        pending rows (a tool's), so their failure is also kept for the next hand-over."""
        with self._lock:
            if not self._pending:
                return
            pending = self._pending
            keys = [_log_key(self._writer, seq) for seq in pending.seqs]
            con = self._held()
            try:
                self._commit_rows(con, pending.rows, keys)
            except BaseException as exc:
                if not _is_store_error(exc):
                    raise  # an interrupt: the rows stay pending
                self._pending = PendingRows()
                # An in-memory store logs nothing: its batches have no log rows to mark.
                slots: list[str | None] = list(keys) if keys else [None] * len(pending.batches)
                batches = list(zip(pending.batches, slots, strict=True))
                try:
                    self._one_by_one(con, batches, exc)
                except StoreError as dropped:
                    if keep:
                        self._dropped = dropped
                    raise
                return
            self._pending = PendingRows()

    def take_dropped(self) -> StoreError | None:
        """The `StoreError` of rows a flush dropped where a read or another write set it
        off (a tool's, which may have swallowed it), once; None if there is none."""
        with self._lock:
            dropped, self._dropped = self._dropped, None
        return dropped

    @contextmanager
    def write_through(self) -> Iterator[None]:
        """Inside the block, every batch is written as it is handed over (the pending ones
        first): for callers whose own records must commit right after each step's rows, such
        as a resumable session's journal."""
        with self._lock:
            self.flush()
            self._through += 1
        try:
            yield
        finally:
            with self._lock:
                self._through -= 1

    @contextmanager
    def reading_behind(self) -> Iterator[tuple[duckdb.DuckDBPyConnection, PendingRows]]:
        """A connection on which the pending rows are not yet written, and those rows: for a
        read that takes them into account itself instead of writing them first."""
        with self._lock:
            if not self._pending:
                with self.connection() as con:
                    yield con, self._pending
                return
            yield self._held(), self._pending

    def _held(self) -> duckdb.DuckDBPyConnection:
        """The held connection (only a held store has pending rows), opened if closed."""
        if self._con is None:
            self._con = self._open()
        return self._con

    def _types_of(self, con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
        """The column types of `table`, read once per store (a table created later, the
        caller's own, is read when first written)."""
        types = self._types.get(table)
        if types is None:
            self._types = column_types(con)
            types = self._types.get(table)
            if types is None:
                raise StoreError(f"no table {table!r} in store {self.path}")
        return types

    def _log(self, rows: Rows) -> int:
        """Commit `rows` to `write_log` (one statement); returns their sequence number."""
        text, blobs = encode_rows(rows)
        self._log_seq += 1
        self._held().execute(
            "INSERT INTO write_log VALUES (?, ?, ?, ?, ?, NULL)",
            [self._writer, self._log_seq, text, blobs, now()],
        )
        return self._log_seq

    def _commit_rows(self, con: duckdb.DuckDBPyConnection, rows: Rows, keys: list[str]) -> None:
        """`rows` into their tables and the `write_log` rows `keys` out, in one transaction."""
        con.execute("BEGIN")
        try:
            for table, table_rows in rows.items():
                insert_rows(con, table, table_rows, self._types_of(con, table))
            if keys:
                con.execute(
                    "DELETE FROM write_log WHERE list_contains(?, writer || '#' || seq)", [keys]
                )
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")

    def _one_by_one(
        self,
        con: duckdb.DuckDBPyConnection,
        batches: list[tuple[Rows, str | None]],
        first: BaseException,
    ) -> None:
        """After batches failed together: each in a transaction of its own, the bad ones
        dropped (their log rows kept, marked with the error) and named in a `StoreError`."""
        failed: list[str] = []
        error: BaseException = first
        for rows, key in batches:
            try:
                self._commit_rows(con, rows, [] if key is None else [key])
            except BaseException as exc:
                if not _is_store_error(exc):
                    raise
                error = exc
                failed.append(", ".join(f"{len(r)} {t}" for t, r in sorted(rows.items())))
                if key is not None:
                    _mark_failed(con, key, exc)
        if failed:
            raise StoreError(
                f"{len(failed)} of {len(batches)} batches of rows could not be stored and were "
                f"dropped ({'; '.join(failed[:5])}): {type(error).__name__}: {error}"
            ) from error

    def _recover(self) -> None:
        """Write the rows a gone writer logged and never wrote (it died between a step and
        its flush), in log order, and drop their log rows. A batch that cannot be written
        keeps its log row, marked with the error: the store still opens."""
        with self.connection() as con:
            logged = con.execute(
                "SELECT writer, seq, rows, blobs FROM write_log WHERE error IS NULL "
                "ORDER BY logged_at, writer, seq"
            ).fetchall()
            batches: list[tuple[Rows, str | None]] = []
            for writer, seq, text, blobs in logged:
                if writer in _LIVE:
                    continue  # a store of this process, still working
                key = _log_key(writer, seq)
                try:
                    batches.append((decode_rows(text, blobs), key))
                except ValueError as exc:  # not a batch this code wrote
                    _mark_failed(con, key, exc)
            if not batches:
                return
            merged = PendingRows()
            for rows, _ in batches:
                merged.add(rows, None)
            try:
                self._commit_rows(con, merged.rows, [k for _, k in batches if k is not None])
            except BaseException as exc:
                if not _is_store_error(exc):
                    raise
                with contextlib.suppress(StoreError):  # named in the log; the store opens
                    self._one_by_one(con, batches, exc)
            end_recovered_runs(con, merged.rows)

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


def _bytes_in(rows: Rows) -> int:
    return sum(len(v) for table_rows in rows.values() for row in table_rows for v in row
               if isinstance(v, bytes))  # fmt: skip


def _log_key(writer: str, seq: int) -> str:
    return f"{writer}#{seq}"


def _is_store_error(exc: BaseException) -> bool:
    """A failure of the database or of the rows (not an interrupt)."""
    import duckdb

    return isinstance(exc, duckdb.Error | ValueError | TypeError | OverflowError)


def _mark_failed(con: duckdb.DuckDBPyConnection, key: str, exc: BaseException) -> None:
    """Keep a log row that cannot be written, with why, so that no later open retries it."""
    with contextlib.suppress(Exception):  # a store that cannot even record this fails later
        con.execute(
            "UPDATE write_log SET error = ? WHERE writer || '#' || seq = ?",
            [f"{type(exc).__name__}: {exc}"[:2000], key],
        )


@atexit.register
def _flush_live() -> None:
    """Write what the stores of this process still hold before it exits (a file store's
    rows are logged anyway; an in-memory store's die with it)."""
    for store in list(_LIVE.values()):
        if store.path != ":memory:":
            with contextlib.suppress(Exception):
                store.flush()


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
