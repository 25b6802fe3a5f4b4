"""A unit of work: changes to several harness tables committed in one transaction.

`with store.unit() as uow:` gives the repositories over that transaction, so that a file's
row, its chunks and the memory version a change hook records land together, without the
caller ever holding a DuckDB connection.
"""

from __future__ import annotations

from harness.store.files import Files
from harness.store.memory import Memory
from harness.store.sql import Sql


class UnitOfWork:
    """The repositories of one open transaction (a lazy store's: over its rows)."""

    def __init__(self, sql: Sql, files: Files | None = None, memory: Memory | None = None) -> None:
        self.sql = sql
        self.files = files if files is not None else Files(sql)
        self.memory = memory if memory is not None else Memory(sql)
