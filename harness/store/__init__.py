"""The DuckDB store: every run, message, model call, file, event, summary and memory version.

One `Store` per process. The transcript is append-only: compaction never rewrites `messages`,
it adds synthetic messages (summaries, placeholders) and a `windows` row naming which messages
the model sees from then on. Each agent step's rows are handed over as one batch, durable
before the next model call: written in one transaction, or, by a store that holds its file,
logged and written behind with the next ones (`pending`).

This package is the one place that writes SQL against the harness tables: `schema` (the
tables and their migrations), `rows` (row mapping, text made storable), `connection` (opening,
holding, transactions, writing behind), `pending` (the rows written behind and their log),
`bulk` (many rows in one statement), `queries`, `writes` and `middleware_rows` (what callers
ask for by name), and `files` (chunked file contents). Other code calls those;
`execute`/`query` stay for a caller's own tables and the user's own SQL.
"""

from __future__ import annotations

from harness.store.connection import FILE_MEMORY_LIMIT, Connection, read_only
from harness.store.files import FileRows
from harness.store.middleware_rows import MiddlewareRows
from harness.store.queries import Queries, Reader, read_store
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
from harness.store.schema import MIGRATIONS, default_path, now
from harness.store.writes import Writes


class Store(Connection, Queries, Writes, FileRows, MiddlewareRows):
    """A DuckDB file (or `":memory:"`) holding everything ctxlab records."""


__all__ = [
    "FILE_MEMORY_LIMIT",
    "MIGRATIONS",
    "Reader",
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
]
