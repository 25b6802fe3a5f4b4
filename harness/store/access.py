"""How other processes share a store file with the runs writing it.

DuckDB lets one process write a file, or several read it, never both: a read-only connection
holds the same file lock a writer needs. Runs open the file once per step (`Store(hold=False)`)
and retry on a conflict for 30 s, so a loop of readers that always has one connection open
starves them (two `ctxlab run` writers under a `ctxlab sql` loop failed to open the file for
30 s and gave up). Writers therefore announce that they are waiting: a writer that finds the
file locked holds a shared `flock` on `<store>.writers` (created then) while it retries the
open, never during its transaction.
Readers that go through `sandboxed_query` start only while no writer waits, and stop a query
that a writer has been waiting on for `GIVE_WAY_S`: readers never block writers for long.

`sandboxed_query` is also the one way `ctxlab sql` runs a user's SQL: the store is opened
read-only, DuckDB's access to any other file, the network and extensions is switched off and
the configuration locked, and only reading statements are run.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

from harness.errors import QueryError, StoreError
from harness.store.pending_log import pending_steps, warn_pending, write_pending_log
from harness.store.retry import is_lock_conflict, lock_retries
from harness.store.writer_turn import waiting_writer

# How long a reader's query may keep running once a writer waits for the file: well inside
# the 30 s a writer retries before giving up.
GIVE_WAY_S = 1.0
_POLL_S = 0.05
# Statement kinds a read runs as: queries, EXPLAIN, and PRAGMA/CALL forms such as
# `PRAGMA table_info(...)` (setting PRAGMAs fail on the locked configuration).
READ_STATEMENTS = frozenset({"SELECT", "EXPLAIN", "PRAGMA", "CALL"})
_PID = re.compile(r"\(PID (\d+)\)")


def _sandbox_config(memory_limit: str) -> dict[str, Any]:
    return {
        "enable_external_access": False,  # no other file (COPY, read_csv, ATTACH), no URL
        "autoload_known_extensions": False,
        "autoinstall_known_extensions": False,
        "allow_community_extensions": False,
        "memory_limit": memory_limit,
        "threads": 1,
        "lock_configuration": True,  # nothing above can be SET back
    }


def refuse_writes(sql: str) -> None:
    """Raise QueryError unless every statement in `sql` only reads."""
    import duckdb

    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryError(_one_line(exc)) from exc
    except ValueError as exc:  # a statement kind this duckdb's Python API cannot name
        raise QueryError(f"refused: ctxlab sql is read-only ({exc})") from exc
    if not statements:
        raise QueryError(f"no SQL statement in {sql!r}")
    for statement in statements:
        kind = statement.type.name
        if kind not in READ_STATEMENTS:
            raise QueryError(
                f"refused: a {kind} statement; ctxlab sql is read-only and runs only "
                f"{', '.join(sorted(READ_STATEMENTS))} statements"
            )


def sandboxed_query(
    path: str, sql: str, *, wait: float = 30.0, memory_limit: str = "256MB"
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Columns and rows of a user's read-only `sql` on the store at `path`. Waits up to `wait`
    seconds for writers (StoreError naming the writer's pid after that); QueryError for a
    refused statement or a mistake in the query."""
    import duckdb

    refuse_writes(sql)
    con = _open_reader(path, wait, _sandbox_config(memory_limit))
    if steps := pending_steps(con):  # a dead run's steps, only in its log: written first
        con.close()
        write_pending_log(path)
        con = _open_reader(path, wait, _sandbox_config(memory_limit))
        if steps := pending_steps(con):
            warn_pending(path, steps)
    stop = threading.Event()
    gave_way: list[int] = []
    watcher = threading.Thread(target=_give_way, args=(path, con, stop, gave_way), daemon=True)
    watcher.start()
    try:
        cursor = con.execute(sql)
        columns = [d[0] for d in cursor.description or ()]
        rows = cursor.fetchall() if columns else []
    except duckdb.Error as exc:
        if gave_way:
            raise StoreError(
                f"store {path} is busy: ctxlab sql stopped its query after {GIVE_WAY_S:g} s "
                f"to let pid {gave_way[0]} write (readers give way to runs); try again when "
                "it is done"
            ) from exc
        raise QueryError(_one_line(exc)) from exc
    finally:
        stop.set()
        watcher.join()
        con.close()
    return columns, rows


def _open_reader(path: str, wait: float, config: dict[str, Any]) -> Any:
    import duckdb

    pid: int | None = None
    for _ in lock_retries(wait):
        pid = waiting_writer(path)
        if pid is None:
            try:
                return duckdb.connect(path, read_only=True, config=config)
            except duckdb.IOException as exc:
                if not is_lock_conflict(exc):
                    raise StoreError(f"cannot read store {path}: {_one_line(exc)}") from exc
                found = _PID.search(str(exc))
                pid = int(found.group(1)) if found else 0
            except duckdb.Error as exc:
                raise StoreError(f"cannot read store {path}: {_one_line(exc)}") from exc
    raise StoreError(
        f"store {path} is busy being written by pid {pid or 'unknown'} (it holds the "
        f"file's lock); ctxlab sql waited {wait:g} s (--wait)"
    )


def _give_way(path: str, con: Any, stop: threading.Event, gave_way: list[int]) -> None:
    """Interrupts `con`'s query once a writer has waited GIVE_WAY_S for the file."""
    since: float | None = None
    while not stop.wait(_POLL_S):
        pid = waiting_writer(path)
        if pid is None:
            since = None
            continue
        since = since if since is not None else time.monotonic()
        if time.monotonic() - since >= GIVE_WAY_S:
            gave_way.append(pid)
            con.interrupt()
            return


def _one_line(exc: BaseException) -> str:
    return "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
