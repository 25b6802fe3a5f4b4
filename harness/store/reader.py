"""`Reader`: the store's repositories over a read-only connection, for readers of a store that
runs may be writing (`read_store`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Self

from harness.store.database import read_only
from harness.store.events import Events
from harness.store.files import Files
from harness.store.memory import Memory
from harness.store.messages import Messages
from harness.store.pending_log import pending_steps, warn_pending, write_pending_log
from harness.store.runs import Runs
from harness.store.schema import FULL_REF_VERSION
from harness.store.sql import OnConnection
from harness.store.summaries import Summaries
from harness.store.usage import ModelCalls

if TYPE_CHECKING:
    import duckdb


class Reader:
    """The named reads of a store file, without migrating or writing it."""

    def __init__(self, con: duckdb.DuckDBPyConnection, *, pending_steps: int = 0) -> None:
        """`pending_steps`: steps the store holds only in its `write_log` (see
        `harness.store.pending_log`), which these reads leave out."""
        self.con = con
        self.pending_steps = pending_steps
        self._sql = OnConnection(con)
        self.runs = Runs(self._sql)
        self.usage = ModelCalls(self._sql)
        self.events = Events(self._sql)
        self.summaries = Summaries(self._sql)
        self.files = Files(self._sql)
        self.memory = Memory(self._sql)
        self._messages: Messages | None = None

    @property
    def messages(self) -> Messages:
        if self._messages is None:
            version = int(self.scalar("SELECT max(version) FROM schema_version") or 0)
            self._messages = Messages(self._sql, names_full_refs=version >= FULL_REF_VERSION)
        return self._messages

    def query(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        return self._sql.query(sql, params)

    def scalar(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        return self._sql.scalar(sql, params)

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_store(path: str | os.PathLike[str], *, timeout: float = 30.0) -> Reader:
    """A `Reader` of an existing store (see `read_only`); close it when done. Steps a dead
    process left only in its `write_log` are written first when the file can be opened for
    writing, else a `PendingLogWarning` says how many the reads leave out."""
    con = read_only(path, timeout=timeout)
    steps = pending_steps(con)
    if steps:
        con.close()
        write_pending_log(path)
        con = read_only(path, timeout=timeout)
        steps = pending_steps(con)
        if steps:
            warn_pending(path, steps)
    return Reader(con, pending_steps=steps)
