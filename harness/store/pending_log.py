"""A crashed store's `write_log`, as readers meet it.

A held store's steps wait in `write_log` until written to their tables; a process that dies
in between leaves them there, and only a store opened for writing writes them. A reader that
opens the file read-only would see the tables that far behind without a word. So readers
(`read_store`, `ctxlab sql`) that find such steps write them first when the file can be opened
for writing now (no other process has it open: whoever logged them is gone), and otherwise
warn how many steps the log holds (`PendingLogWarning`).
"""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING

from harness.errors import StoreError
from harness.store.database import Database
from harness.store.write_behind import WriteBehind, is_io_text

if TYPE_CHECKING:
    import duckdb


class PendingLogWarning(UserWarning):
    """A store holds steps only in its `write_log`, and this reader could not write them."""


def pending_steps(con: duckdb.DuckDBPyConnection) -> int:
    """How many logged batches (a step's rows each, or an offloaded file's) are not yet in
    their tables and not quarantined for good: 0 for a store from before `write_log`."""
    has_log = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND table_name = 'write_log'"
    ).fetchone()
    if not has_log or not has_log[0]:
        return 0
    errors = con.execute("SELECT error FROM write_log").fetchall()
    return sum(1 for (error,) in errors if error is None or is_io_text(error))


def write_pending_log(path: str | os.PathLike[str]) -> bool:
    """Write the logged steps of the store at `path` to their tables now, with one attempt to
    open the file for writing (no migration); False when it cannot be opened for writing."""
    import duckdb

    db = Database(path, hold=True, memory_limit=None, threads=1, open_timeout=0)
    try:
        behind = WriteBehind(db, 0)
        behind.logged = True
        behind.recover()
    except (StoreError, duckdb.Error):
        return False
    finally:
        db.close()
    return True


def warn_pending(path: str | os.PathLike[str], steps: int) -> None:
    """Say that the results read from `path` leave out `steps` logged steps."""
    warnings.warn(
        PendingLogWarning(
            f"store {path} holds {steps} steps only in its write_log (a run's process died "
            "before writing them to their tables, and the file cannot be opened for writing "
            "now): what is read here leaves them out; the next store to open the file for "
            "writing writes them"
        ),
        stacklevel=3,
    )
