"""Writing behind: a held store's step rows kept, logged, and written to their tables in bulk.

See `harness.store.pending` for why. `WriteBehind` takes each batch a held store is handed
(committing it to `write_log` first on a file), writes the pending batches in one transaction
when `batches` of them or WRITE_BEHIND_BYTES wait, before any other use of the store, at
close and at exit, and, when a store opens a file, writes what a dead writer logged.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import uuid
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from harness.errors import StoreError
from harness.store.bulk import insert_rows
from harness.store.pending import PendingRows, Rows, decode_rows, encode_rows
from harness.store.schema import now

if TYPE_CHECKING:
    import duckdb

    from harness.store.database import Database

# A held store writes its pending rows to their tables once this many batches (a step's rows,
# an offloaded file's) or this many bytes wait: 64 batches are ~40 steps of a tool loop, and
# their one transaction costs ~8 ms where writing each batch as it came cost ~80 ms.
WRITE_BEHIND = 64
WRITE_BEHIND_BYTES = 8 << 20
# A file store writes a batch carrying more bytes than this (an offloaded original) at once
# rather than logging it: logged, it would be written to disk twice (~1 ms per 100 kB each).
LOG_BYTES = 32 << 10

# Write-behinds of this process that may hold pending rows: they are written at exit, and a
# store opening the same file leaves their logged rows alone.
_LIVE: weakref.WeakValueDictionary[str, WriteBehind] = weakref.WeakValueDictionary()


class WriteBehind:
    """The batches a held store has taken and not yet written to their tables."""

    def __init__(self, db: Database, batches: int) -> None:
        """`batches`: how many to keep before writing them together; 0 writes each as it
        comes (as a `hold=False` store always does)."""
        self.db = db
        self.batches = batches if db.hold else 0
        self.pending = PendingRows()
        self.logged = False  # set once the schema is known to have `write_log`
        self.writer = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"  # names its `write_log` rows
        self._log_seq = 0
        self._through = 0  # `through` blocks open
        # Rows a flush dropped where a read set it off (a tool's, which may swallow the
        # error): raised again at the next hand-over, to fail the run that made them.
        self._dropped: StoreError | None = None
        _LIVE[self.writer] = self

    def take(self, rows: Rows) -> bool:
        """Keep `rows` with the pending ones (logged first on a file), writing the others
        first when enough wait; False when this store writes each batch now instead (the
        caller writes it). The caller holds the database's lock."""
        if not self.batches or self._through:
            return False
        if self.logged and _bytes_in(rows) > LOG_BYTES:
            # Logged, its bytes would reach the disk twice (the log, then the table): written
            # now instead, in a transaction of its own that only inserts.
            self._commit(self.db.held(), rows, [])
            return True
        if len(self.pending.batches) >= self.batches or self.pending.size >= WRITE_BEHIND_BYTES:
            # Before this batch is taken: if writing the others fails, the caller still holds
            # it and may hand it over again without doubling it.
            self.flush()
        seq = self._log(rows) if self.logged else None
        self.pending.add(rows, seq)
        return True

    def flush(self, *, keep: bool = False) -> None:
        """Write the pending rows to their tables now, in one transaction that also drops
        their `write_log` rows. If that fails, each batch is tried on its own: those that
        fail are dropped (on a file their log rows stay, marked with the error) and a
        `StoreError` names them. `keep`: the caller is a read or write that has nothing to
        do with the pending rows (a tool's), so their failure is also kept for the next
        hand-over."""
        with self.db.lock:
            if not self.pending:
                return
            pending = self.pending
            keys = [_log_key(self.writer, seq) for seq in pending.seqs]
            con = self.db.held()
            try:
                self._commit(con, pending.rows, keys)
            except BaseException as exc:
                if not _is_store_error(exc):
                    raise  # an interrupt: the rows stay pending
                self.pending = PendingRows()
                # An in-memory store logs nothing: its batches have no log rows to mark.
                slots: list[str | None] = list(keys) if keys else [None] * len(pending.batches)
                try:
                    self._one_by_one(con, list(zip(pending.batches, slots, strict=True)), exc)
                except StoreError as dropped:
                    if keep:
                        self._dropped = dropped
                    raise
                return
            self.pending = PendingRows()

    def take_dropped(self) -> StoreError | None:
        """The `StoreError` of rows a flush dropped where a read or another write set it
        off, once; None if there is none."""
        with self.db.lock:
            dropped, self._dropped = self._dropped, None
        return dropped

    @contextmanager
    def through(self) -> Iterator[None]:
        """Inside the block every batch is written as it is handed over, the pending ones
        first."""
        with self.db.lock:
            self.flush()
            self._through += 1
        try:
            yield
        finally:
            with self.db.lock:
                self._through -= 1

    def _log(self, rows: Rows) -> int:
        """Commit `rows` to `write_log` (one statement); returns their sequence number."""
        text, blobs = encode_rows(rows)
        self._log_seq += 1
        self.db.held().execute(
            "INSERT INTO write_log VALUES (?, ?, ?, ?, ?, NULL)",
            [self.writer, self._log_seq, text, blobs, now()],
        )
        return self._log_seq

    def _commit(self, con: duckdb.DuckDBPyConnection, rows: Rows, keys: list[str]) -> None:
        """`rows` into their tables and the `write_log` rows `keys` out, in one transaction."""
        con.execute("BEGIN")
        try:
            for table, table_rows in rows.items():
                insert_rows(con, table, table_rows, self.db.types_of(con, table))
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
                self._commit(con, rows, [] if key is None else [key])
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

    def recover(self) -> None:
        """Write the rows a gone writer logged and never wrote (it died between a step and
        its flush), in log order, and drop their log rows. A batch that cannot be written
        keeps its log row, marked with the error: the store still opens."""
        with self.db.lock, self.db.use() as con:
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
                self._commit(con, merged.rows, [k for _, k in batches if k is not None])
            except BaseException as exc:
                if not _is_store_error(exc):
                    raise
                with contextlib.suppress(StoreError):  # named in the log; the store opens
                    self._one_by_one(con, batches, exc)


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
    for behind in list(_LIVE.values()):
        if behind.db.path != ":memory:":
            with contextlib.suppress(Exception):
                behind.flush()
