"""The `runs` table: one row a run (a subagent's included), from its start to how it ended."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Unpack

from harness.messages import Usage
from harness.store.rows import RunStart, config_json, storable_text
from harness.store.schema import RUN_TREE, now

if TYPE_CHECKING:
    from harness.store.sql import Sql


class Runs:
    """Runs and the runs under them."""

    def __init__(self, sql: Sql) -> None:
        self._sql = sql

    # -- reads ---------------------------------------------------------------------------

    def get(self, run_id: str) -> dict[str, Any] | None:
        rows = self._sql.query("SELECT * FROM runs WHERE run_id = ?", [run_id])
        return rows[0] if rows else None

    def all(self) -> list[dict[str, Any]]:
        """Every run row, oldest first."""
        return self._sql.query("SELECT * FROM runs ORDER BY started_at, run_id")

    def of_thread(self, thread_id: str) -> list[dict[str, Any]]:
        """The top-level runs of a thread (not its subagents'), oldest first."""
        return self._sql.query(
            "SELECT run_id, agent, model, strategy, status, started_at, config FROM runs "
            "WHERE thread_id = ? AND parent_run_id IS NULL ORDER BY started_at",
            [thread_id],
        )

    def first_of_thread(self, thread_id: str) -> dict[str, Any] | None:
        """The first run on a thread: its first top-level run, else (a subagent's own
        thread) its first subagent run."""
        rows = self._sql.query(
            "SELECT * FROM runs WHERE thread_id = ? "
            "ORDER BY parent_run_id IS NOT NULL, started_at LIMIT 1",
            [thread_id],
        )
        return rows[0] if rows else None

    def thread_in_use(self, thread_id: str) -> bool:
        """True if any run (top-level or subagent) is on `thread_id`."""
        return bool(self._sql.scalar("SELECT count(*) FROM runs WHERE thread_id = ?", [thread_id]))

    def descendants(self, run_ids: Sequence[str]) -> list[tuple[str, str]]:
        """(subagent run, the run that started it) under `run_ids`, at any depth, in start
        order."""
        if not run_ids:
            return []
        marks = ", ".join("?" for _ in run_ids)
        rows = self._sql.query(
            "WITH RECURSIVE tree(run_id, parent_run_id, started_at) AS ("
            f"SELECT run_id, parent_run_id, started_at FROM runs WHERE parent_run_id IN ({marks}) "
            "UNION ALL SELECT r.run_id, r.parent_run_id, r.started_at FROM runs r "
            "JOIN tree t ON r.parent_run_id = t.run_id) "
            "SELECT run_id, parent_run_id FROM tree ORDER BY started_at",
            list(run_ids),
        )
        return [(str(r["run_id"]), str(r["parent_run_id"])) for r in rows]

    def children(self, parent_run_ids: Sequence[str]) -> list[dict[str, Any]]:
        """The subagent runs started directly by any of `parent_run_ids`, oldest first."""
        if not parent_run_ids:
            return []
        marks = ",".join("?" * len(parent_run_ids))
        return self._sql.query(
            f"SELECT run_id, thread_id, agent, config FROM runs WHERE parent_run_id IN ({marks}) "
            "ORDER BY started_at",
            list(parent_run_ids),
        )

    def statuses(self, run_ids: Sequence[str]) -> dict[str, str]:
        """Run id -> status of those of `run_ids` the store has."""
        rows = self._sql.query(
            "SELECT run_id, status FROM runs WHERE list_contains(?, run_id)", [list(run_ids)]
        )
        return {r["run_id"]: r["status"] for r in rows}

    def with_status(self, statuses: Sequence[str]) -> list[str]:
        """The ids of every run whose status is one of `statuses`."""
        rows = self._sql.query(
            "SELECT run_id FROM runs WHERE list_contains(?, status) ORDER BY run_id",
            [list(statuses)],
        )
        return [r["run_id"] for r in rows]

    def subagent_overflows(self) -> int:
        """How many subagent runs failed on a context overflow."""
        return int(
            self._sql.scalar(
                "SELECT count(*) FROM runs WHERE parent_run_id IS NOT NULL "
                "AND error LIKE 'ContextOverflowError%'"
            )
            or 0
        )

    def subagent_totals(self, run_id: str) -> dict[str, Any]:
        """Runs, tokens and cost of every run under `run_id` (at any depth), itself excluded."""
        return self._sql.query(
            RUN_TREE + "SELECT count(*) AS runs, coalesce(sum(input_tokens), 0) AS input_tokens, "
            "coalesce(sum(output_tokens), 0) AS output_tokens, "
            "coalesce(sum(cost_usd), 0) AS cost_usd "
            "FROM runs WHERE run_id IN (SELECT run_id FROM tree) AND run_id <> ?",
            [run_id, run_id],
        )[0]

    # -- writes --------------------------------------------------------------------------

    def start(self, **run: Unpack[RunStart]) -> None:
        self._sql.execute(
            "INSERT INTO runs (run_id, thread_id, parent_run_id, parent_step, agent, model, "
            "strategy, status, started_at, config) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?)",
            [run["run_id"], run["thread_id"], run.get("parent_run_id"), run.get("parent_step"),
             run["agent"], run["model"], run["strategy"], now(),
             config_json(run.get("config"))],
        )  # fmt: skip

    def mark_ended(
        self, run_id: str, *, status: str, steps: int, usage: Usage, error: str | None
    ) -> None:
        """Record how a run ended (`Store.finish_run` writes its pending rows first)."""
        self._sql.execute(
            "UPDATE runs SET status = ?, ended_at = ?, steps = ?, input_tokens = ?, "
            "output_tokens = ?, cached_tokens = ?, cache_write_tokens = ?, cost_usd = ?, "
            "error = ? WHERE run_id = ?",
            [status, now(), steps, usage.input_tokens, usage.output_tokens, usage.cached_tokens,
             usage.cache_write_tokens, usage.cost_usd,
             storable_text(error)[0] if error is not None else None, run_id],
        )  # fmt: skip

    def set_started(self, run_id: str, started_at: datetime) -> None:
        """Give a run back the start time it had (a resumed run is written anew)."""
        self._sql.execute("UPDATE runs SET started_at = ? WHERE run_id = ?", [started_at, run_id])

    def release(self, run_id: str) -> None:
        """Delete a run's `runs` row, so that it can start again under the same id."""
        self._sql.execute("DELETE FROM runs WHERE run_id = ?", [run_id])

    def discard(self, run_ids: Sequence[str]) -> list[str]:
        """Delete the records of these runs and of every run below them (messages, windows,
        model calls, events, summaries, the runs rows); the files and memory versions their
        tools wrote stay. For runs that are started again from the same recorded replies, so
        that nothing is counted twice. Returns every id deleted."""
        if not run_ids:
            return []
        with self._sql.together() as sql:
            rows = sql.query(
                "WITH RECURSIVE below(run_id) AS ("
                "  SELECT unnest(?::VARCHAR[])"
                "  UNION SELECT r.run_id FROM runs r JOIN below b ON r.parent_run_id = b.run_id) "
                "SELECT run_id FROM below",
                [list(run_ids)],
            )
            ids = [str(r["run_id"]) for r in rows]
            for table in ("messages", "windows", "model_calls", "events", "summaries", "runs"):
                sql.execute(f"DELETE FROM {table} WHERE list_contains(?, run_id)", [ids])
        return ids
