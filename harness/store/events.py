"""The `events` table: what each middleware did, when, and the tokens before and after."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.store.schema import RUN_TREE

if TYPE_CHECKING:
    from harness.store.sql import Sql


class Events:
    """Middleware events."""

    def __init__(self, sql: Sql) -> None:
        self._sql = sql

    def rows(
        self,
        run_id: str | None = None,
        *,
        middleware: str | None = None,
        action: str | None = None,
    ) -> list[dict[str, Any]]:
        """Event rows, oldest first: of one run, one middleware, one action, or all."""
        filters = {"run_id": run_id, "middleware": middleware, "action": action}
        used = {k: v for k, v in filters.items() if v is not None}
        where = " AND ".join(f"{k} = ?" for k in used)
        return self._sql.query(
            "SELECT * FROM events " + (f"WHERE {where} " if where else "") + "ORDER BY created_at",
            list(used.values()),
        )

    def count(self, action_like: str) -> int:
        """How many events have an action matching the SQL LIKE pattern `action_like`."""
        return int(
            self._sql.scalar("SELECT count(*) FROM events WHERE action LIKE ?", [action_like]) or 0
        )

    def tree_totals(self, run_id: str) -> list[dict[str, Any]]:
        """Per middleware and action, over `run_id` and the runs under it: how many times
        (`times`) and the tokens before and after (`before`, `after`), summed."""
        return self._sql.query(
            RUN_TREE + "SELECT middleware, action, count(*) AS times, "
            "coalesce(sum(tokens_before), 0) AS before, coalesce(sum(tokens_after), 0) AS after "
            "FROM events WHERE run_id IN (SELECT run_id FROM tree) "
            "GROUP BY ALL ORDER BY middleware, action",
            [run_id],
        )
