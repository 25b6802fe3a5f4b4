"""A store and a step runner that crash on cue, for the crash-point tests
(tests/flows/test_flows_crash_points.py): a kill after the Nth commit or at a step boundary
(`Killed`, and from then on the store refuses every read and write), or Ctrl-C there (the
session's main task cancelled, or KeyboardInterrupt raised)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import duckdb

from harness.store import Store
from harness.store.database import Database
from helpers.waiting import wait_until

T = TypeVar("T")


class Killed(BaseException):
    """The process died here."""


_WRITES = frozenset({"INSERT", "UPDATE", "DELETE", "CREATE", "ALTER", "DROP"})


class _Connection:
    """A DuckDB connection that counts commits and stops working once the process is dead."""

    def __init__(self, con: duckdb.DuckDBPyConnection, store: CrashingStore) -> None:
        self._con = con
        self._store = store
        self._in_transaction = False

    def execute(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        self._store.check()
        result = self._con.execute(sql, *args, **kwargs)
        verb = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
        if verb == "BEGIN":
            self._in_transaction = True
        elif verb in ("COMMIT", "ROLLBACK"):
            self._in_transaction = False
            if verb == "COMMIT":
                self._store.committed()
        elif not self._in_transaction and verb in _WRITES:
            self._store.committed()  # DuckDB autocommits a lone statement: a commit point too
        return result

    def cursor(self) -> _Connection:
        self._store.check()
        con = _Connection(self._con.cursor(), self._store)
        self._store.opened.append(con)
        return con

    def __getattr__(self, name: str) -> Any:
        self._store.check()
        return getattr(self._con, name)


class _CrashingDatabase(Database):
    """The database of a `CrashingStore`: every connection it opens is a `_Connection`."""

    def __init__(self, store: CrashingStore, path: Any, **settings: Any) -> None:
        self.store = store
        super().__init__(path, **settings)

    def open(self) -> Any:
        con = _Connection(super().open(), self.store)
        self.store.opened.append(con)
        return con


class CrashingStore(Store):
    """An in-memory store that dies right after its `kill_after`-th commit, or when told;
    or whose process gets Ctrl-C after its `interrupt_after`-th commit."""

    def __init__(self) -> None:
        self.commits = 0
        self.kill_after: int | None = None
        self.interrupt_after: int | None = None
        self.raise_after: int | None = None
        self.main: asyncio.Task[Any] | None = None
        self.dead = False
        self.crash = ""
        self.opened: list[_Connection] = []
        super().__init__(":memory:")

    def _database(self, path: Any, **settings: Any) -> Database:
        return _CrashingDatabase(self, path, **settings)

    def check(self) -> None:
        if self.dead:
            raise Killed("the process is gone")

    def committed(self) -> None:
        self.commits += 1
        if self.commits == self.kill_after:
            self.kill(f"killed after commit {self.commits}")
        if self.commits == self.interrupt_after:
            self.interrupt(f"Ctrl-C after commit {self.commits}")
        if self.commits == self.raise_after:
            self.crash = f"KeyboardInterrupt after commit {self.commits}"
            self.raise_after = None
            raise KeyboardInterrupt(self.crash)

    def interrupt(self, where: str) -> None:
        """SIGINT under `asyncio.run`: the main task is cancelled, and goes on until its
        next await."""
        self.crash = where
        assert self.main is not None
        self.main.cancel()

    def kill(self, where: str) -> None:
        self.dead = True
        self.crash = where
        raise Killed(where)

    def revive(self) -> None:
        """A new process opens the database: what was committed is all there is. The dead
        process's open transactions end with it (the in-memory database itself stays)."""
        for con in self.opened:
            with contextlib.suppress(duckdb.Error):  # no transaction was open on it
                con._con.execute("ROLLBACK")
            if con is not self.db._con:
                con._con.close()
        self.opened = [c for c in self.opened if c is self.db._con]
        self.dead = False
        self.kill_after = None
        self.interrupt_after = None


@dataclass
class CrashingRunner:
    """The inline runner, killed (or interrupted, `how="interrupt"`) before or after its
    `at`-th step (counted across the run)."""

    store: CrashingStore
    counter: list[int]
    at: int | None = None
    when: str = "before"
    how: str = "kill"

    async def _stop(self, where: str) -> None:
        if self.how == "kill":
            self.store.kill(where)
        self.store.interrupt(where.replace("killed", "Ctrl-C"))
        await asyncio.sleep(0)  # the cancellation arrives here, inside the step

    async def run(
        self, name: str, fn: Callable[..., Awaitable[T]], /, *args: Any, **kwargs: Any
    ) -> T:
        self.counter[0] += 1
        n = self.counter[0]
        if n == self.at and self.when == "before":
            await self._stop(f"killed before step {n} ({name})")
        result = await fn(*args, **kwargs)
        if n == self.at and self.when == "after":
            await self._stop(f"killed after step {n} ({name})")
        return result

    def current_step_id(self) -> str | None:
        return None


def kill_once(doomed: subprocess.Popen[Any], ready: Callable[[], bool], timeout: float,
              what: str) -> None:  # fmt: skip
    """SIGKILL `doomed` as soon as `ready()` holds (waiting at most `timeout` s for `what`), and
    never leave it running, whatever fails on the way."""
    try:
        wait_until(ready, timeout, what)
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=60)
    finally:
        if doomed.poll() is None:
            doomed.kill()
