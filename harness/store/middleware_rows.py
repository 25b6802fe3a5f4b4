"""Named reads and writes the middleware make of the harness tables: the summaries' cycle
counter, the messages a history section covers, the offload retention's expired files, the
skills sync's stored digests, memory versions, and a free thread id for a subagent.

`MiddlewareRows` is mixed into `Store`. The memory functions take the caller's connection: a
memory version is written in the same transaction as the file change it records.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from harness.store.schema import now

if TYPE_CHECKING:
    import duckdb

# Files a middleware wrote (matched through its events with one of two actions) for runs that
# ended before a cutoff. A file rewritten later by another run carries that run's id and is kept.
_EXPIRED_FILES = """
SELECT DISTINCT f.namespace, f.path, f.size
FROM files f
JOIN events e ON e.run_id = f.run_id AND json_extract_string(e.detail, '$.path') = f.path
JOIN runs r ON r.run_id = f.run_id
WHERE e.middleware = ? AND e.action IN (?, ?)
  AND r.ended_at IS NOT NULL AND r.ended_at < ?
ORDER BY f.path
"""


class MiddlewareRows:
    """The middleware's named reads; the class they are mixed into provides `query` and
    `scalar`."""

    if TYPE_CHECKING:

        def query(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]: ...

        def scalar(self, sql: str, params: Sequence[Any] | None = None) -> Any: ...

    def thread_in_use(self, thread_id: str) -> bool:
        """True if any run (top-level or subagent) is on `thread_id`."""
        return bool(self.scalar("SELECT count(*) FROM runs WHERE thread_id = ?", [thread_id]))

    def last_summary_cycle(self, thread_id: str) -> int:
        """The highest cycle any summary of the thread has, 0 when it has none."""
        return int(
            self.scalar(
                "SELECT coalesce(max(cycle), 0) FROM summaries WHERE thread_id = ?", [thread_id]
            )
        )

    def seq_range(
        self, thread_id: str, message_ids: Sequence[str]
    ) -> tuple[int | None, int | None]:
        """(lowest, highest) transcript position of the thread's messages among
        `message_ids`; (None, None) when none of them is stored."""
        rows = self.query(
            "SELECT min(seq) AS lo, max(seq) AS hi FROM messages "
            "WHERE thread_id = ? AND list_contains(?, message_id)",
            [thread_id, list(message_ids)],
        )
        return (rows[0]["lo"], rows[0]["hi"]) if rows else (None, None)

    def expired_files(
        self, middleware: str, actions: tuple[str, str], ended_before: datetime
    ) -> list[dict[str, Any]]:
        """`namespace`, `path` and `size` of the files `middleware` wrote (events with one of
        `actions` naming the path) in runs that ended before `ended_before`, by path."""
        return self.query(_EXPIRED_FILES, [middleware, *actions, ended_before])

    def file_digests(self, namespace: str, prefix: str) -> list[dict[str, Any]]:
        """`path`, `size`, `blob_id` and the SHA-256 hex `digest` of the inline content of
        every file of `namespace` under `prefix` (a chunked file's inline content is empty)."""
        return self.query(
            "SELECT path, size, blob_id, sha256(content) AS digest FROM files "
            "WHERE namespace = ? AND starts_with(path, ?)",
            [namespace, prefix],
        )


def latest_memory(con: duckdb.DuckDBPyConnection, path: str) -> tuple[int, str, bool] | None:
    """(version, content, deleted) of the newest stored version of memory file `path`, or
    None when it has none."""
    row = con.execute(
        "SELECT version, content, deleted FROM memory WHERE path = ? ORDER BY version DESC LIMIT 1",
        [path],
    ).fetchone()
    return (row[0], row[1], row[2]) if row else None


def insert_memory_version(
    con: duckdb.DuckDBPyConnection,
    path: str,
    version: int,
    content: str | None,
    run_id: str | None,
    author: str,
) -> None:
    """Store `version` of memory file `path`, in the caller's transaction; `content` None
    records a deletion (empty content, `deleted`)."""
    con.execute(
        "INSERT INTO memory (path, version, content, run_id, author, created_at, deleted) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [path, version, content or "", run_id, author, now(), content is None],
    )
