"""Named writes of the harness tables: a step's batch of rows, and the life of a `runs` row."""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from harness.errors import StoreError
from harness.messages import Usage
from harness.store.pending import Rows
from harness.store.rows import StepBatch, storable_json, storable_text
from harness.store.schema import now

if TYPE_CHECKING:
    import duckdb


class Writes:
    """The named writes; the class they are mixed into provides `execute` and `transaction`."""

    if TYPE_CHECKING:

        def execute(self, sql: str, params: Sequence[Any] | None = None) -> None: ...

        def write_rows(self, rows: Rows) -> None: ...

        def flush(self) -> None: ...

        def take_dropped(self) -> StoreError | None: ...

        def transaction(self) -> AbstractContextManager[duckdb.DuckDBPyConnection]: ...

    def write(self, batch: StepBatch) -> None:
        """Hand over a step's rows, all tables, to be stored together (`write_rows`)."""
        self.write_rows(batch.rows)

    # -- runs ----------------------------------------------------------------------------

    def start_run(
        self,
        *,
        run_id: str,
        thread_id: str,
        agent: str,
        model: str,
        strategy: str | None,
        parent_run_id: str | None = None,
        parent_step: int | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        self.execute(
            "INSERT INTO runs (run_id, thread_id, parent_run_id, parent_step, agent, model, "
            "strategy, status, started_at, config) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?)",
            [run_id, thread_id, parent_run_id, parent_step, agent, model, strategy, now(),
             storable_json(json.dumps(config or {}, default=str))[0]],
        )  # fmt: skip

    def finish_run(
        self,
        run_id: str,
        *,
        status: str,
        steps: int,
        usage: Usage,
        error: str | None = None,
    ) -> None:
        """Record how a run ended. Rows written behind go to their tables first; if some
        cannot, the run is still marked, and then the `StoreError` naming them is raised."""
        try:
            self.flush()
        except StoreError as exc:
            unwritten: StoreError | None = exc
        else:
            unwritten = self.take_dropped()
        self.execute(
            "UPDATE runs SET status = ?, ended_at = ?, steps = ?, input_tokens = ?, "
            "output_tokens = ?, cached_tokens = ?, cache_write_tokens = ?, cost_usd = ?, "
            "error = ? WHERE run_id = ?",
            [status, now(), steps, usage.input_tokens, usage.output_tokens, usage.cached_tokens,
             usage.cache_write_tokens, usage.cost_usd,
             storable_text(error)[0] if error is not None else None, run_id],
        )  # fmt: skip
        if unwritten is not None:
            raise unwritten

    def set_run_started(self, run_id: str, started_at: datetime) -> None:
        """Give a run back the start time it had (a resumed run is written anew)."""
        self.execute("UPDATE runs SET started_at = ? WHERE run_id = ?", [started_at, run_id])

    def release_run(self, run_id: str) -> None:
        """Delete a run's `runs` row, so that it can start again under the same id."""
        self.execute("DELETE FROM runs WHERE run_id = ?", [run_id])

    def discard_runs(self, run_ids: Sequence[str]) -> list[str]:
        """Delete the records of these runs and of every run below them (messages, windows,
        model calls, events, summaries, the runs rows); the files and memory versions their
        tools wrote stay. For runs that are started again from the same recorded replies, so
        that nothing is counted twice. Returns every id deleted."""
        if not run_ids:
            return []
        with self.transaction() as con:
            rows = con.execute(
                "WITH RECURSIVE below(run_id) AS ("
                "  SELECT unnest(?::VARCHAR[])"
                "  UNION SELECT r.run_id FROM runs r JOIN below b ON r.parent_run_id = b.run_id) "
                "SELECT run_id FROM below",
                [list(run_ids)],
            ).fetchall()
            ids = [str(r[0]) for r in rows]
            for table in ("messages", "windows", "model_calls", "events", "summaries", "runs"):
                con.execute(f"DELETE FROM {table} WHERE list_contains(?, run_id)", [ids])
        return ids


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
