"""The DuckDB store: every run, message, model call, file, event, summary and memory version.

One `Store` per process. The transcript is append-only: compaction never rewrites `messages`,
it adds synthetic messages (summaries, placeholders) and a `windows` row naming which messages
the model sees from then on. Each agent step's rows are handed over as one batch, durable
before the next model call: written in one transaction, or, by a store that holds its file,
logged and written behind with the next ones (`pending`).

This package is the one place that writes SQL against the harness tables: `schema` (the
tables and their migrations), `rows` (row mapping, text made storable), `database` (opening
and holding the file; `retry`, the one lock backoff), `atomic` (blocks that commit together),
`write_behind` and `pending` (the rows written behind and their log), `bulk` (many rows in one
statement), `library_pages` (DuckDB's start-up pages let go), one repository per table or
concern (`runs`, `messages`, `usage`, `events`, `files`, `memory`) reached from `store.Store`
or a `reader.Reader`, and `unit` (a unit of work over one transaction). The loop needs only
`run_store.RunStore`; `execute`/`query` stay for a caller's own tables and the user's own SQL.
"""

from __future__ import annotations

from harness.store.database import FILE_MEMORY_LIMIT, read_only
from harness.store.reader import Reader, read_store
from harness.store.rows import (
    StepBatch,
    message_row,
    row_to_message,
    storable_json,
    storable_message,
    storable_row,
    storable_text,
    storable_value,
)
from harness.store.run_store import RunStore
from harness.store.schema import MIGRATIONS, default_path, now
from harness.store.store import Store
from harness.store.unit import UnitOfWork

__all__ = [
    "FILE_MEMORY_LIMIT",
    "MIGRATIONS",
    "Reader",
    "RunStore",
    "StepBatch",
    "Store",
    "default_path",
    "message_row",
    "now",
    "read_only",
    "read_store",
    "row_to_message",
    "storable_json",
    "storable_message",
    "storable_row",
    "storable_text",
    "storable_value",
    "UnitOfWork",
]
