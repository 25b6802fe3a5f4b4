"""The rows of a lazy in-memory store, kept in Python until something asks what they cannot answer.

An eval replay's store (`Store(":memory:", lazy=True)`) belongs to its replay alone: no other
connection or process reaches it, and most of what the replay asks of it (windows, files by path,
blobs, the runs it started) is answered from the rows it wrote. DuckDB charges ~0.3 ms a statement
however small, ~300 statements a replay cell, plus a fresh database and its schema; so the rows
stay here, and the database is created and every row written to it, table by table in the order
they were written, the first time a read needs SQL (`Store` materializes then, and from then on is
an ordinary in-memory store). Reads answered here answer exactly what their SQL would, or are not
answered here: an order the SQL leaves open (ties) falls back to SQL.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeGuard, TypeVar

from harness.store.bulk import insert_rows
from harness.store.pending import Rows
from harness.store.schema import COLUMN_NAMES

if TYPE_CHECKING:
    import duckdb

# The columns of the tables whose rows are written here by statement rather than as step rows.
RUN_COLUMNS = ("run_id", "thread_id", "parent_run_id", "parent_step", "agent", "model",
               "strategy", "status", "started_at", "ended_at", "steps", "input_tokens",
               "output_tokens", "cached_tokens", "cache_write_tokens", "cost_usd", "error",
               "config")  # fmt: skip
MEMORY_COLUMNS = ("path", "version", "content", "run_id", "author", "created_at", "deleted")
# Step tables kept as lists of rows, in the order they were written.
_APPENDED = ("messages", "windows", "model_calls", "events", "summaries")
# A materializing INSERT carries at most this many rows (a VALUES list of blobs binds each).
_SLICE = 512
_FULL_REF = COLUMN_NAMES["messages"].index("full_ref")


class LazyRows:
    """Every row of a lazy store while `live`: the step tables as lists, `files` by (namespace,
    path), `file_chunks` by blob and chunk, `runs` by id, `memory` by (path, version)."""

    def __init__(self, lock: threading.RLock) -> None:
        """`lock`: the database's, held around every read and write of the rows."""
        self.lock = lock
        self.live = True
        self.appended: dict[str, list[tuple[Any, ...]]] = {t: [] for t in _APPENDED}
        self.files: dict[tuple[str, str], tuple[Any, ...]] = {}
        self.chunks: dict[str, dict[int, tuple[Any, ...]]] = {}
        self.runs: dict[str, list[Any]] = {}
        self.memory: dict[tuple[str, int], tuple[Any, ...]] = {}
        self.named: set[str] = set()  # blobs a message names (`full_ref`): never deleted

    def takes(self, rows: Rows) -> bool:
        """Whether every table of `rows` is one kept here (a caller's own table is not)."""
        return all(t in self.appended or t in ("files", "file_chunks") for t in rows)

    def add(self, rows: Rows) -> None:
        """Keep a batch of step rows (every column in order). A key taken already is refused as
        DuckDB refuses it, the batch then not kept at all."""
        for row in rows.get("files", ()):
            if (row[0], row[1]) in self.files:
                raise duplicate("files", (row[0], row[1]))
        for row in rows.get("file_chunks", ()):
            if row[1] in self.chunks.get(row[0], {}):
                raise duplicate("file_chunks", (row[0], row[1]))
        for table, table_rows in rows.items():
            if table == "files":
                self.files.update(((r[0], r[1]), _files_row(r)) for r in table_rows)
            elif table == "file_chunks":
                for r in table_rows:
                    self.add_chunk(r)
            else:
                self.appended[table].extend(tuple(r) for r in table_rows)
        for row in rows.get("messages", ()):
            if row[_FULL_REF] is not None:
                self.named.add(row[_FULL_REF])

    def add_chunk(self, row: tuple[Any, ...]) -> None:
        blob = dict(self.chunks.get(row[0], {}))  # copied: a unit's snapshot keeps the old one
        blob[int(row[1])] = (row[0], int(row[1]), row[2], row[3], bytes(row[4]))
        self.chunks[row[0]] = blob

    def start_run(self, values: list[Any]) -> None:
        if values[0] in self.runs:
            raise duplicate("runs", values[0])
        self.runs[values[0]] = values

    def add_memory(self, row: tuple[Any, ...]) -> None:
        if (row[0], row[1]) in self.memory:
            raise duplicate("memory", (row[0], row[1]))
        self.memory[(row[0], row[1])] = row

    @contextmanager
    def unit(self) -> Iterator[None]:
        """Changes to files and memory that land together: put back as they were if the block
        raises."""
        files, chunks, memory = dict(self.files), dict(self.chunks), dict(self.memory)
        try:
            yield
        except BaseException:
            self.files, self.chunks, self.memory = files, chunks, memory
            raise

    def write_to(
        self,
        con: duckdb.DuckDBPyConnection,
        types_of: Callable[[duckdb.DuckDBPyConnection, str], list[str]],
    ) -> None:
        """Write every row to its table on `con` (a database with the schema and no rows), in
        one transaction, in the order they were written; this store is no longer live."""
        tables: dict[str, list[tuple[Any, ...]]] = {
            "runs": [tuple(r) for r in self.runs.values()],
            **self.appended,
            "files": list(self.files.values()),
            "file_chunks": [row for blob in self.chunks.values() for row in blob.values()],
            "memory": list(self.memory.values()),
        }
        con.execute("BEGIN")
        try:
            for table, rows in tables.items():
                for start in range(0, len(rows), _SLICE):
                    insert_rows(con, table, rows[start : start + _SLICE], types_of(con, table))
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
        self.live = False
        self.appended, self.files, self.chunks, self.runs, self.memory = {}, {}, {}, {}, {}
        self.named = set()


P = ParamSpec("P")
T = TypeVar("T")


def locked(method: Callable[Concatenate[Any, P], T]) -> Callable[Concatenate[Any, P], T]:
    """A repository method run under the lock of its rows (`self._rows`), as SQL runs under
    the database's: tools may write from other threads meanwhile."""

    @functools.wraps(method)
    def run(self: Any, *args: P.args, **kwargs: P.kwargs) -> T:
        with self._rows.lock:
            return method(self, *args, **kwargs)

    return run


def live(rows: LazyRows | None) -> TypeGuard[LazyRows]:
    """Whether `rows` are a lazy store's, not yet written to its database."""
    return rows is not None and rows.live


def _files_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A `files` row as DuckDB gives it back (its content as bytes)."""
    return (row[0], row[1], bytes(row[2]), *row[3:])


def duplicate(table: str, key: Any) -> Exception:
    """What DuckDB raises for a key taken already (callers catch `duckdb.Error`)."""
    import duckdb

    return duckdb.ConstraintException(
        f"Constraint Error: Duplicate key {key!r} violates the primary key of {table!r}"
    )
