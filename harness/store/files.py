"""The rows of the `files` and `file_chunks` tables: how `harness.files` stores, finds and
reads file contents.

`FileRows` (mixed into `Store`) holds the reads a filesystem makes between writes. The
functions take the caller's connection: a file's row, its chunks and whatever a change hook
records of it are written in one transaction, which the caller opens. What goes in a row (the
chunking, the line index, the write policy) is decided in `harness.files`.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

    from harness.store.pending import PendingRows

# What a `StoredFile` is opened from.
_FILE_COLUMNS = "path, content, is_text, size, blob_id, chars, lines"
_INSERT_ROWS = 200  # rows per INSERT statement in `insert_files`


class FileRows:
    """The named reads of files and chunks; the class they are mixed into provides `query`
    and `scalar`."""

    if TYPE_CHECKING:

        def query(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]: ...

        def scalar(self, sql: str, params: Sequence[Any] | None = None) -> Any: ...

        def reading_behind(
            self,
        ) -> AbstractContextManager[tuple[duckdb.DuckDBPyConnection, PendingRows]]: ...

    def file_row(self, namespace: str, path: str) -> dict[str, Any] | None:
        """The row a `StoredFile` opens from (`_FILE_COLUMNS`) of the file at `path` in
        `namespace`, or None."""
        rows = self.query(
            f"SELECT {_FILE_COLUMNS} FROM files WHERE namespace = ? AND path = ?", [namespace, path]
        )
        return rows[0] if rows else None

    def has_file(self, namespace: str, path: str) -> bool:
        return bool(
            self.scalar(
                "SELECT count(*) FROM files WHERE namespace = ? AND path = ?", [namespace, path]
            )
        )

    def has_files_below(self, namespaces: tuple[str, str], prefix: str) -> bool:
        """True if a file of either namespace has a path starting with `prefix`."""
        return bool(
            self.scalar(
                "SELECT count(*) FROM files WHERE namespace IN (?, ?) AND starts_with(path, ?)",
                [*namespaces, prefix],
            )
        )

    def file_listing(self, namespaces: tuple[str, str], prefix: str) -> list[dict[str, Any]]:
        """`path`, `size` and `modified_at` of the files of either namespace whose path starts
        with `prefix`, by path."""
        return self.query(
            "SELECT path, size, modified_at FROM files WHERE namespace IN (?, ?) "
            "AND starts_with(path, ?) ORDER BY path",
            [*namespaces, prefix],
        )

    def text_files_at(
        self, namespaces: tuple[str, str], path: str, prefix: str
    ) -> list[dict[str, Any]]:
        """The rows a `StoredFile` opens from (`_FILE_COLUMNS`) of the text files of either
        namespace at `path` or under `prefix`, by path."""
        return self.query(
            f"SELECT {_FILE_COLUMNS} FROM files WHERE namespace IN (?, ?) AND is_text "
            "AND (path = ? OR starts_with(path, ?)) ORDER BY path",
            [*namespaces, path, prefix],
        )

    def file_clashes(self, namespace: str, parents: list[str], prefix: str) -> list[str]:
        """The paths of the files of `namespace` that are one of `parents` or start with
        `prefix`, by path; files still pending (write-behind) count, without writing them
        first: an offload asks this each time, and the answer is all it needs."""
        with self.reading_behind() as (con, pending):
            rows = con.execute(
                "SELECT path FROM files WHERE namespace = ? "
                "AND (list_contains(?::VARCHAR[], path) OR starts_with(path, ?))",
                [namespace, parents, prefix],
            ).fetchall()
            waiting = pending.file_paths(namespace, parents, prefix)
        return sorted({*(str(r[0]) for r in rows), *waiting})

    def paths_under_tops(self, namespaces: list[str], tops: list[str]) -> set[str]:
        """The paths of the files of `namespaces` that are one of the top-level `tops` or lie
        under one of them."""
        rows = self.query(
            "SELECT path FROM files WHERE list_contains(?::VARCHAR[], namespace) "
            "AND list_has_any(?::VARCHAR[], [path, '/' || split_part(path, '/', 2)])",
            [namespaces, tops],
        )
        return {r["path"] for r in rows}

    def blob_bytes(self, blob_id: str) -> bytes:
        """A chunked file's whole content, its chunks joined."""
        rows = self.query(
            "SELECT content FROM file_chunks WHERE blob_id = ? ORDER BY chunk", [blob_id]
        )
        return b"".join(bytes(r["content"]) for r in rows)

    def blob_chunks(self, blob_id: str | None, start: int, stop: int) -> list[dict[str, Any]]:
        """`chunk` and `content` of chunks `start` to `stop` (excluded) of a blob, in order."""
        return self.query(
            "SELECT chunk, content FROM file_chunks WHERE blob_id = ? AND chunk >= ? "
            "AND chunk < ? ORDER BY chunk",
            [blob_id, start, stop],
        )

    def chunk_of_line(self, blob_id: str | None, line: int) -> tuple[int, int] | None:
        """(chunk, newlines before it) of the chunk where 0-based `line` starts, or None past
        the last line."""
        rows = self.query(
            "SELECT chunk, newlines_before FROM file_chunks WHERE blob_id = ? "
            "AND newlines_before < ? AND newlines_before + newlines >= ? ORDER BY chunk LIMIT 1",
            [blob_id, line, line],
        )
        return (rows[0]["chunk"], rows[0]["newlines_before"]) if rows else None


def file_blob(con: duckdb.DuckDBPyConnection, namespace: str, path: str) -> tuple[bool, str | None]:
    """Whether there is a file at `path`, and its blob id (None when stored inline)."""
    row = con.execute(
        "SELECT blob_id FROM files WHERE namespace = ? AND path = ?", [namespace, path]
    ).fetchone()
    return (True, row[0]) if row is not None else (False, None)


def file_content(
    con: duckdb.DuckDBPyConnection, namespace: str, path: str
) -> tuple[bytes | None, str | None] | None:
    """(inline content, blob id) of the file at `path`, or None when there is none."""
    row = con.execute(
        "SELECT content, blob_id FROM files WHERE namespace = ? AND path = ?", [namespace, path]
    ).fetchone()
    return (row[0], row[1]) if row is not None else None


def chunk_contents(con: duckdb.DuckDBPyConnection, blob_id: str) -> bytes:
    """A chunked file's whole content, its chunks joined, over the caller's connection."""
    rows = con.execute(
        "SELECT content FROM file_chunks WHERE blob_id = ? ORDER BY chunk", [blob_id]
    ).fetchall()
    return b"".join(bytes(r[0]) for r in rows)


def upsert_file(
    con: duckdb.DuckDBPyConnection,
    namespace: str,
    path: str,
    *,
    inline: bytes,
    is_text: bool,
    size: int,
    run_id: str | None,
    ts: datetime,
    blob_id: str | None,
    chars: int | None,
    lines: int | None,
    exists: bool = True,
) -> None:
    """Create or overwrite the `files` row at `path`, modified at `ts`; an overwritten row
    keeps its `created_at`. `exists=False` (the caller has just seen there is no row) makes
    it a plain insert: DuckDB's ON CONFLICT costs ~3x that on a 100 kB row."""
    conflict = (
        " ON CONFLICT (namespace, path) DO UPDATE SET content = excluded.content, "
        "is_text = excluded.is_text, size = excluded.size, run_id = excluded.run_id, "
        "modified_at = excluded.modified_at, blob_id = excluded.blob_id, "
        "chars = excluded.chars, lines = excluded.lines"
        if exists
        else ""
    )
    con.execute(
        "INSERT INTO files (namespace, path, content, is_text, size, run_id, created_at, "
        "modified_at, blob_id, chars, lines) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)" + conflict,
        [namespace, path, inline, is_text, size, run_id, ts, ts, blob_id, chars, lines],
    )


def insert_chunk(
    con: duckdb.DuckDBPyConnection,
    blob_id: str,
    index: int,
    newlines_before: int,
    newlines: int,
    data: bytes,
) -> None:
    con.execute(
        "INSERT INTO file_chunks VALUES (?, ?, ?, ?, ?)",
        [blob_id, index, newlines_before, newlines, data],
    )


# A blob that a message names (`messages.full_ref`, an offloaded original) is that message's
# only copy of its text: deleting or overwriting the file leaves the blob's chunks in place.
_UNNAMED = "NOT EXISTS (SELECT 1 FROM messages m WHERE m.full_ref = file_chunks.blob_id)"


def delete_chunks(con: duckdb.DuckDBPyConnection, blob_id: str) -> None:
    con.execute(f"DELETE FROM file_chunks WHERE blob_id = ? AND {_UNNAMED}", [blob_id])


def delete_file(con: duckdb.DuckDBPyConnection, namespace: str, path: str) -> None:
    """Delete the file at `path` and its chunks."""
    con.execute(
        "DELETE FROM file_chunks WHERE blob_id = (SELECT blob_id FROM files "
        f"WHERE namespace = ? AND path = ?) AND {_UNNAMED}",
        [namespace, path],
    )
    con.execute("DELETE FROM files WHERE namespace = ? AND path = ?", [namespace, path])


def delete_files(
    con: duckdb.DuckDBPyConnection, namespace: str, paths: list[str]
) -> dict[str, datetime]:
    """Delete the files of `namespace` at `paths` and their chunks; path -> `created_at` of
    those there were."""
    gone = con.execute(
        "DELETE FROM files WHERE namespace = ? AND list_contains(?::VARCHAR[], path) "
        "RETURNING path, created_at, blob_id",
        [namespace, paths],
    ).fetchall()
    blobs = [blob for _, _, blob in gone if blob is not None]
    if blobs:
        con.execute(
            f"DELETE FROM file_chunks WHERE list_contains(?::VARCHAR[], blob_id) AND {_UNNAMED}",
            [blobs],
        )
    return {path: at for path, at, _ in gone}


def insert_files(
    con: duckdb.DuckDBPyConnection,
    rows: Sequence[tuple[str, str, bytes, bool, int, str | None, datetime, datetime]],
) -> None:
    """Insert inline `files` rows (namespace, path, content, is_text, size, run_id,
    created_at, modified_at) in bulk: row-by-row upserts cost DuckDB ~30 ms each."""
    for i in range(0, len(rows), _INSERT_ROWS):
        chunk = rows[i : i + _INSERT_ROWS]
        con.execute(
            "INSERT INTO files (namespace, path, content, is_text, size, run_id, "
            "created_at, modified_at) VALUES "
            + ",".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * len(chunk)),
            [value for row in chunk for value in row],
        )
