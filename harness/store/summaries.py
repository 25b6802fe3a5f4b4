"""The `summaries` table: the summaries the summarization middleware wrote, one a cycle."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.store.sql import Sql


class Summaries:
    """The summaries of compacted turns."""

    def __init__(self, sql: Sql) -> None:
        self._sql = sql

    def all(self) -> list[dict[str, Any]]:
        """Every summary row, in the order they were written."""
        return self._sql.query("SELECT * FROM summaries ORDER BY created_at, cycle")

    def last_cycle(self, thread_id: str) -> int:
        """The highest cycle any summary of the thread has, 0 when it has none."""
        return int(
            self._sql.scalar(
                "SELECT coalesce(max(cycle), 0) FROM summaries WHERE thread_id = ?", [thread_id]
            )
        )
