"""The schema of the harness tables: the migrations that build it, the step tables' columns,
and the version a store is at. Only `harness.store` writes SQL against these tables."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from harness.errors import StoreError

if TYPE_CHECKING:
    import duckdb

# A run and every run under it, at any depth (its subagents' runs): `?` is the run id.
RUN_TREE = """
WITH RECURSIVE tree(run_id) AS (
    SELECT run_id FROM runs WHERE run_id = ?
    UNION ALL
    SELECT r.run_id FROM runs r JOIN tree t ON r.parent_run_id = t.run_id
)
"""

MIGRATIONS: list[str] = [
    # 1: the core tables
    """
    CREATE TABLE runs (
        run_id VARCHAR PRIMARY KEY, thread_id VARCHAR NOT NULL, parent_run_id VARCHAR,
        parent_step INTEGER, agent VARCHAR, model VARCHAR, strategy VARCHAR,
        status VARCHAR NOT NULL, started_at TIMESTAMP NOT NULL, ended_at TIMESTAMP,
        steps INTEGER DEFAULT 0, input_tokens BIGINT DEFAULT 0, output_tokens BIGINT DEFAULT 0,
        cached_tokens BIGINT DEFAULT 0, cache_write_tokens BIGINT DEFAULT 0,
        cost_usd DOUBLE DEFAULT 0, error VARCHAR, config JSON
    );
    CREATE TABLE messages (
        thread_id VARCHAR NOT NULL, seq BIGINT NOT NULL, run_id VARCHAR NOT NULL,
        step INTEGER NOT NULL, message_id VARCHAR NOT NULL, role VARCHAR NOT NULL,
        kind VARCHAR NOT NULL, content VARCHAR NOT NULL, full_content VARCHAR,
        tool_calls JSON, tool_call_id VARCHAR, name VARCHAR, is_error BOOLEAN,
        tokens INTEGER, meta JSON, created_at TIMESTAMP NOT NULL
    );
    CREATE TABLE windows (
        thread_id VARCHAR NOT NULL, run_id VARCHAR NOT NULL, step INTEGER NOT NULL,
        at_seq BIGINT NOT NULL, message_ids JSON NOT NULL, reason VARCHAR,
        created_at TIMESTAMP NOT NULL
    );
    CREATE TABLE model_calls (
        run_id VARCHAR NOT NULL, step INTEGER NOT NULL, model VARCHAR, input_tokens BIGINT,
        output_tokens BIGINT, cached_tokens BIGINT, cache_write_tokens BIGINT,
        context_tokens BIGINT, latency_ms DOUBLE, cost_usd DOUBLE, stop_reason VARCHAR,
        encoding VARCHAR, created_at TIMESTAMP NOT NULL
    );
    CREATE TABLE files (
        namespace VARCHAR NOT NULL, path VARCHAR NOT NULL, content BLOB NOT NULL,
        is_text BOOLEAN NOT NULL, size BIGINT NOT NULL, run_id VARCHAR,
        created_at TIMESTAMP NOT NULL, modified_at TIMESTAMP NOT NULL,
        PRIMARY KEY (namespace, path)
    );
    CREATE TABLE events (
        run_id VARCHAR NOT NULL, step INTEGER NOT NULL, middleware VARCHAR NOT NULL,
        hook VARCHAR NOT NULL, action VARCHAR NOT NULL, tokens_before BIGINT,
        tokens_after BIGINT, detail JSON, ms DOUBLE, task_run_id VARCHAR,
        created_at TIMESTAMP NOT NULL
    );
    CREATE TABLE summaries (
        run_id VARCHAR NOT NULL, thread_id VARCHAR NOT NULL, cycle INTEGER NOT NULL,
        step INTEGER NOT NULL, first_seq BIGINT, last_seq BIGINT, message_ids JSON,
        tokens_before BIGINT, tokens_after BIGINT, summary_tokens BIGINT, model VARCHAR,
        history_path VARCHAR, summary VARCHAR, created_at TIMESTAMP NOT NULL
    );
    CREATE TABLE memory (
        path VARCHAR NOT NULL, version INTEGER NOT NULL, content VARCHAR NOT NULL,
        run_id VARCHAR, author VARCHAR, created_at TIMESTAMP NOT NULL,
        PRIMARY KEY (path, version)
    );
    """,
    # 2: durable paths. A memory deletion is a version too (`deleted`, empty content). Files a
    # model once wrote at /skills or /memories sat in the shared namespace and blocked every
    # durable path below them: they move to the namespace of the thread that wrote them.
    """
    ALTER TABLE memory ADD COLUMN deleted BOOLEAN DEFAULT false;
    UPDATE files SET namespace = coalesce(
        (SELECT 'thread:' || r.thread_id FROM runs r WHERE r.run_id = files.run_id),
        'thread:unknown')
    WHERE namespace = 'shared'
        AND NOT (starts_with(path, '/memories/') OR starts_with(path, '/skills/'));
    """,
    # 3: large files in chunks with a line index, so a page read fetches only its chunks
    """
    CREATE TABLE file_chunks (
        blob_id VARCHAR NOT NULL, chunk INTEGER NOT NULL, newlines_before BIGINT NOT NULL,
        newlines INTEGER NOT NULL, content BLOB NOT NULL, PRIMARY KEY (blob_id, chunk)
    );
    ALTER TABLE files ADD COLUMN blob_id VARCHAR;
    ALTER TABLE files ADD COLUMN chars BIGINT;
    ALTER TABLE files ADD COLUMN lines BIGINT;
    """,
    # 4: why an event has no task run id (it was written outside any step task)
    """
    ALTER TABLE events ADD COLUMN task_reason VARCHAR;
    """,
    # 5: an offloaded original is stored once, as a blob in `file_chunks`, which the message
    # names (`full_ref`) instead of holding a second copy in `full_content` (older rows keep
    # theirs). `message_texts` gives every message's whole text (`text`), for SQL readers.
    """
    ALTER TABLE messages ADD COLUMN full_ref VARCHAR;
    CREATE VIEW message_texts AS
    SELECT m.thread_id, m.seq, m.run_id, m.step, m.message_id, m.role, m.kind, m.content,
        m.tool_calls, m.tool_call_id, m.name, m.is_error, m.tokens, m.meta, m.created_at,
        m.full_ref,
        coalesce(m.full_content,
                 (SELECT string_agg(decode(c.content), '' ORDER BY c.chunk) FROM file_chunks c
                  WHERE c.blob_id = m.full_ref),
                 m.content) AS text
    FROM messages m;
    """,
    # 6: write-behind. A held store commits each step's rows here first (one statement), and
    # writes them to their tables in bulk later; rows a dead process left are written by the
    # next store to open the file. `blobs` holds the batch's bytes values, which `rows` (JSON)
    # refers to by position; `error` marks a batch that could not be written, kept to be seen.
    """
    CREATE TABLE write_log (
        writer VARCHAR NOT NULL, seq BIGINT NOT NULL, rows VARCHAR NOT NULL, blobs BLOB[],
        logged_at TIMESTAMP NOT NULL, error VARCHAR
    );
    """,
]

# The first schema version whose messages name their offloaded original (`full_ref`).
FULL_REF_VERSION = 5
# The first with `write_log`, which a held file store writes behind through.
WRITE_LOG_VERSION = 6


# The columns of each table a step writes rows to, in order: where a repair happened is named
# by column. `files` and `file_chunks` take an offloaded original's rows (one chunk).
COLUMN_NAMES = {
    "messages": ("thread_id", "seq", "run_id", "step", "message_id", "role", "kind", "content",
                 "full_content", "tool_calls", "tool_call_id", "name", "is_error", "tokens",
                 "meta", "created_at", "full_ref"),
    "model_calls": ("run_id", "step", "model", "input_tokens", "output_tokens",
                    "cached_tokens", "cache_write_tokens", "context_tokens", "latency_ms",
                    "cost_usd", "stop_reason", "encoding", "created_at"),
    "events": ("run_id", "step", "middleware", "hook", "action", "tokens_before",
               "tokens_after", "detail", "ms", "task_run_id", "created_at", "task_reason"),
    "windows": ("thread_id", "run_id", "step", "at_seq", "message_ids", "reason", "created_at"),
    "summaries": ("run_id", "thread_id", "cycle", "step", "first_seq", "last_seq",
                  "message_ids", "tokens_before", "tokens_after", "summary_tokens", "model",
                  "history_path", "summary", "created_at"),
    "files": ("namespace", "path", "content", "is_text", "size", "run_id", "created_at",
              "modified_at", "blob_id", "chars", "lines"),
    "file_chunks": ("blob_id", "chunk", "newlines_before", "newlines", "content"),
}  # fmt: skip
JSON_COLUMNS = frozenset({"tool_calls", "meta", "detail", "message_ids"})


def now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def default_path() -> str:
    return os.environ.get("CTXLAB_DB", "ctxlab.duckdb")


def migrate(con: duckdb.DuckDBPyConnection, path: str) -> int:
    """Bring the store at `path` (open on `con`) to the newest schema; refuse a newer one.
    Returns the version it is at."""
    con.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER, applied_at TIMESTAMP)")
    row = con.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
    current = int(row[0]) if row else 0
    if current > len(MIGRATIONS):
        raise StoreError(
            f"store {path} has schema v{current}, newer than this ctxlab "
            f"(v{len(MIGRATIONS)}): upgrade ctxlab"
        )
    for version, sql in enumerate(MIGRATIONS[current:], start=current + 1):
        con.execute(sql)
        con.execute("INSERT INTO schema_version VALUES (?, ?)", [version, now()])
    return len(MIGRATIONS)
