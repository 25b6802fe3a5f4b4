"""Journal records too large for one transaction: stored as chunks, named from the row.

A tool's result can be hundreds of MB. Written as one `step_journal` BLOB it would be one
transaction larger than the store's DuckDB memory_limit, which DuckDB fails fatally (issue 37).
A record over `TRANSACTION_BYTES` (4 MB) is therefore written by the files' bounded chunk
writer (`write_chunks`: 4 KB chunks, 4 MB a transaction), each transaction its own even inside
the step's atomic block, and the row holds a small reference to it instead, read back a
bounded number of chunks a query. Chunks commit first, the row after: a process killed
between leaves chunks that no row, file or message names, which nothing reads (harmless;
`clear` deletes only the chunks its rows name). A reference is JSON with a schema of its own,
so records written before it read as they were, and an older ctxlab refuses the reference
with its usual `JournalError` rather than misreading it.
"""

from __future__ import annotations

import json
from typing import Any

from harness.files.storage import write_chunks
from harness.store import Store
from harness.store.atomic import apart

SCHEMA = "ctxlab.step_journal.chunks"
VERSION = 1
# A reference is ~150 bytes; any row longer than this holds a record itself.
REFERENCE_MAX = 1024


def spill(store: Store, record: bytes) -> bytes:
    """What the row stores for `record`: the record itself when it fits in one transaction,
    else a reference to its chunks, written (and committed) now."""
    with apart():
        chunked = write_chunks(store, record)
    if chunked is None:
        return record
    reference = {"schema": SCHEMA, "version": VERSION, "blob_id": chunked.blob_id}
    return json.dumps({**reference, "size": chunked.size}).encode("ascii")


def reference_of(row: bytes) -> dict[str, Any] | None:
    """The chunk reference a row holds, or None when the row holds a record itself."""
    if len(row) > REFERENCE_MAX:
        return None
    try:
        data = json.loads(bytes(row).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    ok = isinstance(data, dict) and data.get("schema") == SCHEMA
    return data if ok and isinstance(data.get("blob_id"), str) else None


def unspill(store: Store, row: bytes) -> bytes | None:
    """The record a row stores: itself, or its chunks joined (fetched ~1 Mi characters a
    query); None when the chunks a reference names are gone or incomplete."""
    reference = reference_of(row)
    if reference is None:
        return bytes(row)
    record = store.files.blob_bytes(reference["blob_id"])
    return record if len(record) == reference.get("size") else None


def blob_ids(store: Store, scope: str) -> list[str]:
    """The chunks the journal rows of `scope` name."""
    rows = store.query(
        "SELECT result FROM step_journal WHERE scope = ? AND octet_length(result) <= ?",
        [scope, REFERENCE_MAX],
    )
    return [ref["blob_id"] for r in rows if (ref := reference_of(r["result"])) is not None]
