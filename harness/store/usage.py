"""The `model_calls` table: what each model call used and cost, summed per run, thread or
role."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from harness.messages import Usage

if TYPE_CHECKING:
    from harness.store.sql import Sql

# Who made a model call: the summarizer's calls are named `<model>#summarize`, its memory
# consolidations `<model>#consolidate`.
_ROLE = """CASE WHEN m.model LIKE '%#summarize' OR m.model LIKE '%#consolidate' THEN 'summarizer'
                 WHEN r.parent_run_id IS NOT NULL THEN 'subagent' ELSE 'main' END"""
_USAGE_BY_ROLE = f"""
SELECT {_ROLE} AS role, count(*) AS calls, sum(m.input_tokens) AS input_tokens,
       sum(m.output_tokens) AS output_tokens, sum(m.cached_tokens) AS cached_tokens,
       sum(m.cache_write_tokens) AS cache_write_tokens,
       max(m.context_tokens) AS peak_context_tokens
FROM model_calls m JOIN runs r USING (run_id)
GROUP BY ALL ORDER BY role
"""
_COSTS = f"SELECT {_ROLE} AS role, m.cost_usd FROM model_calls m JOIN runs r USING (run_id)"


class ModelCalls:
    """Model calls and the tokens and cost they add up to."""

    def __init__(self, sql: Sql) -> None:
        self._sql = sql

    def rows(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """Model call rows (of one run, or all), in the order they were made."""
        where, params = ("WHERE run_id = ? ", [run_id]) if run_id is not None else ("", [])
        return self._sql.query(f"SELECT * FROM model_calls {where}ORDER BY created_at", params)

    def of_run(self, run_id: str) -> tuple[Usage, int]:
        """What a run's model calls used, summed, and the largest context one of them sent."""
        (row,) = self._sql.query(
            "SELECT count(*) AS requests, coalesce(sum(input_tokens), 0) AS input_tokens, "
            "coalesce(sum(output_tokens), 0) AS output_tokens, "
            "coalesce(sum(cached_tokens), 0) AS cached_tokens, "
            "coalesce(sum(cache_write_tokens), 0) AS cache_write_tokens, "
            "coalesce(sum(cost_usd), 0) AS cost_usd, coalesce(max(context_tokens), 0) AS peak "
            "FROM model_calls WHERE run_id = ?",
            [run_id],
        )
        usage = Usage(
            input_tokens=int(row["input_tokens"]),
            output_tokens=int(row["output_tokens"]),
            cached_tokens=int(row["cached_tokens"]),
            cache_write_tokens=int(row["cache_write_tokens"]),
            requests=int(row["requests"]),
            cost_usd=float(row["cost_usd"]),
        )
        return usage, int(row["peak"])

    def by_role(self) -> dict[str, dict[str, int | float]]:
        """Tokens and cost of every model call in the store, by role (`main`, `subagent`,
        `summarizer`). Costs are summed exactly (`math.fsum`), so the total never depends
        on the order rows come back in."""
        usage: dict[str, dict[str, int | float]] = {
            r.pop("role"): r for r in self._sql.query(_USAGE_BY_ROLE)
        }
        costs: dict[str, list[float]] = {}
        for row in self._sql.query(_COSTS):
            costs.setdefault(row["role"], []).append(row["cost_usd"] or 0.0)
        for role, values in costs.items():
            usage[role]["cost_usd"] = math.fsum(values)
        return usage

    def of_thread(self, thread_id: str) -> dict[str, int | float]:
        """Model calls, input and output tokens and cost (`calls`, `input_tokens`,
        `output_tokens`, `cost_usd`) of every run on `thread_id` and the runs under them."""
        rows = self._sql.query(
            "WITH RECURSIVE tree(run_id) AS (SELECT run_id FROM runs WHERE thread_id = ? "
            "UNION ALL SELECT r.run_id FROM runs r JOIN tree t ON r.parent_run_id = t.run_id) "
            "SELECT m.input_tokens, m.output_tokens, m.cost_usd FROM model_calls m "
            "WHERE m.run_id IN (SELECT run_id FROM tree)",
            [thread_id],
        )
        return {
            "calls": len(rows),
            "input_tokens": sum(int(r["input_tokens"] or 0) for r in rows),
            "output_tokens": sum(int(r["output_tokens"] or 0) for r in rows),
            "cost_usd": math.fsum(float(r["cost_usd"] or 0.0) for r in rows),
        }
