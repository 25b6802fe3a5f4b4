"""A unit of work: changes to several harness tables committed in one transaction.

`with store.unit() as uow:` gives the repositories over that transaction, so that a file's
row, its chunks and the memory version a change hook records land together, without the
caller ever holding a DuckDB connection.
"""

from __future__ import annotations

from harness.store.files import Files
from harness.store.memory import Memory
from harness.store.sql import OnConnection


class UnitOfWork:
    """The repositories of one open transaction."""

    def __init__(self, sql: OnConnection) -> None:
        self.sql = sql
        self.files = Files(sql)
        self.memory = Memory(sql)
