"""Write-behind: rows a held store has taken but not yet written to their tables.

DuckDB charges per statement, not per row: an insert costs ~0.3 ms plus ~25 us a column
whatever it carries, so a step written as it happens (its messages, model call and events, an
offloaded file's row and chunk) costs 2-3 ms in statements alone, and 32 steps written at
once cost about what two of them do. A held store (`Store(hold=True)`, the default, which
keeps the file to its process) therefore keeps each step's rows here and writes them to their
tables in one transaction every `write_behind` batches. Every read and every other write of
the store writes them first, so whatever asks the store sees every step; only another
connection to the same database in this process could see a table behind.

Durability does not wait for that: a file store commits each step's rows, as they are taken,
as one row of `write_log` (one statement, before the next model call), and deletes that row
in the transaction that writes them to their tables. A process that dies in between leaves
them there, and the next `Store` to open the file writes them to their tables. An in-memory
store has nothing to keep across a crash, so it skips the log.

The log holds a batch as JSON: its tables' rows, a timestamp as `{"$ts": iso}`, bytes as
`{"$blob": i}`, the i-th item of the row's `blobs` list, so that nothing is base64-encoded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

# Table -> rows; the shape of `StepBatch.rows`.
Rows = dict[str, list[tuple[Any, ...]]]


class PendingRows:
    """The batches taken and not yet written: their rows by table, how many batches, about
    how many bytes, and the `write_log` sequence numbers they were logged under."""

    def __init__(self) -> None:
        self.rows: Rows = {}
        self.batches: list[Rows] = []
        self.seqs: list[int] = []
        self.size = 0

    def __bool__(self) -> bool:
        return bool(self.batches)

    def add(self, rows: Rows, seq: int | None) -> None:
        self.batches.append(rows)
        if seq is not None:
            self.seqs.append(seq)
        for table, table_rows in rows.items():
            self.rows.setdefault(table, []).extend(table_rows)
            self.size += sum(_row_size(r) for r in table_rows)

    def clear(self) -> None:
        self.rows, self.batches, self.seqs, self.size = {}, [], [], 0

    def file_paths(self, namespace: str, parents: Iterable[str], prefix: str) -> list[str]:
        """Paths of the pending `files` rows of `namespace` that are one of `parents` or
        start with `prefix` (what `Files.clashes` asks of the table)."""
        above = set(parents)
        return [
            row[1]
            for row in self.rows.get("files", ())
            if row[0] == namespace and (row[1] in above or row[1].startswith(prefix))
        ]

    def file_keys(self) -> list[tuple[str, str]]:
        """(namespace, path) of the pending `files` rows."""
        return [(row[0], row[1]) for row in self.rows.get("files", ())]


def _row_size(row: tuple[Any, ...]) -> int:
    return sum(len(v) for v in row if isinstance(v, str | bytes)) + 8 * len(row)


def encode_rows(rows: Rows) -> tuple[str, list[bytes]]:
    """A batch as `write_log` holds it: JSON text and the bytes values it refers to."""
    blobs: list[bytes] = []

    def tag(value: Any) -> dict[str, Any]:
        if isinstance(value, datetime):
            return {"$ts": value.isoformat()}
        if isinstance(value, bytes | bytearray | memoryview):
            blobs.append(bytes(value))
            return {"$blob": len(blobs) - 1}
        raise TypeError(f"a step row holds a {type(value).__name__}, which the log cannot keep")

    return json.dumps(rows, default=tag, ensure_ascii=False), blobs


def decode_rows(text: str, blobs: list[bytes] | None) -> Rows:
    """The batch `encode_rows` made, back; `ValueError` for anything it did not make."""
    stored = list(blobs or [])

    def untag(obj: dict[str, Any]) -> Any:
        if len(obj) == 1 and "$ts" in obj:
            return datetime.fromisoformat(obj["$ts"])
        if len(obj) == 1 and "$blob" in obj:
            index = obj["$blob"]
            if not isinstance(index, int) or not 0 <= index < len(stored):
                raise ValueError(f"the batch names blob {index!r} of {len(stored)}")
            return stored[index]
        return obj

    decoded = json.loads(text, object_hook=untag)
    if not isinstance(decoded, dict) or not all(
        isinstance(rows, list) and all(isinstance(r, list) for r in rows)
        for rows in decoded.values()
    ):
        raise ValueError("a logged batch is an object of tables, each a list of rows")
    return {str(table): [tuple(r) for r in rows] for table, rows in decoded.items()}
