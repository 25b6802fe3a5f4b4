"""Named reads of the harness tables, for the harness, evals, flows and tests: callers ask for
what they need by name instead of writing SQL against tables they do not own.

`Queries` is mixed into `Store`; `Reader` gives the same queries over a read-only connection
(`read_store`), for readers of a store that runs may be writing.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Self

from harness.messages import Message, Usage
from harness.store.connection import read_only
from harness.store.rows import row_to_message
from harness.store.schema import FULL_REF_VERSION

if TYPE_CHECKING:
    import duckdb

# A run and every run under it, at any depth (its subagents' runs): `?` is the run id.
_TREE = """
WITH RECURSIVE tree(run_id) AS (
    SELECT run_id FROM runs WHERE run_id = ?
    UNION ALL
    SELECT r.run_id FROM runs r JOIN tree t ON r.parent_run_id = t.run_id
)
"""
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


class Queries:
    """The named reads; the class they are mixed into provides `query` and `scalar`."""

    if TYPE_CHECKING:

        def query(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]: ...

        def scalar(self, sql: str, params: Sequence[Any] | None = None) -> Any: ...

    # -- runs ----------------------------------------------------------------------------

    def run(self, run_id: str) -> dict[str, Any] | None:
        rows = self.query("SELECT * FROM runs WHERE run_id = ?", [run_id])
        return rows[0] if rows else None

    def runs(self) -> list[dict[str, Any]]:
        """Every run row, oldest first."""
        return self.query("SELECT * FROM runs ORDER BY started_at, run_id")

    def thread_runs(self, thread_id: str) -> list[dict[str, Any]]:
        """The top-level runs of a thread (not its subagents'), oldest first."""
        return self.query(
            "SELECT run_id, agent, model, strategy, status, started_at, config FROM runs "
            "WHERE thread_id = ? AND parent_run_id IS NULL ORDER BY started_at",
            [thread_id],
        )

    def first_run_of_thread(self, thread_id: str) -> dict[str, Any] | None:
        """The first run on a thread: its first top-level run, else (a subagent's own
        thread) its first subagent run."""
        rows = self.query(
            "SELECT * FROM runs WHERE thread_id = ? "
            "ORDER BY parent_run_id IS NOT NULL, started_at LIMIT 1",
            [thread_id],
        )
        return rows[0] if rows else None

    def subagent_runs(self, run_ids: Sequence[str]) -> list[tuple[str, str]]:
        """(subagent run, the run that started it) under `run_ids`, at any depth, in start
        order."""
        if not run_ids:
            return []
        marks = ", ".join("?" for _ in run_ids)
        rows = self.query(
            "WITH RECURSIVE tree(run_id, parent_run_id, started_at) AS ("
            f"SELECT run_id, parent_run_id, started_at FROM runs WHERE parent_run_id IN ({marks}) "
            "UNION ALL SELECT r.run_id, r.parent_run_id, r.started_at FROM runs r "
            "JOIN tree t ON r.parent_run_id = t.run_id) "
            "SELECT run_id, parent_run_id FROM tree ORDER BY started_at",
            list(run_ids),
        )
        return [(str(r["run_id"]), str(r["parent_run_id"])) for r in rows]

    def child_runs(self, parent_run_ids: Sequence[str]) -> list[dict[str, Any]]:
        """The subagent runs started directly by any of `parent_run_ids`, oldest first."""
        if not parent_run_ids:
            return []
        marks = ",".join("?" * len(parent_run_ids))
        return self.query(
            f"SELECT run_id, thread_id, agent, config FROM runs WHERE parent_run_id IN ({marks}) "
            "ORDER BY started_at",
            list(parent_run_ids),
        )

    def answered_tool_calls(self, run_id: str) -> set[str]:
        """The tool call ids whose results `run_id` has committed."""
        rows = self.query(
            "SELECT tool_call_id FROM messages WHERE run_id = ? AND role = 'tool'", [run_id]
        )
        return {str(r["tool_call_id"]) for r in rows}

    def run_statuses(self, run_ids: Sequence[str]) -> dict[str, str]:
        """Run id -> status of those of `run_ids` the store has."""
        rows = self.query(
            "SELECT run_id, status FROM runs WHERE list_contains(?, run_id)", [list(run_ids)]
        )
        return {r["run_id"]: r["status"] for r in rows}

    def runs_with_status(self, statuses: Sequence[str]) -> list[str]:
        """The ids of every run whose status is one of `statuses`."""
        rows = self.query(
            "SELECT run_id FROM runs WHERE list_contains(?, status) ORDER BY run_id",
            [list(statuses)],
        )
        return [r["run_id"] for r in rows]

    def subagent_overflows(self) -> int:
        """How many subagent runs failed on a context overflow."""
        return int(
            self.scalar(
                "SELECT count(*) FROM runs WHERE parent_run_id IS NOT NULL "
                "AND error LIKE 'ContextOverflowError%'"
            )
            or 0
        )

    def subagent_totals(self, run_id: str) -> dict[str, Any]:
        """Runs, tokens and cost of every run under `run_id` (at any depth), itself excluded."""
        return self.query(
            _TREE + "SELECT count(*) AS runs, coalesce(sum(input_tokens), 0) AS input_tokens, "
            "coalesce(sum(output_tokens), 0) AS output_tokens, "
            "coalesce(sum(cost_usd), 0) AS cost_usd "
            "FROM runs WHERE run_id IN (SELECT run_id FROM tree) AND run_id <> ?",
            [run_id, run_id],
        )[0]

    # -- messages ------------------------------------------------------------------------

    def next_seq(self, thread_id: str) -> int:
        """The transcript position the thread's next message takes."""
        last = self.scalar(
            "SELECT coalesce(max(seq), 0) FROM messages WHERE thread_id = ?", [thread_id]
        )
        return int(last) + 1

    def transcript(self, thread_id: str, run_id: str | None = None) -> list[Message]:
        """Every message ever appended to a thread (or one run of it), in order; an offloaded
        original is read back into `full_content` (see `full_texts`)."""
        messages = self._transcript(thread_id, run_id)
        texts = self.full_texts([m.full_ref for m in messages if m.full_ref is not None])
        return [
            replace(m, full_content=texts.get(m.full_ref))
            if m.full_ref is not None and m.full_content is None
            else m
            for m in messages
        ]

    def _transcript(self, thread_id: str, run_id: str | None = None) -> list[Message]:
        sql = "SELECT * FROM messages WHERE thread_id = ?"
        params: list[Any] = [thread_id]
        if run_id:
            sql += " AND run_id = ?"
            params.append(run_id)
        return [row_to_message(r) for r in self.query(sql + " ORDER BY seq", params)]

    def full_texts(self, refs: Sequence[str]) -> dict[str, str]:
        """The offloaded originals messages name (`Message.full_ref`), by ref: each is a blob
        of `file_chunks`, kept while a message names it even once its file is gone."""
        if not refs:
            return {}
        rows = self.query(
            "SELECT blob_id, string_agg(decode(content), '' ORDER BY chunk) AS text "
            "FROM file_chunks WHERE list_contains(?::VARCHAR[], blob_id) GROUP BY blob_id",
            [sorted(set(refs))],
        )
        return {r["blob_id"]: r["text"] for r in rows}

    def full_text(self, message: Message) -> str:
        """The whole text of `message`: its offloaded original if it has one, else its
        content."""
        if message.full_content is not None:
            return message.full_content
        if message.full_ref is not None:
            text = self.full_texts([message.full_ref]).get(message.full_ref)
            if text is not None:
                return text
        return message.content

    def load_window(self, thread_id: str) -> list[Message]:
        """What the model saw last on this thread: the latest window snapshot plus every
        message appended after it, as the run held them (an offloaded original stays a
        `full_ref`, not read back)."""
        snap = self.query(
            "SELECT at_seq, message_ids FROM windows WHERE thread_id = ? "
            "ORDER BY at_seq DESC, created_at DESC LIMIT 1",
            [thread_id],
        )
        if not snap:
            return self._transcript(thread_id)
        at_seq, ids = snap[0]["at_seq"], json.loads(snap[0]["message_ids"])
        by_id = {
            r["message_id"]: row_to_message(r)
            for r in self.query(
                "SELECT * FROM messages WHERE thread_id = ? AND list_contains(?, message_id)",
                [thread_id, ids],
            )
        }
        later = self.query(
            "SELECT * FROM messages WHERE thread_id = ? AND seq > ? ORDER BY seq",
            [thread_id, at_seq],
        )
        return [by_id[i] for i in ids if i in by_id] + [row_to_message(r) for r in later]

    def messages_of(
        self, thread_id: str | None = None, *, run_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Message rows (of a thread, a run, or all), in transcript order."""
        filters = {"thread_id": thread_id, "run_id": run_id}
        used = {k: v for k, v in filters.items() if v is not None}
        where = " AND ".join(f"{k} = ?" for k in used)
        return self.query(
            "SELECT * FROM messages " + (f"WHERE {where} " if where else "") + "ORDER BY seq",
            list(used.values()),
        )

    def thread_messages(self, thread_id: str) -> list[dict[str, Any]]:
        """The thread's messages as rows, in order, without the synthetic ones compaction
        added (summaries, placeholders): `text` is the whole content, before any offloading;
        `tool_calls` the stored JSON."""
        if self._names_full_refs():
            return self.query(
                "SELECT run_id, seq, message_id, role, text, tool_calls, tool_call_id, name "
                "FROM message_texts WHERE thread_id = ? AND kind = 'message' ORDER BY seq",
                [thread_id],
            )
        return self.query(  # a store from before schema v5, read without migrating it
            "SELECT run_id, seq, message_id, role, coalesce(full_content, content) AS text, "
            "tool_calls, tool_call_id, name FROM messages WHERE thread_id = ? "
            "AND kind = 'message' ORDER BY seq",
            [thread_id],
        )

    def _names_full_refs(self) -> bool:
        """Whether this store's schema has `messages.full_ref` and `message_texts`: a `Store`
        always (it migrates on opening), a `Reader` of an older file not."""
        return True

    def committed_steps(self, run_id: str) -> tuple[int, int]:
        """(the last step, the number of messages) the store holds of a run."""
        (row,) = self.query(
            "SELECT coalesce(max(step), 0) AS steps, count(*) AS n FROM messages WHERE run_id = ?",
            [run_id],
        )
        return int(row["steps"]), int(row["n"])

    def last_message(self, run_id: str) -> Message | None:
        """The last message a run appended, if any."""
        rows = self.query(
            "SELECT * FROM messages WHERE run_id = ? ORDER BY seq DESC LIMIT 1", [run_id]
        )
        return row_to_message(rows[0]) if rows else None

    def all_tool_calls(self) -> list[dict[str, Any]]:
        """Every tool call any message in the store made (`id`, `name`, `arguments`)."""
        rows = self.query("SELECT tool_calls FROM messages WHERE tool_calls IS NOT NULL")
        return [c for row in rows for c in json.loads(row["tool_calls"] or "[]")]

    # -- model calls ---------------------------------------------------------------------

    def run_usage(self, run_id: str) -> tuple[Usage, int]:
        """What a run's model calls used, summed, and the largest context one of them sent."""
        (row,) = self.query(
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

    def usage_by_role(self) -> dict[str, dict[str, int | float]]:
        """Tokens and cost of every model call in the store, by role (`main`, `subagent`,
        `summarizer`). Costs are summed exactly (`math.fsum`), so the total never depends
        on the order rows come back in."""
        usage: dict[str, dict[str, int | float]] = {
            r.pop("role"): r for r in self.query(_USAGE_BY_ROLE)
        }
        costs: dict[str, list[float]] = {}
        for row in self.query(_COSTS):
            costs.setdefault(row["role"], []).append(row["cost_usd"] or 0.0)
        for role, values in costs.items():
            usage[role]["cost_usd"] = math.fsum(values)
        return usage

    def thread_usage(self, thread_id: str) -> dict[str, int | float]:
        """Model calls, input and output tokens and cost (`calls`, `input_tokens`,
        `output_tokens`, `cost_usd`) of every run on `thread_id` and the runs under them."""
        rows = self.query(
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

    def model_calls(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """Model call rows (of one run, or all), in the order they were made."""
        where, params = ("WHERE run_id = ? ", [run_id]) if run_id is not None else ("", [])
        return self.query(f"SELECT * FROM model_calls {where}ORDER BY created_at", params)

    # -- events --------------------------------------------------------------------------

    def events_of(
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
        return self.query(
            "SELECT * FROM events " + (f"WHERE {where} " if where else "") + "ORDER BY created_at",
            list(used.values()),
        )

    def count_events(self, action_like: str) -> int:
        """How many events have an action matching the SQL LIKE pattern `action_like`."""
        return int(
            self.scalar("SELECT count(*) FROM events WHERE action LIKE ?", [action_like]) or 0
        )

    def tree_event_totals(self, run_id: str) -> list[dict[str, Any]]:
        """Per middleware and action, over `run_id` and the runs under it: how many times
        (`times`) and the tokens before and after (`before`, `after`), summed."""
        return self.query(
            _TREE + "SELECT middleware, action, count(*) AS times, "
            "coalesce(sum(tokens_before), 0) AS before, coalesce(sum(tokens_after), 0) AS after "
            "FROM events WHERE run_id IN (SELECT run_id FROM tree) "
            "GROUP BY ALL ORDER BY middleware, action",
            [run_id],
        )

    # -- files, summaries, memory --------------------------------------------------------

    def tree_files(self, run_id: str) -> list[dict[str, Any]]:
        """`path`, `size` and `namespace` of the files `run_id` and the runs under it wrote."""
        return self.query(
            _TREE + "SELECT path, size, namespace FROM files "
            "WHERE run_id IN (SELECT run_id FROM tree) ORDER BY path",
            [run_id],
        )

    def files_of(self, prefix: str = "/") -> list[dict[str, Any]]:
        """The rows of the stored files whose path starts with `prefix`, in every namespace,
        by namespace and path (`content` is inline only: a chunked file has a `blob_id`)."""
        return self.query(
            "SELECT * FROM files WHERE starts_with(path, ?) ORDER BY namespace, path", [prefix]
        )

    def shared_text_files(self, prefix: str) -> list[dict[str, Any]]:
        """The shared text files under `prefix` (`path`, inline `content`, `blob_id`)."""
        return self.query(
            "SELECT path, content, blob_id FROM files WHERE namespace = 'shared' "
            "AND starts_with(path, ?) AND is_text ORDER BY path",
            [prefix],
        )

    def thread_file(self, thread_id: str, path: str) -> dict[str, Any] | None:
        """The row (`content`, `is_text`, `blob_id`) of the file a thread sees at `path`."""
        rows = self.query(
            "SELECT content, is_text, blob_id FROM files WHERE path = ? "
            "AND namespace IN (?, 'shared')",
            [path, f"thread:{thread_id}"],
        )
        return rows[0] if rows else None

    def summaries(self) -> list[dict[str, Any]]:
        """Every summary row, in the order they were written."""
        return self.query("SELECT * FROM summaries ORDER BY created_at, cycle")

    def memory_at(self, when: datetime) -> list[dict[str, str]]:
        """Memory files (`path`, `content`) as they stood just before `when`."""
        rows = self.query(
            "SELECT path, content, deleted FROM memory m WHERE created_at < ? AND version = "
            "(SELECT max(version) FROM memory x WHERE x.path = m.path AND x.created_at < ?) "
            "ORDER BY path",
            [when, when],
        )
        return [{"path": r["path"], "content": r["content"]} for r in rows if not r["deleted"]]

    def memory_versions(self, path: str | None = None) -> list[dict[str, Any]]:
        """Every stored version of the memory files (or of one path), oldest first."""
        where, params = ("WHERE path = ? ", [path]) if path is not None else ("", [])
        return self.query(f"SELECT * FROM memory {where}ORDER BY version, path", params)


class Reader(Queries):
    """The named queries over a read-only connection (see `read_store`)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self._version: int | None = None

    def _names_full_refs(self) -> bool:
        if self._version is None:
            self._version = int(self.scalar("SELECT max(version) FROM schema_version") or 0)
        return self._version >= FULL_REF_VERSION

    def query(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        cur = self.con.execute(sql, list(params or []))
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def scalar(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        row = self.con.execute(sql, list(params or [])).fetchone()
        return row[0] if row else None

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_store(path: str | os.PathLike[str], *, timeout: float = 30.0) -> Reader:
    """A `Reader` of an existing store (see `read_only`); close it when done."""
    return Reader(read_only(path, timeout=timeout))
