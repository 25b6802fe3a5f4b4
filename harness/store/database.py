"""The DuckDB file of a store: opening it (waiting out another process's lock), its settings,
and the one connection a held store keeps or a `hold=False` store opens for each use.

`hold=True` keeps one connection open: DuckDB opens cost ~20 ms, far too much per step.
`hold=False` opens the file for each use and closes it, so other processes (a second run, the
duckdb CLI, polars) can use the file between steps. Between `keep_open()` and `let_go()` such a
store keeps the connection it opens: a flow run keeps it from a model call's journal record to
the step's commit, so a step pays for one open, not one a record.

Only `harness.store` holds these connections; callers reach the tables through the store's
repositories and units of work.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import StoreError
from harness.store.bulk import column_types
from harness.store.library_pages import settle
from harness.store.retry import is_lock_conflict, lock_retries
from harness.store.schema import default_path
from harness.store.writer_turn import writer_turn

if TYPE_CHECKING:
    import duckdb

# For a file store DuckDB's default is 80% of the machine's memory, kept as cache once touched;
# the agent's writes are small and its reads by key, so this serves them. Much less is unsafe:
# DuckDB 2.0 fails fatally when a checkpoint cannot pin its blocks (seen at 32-64 MB).
FILE_MEMORY_LIMIT = "256MB"
# How long an open waits for another process to release the file.
OPEN_TIMEOUT_S = 30.0


class Database:
    """A DuckDB file (or `":memory:"`): its settings and the connection used on it. Callers
    hold `lock` around every use of a connection."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        hold: bool,
        memory_limit: str | None,
        threads: int,
        open_timeout: float = OPEN_TIMEOUT_S,
    ) -> None:
        """`open_timeout`: how long an open waits for another process to let go of the file
        (0: one attempt)."""
        self.path = str(path) if path is not None else default_path()
        self.open_timeout = open_timeout
        self.hold = hold or self.path == ":memory:"
        self.memory_limit = memory_limit or (None if self.path == ":memory:" else FILE_MEMORY_LIMIT)
        self.threads = threads
        self.lock = threading.RLock()
        self._con: duckdb.DuckDBPyConnection | None = None
        # hold=False: keep `_con` open (between `keep_open` and `let_go`), and how many atomic
        # blocks have a cursor of it (it closes after the last of them).
        self._keep = False
        self._cursors = 0
        self._spill_dir: str | None = None
        self._types: dict[str, list[str]] = {}
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)

    def open(self) -> duckdb.DuckDBPyConnection:
        """A new connection, configured; another process's lock is waited out while holding
        the writer's turn, so that `ctxlab sql` readers give way meanwhile."""
        import duckdb  # loads with the first store, not with `import harness`

        try:
            con = duckdb.connect(self.path)
        except duckdb.IOException as exc:
            if not is_lock_conflict(exc):
                raise StoreError(f"cannot open store {self.path}: {exc}") from exc
            with writer_turn(self.path):
                con = _connect_when_free(self.path, self.open_timeout)
        self._configure(con)
        settle("open")  # the process's first: connecting ran most of DuckDB's library once
        return con

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
    def use(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """The held (or kept) connection, else one opened for this use and closed after it.
        The caller holds `lock`."""
        if self.hold or self._keep:
            yield self.held()
            return
        con = self.open()
        try:
            yield con
        finally:
            con.close()

    def held(self) -> duckdb.DuckDBPyConnection:
        """The connection this store keeps, opened if closed."""
        if self._con is None:
            self._con = self.open()
        return self._con

    def own_connection(self) -> tuple[duckdb.DuckDBPyConnection, bool]:
        """A connection of its own for an atomic block, and whether it is a cursor of a kept
        connection: with the store held or kept, a second connection to the same database
        (its own transaction); otherwise a new one. The caller holds `lock`."""
        if not self.hold and not self._keep:
            return self.open(), False
        cursor = self.held().cursor()
        if self.hold:
            return cursor, False
        self._cursors += 1
        return cursor, True

    def cursor_closed(self) -> None:
        with self.lock:
            self._cursors -= 1
            self._close_unkept()

    def keep_open(self) -> None:
        if not self.hold:
            with self.lock:
                self._keep = True

    def let_go(self) -> None:
        if not self.hold:
            with self.lock:
                self._keep = False
                self._close_unkept()

    def _close_unkept(self) -> None:
        if not self.hold and not self._keep and not self._cursors and self._con is not None:
            self._con.close()
            self._con = None

    def close(self) -> None:
        with self.lock:
            if self._con is not None:
                self._con.close()
                self._con = None
            if self._spill_dir is not None:
                shutil.rmtree(self._spill_dir, ignore_errors=True)
                self._spill_dir = None

    def types_of(self, con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
        """The column types of `table`, read once per store (a table created later, the
        caller's own, is read when first written)."""
        types = self._types.get(table)
        if types is None:
            self._types = column_types(con)
            types = self._types.get(table)
            if types is None:
                raise StoreError(f"no table {table!r} in store {self.path}")
        return types


def _connect_when_free(path: str, timeout: float) -> duckdb.DuckDBPyConnection:
    import duckdb

    error: duckdb.IOException | None = None
    for _ in lock_retries(timeout):
        try:
            return duckdb.connect(path)
        except duckdb.IOException as exc:
            if not is_lock_conflict(exc):
                raise StoreError(f"cannot open store {path}: {exc}") from exc
            error = exc
    raise StoreError(f"cannot open store {path}: {error}") from error


def read_only(path: str | os.PathLike[str], *, timeout: float = 30.0) -> duckdb.DuckDBPyConnection:
    """A read-only connection to an existing store, for queries while runs write: a writer
    holds the file's lock only for one step's transaction, so a conflict is retried with
    backoff for up to `timeout` seconds. Never creates the file."""
    import duckdb

    if not Path(path).is_file():
        raise StoreError(f"no store at {path}")
    error: duckdb.Error | None = None
    for _ in lock_retries(timeout):
        try:
            return duckdb.connect(str(path), read_only=True)
        except duckdb.IOException as exc:
            if not is_lock_conflict(exc):
                raise StoreError(f"cannot read store {path}: {exc}") from exc
            error = exc
        except duckdb.Error as exc:
            raise StoreError(f"cannot read store {path}: {exc}") from exc
    raise StoreError(f"cannot read store {path}: {error}") from error
