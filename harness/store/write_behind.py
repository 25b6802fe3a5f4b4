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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from harness.errors import StoreError
from harness.store.bulk import insert_parts
from harness.store.library_pages import settle
from harness.store.pending import PendingRows, Rows, decode_rows, encode_rows
from harness.store.recovered import end_recovered_runs
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
        # Statements that could not run while the pending rows could not be written (a run's
        # end): they run in the transaction that writes them.
        self.deferred: list[Callable[[duckdb.DuckDBPyConnection], None]] = []
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
            with _as_store_error("the step's rows could not be written"):
                self._commit(self.db.held(), rows, [])
            return True
        if len(self.pending.batches) >= self.batches or self.pending.size >= WRITE_BEHIND_BYTES:
            # Before this batch is taken: if writing the others fails, the caller still holds
            # it and may hand it over again without doubling it.
            self.flush()
        with _as_store_error("the step's rows could not be logged, so the step was not taken"):
            seq = self._log(rows) if self.logged else None
        self.pending.add(rows, seq)
        return True

    def flush(self, *, keep: bool = False) -> None:
        """Write the pending rows to their tables now, in one transaction that also drops
        their `write_log` rows. An I/O error (a full disk) keeps every batch pending, to be
        written at the next flush (or, logged, by the next store to open the file). Any other
        error has each batch tried on its own: those the database refuses are dropped (on a
        file their log rows stay, marked with the error), those that meet an I/O error stay
        pending. Either way a `StoreError` says what happened. `keep`: the caller is a read
        or write that has nothing to do with the pending rows (a tool's), so the error is
        also kept for the next hand-over, to fail the run that made the rows."""
        with self.db.lock:
            if not self.pending and not self.deferred:
                return
            pending, self.pending = self.pending, PendingRows()
            try:
                self._write(pending)
            except StoreError as error:
                if keep:
                    self._dropped = error
                raise

    def _write(self, pending: PendingRows) -> None:
        """`flush` of `pending`, taken out of `self.pending`: what cannot be written for an
        I/O error goes back."""
        seqs: list[int | None] = list(pending.seqs) or [None] * len(pending.batches)
        keys = [_log_key(self.writer, seq) for seq in pending.seqs]
        try:
            con = self.db.held()
            self._commit(con, pending.rows, keys, deferred=True)
        except BaseException as exc:
            if not _is_store_error(exc):
                self._keep_pending(pending.batches, seqs)
                raise  # an interrupt: the rows stay pending
            if is_io_error(exc):
                self._keep_pending(pending.batches, seqs)
                raise StoreError(_pending_message(len(pending.batches), exc)) from exc
            batches = [
                (rows, None if seq is None else _log_key(self.writer, seq))
                for rows, seq in zip(pending.batches, seqs, strict=True)
            ]
            refused, left, error = self._one_by_one(con, batches, exc)
            self._keep_pending([pending.batches[i] for i in left], [seqs[i] for i in left])
            if not left:
                self._run_deferred(con)
            _raise_unwritten(refused, left, len(batches), error)
            return
        self.deferred = []
        settle("flush")  # the process's first: DuckDB's start-up pages can go

    def _keep_pending(self, batches: list[Rows], seqs: list[int | None]) -> None:
        """Make batches that could not be written pending again, under their log seqs."""
        kept = PendingRows()
        for rows, seq in zip(batches, seqs, strict=True):
            kept.add(rows, seq)
        self.pending = kept

    def defer(self, statement: Callable[[duckdb.DuckDBPyConnection], None]) -> None:
        """Run `statement` in the transaction that next writes the pending rows."""
        with self.db.lock:
            self.deferred.append(statement)

    def _run_deferred(self, con: duckdb.DuckDBPyConnection) -> None:
        """The deferred statements, after their rows were written batch by batch; dropped
        first, so that one the database refuses is not tried at every flush."""
        statements, self.deferred = self.deferred, []
        if not statements:
            return
        with _as_store_error("a run's end could not be recorded"):
            con.execute("BEGIN")
            try:
                for statement in statements:
                    statement(con)
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

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

    def _commit(
        self,
        con: duckdb.DuckDBPyConnection,
        rows: Rows,
        keys: list[str],
        *,
        deferred: bool = False,
    ) -> None:
        """`rows` into their tables and the `write_log` rows `keys` out, in one transaction
        (with the deferred statements, if `deferred`)."""
        con.execute("BEGIN")
        try:
            for table, table_rows in rows.items():
                insert_parts(con, table, table_rows, self.db.types_of(con, table))
            if keys:
                con.execute(
                    "DELETE FROM write_log WHERE list_contains(?, writer || '#' || seq)", [keys]
                )
            for statement in self.deferred if deferred else ():
                statement(con)
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")

    def _one_by_one(
        self,
        con: duckdb.DuckDBPyConnection,
        batches: list[tuple[Rows, str | None]],
        first: BaseException,
    ) -> tuple[list[str], list[int], BaseException]:
        """After batches failed together: each in a transaction of its own. Returns what the
        database refused (quarantined: dropped, their log rows marked with the error), the
        indexes of the batches an I/O error left unwritten (from the first such error on:
        the disk is full for all of them), and the last error."""
        refused: list[str] = []
        error: BaseException = first
        for index, (rows, key) in enumerate(batches):
            try:
                self._commit(con, rows, [] if key is None else [key])
            except BaseException as exc:
                if not _is_store_error(exc):
                    raise
                error = exc
                if is_io_error(exc):
                    return refused, list(range(index, len(batches))), error
                refused.append(", ".join(f"{len(r)} {t}" for t, r in sorted(rows.items())))
                if key is not None:
                    _mark_failed(con, key, exc)
        return refused, [], error

    def recover(self) -> None:
        """Write the rows a gone writer logged and never wrote (it died between a step and
        its flush), in log order, and drop their log rows. A batch whose earlier attempt met
        an I/O error is tried again. A batch the database refuses, or one that would hold a
        transcript position the table already has, keeps its log row, marked with why: the
        store still opens. An I/O error leaves every batch logged for the next open."""
        with self.db.lock, self.db.use() as con:
            logged = con.execute(
                "SELECT writer, seq, rows, blobs, error FROM write_log "
                "ORDER BY logged_at, writer, seq"
            ).fetchall()
            batches: list[tuple[Rows, str | None]] = []
            for writer, seq, text, blobs, error in logged:
                if writer in _LIVE or (error is not None and not is_io_text(error)):
                    continue  # a store of this process, still working; or quarantined
                key = _log_key(writer, seq)
                try:
                    batches.append((decode_rows(text, blobs), key))
                except ValueError as exc:  # not a batch this code wrote
                    _mark_failed(con, key, exc)
            batches = _unclaimed(con, batches)
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
                if is_io_error(exc):
                    return  # all still logged, for the next open
                self._one_by_one(con, batches, exc)  # named in the log; the store opens
            end_recovered_runs(con, merged.rows)


def _bytes_in(rows: Rows) -> int:
    return sum(len(v) for table_rows in rows.values() for row in table_rows for v in row
               if isinstance(v, bytes))  # fmt: skip


# Words of the errors DuckDB and the OS give when the disk, not the rows, is at fault.
_IO_WORDS = ("could not write", "no space left", "file too large", "disk quota", "input/output",
             "io error", "ioexception", "fatalexception", "invalidated")  # fmt: skip


def is_io_error(exc: BaseException) -> bool:
    """Whether `exc` is the disk's failure (full, over a size limit, gone), not the rows'."""
    import duckdb

    if isinstance(exc, OSError | duckdb.IOException | duckdb.FatalException):
        return True
    return isinstance(exc, duckdb.Error) and is_io_text(str(exc))


def is_io_text(error: str) -> bool:
    """`is_io_error` of an error as `write_log.error` records it."""
    lowered = error.lower()
    return any(word in lowered for word in _IO_WORDS)


def _pending_message(batches: int, exc: BaseException) -> str:
    return (
        f"{batches} batches of rows could not be written to their tables for an I/O error "
        f"({type(exc).__name__}: {exc}); they stay pending (logged in write_log on a file) "
        "and are written at the next flush, at close, or by the next store to open the file"
    )


def _raise_unwritten(
    refused: list[str], left: list[int], batches: int, error: BaseException
) -> None:
    """The `StoreError` naming the batches refused (quarantined) and those kept pending."""
    parts = []
    if refused:
        parts.append(
            f"{len(refused)} of {batches} batches of rows could not be stored and were dropped "
            f"({'; '.join(refused[:5])})"
        )
    if left:
        parts.append(_pending_message(len(left), error))
    if parts:
        raise StoreError("; ".join(parts) + f": {type(error).__name__}: {error}") from error


def _unclaimed(
    con: duckdb.DuckDBPyConnection, batches: list[tuple[Rows, str | None]]
) -> list[tuple[Rows, str | None]]:
    """The batches none of whose messages takes a transcript position (thread, seq) that the
    table or an earlier batch already holds; the others are marked, never written twice."""
    wanted = [f"{row[0]}#{row[1]}" for rows, _ in batches for row in rows.get("messages", ())]
    if not wanted:
        return batches
    taken = {
        str(r[0])
        for r in con.execute(
            "SELECT thread_id || '#' || seq FROM messages "
            "WHERE list_contains(?::VARCHAR[], thread_id || '#' || seq)",
            [wanted],
        ).fetchall()
    }
    free = []
    for rows, key in batches:
        places = [f"{row[0]}#{row[1]}" for row in rows.get("messages", ())]
        clash = next((p for p in places if p in taken), None)
        if clash is None:
            taken.update(places)
            free.append((rows, key))
        elif key is not None:
            _mark_failed(con, key, ValueError(f"transcript position {clash} is already taken"))
    return free


@contextmanager
def _as_store_error(what: str) -> Iterator[None]:
    import duckdb

    try:
        yield
    except duckdb.Error as exc:
        raise StoreError(f"{what}: {type(exc).__name__}: {exc}") from exc


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
