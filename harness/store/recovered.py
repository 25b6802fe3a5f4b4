"""Runs a dead process left `running`: once its logged steps are written by the next store
to open the file, they are marked `interrupted` with the steps and usage now stored."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.store.pending import Rows
from harness.store.schema import now

if TYPE_CHECKING:
    import duckdb


def end_recovered_runs(con: duckdb.DuckDBPyConnection, rows: Rows) -> None:
    """Mark the runs a dead process's `write_log` held rows of, still `running`, as
    `interrupted`, with the steps and usage now stored: that process can no longer finish
    them (a held store's file is its own while it lives)."""
    found = con.execute(
        "SELECT table_name, column_index FROM duckdb_columns() WHERE column_name = 'run_id' "
        "AND database_name = current_database() AND schema_name = 'main'"
    ).fetchall()
    where = {str(table): int(index) - 1 for table, index in found}
    run_ids = sorted(
        {
            str(row[at])
            for table, table_rows in rows.items()
            if (at := where.get(table)) is not None
            for row in table_rows
            if len(row) > at and row[at] is not None  # a batch this code did not write
        }
    )
    if not run_ids:
        return
    con.execute(
        "UPDATE runs SET status = 'interrupted', ended_at = ?, error = ?, "
        "steps = (SELECT coalesce(max(m.step), 0) FROM messages m WHERE m.run_id = runs.run_id), "
        "input_tokens = u.input_tokens, output_tokens = u.output_tokens, "
        "cached_tokens = u.cached_tokens, cache_write_tokens = u.cache_write_tokens, "
        "cost_usd = u.cost_usd "
        "FROM (SELECT r.run_id AS id, coalesce(sum(c.input_tokens), 0) AS input_tokens, "
        "  coalesce(sum(c.output_tokens), 0) AS output_tokens, "
        "  coalesce(sum(c.cached_tokens), 0) AS cached_tokens, "
        "  coalesce(sum(c.cache_write_tokens), 0) AS cache_write_tokens, "
        "  coalesce(sum(c.cost_usd), 0) AS cost_usd "
        "  FROM runs r LEFT JOIN model_calls c ON c.run_id = r.run_id "
        "  WHERE list_contains(?, r.run_id) GROUP BY r.run_id) u "
        "WHERE runs.run_id = u.id AND runs.status = 'running'",
        [now(), "the process running it died; the steps it had logged were written by the "
         "next store to open the file", run_ids],
    )  # fmt: skip
